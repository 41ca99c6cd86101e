/* tileops/mm_loops.h (internal): what every tileops/mm_<isa>.c shares
 * around its micro-kernel. Included once by each of them, after it defines
 * MR, NR (its panel widths), KC (k steps per pass over a B panel) and
 * names KERNEL (declared here, defined by the file after the include):
 * KERNEL(K, Ap, Bp, C, ldc, rows, cols, acc, pf, npf, nc, nrows, ncols):
 * C[0..rows)[0..cols) = (acc ? C : 0) + Ap x Bp over K steps, with Ap[k *
 * MR + i] = A(i, k) and Bp[k * NR + j] = B(k, j), a full MR x NR block
 * computed and only the C loads and stores masked, npf (<= K) lines of the
 * prefetch plan pf issued spread over the k loop (pf_start, pf_due), and
 * the lines of the next block's C, nrows x ncols at nc, fetched too
 * (c_start, c_due, c_rest); VW, its vectors'
 * f32 lanes (NR a multiple of it); optionally KERNEL_WSUM (K, Ap, Bp, w,
 * ws, rows, split, sums, pf, npf): the block through ReLU and the row
 * weights w[i * ws], rows [0, split) summed into sums[0..NR) and the rest
 * into sums[NR..2 NR), for TMATMUL_RELU_WSUM with groups of MR rows or
 * more; MM_ENGINE, the engine's name ("avx2-f32"); and the vector
 * primitives of the kernels that read a table's rows in place (TMATMUL_GA,
 * TMATMUL_GB, TMATMUL_RELU_WSUM_G): MM_V (a vector of VW f32), MM_LOAD,
 * MM_STORE (unaligned), MM_BCAST (one f32 from memory to every lane),
 * MM_FMA(a, b, c) = a * b + c, MM_MUL, MM_ZERO, MM_SET1, MM_RELU
 * (x < 0: 0, else x, -0 and NaN kept), MM_HSUM (the sum of the lanes).
 * Optionally: PACK_A_ROWS (a), TLOAD packing A panels of MR rows from an
 * f32 window with contiguous rows, 1 when it did (defined by the file
 * after the include; 0 leaves it to the shared packer); MM_AHEAD 0, the
 * packed matmuls do not prefetch the windows the task loads next
 * (ahead_plan below); GB_PACK 1, TMATMUL_GB copies V's slices into L1
 * before its kernel reads them rather than reading them where they lie;
 * GA_UNROLL, the pragma that unrolls the row-reading kernel's k steps
 * ("GCC unroll 16": a line of each row). So the loops compile with that
 * file's ISA flags.
 *
 * The loop order is BLIS's: per KC slice of k, each NR panel of B stays in
 * L1 while the MR panels of A stream from L2 past it. */
#ifndef PTO_TILEOPS_MM_LOOPS_H
#define PTO_TILEOPS_MM_LOOPS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/convert.h"
#include "core/prefetch.h"
#include "tileops/tileops.h"

#ifndef MM_AHEAD
#define MM_AHEAD 1
#endif

/* The windows the task loads next (pto_targs.ahead) as a prefetch plan
 * (core/prefetch.h), so the packer that follows reads them from L2 instead
 * of waiting on L3 or DRAM: run by run along whichever axis is contiguous
 * (other windows are skipped). */
static void ahead_plan(pto_pf *pf, const pto_gview *g, uint32_t n) {
  pto__pf_clear(pf);
  if (!MM_AHEAD)
    return;
  for (uint32_t i = 0; i < n; i++) {
    const int64_t es = (int64_t)pto_dtype_size(g[i].dtype);
    if (g[i].rows < 1 || g[i].cols < 1)
      continue;
    if (g[i].col_stride == 1)
      pto__pf_add(pf, g[i].base, g[i].cols * es, g[i].row_stride * es,
                  g[i].rows);
    else if (g[i].row_stride == 1)
      pto__pf_add(pf, g[i].base, g[i].rows * es, g[i].col_stride * es,
                  g[i].cols);
  }
}

/* npf lines of a plan spread evenly over a kernel's K steps of k:
 * pf_due(&s, k) once per step. */
typedef struct pf_spread {
  pto_pf *plan;
  uint32_t left, gap, due;
} pf_spread;

static inline pf_spread pf_start(pto_pf *plan, uint32_t npf, uint32_t K) {
  pf_spread s = {plan, npf, npf ? K / npf : 0, 0};
  return s;
}

static inline void pf_due(pf_spread *s, uint32_t k) {
  if (s->left && k == s->due) {
    pto__pf_tick(s->plan);
    s->left--;
    s->due += s->gap;
  }
}

/* The same schedule for a kernel that runs its k loop in branch-free
 * stretches: for (;;) { stop = pf_next(&s, K); steps k..stop-1; if (k ==
 * K) break; pf_fire(&s); } ticks the plan before the steps pf_due would. */
static inline uint32_t pf_next(const pf_spread *s, uint32_t K) {
  return s->left && s->due < K ? s->due : K;
}

static inline void pf_fire(pf_spread *s) {
  pto__pf_tick(s->plan);
  s->left--;
  s->due += s->gap;
}

/* The next block's C (rows x cols f32 at c, row stride ldc), fetched
 * into L1 a line at a time while a kernel computes this block, spread over
 * its K steps: c_due(&s, k) once per step, c_rest(&s) after the loop (a
 * short K leaves some). Issued all at once before the kernel, the 24
 * lines of a 12 x 32 block (from L3 when the C tile outgrows L2) filled
 * the miss queues and stalled the kernel on the prefetches: 6% of its
 * time at 1024^3 on a Xeon. */
typedef struct c_spread {
  const char *row;
  size_t ld;                    /* bytes between rows */
  uint32_t per_row, line, left; /* lines per row, the next one, lines left */
  uint32_t gap, due;            /* k steps between lines, the next line's */
} c_spread;

static inline c_spread c_start(const float *c, size_t ldc, uint32_t rows,
                               uint32_t cols, uint32_t K) {
  c_spread s = {
      (const char *)c, ldc * sizeof(float), (cols + 15) / 16, 0, 0, 0, 0};
  if (c && rows && cols) {
    s.left = rows * s.per_row;
    s.gap = K / (s.left + 1) ? K / (s.left + 1) : 1;
    s.due = s.gap;
  }
  return s;
}

static inline void c_fire(c_spread *s) {
  _mm_prefetch(s->row + 64 * s->line, _MM_HINT_T0);
  if (++s->line == s->per_row) {
    s->line = 0;
    s->row += s->ld;
  }
  s->left--;
  s->due += s->gap;
}

static inline void c_due(c_spread *s, uint32_t k) {
  if (s->left && k == s->due)
    c_fire(s);
}

static inline void c_rest(c_spread *s) {
  while (s->left)
    c_fire(s);
}

/* The kernels the including file defines after this header. */
static void KERNEL(uint32_t K, const float *restrict Ap,
                   const float *restrict Bp, float *restrict C, size_t ldc,
                   uint32_t rows, uint32_t cols, int acc, pto_pf *pf,
                   uint32_t npf, const float *nc, uint32_t nrows,
                   uint32_t ncols);
#ifdef KERNEL_WSUM
static void KERNEL_WSUM(uint32_t K, const float *restrict Ap,
                        const float *restrict Bp, const float *w, size_t ws,
                        uint32_t rows, uint32_t split, float *restrict sums,
                        pto_pf *pf, uint32_t npf);
#endif
#ifdef PACK_A_ROWS
static int PACK_A_ROWS(const pto_targs *a);
#endif

/* Packed f32 operands with panels MR x NR: loops around the kernel. The
 * next loads are prefetched during the last quarter of the last pass over
 * k: lines fetched earlier are pushed out of L2 by the pass's sweep over
 * C and A before the packer reads them (back from L3 at best: GEMM 2048
 * +1-2% for the late start). Each of those blocks takes its share of the
 * lines, which the kernel spreads over its k loop (a burst would fill the
 * miss queues its own A panel needs). */
#define PF_LATE 4 /* the plan runs over the last 1/PF_LATE of the blocks */
#define PF_STEPS 4 /* k steps of the kernel per line it prefetches, at most */

/* Where the plan ah starts in a pass of `blocks` kernel calls of `steps`
 * k steps each (*late: the first block that prefetches) and how many lines
 * each block issues (*share): the last quarter of the pass, as above. A
 * plan that would ask more than a line per PF_STEPS steps there is
 * dropped: its tile has too little work per byte loaded (16-row tiles
 * streaming a wide B from DRAM, as decode steps run) and prefetching it
 * under the kernel only stalls the kernel on its miss buffers; the packer
 * streams it faster itself (16 x 24576 x 1536: 35 ms instead of 39-46). */
static void pf_window(pto_pf *ah, int64_t blocks, uint32_t steps,
                      int64_t *late, int64_t *share) {
  const int64_t n = (blocks + PF_LATE - 1) / PF_LATE; /* prefetching blocks */
  if (ah->lines > n * (int64_t)(steps / PF_STEPS))
    ah->lines = 0;
  *late = blocks - n;
  *share = (ah->lines + n - 1) / n;
}

static void matmul_packed(const pto_targs *a, int acc) {
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *B = a->src[1];
  const uint32_t M = d->valid_rows, N = d->valid_cols, K = A->valid_cols;
  const size_t ldc = d->stride;
  const size_t a_panel = (size_t)MR * A->stride, b_panel = (size_t)NR * B->rows;
  const float *Ad = A->data, *Bd = B->data;
  float *Cd = d->data;
  pto_pf ah;
  ahead_plan(&ah, a->ahead, a->n_ahead);
  const int64_t blocks = (int64_t)((N + NR - 1) / NR) * ((M + MR - 1) / MR);
  int64_t late, share;
  pf_window(&ah, blocks, K - (K - 1) / KC * KC, &late, &share);
  for (uint32_t k0 = 0; k0 < K; k0 += KC) {
    const uint32_t kc = K - k0 < KC ? K - k0 : KC;
    const int acc_k = acc || k0 > 0;
    const int last = k0 + KC >= K;
    int64_t block = 0; /* of the last pass */
    for (uint32_t n0 = 0; n0 < N; n0 += NR) {
      const float *Bp = Bd + (size_t)(n0 / NR) * b_panel + (size_t)k0 * NR;
      const uint32_t cols = N - n0 < NR ? N - n0 : NR;
      for (uint32_t m0 = 0; m0 < M; m0 += MR) {
        const float *Ap = Ad + (size_t)(m0 / MR) * a_panel + (size_t)k0 * MR;
        const uint32_t rows = M - m0 < MR ? M - m0 : MR;
        /* the next block's C: below this one, or atop the next panel */
        const float *nc = NULL;
        uint32_t nrows = 0, ncols = cols;
        if (m0 + MR < M) {
          nc = Cd + (size_t)(m0 + MR) * ldc + n0;
          nrows = M - m0 - MR < MR ? M - m0 - MR : MR;
        } else if (n0 + NR < N) {
          nc = Cd + n0 + NR;
          nrows = M < MR ? M : MR;
          ncols = N - n0 - NR < NR ? N - n0 - NR : NR;
        }
        KERNEL(kc, Ap, Bp, Cd + (size_t)m0 * ldc + n0, ldc, rows, cols, acc_k,
               &ah, last && block++ >= late ? (uint32_t)share : 0, nc, nrows,
               ncols);
      }
    }
  }
}

static int fast_path(const pto_targs *a) {
  const uint32_t both = PTO_TF_PACK_A | PTO_TF_PACK_B;
  return (a->flags & both) == both && a->imm[0] == MR && a->imm[1] == NR &&
         a->src[0]->dtype == PTO_F32 && a->src[1]->dtype == PTO_F32;
}

static int mm_TMATMUL(int op, const pto_targs *a) {
  if (!fast_path(a))
    return pto__isa_scalar.fn[op](op, a);
  matmul_packed(a, 0);
  return PTO_OK;
}

static int mm_TMATMUL_ACC(int op, const pto_targs *a) {
  if (!fast_path(a))
    return pto__isa_scalar.fn[op](op, a);
  if (a->flags & PTO_TF_ROWSCALE) { /* dst's rows by src2's column 0 */
    pto_tile *d = a->dst[0];
    const pto_tile *f = a->src[2];
    for (uint32_t r = 0; r < d->valid_rows; r++) {
      const float s = ((const float *)f->data)[(size_t)r * f->stride];
      float *row = (float *)d->data + (size_t)r * d->stride;
      for (uint32_t c = 0; c < d->valid_cols; c++)
        row[c] *= s;
    }
  }
  matmul_packed(a, 1);
  return PTO_OK;
}

/* A row of a block (NR floats) as NR / VW vectors of the file's width VW
 * (GCC's generic vectors at the native width compile to plain SIMD; wider
 * ones are split badly). */
#define NV (NR / VW)
typedef float vf __attribute__((vector_size(VW * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(VW * sizeof(float))));
typedef struct vrow {
  vf v[NV];
} vrow;

/* d[0..cols) += s[0..cols). */
static inline void add_row(float *d, const vrow *s, uint32_t cols) {
  if (cols == NR) {
    for (int q = 0; q < NV; q++) {
      vf x;
      __builtin_memcpy(&x, d + q * VW, sizeof x);
      x += s->v[q];
      __builtin_memcpy(d + q * VW, &x, sizeof x);
    }
  } else {
    for (uint32_t j = 0; j < cols; j++)
      d[j] += s->v[j / VW][j % VW];
  }
}

/* TMATMUL_RELU_WSUM on packed f32 operands. Per NR panel of B (in L1) and
 * MR panel of A (from L2), the kernel leaves the block of A x B over all
 * of K (ReLU needs whole dot products) in an L1 buffer; the epilogue folds
 * its rows, through ReLU and their weights, into the sums of their groups
 * (a block straddles at most a few), and adds those to dst. The next
 * loads are prefetched over the last quarter of the blocks, as
 * matmul_packed does. */
static void matmul_wsum_packed(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *B = a->src[1], *W = a->src[2];
  const uint32_t M = A->valid_rows, K = A->valid_cols, R = d->valid_rows,
                 N = d->valid_cols, G = M / R;
  const size_t ldd = d->stride, ws = W->stride;
  const size_t a_panel = (size_t)MR * A->stride, b_panel = (size_t)NR * B->rows;
  const float *Ad = A->data, *Bd = B->data, *w = W->data;
  float *Dd = d->data;
  _Alignas(64) float blk[MR * NR];
  pto_pf ah;
  ahead_plan(&ah, a->ahead, a->n_ahead);
  const int64_t blocks = (int64_t)((N + NR - 1) / NR) * ((M + MR - 1) / MR);
  int64_t late, share;
  pf_window(&ah, blocks, K, &late, &share);
  int64_t block = 0;
  for (uint32_t r = 0; r < R; r++)
    for (uint32_t j = 0; j < N; j++)
      Dd[r * ldd + j] = 0.0f;
  for (uint32_t n0 = 0; n0 < N; n0 += NR) {
    const float *Bp = Bd + (size_t)(n0 / NR) * b_panel;
    const uint32_t cols = N - n0 < NR ? N - n0 : NR;
    for (uint32_t m0 = 0; m0 < M; m0 += MR) {
      const float *Ap = Ad + (size_t)(m0 / MR) * a_panel;
      const uint32_t rows = M - m0 < MR ? M - m0 : MR;
      uint32_t grp = m0 / G, edge = (grp + 1) * G; /* no division per row */
#ifdef KERNEL_WSUM
      if (G >= MR) { /* the block meets at most two groups */
        _Alignas(64) float sums[2 * NR];
        const uint32_t split = edge - m0 < rows ? edge - m0 : rows;
        KERNEL_WSUM(K, Ap, Bp, w + m0 * ws, ws, rows, split, sums, &ah,
                    block++ >= late ? (uint32_t)share : 0);
        vrow s0, s1;
        __builtin_memcpy(&s0, sums, sizeof s0);
        __builtin_memcpy(&s1, sums + NR, sizeof s1);
        add_row(Dd + grp * ldd + n0, &s0, cols);
        if (split < rows)
          add_row(Dd + (grp + 1) * ldd + n0, &s1, cols);
        continue;
      }
#endif
      /* every column of the block: the padding of B's panel is zero */
      KERNEL(K, Ap, Bp, blk, NR, rows, NR, 0, &ah,
             block++ >= late ? (uint32_t)share : 0, NULL, 0, 0);
      vrow sum = {{{0}}};
      for (uint32_t i = 0; i < rows; i++) {
        if (m0 + i == edge) { /* the block crosses into the next group */
          add_row(Dd + grp * ldd + n0, &sum, cols);
          sum = (vrow){{{0}}};
          grp++;
          edge += G;
        }
        const float wm = w[(m0 + i) * ws];
        for (int q = 0; q < NV; q++) {
          vf x;
          __builtin_memcpy(&x, blk + i * NR + q * VW, sizeof x);
          /* ReLU as x & ~(x < 0): -0 and NaN stay, as the reference's */
          x = (vf)((vi)x & ~(vi)(x < 0.0f));
          sum.v[q] += wm * x;
        }
      }
      add_row(Dd + grp * ldd + n0, &sum, cols);
    }
  }
  if (a->flags & PTO_TF_CAUSAL) /* -inf where n > r + s */
    for (uint32_t r = 0; r < R; r++) {
      const double first = (double)r + a->s + 1;
      for (uint32_t j = first < 0 ? 0 : first > N ? N : (uint32_t)first;
           j < N; j++)
        Dd[r * ldd + j] = -INFINITY;
    }
}

static int mm_TMATMUL_RELU_WSUM(int op, const pto_targs *a) {
  if (!fast_path(a))
    return pto__isa_scalar.fn[op](op, a);
  matmul_wsum_packed(a);
  return PTO_OK;
}

/* ---- matmuls with one operand's rows read where they lie ------------------
 * TMATMUL_GA and TMATMUL_GB (core/isa.def) on an f32 table with contiguous
 * rows: the selected rows are never copied (from a bf16 table, a group's
 * rows or a panel's slices are widened into a small buffer on the way,
 * exactly: the same kernels then read them). The kernels keep an MR x NR
 * block in registers as KERNEL does, through the file's vector primitives
 * (MM_V, MM_LOAD, MM_BCAST, MM_FMA, MM_ZERO, MM_STORE, MM_MUL, MM_SET1),
 * MR and NR / VW vectors per row as arrays the compiler keeps in
 * registers. */
#define MM_UNROLL _Pragma("GCC unroll 16")
#ifndef GA_UNROLL
#define GA_UNROLL "GCC unroll 16"
#endif

/* Whether a table's rows are read in place by the kernels below: f32, or
 * bf16 widened a few rows at a time, with contiguous rows. */
static inline int table_fast(const pto_gview *g) {
  return (g->dtype == PTO_F32 || g->dtype == PTO_BF16) && g->col_stride == 1;
}

/* C[i][0..NR) (i < rows, row stride ldc) = sum_k a[i][k] * Bp[k * NR + j]
 * over K steps: a broadcast from each of the MR rows per step; with next,
 * the same K values of the MR rows next[i] prefetched meanwhile. With w
 * (NR weights), the block is folded on its way out of the registers
 * instead: C[i * VW + l] += sum over the row's lanes j = l (mod VW) of
 * w[j] * ReLU(block[i][j]) (TMATMUL_RELU_WSUM_G). */
static void kernel_ga(uint32_t K, const float *const *a,
                      const float *restrict Bp, float *C, size_t ldc,
                      uint32_t rows, const unsigned char *const *next,
                      const float *w) {
  MM_V c[MR][NR / VW];
  MM_UNROLL for (int i = 0; i < MR; i++)
      MM_UNROLL for (int q = 0; q < NR / VW; q++) c[i][q] = MM_ZERO();
  /* pointers that advance a line at a time, so every step's loads are at
   * constant offsets from them (indexing by k cost an address computation
   * per load, 4% of TMATMUL_RELU_WSUM_G) */
  const float *ar[MR], *bp = Bp;
  MM_UNROLL for (int i = 0; i < MR; i++) ar[i] = a[i];
#define GA_STEP(j)                                                             \
  do {                                                                         \
    MM_V b[NR / VW];                                                           \
    MM_UNROLL for (int q = 0; q < NR / VW; q++) b[q] =                         \
        MM_LOAD(bp + (size_t)(j)*NR + q * VW);                                 \
    MM_UNROLL for (int i = 0; i < MR; i++) {                                   \
      const MM_V ai = MM_BCAST(ar[i] + (j));                                   \
      MM_UNROLL for (int q = 0; q < NR / VW; q++) c[i][q] =                    \
          MM_FMA(ai, b[q], c[i][q]);                                           \
    }                                                                          \
  } while (0)
  /* whole lines of 16 f32 per row, unrolled GA_UNROLL steps at a time,
   * then the tail */
  uint32_t k0 = 0;
  for (; k0 + 16 <= K; k0 += 16) {
    if (next)
      MM_UNROLL for (int i = 0; i < MR; i++)
          _mm_prefetch((const char *)(next[i] + 4 * (size_t)k0), _MM_HINT_T0);
    _Pragma(GA_UNROLL) for (int j = 0; j < 16; j++) GA_STEP(j);
    MM_UNROLL for (int i = 0; i < MR; i++) ar[i] += 16;
    bp += 16 * NR;
  }
  if (next && k0 < K)
    MM_UNROLL for (int i = 0; i < MR; i++)
        _mm_prefetch((const char *)(next[i] + 4 * (size_t)k0), _MM_HINT_T0);
  for (uint32_t j = 0; j < K - k0; j++)
    GA_STEP(j);
#undef GA_STEP
  if (w) {
    MM_V wq[NR / VW];
    MM_UNROLL for (int q = 0; q < NR / VW; q++) wq[q] = MM_LOAD(w + q * VW);
    MM_UNROLL for (int i = 0; i < MR; i++) if ((uint32_t)i < rows) {
      MM_V t = MM_LOAD(C + (size_t)i * VW);
      MM_UNROLL for (int q = 0; q < NR / VW; q++) t =
          MM_FMA(wq[q], MM_RELU(c[i][q]), t);
      MM_STORE(C + (size_t)i * VW, t);
    }
    return;
  }
  MM_UNROLL for (int i = 0; i < MR; i++) if ((uint32_t)i < rows)
      MM_UNROLL for (int q = 0; q < NR / VW; q++)
          MM_STORE(C + (size_t)i * ldc + q * VW, c[i][q]);
}

/* TMATMUL_GA, B packed in NR panels: per MR selected rows (in L1 once
 * read), every panel of B over all of K (from L1 and L2); while the first
 * panel runs, the next MR rows are prefetched a line per 16 steps, as no
 * hardware prefetcher knows where they are. Measured on one block of
 * attention medium (128 rows x 576 into 64 heads, min of 300): 406 us,
 * against 428 without the prefetch and 506 with the panels outside (each
 * row then read from L2 or L3 once per panel); slicing K so a panel stays
 * in L1, as matmul_packed does, was no faster. An invalid index's row is
 * computed from a valid row and zeroed after; a partial panel goes
 * through a block whose padding columns are dropped. */
static int mm_TMATMUL_GA(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *idx = a->src[0], *B = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t n = d->valid_rows, N = d->valid_cols, K = B->valid_rows;
  const int bf = g->dtype == PTO_BF16;
  float *wide = NULL; /* a bf16 table: the MR rows of a group as f32 */
  if (!(a->flags & PTO_TF_PACK_B) || a->imm[1] != NR ||
      B->dtype != PTO_F32 || !table_fast(g) ||
      (bf && !(wide = malloc((size_t)MR * K * sizeof(float)))))
    return pto__isa_scalar.fn[op](op, a);
  const size_t ldc = d->stride, b_panel = (size_t)NR * B->rows;
  const size_t row_bytes = (size_t)K * pto_dtype_size(g->dtype);
  float *Cd = d->data;
  const unsigned char *any = NULL;
  for (uint32_t t = 0; t < n && !any; t++)
    any = pto__table_row(idx, g, t);
  _Alignas(64) float blk[MR * NR];
  const unsigned char *cur[MR], *nx[MR];
  const float *r[MR];
  for (uint32_t i = 0; any && i < MR; i++) {
    nx[i] = i < n ? pto__table_row(idx, g, i) : NULL;
    nx[i] = nx[i] ? nx[i] : any;
  }
  for (uint32_t m0 = 0; any && m0 < n; m0 += MR) {
    const uint32_t rows = n - m0 < MR ? n - m0 : MR;
    for (uint32_t i = 0; i < MR; i++) {
      cur[i] = nx[i];
      nx[i] = m0 + MR + i < n ? pto__table_row(idx, g, m0 + MR + i) : NULL;
      nx[i] = nx[i] ? nx[i] : any;
      r[i] = (const float *)(const void *)cur[i];
    }
    const int more = m0 + MR < n;
    if (bf) { /* widen this group, fetch the next one's rows meanwhile */
      for (uint32_t i = 0; i < MR; i++) {
        pto__widen_bf16(wide + (size_t)i * K, cur[i], K);
        r[i] = wide + (size_t)i * K;
        for (size_t b = 0; more && b < row_bytes; b += 64)
          _mm_prefetch((const char *)nx[i] + b, _MM_HINT_T0);
      }
    }
    for (uint32_t n0 = 0; n0 < N; n0 += NR) {
      const float *Bp = (const float *)B->data + (size_t)(n0 / NR) * b_panel;
      const uint32_t cols = N - n0 < NR ? N - n0 : NR;
      const unsigned char *const *pf = !bf && n0 == 0 && more ? nx : NULL;
      float *C = Cd + (size_t)m0 * ldc + n0;
      if (cols == NR) {
        kernel_ga(K, r, Bp, C, ldc, rows, pf, NULL);
        continue;
      }
      kernel_ga(K, r, Bp, blk, NR, rows, pf, NULL);
      for (uint32_t i = 0; i < rows; i++)
        for (uint32_t j2 = 0; j2 < cols; j2++)
          C[(size_t)i * ldc + j2] = blk[i * NR + j2];
    }
  }
  for (uint32_t t = 0; t < n; t++) /* invalid indices: zero rows */
    if (!pto__table_row(idx, g, t))
      for (uint32_t j2 = 0; j2 < N; j2++)
        Cd[(size_t)t * ldc + j2] = 0.0f;
  free(wide);
  return PTO_OK;
}

#define WSG_WEIGHTS 1024 /* weights on the stack: queries per pass */
#define WSG_K_MAX 512     /* K of a bf16 window widened here (more: reference) */

/* TMATMUL_RELU_WSUM_G, Q^T packed in NR panels, each query's G heads whole
 * panels (G a multiple of NR; else the reference runs): per pass over as
 * many queries as WSG_WEIGHTS weights cover (every query at the indexer's
 * 7 x 64), per MR keys (their rows read in place, in L1 once read; from a
 * bf16 window widened into a small buffer first), per query, per panel of
 * its heads, the MR x NR block over all of K folded through ReLU and the
 * weights into VW lanes per key, whose sum is the key's score. While the
 * first block of a group runs, the next MR rows are prefetched. Q^T (224
 * KiB for 7 queries of 64 heads at K = 128) streams from L2 once per
 * group. Measured against packing k^T and TMATMUL_RELU_WSUM on the same
 * tiles (7 x 64 queries, 16 tiles of 512 keys, two threads at once, median
 * of 40): 95.1 against 93.2 GFLOP/s, the pack included. */
static int mm_TMATMUL_RELU_WSUM_G(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *Qt = a->src[0], *W = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t K = Qt->valid_rows, M = Qt->valid_cols, R = d->valid_rows,
                 N = d->valid_cols, G = M / R;
  const int bf = g->dtype == PTO_BF16;
  if (!(a->flags & PTO_TF_PACK_B) || a->imm[1] != NR ||
      Qt->dtype != PTO_F32 || !table_fast(g) || G % NR || G > WSG_WEIGHTS ||
      (bf && K > WSG_K_MAX) || N < 1)
    return pto__isa_scalar.fn[op](op, a);
  _Alignas(64) float wv[WSG_WEIGHTS]; /* a pass's weights, contiguous */
  _Alignas(64) float wide[MR * WSG_K_MAX]; /* a bf16 group as f32 */
  _Alignas(64) float sums[MR * VW];
  const size_t ldd = d->stride, b_panel = (size_t)NR * Qt->rows,
               es = pto_dtype_size(g->dtype),
               row_step = (size_t)g->row_stride * es,
               row_bytes = (size_t)K * es;
  const unsigned char *base = g->base;
  float *Dd = d->data;
  const unsigned char *nx[MR];
  const float *r[MR];
  const uint32_t per_pass = WSG_WEIGHTS / G;
  for (uint32_t q0 = 0; q0 < R; q0 += per_pass) {
    const uint32_t q1 = R - q0 < per_pass ? R : q0 + per_pass;
    for (uint32_t m = q0 * G; m < q1 * G; m++)
      wv[m - q0 * G] = ((const float *)W->data)[(size_t)m * W->stride];
    for (uint32_t n0 = 0; n0 < N; n0 += MR) {
      const uint32_t rows = N - n0 < MR ? N - n0 : MR;
      const int more = n0 + MR < N;
      for (uint32_t i = 0; i < MR; i++) { /* short groups repeat a row */
        const unsigned char *cur =
            base + (size_t)(n0 + (i < rows ? i : 0)) * row_step;
        nx[i] = base + (size_t)(more && n0 + MR + i < N ? n0 + MR + i : n0) *
                           row_step;
        r[i] = (const float *)(const void *)cur;
        if (bf) { /* widen this group, fetch the next one's rows meanwhile */
          pto__widen_bf16(wide + (size_t)i * K, cur, K);
          r[i] = wide + (size_t)i * K;
          for (size_t b = 0; more && b < row_bytes; b += 64)
            _mm_prefetch((const char *)nx[i] + b, _MM_HINT_T0);
        }
      }
      for (uint32_t q = q0; q < q1; q++) {
        MM_UNROLL for (int i = 0; i < MR; i++) MM_STORE(sums + i * VW,
                                                        MM_ZERO());
        for (uint32_t m0 = q * G; m0 < (q + 1) * G; m0 += NR) {
          const float *Bp =
              (const float *)Qt->data + (size_t)(m0 / NR) * b_panel;
          const unsigned char *const *pf =
              !bf && more && q == q0 && m0 == q * G ? nx : NULL;
          kernel_ga(K, r, Bp, sums, 0, rows, pf, wv + (m0 - q0 * G));
        }
        for (uint32_t i = 0; i < rows; i++)
          Dd[(size_t)q * ldd + n0 + i] = MM_HSUM(MM_LOAD(sums + i * VW));
      }
    }
  }
  if (a->flags & PTO_TF_CAUSAL) /* -inf where n > r + s */
    for (uint32_t q = 0; q < R; q++) {
      const double first = (double)q + a->s + 1;
      for (uint32_t j2 = first < 0 ? 0 : first > N ? N : (uint32_t)first;
           j2 < N; j2++)
        Dd[(size_t)q * ldd + j2] = -INFINITY;
    }
  return PTO_OK;
}

/* C[i][0..NR) (i < rows) = f_i C[i] (acc; f_i = 1 without scale) + sum_k
 * Ap[k * MR + i] * V[k][0..NR) over K steps, V packed (Bp: V[k] at Bp +
 * k NR, in L1) or each row slice V[k] = v[k] at its own address. Read in
 * place, the slice at next[k] (NR f32 from there) is prefetched at step
 * k when next is given, else the slice GB_AHEAD steps on, into L1: the
 * slices of all K steps (64 KiB at 512 slots of 32 f32) do not stay in L1
 * from one panel of A to the next, and no hardware prefetcher follows
 * them. Measured on a Xeon (one block of attention medium, its rows in L2
 * as after TMATMUL_GA, in turns with the kernel without it, 150 pairs):
 * 2-3% faster when the machine is quiet (best 415 against 425 us), 4-11%
 * when a neighbour slows L2 (the median pair); 8 to 32 steps ahead
 * alike. */
#define GB_AHEAD 8
static void kernel_gb(uint32_t K, const float *restrict Ap,
                      const float *restrict Bp, const float *const *v,
                      float *C, size_t ldc, uint32_t rows, int acc,
                      const float *scale, const unsigned char *const *next) {
  MM_V c[MR][NR / VW];
  MM_UNROLL for (int i = 0; i < MR; i++) {
    const MM_V f = MM_SET1(scale ? scale[i] : 1.0f);
    MM_UNROLL for (int q = 0; q < NR / VW; q++) {
      c[i][q] = MM_ZERO();
      if (acc && (uint32_t)i < rows) {
        c[i][q] = MM_LOAD(C + (size_t)i * ldc + q * VW);
        if (scale)
          c[i][q] = MM_MUL(c[i][q], f);
      }
    }
  }
  /* step k with V's slice at vk */
#define GB_STEP(vk)                                                            \
  do {                                                                         \
    MM_V b[NR / VW];                                                           \
    MM_UNROLL for (int q = 0; q < NR / VW; q++) b[q] = MM_LOAD((vk) + q * VW); \
    MM_UNROLL for (int i = 0; i < MR; i++) {                                   \
      const MM_V ai = MM_BCAST(Ap + (size_t)k * MR + i);                       \
      MM_UNROLL for (int q = 0; q < NR / VW; q++) c[i][q] =                    \
          MM_FMA(ai, b[q], c[i][q]);                                           \
    }                                                                          \
  } while (0)
  if (Bp) {
    _Pragma("GCC unroll 4") for (uint32_t k = 0; k < K; k++)
        GB_STEP(Bp + (size_t)k * NR);
  } else {
    _Pragma("GCC unroll 4") for (uint32_t k = 0; k < K; k++) {
      if (next) {
        _mm_prefetch((const char *)next[k], _MM_HINT_T0);
        if (NR * sizeof(float) > 64)
          _mm_prefetch((const char *)next[k] + 64, _MM_HINT_T0);
      } else if (k + GB_AHEAD < K) {
        _mm_prefetch((const char *)v[k + GB_AHEAD], _MM_HINT_T0);
        if (NR * sizeof(float) > 64)
          _mm_prefetch((const char *)v[k + GB_AHEAD] + 64, _MM_HINT_T0);
      }
      GB_STEP(v[k]);
    }
  }
#undef GB_STEP
  MM_UNROLL for (int i = 0; i < MR; i++) if ((uint32_t)i < rows)
      MM_UNROLL for (int q = 0; q < NR / VW; q++)
          MM_STORE(C + (size_t)i * ldc + q * VW, c[i][q]);
}

#ifndef GB_PACK
#define GB_PACK 0
#endif
#define GB_SLOTS_MAX 2048 /* the K of a TMATMUL_GB run here (more: reference) */
#define GB_KC 256 /* slots per pass over a panel of packed slices */

/* TMATMUL_GB, A packed in MR panels: per NR columns of V, per MR panel of
 * A, the product over the slots, V's slices taken one of two ways:
 *  - in place (f32 tables where the file does not set GB_PACK): each
 *    selected row's slice, a line or two, read from L1 or L2 by every
 *    panel of A. While the first panel of A runs, the next NR columns'
 *    slices are prefetched, one row per step: the rows are random, no
 *    hardware prefetcher follows them, and once out of L2 (the QK
 *    product's sweep over the same rows and the other operands push them
 *    out) each slice waited on L3. Measured on one block of attention
 *    medium on a Xeon (128 heads x 512 slots x 512 columns, the rows
 *    L2-cold, best of 40): 162 against 136 GFLOP/s; with the rows in L2,
 *    163 against 161.
 *  - packed (bf16 tables, widened on the way, and every table where the
 *    file sets GB_PACK), GB_KC slots at a time: the slices copied one
 *    after the other into a buffer in L1 first, as GEMM packs B.
 * A partial last NR columns runs the reference's sums. */
static int mm_TMATMUL_GB(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *idx = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t n = A->valid_cols, M = d->valid_rows, N = d->valid_cols;
  const int bf = g->dtype == PTO_BF16, pack = GB_PACK || bf;
  if (!(a->flags & PTO_TF_PACK_A) || a->imm[0] != MR ||
      A->dtype != PTO_F32 || !table_fast(g) || n > GB_SLOTS_MAX)
    return pto__isa_scalar.fn[op](op, a);
  const int acc = (a->flags & PTO_TF_ACC) != 0,
            scaled = acc && (a->flags & PTO_TF_ROWSCALE);
  const size_t ldc = d->stride, a_panel = (size_t)MR * A->stride;
  static const float zeros[NR] __attribute__((aligned(64)));
  _Alignas(64) float slices[GB_KC * NR]; /* packed: a pass's slices */
  const unsigned char *row[GB_SLOTS_MAX], *next[GB_SLOTS_MAX];
  const float *v[GB_SLOTS_MAX];
  for (uint32_t t = 0; t < n; t++)
    row[t] = pto__table_row(idx, g, t);
  float *Cd = d->data;
  const uint32_t full = N / NR * NR, kc = pack ? GB_KC : n;
  const size_t es = pto_dtype_size(g->dtype);
  for (uint32_t n0 = 0; n0 < full; n0 += NR) {
    const int more = !pack && n0 + NR < full;
    for (uint32_t k0 = 0; k0 < n; k0 += kc) {
      const uint32_t k1 = n - k0 < kc ? n : k0 + kc;
      for (uint32_t t = k0; t < k1; t++) {
        float *s = slices + (size_t)(t - k0) * NR;
        if (more)
          next[t] = row[t] ? row[t] + es * (n0 + NR)
                           : (const unsigned char *)zeros;
        if (!pack)
          v[t] = row[t] ? (const float *)(const void *)row[t] + n0 : zeros;
        else if (!row[t])
          MM_UNROLL for (int q = 0; q < NR / VW; q++)
              MM_STORE(s + q * VW, MM_ZERO());
        else if (bf)
          pto__widen_bf16(s, row[t] + 2 * (size_t)n0, NR);
        else
          MM_UNROLL for (int q = 0; q < NR / VW; q++) MM_STORE(
              s + q * VW,
              MM_LOAD((const float *)(const void *)row[t] + n0 + q * VW));
      }
      for (uint32_t m0 = 0; m0 < M; m0 += MR) {
        const uint32_t rows = M - m0 < MR ? M - m0 : MR;
        float f[MR];
        for (uint32_t i = 0; i < MR; i++)
          f[i] = scaled && i < rows
                     ? ((const float *)a->src[2]->data)[(size_t)(m0 + i) *
                                                        a->src[2]->stride]
                     : 1.0f;
        kernel_gb(k1 - k0,
                  (const float *)A->data + (size_t)(m0 / MR) * a_panel +
                      (size_t)k0 * MR,
                  pack ? slices : NULL, v + k0, Cd + (size_t)m0 * ldc + n0,
                  ldc, rows, acc || k0 > 0, scaled && k0 == 0 ? f : NULL,
                  more && m0 == 0 ? next : NULL);
      }
    }
  }
  for (uint32_t m = 0; m < M && full < N; m++) { /* the last columns */
    const float *Am = (const float *)A->data + (size_t)(m / MR) * a_panel +
                      m % MR;
    const float f = scaled ? ((const float *)a->src[2]->data)[(size_t)m *
                                                             a->src[2]->stride]
                           : 1.0f;
    for (uint32_t c = full; c < N; c++) {
      float *o = Cd + (size_t)m * ldc + c, sum = acc ? *o * f : 0.0f;
      for (uint32_t t = 0; t < n; t++) {
        const unsigned char *x =
            row[t] ? row[t] + c * pto_dtype_size(g->dtype) : NULL;
        const float p = Am[(size_t)t * MR] * (x ? pto__to_f32(g->dtype, x) : 0);
        sum += p;
      }
      *o = sum;
    }
  }
  return PTO_OK;
}

/* B packed in this table's NR panels from an f32 window whose rows are
 * contiguous (the common right operand): each source row k goes whole to
 * row k of every panel, full panel rows as fixed-size copies the compiler
 * turns into this file's widest vectors; pto__tload_pack's layout and
 * zero padding (core/isa.def). 0 when the window is not of that kind. */
static int pack_b_rows(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_gview *g = &a->g;
  if (!(a->flags & PTO_TF_PACK_B) || a->imm[0] != NR || d->dtype != PTO_F32 ||
      g->dtype != PTO_F32 || g->col_stride != 1)
    return 0;
  const uint32_t K = d->valid_rows, P = d->valid_cols, full = P / NR * NR;
  const size_t panel = (size_t)NR * d->rows;
  const int64_t ks = g->row_stride;
  float *dd = d->data;
  for (uint32_t k = 0; k < K; k++) {
    const float *sk = (const float *)g->base + k * ks;
    if (k + 4 < K) /* rows are far apart: fetch a few ahead, line by line */
      for (uint32_t b = 0; b < P; b += 16)
        _mm_prefetch((const char *)(sk + 4 * ks + b), _MM_HINT_T0);
    float *dk = dd + (size_t)k * NR;
    for (uint32_t p0 = 0; p0 < full; p0 += NR)
      __builtin_memcpy(dk + (size_t)(p0 / NR) * panel, sk + p0,
                       NR * sizeof(float));
    if (full < P) {
      float *dp = dk + (size_t)(full / NR) * panel;
      uint32_t i = 0;
      for (; i < P - full; i++)
        dp[i] = sk[full + i];
      for (; i < NR; i++)
        dp[i] = 0.0f;
    }
  }
  return 1;
}

/* TLOAD as the table had it, for everything but packing. */
static pto_tileop_fn tload_unpacked;

static int mm_TLOAD(int op, const pto_targs *a) {
  if (!(a->flags & (PTO_TF_PACK_A | PTO_TF_PACK_B)))
    return tload_unpacked(op, a);
  if (pack_b_rows(a))
    return PTO_OK;
#ifdef PACK_A_ROWS
  if (PACK_A_ROWS(a))
    return PTO_OK;
#endif
  return pto__tload_pack(op, a);
}

/* Installs the entries above and the panel widths in t. */
static void mm_install(pto_isa_table *t) {
  t->fn[PTO_OP_TMATMUL] = mm_TMATMUL;
  t->fn[PTO_OP_TMATMUL_ACC] = mm_TMATMUL_ACC;
  t->fn[PTO_OP_TMATMUL_RELU_WSUM] = mm_TMATMUL_RELU_WSUM;
  t->fn[PTO_OP_TGATHERPACK] = pto__tgatherpack;
  t->fn[PTO_OP_TMATMUL_GA] = mm_TMATMUL_GA;
  t->fn[PTO_OP_TMATMUL_GB] = mm_TMATMUL_GB;
  t->fn[PTO_OP_TMATMUL_RELU_WSUM_G] = mm_TMATMUL_RELU_WSUM_G;
  tload_unpacked = t->fn[PTO_OP_TLOAD];
  t->fn[PTO_OP_TLOAD] = mm_TLOAD;
  /* results leave L0C through TSTORE: a fast copy unless the vector
   * overrides (tileops/vec_<isa>.c) already gave the table one */
  if (t->fn[PTO_OP_TSTORE] == pto__isa_scalar.fn[PTO_OP_TSTORE])
    t->fn[PTO_OP_TSTORE] = pto__tstore_f32;
  t->mm_mr = MR;
  t->mm_nr = NR;
  /* bf16 and f16 operands: widened while packing (tileops/pack.c), then
   * the same f32 kernel; their products are exact in f32 */
  t->mm_engine[PTO_F32] = MM_ENGINE;
  t->mm_engine[PTO_BF16] = MM_ENGINE;
  t->mm_engine[PTO_F16] = MM_ENGINE;
}

#endif /* PTO_TILEOPS_MM_LOOPS_H */
