/* The AVX-512 BF16 matmul engine: TMATMUL and TMATMUL_ACC on bf16
 * operands packed in k pairs (core/isa.def, TLOAD; tileops/pack.c packs
 * them), multiplied by vdpbf16ps, which takes two k of 16 lanes per
 * instruction: twice the f32 FMA's work where the CPU runs it at the same
 * rate (AMD Zen 4 and 5). The only file of its kind compiled with the
 * avx512bf16 flags (tileops/CMakeLists.txt). Everything else, and matmuls
 * on other operands, run as the avx512 table has them: this table is the
 * avx512 one plus these overrides (tileops/dispatch.c).
 *
 * Numerics: vdpbf16ps forms each product exactly in f32 (bf16 mantissas
 * are 8 bits), adds the two products of a pair to the accumulator with
 * round to nearest even, and treats subnormal inputs and results as zero
 * (DAZ, FTZ): within TMATMUL's tolerance for the reference's order, except
 * that a sum whose every term is subnormal comes out zero. */
#include <immintrin.h>
#include <stdint.h>
#include <time.h>

#include "tileops/tileops.h"

#define MR 12   /* rows of C per block: A panel width */
#define NR 32   /* cols of C per block: B panel width, two zmm */
#define KCP 256 /* k pairs per pass over a B panel: 32 KiB of it in L1 */

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* C[0..rows)[0..cols) = (acc ? C : 0) + Ap x Bp over Kp pairs of k, with
 * Ap[p * MR + i] = the pair (A(i, 2p), A(i, 2p + 1)) as one 32-bit unit
 * and Bp[p * 2 NR + 2 j + q] = B(2p + q, j). 12x32 block: 24 zmm
 * accumulators, per pair two B vectors and a broadcast of A's pair per
 * row: 24 vdpbf16ps for 14 loads, as the f32 kernel's 24 FMAs over one k. */
__attribute__((noinline)) static void
kernel_12x32(uint32_t Kp, const uint32_t *restrict Ap,
             const uint16_t *restrict Bp, float *restrict C, size_t ldc,
             uint32_t rows, uint32_t cols, int acc) {
  const __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32   ? 0xffff
                       : cols <= 16 ? 0
                                    : (__mmask16)((1u << (cols - 16)) - 1);
#define DECL(i) __m512 c##i##a, c##i##b;
  ROWS(DECL)
#undef DECL
#define INIT(i)                                                                \
  if (acc && (i) < rows) {                                                     \
    c##i##a = _mm512_maskz_loadu_ps(m0, C + (size_t)(i)*ldc);                  \
    c##i##b = _mm512_maskz_loadu_ps(m1, C + (size_t)(i)*ldc + 16);             \
  } else {                                                                     \
    c##i##a = _mm512_setzero_ps();                                             \
    c##i##b = _mm512_setzero_ps();                                             \
  }
  ROWS(INIT)
#undef INIT
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
#define STORE(i)                                                               \
  if ((i) < rows) {                                                            \
    _mm512_mask_storeu_ps(C + (size_t)(i)*ldc, m0, c##i##a);                   \
    _mm512_mask_storeu_ps(C + (size_t)(i)*ldc + 16, m1, c##i##b);              \
  }
  ROWS(STORE)
#undef STORE
}

/* BLIS order, as the f32 engines (tileops/mm_loops.h): per slice of KCP
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
        kernel_12x32(kp, Ap, Bp, Cd + (size_t)m0 * ldc + n0, ldc, rows, cols,
                     acc_k);
      }
    }
  }
}

/* The avx512 table's entries, for every other operand. */
static pto_tileop_fn f32_matmul, f32_matmul_acc;

static int fast_path(const pto_targs *a) {
  const uint32_t both = PTO_TF_PACK_A | PTO_TF_PACK_B;
  return (a->flags & both) == both && a->imm[0] == MR && a->imm[1] == NR &&
         a->src[0]->dtype == PTO_BF16 && a->src[1]->dtype == PTO_BF16;
}

static int bf_TMATMUL(int op, const pto_targs *a) {
  if (!fast_path(a))
    return f32_matmul(op, a);
  matmul_pairs(a, 0);
  return PTO_OK;
}

static int bf_TMATMUL_ACC(int op, const pto_targs *a) {
  if (!fast_path(a))
    return f32_matmul_acc(op, a);
  if (a->flags & PTO_TF_ROWSCALE) { /* dst by its row scales first */
    pto_tile *d = a->dst[0];
    const pto_tile *s = a->src[2];
    for (uint32_t r = 0; r < d->valid_rows; r++) {
      const float f = ((const float *)s->data)[(size_t)r * s->stride];
      float *row = (float *)d->data + (size_t)r * d->stride;
      for (uint32_t c = 0; c < d->valid_cols; c++)
        row[c] *= f;
    }
  }
  matmul_pairs(a, 1);
  return PTO_OK;
}

void pto__mm_avx512bf16(pto_isa_table *t) {
  f32_matmul = t->fn[PTO_OP_TMATMUL];
  f32_matmul_acc = t->fn[PTO_OP_TMATMUL_ACC];
  t->fn[PTO_OP_TMATMUL] = bf_TMATMUL;
  t->fn[PTO_OP_TMATMUL_ACC] = bf_TMATMUL_ACC;
  /* the avx512 table's panel widths, which the kernel above shares */
  t->mm_mr = MR;
  t->mm_nr = NR;
  t->mm_engine[PTO_BF16] = "avx512-bf16";
  t->mm_native[PTO_BF16] = 1;
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
