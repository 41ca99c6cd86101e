/* The AVX-512 BF16 matmul engine: TMATMUL, TMATMUL_ACC, TMATMUL_GA and
 * TMATMUL_RELU_WSUM_G on bf16 operands packed in k pairs (core/isa.def,
 * TLOAD; tileops/pack.c packs them), multiplied by vdpbf16ps, which takes
 * two k of 16 lanes per instruction: twice the f32 FMA's work where the
 * CPU runs it at the same rate (AMD Zen 4 and 5). The only file of its
 * kind compiled with the avx512bf16 flags (tileops/CMakeLists.txt). It
 * builds its own copy of the avx512 engine (tileops/mm_avx512.h), which
 * runs every other operand, with these kernels added: the table is the
 * avx512 one with this engine (tileops/tables.c).
 *
 * Numerics: vdpbf16ps forms each product exactly in f32 (bf16 mantissas
 * are 8 bits), adds the two products of a pair to the accumulator with
 * round to nearest even, and treats subnormal inputs and results as zero
 * (DAZ, FTZ): within TMATMUL's tolerance for the reference's order, except
 * that a sum whose every term is subnormal comes out zero. */
/* the hooks of tileops/mm_loops.h and mm_gather.h */
#define PACKED_NATIVE_BF16 matmul_pairs
#define GATHER_NATIVE_BF16 gather_pairs
#define MM_ENGINE_BF16 "avx512-bf16"
#include "tileops/mm_avx512.h" /* MR, NR, ROWS, mm_install */

#include <time.h>

#define KCP 256 /* k pairs per pass over a B panel: 32 KiB of it in L1 */

/* C[0..rows)[0..cols) = (acc ? C : 0) + Ap x Bp over Kp pairs of k, with
 * Ap[p * MR + i] = the pair (A(i, 2p), A(i, 2p + 1)) as one 32-bit unit
 * and Bp[p * 2 NR + 2 j + q] = B(2p + q, j). 12x32 block: 24 zmm
 * accumulators, per pair two B vectors and a broadcast of A's pair per
 * row: 24 vdpbf16ps for 14 loads, as the f32 kernel's 24 FMAs over one k. */
__attribute__((noinline)) static void
kernel_pairs(uint32_t Kp, const uint32_t *restrict Ap,
             const uint16_t *restrict Bp, float *restrict C, size_t ldc,
             uint32_t rows, uint32_t cols, int acc) {
  BLOCK_OPEN(); /* tileops/mm_avx512.h */
#pragma GCC unroll 4
  for (uint32_t p = 0; p < Kp; p++) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(Bp),
                   b1 = (__m512bh)_mm512_load_si512(Bp + 32);
    /* the A panel 16 pairs (12 lines) ahead: from L2, in time */
    _mm_prefetch((const char *)(Ap + 16 * MR), _MM_HINT_T0);
#define STEP(i)                                                                \
  {                                                                            \
    const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)Ap[i]);               \
    c##i##a = _mm512_dpbf16_ps(c##i##a, ai, b0);                               \
    c##i##b = _mm512_dpbf16_ps(c##i##b, ai, b1);                               \
  }
    ROWS(STEP)
#undef STEP
    Ap += MR;
    Bp += 2 * NR;
  }
  BLOCK_CLOSE();
}

/* TMATMUL and TMATMUL_ACC on bf16 pairs (tileops/mm_loops.h,
 * PACKED_NATIVE_BF16), in BLIS order as the f32 engines: per slice of KCP
 * pairs, each B panel's slice stays in L1 while A's panels stream past. */
static void matmul_pairs(const pto_targs *a, int acc) {
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *B = a->src[1];
  const uint32_t M = d->valid_rows, N = d->valid_cols;
  const uint32_t Kp = (A->valid_cols + 1) / 2;
  const size_t ldc = d->stride;
  /* panels: A's in 32-bit units, B's in bf16 elements */
  const size_t a_panel = (size_t)MR * A->stride / 2,
               b_panel = (size_t)NR * B->rows;
  const uint32_t *Ad = A->data;
  const uint16_t *Bd = B->data;
  float *Cd = d->data;
  for (uint32_t p0 = 0; p0 < Kp; p0 += KCP) {
    const uint32_t kp = Kp - p0 < KCP ? Kp - p0 : KCP;
    const int acc_k = acc || p0 > 0;
    for (uint32_t n0 = 0; n0 < N; n0 += NR) {
      const uint16_t *Bp =
          Bd + (size_t)(n0 / NR) * b_panel + (size_t)p0 * 2 * NR;
      const uint32_t cols = N - n0 < NR ? N - n0 : NR;
      for (uint32_t m0 = 0; m0 < M; m0 += MR) {
        const uint32_t *Ap = Ad + (size_t)(m0 / MR) * a_panel + (size_t)p0 * MR;
        const uint32_t rows = M - m0 < MR ? M - m0 : MR;
        kernel_pairs(kp, Ap, Bp, Cd + (size_t)m0 * ldc + n0, ldc, rows, cols,
                     acc_k);
      }
    }
  }
}

/* TMATMUL_GA's and TMATMUL_RELU_WSUM_G's block on bf16 (tileops/
 * mm_gather.h, GATHER_NATIVE_BF16): the R x NR block sum over pairs p of
 * a[i]'s pair (2p, 2p + 1), read in place as one 32-bit unit, by Bp's
 * pair p (2 NR bf16), an odd K's last pair taking a zero for the k past
 * the row; stored to C's rows (ldc apart), or with w folded into C (VW
 * lanes per row: wsum_fold). The next group's rows are prefetched a line
 * per 16 pairs, as kernel_ga does. */
static inline uint32_t unit_at(const unsigned char *p) {
  uint32_t u;
  memcpy(&u, p, sizeof u);
  return u;
}
static inline uint32_t half_at(const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, sizeof h);
  return h;
}

static inline __attribute__((always_inline)) void
pair_rows(const int R, uint32_t K, const unsigned char *const *a,
          const uint16_t *restrict Bp, float *C, size_t ldc,
          const unsigned char *const *next, const float *w, const float *wm) {
  __m512 c[MR][NR / VW];
  MM_UNROLL for (int i = 0; i < R; i++) {
    c[i][0] = _mm512_setzero_ps();
    c[i][1] = _mm512_setzero_ps();
  }
  const uint32_t Kp = K / 2;
#define WSG_STEP(p, unit_of)                                                   \
  do {                                                                         \
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(Bp + (size_t)(p)*2 * NR), \
                   b1 = (__m512bh)_mm512_loadu_si512(Bp + (size_t)(p)*2 * NR + \
                                                     32);                      \
    MM_UNROLL for (int i = 0; i < R; i++) {                                    \
      const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)unit_of(i, p));     \
      c[i][0] = _mm512_dpbf16_ps(c[i][0], ai, b0);                             \
      c[i][1] = _mm512_dpbf16_ps(c[i][1], ai, b1);                             \
    }                                                                          \
  } while (0)
  /* whole pairs: a row's 32-bit units (a row of odd K may start on any
   * 2 bytes) */
#define UNIT(i, p) unit_at(a[i] + 4 * (size_t)(p))
  uint32_t p0 = 0;
  for (; p0 + 16 <= Kp; p0 += 16) { /* a line of each row per 16 pairs */
    if (next)
      MM_UNROLL for (int i = 0; i < MR; i++)
          _mm_prefetch((const char *)next[i] + 4 * (size_t)p0, _MM_HINT_T0);
    _Pragma("GCC unroll 16") for (uint32_t p = p0; p < p0 + 16; p++)
        WSG_STEP(p, UNIT);
  }
  if (next && p0 < Kp)
    MM_UNROLL for (int i = 0; i < MR; i++)
        _mm_prefetch((const char *)next[i] + 4 * (size_t)p0, _MM_HINT_T0);
  for (uint32_t p = p0; p < Kp; p++)
    WSG_STEP(p, UNIT);
#undef UNIT
    /* the odd k: its element and a zero */
#define LAST(i, p) half_at(a[i] + 4 * (size_t)(p))
  if (K % 2)
    WSG_STEP(Kp, LAST);
#undef LAST
#undef WSG_STEP
  if (w) {
    wsum_fold(R, c, w, wm, C);
    return;
  }
  MM_UNROLL for (int i = 0; i < R; i++) {
    _mm512_storeu_ps(C + (size_t)i * ldc, c[i][0]);
    _mm512_storeu_ps(C + (size_t)i * ldc + VW, c[i][1]);
  }
}

static void gather_pairs(uint32_t K, const unsigned char *const *a,
                         const uint16_t *restrict Bp, float *C, size_t ldc,
                         uint32_t rows, const unsigned char *const *next,
                         const float *w, const float *wm) {
#define MM_ROWS_CALL(R) pair_rows(R, K, a, Bp, C, ldc, next, w, wm)
  MM_ROWS_SWITCH(rows)
#undef MM_ROWS_CALL
}

void pto__mm_avx512bf16(pto_isa_table *t) {
  mm_install(t); /* this file's copy of the avx512 engine, with the hooks */
}

/* ---- is it faster than f32 FMAs here? ----------------------------------- */

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define PROBE_CHAINS 12 /* independent accumulators: past any latency */
#define PROBE_STEPS 4096

/* Seconds for PROBE_STEPS rounds of PROBE_CHAINS vdpbf16ps (bf16) or
 * vfmadd231ps (!bf16) on registers: the instructions' throughput, no
 * memory involved. */
static double probe_run(int bf16) {
  __m512 c[PROBE_CHAINS];
  for (int i = 0; i < PROBE_CHAINS; i++)
    c[i] = _mm512_set1_ps((float)i);
  __m512 x = _mm512_set1_ps(0.5f);
  __m512bh xb = (__m512bh)_mm512_set1_epi32(0x3f003f00); /* (0.5, 0.5) */
  const double t0 = seconds();
  for (int s = 0; s < PROBE_STEPS; s++) {
    __asm__ volatile("" : "+v"(x), "+v"(xb)); /* not hoisted or folded */
    for (int i = 0; i < PROBE_CHAINS; i++)
      c[i] =
          bf16 ? _mm512_dpbf16_ps(c[i], xb, xb) : _mm512_fmadd_ps(x, x, c[i]);
  }
  const double t = seconds() - t0;
  float sink = 0;
  for (int i = 0; i < PROBE_CHAINS; i++)
    sink += _mm512_reduce_add_ps(c[i]);
  __asm__ volatile("" ::"x"(sink));
  return t;
}

double pto__bf16_gain(void) {
  double best_f = 1e9, best_b = 1e9;
  for (int r = 0; r < 5; r++) { /* best of 5 each, interleaved: ~0.3 ms */
    const double f = probe_run(0), b = probe_run(1);
    best_f = f < best_f ? f : best_f;
    best_b = b < best_b ? b : best_b;
  }
  /* a vdpbf16ps does two FMAs' work per lane */
  return 2.0 * best_f / best_b;
}
