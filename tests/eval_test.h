/* tests/eval_test.h (internal to the tests): what the reference
 * evaluator's suites (tests/test_eval*.c) share: seeded random fills, i32
 * wrap-around, bf16 and f16 decoded and encoded by definition, the [R, C]
 * shape of the element-wise and reduction tests, and the checks.
 *
 * Tolerances: element-wise ops, casts, compare/select, topk and every
 * data-movement op are exact (bit-exact for f32 add/sub/mul/div/sqrt/recip,
 * whose double-then-round result equals the f32 operation). exp, log and
 * rsqrt are checked to 1e-6 relative (one f32 rounding of the double result).
 * Reductions and matmul are checked to a relative 1e-5 of the sum of the
 * absolute values of their terms (|got - want| <= 1e-5 * sum |term|), which
 * stays meaningful when a sum cancels to near zero. Static: each file
 * includes it once. */
#ifndef PTO_TESTS_EVAL_TEST_H
#define PTO_TESTS_EVAL_TEST_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/program_test.h"

static inline uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi), with 24 random bits. */
static inline float rnd(uint64_t *s, float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(rng_next(s) >> 40) / 16777216.0);
}

static inline void fill(float *x, int n, uint64_t seed, float lo, float hi) {
  for (int i = 0; i < n; i++)
    x[i] = rnd(&seed, lo, hi);
}

static inline void fill_i32(int32_t *x, int n, uint64_t seed, int32_t lo,
                            int32_t hi) {
  for (int i = 0; i < n; i++)
    x[i] = lo + (int32_t)(rng_next(&seed) % (uint64_t)(hi - lo + 1));
}

#define BUILD_OK(p)                                                            \
  cr_assert_eq(pto_program_status(p), PTO_OK, "build: %s", pto_program_error(p))
#define EVAL_OK(p, ins, outs)                                                  \
  do {                                                                         \
    BUILD_OK(p);                                                               \
    cr_assert_eq(pto_program_eval((p), (ins), (outs)), PTO_OK, "eval: %s",     \
                 pto_program_error(p));                                        \
  } while (0)

/* Bit-exact f32 comparison that treats all NaNs as equal. */
static inline int same_f32(float a, float b) {
  if (isnan(a) || isnan(b))
    return isnan(a) && isnan(b);
  return memcmp(&a, &b, sizeof a) == 0;
}
#define EXPECT_F32(got, want, ...)                                             \
  do {                                                                         \
    const float g_ = (got), w_ = (want);                                       \
    if (!same_f32(g_, w_)) {                                                   \
      cr_log_error("got %.9g want %.9g", (double)g_, (double)w_);              \
      cr_expect_fail(__VA_ARGS__);                                             \
    }                                                                          \
  } while (0)

/* |got - want| <= rel * mag, mag = sum of |terms| (or |want|). */
#define EXPECT_CLOSE(got, want, mag, rel, ...)                                 \
  do {                                                                         \
    const double g_ = (got), w_ = (want), m_ = (mag);                          \
    if (!(fabs(g_ - w_) <= (rel)*m_)) {                                        \
      cr_log_error("got %.9g want %.9g (tolerance %g x %g)", g_, w_,           \
                   (double)(rel), m_);                                         \
      cr_expect_fail(__VA_ARGS__);                                             \
    }                                                                          \
  } while (0)

/* i32 wrap-around, computed independently of the library: modulo 2^32. */
static inline int32_t wrap(int64_t v) {
  uint32_t u = (uint32_t)(uint64_t)v;
  int32_t r;
  memcpy(&r, &u, sizeof r);
  return r;
}

/* bf16 and f16 decoded by definition (not with the library's helpers). */
static inline double bf16_val(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline double f16_val(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* Nearest-even encoding by search: the largest magnitude code whose value
 * is <= |x|, or the next one, ties to the even code; `inf` is the code of
 * infinity, whose value for rounding purposes is `top` (the next power of
 * two after the largest finite value). */
static inline uint16_t rne_encode(double x, double (*val)(uint16_t),
                                  uint16_t inf, double top) {
  if (isnan(x))
    return (uint16_t)(inf | 0x200);
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  if (a >= top)
    return (uint16_t)(sign | inf);
  unsigned lo = 0, hi = inf; /* val(lo) <= a < val(hi) */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (val((uint16_t)mid) <= a)
      lo = mid;
    else
      hi = mid;
  }
  double vlo = val((uint16_t)lo), vhi = hi == inf ? top : val((uint16_t)hi);
  unsigned h = a - vlo < vhi - a   ? lo
               : a - vlo > vhi - a ? hi
                                   : (lo & 1 ? hi : lo);
  return (uint16_t)(sign | h);
}
static inline uint16_t bf16_enc(double x) {
  return rne_encode(x, bf16_val, 0x7f80, ldexp(1, 128));
}
static inline uint16_t f16_enc(double x) {
  return rne_encode(x, f16_val, 0x7c00, 65536.0);
}

/* The [R, C] operands of the element-wise and reduction tests. */
#define R 5
#define C 7

#endif
