/* The AVX-512 BF16 peak probe (bench/peak.h), compiled with -mavx512bf16:
 * the rate of vdpbf16ps, the instruction the avx512-bf16 matmul engine
 * runs on. Each one takes 16 lanes of two bf16 pairs: 32 products and
 * their sums, counted as LANES 32 x 2 flops. Call it only where the CPU
 * runs AVX512_BF16 (bench_peak_engine checks). */
#include <immintrin.h>

#define PEAK_FN bench_peak_avx512bf16
#define VEC __m512
#define LANES 32
#define CHAINS 20 /* of 32 registers */
#define SET1 _mm512_set1_ps
/* x = (1, 1), y = (1e-7, 1e-7) in bf16: finite, normal, and small */
#define OPERANDS                                                               \
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80),                  \
                 y = (__m512bh)_mm512_set1_epi32(0x33d733d7);
#define FMADD _mm512_dpbf16_ps
#define ADD _mm512_add_ps
#define REDUCE _mm512_reduce_add_ps
#include "bench/peak.h"
