/* The AVX2 f32 FMA peak probe (bench/peak.h), compiled with -mavx2 -mfma:
 * call it only where the CPU runs AVX2 and FMA (bench_peak_fma checks). */
#include <immintrin.h>

static float reduce8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

#define PEAK_FN bench_peak_avx2
#define VEC __m256
#define LANES 8
#define CHAINS 12 /* of 16 registers */
#define SET1 _mm256_set1_ps
#define FMADD _mm256_fmadd_ps
#define ADD _mm256_add_ps
#define REDUCE reduce8
#include "bench/peak.h"
