/* core: the reference evaluator (pto_program_eval), data movement and
 * selection: views (slice, transpose, reshape) feeding ops, topk and
 * topk_masked, gather (lenient and strict), concat, full and iota; all
 * exact, against expectations computed here in plain C. */
#include "tests/eval_test.h"

/* ---- views -------------------------------------------------------------- */

Test(core, eval_views_feed_ops) {
  enum { M = 6, N = 8 };
  float a[M * N], b[N * M], c[M * N];
  fill(a, M * N, 23, -5, 5);
  fill(b, N * M, 24, -5, 5);
  float o_slice[3 * 4], o_trans[M * N], o_rs[4], o_sliced_t[2 * 3], o_in[M * N];
  float o_view[3 * 4];
  pto_program *p = pto_program_new("views");
  pto_tensor *ta = in2(p, "a", PTO_F32, M, N), *tb = in2(p, "b", PTO_F32, N, M);
  /* slice [1:4, 2:6] of a plus itself scaled */
  pto_tensor *sl = pto_slice(p, ta, (int64_t[]){1, 2}, (int64_t[]){4, 6});
  pto_output(p, pto_add(p, sl, pto_muls(p, sl, 2)), "slice");
  /* a + transpose(b) */
  pto_output(p, pto_add(p, ta, pto_transpose(p, tb, 0, 1)), "trans");
  /* reshape a [6,8] -> [4,12] then rowsum */
  pto_tensor *rsh = pto_reshape(p, ta, 2, (int64_t[]){4, 12});
  pto_output(p, pto_rowsum(p, rsh), "reshape_rowsum");
  /* a slice of a transposed view, fed to neg */
  pto_tensor *bt = pto_transpose(p, tb, -1, -2); /* [M,N] */
  pto_output(p,
             pto_neg(p, pto_slice(p, bt, (int64_t[]){3, 5}, (int64_t[]){5, 8})),
             "slice_of_t");
  /* an input and a view as outputs, copied out dense */
  pto_output(p, ta, "input");
  pto_output(p, sl, "view");
  /* a reshape of an op result (contiguous) */
  pto_tensor *mul = pto_mul(p, ta, ta);
  pto_tensor *r3 = pto_reshape(p, mul, 3, (int64_t[]){2, 3, 8});
  pto_output(p, pto_rowsum(p, r3), "r3");
  float o_r3[6];
  BUILD_OK(p);
  memcpy(c, a, sizeof a);
  const void *ins[] = {a, b};
  void *outs[] = {o_slice, o_trans, o_rs, o_sliced_t, o_in, o_view, o_r3};
  EVAL_OK(p, ins, outs);
  cr_expect(memcmp(a, c, sizeof a) == 0, "inputs are never written");
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 4; k++) {
      float v = a[(1 + r) * N + 2 + k];
      EXPECT_F32(o_slice[r * 4 + k], v + v * 2.0f, "slice %d,%d", r, k);
      EXPECT_F32(o_view[r * 4 + k], v, "view %d,%d", r, k);
    }
  for (int r = 0; r < M; r++)
    for (int k = 0; k < N; k++) {
      EXPECT_F32(o_trans[r * N + k], a[r * N + k] + b[k * M + r], "t %d,%d", r,
                 k);
      EXPECT_F32(o_in[r * N + k], a[r * N + k], "input %d,%d", r, k);
    }
  for (int r = 0; r < 4; r++) {
    double s = 0, mag = 0;
    for (int k = 0; k < 12; k++) {
      s += a[r * 12 + k];
      mag += fabs(a[r * 12 + k]);
    }
    EXPECT_CLOSE(o_rs[r], s, mag, 1e-5, "reshape rowsum %d", r);
  }
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 3; k++) /* bt[3+r][5+k] = b[5+k][3+r] */
      EXPECT_F32(o_sliced_t[r * 3 + k], -b[(5 + k) * M + 3 + r], "%d,%d", r, k);
  for (int r = 0; r < 6; r++) {
    double s = 0, mag = 0;
    for (int k = 0; k < 8; k++) {
      float v = a[r * 8 + k] * a[r * 8 + k];
      s += v;
      mag += v;
    }
    EXPECT_CLOSE(o_r3[r], s, mag, 1e-5, "r3 %d", r);
  }
  pto_program_free(p);
}

/* ---- topk --------------------------------------------------------------- */

/* Is (v, i) ranked before (w, j)? value descending, NaN last, index asc. */
static int ranks_before(float v, int i, float w, int j) {
  if (isnan(v) != isnan(w))
    return !isnan(v);
  if (!isnan(v) && v != w)
    return v > w;
  return i < j;
}

/* Selection by repeated linear scans: independent of any sort. */
static void ref_topk(const float *row, int n, int k, float *vals, int *idx) {
  char used[64] = {0};
  for (int s = 0; s < k; s++) {
    int best = -1;
    for (int j = 0; j < n; j++)
      if (!used[j] && (best < 0 || ranks_before(row[j], j, row[best], best)))
        best = j;
    used[best] = 1;
    vals[s] = row[best];
    idx[s] = best;
  }
}

#define TR 4
#define TN 12
Test(core, eval_topk_ties_nan_and_k_equals_n) {
  float a[TR * TN];
  fill(a, TR * TN, 34, -3, 3);
  /* row 0: ties; row 1: NaN and infinities; row 2: all equal */
  for (int c = 0; c < TN; c++) {
    a[c] = (float)(c % 3); /* 0 1 2 0 1 2 ... */
    a[2 * TN + c] = 5.0f;
  }
  a[TN + 0] = NAN;
  a[TN + 1] = -INFINITY;
  a[TN + 2] = INFINITY;
  a[TN + 3] = NAN;
  a[TN + 4] = -0.0f;
  a[TN + 5] = 0.0f;
  float v5[TR * 5], vn[TR * TN];
  int32_t i5[TR * 5], in[TR * TN];
  pto_program *p = pto_program_new("topk");
  pto_tensor *ta = in2(p, "a", PTO_F32, TR, TN), *idx5 = NULL, *idxn = NULL;
  pto_tensor *t5 = pto_topk(p, ta, 5, &idx5);
  pto_tensor *tn = pto_topk(p, ta, TN, &idxn);
  pto_output(p, t5, "v5");
  pto_output(p, idx5, "i5");
  pto_output(p, tn, "vn");
  pto_output(p, idxn, "in");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(idx5), PTO_I32);
  cr_expect_eq(pto_tensor_dim(t5, -1), 5);
  const void *ins[] = {a};
  void *outs[] = {v5, i5, vn, in};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < TR; r++) {
    float wv[TN];
    int wi[TN];
    ref_topk(a + r * TN, TN, TN, wv, wi);
    for (int s = 0; s < TN; s++) {
      EXPECT_F32(vn[r * TN + s], wv[s], "row %d slot %d", r, s);
      cr_expect_eq(in[r * TN + s], wi[s], "row %d slot %d", r, s);
      if (s < 5) {
        EXPECT_F32(v5[r * 5 + s], wv[s], "k=5 row %d slot %d", r, s);
        cr_expect_eq(i5[r * 5 + s], wi[s], "k=5 row %d slot %d", r, s);
      }
    }
  }
  /* spelled out: row 0 is 2 at 2,5,8,11 then 1 at 1; NaNs last in row 1 */
  int32_t w0[5] = {2, 5, 8, 11, 1};
  for (int s = 0; s < 5; s++)
    cr_expect_eq(i5[s], w0[s]);
  cr_expect_eq(in[TN + 0], 2);      /* +inf first */
  cr_expect_eq(in[TN + TN - 3], 1); /* -inf before the NaNs */
  cr_expect_eq(in[TN + TN - 2], 0);
  cr_expect_eq(in[TN + TN - 1], 3);
  for (int s = 0; s < TN; s++)
    cr_expect_eq(in[2 * TN + s], s, "all equal: index order");
  pto_program_free(p);
}

Test(core, eval_topk_of_cast_i32_rank3_and_i32_rejected) {
  int32_t a[2 * 3 * 6], ix[2 * 3 * 2];
  float v[2 * 3 * 2];
  fill_i32(a, 36, 35, -4, 4);
  pto_program *p = pto_program_new("topk_i32");
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 3, (int64_t[]){2, 3, 6}), *ti;
  pto_tensor *tv = pto_topk(p, pto_cast(p, ta, PTO_F32), 2, &ti);
  pto_output(p, tv, "v");
  pto_output(p, ti, "i");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(tv), PTO_F32);
  const void *ins[] = {a};
  void *outs[] = {v, ix};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < 6; r++) {
    int b0 = -1, b1 = -1; /* best two by value desc, index asc */
    for (int j = 0; j < 6; j++) {
      int32_t x = a[r * 6 + j];
      if (b0 < 0 || x > a[r * 6 + b0]) {
        b1 = b0;
        b0 = j;
      } else if (b1 < 0 || x > a[r * 6 + b1]) {
        b1 = j;
      }
    }
    cr_expect_eq(ix[r * 2], b0, "row %d", r);
    cr_expect_eq(ix[r * 2 + 1], b1, "row %d", r);
    cr_expect_eq(v[r * 2], (float)a[r * 6 + b0]);
    cr_expect_eq(v[r * 2 + 1], (float)a[r * 6 + b1]);
  }
  /* top-k sorts floating values: an i32 tensor is refused by name */
  pto_tensor *bad = pto_topk(p, ta, 2, &ti);
  cr_expect_null(bad);
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  cr_expect(strstr(pto_program_error(p), "topk") &&
                strstr(pto_program_error(p), "'a' i32[2,3,6]"),
            "%s", pto_program_error(p));
  pto_program_free(p);
}

/* pto_topk_masked: -inf entries are never selected, slots past the rest
 * are (-inf, -1), k may exceed the row. Rows: ties at the k-th value, no
 * entry left (all -inf), NaN among -inf (NaN is an entry: it ranks last but
 * is selected before padding), fewer entries than k. */
#define TMR 5
#define TMN 8
#define TMK 11
Test(core, eval_topk_masked_excludes_pads_and_takes_k_past_the_row) {
  const float I = INFINITY;
  const float a[TMR * TMN] = {
      1, 3, 3, 2, 3, 0, 3, 1,          /* ties: the 3s at 1 2 4 6 */
      -I, -I, -I, -I, -I, -I, -I, -I,  /* no entry left */
      -I, NAN, -I, 5, -0.0f, -I, 0, I, /* NaN last, before padding */
      -I, 2, -I, -I, -I, -I, -I, -I,   /* one entry */
      7, 7, 7, 7, 7, 7, 7, 7};         /* all equal: index order */
  float v3[TMR * 3], vk[TMR * TMK];
  int32_t i3[TMR * 3], ik[TMR * TMK];
  pto_program *p = pto_program_new("topk_masked");
  pto_tensor *ta = in2(p, "a", PTO_F32, TMR, TMN), *x3 = NULL, *xk = NULL;
  pto_tensor *t3 = pto_topk_masked(p, ta, 3, &x3);
  pto_tensor *tk = pto_topk_masked(p, ta, TMK, &xk);
  pto_output(p, t3, "v3");
  pto_output(p, x3, "i3");
  pto_output(p, tk, "vk");
  pto_output(p, xk, "ik");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dim(tk, -1), TMK, "k past the row: [5, 11]");
  const void *ins[] = {a};
  void *outs[] = {v3, i3, vk, ik};
  EVAL_OK(p, ins, outs);
  /* by hand */
  const int32_t want[TMR][TMK] = {
      {1, 2, 4, 6, 3, 0, 7, 5, -1, -1, -1},
      {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
      {7, 3, 4, 6, 1, -1, -1, -1, -1, -1, -1},
      {1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
      {0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1}};
  for (int r = 0; r < TMR; r++)
    for (int s = 0; s < TMK; s++) {
      const int32_t j = want[r][s];
      const float w = j < 0 ? -INFINITY : a[r * TMN + j];
      cr_expect_eq(ik[r * TMK + s], j, "row %d slot %d", r, s);
      EXPECT_F32(vk[r * TMK + s], w, "row %d slot %d", r, s);
      if (s < 3) {
        cr_expect_eq(i3[r * 3 + s], j, "k=3 row %d slot %d", r, s);
        EXPECT_F32(v3[r * 3 + s], w, "k=3 row %d slot %d", r, s);
      }
    }
  pto_program_free(p);
}

/* ---- gather ------------------------------------------------------------- */

#define GN 5
#define GD 3
Test(core, eval_gather_invalid_indices_give_zero_rows) {
  float table[GN * GD], out[2 * 4 * GD];
  uint16_t tb[GN * GD], outb[6 * GD];
  fill(table, GN * GD, 36, -9, 9);
  for (int i = 0; i < GN * GD; i++)
    tb[i] = (uint16_t)(0x3f00 + i);
  int32_t idx[2 * 4] = {4, 0, -1, 2, 5, 100, INT32_MIN, 3};
  pto_program *p = pto_program_new("gather");
  pto_tensor *tt = in2(p, "table", PTO_F32, GN, GD);
  pto_tensor *ti = in2(p, "idx", PTO_I32, 2, 4);
  pto_tensor *tbt = in2(p, "table_bf16", PTO_BF16, GN, GD);
  pto_tensor *g = pto_gather(p, tt, ti, 0);
  pto_output(p, g, "g");
  /* a bf16 table, indexed by a slice (a view) of idx: idx[0:2, 1:4] */
  pto_tensor *gb = pto_gather(
      p, tbt, pto_slice(p, ti, (int64_t[]){0, 1}, (int64_t[]){2, 4}), 0);
  pto_output(p, gb, "gb");
  BUILD_OK(p);
  cr_expect(pto_tensor_ndim(g) == 3 && pto_tensor_dim(g, 2) == GD);
  cr_expect_eq(pto_tensor_dtype(gb), PTO_BF16);
  memset(out, 0xff, sizeof out); /* results must overwrite this */
  memset(outb, 0xff, sizeof outb);
  const void *ins[] = {table, idx, tb};
  void *outs[] = {out, outb};
  EVAL_OK(p, ins, outs);
  for (int s = 0; s < 8; s++)
    for (int d = 0; d < GD; d++) {
      int ok = idx[s] >= 0 && idx[s] < GN;
      float want = ok ? table[idx[s] * GD + d] : 0.0f;
      EXPECT_F32(out[s * GD + d], want, "slot %d (index %d) col %d", s, idx[s],
                 d);
    }
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 3; c++) {
      int32_t i = idx[r * 4 + 1 + c];
      for (int d = 0; d < GD; d++)
        cr_expect_eq(outb[(r * 3 + c) * GD + d],
                     i >= 0 && i < GN ? tb[i * GD + d] : 0, "bf16 %d,%d", r, c);
    }
  pto_program_free(p);
}

Test(core, eval_gather_strict_fails_with_range_error_then_recovers) {
  float table[GN * GD], out[4 * GD], sentinel[4 * GD];
  fill(table, GN * GD, 37, -1, 1);
  int32_t bad[4] = {0, 1, 7, 2}, good[4] = {4, 3, 2, 1};
  pto_program *p = pto_program_new("strict");
  pto_program_push_label(p, "sfa");
  pto_program_push_label(p, "kv");
  int64_t s[1] = {4};
  pto_tensor *tt = in2(p, "table", PTO_F32, GN, GD);
  pto_tensor *ti = pto_input(p, "idx", PTO_I32, 1, s);
  pto_tensor *g = pto_gather(p, tt, ti, PTO_GATHER_STRICT);
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  pto_output(p, g, "g");
  BUILD_OK(p);
  memset(out, 0x5a, sizeof out);
  memcpy(sentinel, out, sizeof out);
  const void *ins[] = {table, bad};
  void *outs[] = {out};
  cr_assert_eq(pto_program_eval(p, ins, outs), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "gather");
  EXPECT_MSG_HAS(p, "'sfa.kv'");
  EXPECT_MSG_HAS(p, "index 7");
  EXPECT_MSG_HAS(p, "[0, 5)");
  cr_expect(memcmp(out, sentinel, sizeof out) == 0,
            "outputs untouched by a failed run");
  /* a run-time error is not sticky: the program still builds and runs */
  cr_expect_eq(pto_program_status(p), PTO_OK);
  ins[1] = good;
  EVAL_OK(p, ins, outs);
  cr_expect_str_eq(pto_program_error(p), "");
  for (int i = 0; i < 4; i++)
    for (int d = 0; d < GD; d++)
      EXPECT_F32(out[i * GD + d], table[good[i] * GD + d], "%d,%d", i, d);
  pto_program_free(p);
}

/* ---- concat, full, iota ------------------------------------------------- */

Test(core, eval_concat_each_axis) {
  enum { A = 2, B = 3, D = 4 };
  float x[A * B * D], y[A * B * D], z[D * B * A];
  fill(x, A * B * D, 38, -5, 5);
  fill(y, A * B * D, 39, -5, 5);
  fill(z, A * B * D, 40, -5, 5);
  float o0[2 * A * B * D], o1[2 * A * B * D], o2[3 * A * B * D];
  pto_program *p = pto_program_new("concat");
  int64_t sh[3] = {A, B, D}, shz[3] = {D, B, A};
  pto_tensor *tx = pto_input(p, "x", PTO_F32, 3, sh);
  pto_tensor *ty = pto_input(p, "y", PTO_F32, 3, sh);
  pto_tensor *tz = pto_transpose(p, pto_input(p, "z", PTO_F32, 3, shz), 0, 2);
  pto_tensor *c0 = pto_concat(p, 2, (pto_tensor *[]){tx, ty}, 0);
  pto_tensor *c1 = pto_concat(p, 2, (pto_tensor *[]){ty, tx}, 1);
  pto_tensor *c2 = pto_concat(p, 3, (pto_tensor *[]){tx, tz, ty}, -1);
  pto_output(p, c0, "c0");
  pto_output(p, c1, "c1");
  pto_output(p, c2, "c2");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dim(c0, 0), 2 * A);
  cr_expect_eq(pto_tensor_dim(c1, 1), 2 * B);
  cr_expect_eq(pto_tensor_dim(c2, 2), 3 * D);
  const void *ins[] = {x, y, z};
  void *outs[] = {o0, o1, o2};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < A; i++)
    for (int j = 0; j < B; j++)
      for (int k = 0; k < D; k++) {
        int e = (i * B + j) * D + k;
        float zv = z[(k * B + j) * A + i]; /* transpose(z)[i][j][k] */
        EXPECT_F32(o0[e], x[e], "axis 0 x %d", e);
        EXPECT_F32(o0[A * B * D + e], y[e], "axis 0 y %d", e);
        EXPECT_F32(o1[(i * 2 * B + j) * D + k], y[e], "axis 1 y %d", e);
        EXPECT_F32(o1[(i * 2 * B + B + j) * D + k], x[e], "axis 1 x %d", e);
        EXPECT_F32(o2[(i * B + j) * 3 * D + k], x[e], "axis 2 x %d", e);
        EXPECT_F32(o2[(i * B + j) * 3 * D + D + k], zv, "axis 2 z %d", e);
        EXPECT_F32(o2[(i * B + j) * 3 * D + 2 * D + k], y[e], "axis 2 y %d", e);
      }
  pto_program_free(p);
}

/* A program without inputs may pass NULL for its inputs array. */
Test(core, eval_full_and_iota) {
  float ff[2 * 3], fi[2 * 5];
  int32_t ii[3 * 4], fullint[4];
  uint16_t fb[4], fh[4];
  pto_program *p = pto_program_new("fill");
  int64_t s23[2] = {2, 3}, s25[2] = {2, 5}, s34[2] = {3, 4}, s4[1] = {4};
  pto_output(p, pto_full(p, PTO_F32, 2, s23, 0.1), "ff");
  pto_output(p, pto_iota(p, PTO_F32, 2, s25, -3), "fi");
  pto_output(p, pto_iota(p, PTO_I32, 2, s34, 1000), "ii");
  pto_output(p, pto_full(p, PTO_I32, 1, s4, -2.5), "fullint"); /* even: -2 */
  pto_output(p, pto_full(p, PTO_BF16, 1, s4, 1.0 + 1.0 / 256), "fb");
  pto_output(p, pto_full(p, PTO_F16, 1, s4, 0.1), "fh");
  void *outs[] = {ff, fi, ii, fullint, fb, fh};
  EVAL_OK(p, NULL, outs);
  for (int i = 0; i < 6; i++)
    EXPECT_F32(ff[i], 0.1f, "full %d", i);
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 5; c++)
      EXPECT_F32(fi[r * 5 + c], (float)(c - 3), "iota %d,%d", r, c);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      cr_expect_eq(ii[r * 4 + c], 1000 + c);
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(fullint[i], -2);
    cr_expect_eq(fb[i], 0x3f80); /* 1 + 2^-8 ties to even: 1.0 */
    cr_expect_eq(fh[i], f16_enc(0.1f));
  }
  pto_program_free(p);
}
