/* core/convert.h (internal): element conversions between the PTO dtypes,
 * shared by the tile instructions (tileops/) and the reference evaluator.
 *
 * bf16 and f16 values are held as their uint16_t bit patterns. Every
 * narrowing conversion rounds to nearest, ties to even; float -> i32 also
 * saturates and maps NaN to 0. A NaN stays a NaN: quiet, same sign, top
 * payload bits kept. Widening bf16/f16 -> f32 is exact. i32 -> bf16/f16 goes
 * through f32 (two roundings, as the evaluator's casts do), so it can differ
 * from a single correct rounding only for |i| > 2^24.
 *
 * Header-only (static inline) so that SIMD files can use the scalar forms for
 * their tails without a call. */
#ifndef PTO_CORE_CONVERT_H
#define PTO_CORE_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pto/types.h"

static inline uint32_t pto__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float pto__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* bf16 is the top half of an f32: widening is a shift. */
static inline float pto__bf16_to_f32(uint16_t h) {
  return pto__f32_from_bits((uint32_t)h << 16);
}

static inline uint16_t pto__f32_to_bf16(float f) {
  uint32_t u = pto__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: force the quiet bit */
    return (uint16_t)((u >> 16) | 0x0040u);
  /* Add just under half a bf16 ulp, plus one more when the kept lsb is odd,
   * then truncate: ties go to even. Overflow carries into the exponent and
   * lands on infinity; f32 subnormals map onto bf16 subnormals. */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float pto__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) /* inf or NaN: payload moves to the top of the mantissa */
    return pto__f32_from_bits(sign | 0x7f800000u | (m << 13));
  if (e == 0) /* zero or subnormal: m * 2^-24, exact in f32 */
    return pto__f32_from_bits(sign | pto__f32_bits((float)m * 0x1p-24f));
  /* normal: rebias the exponent from 15 to 127 */
  return pto__f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t pto__f32_to_f16(float f) {
  uint32_t u = pto__f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu; /* magnitude bits */
  if (a > 0x7f800000u)          /* NaN: quiet, top 9 payload bits kept */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x1ffu));
  if (a >= 0x477ff000u) /* >= 65520 = max + half ulp (a tie to even, which
                           is infinity); infinity itself */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) {  /* below 2^-14: an f16 subnormal or zero */
    if (a <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: ties
                             to the even zero */
      return sign;
    /* value = m * 2^(e-150); in units of 2^-24 that is m >> (126 - e) */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14..24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
      q++; /* may carry into the smallest normal: still the right code */
    return (uint16_t)(sign | q);
  }
  /* Normal: rebias the exponent from 127 to 15, then round away the low 13
   * mantissa bits as for bf16. A carry out of the mantissa bumps the
   * exponent, up to 0x7bff at most (larger inputs were handled above). */
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

/* Rounds to the nearest integer, ties to even, saturating to i32; NaN -> 0.
 * Independent of the floating-point rounding mode. */
static inline int32_t pto__f64_to_i32_sat(double d) {
  if (d != d)
    return 0;
  if (d >= 2147483647.5) /* rounds to >= 2^31 */
    return INT32_MAX;
  if (d <= -2147483648.5) /* rounds to <= -2^31 */
    return INT32_MIN;
  double fl = floor(d), frac = d - fl; /* both exact here */
  if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0))
    fl += 1.0;
  return (int32_t)fl;
}

static inline int32_t pto__f32_to_i32_sat(float f) {
  return pto__f64_to_i32_sat((double)f);
}

/* Any dtype -> f32: exact except i32 beyond 2^24 (rounds to nearest even). */
static inline float pto__to_f32(pto_dtype from, const void *src) {
  switch (from) {
  case PTO_I32: {
    int32_t i;
    memcpy(&i, src, sizeof i);
    return (float)i;
  }
  case PTO_BF16: {
    uint16_t h;
    memcpy(&h, src, sizeof h);
    return pto__bf16_to_f32(h);
  }
  case PTO_F16: {
    uint16_t h;
    memcpy(&h, src, sizeof h);
    return pto__f16_to_f32(h);
  }
  default: {
    float f;
    memcpy(&f, src, sizeof f);
    return f;
  }
  }
}

/* Stores the f32 value f as dtype `to`. */
static inline void pto__from_f32(pto_dtype to, void *dst, float f) {
  switch (to) {
  case PTO_I32: {
    int32_t i = pto__f32_to_i32_sat(f);
    memcpy(dst, &i, sizeof i);
    break;
  }
  case PTO_BF16: {
    uint16_t h = pto__f32_to_bf16(f);
    memcpy(dst, &h, sizeof h);
    break;
  }
  case PTO_F16: {
    uint16_t h = pto__f32_to_f16(f);
    memcpy(dst, &h, sizeof h);
    break;
  }
  default:
    memcpy(dst, &f, sizeof f);
    break;
  }
}

/* One element from dtype `from` at src to dtype `to` at dst. The same dtype
 * copies the bits (NaN payloads included); i32 -> i32 never goes through
 * f32; everything else goes through f32. src may equal dst. */
static inline void pto__convert(pto_dtype to, void *dst, pto_dtype from,
                                const void *src) {
  if (to == from) {
    unsigned char tmp[4];
    size_t n = to == PTO_BF16 || to == PTO_F16 ? 2 : 4;
    memcpy(tmp, src, n);
    memcpy(dst, tmp, n);
    return;
  }
  pto__from_f32(to, dst, pto__to_f32(from, src));
}

#endif /* PTO_CORE_CONVERT_H */
