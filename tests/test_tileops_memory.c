/* tileops: the move and memory instructions' drivers (rows of cases[] in
 * test_tileops.c). */
#include "tests/tileops_test.h"

/* ---- drivers: move
 * ------------------------------------------------------------ */

static const pto_dtype move_dtypes[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};

void drive_extract(int op, const oracle_case *oc) {
  (void)oc;
  /* imm0 imm1, dst valid, dst capacity; src is 13x37 valid in 16x48 */
  static const int32_t w[][6] = {{3, 20, 5, 7, 8, 16},
                                 {0, 0, 13, 37, 16, 48},
                                 {12, 36, 1, 1, 1, 1},
                                 {0, 5, 13, 1, 16, 1}};
  for (int ti = 0; ti < 4; ti++)
    for (int wi = 0; wi < 4; wi++) {
      pto_dtype dt = move_dtypes[ti];
      rng r = rng_seed(seed_of(op, ti, wi, 0));
      pto_tile *x = src_new(&r, dt, 16, 48, 13, 37, G_F32);
      const int32_t *W = w[wi];
      pto_tile *d = dst_new(dt, (uint32_t)W[4], (uint32_t)W[5], (uint32_t)W[2],
                            (uint32_t)W[3]);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < (uint32_t)W[2]; i++)
        for (uint32_t j = 0; j < (uint32_t)W[3]; j++)
          memcpy(el(want, i, j), el(x, i + (uint32_t)W[0], j + (uint32_t)W[1]),
                 dsize(dt));
      char ctx[96];
      snprintf(ctx, sizeof ctx, "TEXTRACT %s %dx%d at (%d, %d)",
               pto_dtype_name(dt), W[2], W[3], W[0], W[1]);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      a.imm[0] = W[0];
      a.imm[1] = W[1];
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
    }
}

void drive_insert(int op, const oracle_case *oc) {
  (void)oc;
  /* imm0 imm1, src capacity, src valid; dst is 13x37 valid in 16x48 */
  static const int32_t w[][6] = {{3, 20, 8, 16, 5, 7},
                                 {0, 0, 16, 48, 13, 37},
                                 {12, 36, 1, 1, 1, 1},
                                 {5, 0, 8, 40, 8, 37}};
  for (int ti = 0; ti < 4; ti++)
    for (int wi = 0; wi < 4; wi++) {
      pto_dtype dt = move_dtypes[ti];
      rng r = rng_seed(seed_of(op, ti, wi, 0));
      const int32_t *W = w[wi];
      pto_tile *x = src_new(&r, dt, (uint32_t)W[2], (uint32_t)W[3],
                            (uint32_t)W[4], (uint32_t)W[5], G_F32);
      pto_tile *d = dst_new(dt, 16, 48, 13, 37);
      fill_valid(&r, d, G_F32);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < (uint32_t)W[4]; i++)
        for (uint32_t j = 0; j < (uint32_t)W[5]; j++)
          memcpy(el(want, i + (uint32_t)W[0], j + (uint32_t)W[1]), el(x, i, j),
                 dsize(dt));
      char ctx[96];
      snprintf(ctx, sizeof ctx, "TINSERT %s %dx%d at (%d, %d)",
               pto_dtype_name(dt), W[4], W[5], W[0], W[1]);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      a.imm[0] = W[0];
      a.imm[1] = W[1];
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
      cr_assert(d->valid_rows == 13 && d->valid_cols == 37,
                "%s: dst valid changed", ctx);
    }
}

void drive_trans(int op, const oracle_case *oc) {
  (void)oc;
  for (int ti = 0; ti < 4; ti++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = move_dtypes[ti];
      rng r = rng_seed(seed_of(op, ti, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_F32);
      pto_tile *d = dst_new(dt, s->cols, s->rows, s->vc, s->vr);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < s->vc; i++)
        for (uint32_t j = 0; j < s->vr; j++)
          memcpy(el(want, i, j), el(x, j, i), dsize(dt));
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
    }
}

void drive_fillpad(int op, const oracle_case *oc) {
  (void)oc;
  static const double pads[] = {2.5, -1.0, 3.5};
  /* src capacity and valid; dst is 16x48 */
  static const uint32_t srcs[][4] = {
      {16, 48, 13, 37}, {8, 16, 5, 7}, {16, 48, 16, 48}};
  for (int ti = 0; ti < 4; ti++)
    for (int pi = 0; pi < 3; pi++)
      for (int si = 0; si < 4; si++) { /* si == 3: in place */
        pto_dtype dt = move_dtypes[ti];
        rng r = rng_seed(seed_of(op, ti, pi, si));
        const uint32_t *S = srcs[si == 3 ? 0 : si];
        pto_tile *x = src_new(&r, dt, S[0], S[1], S[2], S[3], G_F32);
        pto_tile *d = si == 3 ? x : dst_new(dt, 16, 48, 1, 1);
        pto_tile *want = tile_clone(si == 3 ? dst_new(dt, 16, 48, 1, 1) : d);
        unsigned char pad[4];
        if (dt == PTO_I32)
          store_value(dt, pad, round_i32(pads[pi]));
        else
          convert_value(dt, pad, PTO_F32, (float)pads[pi]);
        for (uint32_t i = 0; i < 16; i++)
          for (uint32_t j = 0; j < 48; j++)
            memcpy(el(want, i, j), i < S[2] && j < S[3] ? el(x, i, j) : pad,
                   dsize(dt));
        want->valid_rows = 16;
        want->valid_cols = 48;
        char ctx[96];
        snprintf(ctx, sizeof ctx, "TFILLPAD %s %ux%u in %ux%u pad %g%s",
                 pto_dtype_name(dt), S[2], S[3], S[0], S[1], pads[pi],
                 si == 3 ? " in place" : "");
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.s = pads[pi];
        run_ok(op, &a, ctx);
        cr_assert(d->valid_rows == 16 && d->valid_cols == 48,
                  "%s: dst valid %ux%u, expected its capacity", ctx,
                  d->valid_rows, d->valid_cols);
        if (si == 3)
          expect_valid(ctx, d, want);
        else
          expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* ---- drivers: memory
 * ------------------------------------------------------------ */

/* A global tensor (gbuf_gen, tileops_test.c) of dtype dt's usual data. */
static gbuf gbuf_new(rng *r, pto_dtype dt, int64_t rows, int64_t cols,
                     int colmajor) {
  return gbuf_gen(r, dt, rows, cols, colmajor, gen_for(dt));
}
void drive_load(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {0, 1, 4};
  for (int gd = 0; gd < PTO_DTYPE_COUNT; gd++)
    for (int td = 0; td < PTO_DTYPE_COUNT; td++)
      for (int cm = 0; cm < 2; cm++)
        for (int k = 0; k < 3; k++) {
          const shape *s = &shapes[shape_ix[k]];
          rng r = rng_seed(seed_of(op, gd * 4 + td, cm, k));
          gbuf b = gbuf_new(&r, (pto_dtype)gd, s->vr + 2, s->vc + 3, cm);
          pto_tile *d = dst_new((pto_dtype)td, s->rows, s->cols, s->vr, s->vc);
          pto_tile *want = tile_clone(d);
          for (uint32_t i = 0; i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++)
              o_convert((pto_dtype)td, el(want, i, j), (pto_dtype)gd,
                        gat(&b.g, i, j));
          char what[48];
          snprintf(what, sizeof what, "<- %s%s", pto_dtype_name((pto_dtype)gd),
                   cm ? " column-major" : "");
          const char *ctx = ctx_of(op, what, (pto_dtype)td, s);
          pto_targs a = {0};
          a.dst[0] = d;
          a.g = b.g;
          run_ok(op, &a, ctx);
          expect_tile(ctx, d, want, NULL, NULL);
        }
}

void drive_store(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {1, 2};
  for (int gd = 0; gd < PTO_DTYPE_COUNT; gd++)
    for (int td = 0; td < PTO_DTYPE_COUNT; td++)
      for (int acc = 0; acc < 2; acc++)
        for (int k = 0; k < 2; k++) {
          const shape *s = &shapes[shape_ix[k]];
          pto_dtype gdt = (pto_dtype)gd, tdt = (pto_dtype)td;
          rng r = rng_seed(seed_of(op, gd * 4 + td, acc, k));
          gbuf b = gbuf_new(&r, gdt, s->vr + 2, s->vc + 3, k);
          size_t bytes = b.n * dsize(gdt);
          unsigned char *want = keep(malloc(bytes));
          memcpy(want, b.mem, bytes);
          pto_tile *x =
              src_new(&r, tdt, s->rows, s->cols, s->vr, s->vc, gen_for(tdt));
          pto_gview wg = b.g;
          wg.base = want + 3 * dsize(gdt);
          for (uint32_t i = 0; i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++) {
              void *w = gat(&wg, i, j);
              if (!acc) {
                o_convert(gdt, w, tdt, el(x, i, j));
              } else if (gdt == PTO_I32 && tdt == PTO_I32) {
                int32_t v = wrap32((int64_t)value_of(gdt, w) +
                                   (int64_t)value_of(tdt, el(x, i, j)));
                memcpy(w, &v, sizeof v);
              } else {
                float gf = (float)value_of(gdt, w);
                float sf = (float)value_of(tdt, el(x, i, j));
                convert_value(gdt, w, PTO_F32, (float)((double)gf + sf));
              }
            }
          char what[48];
          snprintf(what, sizeof what, "-> %s%s", pto_dtype_name(gdt),
                   acc ? " acc" : "");
          const char *ctx = ctx_of(op, what, tdt, s);
          pto_targs a = {0};
          a.src[0] = x;
          a.g = b.g;
          a.flags = acc ? PTO_TF_ACC : 0;
          run_ok(op, &a, ctx);
          char b1[64], b2[64];
          for (size_t i = 0; i < b.n; i++) {
            const void *g = b.mem + i * dsize(gdt), *w = want + i * dsize(gdt);
            cr_assert(elem_same(gdt, g, w),
                      "%s: global element %zu is %s, expected %s", ctx, i,
                      show(gdt, g, b1, sizeof b1), show(gdt, w, b2, sizeof b2));
          }
        }
}

/* TROWEXPANDMULSTORE: every global element bit for bit: the f32 product
 * src0 * src1[r] inside the window, untouched outside it; row- and
 * column-major views, with and without streaming stores (the view starts
 * 3 elements into its buffer, so the streaming path has a head). */
void drive_mulstore(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {0, 1, 2, 4};
  for (int stream = 0; stream < 2; stream++)
    for (int cm = 0; cm < 2; cm++)
      for (int k = 0; k < 4; k++) {
        const shape *s = &shapes[shape_ix[k]];
        rng r = rng_seed(seed_of(op, stream, cm, k));
        gbuf b = gbuf_new(&r, PTO_F32, s->vr + 2, s->vc + 3, cm);
        size_t bytes = b.n * sizeof(float);
        unsigned char *want = keep(malloc(bytes));
        memcpy(want, b.mem, bytes);
        pto_tile *x = src_new(&r, PTO_F32, s->rows, s->cols, s->vr, s->vc,
                              G_F32);
        pto_tile *v = src_new(&r, PTO_F32, s->rows, 1, s->vr, 1, G_F32);
        pto_gview wg = b.g;
        wg.base = want + 3 * sizeof(float);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++) {
            float y = getf(x, i, j) * getf(v, i, 0);
            memcpy(gat(&wg, i, j), &y, sizeof y);
          }
        char what[48];
        snprintf(what, sizeof what, "->%s%s", cm ? " column-major" : "",
                 stream ? " streaming" : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.src[0] = x;
        a.src[1] = v;
        a.g = b.g;
        a.flags = stream ? PTO_TF_STREAM : 0;
        run_ok(op, &a, ctx);
        char b1[64], b2[64];
        for (size_t i = 0; i < b.n; i++) {
          const void *g = b.mem + i * 4, *w = want + i * 4;
          cr_assert(elem_same(PTO_F32, g, w),
                    "%s: global element %zu is %s, expected %s", ctx, i,
                    show(PTO_F32, g, b1, sizeof b1),
                    show(PTO_F32, w, b2, sizeof b2));
        }
      }
}

/* TLOADROWMAX: dst0 bit for bit the loaded window, dst1 the IEEE maximum
 * of each loaded row (NaN wins, +0 > -0, as TROWMAX's oracle), from row-
 * and column-major views of values rich in zeros, NaNs and infinities. */
void drive_loadmax(int op, const oracle_case *oc) {
  (void)oc;
  for (int cm = 0; cm < 2; cm++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      rng r = rng_seed(seed_of(op, cm, si, 0));
      gbuf b = gbuf_gen(&r, PTO_F32, s->vr + 2, s->vc + 3, cm, G_RED);
      pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *m = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
      pto_tile *want = tile_clone(d), *wantm = tile_clone(m);
      for (uint32_t i = 0; i < s->vr; i++) {
        double acc = 0;
        for (uint32_t j = 0; j < s->vc; j++) {
          memcpy(el(want, i, j), gat(&b.g, i, j), 4);
          double v = getf(want, i, j);
          acc = j == 0 ? v : o_max(acc, v);
        }
        setf(wantm, i, 0, (float)acc);
      }
      const char *ctx = ctx_of(op, cm ? "column-major" : "", PTO_F32, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.dst[1] = m;
      a.g = b.g;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
      expect_tile(ctx, m, wantm, NULL, NULL);
    }
}

/* TLOADEXPDIFSUM: dst0 within 2 ulp of exp(g - m) with m each row's IEEE
 * maximum, dst1 within the TROWSUM bound of the exact sum of those exps,
 * and both bit for bit what the same table's TLOADROWMAX then
 * TROWEXPANDEXPDIFSUM make (the fusion changes no value), from row- and
 * column-major views with NaNs and infinities among the values. */
void drive_loadexpsum(int op, const oracle_case *oc) {
  for (int cm = 0; cm < 2; cm++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      rng r = rng_seed(seed_of(op, cm, si, 0));
      gbuf b = gbuf_gen(&r, PTO_F32, s->vr + 2, s->vc + 3, cm, G_F32);
      pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *sum = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
      pto_tile *want = tile_clone(d), *wsum = tile_clone(sum);
      double *val = dbuf(d), *tol = dbuf(d), *sval = dbuf(sum),
             *stol = dbuf(sum);
      for (uint32_t i = 0; i < s->vr; i++) {
        double m = 0, acc = 0, mag = 0;
        for (uint32_t j = 0; j < s->vc; j++) {
          double v = value_of(PTO_F32, gat(&b.g, i, j));
          m = j == 0 ? v : o_max(m, v);
        }
        for (uint32_t j = 0; j < s->vc; j++) {
          size_t k = (size_t)i * d->stride + j;
          val[k] = oc->fb(value_of(PTO_F32, gat(&b.g, i, j)), (float)m);
          tol[k] = 2 * ulp_f32(val[k]);
          acc += val[k];
          mag += fabs(val[k]);
        }
        sval[(size_t)i * sum->stride] = acc;
        stol[(size_t)i * sum->stride] = 1e-5 * sqrt((double)s->vc) * mag;
      }
      const char *ctx = ctx_of(op, cm ? "column-major" : "", PTO_F32, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.dst[1] = sum;
      a.g = b.g;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, val, tol);
      expect_tile(ctx, sum, wsum, sval, stol);
      /* the two instructions it fuses, on the same table */
      pto_tile *x = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *mx = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
      pto_tile *u = tile_clone(d), *us = tile_clone(sum);
      pto_targs l = {0};
      l.dst[0] = x;
      l.dst[1] = mx;
      l.g = b.g;
      run_ok(PTO_OP_TLOADROWMAX, &l, ctx);
      pto_targs e = {0};
      e.dst[0] = u;
      e.dst[1] = us;
      e.src[0] = x;
      e.src[1] = mx;
      run_ok(PTO_OP_TROWEXPANDEXPDIFSUM, &e, ctx);
      expect_valid(ctx, d, u);
      expect_valid(ctx, sum, us);
    }
}

/* TLOADSOFTMAXSTORE: dst0 and dst1 bit for bit what the same table's
 * TLOADEXPDIFSUM makes, and every element of g2's buffer bit for bit what
 * TRECIP of dst1 then TROWEXPANDMULSTORE of dst0 write (the fusion changes
 * no value), untouched outside the window; rows of finite values within
 * the bounds of those instructions of the double-precision softmax. Row-
 * and column-major views of x and of y; with streaming stores, y's rows
 * also vector-aligned (the streamed, pipelined path). */
void drive_loadsoftmax(int op, const oracle_case *oc) {
  (void)oc;
  for (int stream = 0; stream < 3; stream++) /* 2: streamed, aligned rows */
    for (int cm = 0; cm < 2; cm++)
      for (int si = 0; si < (int)N_SHAPES; si++) {
        const shape *s = &shapes[si];
        rng r = rng_seed(seed_of(op, stream, cm, si));
        gbuf x = gbuf_gen(&r, PTO_F32, s->vr + 2, s->vc + 3, cm, G_F32);
        gbuf y = gbuf_new(&r, PTO_F32, s->vr + 2, s->vc + 3, stream ? 0 : !cm);
        if (stream == 2) { /* rows 64-byte aligned */
          const int64_t lead = (s->vc + 3 + 15) / 16 * 16;
          y.n = (size_t)(lead * (s->vr + 2));
          y.mem = keep(aligned_alloc(64, y.n * sizeof(float)));
          for (size_t i = 0; i < y.n; i++)
            gen_elem(&r, PTO_F32, G_F32, y.mem + i * sizeof(float));
          y.g.base = y.mem;
          y.g.row_stride = lead;
        }
        const size_t bytes = y.n * sizeof(float);
        unsigned char *want = keep(malloc(bytes));
        memcpy(want, y.mem, bytes);
        pto_gview wg = y.g;
        wg.base = want + ((unsigned char *)y.g.base - y.mem);
        char what[64];
        snprintf(what, sizeof what, "%s->%s%s", cm ? "column-major" : "",
                 y.g.col_stride != 1 ? " column-major" : "",
                 stream == 2 ? " streaming aligned"
                 : stream    ? " streaming"
                             : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        /* the three instructions it fuses, on the same table */
        pto_tile *u = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *us = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
        pto_tile *q = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
        pto_targs l = {0};
        l.dst[0] = u;
        l.dst[1] = us;
        l.g = x.g;
        run_ok(PTO_OP_TLOADEXPDIFSUM, &l, ctx);
        pto_targs rc = {0};
        rc.dst[0] = q;
        rc.src[0] = us;
        run_ok(PTO_OP_TRECIP, &rc, ctx);
        pto_targs ms = {0};
        ms.src[0] = u;
        ms.src[1] = q;
        ms.g = wg;
        run_ok(PTO_OP_TROWEXPANDMULSTORE, &ms, ctx);
        /* the fused one */
        pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *sum = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
        pto_targs a = {0};
        a.dst[0] = d;
        a.dst[1] = sum;
        a.g = x.g;
        a.g2 = y.g;
        a.flags = stream ? PTO_TF_STREAM : 0;
        run_ok(op, &a, ctx);
        expect_valid(ctx, d, u);
        expect_valid(ctx, sum, us);
        char b1[64], b2[64];
        for (size_t i = 0; i < y.n; i++) {
          const void *g = y.mem + i * 4, *w = want + i * 4;
          cr_assert(elem_same(PTO_F32, g, w),
                    "%s: g2 element %zu is %s, the three instructions give %s",
                    ctx, i, show(PTO_F32, g, b1, sizeof b1),
                    show(PTO_F32, w, b2, sizeof b2));
        }
        /* the double-precision softmax of each row of finite values */
        for (uint32_t i = 0; i < s->vr; i++) {
          double m = -INFINITY, acc = 0;
          int finite = 1;
          for (uint32_t j = 0; j < s->vc; j++) {
            const double v = value_of(PTO_F32, gat(&x.g, i, j));
            finite &= isfinite(v) != 0;
            m = v > m ? v : m;
          }
          for (uint32_t j = 0; finite && j < s->vc; j++)
            acc += exp(value_of(PTO_F32, gat(&x.g, i, j)) - m);
          for (uint32_t j = 0; finite && j < s->vc; j++) {
            const double w = exp(value_of(PTO_F32, gat(&x.g, i, j)) - m) / acc;
            const double got = value_of(PTO_F32, gat(&y.g, i, j));
            /* exps 2 ulp, their sum as TROWSUM's bound, two roundings */
            const double tol = 4 * ulp_f32(w) + 1e-5 * sqrt((double)s->vc) * w;
            cr_assert(fabs(got - w) <= tol,
                      "%s: softmax row %u col %u is %.9g, double gives %.9g",
                      ctx, i, j, got, w);
          }
        }
      }
}

void drive_gather(int op, const oracle_case *oc) {
  (void)oc;
  const int other_rows = op == PTO_OP_TGATHERELSE;
  static const pto_dtype types[][2] = {{PTO_F32, PTO_F32}, {PTO_F32, PTO_BF16},
                                       {PTO_I32, PTO_I32}, {PTO_BF16, PTO_BF16},
                                       {PTO_F16, PTO_F32}, {PTO_I32, PTO_F32}};
  /* dst capacity/valid, index capacity/valid */
  static const uint32_t geo[][8] = {{16, 48, 13, 37, 1, 16, 1, 13},
                                    {16, 48, 13, 37, 16, 1, 13, 1},
                                    {8, 16, 6, 5, 4, 16, 2, 3},
                                    {1, 1, 1, 1, 1, 1, 1, 1},
                                    /* a column (one element a row) from
                                     * indices in rows of a strided tile */
                                    {16, 16, 12, 1, 4, 16, 3, 4}};
  const int64_t N = 11;
  for (int ti = 0; ti < 6; ti++)
    for (int gi = 0; gi < 5; gi++)
      for (int strict = 0; strict < 4; strict++) {
        /* 2: strict, a bad index; 3: strict with -1 as padding */
        pto_dtype dt = types[ti][0], gdt = types[ti][1];
        const uint32_t *G = geo[gi];
        rng r = rng_seed(seed_of(op, ti, gi, strict));
        gbuf b = gbuf_new(&r, gdt, N, 40, 0);
        pto_tile *ix = src_new(&r, PTO_I32, G[4], G[5], G[6], G[7], G_F32);
        for (uint32_t i = 0; i < G[6]; i++)
          for (uint32_t j = 0; j < G[7]; j++) /* some outside [0, N) */
            seti(ix, i, j,
                 strict == 1   ? (int32_t)below(&r, N)
                 : strict == 3 ? (int32_t)below(&r, N + 1) - 1
                               : (int32_t)below(&r, N + 4) - 2);
        if (strict == 2) /* make sure one is out of range (-1 is not, for
                            TGATHERELSE) */
          seti(ix, G[6] - 1, G[7] - 1,
               below(&r, 2) && !other_rows ? -1 : (int32_t)N);
        pto_tile *d = dst_new(dt, G[0], G[1], G[2], G[3]);
        /* TGATHERELSE: the rows of -1 from a tile of dst's valid region */
        pto_tile *other =
            other_rows ? src_new(&r, dt, G[0], G[1], G[2], G[3], G_F32) : NULL;
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < G[2] && strict != 2; i++) {
          int32_t row = geti(ix, i / G[7], i % G[7]);
          for (uint32_t j = 0; j < G[3]; j++)
            if (row == -1 && other)
              memcpy(el(want, i, j), el(other, i, j), dsize(dt));
            else if (row < 0 || row >= N)
              memset(el(want, i, j), 0, dsize(dt));
            else
              o_convert(dt, el(want, i, j), gdt, gat(&b.g, row, j));
        }
        char ctx[96];
        snprintf(ctx, sizeof ctx, "TGATHER %s <- %s %ux%u, index %ux%u%s",
                 pto_dtype_name(dt), pto_dtype_name(gdt), G[2], G[3], G[6],
                 G[7],
                 strict == 2   ? " strict, out of range"
                 : strict == 3 ? " strict, -1 padding"
                 : strict      ? " strict"
                               : "");
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = ix;
        a.src[1] = other;
        a.g = b.g;
        a.flags = strict ? PTO_TF_STRICT : 0;
        if (strict == 3)
          a.flags |= PTO_TF_PAD;
        if (strict == 2) {
          char msg[256];
          int st = pto__tileop_check(op, &a, msg, sizeof msg);
          cr_assert_eq(st, 0, "%s: check: %s", ctx, msg);
          cr_assert_eq(pto__tileop_run(op, &a), PTO_ERANGE, "%s", ctx);
        } else {
          run_ok(op, &a, ctx);
        }
        expect_tile(ctx, d, want, NULL, NULL);
      }
}


/* ---- empty sources ---------------------------------------------------------
 * A run's dynamic extents may empty what a reduction reads but not the
 * vector it writes (a softmax over S = 1 with tiles of 16 columns: the
 * tiles past the first have no valid column). The executor then asks
 * pto__insn_empty for the result, else the table's kernel runs
 * (scheduler/exec.c); either way every valid element of each destination
 * is the identity of its reduction. Every instruction with a per-row or
 * per-column destination is checked, on every table, destinations
 * poisoned with NaN first. */

typedef struct empty_case {
  int op;
  float want[2]; /* dst0's, dst1's identity (NAN: not checked) */
} empty_case;

static const empty_case empty_cases[] = {
    {PTO_OP_TROWSUM, {0.0f, NAN}},
    {PTO_OP_TROWMAX, {-INFINITY, NAN}},
    {PTO_OP_TROWMIN, {INFINITY, NAN}},
    {PTO_OP_TCOLSUM, {0.0f, NAN}},
    {PTO_OP_TCOLMAX, {-INFINITY, NAN}},
    {PTO_OP_TCOLMIN, {INFINITY, NAN}},
    {PTO_OP_TLOADROWMAX, {NAN, -INFINITY}},
    {PTO_OP_TLOADEXPDIFSUM, {NAN, 0.0f}},
    {PTO_OP_TLOADSOFTMAXSTORE, {NAN, 0.0f}},
    {PTO_OP_TROWEXPANDEXPDIFSUM, {NAN, 0.0f}},
};
#define N_EMPTY (sizeof empty_cases / sizeof empty_cases[0])

static int has_role(int op, int role) {
  const pto_insn_info *in = pto__insn_info(op);
  for (int d = 0; d < in->n_dst; d++)
    if (pto__insn_operand(op, 1, d).role == role)
      return 1;
  return 0;
}

/* The operands of c's instruction with R rows whose reduced axis is
 * empty; poisoned destinations. */
static pto_targs empty_args(const empty_case *c, uint32_t R, float *g2mem) {
  static float gmem[4];
  pto_targs a = {0};
  const int col = has_role(c->op, PTO_ROLE_COLVEC);
  const pto_insn_facts *f = pto__insn_facts(c->op);
  if (f->g == PTO_GA_READ) /* a load of a window with no column */
    a.g = (pto_gview){gmem, PTO_F32, R, 0, 1, 1};
  if (f->g2 == PTO_GA_WRITE)
    a.g2 = (pto_gview){g2mem, PTO_F32, R, 0, 1, 1};
  const pto_insn_info *in = pto__insn_info(c->op);
  for (int s = 0; s < in->n_src; s++) {
    const int role = pto__insn_operand(c->op, 0, s).role;
    a.src[s] = role == PTO_ROLE_ROWVEC
                   ? tile_new(PTO_F32, R, 1, R, 1, 0)
                   : tile_new(PTO_F32, 8, 16, col ? 0 : R, col ? 16 : 0, 0);
  }
  const uint32_t nan_bytes = 0xff; /* every byte 0xff: a NaN */
  for (int d = 0; d < in->n_dst; d++) {
    const int role = pto__insn_operand(c->op, 1, d).role;
    a.dst[d] = role == PTO_ROLE_ROWVEC   ? tile_new(PTO_F32, R, 1, R, 1, nan_bytes)
               : role == PTO_ROLE_COLVEC ? tile_new(PTO_F32, 1, 16, 1, 16, nan_bytes)
                                         : tile_new(PTO_F32, 8, 16, R, 0, nan_bytes);
  }
  return a;
}

Test(tileops, empty_sources_give_identities, .fini = free_all) {
  /* every instruction with a per-row or per-column destination is here */
  for (int op = 0; op < PTO_OP_COUNT; op++) {
    if (!has_role(op, PTO_ROLE_ROWVEC) && !has_role(op, PTO_ROLE_COLVEC))
      continue;
    /* TSOFTMAXFINAL's per-row result comes from the per-row state of
     * the online softmax, not from an axis the extents cut */
    int listed = op == PTO_OP_TSOFTMAXFINAL;
    for (size_t i = 0; i < N_EMPTY; i++)
      listed |= empty_cases[i].op == op;
    cr_expect(listed,
              "%s writes a per-row or per-column vector: give its empty "
              "identity (tileops/empty.c) and a row in empty_cases",
              pto__insn_name(op));
  }
  const isa_list L = tables_here();
  for (int t = 0; t < L.n; t++)
    for (size_t i = 0; i < N_EMPTY; i++) {
      const empty_case *c = &empty_cases[i];
      const uint32_t R = 5;
      float g2mem[4] = {1, 2, 3, 4};
      pto_targs a = empty_args(c, R, g2mem);
      char ctx[96];
      snprintf(ctx, sizeof ctx, "%s on %s, an empty reduced axis",
               pto__insn_name(c->op), L.t[t]->name);
      if (!pto__insn_empty(c->op, &a))
        run_on(L.t[t], c->op, &a, ctx);
      for (int d = 0; d < 2; d++) {
        if (isnan(c->want[d]))
          continue;
        const pto_tile *x = a.dst[d];
        for (uint32_t r = 0; r < x->valid_rows; r++)
          for (uint32_t k = 0; k < x->valid_cols; k++)
            cr_expect(getf(x, r, k) == c->want[d],
                      "%s: dst%d[%u][%u] is %g, not %g", ctx, d, r, k,
                      (double)getf(x, r, k), (double)c->want[d]);
      }
      for (int k = 0; k < 4; k++)
        cr_expect_eq(g2mem[k], (float)(k + 1), "%s: it stored", ctx);
    }
}
