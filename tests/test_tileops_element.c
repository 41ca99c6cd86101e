/* tileops: the element-wise, tile-scalar, fill and axis instructions'
 * drivers (rows of cases[] in test_tileops.c), and core/convert.h against
 * the oracle's number formats. */
#include "core/convert.h"
#include "tests/tileops_test.h"

/* ---- drivers: element-wise ------------------------------------------------
 */

void drive_binary(int op, const oracle_case *oc) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0);
      pto_tile *y = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen1);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++)
          if (dt == PTO_I32)
            seti(want, i, j, wrap32(oc->ib(geti(x, i, j), geti(y, i, j))));
          else
            setf(want, i, j, (float)oc->fb(getf(x, i, j), getf(y, i, j)));
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      a.src[1] = y;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
      /* in place: dst is src0 */
      pto_tile *xi = tile_clone(x);
      a.dst[0] = xi;
      a.src[0] = xi;
      run_ok(op, &a, ctx);
      expect_valid(ctx, xi, want);
    }
}

void drive_unary(int op, const oracle_case *oc) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      double *val = op_exact(op) ? NULL : dbuf(d), *tol = val ? dbuf(d) : NULL;
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++)
          if (dt == PTO_I32) {
            seti(want, i, j, wrap32(oc->iu(geti(x, i, j))));
          } else if (val) {
            size_t k = (size_t)i * d->stride + j;
            val[k] = oc->fu(getf(x, i, j));
            tol[k] = 2 * ulp_f32(val[k]);
          } else {
            setf(want, i, j, (float)oc->fu(getf(x, i, j)));
          }
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, dt == PTO_I32 ? NULL : val, tol);
    }
}

static int o_compare(int mode, double x, double y) {
  if (isnan(x) || isnan(y))
    return mode == PTO_CMP_NE;
  switch (mode) {
  case PTO_CMP_EQ:
    return !(x < y) && !(y < x);
  case PTO_CMP_NE:
    return x < y || y < x;
  case PTO_CMP_LT:
    return x < y;
  case PTO_CMP_LE:
    return !(y < x);
  case PTO_CMP_GT:
    return y < x;
  default:
    return !(x < y);
  }
}

void drive_cmp(int op, const oracle_case *oc) {
  (void)oc;
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++)
      for (int mode = 0; mode < PTO_CMP_MODE_COUNT; mode++) {
        const shape *s = &shapes[si];
        pto_dtype dt = dts[di];
        rng r = rng_seed(seed_of(op, di, si, mode));
        pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_SMALL);
        pto_tile *y = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_SMALL);
        pto_tile *d = dst_new(PTO_I32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++)
            seti(want, i, j,
                 o_compare(mode, value_of(dt, el(x, i, j)),
                           value_of(dt, el(y, i, j))));
        char what[16];
        snprintf(what, sizeof what, "mode %d", mode);
        const char *ctx = ctx_of(op, what, dt, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.src[1] = y;
        a.imm[0] = mode;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

void drive_sel(int op, const oracle_case *oc) {
  (void)oc;
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *m =
          src_new(&r, PTO_I32, s->rows, s->cols, s->vr, s->vc, G_MASK);
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_F32);
      pto_tile *y = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_F32);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++)
          memcpy(el(want, i, j), el(geti(m, i, j) ? x : y, i, j), 4);
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = m;
      a.src[1] = x;
      a.src[2] = y;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
    }
}

/* TCVT, and TMOV with and without PTO_TF_RELU. */
void drive_convert(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {1, 4};
  int n_relu = op == PTO_OP_TMOV ? 2 : 1;
  for (int from = 0; from < PTO_DTYPE_COUNT; from++)
    for (int to = 0; to < PTO_DTYPE_COUNT; to++)
      for (int relu = 0; relu < n_relu; relu++)
        for (int k = 0; k < 2; k++) {
          const shape *s = &shapes[shape_ix[k]];
          rng r = rng_seed(seed_of(op, from * 4 + to, relu, k));
          pto_tile *x = src_new(&r, (pto_dtype)from, s->rows, s->cols, s->vr,
                                s->vc, gen_for((pto_dtype)from));
          pto_tile *d = dst_new((pto_dtype)to, s->rows, s->cols, s->vr, s->vc);
          pto_tile *want = tile_clone(d);
          for (uint32_t i = 0; i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++) {
              if (!relu) {
                o_convert((pto_dtype)to, el(want, i, j), (pto_dtype)from,
                          el(x, i, j));
                continue;
              }
              double v = value_of((pto_dtype)from, el(x, i, j));
              v = isnan(v) ? v : v > 0 ? v : 0.0;
              convert_value((pto_dtype)to, el(want, i, j), (pto_dtype)from, v);
            }
          char what[64];
          snprintf(what, sizeof what, "-> %s%s", pto_dtype_name((pto_dtype)to),
                   relu ? " relu" : "");
          const char *ctx = ctx_of(op, what, (pto_dtype)from, s);
          pto_targs a = {0};
          a.dst[0] = d;
          a.src[0] = x;
          a.flags = relu ? PTO_TF_RELU : 0;
          run_ok(op, &a, ctx);
          expect_tile(ctx, d, want, NULL, NULL);
        }
}

/* ---- drivers: tile-scalar and fills ----------------------------------------
 */

static const double scalars[] = {2.5, -3.25, 0.0, 1e10, 7.0, -0.5};
#define N_SCALARS (sizeof scalars / sizeof scalars[0])

void drive_scalar(int op, const oracle_case *oc) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si += 2)
      for (int k = 0; k < (int)N_SCALARS; k++) {
        const shape *s = &shapes[si];
        pto_dtype dt = dts[di];
        double sc = scalars[k];
        rng r = rng_seed(seed_of(op, di, si, k));
        pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0);
        pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++)
            if (dt == PTO_I32)
              seti(want, i, j, wrap32(oc->ib(geti(x, i, j), round_i32(sc))));
            else
              setf(want, i, j, (float)oc->fb(getf(x, i, j), (float)sc));
        char what[32];
        snprintf(what, sizeof what, "s=%g", sc);
        const char *ctx = ctx_of(op, what, dt, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.s = sc;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* TEXPANDS, TCI, TTRI: dst only. */
void drive_fill(int op, const oracle_case *oc) {
  (void)oc;
  static const double ss[] = {2.5, -1e10, 3.5, NAN, -0.0};
  static const int32_t imms[] = {0, 5, -7, 2, INT32_MAX - 3, INT32_MIN};
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  int nk = op == PTO_OP_TEXPANDS ? 5 : 6;
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++)
      for (int k = 0; k < nk; k++) {
        const shape *s = &shapes[si];
        pto_dtype dt = dts[di];
        pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++) {
            double v;
            if (op == PTO_OP_TEXPANDS)
              v = dt == PTO_I32 ? round_i32(ss[k]) : (float)ss[k];
            else if (op == PTO_OP_TCI)
              v = (double)((int64_t)imms[k] + j);
            else
              v = (int64_t)j <= (int64_t)i + imms[k] ? 1 : 0;
            if (dt == PTO_I32)
              seti(want, i, j, wrap32((int64_t)v));
            else
              setf(want, i, j, (float)v);
          }
        char what[48];
        snprintf(what, sizeof what, "s=%g imm=%d", ss[k % 5], (int)imms[k]);
        const char *ctx = ctx_of(op, what, dt, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.s = ss[k % 5];
        a.imm[0] = imms[k];
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* TTRIFILL: src0 on and below the diagonal c <= r + imm[0], s above (in
 * place too: dst may be src0); with PTO_TF_TRANS_A the transposed mask,
 * src0 where r <= c + imm[0]. */
void drive_trifill(int op, const oracle_case *oc) {
  (void)oc;
  static const double ss[] = {-INFINITY, 2.5, NAN, -0.0};
  static const int32_t imms[] = {0, 5, -7, 2, -40, INT32_MAX, INT32_MIN};
  for (int si = 0; si < (int)N_SHAPES; si++)
    for (int k = 0; k < 7; k++)
      for (int mode = 0; mode < 4; mode++) {
        const int in_place = mode & 1, trans = mode >> 1;
        const shape *s = &shapes[si];
        rng r = rng_seed(seed_of(op, mode, si, k));
        pto_tile *x =
            src_new(&r, PTO_F32, s->rows, s->cols, s->vr, s->vc, G_F32);
        pto_tile *d =
            in_place ? x : dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++) {
            const int64_t row = trans ? j : i, col = trans ? i : j;
            setf(want, i, j,
                 col <= row + imms[k] ? getf(x, i, j) : (float)ss[k % 4]);
          }
        char what[64];
        snprintf(what, sizeof what, "s=%g imm=%d%s%s", ss[k % 4], (int)imms[k],
                 in_place ? " in place" : "", trans ? " transposed" : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.s = ss[k % 4];
        a.imm[0] = imms[k];
        a.flags = trans ? PTO_TF_TRANS_A : 0;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* ---- drivers: axis ----------------------------------------------------------
 */

/* TROW* (row = 1) or TCOL* (row = 0) reductions. */
static void drive_reduce(int op, const oracle_case *oc, int row) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc,
                            oc->red == R_SUM ? G_SUM : G_RED);
      pto_tile *d = row ? dst_new(dt, s->rows, 1, s->vr, 1)
                        : dst_new(dt, 1, s->cols, 1, s->vc);
      pto_tile *want = tile_clone(d);
      int tolerant = dt == PTO_F32 && oc->red == R_SUM;
      double *val = tolerant ? dbuf(d) : NULL, *tol = tolerant ? dbuf(d) : NULL;
      uint32_t outer = row ? s->vr : s->vc, inner = row ? s->vc : s->vr;
      for (uint32_t o = 0; o < outer; o++) {
        double acc = 0, mag = 0;
        int64_t iacc = 0;
        for (uint32_t n = 0; n < inner; n++) {
          uint32_t i = row ? o : n, j = row ? n : o;
          double v = value_of(dt, el(x, i, j));
          if (dt == PTO_I32)
            iacc = n == 0             ? (int64_t)v
                   : oc->red == R_SUM ? iacc + (int64_t)v
                   : oc->red == R_MAX ? oi_max(iacc, (int64_t)v)
                                      : oi_min(iacc, (int64_t)v);
          else
            acc = n == 0             ? v
                  : oc->red == R_SUM ? acc + v
                  : oc->red == R_MAX ? o_max(acc, v)
                                     : o_min(acc, v);
          mag += fabs(v);
        }
        uint32_t wi = row ? o : 0, wj = row ? 0 : o;
        if (dt == PTO_I32) {
          seti(want, wi, wj, wrap32(iacc));
        } else if (tolerant) {
          size_t k = (size_t)wi * d->stride + wj;
          val[k] = acc;
          tol[k] = 1e-5 * sqrt((double)inner) * mag;
        } else {
          setf(want, wi, wj, (float)acc);
        }
      }
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, val, tol);
    }
}

void drive_rowred(int op, const oracle_case *oc) {
  drive_reduce(op, oc, 1);
}
void drive_colred(int op, const oracle_case *oc) {
  drive_reduce(op, oc, 0);
}

/* TROWEXPAND* (row = 1) and TCOLEXPAND* (row = 0); binary: src0 full and
 * src1 the vector, else src0 the vector. */
static void drive_expand(int op, const oracle_case *oc, int row, int binary) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x =
          binary ? src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0)
                 : NULL;
      pto_tile *v = row ? src_new(&r, dt, s->rows, 1, s->vr, 1, oc->gen1)
                        : src_new(&r, dt, 1, s->cols, 1, s->vc, oc->gen1);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      int tolerant = !op_exact(op) && dt == PTO_F32;
      double *val = tolerant ? dbuf(d) : NULL, *tol = tolerant ? dbuf(d) : NULL;
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++) {
          uint32_t vi = row ? i : 0, vj = row ? 0 : j;
          size_t k = (size_t)i * d->stride + j;
          if (!binary)
            memcpy(el(want, i, j), el(v, vi, vj), 4);
          else if (dt == PTO_I32)
            seti(want, i, j, wrap32(oc->ib(geti(x, i, j), geti(v, vi, vj))));
          else if (tolerant) {
            val[k] = oc->fb(getf(x, i, j), getf(v, vi, vj));
            tol[k] = 2 * ulp_f32(val[k]);
          } else
            setf(want, i, j, (float)oc->fb(getf(x, i, j), getf(v, vi, vj)));
        }
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = binary ? x : v;
      a.src[1] = binary ? v : NULL;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, val, tol);
    }
}

void drive_rowexpand(int op, const oracle_case *oc) {
  drive_expand(op, oc, 1, 0);
}
void drive_colexpand(int op, const oracle_case *oc) {
  drive_expand(op, oc, 0, 0);
}
void drive_rowexpand2(int op, const oracle_case *oc) {
  drive_expand(op, oc, 1, 1);
}
void drive_colexpand2(int op, const oracle_case *oc) {
  drive_expand(op, oc, 0, 1);
}

/* TROWEXPANDEXPDIFSUM: dst0 within 2 ulp of exp of the f32 difference, as
 * TROWEXPANDEXPDIF; dst1 within the TROWSUM bound of the exact sum of those
 * exps, and equal bit for bit to what the same table's TROWSUM makes of
 * dst0 (the fusion changes no value). Then in place: dst0 = src0 and
 * dst1 = src1 (each row's max is read before the row is written). */
void drive_rowexpsum(int op, const oracle_case *oc) {
  for (int si = 0; si < (int)N_SHAPES; si++) {
    const shape *s = &shapes[si];
    rng r = rng_seed(seed_of(op, 0, si, 0));
    pto_tile *x =
        src_new(&r, PTO_F32, s->rows, s->cols, s->vr, s->vc, oc->gen0);
    pto_tile *v = src_new(&r, PTO_F32, s->rows, 1, s->vr, 1, oc->gen1);
    pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
    pto_tile *sum = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
    pto_tile *want = tile_clone(d), *wsum = tile_clone(sum);
    double *val = dbuf(d), *tol = dbuf(d), *sval = dbuf(sum), *stol = dbuf(sum);
    for (uint32_t i = 0; i < s->vr; i++) {
      double acc = 0, mag = 0;
      for (uint32_t j = 0; j < s->vc; j++) {
        size_t k = (size_t)i * d->stride + j;
        val[k] = oc->fb(getf(x, i, j), getf(v, i, 0));
        tol[k] = 2 * ulp_f32(val[k]);
        acc += val[k];
        mag += fabs(val[k]);
      }
      sval[(size_t)i * sum->stride] = acc;
      stol[(size_t)i * sum->stride] = 1e-5 * sqrt((double)s->vc) * mag;
    }
    const char *ctx = ctx_of(op, "", PTO_F32, s);
    pto_targs a = {0};
    a.dst[0] = d;
    a.dst[1] = sum;
    a.src[0] = x;
    a.src[1] = v;
    run_ok(op, &a, ctx);
    expect_tile(ctx, d, want, val, tol);
    expect_tile(ctx, sum, wsum, sval, stol);
    /* the same sum as TROWSUM of dst0 */
    pto_tile *rs = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
    pto_targs b = {0};
    b.dst[0] = rs;
    b.src[0] = d;
    run_ok(PTO_OP_TROWSUM, &b, ctx);
    expect_valid(ctx, sum, rs);
    /* in place */
    pto_tile *xi = tile_clone(x), *vi = tile_clone(v);
    a.dst[0] = xi;
    a.src[0] = xi;
    a.dst[1] = vi;
    a.src[1] = vi;
    run_ok(op, &a, ctx);
    expect_valid(ctx, xi, d);
    expect_valid(ctx, vi, sum);
  }
}

/* ---- core/convert.h against the oracle
 * -------------------------------------------- */

Test(tileops, convert_widening_is_exact_for_every_code) {
  for (uint32_t h = 0; h < 65536; h++) {
    double b = bf16_value((uint16_t)h), f = f16_value((uint16_t)h);
    float gb = pto__bf16_to_f32((uint16_t)h), gf = pto__f16_to_f32((uint16_t)h);
    if (isnan(b))
      cr_assert(isnan(gb), "bf16 0x%04x", h);
    else
      cr_assert(gb == b && !signbit(gb) == !signbit(b), "bf16 0x%04x: %g vs %g",
                h, gb, b);
    if (isnan(f))
      cr_assert(isnan(gf), "f16 0x%04x", h);
    else
      cr_assert(gf == f && !signbit(gf) == !signbit(f), "f16 0x%04x: %g vs %g",
                h, gf, f);
    /* and back: every non-NaN code round-trips; NaN stays NaN */
    uint16_t rb = pto__f32_to_bf16(gb), rf = pto__f32_to_f16(gf);
    if (isnan(b))
      cr_assert(isnan(bf16_value(rb)) && (rb & 0x8000) == (h & 0x8000),
                "bf16 NaN 0x%04x -> 0x%04x", h, rb);
    else
      cr_assert_eq(rb, h, "bf16 0x%04x -> 0x%04x", h, rb);
    if (isnan(f))
      cr_assert(isnan(f16_value(rf)) && (rf & 0x8000) == (h & 0x8000),
                "f16 NaN 0x%04x -> 0x%04x", h, rf);
    else
      cr_assert_eq(rf, h, "f16 0x%04x -> 0x%04x", h, rf);
  }
}

static void check_narrowing(float x) {
  uint16_t b = pto__f32_to_bf16(x), f = pto__f32_to_f16(x);
  if (isnan(x)) {
    cr_assert(isnan(bf16_value(b)) && isnan(f16_value(f)), "NaN %a", x);
    return;
  }
  cr_assert_eq(b, round_half(x, 0), "bf16(%a): 0x%04x, expected 0x%04x", x, b,
               round_half(x, 0));
  cr_assert_eq(f, round_half(x, 1), "f16(%a): 0x%04x, expected 0x%04x", x, f,
               round_half(x, 1));
  cr_assert_eq(pto__f32_to_i32_sat(x), round_i32(x), "i32(%a)", x);
}

Test(tileops, convert_narrowing_rounds_to_nearest_even) {
  /* every midpoint between neighbouring codes (the ties), and its
   * neighbours on both sides */
  for (uint32_t h = 0; h < 0x7f80; h++) {
    double m =
        (bf16_value((uint16_t)h) +
         (h + 1 < 0x7f80 ? bf16_value((uint16_t)(h + 1)) : ldexp(1, 128))) /
        2;
    float mf = (float)m;
    for (int s = 0; s < 2; s++) {
      float v = s ? -mf : mf;
      check_narrowing(v);
      check_narrowing(nextafterf(v, INFINITY));
      check_narrowing(nextafterf(v, -INFINITY));
    }
  }
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double m = (f16_value((uint16_t)h) +
                (h + 1 < 0x7c00 ? f16_value((uint16_t)(h + 1)) : 65536.0)) /
               2;
    float mf = (float)m;
    for (int s = 0; s < 2; s++) {
      float v = s ? -mf : mf;
      check_narrowing(v);
      check_narrowing(nextafterf(v, INFINITY));
      check_narrowing(nextafterf(v, -INFINITY));
    }
  }
  /* random bit patterns: every exponent, NaN and infinity included */
  rng r = rng_seed(7);
  for (int i = 0; i < (1 << 20); i++) {
    uint32_t u = (uint32_t)next(&r);
    float x;
    memcpy(&x, &u, sizeof x);
    check_narrowing(x);
  }
}

Test(tileops, convert_to_i32_ties_and_saturation) {
  static const struct {
    double in;
    int32_t out;
  } t[] = {{0.5, 0},
           {1.5, 2},
           {2.5, 2},
           {-0.5, 0},
           {-1.5, -2},
           {-2.5, -2},
           {3.49999, 3},
           {-0.0, 0},
           {2147483520.0, 2147483520},
           {2147483647.0, INT32_MAX},
           {2147483647.5, INT32_MAX},
           {2147483646.5, 2147483646},
           {2147483648.0, INT32_MAX},
           {1e300, INT32_MAX},
           {-2147483648.0, INT32_MIN},
           {-2147483648.5, INT32_MIN},
           {-2147483647.5, -2147483648.0},
           {-1e300, INT32_MIN},
           {INFINITY, INT32_MAX},
           {-INFINITY, INT32_MIN},
           {NAN, 0}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cr_expect_eq(pto__f64_to_i32_sat(t[i].in), t[i].out, "%.17g", t[i].in);
    cr_expect_eq(pto__f64_to_i32_sat(t[i].in), round_i32(t[i].in), "%.17g",
                 t[i].in);
  }
  cr_expect_eq(pto__f32_to_i32_sat(2147483648.0f), INT32_MAX);
  cr_expect_eq(pto__f32_to_i32_sat(-2147483648.0f), INT32_MIN);
  cr_expect_eq(pto__f32_to_i32_sat(2147483520.0f), 2147483520);
}
