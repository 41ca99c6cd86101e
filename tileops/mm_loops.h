/* tileops/mm_loops.h (internal): what every tileops/mm_<isa>.c shares
 * around its micro-kernel. Included once by each of them, after it defines
 * MR, NR (its panel widths), KC (k steps per pass over a B panel) and
 * KERNEL(K, Ap, Bp, C, ldc, rows, cols, acc, pf, npf): C[0..rows)[0..cols)
 * = (acc ? C : 0) + Ap x Bp over K steps, with Ap[k * MR + i] = A(i, k)
 * and Bp[k * NR + j] = B(k, j), a full MR x NR block computed and only the
 * C loads and stores masked, and the npf (<= K) lines pf[] prefetched into
 * L2 spread over the k loop (pf_start, pf_due). So the loops compile with
 * that file's ISA flags.
 *
 * The loop order is BLIS's: per KC slice of k, each NR panel of B stays in
 * L1 while the MR panels of A stream from L2 past it. */
#ifndef PTO_TILEOPS_MM_LOOPS_H
#define PTO_TILEOPS_MM_LOOPS_H

#include <stdint.h>

#include "tileops/tileops.h"

#define PF_MAX 64 /* lines of the next loads a block prefetches, at most */

/* Prefetching the windows the task loads next (pto_targs.ahead) while the
 * product runs, so the packer that follows reads them from L2 instead of
 * waiting on L3 or DRAM: a cursor over their cache lines, run by run along
 * whichever axis is contiguous (other windows are skipped). */
typedef struct ahead_lines {
  const pto_gview *g;
  uint32_t n, w;          /* windows, current window */
  int64_t outer, o;       /* a window is outer runs of inner bytes; run o */
  int64_t ostride, inner; /* bytes */
  uintptr_t line, last;   /* the current run's next and last lines */
} ahead_lines;

static int ahead_window(ahead_lines *c) {
  for (; c->w < c->n; c->w++) {
    const pto_gview *g = &c->g[c->w];
    const int64_t es = (int64_t)pto_dtype_size(g->dtype);
    c->o = 0;
    if (g->rows < 1 || g->cols < 1)
      continue;
    if (g->col_stride == 1) {
      c->outer = g->rows;
      c->ostride = g->row_stride * es;
      c->inner = g->cols * es;
      return 1;
    }
    if (g->row_stride == 1) {
      c->outer = g->cols;
      c->ostride = g->col_stride * es;
      c->inner = g->rows * es;
      return 1;
    }
  }
  return 0;
}

/* Lines in all windows (at most: a run may straddle one more); leaves the
 * cursor at the first. */
static int64_t ahead_count(ahead_lines *c) {
  int64_t lines = 0;
  for (c->w = 0; ahead_window(c); c->w++)
    lines += c->outer * ((c->inner + 63) / 64 + 1);
  c->w = 0;
  c->line = 1, c->last = 0; /* no run yet */
  ahead_window(c);
  return lines;
}

/* The next line to fetch, NULL past the last window. */
static const char *ahead_line(ahead_lines *c) {
  if (c->line > c->last) {
    if (c->w >= c->n)
      return NULL;
    const uintptr_t r =
        (uintptr_t)c->g[c->w].base + (uintptr_t)(c->o * c->ostride);
    c->line = r & ~(uintptr_t)63;
    c->last = (r + (uintptr_t)c->inner - 1) & ~(uintptr_t)63;
    if (++c->o == c->outer) {
      c->w++;
      ahead_window(c);
    }
  }
  const char *l = (const char *)c->line;
  c->line += 64;
  return l;
}

/* npf prefetches into L2 spread evenly over a kernel's K steps of k:
 * pf_due(&s, k) once per step. */
typedef struct pf_spread {
  const char *const *pf;
  uint32_t left, gap, due;
} pf_spread;

static inline pf_spread pf_start(const char *const *pf, uint32_t npf,
                                 uint32_t K) {
  pf_spread s = {pf, npf, npf ? K / npf : 0, 0};
  return s;
}

static inline void pf_due(pf_spread *s, uint32_t k) {
  if (s->left && k == s->due) {
    _mm_prefetch(*s->pf++, _MM_HINT_T1);
    s->left--;
    s->due += s->gap;
  }
}

/* Touches the lines of a rows x cols block of C, row stride ldc. */
static inline void prefetch_c(const float *C, size_t ldc, uint32_t rows,
                              uint32_t cols) {
  for (uint32_t i = 0; i < rows; i++)
    for (uint32_t j = 0; j < cols; j += 16)
      _mm_prefetch((const char *)(C + (size_t)i * ldc + j), _MM_HINT_T0);
}

/* Packed f32 operands with panels MR x NR: loops around the kernel. The
 * next loads are prefetched during the last pass over k, when the first
 * passes' parts of the operands are dead and L2 has room for them: each
 * block takes its share of their lines, which the kernel spreads over its
 * k loop (a burst would fill the miss queues its own A panel needs). */
static void matmul_packed(const pto_targs *a, int acc) {
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *B = a->src[1];
  const uint32_t M = d->valid_rows, N = d->valid_cols, K = A->valid_cols;
  const size_t ldc = d->stride;
  const size_t a_panel = (size_t)MR * A->stride, b_panel = (size_t)NR * B->rows;
  const float *Ad = A->data, *Bd = B->data;
  float *Cd = d->data;
  ahead_lines ah = {a->ahead, a->n_ahead, 0, 0, 0, 0, 0, 0, 0};
  const int64_t blocks = (int64_t)((N + NR - 1) / NR) * ((M + MR - 1) / MR);
  const int64_t per_block = ah.n ? (ahead_count(&ah) + blocks - 1) / blocks : 0;
  const char *pf[PF_MAX];
  for (uint32_t k0 = 0; k0 < K; k0 += KC) {
    const uint32_t kc = K - k0 < KC ? K - k0 : KC;
    const int acc_k = acc || k0 > 0;
    int64_t share = k0 + KC >= K ? per_block : 0;
    share = share < kc ? share : kc;
    share = share < PF_MAX ? share : PF_MAX;
    for (uint32_t n0 = 0; n0 < N; n0 += NR) {
      const float *Bp = Bd + (size_t)(n0 / NR) * b_panel + (size_t)k0 * NR;
      const uint32_t cols = N - n0 < NR ? N - n0 : NR;
      for (uint32_t m0 = 0; m0 < M; m0 += MR) {
        const float *Ap = Ad + (size_t)(m0 / MR) * a_panel + (size_t)k0 * MR;
        const uint32_t rows = M - m0 < MR ? M - m0 : MR;
        /* the next block's C into L1 while this one computes */
        if (m0 + MR < M)
          prefetch_c(Cd + (size_t)(m0 + MR) * ldc + n0, ldc,
                     M - m0 - MR < MR ? M - m0 - MR : MR, cols);
        uint32_t npf = 0;
        while (npf < share && (pf[npf] = ahead_line(&ah)) != NULL)
          npf++;
        KERNEL(kc, Ap, Bp, Cd + (size_t)m0 * ldc + n0, ldc, rows, cols, acc_k,
               pf, npf);
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
  matmul_packed(a, 1);
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
  return pto__tload_pack(op, a);
}

/* Installs the entries above and the panel widths in t. */
static void mm_install(pto_isa_table *t) {
  t->fn[PTO_OP_TMATMUL] = mm_TMATMUL;
  t->fn[PTO_OP_TMATMUL_ACC] = mm_TMATMUL_ACC;
  tload_unpacked = t->fn[PTO_OP_TLOAD];
  t->fn[PTO_OP_TLOAD] = mm_TLOAD;
  /* results leave L0C through TSTORE: a fast copy unless the vector
   * overrides (tileops/vec_<isa>.c) already gave the table one */
  if (t->fn[PTO_OP_TSTORE] == pto__isa_scalar.fn[PTO_OP_TSTORE])
    t->fn[PTO_OP_TSTORE] = pto__tstore_f32;
  t->mm_mr = MR;
  t->mm_nr = NR;
}

#endif /* PTO_TILEOPS_MM_LOOPS_H */
