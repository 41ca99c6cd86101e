/* The AVX-512 f32 FMA peak probe (bench/peak.h), compiled with -mavx512f:
 * call it only where the CPU runs AVX-512F (bench_peak_fma checks). */
#include <immintrin.h>

#define PEAK_FN bench_peak_avx512
#define VEC __m512
#define LANES 16
#define CHAINS 20 /* of 32 registers */
#define SET1 _mm512_set1_ps
#define FMADD _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define REDUCE _mm512_reduce_add_ps
#include "bench/peak.h"
