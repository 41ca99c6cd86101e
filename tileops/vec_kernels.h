/* tileops/vec_kernels.h (internal): the SIMD tile instructions, written once
 * over a small set of vector primitives. Included only by
 * tileops/vec_avx2.c and tileops/vec_avx512.c, after each defines the
 * primitives for its ISA, so it is compiled only with that file's ISA flags;
 * nothing here names an intrinsic. Defines vec_install(), which overrides the
 * entries of a table derived from the scalar reference. The conversions with
 * the memory instructions, the sorts, the fused softmax rows, the online
 * softmax and top-k have headers of their own (tileops/cvt_kernels.h,
 * sort_kernels.h, softmax_kernels.h, attn_kernels.h, topk_kernels.h), over
 * these primitives and included after this one.
 *
 * The primitives (all static inline or macros, per ISA):
 *   VL                         32-bit lanes per vector
 *   vf vi vb                   f32 vector, i32 vector, lane booleans
 *   vf_ld vf_st vi_ld vi_st    full-vector loads and stores
 *   vi_stream store_fence      a streaming store to a vector-aligned address,
 *                              and the fence that orders such stores
 *   vf_ldn vi_ldn (p, n, fill) lanes [0, n) from p, the rest fill; touch
 *   vf_stn vi_stn (p, v, n)    only p[0..n-1]
 *   vi_ld16n vi_st16n          16-bit elements <-> zero-extended 32-bit lanes
 *   vf_ldhn vf_sthn            f16 <-> f32 (F16C: exact / nearest even)
 *   vf_set vf_add vf_sub vf_mul vf_div vf_sqrt vf_fma vf_maxr vf_minr
 *   vf_round vf_and vf_or vf_xor vf_bits vi_bits
 *   vf_hmaxr vf_hminr          the hardware max/min of the lanes (no NaN in
 *                              them; a zero's sign is either's)
 *   vf_ldexp(p, n)             p * 2^n rounded once, for p in [0.5, 2) and
 *                              integral n in [-151, 129] (or NaN)
 *   vi_set vi_add vi_sub vi_mul vi_div vi_max vi_min vi_abs vi_and vi_or
 *   vi_srai vi_srli vi_slli    shifts by a constant
 *   vi_to_f vf_to_i            i32 -> f32; f32 -> i32 nearest even, saturating,
 *                              NaN -> 0
 *   vf_cmp(a, b, _CMP_*) vi_eq vi_gt vb_not vb_or vb_and vb_any
 *   vf_blend vi_blend (m, f, t) m ? t : f per lane;  vb_01: m ? 1 : 0
 *   sort keys: KL, vk (KL u64 keys), vp (KL u32 payloads), kb (KL booleans),
 *   vk_ld vk_st vk_set vk_first vk_lt vk_le vk_ge vk_eq kb_count kb_or
 *   kb_and kb_andnot kfirst kb_low vk_blend vp_blend vp_ld vp_st vk_rev vp_rev
 *   vk_swap vp_swap (k, D): lane l takes lane l ^ D
 *
 * Every kernel follows tileops/tileops.h exactly (bit-exact with the scalar
 * reference for PTO_IF_EXACT instructions and every i32 result) and touches
 * no element outside the valid regions: full vectors over the interior, one
 * masked (or n-element) vector for each row's tail. Where an instruction may
 * run in place, each vector is loaded before the same positions are stored,
 * so `restrict` on the row pointers never reorders a store before a load of
 * the same element (the store depends on that load). */
#ifndef PTO_TILEOPS_VEC_KERNELS_H
#define PTO_TILEOPS_VEC_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/convert.h"
#include "core/prefetch.h"
#include "tileops/tileops.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---- row access and the column loop ------------------------------------ */

static inline void *row_of(const pto_tile *t, uint32_t r) {
  return (unsigned char *)t->data +
         (size_t)r * t->stride * pto__dtype_bytes(t->dtype);
}

/* Element (r, 0) of a global view whose columns are contiguous. */
static inline void *grow(const pto_gview *g, int64_t r) {
  return (unsigned char *)g->base +
         r * g->row_stride * (int64_t)pto__dtype_bytes(g->dtype);
}

/* STEP(c, n) for vectors at columns c < vc: n == VL over the interior, two
 * per iteration (unrolled by 2), then one n < VL tail. FOR_COLS_PF also
 * takes one line of the prefetch plan PF (core/prefetch.h) per iteration. */
#define FOR_COLS(vc, STEP) FOR_COLS_PF(vc, STEP, (pto_pf *)NULL)
#define FOR_COLS_PF(vc, STEP, PF)                                              \
  do {                                                                         \
    const uint32_t vc_ = (vc);                                                 \
    uint32_t c_ = 0;                                                           \
    for (; c_ + 2 * VL <= vc_; c_ += 2 * VL) {                                 \
      STEP(c_, VL);                                                            \
      STEP(c_ + VL, VL);                                                       \
      pto__pf_tick(PF);                                                        \
    }                                                                          \
    if (c_ + VL <= vc_) {                                                      \
      STEP(c_, VL);                                                            \
      c_ += VL;                                                                \
    }                                                                          \
    if (c_ < vc_)                                                              \
      STEP(c_, vc_ - c_);                                                      \
  } while (0)

/* n-element loads and stores that fold to full ones when n is VL. */
ALWAYS_INLINE vf ldf(const float *p, uint32_t n) {
  return n == VL ? vf_ld(p) : vf_ldn(p, n, vf_set(0.0f));
}
ALWAYS_INLINE void stf(float *p, vf v, uint32_t n) {
  if (n == VL)
    vf_st(p, v);
  else
    vf_stn(p, v, n);
}
ALWAYS_INLINE vi ldi(const int32_t *p, uint32_t n) {
  return n == VL ? vi_ld(p) : vi_ldn(p, n, vi_set(0));
}
ALWAYS_INLINE void sti(int32_t *p, vi v, uint32_t n) {
  if (n == VL)
    vi_st(p, v);
  else
    vi_stn(p, v, n);
}

/* ---- IEEE 754-2019 maximum / minimum ------------------------------------- */

/* The hardware max gives its second operand for NaN or equal inputs; fix
 * equal lanes (+0 vs -0: AND keeps the sign only when both are -0) and
 * unordered lanes (x + y is a NaN). */
ALWAYS_INLINE vf vf_max(vf x, vf y) {
  vf r = vf_blend(vf_cmp(x, y, _CMP_EQ_OQ), vf_maxr(x, y), vf_and(x, y));
  return vf_blend(vf_cmp(x, y, _CMP_UNORD_Q), r, vf_add(x, y));
}
ALWAYS_INLINE vf vf_min(vf x, vf y) {
  vf r = vf_blend(vf_cmp(x, y, _CMP_EQ_OQ), vf_minr(x, y), vf_or(x, y));
  return vf_blend(vf_cmp(x, y, _CMP_UNORD_Q), r, vf_add(x, y));
}

/* ---- exp and log ------------------------------------------------------------
 * Accuracy: both within 1 ulp of the exact result (the f32 ulp at the exact
 * value; 2^-149 below 2^-126), subnormal results included; special values
 * as C's expf/logf. tests/test_tileops.c (vec_exp_sweep, vec_log_sweep)
 * asserts this over a dense sweep of f32 inputs against double precision:
 * the largest errors seen are 0.86 ulp (exp) and 0.83 ulp (log). Results
 * are identical on every ISA (the same operations, FMA on both). */

/* exp(x) = 2^n * e^r, n = round(x / ln2), r = x - n ln2 in [-ln2/2, ln2/2]
 * (Cody-Waite: ln2 split so n * LN2_HI is exact), e^r by 1 + r + r^2 q(r),
 * q of degree 4 a minimax fit of (e^r - 1 - r) / r^2 for relative error on
 * that interval (3.8e-9 with these f32 coefficients, 0.07 ulp; one FMA
 * fewer than Taylor to r^7), Horner with FMA, then vf_ldexp (one
 * rounding, so subnormal results are right and overflow gives +inf). x is
 * clamped to [-104, 88.8] first (beyond, the result is 0 or +inf anyway)
 * with the bound as the first operand of the hardware max/min, which then
 * passes a NaN x through to the result. */
ALWAYS_INLINE vf exp_clamped(vf x, float lo) {
  const vf xc = vf_minr(vf_set(88.8f), vf_maxr(vf_set(lo), x));
  const vf n = vf_round(vf_mul(xc, vf_set(1.44269504088896341f)));
  vf r = vf_fma(n, vf_set(-0.693145751953125f), xc);
  r = vf_fma(n, vf_set(-1.42860682030941723e-6f), r);
  vf p = vf_set(0x1.6a2434p-10f);
  p = vf_fma(p, r, vf_set(0x1.1239e2p-7f));
  p = vf_fma(p, r, vf_set(0x1.5558f2p-5f));
  p = vf_fma(p, r, vf_set(0x1.555492p-3f));
  p = vf_fma(p, r, vf_set(0x1.fffffcp-2f));
  p = vf_fma(p, r, vf_set(1.0f));
  p = vf_fma(p, r, vf_set(1.0f));
  return vf_ldexp(p, n);
}
/* A scaling whose result underflows (subnormal or zero) costs an Intel
 * core a microcode assist for the whole vector: 66 ns against 0.9 on a
 * Xeon (family 6, model 167), and a causal mask's -inf scores made every
 * such exp one (TSOFTMAXONLINE at 2 ns a score). So lanes below -86 are
 * set apart: those below -104 (a result under 2^-150, 0 once rounded) are
 * 0 without being scaled, and only a vector with a lane between, whose
 * result is subnormal, takes the full range. The values are the same. */
ALWAYS_INLINE vf vf_exp(vf x) {
  const vb low = vf_cmp(x, vf_set(-86.0f), _CMP_LT_OQ);
  if (!vb_any(low)) /* every result normal (or NaN) */
    return exp_clamped(x, -86.0f);
  const vb zero = vf_cmp(x, vf_set(-104.0f), _CMP_LT_OQ);
  if (vb_any(vb_and(low, vb_not(zero))))
    return exp_clamped(x, -104.0f);
  return vf_blend(zero, exp_clamped(x, -86.0f), vf_set(0.0f));
}

/* log(x) = e ln2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)) (inputs
 * below 2^-126 are scaled by 2^23 first); with f = m - 1 (exact),
 * s = f / (2 + f): log(m) = f - f^2/2 + s (f^2/2 + R(s^2)), R the series of
 * 2 atanh(s) / s - 2 - ... to s^10 (truncation < 1e-9 relative). ln2 is
 * split so e * LN2_HI is exact. Special cases as C's logf: log(+-0) = -inf,
 * log(x < 0) = NaN, log(+inf) = +inf, NaN -> NaN. */
ALWAYS_INLINE vf vf_log(vf x) {
  const vb tiny = vf_cmp(x, vf_set(0x1p-126f), _CMP_LT_OQ);
  const vf xs = vf_blend(tiny, x, vf_mul(x, vf_set(0x1p23f)));
  const vi u = vi_sub(vf_bits(xs), vi_set(0x3f3504f3));
  const vi e = vi_add(vi_srai(u, 23), vi_blend(tiny, vi_set(0), vi_set(-23)));
  const vf m =
      vi_bits(vi_add(vi_and(u, vi_set(0x007fffff)), vi_set(0x3f3504f3)));
  const vf f = vf_sub(m, vf_set(1.0f));
  const vf s = vf_div(f, vf_add(f, vf_set(2.0f)));
  const vf z = vf_mul(s, s);
  vf R = vf_set(2.0f / 11);
  R = vf_fma(R, z, vf_set(2.0f / 9));
  R = vf_fma(R, z, vf_set(2.0f / 7));
  R = vf_fma(R, z, vf_set(2.0f / 5));
  R = vf_fma(R, z, vf_set(2.0f / 3));
  R = vf_mul(R, z);
  const vf ef = vi_to_f(e);
  const vf hfsq = vf_mul(vf_set(0.5f), vf_mul(f, f));
  const vf t = vf_fma(s, vf_add(hfsq, R), vf_mul(ef, vf_set(1.42860682e-6f)));
  const vf y = vf_sub(vf_sub(hfsq, t), f); /* -(log(m) + e LN2_LO) */
  vf l = vf_fma(ef, vf_set(0.693145751953125f), vf_xor(y, vf_set(-0.0f)));
  l = vf_blend(vf_cmp(x, vf_set(INFINITY), _CMP_EQ_OQ), l, vf_set(INFINITY));
  l = vf_blend(vf_cmp(x, vf_set(0.0f), _CMP_EQ_OQ), l, vf_set(-INFINITY));
  return vf_blend(vf_cmp(x, vf_set(0.0f), _CMP_NGE_UQ), l,
                  vf_set(NAN)); /* x < 0 or NaN */
}

/* ---- element-wise -------------------------------------------------------- */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_EXPDIF };

ALWAYS_INLINE vf fbin(const int op, vf x, vf y) {
  switch (op) {
  case B_ADD:
    return vf_add(x, y);
  case B_SUB:
    return vf_sub(x, y);
  case B_MUL:
    return vf_mul(x, y);
  case B_DIV:
    return vf_div(x, y);
  case B_MAX:
    return vf_max(x, y);
  case B_MIN:
    return vf_min(x, y);
  default:
    return vf_exp(vf_sub(x, y));
  }
}

ALWAYS_INLINE vi ibin(const int op, vi x, vi y) {
  switch (op) {
  case B_ADD:
    return vi_add(x, y);
  case B_SUB:
    return vi_sub(x, y);
  case B_MUL:
    return vi_mul(x, y);
  case B_DIV:
    return vi_div(x, y);
  case B_MAX:
    return vi_max(x, y);
  default:
    return vi_min(x, y);
  }
}

/* Where the second operand comes from: a tile of dst's shape (ELEMENT), a
 * scalar (SCALAR), column 0 of a rowvec (TROWEXPAND*) or row 0 of a colvec
 * (TCOLEXPAND*). */
enum { Y_TILE, Y_SCALAR, Y_ROWVEC, Y_COLVEC };

/* dst = x op y over dst's valid region, f32 or i32. */
ALWAYS_INLINE int binary(const pto_targs *a, const int op, const int ymode) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0], *y = a->src[1];
  const uint32_t vr = d->valid_rows, vc = d->valid_cols;
  if (d->dtype == PTO_I32) {
    const vi ys = vi_set(pto__f64_to_i32_sat(a->s));
    for (uint32_t r = 0; r < vr; r++) {
      int32_t *restrict dp = row_of(d, r);
      const int32_t *restrict xp = row_of(x, r);
      const int32_t *restrict yp =
          ymode == Y_TILE || ymode == Y_ROWVEC ? row_of(y, r)
          : ymode == Y_COLVEC                  ? row_of(y, 0)
                                               : NULL;
      const vi yr = ymode == Y_ROWVEC ? vi_set(yp[0]) : ys;
#define STEP(c, n)                                                             \
  sti(dp + c,                                                                  \
      ibin(op, ldi(xp + c, n),                                                 \
           ymode == Y_TILE || ymode == Y_COLVEC ? ldi(yp + c, n) : yr),        \
      n)
      FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
    }
    return PTO_OK;
  }
  const vf ys = vf_set((float)a->s);
  for (uint32_t r = 0; r < vr; r++) {
    float *restrict dp = row_of(d, r);
    const float *restrict xp = row_of(x, r);
    const float *restrict yp = ymode == Y_TILE || ymode == Y_ROWVEC
                                   ? row_of(y, r)
                               : ymode == Y_COLVEC ? row_of(y, 0)
                                                   : NULL;
    const vf yr = ymode == Y_ROWVEC ? vf_set(yp[0]) : ys;
#define STEP(c, n)                                                             \
  stf(dp + c,                                                                  \
      fbin(op, ldf(xp + c, n),                                                 \
           ymode == Y_TILE || ymode == Y_COLVEC ? ldf(yp + c, n) : yr),        \
      n)
    FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
  }
  return PTO_OK;
}

enum { U_EXP, U_LOG, U_SQRT, U_RSQRT, U_RECIP, U_RELU, U_ABS, U_NEG };

ALWAYS_INLINE vf fun(const int op, vf x) {
  switch (op) {
  case U_EXP:
    return vf_exp(x);
  case U_LOG:
    return vf_log(x);
  case U_SQRT:
    return vf_sqrt(x);
  case U_RSQRT: /* 1 / sqrtf(x): two roundings, as the reference */
    return vf_div(vf_set(1.0f), vf_sqrt(x));
  case U_RECIP:
    return vf_div(vf_set(1.0f), x);
  case U_RELU: /* maximum(x, +0): -0 -> +0, NaN stays */
    return vf_max(x, vf_set(0.0f));
  case U_ABS:
    return vf_and(x, vi_bits(vi_set(0x7fffffff)));
  default:
    return vf_xor(x, vf_set(-0.0f));
  }
}

ALWAYS_INLINE vi iun(const int op, vi x) {
  switch (op) {
  case U_RELU:
    return vi_max(x, vi_set(0));
  case U_ABS:
    return vi_abs(x);
  default:
    return vi_sub(vi_set(0), x);
  }
}

ALWAYS_INLINE int unary(const pto_targs *a, const int op) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  const uint32_t vr = d->valid_rows, vc = d->valid_cols;
  for (uint32_t r = 0; r < vr; r++) {
    if (d->dtype == PTO_I32) {
      int32_t *restrict dp = row_of(d, r);
      const int32_t *restrict xp = row_of(x, r);
#define STEP(c, n) sti(dp + c, iun(op, ldi(xp + c, n)), n)
      FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
    } else {
      float *restrict dp = row_of(d, r);
      const float *restrict xp = row_of(x, r);
#define STEP(c, n) stf(dp + c, fun(op, ldf(xp + c, n)), n)
      FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
    }
  }
  return PTO_OK;
}

/* TCMP, one mode: 1 / 0 into an i32 dst; NaN compares false except NE. */
ALWAYS_INLINE vb fcmp(const int mode, vf x, vf y) {
  switch (mode) {
  case PTO_CMP_EQ:
    return vf_cmp(x, y, _CMP_EQ_OQ);
  case PTO_CMP_NE:
    return vf_cmp(x, y, _CMP_NEQ_UQ);
  case PTO_CMP_LT:
    return vf_cmp(x, y, _CMP_LT_OQ);
  case PTO_CMP_LE:
    return vf_cmp(x, y, _CMP_LE_OQ);
  case PTO_CMP_GT:
    return vf_cmp(x, y, _CMP_GT_OQ);
  default:
    return vf_cmp(x, y, _CMP_GE_OQ);
  }
}

ALWAYS_INLINE vb icmp(const int mode, vi x, vi y) {
  switch (mode) {
  case PTO_CMP_EQ:
    return vi_eq(x, y);
  case PTO_CMP_NE:
    return vb_not(vi_eq(x, y));
  case PTO_CMP_LT:
    return vi_gt(y, x);
  case PTO_CMP_LE:
    return vb_not(vi_gt(x, y));
  case PTO_CMP_GT:
    return vi_gt(x, y);
  default:
    return vb_not(vi_gt(y, x));
  }
}

ALWAYS_INLINE void compare_mode(const pto_targs *a, const int mode) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0], *y = a->src[1];
  const uint32_t vr = d->valid_rows, vc = d->valid_cols;
  for (uint32_t r = 0; r < vr; r++) {
    int32_t *restrict dp = row_of(d, r);
    if (x->dtype == PTO_I32) {
      const int32_t *restrict xp = row_of(x, r), *restrict yp = row_of(y, r);
#define STEP(c, n)                                                             \
  sti(dp + c, vb_01(icmp(mode, ldi(xp + c, n), ldi(yp + c, n))), n)
      FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
    } else {
      const float *restrict xp = row_of(x, r), *restrict yp = row_of(y, r);
#define STEP(c, n)                                                             \
  sti(dp + c, vb_01(fcmp(mode, ldf(xp + c, n), ldf(yp + c, n))), n)
      FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
    }
  }
}

static int vec_TCMP(int op, const pto_targs *a) {
  (void)op;
  switch (a->imm[0]) {
  case PTO_CMP_EQ:
    compare_mode(a, PTO_CMP_EQ);
    break;
  case PTO_CMP_NE:
    compare_mode(a, PTO_CMP_NE);
    break;
  case PTO_CMP_LT:
    compare_mode(a, PTO_CMP_LT);
    break;
  case PTO_CMP_LE:
    compare_mode(a, PTO_CMP_LE);
    break;
  case PTO_CMP_GT:
    compare_mode(a, PTO_CMP_GT);
    break;
  default:
    compare_mode(a, PTO_CMP_GE);
    break;
  }
  return PTO_OK;
}

/* dst = mask != 0 ? src1 : src2; f32 and i32 alike, as bits. */
static int vec_TSEL(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *m = a->src[0], *x = a->src[1], *y = a->src[2];
  const uint32_t vr = d->valid_rows, vc = d->valid_cols;
  for (uint32_t r = 0; r < vr; r++) {
    int32_t *restrict dp = row_of(d, r);
    const int32_t *restrict mp = row_of(m, r), *restrict xp = row_of(x, r),
                            *restrict yp = row_of(y, r);
#define STEP(c, n)                                                             \
  sti(dp + c,                                                                  \
      vi_blend(vi_eq(ldi(mp + c, n), vi_set(0)), ldi(xp + c, n),               \
               ldi(yp + c, n)),                                                \
      n)
    FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
  }
  return PTO_OK;
}

/* ---- fills ----------------------------------------------------------------- */

static int vec_TEXPANDS(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const int32_t bits = d->dtype == PTO_I32
                           ? pto__f64_to_i32_sat(a->s)
                           : (int32_t)pto__f32_bits((float)a->s);
  const vi v = vi_set(bits);
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    int32_t *restrict dp = row_of(d, r);
#define STEP(c, n) sti(dp + c, v, n)
    FOR_COLS(d->valid_cols, STEP);
#undef STEP
  }
  return PTO_OK;
}

/* lane l holds l */
ALWAYS_INLINE vi vi_iota(void) {
  _Alignas(64) int32_t lane[VL];
  for (int l = 0; l < VL; l++)
    lane[l] = l;
  return vi_ld(lane);
}

/* TCI: imm[0] + c, wrapping in i32 as the reference's; in f32 the i32
 * value converted (exact to 2^24, then to nearest even as the reference's
 * conversion of the same integer), or the reference when imm[0] + c
 * passes INT32_MAX. Until these two were SIMD, every causal attention's
 * trace showed TCI in the reference column. */
static int vec_TCI(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const int f = d->dtype != PTO_I32;
  if (f && (int64_t)a->imm[0] + d->valid_cols > (int64_t)INT32_MAX + 1)
    return pto__isa_ref(op, a);
  const vi iota = vi_iota();
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    int32_t *restrict dp = row_of(d, r);
#define STEP(c, n)                                                             \
  {                                                                            \
    const vi v =                                                               \
        vi_add(iota, vi_set((int32_t)((uint32_t)a->imm[0] + (uint32_t)(c))));  \
    sti(dp + (c), f ? vf_bits(vi_to_f(v)) : v, n);                             \
  }
    FOR_COLS(d->valid_cols, STEP);
#undef STEP
  }
  return PTO_OK;
}

/* TTRI: 1 where c <= r + imm[0], else 0 (i32 or f32) */
static int vec_TTRI(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const vi iota = vi_iota();
  const vi one = d->dtype == PTO_I32 ? vi_set(1) : vf_bits(vf_set(1.0f));
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    int32_t *restrict dp = row_of(d, r);
    /* the last column that holds 1, clamped to [-1, valid_cols] */
    int64_t t = (int64_t)r + a->imm[0];
    t = t < -1 ? -1 : t > (int64_t)d->valid_cols ? d->valid_cols : t;
    const vi tv = vi_set((int32_t)t);
#define STEP(c, n)                                                             \
  sti(dp + (c),                                                                \
      vi_blend(vi_gt(vi_add(iota, vi_set((int32_t)(c))), tv), one, vi_set(0)), \
      n)
    FOR_COLS(d->valid_cols, STEP);
#undef STEP
  }
  return PTO_OK;
}

/* ---- axis: reductions -----------------------------------------------------
 * Rows fold in 2 vector accumulators, then across lanes; max/min are
 * associative and commutative (NaN wins, +0 > -0), so the order does not
 * change them; sums are compared with a tolerance. Tails load the identity
 * (-0 for sums: x + -0 = x for every x). */

ALWAYS_INLINE vf fred(const int op, vf x, vf y) {
  return op == B_ADD ? vf_add(x, y) : op == B_MAX ? vf_max(x, y) : vf_min(x, y);
}
ALWAYS_INLINE vi ired(const int op, vi x, vi y) {
  return op == B_ADD ? vi_add(x, y) : op == B_MAX ? vi_max(x, y) : vi_min(x, y);
}

/* IEEE maximum (minimum) of a row, fast: the hardware max over 2
 * accumulators, NaNs tracked apart (the hardware max drops them), and the
 * sign of a zero result settled afterwards (the hardware max does not
 * order +0 and -0): 3 operations per vector instead of vf_max's 5. With
 * cp, the row is also copied to cp as it is read (TLOADROWMAX). */
ALWAYS_INLINE float row_maxmin(const float *restrict xp, uint32_t vc,
                               const int op, pto_pf *pf, float *restrict cp) {
  const vf id = vf_set(op == B_MAX ? -INFINITY : INFINITY);
  vf acc0 = id, acc1 = id;
  vb nan = vf_cmp(id, id, _CMP_UNORD_Q); /* none */
  uint32_t c = 0;
  for (; c + 2 * VL <= vc; c += 2 * VL) { /* 2 accumulators */
    const vf x0 = vf_ld(xp + c), x1 = vf_ld(xp + c + VL);
    if (cp) {
      vf_st(cp + c, x0);
      vf_st(cp + c + VL, x1);
    }
    acc0 = op == B_MAX ? vf_maxr(acc0, x0) : vf_minr(acc0, x0);
    acc1 = op == B_MAX ? vf_maxr(acc1, x1) : vf_minr(acc1, x1);
    nan = vb_or(nan, vf_cmp(x0, x1, _CMP_UNORD_Q));
    pto__pf_tick(pf);
  }
  for (; c < vc; c += VL) {
    const vf x0 = vc - c >= VL ? vf_ld(xp + c) : vf_ldn(xp + c, vc - c, id);
    if (cp)
      stf(cp + c, x0, vc - c >= VL ? VL : vc - c);
    acc0 = op == B_MAX ? vf_maxr(acc0, x0) : vf_minr(acc0, x0);
    nan = vb_or(nan, vf_cmp(x0, x0, _CMP_UNORD_Q));
  }
  if (vb_any(nan))
    return NAN;
  /* no NaN: the hardware's fold is the value, but for a zero's sign */
  float v = op == B_MAX ? vf_hmaxr(vf_maxr(acc0, acc1))
                        : vf_hminr(vf_minr(acc0, acc1));
  if (v == 0.0f) { /* +0 if any +0 (max), -0 if any -0 (min) */
    const uint32_t want = op == B_MAX ? 0u : 0x80000000u;
    v = op == B_MAX ? -0.0f : 0.0f;
    for (uint32_t k = 0; k < vc; k++)
      if (pto__f32_bits(xp[k]) == want)
        return op == B_MAX ? 0.0f : -0.0f;
  }
  return v;
}

/* The f32 row sum of TROWSUM from its two accumulators (even and odd
 * vectors, the tail in the first): lanes of their sum, left to right. */
ALWAYS_INLINE float fold_sum(vf acc0, vf acc1) {
  float lanes[VL];
  vf_st(lanes, vf_add(acc0, acc1));
  float v = lanes[0];
  for (int l = 1; l < VL; l++)
    v += lanes[l];
  return v;
}

ALWAYS_INLINE int row_reduce(const pto_targs *a, const int op) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  const uint32_t vr = x->valid_rows, vc = x->valid_cols;
  for (uint32_t r = 0; r < vr; r++) {
    if (d->dtype == PTO_I32) {
      const int32_t *restrict xp = row_of(x, r);
      const int32_t id = op == B_ADD ? 0 : op == B_MAX ? INT32_MIN : INT32_MAX;
      vi acc0 = vi_set(id), acc1 = acc0;
      uint32_t c = 0;
      for (; c + 2 * VL <= vc; c += 2 * VL) { /* 2 accumulators */
        acc0 = ired(op, acc0, vi_ld(xp + c));
        acc1 = ired(op, acc1, vi_ld(xp + c + VL));
      }
      for (; c < vc; c += VL)
        acc0 = ired(op, acc0,
                    vc - c >= VL ? vi_ld(xp + c) : vi_ldn(xp + c, vc - c,
                                                          vi_set(id)));
      int32_t lanes[VL];
      vi_st(lanes, ired(op, acc0, acc1));
      int32_t v = lanes[0];
      for (int l = 1; l < VL; l++)
        v = op == B_ADD   ? (int32_t)((uint32_t)v + (uint32_t)lanes[l])
            : op == B_MAX ? (v > lanes[l] ? v : lanes[l])
                          : (v < lanes[l] ? v : lanes[l]);
      ((int32_t *)row_of(d, r))[0] = v;
    } else if (op != B_ADD) {
      ((float *)row_of(d, r))[0] = row_maxmin(row_of(x, r), vc, op, a->pf, NULL);
    } else {
      const float *restrict xp = row_of(x, r);
      const float id = -0.0f;
      vf acc0 = vf_set(id), acc1 = acc0;
      uint32_t c = 0;
      for (; c + 2 * VL <= vc; c += 2 * VL) { /* 2 accumulators */
        acc0 = vf_add(acc0, vf_ld(xp + c));
        acc1 = vf_add(acc1, vf_ld(xp + c + VL));
        pto__pf_tick(a->pf);
      }
      for (; c < vc; c += VL)
        acc0 = vf_add(acc0, vc - c >= VL ? vf_ld(xp + c)
                                         : vf_ldn(xp + c, vc - c, vf_set(id)));
      ((float *)row_of(d, r))[0] = fold_sum(acc0, acc1);
    }
  }
  return PTO_OK;
}

/* Columns: one accumulator per lane, rows folded top to bottom (the
 * reference's order). */
ALWAYS_INLINE int col_reduce(const pto_targs *a, const int op) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  const uint32_t vr = x->valid_rows, vc = x->valid_cols;
  if (d->dtype == PTO_I32) {
    int32_t *restrict dp = row_of(d, 0);
#define STEP(c, n)                                                             \
  do {                                                                         \
    vi acc_ = ldi((const int32_t *)row_of(x, 0) + (c), n);                     \
    for (uint32_t r_ = 1; r_ < vr; r_++)                                       \
      acc_ = ired(op, acc_, ldi((const int32_t *)row_of(x, r_) + (c), n));     \
    sti(dp + (c), acc_, n);                                                    \
  } while (0)
    FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
  } else {
    float *restrict dp = row_of(d, 0);
#define STEP(c, n)                                                             \
  do {                                                                         \
    vf acc_ = ldf((const float *)row_of(x, 0) + (c), n);                       \
    for (uint32_t r_ = 1; r_ < vr; r_++)                                       \
      acc_ = fred(op, acc_, ldf((const float *)row_of(x, r_) + (c), n));       \
    stf(dp + (c), acc_, n);                                                    \
  } while (0)
    FOR_COLS_PF(vc, STEP, a->pf);
#undef STEP
  }
  return PTO_OK;
}

/* ---- axis: broadcasts -------------------------------------------------------- */

/* dst[r][c] = src0[r][0] (row = 1) or src0[0][c] (row = 0), as 32-bit bits. */
ALWAYS_INLINE int expand(const pto_targs *a, const int row) {
  pto_tile *d = a->dst[0];
  const pto_tile *s = a->src[0];
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    int32_t *restrict dp = row_of(d, r);
    const int32_t *restrict sp = row_of(s, row ? r : 0);
    const vi v = vi_set(sp[0]);
#define STEP(c, n) sti(dp + c, row ? v : ldi(sp + c, n), n)
    FOR_COLS(d->valid_cols, STEP);
#undef STEP
  }
  return PTO_OK;
}

static int vec_TROWEXPAND(int op, const pto_targs *a) {
  (void)op;
  return expand(a, 1);
}
static int vec_TCOLEXPAND(int op, const pto_targs *a) {
  (void)op;
  return expand(a, 0);
}

/* ---- the table entries -------------------------------------------------- */

#define BINARY_OP(NAME, OP, Y)                                                 \
  static int vec_##NAME(int op, const pto_targs *a) {                          \
    (void)op;                                                                  \
    return binary(a, OP, Y);                                                   \
  }
BINARY_OP(TADD, B_ADD, Y_TILE)
BINARY_OP(TSUB, B_SUB, Y_TILE)
BINARY_OP(TMUL, B_MUL, Y_TILE)
BINARY_OP(TDIV, B_DIV, Y_TILE)
BINARY_OP(TMAX, B_MAX, Y_TILE)
BINARY_OP(TMIN, B_MIN, Y_TILE)
BINARY_OP(TADDS, B_ADD, Y_SCALAR)
BINARY_OP(TSUBS, B_SUB, Y_SCALAR)
BINARY_OP(TMULS, B_MUL, Y_SCALAR)
BINARY_OP(TDIVS, B_DIV, Y_SCALAR)
BINARY_OP(TMAXS, B_MAX, Y_SCALAR)
BINARY_OP(TMINS, B_MIN, Y_SCALAR)
BINARY_OP(TROWEXPANDADD, B_ADD, Y_ROWVEC)
BINARY_OP(TROWEXPANDSUB, B_SUB, Y_ROWVEC)
BINARY_OP(TROWEXPANDMUL, B_MUL, Y_ROWVEC)
BINARY_OP(TROWEXPANDDIV, B_DIV, Y_ROWVEC)
BINARY_OP(TROWEXPANDMAX, B_MAX, Y_ROWVEC)
BINARY_OP(TROWEXPANDEXPDIF, B_EXPDIF, Y_ROWVEC)
BINARY_OP(TCOLEXPANDADD, B_ADD, Y_COLVEC)
BINARY_OP(TCOLEXPANDSUB, B_SUB, Y_COLVEC)
BINARY_OP(TCOLEXPANDMUL, B_MUL, Y_COLVEC)
BINARY_OP(TCOLEXPANDDIV, B_DIV, Y_COLVEC)
#undef BINARY_OP

#define UNARY_OP(NAME, OP)                                                     \
  static int vec_##NAME(int op, const pto_targs *a) {                          \
    (void)op;                                                                  \
    return unary(a, OP);                                                       \
  }
UNARY_OP(TEXP, U_EXP)
UNARY_OP(TLOG, U_LOG)
UNARY_OP(TSQRT, U_SQRT)
UNARY_OP(TRSQRT, U_RSQRT)
UNARY_OP(TRECIP, U_RECIP)
UNARY_OP(TRELU, U_RELU)
UNARY_OP(TABS, U_ABS)
UNARY_OP(TNEG, U_NEG)
#undef UNARY_OP

#define REDUCE_OP(NAME, FN, OP)                                                \
  static int vec_##NAME(int op, const pto_targs *a) {                          \
    (void)op;                                                                  \
    return FN(a, OP);                                                          \
  }
REDUCE_OP(TROWSUM, row_reduce, B_ADD)
REDUCE_OP(TROWMAX, row_reduce, B_MAX)
REDUCE_OP(TROWMIN, row_reduce, B_MIN)
REDUCE_OP(TCOLSUM, col_reduce, B_ADD)
REDUCE_OP(TCOLMAX, col_reduce, B_MAX)
REDUCE_OP(TCOLMIN, col_reduce, B_MIN)
#undef REDUCE_OP

/* Everything this header implements; the rest stays the reference's. */
// clang-format off
#define VEC_OPS(X)                                                             \
  X(TADD) X(TSUB) X(TMUL) X(TDIV) X(TMAX) X(TMIN) X(TEXP) X(TLOG) X(TSQRT)     \
  X(TRSQRT) X(TRECIP) X(TRELU) X(TABS) X(TNEG) X(TCMP) X(TSEL) X(TADDS)        \
  X(TSUBS) X(TMULS) X(TDIVS) X(TMAXS) X(TMINS) X(TEXPANDS) X(TROWSUM)          \
  X(TROWMAX) X(TROWMIN) X(TCOLSUM) X(TCOLMAX) X(TCOLMIN) X(TROWEXPAND)         \
  X(TROWEXPANDADD) X(TROWEXPANDSUB) X(TROWEXPANDMUL) X(TROWEXPANDDIV)          \
  X(TROWEXPANDMAX) X(TROWEXPANDEXPDIF) X(TCOLEXPAND) X(TCOLEXPANDADD)          \
  X(TCOLEXPANDSUB) X(TCOLEXPANDMUL) X(TCOLEXPANDDIV) X(TCI) X(TTRI)
// clang-format on

static void vec_install(pto_isa_table *t) {
#define SET(name) t->fn[PTO_OP_##name] = vec_##name;
  VEC_OPS(SET)
#undef SET
}

#endif /* PTO_TILEOPS_VEC_KERNELS_H */
