/* core: the reference evaluator (pto_program_eval), op by op, against
 * expectations computed here in plain C on random data with fixed seeds.
 *
 * Tolerances: element-wise ops, casts, compare/select, topk and every
 * data-movement op are exact (bit-exact for f32 add/sub/mul/div/sqrt/recip,
 * whose double-then-round result equals the f32 operation). exp, log and
 * rsqrt are checked to 1e-6 relative (one f32 rounding of the double result).
 * Reductions and matmul are checked to a relative 1e-5 of the sum of the
 * absolute values of their terms (|got - want| <= 1e-5 * sum |term|), which
 * stays meaningful when a sum cancels to near zero. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi), with 24 random bits. */
static float rnd(uint64_t *s, float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(rng_next(s) >> 40) / 16777216.0);
}

static void fill(float *x, int n, uint64_t seed, float lo, float hi) {
  for (int i = 0; i < n; i++)
    x[i] = rnd(&seed, lo, hi);
}

static void fill_i32(int32_t *x, int n, uint64_t seed, int32_t lo, int32_t hi) {
  for (int i = 0; i < n; i++)
    x[i] = lo + (int32_t)(rng_next(&seed) % (uint64_t)(hi - lo + 1));
}

static pto_tensor *in2(pto_program *p, const char *name, pto_dtype dt,
                       int64_t r, int64_t c) {
  int64_t s[2] = {r, c};
  return pto_input(p, name, dt, 2, s);
}

#define BUILD_OK(p)                                                            \
  cr_assert_eq(pto_program_status(p), PTO_OK, "build: %s", pto_program_error(p))
#define EVAL_OK(p, ins, outs)                                                  \
  do {                                                                         \
    BUILD_OK(p);                                                               \
    cr_assert_eq(pto_program_eval((p), (ins), (outs)), PTO_OK, "eval: %s",     \
                 pto_program_error(p));                                        \
  } while (0)
#define EXPECT_MSG_HAS(p, s)                                                   \
  cr_expect(strstr(pto_program_error(p), (s)) != NULL,                         \
            "message \"%s\" lacks \"%s\"", pto_program_error(p), (s))

/* Bit-exact f32 comparison that treats all NaNs as equal. */
static int same_f32(float a, float b) {
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
static int32_t wrap(int64_t v) {
  uint32_t u = (uint32_t)(uint64_t)v;
  int32_t r;
  memcpy(&r, &u, sizeof r);
  return r;
}

/* bf16 and f16 decoded by definition (not with the library's helpers). */
static double bf16_val(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static double f16_val(uint16_t h) {
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
static uint16_t rne_encode(double x, double (*val)(uint16_t), uint16_t inf,
                           double top) {
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
static uint16_t bf16_enc(double x) {
  return rne_encode(x, bf16_val, 0x7f80, ldexp(1, 128));
}
static uint16_t f16_enc(double x) {
  return rne_encode(x, f16_val, 0x7c00, 65536.0);
}

/* ---- element-wise ------------------------------------------------------- */

#define R 5
#define C 7

Test(core, eval_binary_f32_is_exact) {
  float a[R * C], b[R * C], out[6][R * C];
  fill(a, R * C, 1, -10, 10);
  fill(b, R * C, 2, -10, 10);
  b[3] = 0; /* x/0 = inf */
  pto_program *p = pto_program_new("binary");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C), *tb = in2(p, "b", PTO_F32, R, C);
  pto_output(p, pto_add(p, ta, tb), "add");
  pto_output(p, pto_sub(p, ta, tb), "sub");
  pto_output(p, pto_mul(p, ta, tb), "mul");
  pto_output(p, pto_div(p, ta, tb), "div");
  pto_output(p, pto_max(p, ta, tb), "max");
  pto_output(p, pto_min(p, ta, tb), "min");
  const void *ins[] = {a, b};
  void *outs[] = {out[0], out[1], out[2], out[3], out[4], out[5]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    EXPECT_F32(out[0][i], a[i] + b[i], "add %d", i);
    EXPECT_F32(out[1][i], a[i] - b[i], "sub %d", i);
    EXPECT_F32(out[2][i], a[i] * b[i], "mul %d", i);
    EXPECT_F32(out[3][i], a[i] / b[i], "div %d", i);
    EXPECT_F32(out[4][i], a[i] > b[i] ? a[i] : b[i], "max %d", i);
    EXPECT_F32(out[5][i], a[i] < b[i] ? a[i] : b[i], "min %d", i);
  }
  cr_expect(isinf(out[3][3]));
  pto_program_free(p);
}

/* Row [M,1], column [1,N], rank-differing [N] and two-sided [3,1,N]x[M,1]. */
Test(core, eval_binary_broadcasts) {
  float a[R * C], row[R], col[C], cube[3 * C];
  float o_row[R * C], o_col[R * C], o_rank[R * C], o_both[3 * R * C];
  fill(a, R * C, 3, -4, 4);
  fill(row, R, 4, -4, 4);
  fill(col, C, 5, -4, 4);
  fill(cube, 3 * C, 6, -4, 4);
  pto_program *p = pto_program_new("bcast");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C);
  pto_tensor *tr = in2(p, "row", PTO_F32, R, 1);
  pto_tensor *tc = in2(p, "col", PTO_F32, 1, C);
  int64_t s1[1] = {C}, s3[3] = {3, 1, C};
  pto_tensor *tv = pto_input(p, "vec", PTO_F32, 1, s1);
  pto_tensor *tq = pto_input(p, "cube", PTO_F32, 3, s3);
  pto_output(p, pto_sub(p, ta, tr), "row");
  pto_output(p, pto_div(p, tc, ta), "col");
  pto_output(p, pto_mul(p, ta, tv), "rank");
  pto_tensor *both = pto_add(p, tq, tr);
  pto_output(p, both, "both");
  BUILD_OK(p);
  cr_assert_eq(pto_tensor_ndim(both), 3);
  cr_assert_eq(pto_tensor_dim(both, 0), 3);
  cr_assert_eq(pto_tensor_dim(both, 1), R);
  cr_assert_eq(pto_tensor_dim(both, 2), C);
  const void *ins[] = {a, row, col, col, cube};
  void *outs[] = {o_row, o_col, o_rank, o_both};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      EXPECT_F32(o_row[r * C + c], a[r * C + c] - row[r], "row %d,%d", r, c);
      EXPECT_F32(o_col[r * C + c], col[c] / a[r * C + c], "col %d,%d", r, c);
      EXPECT_F32(o_rank[r * C + c], a[r * C + c] * col[c], "rank %d,%d", r, c);
      for (int q = 0; q < 3; q++)
        EXPECT_F32(o_both[(q * R + r) * C + c], cube[q * C + c] + row[r],
                   "both %d,%d,%d", q, r, c);
    }
  pto_program_free(p);
}

/* bf16 and f16 operands are loaded exactly and computed as f32. */
Test(core, eval_bf16_f16_operands_compute_in_f32) {
  uint16_t hb[R * C], hh[R * C];
  uint64_t s = 7;
  for (int i = 0; i < R * C; i++) {
    hb[i] = (uint16_t)(0x3c00 + rng_next(&s) % 0x0800) ^
            (uint16_t)(i & 1 ? 0x8000 : 0); /* |x| in [2^-7, 2^9) */
    hh[i] = (uint16_t)(0x2000 + rng_next(&s) % 0x3000) ^
            (uint16_t)(i & 2 ? 0x8000 : 0);
  }
  float sum[R * C], prod[R * C];
  pto_program *p = pto_program_new("half");
  pto_tensor *a = in2(p, "a", PTO_BF16, R, C), *b = in2(p, "b", PTO_F16, R, C);
  pto_tensor *add = pto_add(p, a, b);
  pto_output(p, add, "sum");
  pto_output(p, pto_mul(p, a, b), "prod");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(add), PTO_F32);
  const void *ins[] = {hb, hh};
  void *outs[] = {sum, prod};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    float x = (float)bf16_val(hb[i]), y = (float)f16_val(hh[i]);
    EXPECT_F32(sum[i], x + y, "sum %d", i);
    EXPECT_F32(prod[i], x * y, "prod %d", i);
  }
  pto_program_free(p);
}

#define NI 12
Test(core, eval_i32_arithmetic_wraps_and_divides_safely) {
  int32_t a[NI] = {INT32_MIN, INT32_MAX, INT32_MIN, -7,     7,  -7,
                   0,         5,         INT32_MAX, 123456, -1, 100000};
  int32_t b[NI] = {-1, 1, 0,         2,      -2,        0,
                   0,  3, INT32_MAX, 654321, INT32_MIN, -100000};
  int32_t out[8][NI];
  pto_program *p = pto_program_new("i32");
  int64_t s[1] = {NI};
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 1, s);
  pto_tensor *tb = pto_input(p, "b", PTO_I32, 1, s);
  pto_output(p, pto_add(p, ta, tb), "add");
  pto_output(p, pto_sub(p, ta, tb), "sub");
  pto_output(p, pto_mul(p, ta, tb), "mul");
  pto_output(p, pto_div(p, ta, tb), "div");
  pto_output(p, pto_max(p, ta, tb), "max");
  pto_output(p, pto_min(p, ta, tb), "min");
  pto_output(p, pto_neg(p, ta), "neg");
  pto_output(p, pto_abs(p, ta), "abs");
  const void *ins[] = {a, b};
  void *outs[8];
  for (int i = 0; i < 8; i++)
    outs[i] = out[i];
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NI; i++) {
    int64_t x = a[i], y = b[i];
    cr_expect_eq(out[0][i], wrap(x + y), "add %d", i);
    cr_expect_eq(out[1][i], wrap(x - y), "sub %d", i);
    cr_expect_eq(out[2][i], wrap(x * y), "mul %d", i);
    cr_expect_eq(out[3][i], y == 0 ? 0 : wrap(x / y), "div %d", i);
    cr_expect_eq(out[4][i], x > y ? x : y, "max %d", i);
    cr_expect_eq(out[5][i], x < y ? x : y, "min %d", i);
    cr_expect_eq(out[6][i], wrap(-x), "neg %d", i);
    cr_expect_eq(out[7][i], wrap(x < 0 ? -x : x), "abs %d", i);
  }
  /* the edge cases spelled out */
  cr_expect_eq(out[3][0], INT32_MIN); /* INT32_MIN / -1 wraps */
  cr_expect_eq(out[3][2], 0);         /* x / 0 */
  cr_expect_eq(out[3][3], -3);        /* truncation toward zero */
  cr_expect_eq(out[0][1], INT32_MIN); /* INT32_MAX + 1 */
  cr_expect_eq(out[7][0], INT32_MIN); /* abs(INT32_MIN) */
  pto_program_free(p);
}

Test(core, eval_scalar_ops_f32_round_the_scalar_to_f32) {
  float a[R * C], out[6][R * C];
  fill(a, R * C, 8, -3, 3);
  pto_program *p = pto_program_new("scalar");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C);
  pto_output(p, pto_adds(p, ta, 0.1), "adds");
  pto_output(p, pto_subs(p, ta, 0.1), "subs");
  pto_output(p, pto_muls(p, ta, 0.3), "muls");
  pto_output(p, pto_divs(p, ta, 0.7), "divs");
  pto_output(p, pto_maxs(p, ta, 0.5), "maxs");
  pto_output(p, pto_mins(p, ta, -0.5), "mins");
  const void *ins[] = {a};
  void *outs[] = {out[0], out[1], out[2], out[3], out[4], out[5]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    EXPECT_F32(out[0][i], a[i] + 0.1f, "adds %d", i);
    EXPECT_F32(out[1][i], a[i] - 0.1f, "subs %d", i);
    EXPECT_F32(out[2][i], a[i] * 0.3f, "muls %d", i);
    EXPECT_F32(out[3][i], a[i] / 0.7f, "divs %d", i);
    EXPECT_F32(out[4][i], a[i] > 0.5f ? a[i] : 0.5f, "maxs %d", i);
    EXPECT_F32(out[5][i], a[i] < -0.5f ? a[i] : -0.5f, "mins %d", i);
  }
  pto_program_free(p);
}

Test(core, eval_scalar_ops_i32) {
  int32_t a[NI], out[6][NI];
  fill_i32(a, NI, 9, -1000, 1000);
  a[0] = INT32_MAX;
  a[1] = INT32_MIN;
  pto_program *p = pto_program_new("scalar_i32");
  int64_t s[1] = {NI};
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 1, s);
  pto_output(p, pto_adds(p, ta, 2.6), "adds"); /* scalar rounds to 3 */
  pto_output(p, pto_subs(p, ta, 5), "subs");
  pto_output(p, pto_muls(p, ta, -3), "muls");
  pto_output(p, pto_divs(p, ta, 7), "divs");
  pto_output(p, pto_divs(p, ta, 0), "div0");
  pto_output(p, pto_maxs(p, ta, 10), "maxs");
  const void *ins[] = {a};
  void *outs[] = {out[0], out[1], out[2], out[3], out[4], out[5]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NI; i++) {
    int64_t x = a[i];
    cr_expect_eq(out[0][i], wrap(x + 3), "adds %d", i);
    cr_expect_eq(out[1][i], wrap(x - 5), "subs %d", i);
    cr_expect_eq(out[2][i], wrap(x * -3), "muls %d", i);
    cr_expect_eq(out[3][i], x / 7, "divs %d", i);
    cr_expect_eq(out[4][i], 0, "div0 %d", i);
    cr_expect_eq(out[5][i], x > 10 ? x : 10, "maxs %d", i);
  }
  pto_program_free(p);
}

Test(core, eval_unary_ops) {
  float a[R * C], pos[R * C], out[8][R * C];
  fill(a, R * C, 10, -5, 5);
  fill(pos, R * C, 11, 0.01f, 50);
  pto_program *p = pto_program_new("unary");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C),
             *tp = in2(p, "pos", PTO_F32, R, C);
  pto_output(p, pto_exp(p, ta), "exp");
  pto_output(p, pto_log(p, tp), "log");
  pto_output(p, pto_sqrt(p, tp), "sqrt");
  pto_output(p, pto_rsqrt(p, tp), "rsqrt");
  pto_output(p, pto_recip(p, ta), "recip");
  pto_output(p, pto_relu(p, ta), "relu");
  pto_output(p, pto_abs(p, ta), "abs");
  pto_output(p, pto_neg(p, ta), "neg");
  const void *ins[] = {a, pos};
  void *outs[8];
  for (int i = 0; i < 8; i++)
    outs[i] = out[i];
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    double e = exp((double)a[i]), l = log((double)pos[i]);
    double rs = 1 / sqrt((double)pos[i]);
    EXPECT_CLOSE(out[0][i], e, fabs(e), 1e-6, "exp %d", i);
    EXPECT_CLOSE(out[1][i], l, fabs(l), 1e-6, "log %d", i);
    EXPECT_F32(out[2][i], sqrtf(pos[i]), "sqrt %d", i);
    EXPECT_CLOSE(out[3][i], rs, rs, 1e-6, "rsqrt %d", i);
    EXPECT_F32(out[4][i], 1.0f / a[i], "recip %d", i);
    EXPECT_F32(out[5][i], a[i] > 0 ? a[i] : 0.0f, "relu %d", i);
    EXPECT_F32(out[6][i], fabsf(a[i]), "abs %d", i);
    EXPECT_F32(out[7][i], -a[i], "neg %d", i);
  }
  pto_program_free(p);
}

Test(core, eval_unary_i32) {
  int32_t a[NI], out[3][NI];
  fill_i32(a, NI, 12, -50, 50);
  a[0] = INT32_MIN;
  a[1] = INT32_MAX;
  pto_program *p = pto_program_new("unary_i32");
  int64_t s[1] = {NI};
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 1, s);
  pto_output(p, pto_relu(p, ta), "relu");
  pto_output(p, pto_abs(p, ta), "abs");
  pto_output(p, pto_neg(p, ta), "neg");
  const void *ins[] = {a};
  void *outs[] = {out[0], out[1], out[2]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NI; i++) {
    int64_t x = a[i];
    cr_expect_eq(out[0][i], x > 0 ? x : 0, "relu %d", i);
    cr_expect_eq(out[1][i], wrap(x < 0 ? -x : x), "abs %d", i);
    cr_expect_eq(out[2][i], wrap(-x), "neg %d", i);
  }
  pto_program_free(p);
}

/* NaN propagates through max/min (IEEE 754-2019 maximum/minimum). */
Test(core, eval_max_min_propagate_nan) {
  float a[4] = {NAN, 1, NAN, -2}, b[4] = {1, NAN, NAN, 3}, out[3][4];
  pto_program *p = pto_program_new("nan");
  int64_t s[1] = {4};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 1, s);
  pto_tensor *tb = pto_input(p, "b", PTO_F32, 1, s);
  pto_output(p, pto_max(p, ta, tb), "max");
  pto_output(p, pto_min(p, ta, tb), "min");
  pto_output(p, pto_relu(p, ta), "relu");
  const void *ins[] = {a, b};
  void *outs[] = {out[0], out[1], out[2]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < 3; i++) {
    cr_expect(isnan(out[0][i]), "max %d", i);
    cr_expect(isnan(out[1][i]), "min %d", i);
  }
  EXPECT_F32(out[0][3], 3.0f, "max(-2, 3)");
  EXPECT_F32(out[1][3], -2.0f, "min(-2, 3)");
  cr_expect(isnan(out[2][0]));
  EXPECT_F32(out[2][1], 1.0f, "relu(1)");
  EXPECT_F32(out[2][3], 0.0f, "relu(-2)");
  pto_program_free(p);
}

/* ---- casts -------------------------------------------------------------- */

#define NC 40
Test(core, eval_cast_float_to_i32_rounds_even_and_saturates) {
  float a[NC] = {0.5f,      1.5f,          2.5f,           -0.5f, -1.5f,
                 -2.5f,     0.49999997f,   3.7f,           -3.7f, 3e9f,
                 -3e9f,     2147483520.0f, -2147483648.0f, NAN,   INFINITY,
                 -INFINITY, 16777215.0f,   1e-30f,         -0.0f, 100.5f};
  uint64_t s = 13;
  for (int i = 20; i < NC; i++)
    a[i] = rnd(&s, -1e6f, 1e6f);
  int32_t out[NC];
  pto_program *p = pto_program_new("cast_i32");
  int64_t sh[1] = {NC};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 1, sh);
  pto_tensor *c = pto_cast(p, ta, PTO_I32);
  pto_output(p, c, "c");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(c), PTO_I32);
  const void *ins[] = {a};
  void *outs[] = {out};
  EVAL_OK(p, ins, outs);
  int32_t want[20] = {0,         2,          2,         0,  -2,
                      -2,        0,          4,         -4, INT32_MAX,
                      INT32_MIN, 2147483520, INT32_MIN, 0,  INT32_MAX,
                      INT32_MIN, 16777215,   0,         0,  100};
  for (int i = 0; i < 20; i++)
    cr_expect_eq(out[i], want[i], "a[%d] = %.9g: got %d want %d", i,
                 (double)a[i], out[i], want[i]);
  for (int i = 20; i < NC; i++) { /* nearest, ties to even */
    double f = floor((double)a[i]), d = (double)a[i] - f;
    double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2) == 0 ? f : f + 1);
    cr_expect_eq(out[i], (int32_t)r, "a[%d] = %.9g", i, (double)a[i]);
  }
  pto_program_free(p);
}

Test(core, eval_cast_i32_to_f32_rounds_even) {
  int32_t a[6] = {16777217, 16777219, -16777217, INT32_MAX, INT32_MIN, 12345};
  float out[6];
  pto_program *p = pto_program_new("cast_f32");
  int64_t sh[1] = {6};
  pto_output(p, pto_cast(p, pto_input(p, "a", PTO_I32, 1, sh), PTO_F32), "c");
  const void *ins[] = {a};
  void *outs[] = {out};
  EVAL_OK(p, ins, outs);
  float want[6] = {16777216.0f,   16777220.0f,    -16777216.0f,
                   2147483648.0f, -2147483648.0f, 12345.0f};
  for (int i = 0; i < 6; i++)
    EXPECT_F32(out[i], want[i], "%d", i);
  pto_program_free(p);
}

/* f32 -> bf16 and f16 round to nearest even, checked against a search over
 * the codes (not a bit trick); and back to f32 exactly. */
Test(core, eval_cast_to_and_from_bf16_f16) {
  float a[NC] = {1.0f + 0x1p-8f,  1.0f + 0x3p-8f,
                 1.0f + 0x1p-11f, 1.0f + 0x3p-11f,
                 65519.0f,        65520.0f,
                 0x1p-25f,        0x3p-25f,
                 -0x1p-26f,       NAN,
                 INFINITY,        -0.0f,
                 1e-40f,          3.0e38f};
  uint64_t s = 14;
  for (int i = 14; i < NC; i++)
    a[i] = rnd(&s, -70000, 70000) * (i % 3 == 0 ? 1e-4f : 1.0f);
  uint16_t ob[NC], oh[NC];
  float back_b[NC], back_h[NC];
  pto_program *p = pto_program_new("cast_half");
  int64_t sh[1] = {NC};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 1, sh);
  pto_tensor *b = pto_cast(p, ta, PTO_BF16), *h = pto_cast(p, ta, PTO_F16);
  pto_output(p, b, "bf16");
  pto_output(p, h, "f16");
  pto_output(p, pto_cast(p, b, PTO_F32), "bf16_back");
  pto_output(p, pto_cast(p, h, PTO_F32), "f16_back");
  const void *ins[] = {a};
  void *outs[] = {ob, oh, back_b, back_h};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NC; i++) {
    uint16_t wb = bf16_enc(a[i]), wh = f16_enc(a[i]);
    if (isnan(a[i])) {
      cr_expect(isnan(bf16_val(ob[i])) && isnan(f16_val(oh[i])), "NaN %d", i);
      cr_expect(isnan(back_b[i]) && isnan(back_h[i]));
      continue;
    }
    cr_expect_eq(ob[i], wb, "bf16 of %.9g: got 0x%04x want 0x%04x",
                 (double)a[i], ob[i], wb);
    cr_expect_eq(oh[i], wh, "f16 of %.9g: got 0x%04x want 0x%04x", (double)a[i],
                 oh[i], wh);
    EXPECT_F32(back_b[i], (float)bf16_val(wb), "bf16 back %d", i);
    EXPECT_F32(back_h[i], (float)f16_val(wh), "f16 back %d", i);
  }
  /* the tie cases spelled out */
  cr_expect_eq(ob[0], 0x3f80);  /* 1 + 2^-8: tie, to even 1.0 */
  cr_expect_eq(ob[1], 0x3f82);  /* 1 + 3*2^-8: tie, to even */
  cr_expect_eq(oh[2], 0x3c00);  /* 1 + 2^-11 */
  cr_expect_eq(oh[3], 0x3c02);  /* 1 + 3*2^-11 */
  cr_expect_eq(oh[4], 0x7bff);  /* 65519 -> 65504 */
  cr_expect_eq(oh[5], 0x7c00);  /* 65520 -> inf */
  cr_expect_eq(oh[6], 0x0000);  /* 2^-25: tie, to 0 */
  cr_expect_eq(oh[7], 0x0002);  /* 3*2^-25: tie, to 2^-23 */
  cr_expect_eq(oh[11], 0x8000); /* -0 */
  pto_program_free(p);
}

Test(core, eval_cast_half_inputs_to_i32_and_between_halves) {
  uint16_t hb[4] = {0x3fc0 /* 1.5 */, 0x4020 /* 2.5 */, 0xbfc0, 0x7fc0};
  uint16_t hh[4] = {0x3e00 /* 1.5 */, 0x4100 /* 2.5 */, 0x3555, 0xfc00};
  int32_t ib[4], ih[4];
  uint16_t b2h[4];
  pto_program *p = pto_program_new("half_cast");
  int64_t sh[1] = {4};
  pto_tensor *b = pto_input(p, "b", PTO_BF16, 1, sh);
  pto_tensor *h = pto_input(p, "h", PTO_F16, 1, sh);
  pto_output(p, pto_cast(p, b, PTO_I32), "bi");
  pto_output(p, pto_cast(p, h, PTO_I32), "hi");
  pto_output(p, pto_cast(p, b, PTO_F16), "b2h");
  const void *ins[] = {hb, hh};
  void *outs[] = {ib, ih, b2h};
  EVAL_OK(p, ins, outs);
  int32_t wb[4] = {2, 2, -2, 0}, wh[4] = {2, 2, 0, INT32_MIN};
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(ib[i], wb[i], "bf16 %d", i);
    cr_expect_eq(ih[i], wh[i], "f16 %d", i);
  }
  cr_expect_eq(b2h[0], 0x3e00);
  cr_expect_eq(b2h[1], 0x4100);
  cr_expect_eq(b2h[2], 0xbe00);
  cr_expect(isnan(f16_val(b2h[3])));
  pto_program_free(p);
}

/* ---- compare and select ------------------------------------------------- */

Test(core, eval_cmp_all_modes_with_nan_and_broadcast) {
  float a[R * C], b[C];
  fill(a, R * C, 15, -2, 2);
  fill(b, C, 16, -2, 2);
  a[3] = b[3]; /* equal values */
  a[C + 3] = b[3];
  a[5] = NAN;
  b[6] = NAN;
  int32_t out[PTO_CMP_MODE_COUNT][R * C];
  pto_program *p = pto_program_new("cmp");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C), *tb = in2(p, "b", PTO_F32, 1, C);
  void *outs[PTO_CMP_MODE_COUNT];
  for (int m = 0; m < PTO_CMP_MODE_COUNT; m++) {
    char name[8] = {'m', (char)('0' + m), 0};
    pto_tensor *t = pto_cmp(p, ta, tb, (pto_cmp_mode)m);
    pto_output(p, t, name);
    outs[m] = out[m];
  }
  const void *ins[] = {a, b};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      float x = a[r * C + c], y = b[c];
      int want[PTO_CMP_MODE_COUNT] = {x == y, x != y, x<y, x <= y, x> y,
                                      x >= y};
      for (int m = 0; m < PTO_CMP_MODE_COUNT; m++)
        cr_expect_eq(out[m][r * C + c], want[m], "mode %d at %d,%d", m, r, c);
    }
  cr_expect_eq(out[PTO_CMP_NE][5], 1); /* NaN != y */
  cr_expect_eq(out[PTO_CMP_EQ][5], 0);
  cr_expect_eq(out[PTO_CMP_GE][6], 0);
  cr_expect_eq(out[PTO_CMP_EQ][3], 1);
  pto_program_free(p);
}

Test(core, eval_select_with_broadcast_mask_and_i32) {
  float a[R * C], b[R * C], thr[R], o[R * C];
  int32_t ia[R * C], ib[C], oi[R * C];
  fill(a, R * C, 17, -1, 1);
  fill(b, R * C, 18, -1, 1);
  fill(thr, R, 19, -1, 1);
  fill_i32(ia, R * C, 20, -100, 100);
  fill_i32(ib, C, 21, -100, 100);
  pto_program *p = pto_program_new("select");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C), *tb = in2(p, "b", PTO_F32, R, C);
  pto_tensor *tt = in2(p, "thr", PTO_F32, R, 1);
  pto_tensor *tia = in2(p, "ia", PTO_I32, R, C),
             *tib = in2(p, "ib", PTO_I32, 1, C);
  pto_tensor *mask = pto_cmp(p, ta, tt, PTO_CMP_GT); /* [R,C] */
  pto_tensor *rowmask =
      pto_cmp(p, tt, pto_full(p, PTO_F32, 2, (int64_t[]){1, 1}, 0.0),
              PTO_CMP_LT); /* [R,1] */
  pto_output(p, pto_select(p, mask, ta, tb), "sel");
  pto_output(p, pto_select(p, rowmask, tia, tib), "seli");
  const void *ins[] = {a, b, thr, ia, ib};
  void *outs[] = {o, oi};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      int i = r * C + c;
      EXPECT_F32(o[i], a[i] > thr[r] ? a[i] : b[i], "%d,%d", r, c);
      cr_expect_eq(oi[i], thr[r] < 0 ? ia[i] : ib[c], "i32 %d,%d", r, c);
    }
  pto_program_free(p);
}

/* ---- reductions --------------------------------------------------------- */

#define B3 3
Test(core, eval_reductions_keep_dims) {
  float a[B3 * R * C];
  fill(a, B3 * R * C, 22, -10, 10);
  a[7] = NAN; /* row 1 of batch 0 has a NaN: max/min/sum give NaN */
  float rs[B3 * R], rmax[B3 * R], rmin[B3 * R], cs[B3 * C], cmax[B3 * C];
  pto_program *p = pto_program_new("reduce");
  int64_t sh[3] = {B3, R, C};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 3, sh);
  pto_tensor *t_rs = pto_rowsum(p, ta), *t_cs = pto_colsum(p, ta);
  pto_output(p, t_rs, "rowsum");
  pto_output(p, pto_rowmax(p, ta), "rowmax");
  pto_output(p, pto_rowmin(p, ta), "rowmin");
  pto_output(p, t_cs, "colsum");
  pto_output(p, pto_colmax(p, ta), "colmax");
  BUILD_OK(p);
  cr_expect(pto_tensor_dim(t_rs, 0) == B3 && pto_tensor_dim(t_rs, 1) == R &&
            pto_tensor_dim(t_rs, 2) == 1);
  cr_expect(pto_tensor_dim(t_cs, 0) == B3 && pto_tensor_dim(t_cs, 1) == 1 &&
            pto_tensor_dim(t_cs, 2) == C);
  const void *ins[] = {a};
  void *outs[] = {rs, rmax, rmin, cs, cmax};
  EVAL_OK(p, ins, outs);
  for (int q = 0; q < B3; q++) {
    for (int r = 0; r < R; r++) {
      double s = 0, mag = 0;
      float mx = -INFINITY, mn = INFINITY;
      int has_nan = 0;
      for (int c = 0; c < C; c++) {
        float v = a[(q * R + r) * C + c];
        has_nan |= isnan(v);
        s += v;
        mag += fabs(v);
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
      }
      int i = q * R + r;
      if (has_nan) {
        cr_expect(isnan(rs[i]) && isnan(rmax[i]) && isnan(rmin[i]), "%d", i);
        continue;
      }
      EXPECT_CLOSE(rs[i], s, mag, 1e-5, "rowsum %d", i);
      EXPECT_F32(rmax[i], mx, "rowmax %d", i);
      EXPECT_F32(rmin[i], mn, "rowmin %d", i);
    }
    for (int c = 0; c < C; c++) {
      double s = 0, mag = 0;
      float mx = -INFINITY;
      int has_nan = 0;
      for (int r = 0; r < R; r++) {
        float v = a[(q * R + r) * C + c];
        has_nan |= isnan(v);
        s += v;
        mag += fabs(v);
        mx = v > mx ? v : mx;
      }
      int i = q * C + c;
      if (has_nan) {
        cr_expect(isnan(cs[i]) && isnan(cmax[i]), "col %d", i);
        continue;
      }
      EXPECT_CLOSE(cs[i], s, mag, 1e-5, "colsum %d", i);
      EXPECT_F32(cmax[i], mx, "colmax %d", i);
    }
  }
  pto_program_free(p);
}

Test(core, eval_reductions_i32_wrap) {
  int32_t a[2 * 4] = {INT32_MAX, 1, 2, 3, -5, INT32_MIN, -1, 7};
  int32_t rs[2], rmax[2], rmin[2], cs[4];
  pto_program *p = pto_program_new("reduce_i32");
  pto_tensor *ta = in2(p, "a", PTO_I32, 2, 4);
  pto_output(p, pto_rowsum(p, ta), "rs");
  pto_output(p, pto_rowmax(p, ta), "rmax");
  pto_output(p, pto_rowmin(p, ta), "rmin");
  pto_output(p, pto_colsum(p, ta), "cs");
  const void *ins[] = {a};
  void *outs[] = {rs, rmax, rmin, cs};
  EVAL_OK(p, ins, outs);
  cr_expect_eq(rs[0], wrap((int64_t)INT32_MAX + 6));
  cr_expect_eq(rs[1], wrap((int64_t)INT32_MIN + 1));
  cr_expect_eq(rmax[0], INT32_MAX);
  cr_expect_eq(rmin[1], INT32_MIN);
  for (int c = 0; c < 4; c++)
    cr_expect_eq(cs[c], wrap((int64_t)a[c] + a[4 + c]), "col %d", c);
  pto_program_free(p);
}

/* ---- views -------------------------------------------------------------- */

Test(core, eval_views_feed_ops) {
  enum { M = 6, N = 8 };
  float a[M * N], b[N * M], c[M * N];
  fill(a, M * N, 23, -5, 5);
  fill(b, N * M, 24, -5, 5);
  float o_slice[3 * 4], o_trans[M * N], o_rs[4], o_sliced_t[2 * 3], o_in[M * N];
  float o_view[3 * 4];
  pto_program *p = pto_program_new("views");
  pto_tensor *ta = in2(p, "a", PTO_F32, M, N), *tb = in2(p, "b", PTO_F32, N, M);
  /* slice [1:4, 2:6] of a plus itself scaled */
  pto_tensor *sl = pto_slice(p, ta, (int64_t[]){1, 2}, (int64_t[]){4, 6});
  pto_output(p, pto_add(p, sl, pto_muls(p, sl, 2)), "slice");
  /* a + transpose(b) */
  pto_output(p, pto_add(p, ta, pto_transpose(p, tb, 0, 1)), "trans");
  /* reshape a [6,8] -> [4,12] then rowsum */
  pto_tensor *rsh = pto_reshape(p, ta, 2, (int64_t[]){4, 12});
  pto_output(p, pto_rowsum(p, rsh), "reshape_rowsum");
  /* a slice of a transposed view, fed to neg */
  pto_tensor *bt = pto_transpose(p, tb, -1, -2); /* [M,N] */
  pto_output(p,
             pto_neg(p, pto_slice(p, bt, (int64_t[]){3, 5}, (int64_t[]){5, 8})),
             "slice_of_t");
  /* an input and a view as outputs, copied out dense */
  pto_output(p, ta, "input");
  pto_output(p, sl, "view");
  /* a reshape of an op result (contiguous) */
  pto_tensor *mul = pto_mul(p, ta, ta);
  pto_tensor *r3 = pto_reshape(p, mul, 3, (int64_t[]){2, 3, 8});
  pto_output(p, pto_rowsum(p, r3), "r3");
  float o_r3[6];
  BUILD_OK(p);
  memcpy(c, a, sizeof a);
  const void *ins[] = {a, b};
  void *outs[] = {o_slice, o_trans, o_rs, o_sliced_t, o_in, o_view, o_r3};
  EVAL_OK(p, ins, outs);
  cr_expect(memcmp(a, c, sizeof a) == 0, "inputs are never written");
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 4; k++) {
      float v = a[(1 + r) * N + 2 + k];
      EXPECT_F32(o_slice[r * 4 + k], v + v * 2.0f, "slice %d,%d", r, k);
      EXPECT_F32(o_view[r * 4 + k], v, "view %d,%d", r, k);
    }
  for (int r = 0; r < M; r++)
    for (int k = 0; k < N; k++) {
      EXPECT_F32(o_trans[r * N + k], a[r * N + k] + b[k * M + r], "t %d,%d", r,
                 k);
      EXPECT_F32(o_in[r * N + k], a[r * N + k], "input %d,%d", r, k);
    }
  for (int r = 0; r < 4; r++) {
    double s = 0, mag = 0;
    for (int k = 0; k < 12; k++) {
      s += a[r * 12 + k];
      mag += fabs(a[r * 12 + k]);
    }
    EXPECT_CLOSE(o_rs[r], s, mag, 1e-5, "reshape rowsum %d", r);
  }
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 3; k++) /* bt[3+r][5+k] = b[5+k][3+r] */
      EXPECT_F32(o_sliced_t[r * 3 + k], -b[(5 + k) * M + 3 + r], "%d,%d", r, k);
  for (int r = 0; r < 6; r++) {
    double s = 0, mag = 0;
    for (int k = 0; k < 8; k++) {
      float v = a[r * 8 + k] * a[r * 8 + k];
      s += v;
      mag += v;
    }
    EXPECT_CLOSE(o_r3[r], s, mag, 1e-5, "r3 %d", r);
  }
  pto_program_free(p);
}

/* ---- matmul ------------------------------------------------------------- */

#define MM 5
#define MK 7
#define MN 3
/* a is [M,K] (or [K,M] when ta), b is [K,N] (or [N,K] when tb). */
static double ref_mm(const float *a, const float *b, int ta, int tb, int m,
                     int n, double *mag) {
  double s = 0;
  *mag = 0;
  for (int k = 0; k < MK; k++) {
    double x = ta ? a[k * MM + m] : a[m * MK + k];
    double y = tb ? b[n * MK + k] : b[k * MN + n];
    s += x * y;
    *mag += fabs(x * y);
  }
  return s;
}

Test(core, eval_matmul_each_transpose_flag) {
  float a[MM * MK], b[MK * MN], out[4][MM * MN];
  fill(a, MM * MK, 25, -2, 2);
  fill(b, MK * MN, 26, -2, 2);
  pto_program *p = pto_program_new("matmul");
  pto_tensor *a_mk = in2(p, "a_mk", PTO_F32, MM, MK);
  pto_tensor *a_km = in2(p, "a_km", PTO_F32, MK, MM);
  pto_tensor *b_kn = in2(p, "b_kn", PTO_F32, MK, MN);
  pto_tensor *b_nk = in2(p, "b_nk", PTO_F32, MN, MK);
  pto_output(p, pto_matmul(p, a_mk, b_kn, 0), "ab");
  pto_output(p, pto_matmul(p, a_km, b_kn, PTO_MATMUL_TRANS_A), "aTb");
  pto_output(p, pto_matmul(p, a_mk, b_nk, PTO_MATMUL_TRANS_B), "abT");
  pto_output(p,
             pto_matmul(p, a_km, b_nk, PTO_MATMUL_TRANS_A | PTO_MATMUL_TRANS_B),
             "aTbT");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dim(pto_program_output(p, 1), 0), MM);
  cr_expect_eq(pto_tensor_dim(pto_program_output(p, 1), 1), MN);
  /* the same data in each layout (both buffers hold the same numbers, read
   * through the layout the flag says) */
  const void *ins[] = {a, a, b, b};
  void *outs[] = {out[0], out[1], out[2], out[3]};
  EVAL_OK(p, ins, outs);
  for (int f = 0; f < 4; f++)
    for (int m = 0; m < MM; m++)
      for (int n = 0; n < MN; n++) {
        double mag, want = ref_mm(a, b, f & 1, (f >> 1) & 1, m, n, &mag);
        EXPECT_CLOSE(out[f][m * MN + n], want, mag, 1e-5, "flags %d (%d,%d)", f,
                     m, n);
      }
  pto_program_free(p);
}

/* a [2,3,M,K] x b [3,K,N] -> [2,3,M,N]; a [1,M,K] x b [4,K,N] -> [4,M,N]. */
Test(core, eval_matmul_batch_broadcast) {
  float a[2 * 3 * MM * MK], b[3 * MK * MN], o[2 * 3 * MM * MN];
  float b4[4 * MK * MN], o4[4 * MM * MN];
  fill(a, 2 * 3 * MM * MK, 27, -1, 1);
  fill(b, 3 * MK * MN, 28, -1, 1);
  fill(b4, 4 * MK * MN, 29, -1, 1);
  pto_program *p = pto_program_new("batch");
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 4, (int64_t[]){2, 3, MM, MK});
  pto_tensor *tb = pto_input(p, "b", PTO_F32, 3, (int64_t[]){3, MK, MN});
  pto_tensor *tb4 = pto_input(p, "b4", PTO_F32, 3, (int64_t[]){4, MK, MN});
  pto_tensor *c = pto_matmul(p, ta, tb, 0);
  pto_output(p, c, "c");
  /* a[1,0] as a [1,M,K] operand: a slice with a batch dim of 1 */
  pto_tensor *a10 = pto_reshape(
      p, pto_slice(p, ta, (int64_t[]){1, 0, 0, 0}, (int64_t[]){2, 1, MM, MK}),
      3, (int64_t[]){1, MM, MK});
  pto_output(p, pto_matmul(p, a10, tb4, 0), "c4");
  BUILD_OK(p);
  cr_expect(pto_tensor_ndim(c) == 4 && pto_tensor_dim(c, 0) == 2 &&
            pto_tensor_dim(c, 1) == 3);
  const void *ins[] = {a, b, b4};
  void *outs[] = {o, o4};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int m = 0; m < MM; m++)
        for (int n = 0; n < MN; n++) {
          double mag;
          double want = ref_mm(a + (i * 3 + j) * MM * MK, b + j * MK * MN, 0, 0,
                               m, n, &mag);
          EXPECT_CLOSE(o[((i * 3 + j) * MM + m) * MN + n], want, mag, 1e-5,
                       "[%d,%d,%d,%d]", i, j, m, n);
        }
  for (int q = 0; q < 4; q++)
    for (int m = 0; m < MM; m++)
      for (int n = 0; n < MN; n++) {
        double mag;
        double want =
            ref_mm(a + 3 * MM * MK, b4 + q * MK * MN, 0, 0, m, n, &mag);
        EXPECT_CLOSE(o4[(q * MM + m) * MN + n], want, mag, 1e-5, "b4 %d", q);
      }
  pto_program_free(p);
}

/* matmul_relu_wsum on [2 batches, 3 groups of 4 rows (=12), K 7] x k^T
 * [2, 9 keys, 7], a weight per row, a causal diagonal of 5 (row r sees
 * keys n <= r + 5): computed here from ref_mm in double. */
Test(core, eval_matmul_relu_wsum_groups_and_causal_mask) {
  enum { WB = 2, WG = 4, WR = 3, WM = WR * WG, WK = MK, WN = 9 };
  float q[WB * WM * WK], k[WB * WN * WK], w[WM];
  float o[WB * WR * WN], oc[WB * WR * WN];
  fill(q, WB * WM * WK, 31, -1, 1);
  fill(k, WB * WN * WK, 32, -1, 1);
  fill(w, WM, 33, -1, 1);
  pto_program *p = pto_program_new("wsum");
  pto_tensor *tq = pto_input(p, "q", PTO_F32, 3, (int64_t[]){WB, WM, WK});
  pto_tensor *tk = pto_input(p, "k", PTO_F32, 3, (int64_t[]){WB, WN, WK});
  pto_tensor *tw = in2(p, "w", PTO_F32, WM, 1); /* broadcast over batches */
  pto_output(p, pto_matmul_relu_wsum(p, tq, tk, tw, WG, PTO_MATMUL_TRANS_B, 0),
             "s");
  pto_output(p,
             pto_matmul_relu_wsum(p, tq, tk, tw, WG,
                                  PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL, 5),
             "causal");
  const void *ins[] = {q, k, w};
  void *outs[] = {o, oc};
  EVAL_OK(p, ins, outs);
  for (int b = 0; b < WB; b++)
    for (int r = 0; r < WR; r++)
      for (int n = 0; n < WN; n++) {
        double want = 0, mag = 0;
        for (int g = 0; g < WG; g++) {
          double dmag;
          double dot = ref_mm(q + (b * WM + r * WG + g) * WK, k + b * WN * WK, 0, 1,
                              0, n, &dmag);
          want += w[r * WG + g] * (dot < 0 ? 0 : dot);
          mag += fabs(w[r * WG + g]) * dmag;
        }
        const int i = (b * WR + r) * WN + n;
        EXPECT_CLOSE(o[i], want, mag, 1e-6, "[%d,%d,%d]", b, r, n);
        if (n > r + 5)
          cr_expect(isinf(oc[i]) && oc[i] < 0, "causal [%d,%d,%d] = %g", b, r,
                    n, oc[i]);
        else
          cr_expect_eq(oc[i], o[i], "causal [%d,%d,%d]", b, r, n);
      }
  pto_program_free(p);
}

Test(core, eval_matmul_acc_and_transposed_view_and_half_operands) {
  float a[MM * MK], b[MK * MN], acc[MM * MN], o_acc[MM * MN], o_view[MM * MN];
  float o_half[MM * MN];
  fill(a, MM * MK, 30, -2, 2);
  fill(b, MK * MN, 31, -2, 2);
  fill(acc, MM * MN, 32, -100, 100);
  uint16_t ab[MM * MK], bh[MK * MN];
  float af[MM * MK], bf[MK * MN]; /* their f32 values */
  for (int i = 0; i < MM * MK; i++) {
    uint32_t u;
    memcpy(&u, &a[i], 4);
    ab[i] = (uint16_t)(u >> 16); /* truncated: an exact bf16 */
    af[i] = (float)bf16_val(ab[i]);
  }
  for (int i = 0; i < MK * MN; i++) {
    bh[i] = f16_enc(b[i]);
    bf[i] = (float)f16_val(bh[i]);
  }
  pto_program *p = pto_program_new("acc");
  pto_tensor *ta = in2(p, "a", PTO_F32, MM, MK),
             *tb = in2(p, "b", PTO_F32, MK, MN);
  pto_tensor *tacc = in2(p, "acc", PTO_F32, MM, MN);
  pto_tensor *tab = in2(p, "a_bf16", PTO_BF16, MM, MK);
  pto_tensor *tbh = in2(p, "b_f16", PTO_F16, MK, MN);
  pto_output(p, pto_matmul_acc(p, tacc, ta, tb, 0), "acc");
  /* transpose(a) is a [K,M] view; TRANS_A reads it back as [M,K] */
  pto_output(p,
             pto_matmul(p, pto_transpose(p, ta, 0, 1), tb, PTO_MATMUL_TRANS_A),
             "view");
  pto_output(p, pto_matmul(p, tab, tbh, 0), "half");
  const void *ins[] = {a, b, acc, ab, bh};
  void *outs[] = {o_acc, o_view, o_half};
  EVAL_OK(p, ins, outs);
  for (int m = 0; m < MM; m++)
    for (int n = 0; n < MN; n++) {
      double mag, want = ref_mm(a, b, 0, 0, m, n, &mag);
      EXPECT_CLOSE(o_acc[m * MN + n], want + acc[m * MN + n],
                   mag + fabs(acc[m * MN + n]), 1e-5, "acc %d,%d", m, n);
      EXPECT_CLOSE(o_view[m * MN + n], want, mag, 1e-5, "view %d,%d", m, n);
      want = ref_mm(af, bf, 0, 0, m, n, &mag);
      EXPECT_CLOSE(o_half[m * MN + n], want, mag, 1e-5, "half %d,%d", m, n);
    }
  pto_program_free(p);
}

/* ---- composites --------------------------------------------------------- */

Test(core, eval_softmax) {
  enum { M = 6, N = 10 };
  float a[M * N], o[M * N];
  fill(a, M * N, 33, -20, 20);
  pto_program *p = pto_program_new("softmax");
  pto_output(p, pto_softmax(p, in2(p, "a", PTO_F32, M, N)), "y");
  BUILD_OK(p);
  cr_expect_eq(pto_program_num_ops(p), 6); /* rowmax sub exp rowsum recip mul */
  const void *ins[] = {a};
  void *outs[] = {o};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < M; r++) {
    double mx = -INFINITY, s = 0, total = 0;
    for (int c = 0; c < N; c++)
      mx = a[r * N + c] > mx ? a[r * N + c] : mx;
    for (int c = 0; c < N; c++)
      s += exp(a[r * N + c] - mx);
    for (int c = 0; c < N; c++) {
      double want = exp(a[r * N + c] - mx) / s;
      EXPECT_CLOSE(o[r * N + c], want, want, 1e-5, "%d,%d", r, c);
      total += o[r * N + c];
    }
    EXPECT_CLOSE(total, 1.0, 1.0, 1e-5, "row %d sums to 1", r);
  }
  pto_program_free(p);
}

/* ---- topk --------------------------------------------------------------- */

/* Is (v, i) ranked before (w, j)? value descending, NaN last, index asc. */
static int ranks_before(float v, int i, float w, int j) {
  if (isnan(v) != isnan(w))
    return !isnan(v);
  if (!isnan(v) && v != w)
    return v > w;
  return i < j;
}

/* Selection by repeated linear scans: independent of any sort. */
static void ref_topk(const float *row, int n, int k, float *vals, int *idx) {
  char used[64] = {0};
  for (int s = 0; s < k; s++) {
    int best = -1;
    for (int j = 0; j < n; j++)
      if (!used[j] && (best < 0 || ranks_before(row[j], j, row[best], best)))
        best = j;
    used[best] = 1;
    vals[s] = row[best];
    idx[s] = best;
  }
}

#define TR 4
#define TN 12
Test(core, eval_topk_ties_nan_and_k_equals_n) {
  float a[TR * TN];
  fill(a, TR * TN, 34, -3, 3);
  /* row 0: ties; row 1: NaN and infinities; row 2: all equal */
  for (int c = 0; c < TN; c++) {
    a[c] = (float)(c % 3); /* 0 1 2 0 1 2 ... */
    a[2 * TN + c] = 5.0f;
  }
  a[TN + 0] = NAN;
  a[TN + 1] = -INFINITY;
  a[TN + 2] = INFINITY;
  a[TN + 3] = NAN;
  a[TN + 4] = -0.0f;
  a[TN + 5] = 0.0f;
  float v5[TR * 5], vn[TR * TN];
  int32_t i5[TR * 5], in[TR * TN];
  pto_program *p = pto_program_new("topk");
  pto_tensor *ta = in2(p, "a", PTO_F32, TR, TN), *idx5 = NULL, *idxn = NULL;
  pto_tensor *t5 = pto_topk(p, ta, 5, &idx5);
  pto_tensor *tn = pto_topk(p, ta, TN, &idxn);
  pto_output(p, t5, "v5");
  pto_output(p, idx5, "i5");
  pto_output(p, tn, "vn");
  pto_output(p, idxn, "in");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(idx5), PTO_I32);
  cr_expect_eq(pto_tensor_dim(t5, -1), 5);
  const void *ins[] = {a};
  void *outs[] = {v5, i5, vn, in};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < TR; r++) {
    float wv[TN];
    int wi[TN];
    ref_topk(a + r * TN, TN, TN, wv, wi);
    for (int s = 0; s < TN; s++) {
      EXPECT_F32(vn[r * TN + s], wv[s], "row %d slot %d", r, s);
      cr_expect_eq(in[r * TN + s], wi[s], "row %d slot %d", r, s);
      if (s < 5) {
        EXPECT_F32(v5[r * 5 + s], wv[s], "k=5 row %d slot %d", r, s);
        cr_expect_eq(i5[r * 5 + s], wi[s], "k=5 row %d slot %d", r, s);
      }
    }
  }
  /* spelled out: row 0 is 2 at 2,5,8,11 then 1 at 1; NaNs last in row 1 */
  int32_t w0[5] = {2, 5, 8, 11, 1};
  for (int s = 0; s < 5; s++)
    cr_expect_eq(i5[s], w0[s]);
  cr_expect_eq(in[TN + 0], 2);      /* +inf first */
  cr_expect_eq(in[TN + TN - 3], 1); /* -inf before the NaNs */
  cr_expect_eq(in[TN + TN - 2], 0);
  cr_expect_eq(in[TN + TN - 1], 3);
  for (int s = 0; s < TN; s++)
    cr_expect_eq(in[2 * TN + s], s, "all equal: index order");
  pto_program_free(p);
}

Test(core, eval_topk_of_cast_i32_rank3_and_i32_rejected) {
  int32_t a[2 * 3 * 6], ix[2 * 3 * 2];
  float v[2 * 3 * 2];
  fill_i32(a, 36, 35, -4, 4);
  pto_program *p = pto_program_new("topk_i32");
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 3, (int64_t[]){2, 3, 6}), *ti;
  pto_tensor *tv = pto_topk(p, pto_cast(p, ta, PTO_F32), 2, &ti);
  pto_output(p, tv, "v");
  pto_output(p, ti, "i");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(tv), PTO_F32);
  const void *ins[] = {a};
  void *outs[] = {v, ix};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < 6; r++) {
    int b0 = -1, b1 = -1; /* best two by value desc, index asc */
    for (int j = 0; j < 6; j++) {
      int32_t x = a[r * 6 + j];
      if (b0 < 0 || x > a[r * 6 + b0]) {
        b1 = b0;
        b0 = j;
      } else if (b1 < 0 || x > a[r * 6 + b1]) {
        b1 = j;
      }
    }
    cr_expect_eq(ix[r * 2], b0, "row %d", r);
    cr_expect_eq(ix[r * 2 + 1], b1, "row %d", r);
    cr_expect_eq(v[r * 2], (float)a[r * 6 + b0]);
    cr_expect_eq(v[r * 2 + 1], (float)a[r * 6 + b1]);
  }
  /* top-k sorts floating values: an i32 tensor is refused by name */
  pto_tensor *bad = pto_topk(p, ta, 2, &ti);
  cr_expect_null(bad);
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  cr_expect(strstr(pto_program_error(p), "topk") &&
                strstr(pto_program_error(p), "'a' i32[2,3,6]"),
            "%s", pto_program_error(p));
  pto_program_free(p);
}

/* pto_topk_masked: -inf entries are never selected, slots past the rest
 * are (-inf, -1), k may exceed the row. Rows: ties at the k-th value, no
 * entry left (all -inf), NaN among -inf (NaN is an entry: it ranks last but
 * is selected before padding), fewer entries than k. */
#define TMR 5
#define TMN 8
#define TMK 11
Test(core, eval_topk_masked_excludes_pads_and_takes_k_past_the_row) {
  const float I = INFINITY;
  const float a[TMR * TMN] = {
      1, 3, 3, 2, 3, 0, 3, 1,          /* ties: the 3s at 1 2 4 6 */
      -I, -I, -I, -I, -I, -I, -I, -I,  /* no entry left */
      -I, NAN, -I, 5, -0.0f, -I, 0, I, /* NaN last, before padding */
      -I, 2, -I, -I, -I, -I, -I, -I,   /* one entry */
      7, 7, 7, 7, 7, 7, 7, 7};         /* all equal: index order */
  float v3[TMR * 3], vk[TMR * TMK];
  int32_t i3[TMR * 3], ik[TMR * TMK];
  pto_program *p = pto_program_new("topk_masked");
  pto_tensor *ta = in2(p, "a", PTO_F32, TMR, TMN), *x3 = NULL, *xk = NULL;
  pto_tensor *t3 = pto_topk_masked(p, ta, 3, &x3);
  pto_tensor *tk = pto_topk_masked(p, ta, TMK, &xk);
  pto_output(p, t3, "v3");
  pto_output(p, x3, "i3");
  pto_output(p, tk, "vk");
  pto_output(p, xk, "ik");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dim(tk, -1), TMK, "k past the row: [5, 11]");
  const void *ins[] = {a};
  void *outs[] = {v3, i3, vk, ik};
  EVAL_OK(p, ins, outs);
  /* by hand */
  const int32_t want[TMR][TMK] = {
      {1, 2, 4, 6, 3, 0, 7, 5, -1, -1, -1},
      {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
      {7, 3, 4, 6, 1, -1, -1, -1, -1, -1, -1},
      {1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
      {0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1}};
  for (int r = 0; r < TMR; r++)
    for (int s = 0; s < TMK; s++) {
      const int32_t j = want[r][s];
      const float w = j < 0 ? -INFINITY : a[r * TMN + j];
      cr_expect_eq(ik[r * TMK + s], j, "row %d slot %d", r, s);
      EXPECT_F32(vk[r * TMK + s], w, "row %d slot %d", r, s);
      if (s < 3) {
        cr_expect_eq(i3[r * 3 + s], j, "k=3 row %d slot %d", r, s);
        EXPECT_F32(v3[r * 3 + s], w, "k=3 row %d slot %d", r, s);
      }
    }
  pto_program_free(p);
}

/* ---- gather ------------------------------------------------------------- */

#define GN 5
#define GD 3
Test(core, eval_gather_invalid_indices_give_zero_rows) {
  float table[GN * GD], out[2 * 4 * GD];
  uint16_t tb[GN * GD], outb[6 * GD];
  fill(table, GN * GD, 36, -9, 9);
  for (int i = 0; i < GN * GD; i++)
    tb[i] = (uint16_t)(0x3f00 + i);
  int32_t idx[2 * 4] = {4, 0, -1, 2, 5, 100, INT32_MIN, 3};
  pto_program *p = pto_program_new("gather");
  pto_tensor *tt = in2(p, "table", PTO_F32, GN, GD);
  pto_tensor *ti = in2(p, "idx", PTO_I32, 2, 4);
  pto_tensor *tbt = in2(p, "table_bf16", PTO_BF16, GN, GD);
  pto_tensor *g = pto_gather(p, tt, ti, 0);
  pto_output(p, g, "g");
  /* a bf16 table, indexed by a slice (a view) of idx: idx[0:2, 1:4] */
  pto_tensor *gb = pto_gather(
      p, tbt, pto_slice(p, ti, (int64_t[]){0, 1}, (int64_t[]){2, 4}), 0);
  pto_output(p, gb, "gb");
  BUILD_OK(p);
  cr_expect(pto_tensor_ndim(g) == 3 && pto_tensor_dim(g, 2) == GD);
  cr_expect_eq(pto_tensor_dtype(gb), PTO_BF16);
  memset(out, 0xff, sizeof out); /* results must overwrite this */
  memset(outb, 0xff, sizeof outb);
  const void *ins[] = {table, idx, tb};
  void *outs[] = {out, outb};
  EVAL_OK(p, ins, outs);
  for (int s = 0; s < 8; s++)
    for (int d = 0; d < GD; d++) {
      int ok = idx[s] >= 0 && idx[s] < GN;
      float want = ok ? table[idx[s] * GD + d] : 0.0f;
      EXPECT_F32(out[s * GD + d], want, "slot %d (index %d) col %d", s, idx[s],
                 d);
    }
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 3; c++) {
      int32_t i = idx[r * 4 + 1 + c];
      for (int d = 0; d < GD; d++)
        cr_expect_eq(outb[(r * 3 + c) * GD + d],
                     i >= 0 && i < GN ? tb[i * GD + d] : 0, "bf16 %d,%d", r, c);
    }
  pto_program_free(p);
}

Test(core, eval_gather_strict_fails_with_range_error_then_recovers) {
  float table[GN * GD], out[4 * GD], sentinel[4 * GD];
  fill(table, GN * GD, 37, -1, 1);
  int32_t bad[4] = {0, 1, 7, 2}, good[4] = {4, 3, 2, 1};
  pto_program *p = pto_program_new("strict");
  pto_program_push_label(p, "sfa");
  pto_program_push_label(p, "kv");
  int64_t s[1] = {4};
  pto_tensor *tt = in2(p, "table", PTO_F32, GN, GD);
  pto_tensor *ti = pto_input(p, "idx", PTO_I32, 1, s);
  pto_tensor *g = pto_gather(p, tt, ti, PTO_GATHER_STRICT);
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  pto_output(p, g, "g");
  BUILD_OK(p);
  memset(out, 0x5a, sizeof out);
  memcpy(sentinel, out, sizeof out);
  const void *ins[] = {table, bad};
  void *outs[] = {out};
  cr_assert_eq(pto_program_eval(p, ins, outs), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "gather");
  EXPECT_MSG_HAS(p, "'sfa.kv'");
  EXPECT_MSG_HAS(p, "index 7");
  EXPECT_MSG_HAS(p, "[0, 5)");
  cr_expect(memcmp(out, sentinel, sizeof out) == 0,
            "outputs untouched by a failed run");
  /* a run-time error is not sticky: the program still builds and runs */
  cr_expect_eq(pto_program_status(p), PTO_OK);
  ins[1] = good;
  EVAL_OK(p, ins, outs);
  cr_expect_str_eq(pto_program_error(p), "");
  for (int i = 0; i < 4; i++)
    for (int d = 0; d < GD; d++)
      EXPECT_F32(out[i * GD + d], table[good[i] * GD + d], "%d,%d", i, d);
  pto_program_free(p);
}

/* ---- concat, full, iota ------------------------------------------------- */

Test(core, eval_concat_each_axis) {
  enum { A = 2, B = 3, D = 4 };
  float x[A * B * D], y[A * B * D], z[D * B * A];
  fill(x, A * B * D, 38, -5, 5);
  fill(y, A * B * D, 39, -5, 5);
  fill(z, A * B * D, 40, -5, 5);
  float o0[2 * A * B * D], o1[2 * A * B * D], o2[3 * A * B * D];
  pto_program *p = pto_program_new("concat");
  int64_t sh[3] = {A, B, D}, shz[3] = {D, B, A};
  pto_tensor *tx = pto_input(p, "x", PTO_F32, 3, sh);
  pto_tensor *ty = pto_input(p, "y", PTO_F32, 3, sh);
  pto_tensor *tz = pto_transpose(p, pto_input(p, "z", PTO_F32, 3, shz), 0, 2);
  pto_tensor *c0 = pto_concat(p, 2, (pto_tensor *[]){tx, ty}, 0);
  pto_tensor *c1 = pto_concat(p, 2, (pto_tensor *[]){ty, tx}, 1);
  pto_tensor *c2 = pto_concat(p, 3, (pto_tensor *[]){tx, tz, ty}, -1);
  pto_output(p, c0, "c0");
  pto_output(p, c1, "c1");
  pto_output(p, c2, "c2");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dim(c0, 0), 2 * A);
  cr_expect_eq(pto_tensor_dim(c1, 1), 2 * B);
  cr_expect_eq(pto_tensor_dim(c2, 2), 3 * D);
  const void *ins[] = {x, y, z};
  void *outs[] = {o0, o1, o2};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < A; i++)
    for (int j = 0; j < B; j++)
      for (int k = 0; k < D; k++) {
        int e = (i * B + j) * D + k;
        float zv = z[(k * B + j) * A + i]; /* transpose(z)[i][j][k] */
        EXPECT_F32(o0[e], x[e], "axis 0 x %d", e);
        EXPECT_F32(o0[A * B * D + e], y[e], "axis 0 y %d", e);
        EXPECT_F32(o1[(i * 2 * B + j) * D + k], y[e], "axis 1 y %d", e);
        EXPECT_F32(o1[(i * 2 * B + B + j) * D + k], x[e], "axis 1 x %d", e);
        EXPECT_F32(o2[(i * B + j) * 3 * D + k], x[e], "axis 2 x %d", e);
        EXPECT_F32(o2[(i * B + j) * 3 * D + D + k], zv, "axis 2 z %d", e);
        EXPECT_F32(o2[(i * B + j) * 3 * D + 2 * D + k], y[e], "axis 2 y %d", e);
      }
  pto_program_free(p);
}

/* A program without inputs may pass NULL for its inputs array. */
Test(core, eval_full_and_iota) {
  float ff[2 * 3], fi[2 * 5];
  int32_t ii[3 * 4], fullint[4];
  uint16_t fb[4], fh[4];
  pto_program *p = pto_program_new("fill");
  int64_t s23[2] = {2, 3}, s25[2] = {2, 5}, s34[2] = {3, 4}, s4[1] = {4};
  pto_output(p, pto_full(p, PTO_F32, 2, s23, 0.1), "ff");
  pto_output(p, pto_iota(p, PTO_F32, 2, s25, -3), "fi");
  pto_output(p, pto_iota(p, PTO_I32, 2, s34, 1000), "ii");
  pto_output(p, pto_full(p, PTO_I32, 1, s4, -2.5), "fullint"); /* even: -2 */
  pto_output(p, pto_full(p, PTO_BF16, 1, s4, 1.0 + 1.0 / 256), "fb");
  pto_output(p, pto_full(p, PTO_F16, 1, s4, 0.1), "fh");
  void *outs[] = {ff, fi, ii, fullint, fb, fh};
  EVAL_OK(p, NULL, outs);
  for (int i = 0; i < 6; i++)
    EXPECT_F32(ff[i], 0.1f, "full %d", i);
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 5; c++)
      EXPECT_F32(fi[r * 5 + c], (float)(c - 3), "iota %d,%d", r, c);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      cr_expect_eq(ii[r * 4 + c], 1000 + c);
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(fullint[i], -2);
    cr_expect_eq(fb[i], 0x3f80); /* 1 + 2^-8 ties to even: 1.0 */
    cr_expect_eq(fh[i], f16_enc(0.1f));
  }
  pto_program_free(p);
}

/* ---- custom ops --------------------------------------------------------- */

typedef struct custom_probe {
  int calls;
  int aligned, strided, shaped;
} custom_probe;

/* dst = 2 * src0 + src1, and records what it was given. */
static int axpb(pto_tile *dst, const pto_tile *const *src, int n_src,
                void *user) {
  custom_probe *pr = user;
  pr->calls++;
  pr->aligned = 1;
  pr->strided = 1;
  pr->shaped = n_src == 2 && dst->dtype == PTO_F32 &&
               src[0]->dtype == PTO_F32 && src[1]->dtype == PTO_F32 &&
               dst->rows == src[0]->rows && dst->cols == src[0]->cols &&
               dst->valid_rows == dst->rows && dst->valid_cols == dst->cols;
  for (int i = 0; i < n_src; i++) {
    pr->aligned &= (uintptr_t)src[i]->data % PTO_TILE_ALIGN == 0;
    pr->strided &=
        src[i]->stride == pto_tile_stride(src[i]->dtype, src[i]->cols);
  }
  pr->aligned &= (uintptr_t)dst->data % PTO_TILE_ALIGN == 0;
  pr->strided &= dst->stride == pto_tile_stride(dst->dtype, dst->cols);
  const float *a = src[0]->data, *b = src[1]->data;
  float *d = dst->data;
  for (uint32_t r = 0; r < dst->valid_rows; r++)
    for (uint32_t c = 0; c < dst->valid_cols; c++)
      d[r * dst->stride + c] =
          2.0f * a[r * src[0]->stride + c] + b[r * src[1]->stride + c];
  return 0;
}

static int fails(pto_tile *dst, const pto_tile *const *src, int n_src,
                 void *user) {
  (void)dst, (void)src, (void)n_src, (void)user;
  return PTO_ERANGE;
}

static int register_op(const char *name, int n_src, pto_custom_fn fn,
                       void *user) {
  pto_custom_op_desc d = {name, PTO_CORE_VECTOR, n_src, PTO_F32, 0, fn, user};
  int id = pto_custom_op_find(name); /* already there without --no-fork */
  if (id >= 0)
    return id;
  cr_assert_eq(pto_custom_op_register(&d, &id), PTO_OK, "register %s", name);
  return id;
}

Test(core, eval_custom_op_runs_once_on_whole_tensor) {
  static custom_probe probe;
  int id = register_op("eval_test_axpb", 2, axpb, &probe);
  float a[2 * 3 * 20], b[2 * 3 * 20], o[2 * 3 * 20];
  fill(a, 120, 41, -1, 1);
  fill(b, 120, 42, -1, 1);
  pto_program *p = pto_program_new("custom");
  int64_t sh[3] = {2, 3, 20};
  pto_tensor *ins_t[2];
  ins_t[0] = pto_input(p, "a", PTO_F32, 3, sh); /* declaration order */
  ins_t[1] = pto_input(p, "b", PTO_F32, 3, sh);
  pto_output(p, pto_custom(p, id, 2, ins_t), "o");
  const void *ins[] = {a, b};
  void *outs[] = {o};
  EVAL_OK(p, ins, outs);
  cr_expect_eq(probe.calls, 1);
  cr_expect(probe.aligned, "64-byte aligned tiles");
  cr_expect(probe.strided, "padded tile strides");
  cr_expect(probe.shaped, "whole-tensor 2-D tiles");
  for (int i = 0; i < 120; i++)
    EXPECT_F32(o[i], 2.0f * a[i] + b[i], "%d", i);
  pto_program_free(p);
}

Test(core, eval_custom_op_error_names_the_op) {
  int id = register_op("eval_test_fails", 1, fails, NULL);
  float a[4] = {1, 2, 3, 4}, o[4];
  pto_program *p = pto_program_new("custom_fail");
  pto_program_push_label(p, "stage");
  int64_t sh[1] = {4};
  pto_tensor *t = pto_input(p, "a", PTO_F32, 1, sh);
  pto_output(p, pto_custom(p, id, 1, &t), "o");
  BUILD_OK(p);
  const void *ins[] = {a};
  void *outs[] = {o};
  cr_expect_eq(pto_program_eval(p, ins, outs), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "eval_test_fails");
  EXPECT_MSG_HAS(p, "'stage'");
  cr_expect_eq(pto_program_status(p), PTO_OK);
  pto_program_free(p);
}

/* ---- the run's own errors ----------------------------------------------- */

Test(core, eval_rejects_null_buffers) {
  float a[4] = {0}, o[4];
  pto_program *p = pto_program_new("nulls");
  int64_t sh[1] = {4};
  pto_output(p, pto_neg(p, pto_input(p, "a", PTO_F32, 1, sh)), "o");
  BUILD_OK(p);
  const void *ins[] = {a}, *null_in[] = {NULL};
  void *outs[] = {o}, *null_out[] = {NULL};
  cr_expect_eq(pto_program_eval(NULL, ins, outs), PTO_EINVAL);
  cr_expect_eq(pto_program_eval(p, NULL, outs), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "inputs");
  cr_expect_eq(pto_program_eval(p, ins, NULL), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "outputs");
  cr_expect_eq(pto_program_eval(p, null_in, outs), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "'a'");
  cr_expect_eq(pto_program_eval(p, ins, null_out), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "'o'");
  cr_expect_eq(pto_program_status(p), PTO_OK);
  EVAL_OK(p, ins, outs);
  pto_program_free(p);
}

Test(core, eval_returns_the_sticky_build_error_without_running) {
  float a[4] = {1, 2, 3, 4}, o[4] = {9, 9, 9, 9};
  pto_program *p = pto_program_new("sticky");
  int64_t sh[1] = {4};
  pto_tensor *t = pto_input(p, "a", PTO_F32, 1, sh);
  pto_output(p, pto_neg(p, t), "o");
  cr_expect_null(pto_exp(p, pto_cast(p, t, PTO_I32))); /* EDTYPE */
  const void *ins[] = {a};
  void *outs[] = {o};
  cr_expect_eq(pto_program_eval(p, ins, outs), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "exp");
  for (int i = 0; i < 4; i++)
    EXPECT_F32(o[i], 9.0f, "untouched %d", i);
  pto_program_free(p);
}

/* ---- PyPTO's worked example --------------------------------------------- */

Test(core, eval_pypto_example_rowsum_matmul) {
  enum { N = 64, W = 32 };
  static float A[N * N], B[N * N], Wt[N * W], Cout[N];
  fill(A, N * N, 43, -1, 1);
  fill(B, N * N, 44, -1, 1);
  fill(Wt, N * W, 45, -1, 1);
  pto_program *p = pto_program_new("example");
  int64_t s[2] = {N, N}, w[2] = {N, W};
  pto_tensor *a = pto_input(p, "A", PTO_F32, 2, s);
  pto_tensor *b = pto_input(p, "B", PTO_F32, 2, s);
  pto_tensor *tw = pto_input(p, "W", PTO_F32, 2, w);
  pto_program_set_vec_tile(p, 32, 32);
  pto_tensor *c =
      pto_rowsum(p, pto_matmul(p, pto_add(p, pto_muls(p, a, 2), b), tw, 0));
  pto_output(p, c, "C");
  BUILD_OK(p);
  cr_expect(pto_tensor_dim(c, 0) == N && pto_tensor_dim(c, 1) == 1);
  const void *ins[] = {A, B, Wt};
  void *outs[] = {Cout};
  EVAL_OK(p, ins, outs);
  for (int m = 0; m < N; m++) {
    double want = 0, mag = 0;
    for (int n = 0; n < W; n++)
      for (int k = 0; k < N; k++) {
        double x = 2.0 * A[m * N + k] + B[m * N + k];
        want += x * Wt[k * W + n];
        mag += fabs(x * Wt[k * W + n]);
      }
    EXPECT_CLOSE(Cout[m], want, mag, 1e-5, "row %d", m);
  }
  pto_program_free(p);
}
