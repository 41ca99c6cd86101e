/* avx2 overrides of the element, scalar, axis, memory, move and sort
 * instructions. The only file of its kind compiled with the avx2 flags
 * (tileops/CMakeLists.txt).
 *
 * This file defines the vector primitives tileops/vec_kernels.h is written
 * over, for 8 f32/i32 lanes in a ymm register. AVX2 has no mask registers:
 * lane booleans are all-ones lanes, and row tails are explicit: vmaskmov for
 * 32-bit elements (masked-off lanes are neither read nor written), a small
 * buffer for 16-bit ones. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "tileops/tileops.h"

#define VL 8 /* 32-bit lanes per vector */
#define KL 4 /* 64-bit sort keys per vector */

typedef __m256 vf;
typedef __m256i vi;
typedef __m256i vb;

/* Lanes [0, n) of a vector, 0 <= n <= VL. */
static inline vb first(uint32_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* ---- loads and stores; the n-forms touch elements [0, n) only ----------- */

static inline vf vf_ld(const float *p) {
  return _mm256_loadu_ps(p);
}
static inline void vf_st(float *p, vf v) {
  _mm256_storeu_ps(p, v);
}
static inline vf vf_ldn(const float *p, uint32_t n, vf fill) {
  const vb m = first(n);
  return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m),
                          _mm256_castsi256_ps(m));
}
static inline void vf_stn(float *p, vf v, uint32_t n) {
  _mm256_maskstore_ps(p, first(n), v);
}
static inline vi vi_ld(const int32_t *p) {
  return _mm256_loadu_si256((const __m256i *)(const void *)p);
}
static inline void vi_st(int32_t *p, vi v) {
  _mm256_storeu_si256((__m256i *)(void *)p, v);
}
static inline vi vi_ldn(const int32_t *p, uint32_t n, vi fill) {
  const vb m = first(n);
  return _mm256_blendv_epi8(fill, _mm256_maskload_epi32((const int *)p, m), m);
}
static inline void vi_stn(int32_t *p, vi v, uint32_t n) {
  _mm256_maskstore_epi32((int *)p, first(n), v);
}
/* Non-temporal: p 32-byte aligned; store_fence orders them. */
static inline void vi_stream(int32_t *p, vi v) {
  _mm256_stream_si256((__m256i *)(void *)p, v);
}
static inline void store_fence(void) {
  _mm_sfence();
}
/* 16-bit elements, zero-extended into (or truncated from) 32-bit lanes. */
static inline __m128i ld16n(const uint16_t *p, uint32_t n) {
  if (n == VL)
    return _mm_loadu_si128((const __m128i *)(const void *)p);
  uint16_t buf[VL] = {0};
  memcpy(buf, p, n * sizeof *p);
  return _mm_loadu_si128((const __m128i *)buf);
}
static inline void st16n(uint16_t *p, __m128i h, uint32_t n) {
  if (n == VL) {
    _mm_storeu_si128((__m128i *)(void *)p, h);
    return;
  }
  uint16_t buf[VL];
  _mm_storeu_si128((__m128i *)buf, h);
  memcpy(p, buf, n * sizeof *p);
}
static inline vi vi_ld16n(const uint16_t *p, uint32_t n) {
  return _mm256_cvtepu16_epi32(ld16n(p, n));
}
static inline void vi_st16n(uint16_t *p, vi v, uint32_t n) {
  /* lanes hold 0..65535: pack without saturating, then gather the halves */
  const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08);
  st16n(p, _mm256_castsi256_si128(h), n);
}
/* f16 (F16C: exact widening; narrowing rounds to nearest even, f16
 * subnormals and infinities included). */
static inline vf vf_ldhn(const uint16_t *p, uint32_t n) {
  return _mm256_cvtph_ps(ld16n(p, n));
}
static inline void vf_sthn(uint16_t *p, vf v, uint32_t n) {
  st16n(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT), n);
}

/* ---- arithmetic ----------------------------------------------------------- */

static inline vf vf_set(float x) {
  return _mm256_set1_ps(x);
}
static inline vi vi_set(int32_t x) {
  return _mm256_set1_epi32(x);
}
static inline vf vf_add(vf a, vf b) {
  return _mm256_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
  return _mm256_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
  return _mm256_mul_ps(a, b);
}
static inline vf vf_div(vf a, vf b) {
  return _mm256_div_ps(a, b);
}
static inline vf vf_sqrt(vf a) {
  return _mm256_sqrt_ps(a);
}
static inline vf vf_fma(vf a, vf b, vf c) { /* a * b + c, one rounding */
  return _mm256_fmadd_ps(a, b, c);
}
/* The hardware max/min: the second operand when either is NaN or both are
 * zero; vec_kernels.h builds IEEE maximum/minimum on them. */
static inline vf vf_maxr(vf a, vf b) {
  return _mm256_max_ps(a, b);
}
static inline vf vf_minr(vf a, vf b) {
  return _mm256_min_ps(a, b);
}
/* The hardware max/min of the lanes, for lanes that hold no NaN (the sign
 * of a zero result is then either's: callers settle it). */
static inline float vf_hmaxr(vf a) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
static inline float vf_hminr(vf a) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_movehdup_ps(m)));
}
static inline vf vf_round(vf a) { /* to nearest even */
  return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline vf vf_and(vf a, vf b) {
  return _mm256_and_ps(a, b);
}
static inline vf vf_or(vf a, vf b) {
  return _mm256_or_ps(a, b);
}
static inline vf vf_xor(vf a, vf b) {
  return _mm256_xor_ps(a, b);
}
static inline vi vf_bits(vf a) {
  return _mm256_castps_si256(a);
}
static inline vf vi_bits(vi a) {
  return _mm256_castsi256_ps(a);
}

static inline vi vi_add(vi a, vi b) {
  return _mm256_add_epi32(a, b);
}
static inline vi vi_sub(vi a, vi b) {
  return _mm256_sub_epi32(a, b);
}
static inline vi vi_mul(vi a, vi b) { /* low 32 bits: wraps */
  return _mm256_mullo_epi32(a, b);
}
static inline vi vi_max(vi a, vi b) {
  return _mm256_max_epi32(a, b);
}
static inline vi vi_min(vi a, vi b) {
  return _mm256_min_epi32(a, b);
}
static inline vi vi_abs(vi a) { /* INT32_MIN stays INT32_MIN: wraps */
  return _mm256_abs_epi32(a);
}
static inline vi vi_and(vi a, vi b) {
  return _mm256_and_si256(a, b);
}
static inline vi vi_or(vi a, vi b) {
  return _mm256_or_si256(a, b);
}
#define vi_srai(a, k) _mm256_srai_epi32(a, k)
#define vi_srli(a, k) _mm256_srli_epi32(a, k)
#define vi_slli(a, k) _mm256_slli_epi32(a, k)

/* p * 2^n as two exact powers of two, 2^(n - n/2) then 2^(n/2): p * the
 * first stays normal and exact, so a subnormal result is rounded once. A NaN
 * n converts to 0 and leaves p (then NaN too) alone. */
static inline vf vf_ldexp(vf p, vf n) {
  const vi ni = _mm256_cvttps_epi32(n);
  const vi n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const vi bias = _mm256_set1_epi32(127);
  const vf s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  const vf s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* Truncating i32 division through f64 (exact: see vec_avx512.c); lanes
 * where b == 0 give 0. */
static inline vi vi_div(vi a, vi b) {
  const __m128i qlo = _mm256_cvttpd_epi32(
      _mm256_div_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(a)),
                    _mm256_cvtepi32_pd(_mm256_castsi256_si128(b))));
  const __m128i qhi = _mm256_cvttpd_epi32(
      _mm256_div_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(a, 1)),
                    _mm256_cvtepi32_pd(_mm256_extracti128_si256(b, 1))));
  const vi q = _mm256_inserti128_si256(_mm256_castsi128_si256(qlo), qhi, 1);
  return _mm256_andnot_si256(_mm256_cmpeq_epi32(b, _mm256_setzero_si256()),
                             q);
}

static inline vf vi_to_f(vi a) { /* rounds to nearest even beyond 2^24 */
  return _mm256_cvtepi32_ps(a);
}
/* Nearest even, saturating, NaN -> 0 (core/convert.h). Rounding first makes
 * the conversion independent of MXCSR. */
static inline vi vf_to_i(vf a) {
  vi r = _mm256_cvttps_epi32(vf_round(a)); /* out of range: INT32_MIN */
  const vi big = _mm256_castps_si256(
      _mm256_cmp_ps(a, vf_set(2147483648.0f), _CMP_GE_OQ));
  r = _mm256_blendv_epi8(r, vi_set(INT32_MAX), big);
  return _mm256_andnot_si256(_mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)),
                             r);
}

/* ---- lane booleans ---------------------------------------------------- */

#define vf_cmp(a, b, pred) _mm256_castps_si256(_mm256_cmp_ps(a, b, pred))
static inline vb vi_eq(vi a, vi b) {
  return _mm256_cmpeq_epi32(a, b);
}
static inline vb vi_gt(vi a, vi b) {
  return _mm256_cmpgt_epi32(a, b);
}
static inline vb vb_not(vb m) {
  return _mm256_xor_si256(m, _mm256_set1_epi32(-1));
}
static inline vb vb_or(vb a, vb b) {
  return _mm256_or_si256(a, b);
}
static inline vb vb_and(vb a, vb b) {
  return _mm256_and_si256(a, b);
}
static inline int vb_any(vb m) {
  return !_mm256_testz_si256(m, m);
}
static inline vf vf_blend(vb m, vf f, vf t) { /* m ? t : f */
  return _mm256_blendv_ps(f, t, _mm256_castsi256_ps(m));
}
static inline vi vi_blend(vb m, vi f, vi t) {
  return _mm256_blendv_epi8(f, t, m);
}
static inline vi vb_01(vb m) { /* 1 where m, else 0 */
  return _mm256_srli_epi32(m, 31);
}
/* Lane l's boolean as bit l (tileops/topk_kernels.h). */
static inline unsigned vb_bits(vb m) {
  return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
}

/* The lanes of x whose bits are set in `bits` (as vb_bits gives them),
 * moved down in order to the first lanes; the others undefined
 * (tileops/topk_kernels.h collects its candidates with no branch per
 * lane). A permutation per 8 bits: byte j of compress_perm[bits] is the
 * lane of its j-th set bit (CP(b), a constant expression: lane l of b,
 * when set, goes to byte "set bits of b below l"). */
#define VI_COMPRESS 1
#define CP_POP(x)                                                              \
  (((x)&1) + ((x) >> 1 & 1) + ((x) >> 2 & 1) + ((x) >> 3 & 1) +                \
   ((x) >> 4 & 1) + ((x) >> 5 & 1) + ((x) >> 6 & 1) + ((x) >> 7 & 1))
#define CP_LANE(b, l)                                                          \
  ((uint64_t)((b) >> (l)&1) *                                                  \
   ((uint64_t)(l) << 8 * CP_POP((b) & ((1u << (l)) - 1))))
#define CP(b)                                                                  \
  (CP_LANE(b, 0) | CP_LANE(b, 1) | CP_LANE(b, 2) | CP_LANE(b, 3) |             \
   CP_LANE(b, 4) | CP_LANE(b, 5) | CP_LANE(b, 6) | CP_LANE(b, 7))
#define CP4(b) CP(b), CP((b) + 1), CP((b) + 2), CP((b) + 3)
#define CP16(b) CP4(b), CP4((b) + 4), CP4((b) + 8), CP4((b) + 12)
#define CP64(b) CP16(b), CP16((b) + 16), CP16((b) + 32), CP16((b) + 48)
static const uint64_t compress_perm[256] = {CP64(0u), CP64(64u), CP64(128u),
                                            CP64(192u)};
#undef CP64
#undef CP16
#undef CP4
#undef CP
#undef CP_LANE
#undef CP_POP
static inline vi vi_compress(vi x, unsigned bits) {
  const __m128i lanes = _mm_cvtsi64_si128((long long)compress_perm[bits]);
  return _mm256_permutevar8x32_epi32(x, _mm256_cvtepu8_epi32(lanes));
}

/* ---- 64-bit sort keys (TSORT32 and TMRGSORT in sort_kernels.h) ---------
 * AVX2 compares 64-bit lanes as signed only: flipping the top bit of both
 * sides makes that the unsigned order. */

typedef __m256i vk; /* KL unsigned 64-bit keys */
typedef __m128i vp; /* KL 32-bit payloads, lane i beside key lane i */
typedef __m256i kb; /* KL lane booleans: all-ones 64-bit lanes */

static inline kb kfirst(uint32_t n) { /* lanes [0, n), 0 <= n <= KL */
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)n),
                            _mm256_setr_epi64x(0, 1, 2, 3));
}
static inline vk vk_ld(const uint64_t *p) {
  return _mm256_loadu_si256((const __m256i *)(const void *)p);
}
static inline void vk_st(uint64_t *p, vk k) {
  _mm256_storeu_si256((__m256i *)(void *)p, k);
}
static inline vk vk_set(uint64_t x) {
  return _mm256_set1_epi64x((long long)x);
}
static inline uint64_t vk_first(vk k) {
  return (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(k));
}
static inline vk flip(vk k) {
  return _mm256_xor_si256(k, _mm256_set1_epi64x(INT64_MIN));
}
static inline kb vk_lt(vk a, vk b) {
  return _mm256_cmpgt_epi64(flip(b), flip(a));
}
static inline kb vk_eq(vk a, vk b) {
  return _mm256_cmpeq_epi64(a, b);
}
static inline kb vk_le(vk a, vk b) {
  return _mm256_xor_si256(vk_lt(b, a), _mm256_set1_epi64x(-1));
}
static inline kb vk_ge(vk a, vk b) {
  return _mm256_xor_si256(vk_lt(a, b), _mm256_set1_epi64x(-1));
}
static inline unsigned kb_count(kb m) {
  return (unsigned)__builtin_popcount(
      (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m)));
}
static inline kb kb_or(kb a, kb b) {
  return _mm256_or_si256(a, b);
}
static inline kb kb_and(kb a, kb b) {
  return _mm256_and_si256(a, b);
}
static inline kb kb_andnot(kb a, kb b) { /* ~a & b */
  return _mm256_andnot_si256(a, b);
}
/* Lanes l with (l & D) == 0: the lower lane of each pair D apart. */
#define kb_low(D)                                                              \
  ((D) == 2 ? _mm256_setr_epi64x(-1, -1, 0, 0) : _mm256_setr_epi64x(-1, 0, -1, 0))
static inline vk vk_blend(kb m, vk f, vk t) {
  return _mm256_blendv_epi8(f, t, m);
}
static inline vp vp_blend(kb m, vp f, vp t) {
  /* the low half of each 64-bit mask lane, as 32-bit lanes */
  const __m256i m32 =
      _mm256_permutevar8x32_epi32(m, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  return _mm_blendv_epi8(f, t, _mm256_castsi256_si128(m32));
}
static inline vp vp_ld(const uint32_t *p) {
  return _mm_loadu_si128((const __m128i *)(const void *)p);
}
static inline void vp_st(uint32_t *p, vp v) {
  _mm_storeu_si128((__m128i *)(void *)p, v);
}
static inline vk vk_rev(vk k) {
  return _mm256_permute4x64_epi64(k, 0x1b);
}
static inline vp vp_rev(vp p) {
  return _mm_shuffle_epi32(p, 0x1b);
}
/* Lane l takes lane l ^ D. */
#define vk_swap(k, D) _mm256_permute4x64_epi64(k, (D) == 2 ? 0x4e : 0xb1)
#define vp_swap(p, D) _mm_shuffle_epi32(p, (D) == 2 ? 0x4e : 0xb1)

#include "tileops/vec_kernels.h"
#include "tileops/cvt_kernels.h"
#include "tileops/sort_kernels.h"
#include "tileops/softmax_kernels.h"
#include "tileops/attn_kernels.h"
#include "tileops/topk_kernels.h"

void pto__vec_avx2(pto_isa_table *t) {
  vec_install(t);
  cvt_install(t);
  sort_install(t);
  softmax_install(t);
  attn_install(t);
  topk_install(t);
}
