/* avx512 overrides of the element, scalar, axis, memory, move and sort
 * instructions. The only file of its kind compiled with the avx512 flags
 * (tileops/CMakeLists.txt).
 *
 * This file defines the vector primitives tileops/vec_kernels.h is written
 * over, for 16 f32/i32 lanes in a zmm register with mask-register tails, and
 * then includes the kernels. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "tileops/tileops.h"

#define VL 16 /* 32-bit lanes per vector */
#define KL 8  /* 64-bit sort keys per vector */

typedef __m512 vf;
typedef __m512i vi;
typedef __mmask16 vb;

/* Lanes [0, n) of a vector, 0 < n <= VL. */
static inline vb first(uint32_t n) {
  return (vb)(0xffffu >> (VL - n));
}

/* ---- loads and stores; the n-forms touch elements [0, n) only ----------- */

static inline vf vf_ld(const float *p) {
  return _mm512_loadu_ps(p);
}
static inline void vf_st(float *p, vf v) {
  _mm512_storeu_ps(p, v);
}
static inline vf vf_ldn(const float *p, uint32_t n, vf fill) {
  return _mm512_mask_loadu_ps(fill, first(n), p);
}
static inline void vf_stn(float *p, vf v, uint32_t n) {
  _mm512_mask_storeu_ps(p, first(n), v);
}
static inline vi vi_ld(const int32_t *p) {
  return _mm512_loadu_si512(p);
}
static inline void vi_st(int32_t *p, vi v) {
  _mm512_storeu_si512(p, v);
}
static inline vi vi_ldn(const int32_t *p, uint32_t n, vi fill) {
  return _mm512_mask_loadu_epi32(fill, first(n), p);
}
static inline void vi_stn(int32_t *p, vi v, uint32_t n) {
  _mm512_mask_storeu_epi32(p, first(n), v);
}
/* Non-temporal: p 64-byte aligned; store_fence orders them. */
static inline void vi_stream(int32_t *p, vi v) {
  _mm512_stream_si512((void *)p, v);
}
static inline void store_fence(void) {
  _mm_sfence();
}
/* 16-bit elements, zero-extended into (or truncated from) 32-bit lanes. */
static inline vi vi_ld16n(const uint16_t *p, uint32_t n) {
  return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(first(n), p));
}
static inline void vi_st16n(uint16_t *p, vi v, uint32_t n) {
  _mm512_mask_cvtepi32_storeu_epi16(p, first(n), v);
}
/* f16 (F16C semantics: exact widening; narrowing rounds to nearest even,
 * f16 subnormals and infinities included). */
static inline vf vf_ldhn(const uint16_t *p, uint32_t n) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p));
}
static inline void vf_sthn(uint16_t *p, vf v, uint32_t n) {
  __m256i h =
      _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm256_mask_storeu_epi16(p, first(n), h);
}

/* ---- arithmetic ----------------------------------------------------------- */

static inline vf vf_set(float x) {
  return _mm512_set1_ps(x);
}
static inline vi vi_set(int32_t x) {
  return _mm512_set1_epi32(x);
}
static inline vf vf_add(vf a, vf b) {
  return _mm512_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
  return _mm512_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
  return _mm512_mul_ps(a, b);
}
static inline vf vf_div(vf a, vf b) {
  return _mm512_div_ps(a, b);
}
static inline vf vf_sqrt(vf a) {
  return _mm512_sqrt_ps(a);
}
static inline vf vf_fma(vf a, vf b, vf c) { /* a * b + c, one rounding */
  return _mm512_fmadd_ps(a, b, c);
}
/* The hardware max/min: the second operand when either is NaN or both are
 * zero; vec_kernels.h builds IEEE maximum/minimum on them. */
static inline vf vf_maxr(vf a, vf b) {
  return _mm512_max_ps(a, b);
}
static inline vf vf_minr(vf a, vf b) {
  return _mm512_min_ps(a, b);
}
/* The hardware max/min of the lanes, for lanes that hold no NaN (the sign
 * of a zero result is then either's: callers settle it). */
static inline float vf_hmaxr(vf a) {
  return _mm512_reduce_max_ps(a);
}
static inline float vf_hminr(vf a) {
  return _mm512_reduce_min_ps(a);
}
static inline vf vf_round(vf a) { /* to nearest even */
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline vf vf_ldexp(vf p, vf n) {
  return _mm512_scalef_ps(p, n);
}
static inline vf vf_and(vf a, vf b) {
  return _mm512_and_ps(a, b);
}
static inline vf vf_or(vf a, vf b) {
  return _mm512_or_ps(a, b);
}
static inline vf vf_xor(vf a, vf b) {
  return _mm512_xor_ps(a, b);
}
static inline vi vf_bits(vf a) {
  return _mm512_castps_si512(a);
}
static inline vf vi_bits(vi a) {
  return _mm512_castsi512_ps(a);
}

static inline vi vi_add(vi a, vi b) {
  return _mm512_add_epi32(a, b);
}
static inline vi vi_sub(vi a, vi b) {
  return _mm512_sub_epi32(a, b);
}
static inline vi vi_mul(vi a, vi b) { /* low 32 bits: wraps */
  return _mm512_mullo_epi32(a, b);
}
static inline vi vi_max(vi a, vi b) {
  return _mm512_max_epi32(a, b);
}
static inline vi vi_min(vi a, vi b) {
  return _mm512_min_epi32(a, b);
}
static inline vi vi_abs(vi a) { /* INT32_MIN stays INT32_MIN: wraps */
  return _mm512_abs_epi32(a);
}
static inline vi vi_and(vi a, vi b) {
  return _mm512_and_si512(a, b);
}
static inline vi vi_or(vi a, vi b) {
  return _mm512_or_si512(a, b);
}
#define vi_srai(a, k) _mm512_srai_epi32(a, k)
#define vi_srli(a, k) _mm512_srli_epi32(a, k)
#define vi_slli(a, k) _mm512_slli_epi32(a, k)

/* Truncating i32 division through f64: both operands are exact in f64 and
 * the f64 quotient is never off by enough to cross an integer (|error| <
 * 2^-22 / |b|, while a non-integer quotient is >= 1 / |b| from one), so
 * truncating it gives C's quotient; INT32_MIN / -1 = 2^31 converts to the
 * "integer indefinite" 0x80000000, which is the wrapped INT32_MIN. Lanes
 * where b == 0 give 0. */
static inline vi vi_div(vi a, vi b) {
  __m512d alo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(a));
  __m512d ahi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1));
  __m512d blo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(b));
  __m512d bhi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(b, 1));
  __m256i qlo = _mm512_cvttpd_epi32(_mm512_div_pd(alo, blo));
  __m256i qhi = _mm512_cvttpd_epi32(_mm512_div_pd(ahi, bhi));
  vi q = _mm512_inserti64x4(_mm512_castsi256_si512(qlo), qhi, 1);
  return _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(b, b), q);
}

static inline vf vi_to_f(vi a) { /* rounds to nearest even beyond 2^24 */
  return _mm512_cvtepi32_ps(a);
}
/* Nearest even, saturating, NaN -> 0 (core/convert.h). */
static inline vi vf_to_i(vf a) {
  vi r = _mm512_cvt_roundps_epi32(a, _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC);
  r = _mm512_mask_mov_epi32(
      r, _mm512_cmp_ps_mask(a, vf_set(2147483648.0f), _CMP_GE_OQ),
      vi_set(INT32_MAX));
  return _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q),
                               vi_set(0));
}

/* ---- lane booleans ---------------------------------------------------- */

#define vf_cmp(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
static inline vb vi_eq(vi a, vi b) {
  return _mm512_cmpeq_epi32_mask(a, b);
}
static inline vb vi_gt(vi a, vi b) {
  return _mm512_cmpgt_epi32_mask(a, b);
}
static inline vb vb_not(vb m) {
  return (vb)~m;
}
static inline vb vb_or(vb a, vb b) {
  return (vb)(a | b);
}
static inline vb vb_and(vb a, vb b) {
  return (vb)(a & b);
}
static inline int vb_any(vb m) {
  return m != 0;
}
static inline vf vf_blend(vb m, vf f, vf t) { /* m ? t : f */
  return _mm512_mask_blend_ps(m, f, t);
}
static inline vi vi_blend(vb m, vi f, vi t) {
  return _mm512_mask_blend_epi32(m, f, t);
}
static inline vi vb_01(vb m) { /* 1 where m, else 0 */
  return _mm512_maskz_set1_epi32(m, 1);
}
/* Lane l's boolean as bit l (tileops/topk_kernels.h). */
static inline unsigned vb_bits(vb m) {
  return (unsigned)m;
}

/* ---- 64-bit sort keys (TSORT32 and TMRGSORT in sort_kernels.h) --------- */

typedef __m512i vk;  /* KL unsigned 64-bit keys */
typedef __m256i vp;  /* KL 32-bit payloads, lane i beside key lane i */
typedef __mmask8 kb; /* KL lane booleans */

static inline kb kfirst(uint32_t n) { /* lanes [0, n), 0 <= n <= KL */
  return (kb)(0xffu >> (KL - n));
}
static inline vk vk_ld(const uint64_t *p) {
  return _mm512_loadu_si512(p);
}
static inline void vk_st(uint64_t *p, vk k) {
  _mm512_storeu_si512(p, k);
}
static inline vk vk_set(uint64_t x) {
  return _mm512_set1_epi64((long long)x);
}
static inline uint64_t vk_first(vk k) {
  return (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(k));
}
static inline kb vk_lt(vk a, vk b) {
  return _mm512_cmplt_epu64_mask(a, b);
}
static inline kb vk_le(vk a, vk b) {
  return _mm512_cmple_epu64_mask(a, b);
}
static inline kb vk_ge(vk a, vk b) {
  return _mm512_cmpge_epu64_mask(a, b);
}
static inline kb vk_eq(vk a, vk b) {
  return _mm512_cmpeq_epu64_mask(a, b);
}
static inline unsigned kb_count(kb m) {
  return (unsigned)__builtin_popcount(m);
}
static inline kb kb_or(kb a, kb b) {
  return (kb)(a | b);
}
static inline kb kb_and(kb a, kb b) {
  return (kb)(a & b);
}
static inline kb kb_andnot(kb a, kb b) { /* ~a & b */
  return (kb)(~a & b);
}
/* Lanes l with (l & D) == 0: the lower lane of each pair D apart. */
#define kb_low(D) ((kb)((D) == 4 ? 0x0f : (D) == 2 ? 0x33 : 0x55))
static inline vk vk_blend(kb m, vk f, vk t) {
  return _mm512_mask_blend_epi64(m, f, t);
}
static inline vp vp_blend(kb m, vp f, vp t) {
  return _mm256_mask_blend_epi32(m, f, t);
}
static inline vp vp_ld(const uint32_t *p) {
  return _mm256_loadu_si256((const __m256i *)(const void *)p);
}
static inline void vp_st(uint32_t *p, vp v) {
  _mm256_storeu_si256((__m256i *)(void *)p, v);
}
static inline vk vk_rev(vk k) {
  return _mm512_permutexvar_epi64(_mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                                  k);
}
static inline vp vp_rev(vp p) {
  return _mm256_permutevar8x32_epi32(p,
                                     _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
}
/* Lane l takes lane l ^ D. */
#define vk_swap(k, D)                                                          \
  ((D) == 4   ? _mm512_shuffle_i64x2(k, k, 0x4e)                               \
   : (D) == 2 ? _mm512_permutex_epi64(k, 0x4e)                                 \
              : _mm512_permutex_epi64(k, 0xb1))
#define vp_swap(p, D)                                                          \
  ((D) == 4   ? _mm256_permute2x128_si256(p, p, 1)                             \
   : (D) == 2 ? _mm256_shuffle_epi32(p, 0x4e)                                  \
              : _mm256_shuffle_epi32(p, 0xb1))

#include "tileops/vec_kernels.h"
#include "tileops/cvt_kernels.h"
#include "tileops/sort_kernels.h"
#include "tileops/softmax_kernels.h"
#include "tileops/attn_kernels.h"
#include "tileops/topk_kernels.h"

void pto__vec_avx512(pto_isa_table *t) {
  vec_install(t);
  cvt_install(t);
  sort_install(t);
  softmax_install(t);
  attn_install(t);
  topk_install(t);
}
