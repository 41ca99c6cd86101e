/* tileops: TSORT32, TMRGSORT, TTOPK and TMRGTOPK: their oracle and
 * drivers (rows of cases[] in test_tileops.c), and their SIMD stress on
 * every table this CPU runs. */
#include "tests/tileops_test.h"

/* ---- drivers: sorts
 * ---------------------------------------------------------------- */

typedef struct pair {
  float v;
  int32_t i;
} pair;

/* NaN last; larger value first (-0 == +0); then smaller index. */
static int o_sort_cmp(const void *pa, const void *pb) {
  const pair *a = pa, *b = pb;
  int an = isnan(a->v) != 0, bn = isnan(b->v) != 0;
  if (an != bn)
    return an ? 1 : -1;
  if (!an && a->v > b->v)
    return -1;
  if (!an && a->v < b->v)
    return 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Sorts columns [c0, c1) of row i of (v, ix) into (dv, dix). */
static void o_sort_range(const pto_tile *v, const pto_tile *ix, pto_tile *dv,
                         pto_tile *dix, uint32_t i, uint32_t c0, uint32_t c1) {
  pair p[512];
  cr_assert(c1 - c0 <= 512);
  for (uint32_t c = c0; c < c1; c++) {
    p[c - c0].v = getf(v, i, c);
    p[c - c0].i = geti(ix, i, c);
  }
  qsort(p, c1 - c0, sizeof p[0], o_sort_cmp);
  for (uint32_t c = c0; c < c1; c++) {
    setf(dv, i, c, p[c - c0].v);
    seti(dix, i, c, p[c - c0].i);
  }
}

/* Values with many ties, and distinct indices (a shuffled row of ids). */
static void sort_inputs(rng *r, const shape *s, pto_tile **v, pto_tile **ix) {
  *v = src_new(r, PTO_F32, s->rows, s->cols, s->vr, s->vc, G_SORT);
  *ix = src_new(r, PTO_I32, s->rows, s->cols, s->vr, s->vc, G_F32);
  for (uint32_t i = 0; i < s->vr; i++) {
    for (uint32_t j = 0; j < s->vc; j++)
      seti(*ix, i, j, (int32_t)(i * 1000 + j) - 500);
    for (uint32_t j = s->vc; j-- > 1;) {
      uint32_t k = below(r, j + 1);
      int32_t t = geti(*ix, i, j);
      seti(*ix, i, j, geti(*ix, i, k));
      seti(*ix, i, k, t);
    }
  }
}

static const shape sort_shapes[] = {{4, 100, 3, 77},
                                    {2, 64, 2, 64},
                                    {1, 16, 1, 5},
                                    {16, 48, 13, 37},
                                    {1, 1, 1, 1}};

void drive_sort32(int op, const oracle_case *oc) {
  (void)oc;
  for (int si = 0; si < 5; si++)
    for (int inplace = 0; inplace < 2; inplace++) {
      const shape *s = &sort_shapes[si];
      rng r = rng_seed(seed_of(op, si, inplace, 0));
      pto_tile *v, *ix;
      sort_inputs(&r, s, &v, &ix);
      pto_tile *dv = inplace ? tile_clone(v)
                             : dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *di = inplace ? tile_clone(ix)
                             : dst_new(PTO_I32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t c = 0; c < s->vc; c += 32)
          o_sort_range(v, ix, wv, wi, i, c, c + 32 < s->vc ? c + 32 : s->vc);
      const char *ctx = ctx_of(op, inplace ? "in place" : "", PTO_F32, s);
      pto_targs a = {0};
      a.dst[0] = dv;
      a.dst[1] = di;
      a.src[0] = inplace ? dv : v;
      a.src[1] = inplace ? di : ix;
      run_ok(op, &a, ctx);
      expect_tile(ctx, dv, wv, NULL, NULL);
      expect_tile(ctx, di, wi, NULL, NULL);
    }
}

void drive_mrgsort(int op, const oracle_case *oc) {
  (void)oc;
  static const int32_t runs[] = {1, 5, 32};
  for (int si = 0; si < 5; si++)
    for (int ri = 0; ri < 3; ri++)
      for (int ways = 2; ways <= 4; ways++) {
        const shape *s = &sort_shapes[si];
        int32_t run = runs[ri];
        rng r = rng_seed(seed_of(op, si, ri, ways));
        pto_tile *v, *ix;
        sort_inputs(&r, s, &v, &ix);
        /* make every run sorted (the instruction's precondition) */
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t c = 0; c < s->vc; c += (uint32_t)run)
            o_sort_range(v, ix, v, ix, i, c,
                         c + (uint32_t)run < s->vc ? c + (uint32_t)run : s->vc);
        pto_tile *dv = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *di = dst_new(PTO_I32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
        /* merging sorted runs of distinct keys = sorting the group */
        uint32_t group = (uint32_t)run * (uint32_t)ways;
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t c = 0; c < s->vc; c += group)
            o_sort_range(v, ix, wv, wi, i, c,
                         c + group < s->vc ? c + group : s->vc);
        char what[48];
        snprintf(what, sizeof what, "runs of %d, %d-way", run, ways);
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.dst[0] = dv;
        a.dst[1] = di;
        a.src[0] = v;
        a.src[1] = ix;
        a.imm[0] = run;
        a.imm[1] = ways;
        run_ok(op, &a, ctx);
        expect_tile(ctx, dv, wv, NULL, NULL);
        expect_tile(ctx, di, wi, NULL, NULL);
      }
}

/* ---- top-k: TTOPK and TMRGTOPK ---------------------------------------------
 * The oracle sorts every entry of a row with qsort (o_sort_cmp, or with the
 * masked mode's -inf entries left out) and keeps the first kk, padding with
 * (-inf, -1) in the masked mode. */

/* Sorts n pairs, the masked mode's -inf entries dropped first; returns how
 * many are left. */
static uint32_t o_rank(pair *p, uint32_t n, int masked) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!(masked && p[i].v == -INFINITY))
      p[m++] = p[i];
  qsort(p, m, sizeof *p, o_sort_cmp);
  return m;
}

/* Writes the first kk of n ranked pairs (then padding) to row i. */
static void o_emit(pto_tile *dv, pto_tile *di, uint32_t i, const pair *p,
                   uint32_t n, uint32_t kk) {
  for (uint32_t j = 0; j < kk; j++) {
    setf(dv, i, j, j < n ? p[j].v : -INFINITY);
    seti(di, i, j, j < n ? p[j].i : -1);
  }
}

/* Top-k inputs: sort values (ties, +-0, +-inf, NaN), and in the masked
 * tests about a third -inf (excluded), some rows wholly. */
static pto_tile *topk_values(rng *r, uint32_t rows, uint32_t cols,
                             uint32_t vr, uint32_t vc, int masked) {
  pto_tile *v = src_new(r, PTO_F32, rows, cols, vr, vc, G_SORT);
  for (uint32_t i = 0; masked && i < vr; i++)
    for (uint32_t j = 0; j < vc; j++)
      if (i == 1 || below(r, 3) == 0)
        setf(v, i, j, -INFINITY);
  return v;
}

void drive_topk(int op, const oracle_case *oc) {
  (void)oc;
  static const int32_t bases[] = {0, 1000, -7, INT32_MAX};
  for (int si = 0; si < 5; si++)
    for (int masked = 0; masked < 2; masked++)
      for (int ki = 0; ki < 4; ki++) {
        const shape *s = &sort_shapes[si];
        const uint32_t kks[4] = {1, (s->vc + 1) / 2, s->vc, s->vc + 5};
        const uint32_t kk = kks[ki];
        if (!masked && kk > s->vc)
          continue;
        rng r = rng_seed(seed_of(op, si, masked, ki));
        pto_tile *v = topk_values(&r, s->rows, s->cols, s->vr, s->vc, masked);
        int32_t base = bases[(si + ki) % 4];
        if (base == INT32_MAX) /* the largest index is INT32_MAX */
          base = INT32_MAX - (int32_t)s->vc + 1;
        const uint32_t cap = kk + 3;
        pto_tile *dv = dst_new(PTO_F32, s->rows, cap, s->vr, kk);
        pto_tile *di = dst_new(PTO_I32, s->rows, cap, s->vr, kk);
        pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
        pair *p = keep(malloc(s->vc * sizeof *p));
        for (uint32_t i = 0; i < s->vr; i++) {
          for (uint32_t c = 0; c < s->vc; c++) {
            p[c].v = getf(v, i, c);
            p[c].i = (int32_t)((int64_t)base + c);
          }
          o_emit(wv, wi, i, p, o_rank(p, s->vc, masked), kk);
        }
        char what[64];
        snprintf(what, sizeof what, "k %u of %u, base %d%s", kk, s->vc, base,
                 masked ? ", masked" : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.dst[0] = dv;
        a.dst[1] = di;
        a.src[0] = v;
        a.imm[0] = base;
        a.imm[1] = masked;
        run_ok(op, &a, ctx);
        expect_tile(ctx, dv, wv, NULL, NULL);
        expect_tile(ctx, di, wi, NULL, NULL);
      }
}

/* masked: -inf entries rank after NaN, where the masked mode wants them. */
static int o_mask_cmp(const void *pa, const void *pb) {
  const pair *a = pa, *b = pb;
  int ax = a->v == -INFINITY, bx = b->v == -INFINITY;
  if (ax != bx)
    return ax - bx;
  return o_sort_cmp(pa, pb);
}

/* Each run of `run` columns of row i sorted in the mode's order. */
static void topk_sort_runs(pto_tile *v, pto_tile *ix, uint32_t run,
                           int masked) {
  pair *p = keep(malloc(run * sizeof *p));
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t c0 = 0; c0 < v->valid_cols; c0 += run) {
      uint32_t n = v->valid_cols - c0 < run ? v->valid_cols - c0 : run;
      for (uint32_t c = 0; c < n; c++) {
        p[c].v = getf(v, i, c0 + c);
        p[c].i = geti(ix, i, c0 + c);
      }
      qsort(p, n, sizeof *p, masked ? o_mask_cmp : o_sort_cmp);
      for (uint32_t c = 0; c < n; c++) {
        setf(v, i, c0 + c, p[c].v);
        seti(ix, i, c0 + c, p[c].i);
      }
    }
}

void drive_mrgtopk(int op, const oracle_case *oc) {
  (void)oc;
  static const uint32_t runs[] = {1, 5, 32, 200};
  for (int si = 0; si < 5; si++)
    for (int ri = 0; ri < 4; ri++)
      for (int masked = 0; masked < 2; masked++)
        for (int ki = 0; ki < 4; ki++) {
          const shape *s = &sort_shapes[si];
          const uint32_t run = runs[ri];
          if ((s->vc + run - 1) / run > 4) /* at most 4 runs */
            continue;
          const uint32_t kks[4] = {1, run < s->vc ? run : s->vc, s->vc,
                                   s->vc + 9};
          const uint32_t kk = kks[ki];
          if (!masked && kk > s->vc)
            continue;
          rng r = rng_seed(seed_of(op, si, ri, masked * 4 + ki));
          pto_tile *v, *ix;
          sort_inputs(&r, s, &v, &ix);
          for (uint32_t i = 0; masked && i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++)
              if (i == 1 || below(&r, 3) == 0)
                setf(v, i, j, -INFINITY);
          topk_sort_runs(v, ix, run, masked);
          const uint32_t cap = kk + 2;
          pto_tile *dv = dst_new(PTO_F32, s->rows, cap, s->vr, kk);
          pto_tile *di = dst_new(PTO_I32, s->rows, cap, s->vr, kk);
          pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
          /* run j's indices + j * off; merging sorted runs of distinct
           * indices = ranking the row (off 3000 keeps them distinct) */
          const uint32_t off = ki % 2 ? 3000 : 0;
          pair *p = keep(malloc(s->vc * sizeof *p));
          for (uint32_t i = 0; i < s->vr; i++) {
            for (uint32_t c = 0; c < s->vc; c++) {
              p[c].v = getf(v, i, c);
              p[c].i = geti(ix, i, c) + (int32_t)(c / run * off);
            }
            o_emit(wv, wi, i, p, o_rank(p, s->vc, masked), kk);
          }
          char what[64];
          snprintf(what, sizeof what, "k %u, runs of %u, offset %u%s", kk, run,
                   off, masked ? ", masked" : "");
          const char *ctx = ctx_of(op, what, PTO_F32, s);
          pto_targs a = {0};
          a.dst[0] = dv;
          a.dst[1] = di;
          a.src[0] = v;
          a.src[1] = ix;
          a.imm[0] = (int32_t)run;
          a.imm[1] = masked;
          a.s = off;
          run_ok(op, &a, ctx);
          expect_tile(ctx, dv, wv, NULL, NULL);
          expect_tile(ctx, di, wi, NULL, NULL);
        }
}

/* ---- SIMD stress: every table against the scalar reference -----------------
 * As test_tileops_simd.c's, for the sorts and top-k. */

/* Sort inputs: values with many ties, +-0, +-inf, NaN; indices distinct,
 * or (dups) from a small range so equal (value, index) pairs occur. */
static void sort_fill(rng *r, pto_tile *v, pto_tile *ix, int dups) {
  static const float s[] = {-1.0f, 0.0f,     -0.0f,     1.0f, 2.0f,
                            NAN,   INFINITY, -INFINITY, -NAN};
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t j = 0; j < v->valid_cols; j++) {
      setf(v, i, j,
           below(r, 3) ? s[below(r, 9)] : (float)(int)below(r, 9) - 4.0f);
      seti(ix, i, j,
           dups ? (int32_t)below(r, 4) - 2 : (int32_t)(j * 7919u % 100003u) - 99);
    }
}

/* Each run of `run` columns sorted as TSORT32 sorts (by the oracle). */
static void sort_runs(pto_tile *v, pto_tile *ix, uint32_t run) {
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t c = 0; c < v->valid_cols; c += run)
      o_sort_range(v, ix, v, ix, i, c,
                   c + run < v->valid_cols ? c + run : v->valid_cols);
}

Test(tileops, simd_stress_sort, .fini = free_all, .timeout = 600) {
  char ctx[128];
  static const uint32_t runs[] = {1, 2, 3, 5, 8, 16, 32};
  for (uint32_t w = 1; w <= 70; w++)
    for (int dups = 0; dups < 2; dups++) {
      rng r = rng_seed(seed_of(w, dups, 0, 9));
      uint32_t rows = 1 + w % 3;
      pto_tile *v = tile_new(PTO_F32, rows, w + 3, rows, w, 0xff);
      pto_tile *ix = tile_new(PTO_I32, rows, w + 3, rows, w, 0x7f);
      sort_fill(&r, v, ix, dups);
      pto_targs a = {0};
      a.src[0] = v;
      a.src[1] = ix;
      a.dst[0] = dst_new(PTO_F32, rows, w + 3, rows, w);
      a.dst[1] = dst_new(PTO_I32, rows, w + 3, rows, w);
      snprintf(ctx, sizeof ctx, "TSORT32 %ux%u%s", rows, w,
               dups ? " dup indices" : "");
      stress_run(PTO_OP_TSORT32, &a, 0, ctx);
      for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++)
        for (int ways = 2; ways <= 4; ways++) {
          pto_tile *sv = tile_clone(v), *si = tile_clone(ix);
          sort_runs(sv, si, runs[k]);
          pto_targs m = a;
          m.src[0] = sv;
          m.src[1] = si;
          m.imm[0] = (int32_t)runs[k];
          m.imm[1] = ways;
          snprintf(ctx, sizeof ctx, "TMRGSORT %ux%u runs of %u, %d-way%s", rows,
                   w, runs[k], ways, dups ? " dup indices" : "");
          stress_run(PTO_OP_TMRGSORT, &m, 0, ctx);
        }
      free_all();
    }
  /* long rows: many groups, and long runs through the streaming mergers */
  static const uint32_t long_runs[][2] = {
      {7, 4}, {64, 2}, {100, 3}, {256, 4}, {1000, 3}, {1500, 2}};
  for (size_t k = 0; k < sizeof long_runs / sizeof long_runs[0]; k++)
    for (int dups = 0; dups < 2; dups++) {
      rng r = rng_seed(seed_of((int)k, dups, 1, 9));
      const uint32_t w = 3001, rows = 2;
      pto_tile *v = tile_new(PTO_F32, rows, w + 7, rows, w, 0xff);
      pto_tile *ix = tile_new(PTO_I32, rows, w + 7, rows, w, 0x7f);
      sort_fill(&r, v, ix, dups);
      for (uint32_t i = 0; i < rows; i++) /* distinct values too */
        for (uint32_t j = 0; j < w; j += 3)
          setf(v, i, j, (float)uniform(&r, -1e6, 1e6));
      pto_targs m = {0};
      if (long_runs[k][0] > 512) { /* o_sort_range sorts at most 512 */
        for (uint32_t i = 0; i < rows; i++)
          for (uint32_t j = 0; j < w; j++)
            setf(v, i, j, -(float)(j % long_runs[k][0]) - (float)(i * 0.5));
      } else {
        sort_runs(v, ix, long_runs[k][0]);
      }
      m.src[0] = v;
      m.src[1] = ix;
      m.dst[0] = dst_new(PTO_F32, rows, w + 7, rows, w);
      m.dst[1] = dst_new(PTO_I32, rows, w + 7, rows, w);
      m.imm[0] = (int32_t)long_runs[k][0];
      m.imm[1] = (int32_t)long_runs[k][1];
      snprintf(ctx, sizeof ctx, "TMRGSORT %ux%u runs of %u, %u-way%s", rows, w,
               long_runs[k][0], long_runs[k][1], dups ? " dup indices" : "");
      stress_run(PTO_OP_TMRGSORT, &m, 0, ctx);
      free_all();
    }
}

/* Top-k values for the stress: sort_fill's ties and specials, any bit
 * pattern, and (masked) many -inf; `spread` values over a narrow range (one
 * top byte, so the radix select refines through every byte). */
static void topk_fill(rng *r, pto_tile *v, int masked, int spread) {
  pto_tile *ix = tile_new(PTO_I32, v->rows, v->cols, v->valid_rows,
                          v->valid_cols, 0);
  sort_fill(r, v, ix, 0);
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t j = 0; j < v->valid_cols; j++) {
      uint32_t k = below(r, 8);
      if (spread && k < 6)
        setf(v, i, j, 1.0f + (float)below(r, 1u << 20) * 0x1p-23f);
      else if (k == 6)
        setf(v, i, j, nasty_f32(r));
      if (masked && below(r, 3) == 0)
        setf(v, i, j, -INFINITY);
    }
}

Test(tileops, simd_stress_topk, .fini = free_all, .timeout = 600) {
  char ctx[160];
  for (uint32_t w = 1; w <= 70; w++)
    for (int masked = 0; masked < 2; masked++) {
      rng r = rng_seed(seed_of(w, masked, 2, 9));
      const uint32_t rows = 1 + w % 3;
      pto_tile *v = tile_new(PTO_F32, rows, w + 3, rows, w, 0xff);
      topk_fill(&r, v, masked, (int)(w % 2));
      const uint32_t kks[] = {1, w / 3 + 1, w, w + 4};
      for (size_t ki = 0; ki < 4; ki++) {
        const uint32_t kk = kks[ki];
        if (!masked && kk > w)
          continue;
        pto_targs a = {0};
        a.src[0] = v;
        a.dst[0] = dst_new(PTO_F32, rows, kk + 5, rows, kk);
        a.dst[1] = dst_new(PTO_I32, rows, kk + 5, rows, kk);
        a.imm[0] = (int32_t)(w * 3) - 50;
        a.imm[1] = masked;
        snprintf(ctx, sizeof ctx, "TTOPK %ux%u k %u%s", rows, w, kk,
                 masked ? " masked" : "");
        stress_run(PTO_OP_TTOPK, &a, 0, ctx);
        /* the selection, as runs, merged back */
        for (uint32_t run = 1; run <= w; run = run * 2 + 1) {
          if ((w + run - 1) / run > 4)
            continue;
          pto_tile *sv = tile_clone(v);
          pto_tile *si = tile_new(PTO_I32, rows, w + 3, rows, w, 0x7f);
          for (uint32_t i = 0; i < rows; i++)
            for (uint32_t j = 0; j < w; j++)
              seti(si, i, j, (int32_t)below(&r, 2 * w) - 3); /* some equal */
          topk_sort_runs(sv, si, run, masked);
          pto_targs m = a;
          m.src[0] = sv;
          m.src[1] = si;
          m.imm[0] = (int32_t)run;
          m.s = run % 3 ? (double)run : 0; /* sometimes ties across runs */
          snprintf(ctx, sizeof ctx, "TMRGTOPK %ux%u runs of %u k %u%s", rows,
                   w, run, kk, masked ? " masked" : "");
          stress_run(PTO_OP_TMRGTOPK, &m, 0, ctx);
        }
      }
      free_all();
    }
  /* long rows: sampled thresholds, samples that collect too much (ties),
   * whole short rows, exact selections byte by byte, more kept than the
   * stack buffer holds */
  static const uint32_t longs[][2] = {{1024, 512},  {3001, 100}, {5000, 4500},
                                      {8192, 2048}, {700, 700},  {5000, 3000},
                                      {6000, 1000}, {9000, 4200}};
  for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
    for (int masked = 0; masked < 2; masked++)
      for (int spread = 0; spread < 2; spread++) {
        rng r = rng_seed(seed_of((int)k, masked, spread, 19));
        const uint32_t w = longs[k][0], kk = longs[k][1], rows = 2;
        pto_tile *v = tile_new(PTO_F32, rows, w + 7, rows, w, 0xff);
        topk_fill(&r, v, masked, spread);
        pto_targs a = {0};
        a.src[0] = v;
        a.dst[0] = dst_new(PTO_F32, rows, kk + 1, rows, kk);
        a.dst[1] = dst_new(PTO_I32, rows, kk + 1, rows, kk);
        a.imm[0] = 7;
        a.imm[1] = masked;
        snprintf(ctx, sizeof ctx, "TTOPK %ux%u k %u%s%s", rows, w, kk,
                 masked ? " masked" : "", spread ? " narrow" : "");
        stress_run(PTO_OP_TTOPK, &a, 0, ctx);
        free_all();
      }
  /* a row of one value with a few above it: a sampled threshold at that
   * value collects the whole row, more than the buffer, and the exact
   * selection takes over */
  for (int masked = 0; masked < 2; masked++) {
    rng r = rng_seed(seed_of(masked, 0, 3, 29));
    const uint32_t w = 6000, kk = 100;
    pto_tile *v = tile_new(PTO_F32, 1, w, 1, w, 0xff);
    for (uint32_t j = 0; j < w; j++)
      setf(v, 0, j, below(&r, 100) ? 1.0f : below(&r, 2) ? 2.0f : NAN);
    pto_targs a = {0};
    a.src[0] = v;
    a.dst[0] = dst_new(PTO_F32, 1, kk, 1, kk);
    a.dst[1] = dst_new(PTO_I32, 1, kk, 1, kk);
    a.imm[1] = masked;
    snprintf(ctx, sizeof ctx, "TTOPK 1x%u k %u, one value%s", w, kk,
             masked ? " masked" : "");
    stress_run(PTO_OP_TTOPK, &a, 0, ctx);
    free_all();
  }
}

