/* tileops: attention's instructions' drivers (rows of cases[] in
 * test_tileops.c), and a sparse attention step through them and TMATMUL_GA
 * and TMATMUL_GB. */
#include "tests/tileops_test.h"

/* ---- drivers: attention's instructions ------------------------------------
 * TSOFTMAXONLINE and TSOFTMAXFINAL take exps, logs and sums: each value
 * within a relative 4e-6 (a few ulp of vf_exp plus a sum of up to 40
 * positive terms in another order) of the double-precision result, every
 * untouched byte still the sentinel. */

/* An index tile of n slots (1 x n valid in 1 x cap), every fifth invalid
 * (-1, rows, INT32_MIN, or rows + 3 in turn), the rest rows apart. */
static pto_tile *index_tile(rng *r, uint32_t n, uint32_t cap, int32_t rows) {
  pto_tile *t = tile_new(PTO_I32, 1, cap, 1, n, 0x11);
  static const int32_t bad[] = {-1, 0, INT32_MIN, 3};
  for (uint32_t c = 0; c < n; c++) {
    int32_t v = (int32_t)below(r, (uint32_t)rows);
    if (c % 5 == 4)
      v = bad[(c / 5) % 4] + (bad[(c / 5) % 4] >= 0 ? rows : 0);
    seti(t, 0, c, v);
  }
  return t;
}

/* Whether slot c (the index tile's valid region, row-major) is valid. */
static int index_ok(const pto_tile *ix, uint32_t c, int64_t rows) {
  int32_t v = geti(ix, c / ix->valid_cols, c % ix->valid_cols);
  return v >= 0 && v < rows;
}

/* The same n indices as a 4 x n/4 tile (in a 5 x (n/4 + 2) one, its
 * padding an invalid index). */
static pto_tile *index_tile_2d(const pto_tile *ix, uint32_t n) {
  pto_tile *t = tile_new(PTO_I32, 5, n / 4 + 2, 4, n / 4, 0xff);
  for (uint32_t c = 0; c < n; c++)
    seti(t, c / (n / 4), c % (n / 4), geti(ix, 0, c));
  return t;
}

/* within 4e-6 relative, or both the same infinity or zero */
static void expect_close(const char *ctx, const char *what, uint32_t r,
                         uint32_t c, double got, double want) {
  int ok = isinf(want) ? got == want
                       : fabs(got - want) <= 4e-6 * fabs(want) + 1e-37;
  cr_assert(ok, "%s: %s (%u,%u) is %.9g, expected %.9g", ctx, what, r, c, got,
            want);
}

/* TSOFTMAXONLINE on scores M x N, and with PTO_TF_TRANS_A on the same
 * scores stored transposed (N x M: a slot per row, as TMATMUL_GA leaves
 * them; then the index tile is 2-D where N allows): one oracle for both. */
void drive_smonline(int op, const oracle_case *oc) {
  (void)oc;
  /* M, N, panel width */
  static const uint32_t dims[][3] = {{8, 16, 6},   {13, 37, 6}, {1, 1, 1},
                                     {5, 40, 4},   {12, 9, 12}, {20, 12, 6},
                                     {17, 24, 16}, {19, 5, 6}};
  static const double scales[] = {0.125, 1.0};
  for (int di = 0; di < 8; di++)
    for (int fl = 0; fl < 8; fl++) { /* continue a state; scale; transposed */
      const uint32_t M = dims[di][0], N = dims[di][1], w = dims[di][2];
      const int cont = fl & 1, tr = fl >> 2;
      const double scale = scales[(fl >> 1) & 1];
      const int32_t rows = 40;
      rng r = rng_seed(seed_of(op, di, fl, 0));
      pto_tile *S = tr ? src_new(&r, PTO_F32, N + 1, M + 3, N, M, G_MM)
                       : src_new(&r, PTO_F32, M + 1, N + 3, M, N, G_MM);
      pto_tile *ix = index_tile(&r, N, N + 1, rows);
      if (di == 4 || di == 7) /* a block with nothing valid */
        for (uint32_t c = 0; c < N; c++)
          seti(ix, 0, c, -7);
      if (tr && N % 4 == 0)
        ix = index_tile_2d(ix, N);
      pto_tile *prev = tile_new(PTO_F32, M, 8, M, 3, 0x5b);
      for (uint32_t i = 0; i < M; i++) { /* some rows start empty */
        const int empty = i % 4 == 3;
        setf(prev, i, 0, 1.0f);
        setf(prev, i, 1, empty ? -INFINITY : (float)uniform(&r, -3, 3));
        setf(prev, i, 2, empty ? 0.0f : (float)uniform(&r, 0.5, 20));
      }
      const uint32_t mp = (M + w - 1) / w * w;
      pto_tile *P = dst_new(PTO_F32, mp + 1, N + 2, M, N);
      pto_tile *st = dst_new(PTO_F32, M + 2, 4, M, 3);
      pto_tile *sentinel = tile_clone(P), *st_want = tile_clone(st);
      char ctx[128];
      snprintf(ctx, sizeof ctx, "%s M=%u N=%u w=%u scale %g%s%s",
               pto__insn_name(op), M, N, w, scale, cont ? " continued" : "",
               tr ? " transposed" : "");
      pto_targs a = {0};
      a.dst[0] = P;
      a.dst[1] = st;
      a.src[0] = S;
      a.src[1] = ix;
      a.src[2] = cont ? prev : NULL;
      a.flags = (cont ? PTO_TF_ACC : 0) | (tr ? PTO_TF_TRANS_A : 0);
      a.s = scale;
      a.imm[0] = (int32_t)w;
      a.imm[1] = rows;
      run_ok(op, &a, ctx);
#define SCORE(i, c) (tr ? getf(S, c, i) : getf(S, i, c))
      unsigned char *touched = keep(calloc((size_t)P->rows * P->stride, 1));
      for (uint32_t i = 0; i < mp; i++) {
        double m = cont ? getf(prev, i % M, 1) : -INFINITY;
        double l = cont ? getf(prev, i % M, 2) : 0.0;
        double mx = m, sum = 0;
        for (uint32_t c = 0; i < M && c < N; c++)
          if (index_ok(ix, c, rows)) {
            double x = (double)(SCORE(i, c) * (float)scale);
            mx = x > mx ? x : mx;
          }
        for (uint32_t c = 0; c < N; c++) {
          size_t at = pto__pack_a_index(P, w, i, c);
          double e = 0;
          if (i < M && mx != -INFINITY && index_ok(ix, c, rows))
            e = exp((double)(SCORE(i, c) * (float)scale) - mx);
          sum += e;
          touched[at] = 1;
          expect_close(ctx, "P", i, c, ((float *)P->data)[at], e);
        }
        if (i >= M)
          continue;
        const double alpha = mx == -INFINITY ? 1.0 : exp(m - mx);
        expect_close(ctx, "alpha", i, 0, getf(st, i, 0), alpha);
        expect_close(ctx, "max", i, 1, getf(st, i, 1), mx);
        expect_close(ctx, "sum", i, 2,
                     getf(st, i, 2), mx == -INFINITY ? l : l * alpha + sum);
      }
#undef SCORE
      for (size_t x = 0; x < (size_t)P->rows * P->stride; x++)
        cr_assert(touched[x] || ((uint32_t *)P->data)[x] ==
                                    ((uint32_t *)sentinel->data)[x],
                  "%s: P element %zu outside the panels was written", ctx, x);
      for (uint32_t i = 0; i < st->rows; i++) /* beyond (alpha, m, l) */
        for (uint32_t c = i < M ? 3 : 0; c < st->stride; c++)
          cr_assert(elem_same(PTO_F32, el(st, i, c), el(st_want, i, c)),
                    "%s: state (%u,%u) outside the valid region written", ctx,
                    i, c);
    }
}

void drive_smfinal(int op, const oracle_case *oc) {
  (void)oc;
  static const uint32_t dims[][2] = {{8, 16}, {13, 37}, {1, 1}, {5, 70}};
  for (int di = 0; di < 4; di++) {
    const uint32_t M = dims[di][0], N = dims[di][1];
    rng r = rng_seed(seed_of(op, di, 0, 0));
    pto_tile *O = src_new(&r, PTO_F32, M + 1, N + 1, M, N, G_MM);
    pto_tile *st = tile_new(PTO_F32, M, 4, M, 3, 0x33);
    for (uint32_t i = 0; i < M; i++) {
      const int empty = i % 3 == 2;
      setf(st, i, 0, 0.5f);
      setf(st, i, 1, empty ? -INFINITY : (float)uniform(&r, -5, 5));
      setf(st, i, 2, empty ? 0.0f : (float)uniform(&r, 1, 600));
    }
    pto_tile *Y = dst_new(PTO_F32, M + 2, N + 4, M, N);
    pto_tile *L = dst_new(PTO_F32, M + 1, 2, M, 1);
    pto_tile *wy = tile_clone(Y), *wl = tile_clone(L);
    double *vy = dbuf(Y), *ty = dbuf(Y), *vl = dbuf(L), *tl = dbuf(L);
    for (uint32_t i = 0; i < M; i++) {
      const double m = getf(st, i, 1), l = getf(st, i, 2);
      for (uint32_t c = 0; c < N; c++) {
        size_t at = (size_t)i * Y->stride + c;
        vy[at] = l > 0 ? getf(O, i, c) / l : 0.0;
        ty[at] = 4e-7 * fabs(vy[at]);
      }
      /* logf's error is relative to ln(l), m's exact: cancellation in the
       * sum makes the bound relative to both terms */
      vl[(size_t)i * L->stride] = l > 0 ? m + log(l) : INFINITY;
      tl[(size_t)i * L->stride] = l > 0 ? 2e-7 * (fabs(m) + fabs(log(l))) : 0;
    }
    char ctx[96];
    snprintf(ctx, sizeof ctx, "%s M=%u N=%u", pto__insn_name(op), M, N);
    pto_targs a = {0};
    a.dst[0] = Y;
    a.dst[1] = L;
    a.src[0] = O;
    a.src[1] = st;
    run_ok(op, &a, ctx);
    expect_tile(ctx, Y, wy, vy, ty);
    expect_tile(ctx, L, wl, vl, tl);
  }
}

/* ---- the sparse attention step the new instructions chain into ------------
 * Per block of slots: S^T = TMATMUL_GA (the selected rows of the table
 * times Q^T, packed as PACK_B), TSOFTMAXONLINE on S^T (PTO_TF_TRANS_A,
 * continuing the state from the second block on) into P packed as PACK_A,
 * then TMATMUL_GB (P x the selected rows' first dv columns, PTO_TF_ACC |
 * PTO_TF_ROWSCALE by alpha from the second block on); TSOFTMAXFINAL at the
 * end. The table's panel widths (the fast paths) and odd ones; a block with
 * no valid slot first, in the middle, or everywhere (a row with no valid
 * slot at all: Y row 0, lse +inf). Against softmax(scale Q G^T) V in double
 * over every valid slot of every block. */
Test(tileops, sparse_attention_chain, .fini = free_all) {
  enum { M = 13, D = 72, DV = 37, T = 50, NB = 20, BLOCKS = 3 };
  const pto_isa_table *Tb = pto__isa_active();
  const uint32_t widths[][2] = {{Tb->mm_mr, Tb->mm_nr}, {5, 7}};
  const double scale = 0.125;
  for (int wi = 0; wi < 2; wi++)
    for (int empty = -1; empty <= BLOCKS; empty++) { /* BLOCKS: all empty */
      const uint32_t mr = widths[wi][0], nr = widths[wi][1];
      char ctx[160];
      snprintf(ctx, sizeof ctx,
               "sparse attention on %s: M=%d D=%d dv=%d, %d blocks of %d "
               "slots, panels %ux%u, empty block %d",
               Tb->name, M, D, DV, BLOCKS, NB, mr, nr, empty);
      rng r = rng_seed(seed_of(PTO_OP_TMATMUL_GA, 77, wi, empty + 1));
      gbuf tb = gbuf_gen(&r, PTO_F32, T, D, 0, G_MM);
      double q[M][D];
      for (int i = 0; i < M; i++)
        for (int k = 0; k < D; k++)
          q[i][k] = (float)uniform(&r, -2, 2);
      /* Q^T (D x M) packed as PACK_B in panels of nr */
      const uint32_t mpad = (M + nr - 1) / nr * nr;
      pto_tile *qt = tile_new(PTO_F32, D + 1, mpad, D, M, 0xff);
      for (uint32_t k = 0; k < D; k++)
        for (uint32_t j = 0; j < mpad; j++)
          ((float *)qt->data)[pto__pack_b_index(qt, nr, k, j)] =
              j < M ? (float)q[j][k] : 0.0f;
      pto_tile *ix[BLOCKS];
      for (int b = 0; b < BLOCKS; b++) {
        ix[b] = index_tile(&r, NB, NB + 2, T);
        if (b == empty || empty == BLOCKS)
          for (uint32_t c = 0; c < NB; c++)
            seti(ix[b], 0, c, c % 2 ? -1 : T + (int32_t)c);
      }
      pto_tile *st_t = dst_new(PTO_F32, NB + 1, M + 3, NB, M);
      pto_tile *P = dst_new(PTO_F32, (M + mr - 1) / mr * mr, NB + 2, M, NB);
      pto_tile *state[2] = {dst_new(PTO_F32, M, 4, M, 3),
                            dst_new(PTO_F32, M, 4, M, 3)};
      pto_tile *O = dst_new(PTO_F32, M + 1, DV + 3, M, DV);
      for (int b = 0; b < BLOCKS; b++) {
        pto_targs a = {0};
        a.dst[0] = st_t;
        a.src[0] = ix[b];
        a.src[1] = qt;
        a.g = tb.g;
        a.flags = PTO_TF_PACK_B;
        a.imm[1] = (int32_t)nr;
        run_ok(PTO_OP_TMATMUL_GA, &a, ctx);
        pto_targs o = {0};
        o.dst[0] = P;
        o.dst[1] = state[b % 2];
        o.src[0] = st_t;
        o.src[1] = ix[b];
        o.src[2] = b ? state[(b + 1) % 2] : NULL;
        o.flags = PTO_TF_TRANS_A | (b ? PTO_TF_ACC : 0);
        o.s = scale;
        o.imm[0] = (int32_t)mr;
        o.imm[1] = T;
        run_ok(PTO_OP_TSOFTMAXONLINE, &o, ctx);
        pto_targs v = {0};
        v.dst[0] = O;
        v.src[0] = P;
        v.src[1] = ix[b];
        v.src[2] = b ? state[b % 2] : NULL;
        v.g = tb.g;
        v.flags = PTO_TF_PACK_A | (b ? PTO_TF_ACC | PTO_TF_ROWSCALE : 0);
        v.imm[0] = (int32_t)mr;
        run_ok(PTO_OP_TMATMUL_GB, &v, ctx);
      }
      pto_tile *Y = dst_new(PTO_F32, M + 2, DV + 1, M, DV);
      pto_tile *L = dst_new(PTO_F32, M + 1, 2, M, 1);
      pto_tile *wy = tile_clone(Y), *wl = tile_clone(L);
      pto_targs f = {0};
      f.dst[0] = Y;
      f.dst[1] = L;
      f.src[0] = O;
      f.src[1] = state[(BLOCKS - 1) % 2];
      run_ok(PTO_OP_TSOFTMAXFINAL, &f, ctx);
      double *vy = dbuf(Y), *ty = dbuf(Y), *vl = dbuf(L), *tl = dbuf(L);
      for (uint32_t i = 0; i < M; i++) {
        double x[BLOCKS * NB], mx = -INFINITY, l = 0;
        for (int b = 0; b < BLOCKS; b++)
          for (uint32_t t = 0; t < NB; t++) {
            double dot = -INFINITY;
            if (index_ok(ix[b], t, T)) {
              dot = 0;
              for (uint32_t k = 0; k < D; k++)
                dot += q[i][k] *
                       value_of(PTO_F32, gat(&tb.g, geti(ix[b], 0, t), k));
              dot *= scale;
            }
            x[b * NB + t] = dot;
            mx = dot > mx ? dot : mx;
          }
        for (int s = 0; s < BLOCKS * NB; s++)
          l += mx == -INFINITY ? 0 : exp(x[s] - mx);
        for (uint32_t c = 0; c < DV; c++) {
          double y = 0, mag = 0;
          for (int s = 0; s < BLOCKS * NB && l > 0; s++) {
            if (x[s] == -INFINITY)
              continue;
            const double p = exp(x[s] - mx) / l,
                         val = value_of(
                             PTO_F32,
                             gat(&tb.g, geti(ix[s / NB], 0, s % NB), c));
            y += p * val;
            mag += fabs(p * val);
          }
          vy[(size_t)i * Y->stride + c] = y;
          ty[(size_t)i * Y->stride + c] = 1e-4 * mag + 1e-6;
        }
        vl[(size_t)i * L->stride] = l > 0 ? mx + log(l) : INFINITY;
        tl[(size_t)i * L->stride] =
            l > 0 ? 1e-5 * (fabs(mx) + log(l)) + 1e-5 : 0;
      }
      expect_tile(ctx, Y, wy, vy, ty);
      expect_tile(ctx, L, wl, vl, tl);
      free_all();
    }
}
