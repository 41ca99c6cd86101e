/* tileops/mm_avx512.h (internal): the avx512 matmul engine, overrides of
 * TMATMUL and TMATMUL_ACC (and of TLOAD for packed operands, through
 * tileops/pack_lanes.h's transposes or the shared packer) and of the
 * gathered-row matmuls (tileops/mm_gather.h),
 * installed by mm_install. Included by tileops/mm_avx512.c (the avx512
 * table) and tileops/mm_avx512bf16.c (the avx512bf16 table, which adds its
 * bf16 kernels through mm_gather.h's hooks), the only files compiled with
 * the avx512 flags (tileops/CMakeLists.txt): each builds its own copy.
 *
 * On packed f32 operands with this table's panel widths (MR x NR) the
 * product runs as a BLIS-style register-blocked micro-kernel: for each NR
 * panel of B (kept in L1 over KC steps of k), for each MR panel of A
 * (streamed from L2), an MR x NR block of C lives in zmm registers for the
 * whole k loop. Partial panels are zero-padded by the packing, so the
 * kernel always computes a full block and masks only the C loads and
 * stores. Everything else (unpacked, other widths, bf16/f16 tiles) runs the
 * scalar reference. */
#ifndef PTO_TILEOPS_MM_AVX512_H
#define PTO_TILEOPS_MM_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "core/prefetch.h"
#include "tileops/tileops.h"

#define MR 12  /* rows of C per block: A panel width */
#define NR 32  /* cols of C per block: B panel width, two zmm */
#define KC 256 /* k steps per pass over a B panel: 32 KiB of it in L1 */

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#define VW 16 /* f32 lanes of a vector */
#define MM_ENGINE "avx512-f32"
#define KERNEL kernel_12x32
/* the vector primitives of mm_gather.h's gathered-row kernels */
#define MM_V __m512
#define MM_LOAD(p) _mm512_loadu_ps(p)
#define MM_BCAST(p) _mm512_set1_ps(*(p))
#define MM_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define MM_ZERO() _mm512_setzero_ps()
#define MM_STORE(p, x) _mm512_storeu_ps(p, x)
#define MM_MUL(a, b) _mm512_mul_ps(a, b)
#define MM_SET1(x) _mm512_set1_ps(x)
/* x < 0: 0, else x (-0 and NaN stay: max returns its second operand
 * when either is NaN or both are zero) */
#define MM_RELU(x) _mm512_max_ps(_mm512_setzero_ps(), x)
#define MM_AND(a, b) _mm512_and_ps(a, b)
#define MM_HSUM(x) _mm512_reduce_add_ps(x) /* the sum of the lanes */
#define PACK_LANES pack_lanes
#include "tileops/mm_loops.h"
#include "tileops/pack_lanes.h"

/* A 12x32 block of C in zmm registers c<i>a, c<i>b (row i's columns 0-15
 * and 16-31), for the kernels here and in tileops/mm_avx512bf16.c, over
 * their C, ldc, rows, cols and acc. BLOCK_OPEN declares the column masks
 * m0, m1 and the accumulators, loading the block's first `rows` rows of C
 * when acc (zero otherwise); BLOCK_CLOSE stores those rows back. */
#define BLOCK_OPEN()                                                           \
  const __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);    \
  const __mmask16 m1 = cols >= 32   ? 0xffff                                   \
                       : cols <= 16 ? 0                                        \
                                    : (__mmask16)((1u << (cols - 16)) - 1);    \
  ROWS(BLOCK_DECL)                                                             \
  ROWS(BLOCK_INIT)
#define BLOCK_DECL(i) __m512 c##i##a, c##i##b;
#define BLOCK_INIT(i)                                                          \
  if (acc && (i) < rows) {                                                     \
    c##i##a = _mm512_maskz_loadu_ps(m0, C + (size_t)(i)*ldc);                  \
    c##i##b = _mm512_maskz_loadu_ps(m1, C + (size_t)(i)*ldc + 16);             \
  } else {                                                                     \
    c##i##a = _mm512_setzero_ps();                                             \
    c##i##b = _mm512_setzero_ps();                                             \
  }
#define BLOCK_CLOSE() ROWS(BLOCK_STORE)
#define BLOCK_STORE(i)                                                         \
  if ((i) < rows) {                                                            \
    _mm512_mask_storeu_ps(C + (size_t)(i)*ldc, m0, c##i##a);                   \
    _mm512_mask_storeu_ps(C + (size_t)(i)*ldc + 16, m1, c##i##b);              \
  }

/* C[0..rows)[0..cols) = (acc ? C : 0) + Ap x Bp over K steps, where
 * Ap[k * MR + i] = A(i, k) and Bp[k * NR + j] = B(k, j). 12x32 block: 24
 * zmm accumulators (12 rows x 2 vectors), per k two B vectors and one
 * broadcast of A per row: 24 FMAs for 14 loads. Not inlined: inside
 * matmul_packed GCC kept B's pointer on the stack across the k loop (a
 * load and a store per step). */
__attribute__((noinline)) static void
kernel_12x32(uint32_t K, const float *restrict Ap, const float *restrict Bp,
             float *restrict C, size_t ldc, uint32_t rows, uint32_t cols,
             int acc, pto_pf *pf, uint32_t npf, const float *nc, uint32_t nrows,
             uint32_t ncols) {
  BLOCK_OPEN();
  pf_spread spread = pf_start(pf, npf, K);
  c_spread next = c_start(nc, ldc, nrows, ncols, K);
  /* in branch-free stretches between the prefetches' steps: with both
   * checks in every step, 2048^3 on one thread ran 3% slower (PTO /
   * OpenBLAS 0.91-0.93 against 0.94-0.95 on a Xeon, 3 runs each) */
  uint32_t k = 0;
  for (;;) {
    const uint32_t sp = pf_next(&spread, K), sc = c_next(&next, K),
                   stop = sp < sc ? sp : sc;
#pragma GCC unroll 4
    for (; k < stop; k++) {
      const __m512 b0 = _mm512_load_ps(Bp), b1 = _mm512_load_ps(Bp + 16);
      /* the A panel 16 k steps (12 lines) ahead: from L2, in time */
      _mm_prefetch((const char *)(Ap + 16 * MR), _MM_HINT_T0);
#define STEP(i)                                                                \
  {                                                                            \
    const __m512 ai = _mm512_set1_ps(Ap[i]);                                   \
    c##i##a = _mm512_fmadd_ps(ai, b0, c##i##a);                                \
    c##i##b = _mm512_fmadd_ps(ai, b1, c##i##b);                                \
  }
      ROWS(STEP)
#undef STEP
      Ap += MR;
      Bp += NR;
    }
    if (k >= K)
      break;
    if (sp == k)
      pf_fire(&spread);
    if (sc == k)
      c_fire(&next);
  }
  c_rest(&next);
  BLOCK_CLOSE();
}

#endif /* PTO_TILEOPS_MM_AVX512_H */
