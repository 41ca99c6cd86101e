/* tileops/mm_gather.h (internal): the matmuls that read one operand's
 * rows from a table where they lie, for the attention and indexer
 * operators (TMATMUL_GA, TMATMUL_GB, TMATMUL_RELU_WSUM_G; core/isa.def),
 * and their kernels. Included only by tileops/mm_loops.h, whose
 * mm_install() installs them, so it is compiled with each
 * tileops/mm_<isa>.c's ISA flags. It takes from that file MR, NR and VW
 * (as mm_loops.h describes them), from mm_loops.h row_scale and
 * scale_rows, and the vector primitives of its kernels:
 * MM_V (a vector of VW f32), MM_LOAD, MM_STORE (unaligned), MM_BCAST (one
 * f32 from memory to every lane), MM_FMA(a, b, c) = a * b + c, MM_MUL,
 * MM_ZERO, MM_SET1, MM_RELU (x < 0: 0, else x, -0 and NaN kept), MM_HSUM
 * (the sum of the lanes). Optionally: GB_PACK 1, TMATMUL_GB copies V's
 * slices into L1 before its kernel reads them rather than reading them
 * where they lie; GA_UNROLL, the pragma that unrolls the row-reading
 * kernel's k steps ("GCC unroll 16": a line of each row). */
#ifndef PTO_TILEOPS_MM_GATHER_H
#define PTO_TILEOPS_MM_GATHER_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/convert.h"
#include "tileops/tileops.h"

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

/* The kernels below compute only a block's R rows, R a constant (1..MR)
 * in each copy: a group's or a panel's short tail (such as the last 2 of
 * 224 slots or of 128 heads) no longer costs a whole MR-row block. The
 * copies are made by MM_ROWS_SWITCH(rows): MM_ROWS_CALL(R) for R = rows
 * (1..MR; MR for anything else), MM_ROWS_CALL defined around it. */
/* clang-format off */
#define MM_ROWS_CASE(r)                                                        \
  case r:                                                                      \
    MM_ROWS_CALL((r) < MR ? (r) : MR);                                         \
    break;
#define MM_ROWS_SWITCH(rows)                                                   \
  switch ((rows) < MR ? (rows) : MR) {                                         \
    MM_ROWS_CASE(1) MM_ROWS_CASE(2) MM_ROWS_CASE(3) MM_ROWS_CASE(4)            \
    MM_ROWS_CASE(5) MM_ROWS_CASE(6) MM_ROWS_CASE(7) MM_ROWS_CASE(8)            \
    MM_ROWS_CASE(9) MM_ROWS_CASE(10) MM_ROWS_CASE(11) MM_ROWS_CASE(12)         \
    MM_ROWS_CASE(13) MM_ROWS_CASE(14) MM_ROWS_CASE(15)                         \
  default:                                                                     \
    MM_ROWS_CALL(MR);                                                          \
  }
/* clang-format on */
_Static_assert(MR <= 16, "MM_ROWS_SWITCH lists 1..15 rows, and MR");

/* How many of the n - j0 rows left from j0 the next group takes: MR,
 * except that a tail of 1..MR/2 rows is not left alone: the last two
 * groups share MR + tail evenly (4 + 4 instead of 6 + 2 at MR 6). A
 * block of fewer than MR/2 rows keeps too few accumulators to hide the
 * FMA's latency; blocks of MR/2 rows or more run at the full rate. */
static inline uint32_t group_rows(uint32_t j0, uint32_t n) {
  const uint32_t left = n - j0;
  if (left <= MR)
    return left;
  return left < 2 * MR && left - MR <= MR / 2 ? (left + 1) / 2 : MR;
}

/* A bf16 group's rows, cur[i] for i < rows, widened into wide (K f32
 * each, exactly) and r[i] = wide + i K for all MR (the kernels read only
 * the first rows); the next group's rows nx[i] (row_bytes each) fetched
 * meanwhile when more. TMATMUL_GA and TMATMUL_RELU_WSUM_G on a bf16
 * table. */
static void widen_group(float *wide, uint32_t K,
                        const unsigned char *const *cur, uint32_t rows,
                        const unsigned char *const *nx, int more,
                        size_t row_bytes, const float **r) {
  for (uint32_t i = 0; i < MR; i++) {
    if (i < rows)
      pto__widen_bf16(wide + (size_t)i * K, cur[i], K);
    r[i] = wide + (size_t)i * K;
    for (size_t b = 0; more && b < row_bytes; b += 64)
      _mm_prefetch((const char *)nx[i] + b, _MM_HINT_T0);
  }
}

/* An MR x NR block's first R rows c folded into VW lanes per row: C[i *
 * VW + l] += sum over the row's lanes j = l (mod VW) of w[j] *
 * ReLU(c[i][j]), over the lanes whose bits in wm (NR masks, all ones or
 * zero) are set when wm is given. TMATMUL_RELU_WSUM_G's epilogue, for
 * every kernel of its block. */
static inline __attribute__((always_inline)) void
wsum_fold(const int R, MM_V c[MR][NR / VW], const float *w, const float *wm,
          float *C) {
  MM_V wq[NR / VW], mq[NR / VW];
  MM_UNROLL for (int q = 0; q < NR / VW; q++) {
    wq[q] = MM_LOAD(w + q * VW);
    mq[q] = wm ? MM_LOAD(wm + q * VW) : MM_ZERO();
  }
  MM_UNROLL for (int i = 0; i < R; i++) {
    MM_V t = MM_LOAD(C + (size_t)i * VW);
    MM_UNROLL for (int q = 0; q < NR / VW; q++) {
      MM_V x = MM_RELU(c[i][q]);
      if (wm)
        x = MM_AND(mq[q], x);
      t = MM_FMA(wq[q], x, t);
    }
    MM_STORE(C + (size_t)i * VW, t);
  }
}

/* C[i][0..NR) (i < R, row stride ldc) = sum_k a[i][k] * Bp[k * NR + j]
 * over K steps: a broadcast from each of the R rows per step; with next,
 * the same K values of the MR rows next[i] prefetched meanwhile. With w
 * (NR weights), the block is folded on its way out of the registers
 * instead: C[i * VW + l] += sum over the row's lanes j = l (mod VW) of
 * w[j] * ReLU(block[i][j]) (TMATMUL_RELU_WSUM_G), over the lanes whose
 * bits in wm (NR masks, all ones or zero) are set when wm is given: a
 * panel shared by two queries' heads, where a weight of zero would still
 * let another query's inf or NaN through. */
static inline __attribute__((always_inline)) void
ga_rows(const int R, uint32_t K, const float *const *a,
        const float *restrict Bp, float *C, size_t ldc,
        const unsigned char *const *next, const float *w, const float *wm) {
  MM_V c[MR][NR / VW];
  MM_UNROLL for (int i = 0; i < R; i++)
      MM_UNROLL for (int q = 0; q < NR / VW; q++) c[i][q] = MM_ZERO();
  /* pointers that advance a line at a time, so every step's loads are at
   * constant offsets from them (indexing by k cost an address computation
   * per load, 4% of TMATMUL_RELU_WSUM_G) */
  const float *ar[MR], *bp = Bp;
  MM_UNROLL for (int i = 0; i < R; i++) ar[i] = a[i];
#define GA_STEP(j)                                                             \
  do {                                                                         \
    MM_V b[NR / VW];                                                           \
    MM_UNROLL for (int q = 0; q < NR / VW; q++) b[q] =                         \
        MM_LOAD(bp + (size_t)(j)*NR + q * VW);                                 \
    MM_UNROLL for (int i = 0; i < R; i++) {                                    \
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
    MM_UNROLL for (int i = 0; i < R; i++) ar[i] += 16;
    bp += 16 * NR;
  }
  if (next && k0 < K)
    MM_UNROLL for (int i = 0; i < MR; i++)
        _mm_prefetch((const char *)(next[i] + 4 * (size_t)k0), _MM_HINT_T0);
  for (uint32_t j = 0; j < K - k0; j++)
    GA_STEP(j);
#undef GA_STEP
  if (w) {
    wsum_fold(R, c, w, wm, C);
    return;
  }
  MM_UNROLL for (int i = 0; i < R; i++)
      MM_UNROLL for (int q = 0; q < NR / VW; q++)
          MM_STORE(C + (size_t)i * ldc + q * VW, c[i][q]);
}

/* ga_rows for the first `rows` (1..MR) of the MR rows a; its copies
 * without the lane masks test none (TMATMUL_RELU_WSUM_G with one query ran
 * 1% slower with the test in each) */
static void kernel_ga(uint32_t K, const float *const *a,
                      const float *restrict Bp, float *C, size_t ldc,
                      uint32_t rows, const unsigned char *const *next,
                      const float *w, const float *wm) {
  if (wm) {
#define MM_ROWS_CALL(R) ga_rows(R, K, a, Bp, C, ldc, next, w, wm)
    MM_ROWS_SWITCH(rows)
#undef MM_ROWS_CALL
    return;
  }
#define MM_ROWS_CALL(R) ga_rows(R, K, a, Bp, C, ldc, next, w, NULL)
  MM_ROWS_SWITCH(rows)
#undef MM_ROWS_CALL
}

/* A file with a bf16 engine defines GATHER_NATIVE_BF16 as its kernel for
 * TMATMUL_GA and TMATMUL_RELU_WSUM_G on a bf16 table by a bf16 right
 * operand packed in k pairs (core/isa.def): kernel_ga's contract with the
 * rows a[i] read in place as bf16 (K of them, no widening) and Bp a bf16
 * panel. */
#ifdef GATHER_NATIVE_BF16
static void GATHER_NATIVE_BF16(uint32_t K, const unsigned char *const *a,
                               const uint16_t *restrict Bp, float *C,
                               size_t ldc, uint32_t rows,
                               const unsigned char *const *next, const float *w,
                               const float *wm);
#endif

/* Whether a gathered matmul's right operand B (packed in k pairs) and its
 * table g run on the file's bf16 kernel: both bf16, and the file has one. */
static inline int gather_native(const pto_tile *B, const pto_gview *g) {
#ifdef GATHER_NATIVE_BF16
  return B->dtype == PTO_BF16 && g->dtype == PTO_BF16;
#else
  (void)B;
  (void)g;
  return 0;
#endif
}

/* kernel_ga, or the bf16 kernel on rows `cur` (as they lie) and B's
 * panel at element offset `at` when native. */
#ifdef GATHER_NATIVE_BF16
#define GATHER_KERNEL(native, K, cur, r, B, at, C, ldc, rows, pf, w, wm)       \
  ((native) ? GATHER_NATIVE_BF16(K, cur, (const uint16_t *)(B)->data + (at),   \
                                 C, ldc, rows, pf, w, wm)                      \
            : kernel_ga(K, r, (const float *)(B)->data + (at), C, ldc, rows,   \
                        pf, w, wm))
#else
#define GATHER_KERNEL(native, K, cur, r, B, at, C, ldc, rows, pf, w, wm)       \
  kernel_ga(K, r, (const float *)(B)->data + (at), C, ldc, rows, pf, w, wm)
#endif

/* Lists the valid ones of the n slots of idx (their indices within the
 * table g) in vt, in order, and their rows in row when given; returns how
 * many. */
static uint32_t valid_slots(const pto_tile *idx, const pto_gview *g,
                            uint32_t n, uint32_t *vt,
                            const unsigned char **row) {
  uint32_t nv = 0;
  for (uint32_t t = 0; t < n; t++) {
    const unsigned char *x = pto__table_row(idx, g, t);
    if (!x)
      continue;
    if (row)
      row[nv] = x;
    vt[nv++] = t;
  }
  return nv;
}

/* TMATMUL_GA, B packed in NR panels: per MR selected rows (in L1 once
 * read), every panel of B over all of K (from L1 and L2); while the first
 * panel runs, the next MR rows are prefetched a line per 16 steps, as no
 * hardware prefetcher knows where they are. Measured on one block of
 * attention medium (128 rows x 576 into 64 heads, min of 300): 406 us,
 * against 428 without the prefetch and 506 with the panels outside (each
 * row then read from L2 or L3 once per panel); slicing K so a panel stays
 * in L1, as matmul_packed does, was no faster. Only valid indices' rows
 * are computed, MR at a time: a group of consecutive slots writes its
 * block in place, any other (or a partial panel) goes through a block
 * whose rows are then copied to their slots; invalid slots' rows are
 * zeroed. Groups are group_rows long: MR, the last two shorter when the
 * tail would be short. The valid slots are listed on the stack up to
 * PTO_GA_SLOTS_STACK, and a widened bf16 group is kept there up to K =
 * PTO_WIDEN_K_STACK; past either, in the scratch the plan gives it (core/
 * isa.c: ga_scratch), the slots first, else the reference runs. */
static int mm_TMATMUL_GA(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *idx = a->src[0], *B = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t n = d->valid_rows, N = d->valid_cols, K = B->valid_rows;
  const int native = gather_native(B, g),   /* bf16 by bf16, as they are */
      bf = g->dtype == PTO_BF16 && !native; /* widened */
  if (!(a->flags & PTO_TF_PACK_B) || a->imm[1] != NR ||
      (B->dtype != PTO_F32 && !native) || !table_fast(g))
    return pto__isa_ref(op, a);
  uint32_t vt_stack[PTO_GA_SLOTS_STACK], *vt = vt_stack;
  _Alignas(64) float wide_stack[MR * PTO_WIDEN_K_STACK];
  float *wide = wide_stack; /* a bf16 table: the MR rows of a group as f32 */
  const size_t vt_bytes =
      n > PTO_GA_SLOTS_STACK ? ((size_t)n * sizeof *vt + 63) / 64 * 64 : 0;
  const size_t wide_bytes =
      bf && K > PTO_WIDEN_K_STACK ? (size_t)MR * K * sizeof *wide : 0;
  if (vt_bytes || wide_bytes) {
    unsigned char *scr = pto__targs_scratch(a, 1, vt_bytes + wide_bytes);
    if (!scr)
      return pto__isa_ref(op, a);
    if (vt_bytes)
      vt = (uint32_t *)(void *)scr;
    if (wide_bytes)
      wide = (float *)(void *)(scr + vt_bytes);
  }
  const uint32_t nv = valid_slots(idx, g, n, vt, NULL);
  const size_t ldc = d->stride, b_panel = (size_t)NR * B->rows;
  const size_t row_bytes = (size_t)K * pto__dtype_bytes(g->dtype);
  float *Cd = d->data;
  _Alignas(64) float blk[MR * NR];
  const unsigned char *cur[MR], *nx[MR];
  const float *r[MR];
  /* group_rows slots per group, each group's rows the previous one's nx */
  uint32_t rows = 0, next_rows = nv ? group_rows(0, nv) : 0;
  for (uint32_t i = 0; nv && i < MR; i++)
    nx[i] = pto__table_row(idx, g, vt[i < next_rows ? i : 0]);
  for (uint32_t j0 = 0; j0 < nv; j0 += rows) {
    rows = next_rows;
    const uint32_t j1 = j0 + rows; /* the next group's first slot */
    const int more = j1 < nv;
    next_rows = more ? group_rows(j1, nv) : 0;
    for (uint32_t i = 0; i < MR; i++) {
      cur[i] = nx[i];
      if (more)
        nx[i] = pto__table_row(idx, g, vt[j1 + (i < next_rows ? i : 0)]);
      r[i] = (const float *)(const void *)cur[i];
    }
    if (bf)
      widen_group(wide, K, cur, rows, nx, more, row_bytes, r);
    /* the group's slots are consecutive: its rows of dst are one block */
    const int direct = vt[j0 + rows - 1] - vt[j0] == rows - 1;
    for (uint32_t n0 = 0; n0 < N; n0 += NR) {
      const size_t at = (size_t)(n0 / NR) * b_panel; /* B's panel */
      const uint32_t cols = N - n0 < NR ? N - n0 : NR;
      const unsigned char *const *pf = !bf && n0 == 0 && more ? nx : NULL;
      if (direct && cols == NR) {
        GATHER_KERNEL(native, K, cur, r, B, at, Cd + (size_t)vt[j0] * ldc + n0,
                      ldc, rows, pf, NULL, NULL);
        continue;
      }
      GATHER_KERNEL(native, K, cur, r, B, at, blk, NR, rows, pf, NULL, NULL);
      for (uint32_t i = 0; i < rows; i++)
        memcpy(Cd + (size_t)vt[j0 + i] * ldc + n0, blk + i * NR,
               cols * sizeof(float));
    }
  }
  for (uint32_t t = 0, j = 0; nv < n && t < n; t++) /* the rest: zero rows */
    if (j < nv && vt[j] == t)
      j++;
    else
      memset(Cd + (size_t)t * ldc, 0, N * sizeof(float));
  return PTO_OK;
}

/* TMATMUL_RELU_WSUM_G's scores past the causal diagonal, when the flag is
 * set: -inf where n > r + s. */
static int wsg_causal(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const uint32_t R = d->valid_rows, N = d->valid_cols;
  if (a->flags & PTO_TF_CAUSAL)
    for (uint32_t q = 0; q < R; q++) {
      const double first = (double)q + a->s + 1;
      for (uint32_t j2 = first < 0   ? 0
                         : first > N ? N
                                     : (uint32_t)first;
           j2 < N; j2++)
        ((float *)d->data)[(size_t)q * d->stride + j2] = -INFINITY;
    }
  return PTO_OK;
}

/* TMATMUL_RELU_WSUM_G, Q^T packed in NR panels: per pass over as
 * many queries as WSG_WEIGHTS weights cover (every query at the indexer's
 * 7 x 64; one, its weights from the heap, past WSG_WEIGHTS heads), per
 * group of MR keys (group_rows; their rows read in place,
 * in L1 once read; from a bf16 window widened into a small buffer first),
 * per query, per panel of
 * its heads, the MR x NR block over all of K folded through ReLU and the
 * weights into VW lanes per key, whose sum is the key's score. When G is
 * not a multiple of NR, a panel that also holds another query's heads (or
 * the padding past M) runs once for each query, folding only the query's
 * lanes (the reference ran instead: pto-bench indexer, S1 = 16, S2 =
 * 2048, 24 heads, 170 against 1.5 ms; 60 heads, 666 against 3.3). While the
 * first block of a group runs, the next MR rows are prefetched. Q^T (224
 * KiB for 7 queries of 64 heads at K = 128) streams from L2 once per
 * group. Measured against packing k^T and TMATMUL_RELU_WSUM on the same
 * tiles (7 x 64 queries, 16 tiles of 512 keys, two threads at once, median
 * of 40): 95.1 against 93.2 GFLOP/s, the pack included. A file that
 * defines WSUM_KEY_PANELS may take the fast path's scores instead
 * (tileops/mm_avx2.c packs the keys). */
static int mm_TMATMUL_RELU_WSUM_G(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *Qt = a->src[0], *W = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t K = Qt->valid_rows, M = Qt->valid_cols, R = d->valid_rows,
                 N = d->valid_cols, G = M / R;
  const int native = gather_native(Qt, g),  /* bf16 by bf16, as they are */
      bf = g->dtype == PTO_BF16 && !native; /* widened */
  if (!(a->flags & PTO_TF_PACK_B) || a->imm[1] != NR ||
      (Qt->dtype != PTO_F32 && !native) || !table_fast(g) || G < 1 || N < 1)
    return pto__isa_ref(op, a);
#ifdef WSUM_KEY_PANELS
  if (WSUM_KEY_PANELS(a))
    return wsg_causal(a);
#endif
  /* a pass's weights on the stack (past PTO_WSG_WEIGHTS heads, one
   * query's in the plan's scratch, core/isa.c: wsg_scratch), and a bf16
   * group widened to f32 there too past K = PTO_WIDEN_K_STACK; without the
   * scratch, the reference */
  _Alignas(64) float wv_stack[PTO_WSG_WEIGHTS];
  float *wv = wv_stack; /* a pass's weights, contiguous */
  _Alignas(64) float wide_stack[MR * PTO_WIDEN_K_STACK];
  float *wide = wide_stack; /* a bf16 group as f32 */
  const size_t wv_bytes =
      G > PTO_WSG_WEIGHTS ? ((size_t)G * sizeof *wv + 63) / 64 * 64 : 0;
  const size_t wide_bytes =
      bf && K > PTO_WIDEN_K_STACK ? (size_t)MR * K * sizeof *wide : 0;
  if (wv_bytes || wide_bytes) {
    unsigned char *scr = pto__targs_scratch(a, 1, wv_bytes + wide_bytes);
    if (!scr)
      return pto__isa_ref(op, a);
    if (wv_bytes)
      wv = (float *)(void *)scr;
    if (wide_bytes)
      wide = (float *)(void *)(scr + wv_bytes);
  }
  _Alignas(64) float sums[MR * VW];
  _Alignas(64) float wb[NR];    /* a shared panel's weights, 0 past the query */
  _Alignas(64) uint32_t mb[NR]; /* and its lanes of the query: all ones */
  const size_t ldd = d->stride, b_panel = (size_t)NR * Qt->rows,
               es = pto__dtype_bytes(g->dtype),
               row_step = (size_t)g->row_stride * es,
               row_bytes = (size_t)K * es;
  const unsigned char *base = g->base;
  float *Dd = d->data;
  const unsigned char *cur[MR], *nx[MR];
  const float *r[MR];
  const uint32_t per_pass = G > PTO_WSG_WEIGHTS ? 1 : PTO_WSG_WEIGHTS / G;
  for (uint32_t q0 = 0; q0 < R; q0 += per_pass) {
    const uint32_t q1 = R - q0 < per_pass ? R : q0 + per_pass;
    for (uint32_t m = q0 * G; m < q1 * G; m++)
      wv[m - q0 * G] = ((const float *)W->data)[(size_t)m * W->stride];
    for (uint32_t n0 = 0, rows; n0 < N; n0 += rows) {
      rows = group_rows(n0, N);
      const uint32_t n1 = n0 + rows; /* the next group's first key */
      const int more = n1 < N;
      /* past a short group's rows: its first (the kernels read only its
       * rows) */
      for (uint32_t i = 0; i < MR; i++) {
        cur[i] = base + (size_t)(n0 + (i < rows ? i : 0)) * row_step;
        nx[i] = base + (size_t)(more && n1 + i < N ? n1 + i : n0) * row_step;
        r[i] = (const float *)(const void *)cur[i];
      }
      if (bf)
        widen_group(wide, K, cur, rows, nx, more, row_bytes, r);
      for (uint32_t q = q0; q < q1; q++) {
        MM_UNROLL for (int i = 0; i < MR; i++) MM_STORE(sums + i * VW,
                                                        MM_ZERO());
        /* the panels holding the query's heads, columns [c0, c1) */
        const uint32_t c0 = q * G, c1 = c0 + G;
        for (uint32_t p0 = c0 / NR * NR; p0 < c1; p0 += NR) {
          const size_t at = (size_t)(p0 / NR) * b_panel; /* Q^T's panel */
          const unsigned char *const *pf =
              !bf && more && q == q0 && p0 <= c0 ? nx : NULL;
          if (p0 >= c0 && p0 + NR <= c1) {
            GATHER_KERNEL(native, K, cur, r, Qt, at, sums, 0, rows, pf,
                          wv + (p0 - q0 * G), NULL);
            continue;
          }
          /* shared with another query, or the padding past M */
          for (uint32_t j = 0; j < NR; j++) {
            const int in = p0 + j >= c0 && p0 + j < c1;
            wb[j] = in ? wv[p0 + j - q0 * G] : 0.0f;
            mb[j] = in ? UINT32_MAX : 0;
          }
          GATHER_KERNEL(native, K, cur, r, Qt, at, sums, 0, rows, pf, wb,
                        (const float *)(const void *)mb);
        }
        for (uint32_t i = 0; i < rows; i++)
          Dd[(size_t)q * ldd + n0 + i] = MM_HSUM(MM_LOAD(sums + i * VW));
      }
    }
  }
  return wsg_causal(a);
}

/* C[i][0..NR) (i < R) = f_i C[i] (acc; f_i = 1 without scale) + sum_k
 * Ap[k * MR + i] * V[k][0..NR) over K steps, the sum from zero and C[i]
 * added last, its lines fetched at the start: loaded first, the block
 * (O's rows, out of L1 since the last panel of V) held every FMA of the
 * K loop until it came (Zen 3, a block of attention medium, 128 heads x
 * 176 slots, one and two threads, in turns with the kernel loading C
 * first, 15 medians of 200-400: 0.1-2.6% faster). V packed (Bp: V[k] at
 * Bp + k NR, in L1) or each row slice V[k] = v[k] at its own address. Packed,
 * the slice at next[k] is prefetched into L2 at step k when next is given
 * (for the copy of the next NR columns). Read in place, the slice at
 * next[k] (NR f32 from there) is prefetched at step k when next is given,
 * else the slice GB_AHEAD steps on, into L1: the
 * slices of all K steps (64 KiB at 512 slots of 32 f32) do not stay in L1
 * from one panel of A to the next, and no hardware prefetcher follows
 * them. Measured on a Xeon (one block of attention medium, its rows in L2
 * as after TMATMUL_GA, in turns with the kernel without it, 150 pairs):
 * 2-3% faster when the machine is quiet (best 415 against 425 us), 4-11%
 * when a neighbour slows L2 (the median pair); 8 to 32 steps ahead
 * alike. */
#define GB_AHEAD 8
/* the lines of an accumulator row of NR f32 at p, into L1 */
#define GB_FETCH_C(p)                                                          \
  do {                                                                         \
    _mm_prefetch((const char *)(p), _MM_HINT_T0);                              \
    if (NR * sizeof(float) > 64)                                               \
      _mm_prefetch((const char *)(p) + 64, _MM_HINT_T0);                       \
  } while (0)
static inline __attribute__((always_inline)) void
gb_rows(const int R, uint32_t K, const float *restrict Ap,
        const float *restrict Bp, const float *const *v, float *C, size_t ldc,
        int acc, const float *scale, const unsigned char *const *next) {
  MM_V c[MR][NR / VW];
  MM_UNROLL for (int i = 0; i < R; i++) {
    if (acc)
      GB_FETCH_C(C + (size_t)i * ldc);
    MM_UNROLL for (int q = 0; q < NR / VW; q++) c[i][q] = MM_ZERO();
  }
  /* step k with V's slice at vk */
#define GB_STEP(vk)                                                            \
  do {                                                                         \
    MM_V b[NR / VW];                                                           \
    MM_UNROLL for (int q = 0; q < NR / VW; q++) b[q] = MM_LOAD((vk) + q * VW); \
    MM_UNROLL for (int i = 0; i < R; i++) {                                    \
      const MM_V ai = MM_BCAST(Ap + (size_t)k * MR + i);                       \
      MM_UNROLL for (int q = 0; q < NR / VW; q++) c[i][q] =                    \
          MM_FMA(ai, b[q], c[i][q]);                                           \
    }                                                                          \
  } while (0)
  /* the lines of a slice of NR f32 at p */
#define GB_FETCH(p, hint)                                                      \
  do {                                                                         \
    _mm_prefetch((const char *)(p), hint);                                     \
    if (NR * sizeof(float) > 64)                                               \
      _mm_prefetch((const char *)(p) + 64, hint);                              \
  } while (0)
  if (Bp && next) {
    _Pragma("GCC unroll 4") for (uint32_t k = 0; k < K; k++) {
      GB_FETCH(next[k], _MM_HINT_T1);
      GB_STEP(Bp + (size_t)k * NR);
    }
  } else if (Bp) {
    _Pragma("GCC unroll 4") for (uint32_t k = 0; k < K; k++)
        GB_STEP(Bp + (size_t)k * NR);
  } else {
    _Pragma("GCC unroll 4") for (uint32_t k = 0; k < K; k++) {
      if (next)
        GB_FETCH(next[k], _MM_HINT_T0);
      else if (k + GB_AHEAD < K)
        GB_FETCH(v[k + GB_AHEAD], _MM_HINT_T0);
      GB_STEP(v[k]);
    }
  }
#undef GB_FETCH
#undef GB_STEP
  MM_UNROLL for (int i = 0; i < R; i++) {
    const MM_V f = MM_SET1(scale ? scale[i] : 1.0f);
    MM_UNROLL for (int q = 0; q < NR / VW; q++) {
      if (acc)
        c[i][q] = MM_FMA(MM_LOAD(C + (size_t)i * ldc + q * VW), f, c[i][q]);
      MM_STORE(C + (size_t)i * ldc + q * VW, c[i][q]);
    }
  }
}

/* gb_rows for the first `rows` (1..MR) rows of the panel Ap. */
static void kernel_gb(uint32_t K, const float *restrict Ap,
                      const float *restrict Bp, const float *const *v, float *C,
                      size_t ldc, uint32_t rows, int acc, const float *scale,
                      const unsigned char *const *next) {
#define MM_ROWS_CALL(R) gb_rows(R, K, Ap, Bp, v, C, ldc, acc, scale, next)
  MM_ROWS_SWITCH(rows)
#undef MM_ROWS_CALL
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
 *    after the other into a buffer in L1 first, as GEMM packs B. While
 *    the first panel of A runs, the next NR columns' slices are
 *    prefetched into L2, one row per step, so the next copy does not wait
 *    on L3 or DRAM a row at a time. On Zen 3 (one block of 128 heads x
 *    224 slots x 512 columns right after TMATMUL_GA on the same rows, two
 *    threads, in turns with the copy without it, both built alike,
 *    medians of 100-150 over 12 runs): 1.4% faster on average (-2 to
 *    +7%), the rows in L3 or DRAM alike; into L1, or during the second
 *    panel, no better.
 * Invalid slots are left out: their columns of A are copied out first
 * (the valid ones, packed alike, into a buffer) unless they all trail the
 * valid ones, and with none valid dst is only scaled, or zeroed.
 * A partial last NR columns runs the reference's sums. */
static int mm_TMATMUL_GB(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *idx = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t nA = A->valid_cols, M = d->valid_rows, N = d->valid_cols;
  const int bf = g->dtype == PTO_BF16, pack = GB_PACK || bf;
  if (!(a->flags & PTO_TF_PACK_A) || a->imm[0] != MR || A->dtype != PTO_F32 ||
      !table_fast(g) || nA > GB_SLOTS_MAX)
    return pto__isa_ref(op, a);
  const int acc = (a->flags & PTO_TF_ACC) != 0,
            scaled = acc && (a->flags & PTO_TF_ROWSCALE);
  const size_t ldc = d->stride;
  size_t a_panel = (size_t)MR * A->stride;
  _Alignas(64) float slices[GB_KC * NR]; /* packed: a pass's slices */
  const unsigned char *row[GB_SLOTS_MAX], *next[GB_SLOTS_MAX];
  const float *v[GB_SLOTS_MAX];
  uint32_t vt[GB_SLOTS_MAX]; /* the valid slots, in order; row[] theirs */
  const uint32_t n = valid_slots(idx, g, nA, vt, row);
  float *Cd = d->data;
  if (!n) { /* dst = dst * src2 (ROWSCALE), dst (ACC) or 0 */
    if (scaled)
      scale_rows(a);
    for (uint32_t m = 0; !acc && m < M; m++)
      memset(Cd + (size_t)m * ldc, 0, N * sizeof(float));
    return PTO_OK;
  }
  const float *Ad = A->data; /* A's panels, a_panel apart */
  float *ac = NULL; /* the valid slots' columns of A: the plan's scratch */
  if (vt[n - 1] != n - 1) {
    if (!(ac = pto__targs_scratch(
              a, 1, (M + MR - 1) / MR * (size_t)MR * n * sizeof(float))))
      return pto__isa_ref(op, a);
    for (uint32_t p = 0; p < (M + MR - 1) / MR; p++)
      for (uint32_t k = 0; k < n; k++)
        memcpy(ac + ((size_t)p * n + k) * MR,
               Ad + (size_t)p * a_panel + (size_t)vt[k] * MR,
               MR * sizeof(float));
    Ad = ac;
    a_panel = (size_t)MR * n;
  }
  const uint32_t full = N / NR * NR, kc = pack ? GB_KC : n;
  const size_t es = pto__dtype_bytes(g->dtype);
  for (uint32_t n0 = 0; n0 < full; n0 += NR) {
    const int more = n0 + NR < full;
    for (uint32_t k0 = 0; k0 < n; k0 += kc) {
      const uint32_t k1 = n - k0 < kc ? n : k0 + kc;
      for (uint32_t t = k0; t < k1; t++) {
        float *s = slices + (size_t)(t - k0) * NR;
        if (more)
          next[t] = row[t] + es * (n0 + NR);
        if (!pack)
          v[t] = (const float *)(const void *)row[t] + n0;
        else if (bf)
          pto__widen_bf16(s, row[t] + 2 * (size_t)n0, NR);
        else
          MM_UNROLL for (int q = 0; q < NR / VW; q++)
              MM_STORE(s + q * VW, MM_LOAD((const float *)(const void *)row[t] +
                                           n0 + q * VW));
      }
      for (uint32_t m0 = 0; m0 < M; m0 += MR) {
        const uint32_t rows = M - m0 < MR ? M - m0 : MR;
        float f[MR];
        for (uint32_t i = 0; i < MR; i++)
          f[i] = scaled && i < rows ? row_scale(a, m0 + i) : 1.0f;
        kernel_gb(k1 - k0, Ad + (size_t)(m0 / MR) * a_panel + (size_t)k0 * MR,
                  pack ? slices : NULL, v + k0, Cd + (size_t)m0 * ldc + n0, ldc,
                  rows, acc || k0 > 0, scaled && k0 == 0 ? f : NULL,
                  more && m0 == 0 ? next + k0 : NULL);
      }
    }
  }
  for (uint32_t m = 0; m < M && full < N; m++) { /* the last columns */
    const float *Am = Ad + (size_t)(m / MR) * a_panel + m % MR;
    const float f = scaled ? row_scale(a, m) : 1.0f;
    for (uint32_t c = full; c < N; c++) {
      float *o = Cd + (size_t)m * ldc + c, sum = acc ? *o * f : 0.0f;
      for (uint32_t t = 0; t < n; t++) {
        const float p =
            Am[(size_t)t * MR] * pto__to_f32(g->dtype, row[t] + c * es);
        sum += p;
      }
      *o = sum;
    }
  }
  return PTO_OK;
}

#endif /* PTO_TILEOPS_MM_GATHER_H */
