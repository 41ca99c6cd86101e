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
 * primitives (MM_V, MM_LOAD...) of the kernels that read a table's rows in
 * place, which tileops/mm_gather.h (included below) lists.
 * Optionally: PACK_LANES (a), TLOAD packing an f32 window whose rows
 * are the panels' lanes, contiguous along k (A's rows, or B's columns
 * from a transposed view), 1 when it did (defined by the file after the
 * include; 0 leaves it to the shared packer); WSUM_KEY_PANELS (a),
 * TMATMUL_RELU_WSUM_G's scores on its fast path computed another way, 1
 * when it did (mm_gather.h; defined by the file after the include, 0
 * leaves them to mm_gather.h's kernel); MM_AHEAD 0, the
 * packed matmuls do not prefetch the windows the task loads next
 * (ahead_plan below); mm_gather.h's GB_PACK, GA_UNROLL and
 * GATHER_NATIVE_BF16; PACKED_NATIVE_BF16 (a, acc), TMATMUL and
 * TMATMUL_ACC on bf16 operands packed in k pairs at the file's panel
 * widths (defined by the file after the include), with MM_ENGINE_BF16 the
 * name of its engine: the table then multiplies bf16 as it is (its
 * mm_native). So the loops compile with that file's ISA flags.
 *
 * The loop order is BLIS's: per KC slice of k, each NR panel of B stays in
 * L1 while the MR panels of A stream from L2 past it. */
#ifndef PTO_TILEOPS_MM_LOOPS_H
#define PTO_TILEOPS_MM_LOOPS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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
    const int64_t es = (int64_t)pto__dtype_bytes(g[i].dtype);
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

/* c_due's schedule for a kernel that runs its k loop in branch-free
 * stretches (as pf_next): the step of the next line, or K. */
static inline uint32_t c_next(const c_spread *s, uint32_t K) {
  return s->left && s->due < K ? s->due : K;
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
#ifdef PACK_LANES
static int PACK_LANES(const pto_targs *a);
#endif
#ifdef WSUM_KEY_PANELS
static int WSUM_KEY_PANELS(const pto_targs *a);
#endif
#ifdef PACKED_NATIVE_BF16
static void PACKED_NATIVE_BF16(const pto_targs *a, int acc);
#endif

/* Packed f32 operands with panels MR x NR: loops around the kernel. The
 * next loads are prefetched during the last quarter of the last pass over
 * k: lines fetched earlier are pushed out of L2 by the pass's sweep over
 * C and A before the packer reads them (back from L3 at best: GEMM 2048
 * +1-2% for the late start). Each of those blocks takes its share of the
 * lines, which the kernel spreads over its k loop (a burst would fill the
 * miss queues its own A panel needs). */
#define PF_LATE 4  /* the plan runs over the last 1/PF_LATE of the blocks */
#define PF_STEPS 4 /* k steps of the kernel per line it prefetches, at most */

/* Where the plan ah starts in a pass of `blocks` kernel calls of `steps`
 * k steps each (*late: the first block that prefetches) and how many lines
 * each block issues (*share): the last quarter of the pass, as above. A
 * plan that would ask more than a line per PF_STEPS steps there is
 * dropped: its tile has too little work per byte loaded (16-row tiles
 * streaming a wide B from DRAM, as decode steps run) and prefetching it
 * under the kernel only stalls the kernel on its miss buffers; the packer
 * streams it faster itself (16 x 24576 x 1536: 35 ms instead of 39-46). */
static void pf_window(pto_pf *ah, int64_t blocks, uint32_t steps, int64_t *late,
                      int64_t *share) {
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

/* Both operands packed at this file's panel widths, of dtype dt. */
static int packed_as(const pto_targs *a, pto_dtype dt) {
  const uint32_t both = PTO_TF_PACK_A | PTO_TF_PACK_B;
  return (a->flags & both) == both && a->imm[0] == MR && a->imm[1] == NR &&
         a->src[0]->dtype == dt && a->src[1]->dtype == dt;
}

static int fast_path(const pto_targs *a) {
  return packed_as(a, PTO_F32);
}

/* The product TMATMUL and TMATMUL_ACC run on a's operands: the f32 loops
 * above, the file's bf16 engine on bf16 pairs where it has one, or NULL
 * (the reference's). */
typedef void (*packed_product)(const pto_targs *a, int acc);
static packed_product product_for(const pto_targs *a) {
  if (fast_path(a))
    return matmul_packed;
#ifdef PACKED_NATIVE_BF16
  if (packed_as(a, PTO_BF16))
    return PACKED_NATIVE_BF16;
#endif
  return NULL;
}

static int mm_TLOAD(int op, const pto_targs *a);

static uint64_t mm_up(uint64_t x, uint64_t m) {
  return (x + m - 1) / m * m;
}

/* The product to run, on a, or on *b: a's operands that the plan did not
 * pack (tiles the program computed, which no TLOAD packed) packed in f32
 * at this file's panel widths into the scratch the plan gave it (laid out
 * as pto__mm_pack_scratch, core/isa.h, sizes it: A's panels, then B's), t
 * the packed tiles. NULL: the reference's (no scratch, or not f32). */
static packed_product product_packing(const pto_targs *a, pto_targs *b,
                                      pto_tile t[2]) {
  *b = *a;
  packed_product run = product_for(a);
  const int pa = (a->flags & PTO_TF_PACK_A) != 0,
            pb = (a->flags & PTO_TF_PACK_B) != 0;
  if (run || (pa && a->imm[0] != MR) || (pb && a->imm[1] != NR) ||
      a->dst[0]->dtype != PTO_F32)
    return run;
  const pto_tile *A = a->src[0], *B = a->src[1];
  const int ta = (a->flags & PTO_TF_TRANS_A) != 0,
            tb = (a->flags & PTO_TF_TRANS_B) != 0;
  const uint32_t M = a->dst[0]->valid_rows, N = a->dst[0]->valid_cols,
                 K = ta ? A->valid_rows : A->valid_cols;
  if (!M || !N || !K) /* emptied by a dynamic extent: the reference's */
    return NULL;
  uint64_t a_bytes, b_bytes;
  pto__mm_pack_scratch(M, N, K, MR, pa, pb, &a_bytes, &b_bytes);
  char *s = pto__targs_scratch(a, 1, (size_t)(a_bytes + b_bytes));
  if (!s)
    return NULL;
  for (int i = 0; i < 2; i++) {
    if (i ? pb : pa)
      continue;
    const pto_tile *src = i ? B : A;
    const int tr = i ? tb : ta;
    t[i] = (pto_tile){.data = s + (i ? a_bytes : 0),
                      .dtype = PTO_F32,
                      .rows = i ? K : (uint32_t)mm_up(M, MR),
                      .cols = i ? (uint32_t)mm_up(N, NR) : K,
                      .stride = (uint32_t)(i ? mm_up(N, NR) : mm_up(K, 16)),
                      .valid_rows = i ? K : M,
                      .valid_cols = i ? N : K};
    pto_targs l;
    memset(&l, 0, sizeof l);
    l.dst[0] = &t[i];
    l.flags = i ? PTO_TF_PACK_B : PTO_TF_PACK_A;
    l.imm[0] = i ? NR : MR;
    l.g = (pto_gview){.base = src->data,
                      .dtype = src->dtype,
                      .rows = i ? K : M,
                      .cols = i ? N : K,
                      .row_stride = tr ? 1 : src->stride,
                      .col_stride = tr ? src->stride : 1};
    if (mm_TLOAD(PTO_OP_TLOAD, &l))
      return NULL;
    b->src[i] = &t[i];
  }
  b->flags = (a->flags & ~(uint32_t)(PTO_TF_TRANS_A | PTO_TF_TRANS_B)) |
             PTO_TF_PACK_A | PTO_TF_PACK_B;
  b->imm[0] = MR;
  b->imm[1] = NR;
  return product_for(b);
}

static int mm_TMATMUL(int op, const pto_targs *a) {
  pto_targs b;
  pto_tile t[2];
  const packed_product run = product_packing(a, &b, t);
  if (!run)
    return pto__isa_ref(op, a);
  run(&b, 0);
  return PTO_OK;
}

/* The row scale of dst row m (PTO_TF_ROWSCALE): src2[m][0]. */
static inline float row_scale(const pto_targs *a, uint32_t m) {
  return ((const float *)a->src[2]->data)[(size_t)m * a->src[2]->stride];
}

/* dst's rows by their row scales (TMATMUL_ACC's and TMATMUL_GB's
 * PTO_TF_ROWSCALE before the product is added). */
static void scale_rows(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    const float s = row_scale(a, r);
    float *row = (float *)d->data + (size_t)r * d->stride;
    for (uint32_t c = 0; c < d->valid_cols; c++)
      row[c] *= s;
  }
}

static int mm_TMATMUL_ACC(int op, const pto_targs *a) {
  pto_targs b;
  pto_tile t[2];
  const packed_product run = product_packing(a, &b, t);
  if (!run)
    return pto__isa_ref(op, a);
  if (a->flags & PTO_TF_ROWSCALE)
    scale_rows(a);
  run(&b, 1);
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
      for (uint32_t j = first < 0   ? 0
                        : first > N ? N
                                    : (uint32_t)first;
           j < N; j++)
        Dd[r * ldd + j] = -INFINITY;
    }
}

static int mm_TMATMUL_RELU_WSUM(int op, const pto_targs *a) {
  if (!fast_path(a))
    return pto__isa_ref(op, a);
  matmul_wsum_packed(a);
  return PTO_OK;
}

/* The matmuls that read a table's rows in place (TMATMUL_GA, TMATMUL_GB,
 * TMATMUL_RELU_WSUM_G), installed by mm_install below. */
#include "tileops/mm_gather.h"

/* B packed in this table's NR panels from an f32 window whose rows are
 * contiguous (the common right operand): each source row k goes whole to
 * row k of every panel, full panel rows as fixed-size copies the compiler
 * turns into this file's widest vectors; pto__tload_pack's layout and
 * zero padding (core/isa.def). 0 when the window is not of that kind.
 * The including file may set PACK_B_GROUP, the source rows copied to a
 * panel before the next panel (their slices are consecutive there), and
 * PACK_B_AHEAD, how many rows ahead the packer fetches line by line (0:
 * none, the hardware prefetchers follow the rows). */
#ifndef PACK_B_GROUP
#define PACK_B_GROUP 1
#endif
#ifndef PACK_B_AHEAD
#define PACK_B_AHEAD 4
#endif

/* n consecutive slices of a panel (NR f32 each, at d) from n rows ks
 * apart (from s). */
static inline __attribute__((always_inline)) void
b_slices(float *restrict d, const float *restrict s, int64_t ks, uint32_t n) {
  for (uint32_t r = 0; r < n; r++)
    __builtin_memcpy(d + (size_t)r * NR, s + r * ks, NR * sizeof(float));
}

static int pack_b_rows(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_gview *g = &a->g;
  if (!(a->flags & PTO_TF_PACK_B) || a->imm[0] != NR || d->dtype != PTO_F32 ||
      g->dtype != PTO_F32 || g->col_stride != 1)
    return 0;
  const uint32_t K = d->valid_rows, P = d->valid_cols, full = P / NR * NR;
  const size_t panel = (size_t)NR * d->rows;
  const int64_t ks = g->row_stride;
  const float *base = g->base;
  float *dd = d->data;
  for (uint32_t k0 = 0; k0 < K; k0 += PACK_B_GROUP) {
    const uint32_t n = K - k0 < PACK_B_GROUP ? K - k0 : PACK_B_GROUP;
    const float *s0 = base + k0 * ks;
    for (uint32_t k = k0 + PACK_B_AHEAD;
         PACK_B_AHEAD && k < K && k < k0 + PACK_B_AHEAD + n;
         k++) /* rows are far apart: fetch a few ahead, line by line */
      for (uint32_t b = 0; b < P; b += 16)
        _mm_prefetch((const char *)(base + k * ks + b), _MM_HINT_T0);
    float *d0 = dd + (size_t)k0 * NR;
    for (uint32_t p0 = 0; p0 < full; p0 += NR) {
      float *dp = d0 + (size_t)(p0 / NR) * panel;
      if (n == PACK_B_GROUP)
        b_slices(dp, s0 + p0, ks, PACK_B_GROUP);
      else
        b_slices(dp, s0 + p0, ks, n);
    }
    for (uint32_t r = 0; full < P && r < n; r++) { /* the partial panel */
      const float *sk = s0 + r * ks;
      float *dp = d0 + (size_t)r * NR + (size_t)(full / NR) * panel;
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
#ifdef PACK_LANES
  if (PACK_LANES(a))
    return PTO_OK;
#endif
  return pto__tload_pack(op, a);
}

/* Installs the entries above and the panel widths in t. */
static void mm_install(pto_isa_table *t) {
  t->fn[PTO_OP_TMATMUL] = mm_TMATMUL;
  t->fn[PTO_OP_TMATMUL_ACC] = mm_TMATMUL_ACC;
  t->fn[PTO_OP_TMATMUL_RELU_WSUM] = mm_TMATMUL_RELU_WSUM;
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
#ifdef PACKED_NATIVE_BF16 /* bf16 as it is: the partitioner keeps it */
  t->mm_engine[PTO_BF16] = MM_ENGINE_BF16;
  t->mm_native[PTO_BF16] = 1;
#endif
}

#endif /* PTO_TILEOPS_MM_LOOPS_H */
