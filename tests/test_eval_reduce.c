/* core: the reference evaluator (pto_program_eval), sums and what is built
 * on them: row and column reductions, matmul (transpose flags, batch
 * broadcast, relu_wsum with its causal mask, accumulation, half operands),
 * softmax and PyPTO's worked example (a row sum of a matmul); against
 * expectations computed here in plain C on random data with fixed seeds
 * (tolerances: tests/eval_test.h). */
#include "tests/eval_test.h"

/* ---- reductions --------------------------------------------------------- */

#define B3 3
Test(core, eval_reductions_keep_dims) {
  float a[B3 * R * C];
  fill(a, B3 * R * C, 22, -10, 10);
  a[7] = NAN; /* row 1 of batch 0 has a NaN: max/min/sum give NaN */
  float rs[B3 * R], rmax[B3 * R], rmin[B3 * R], cs[B3 * C], cmax[B3 * C];
  pto_program *p = pto_program_new("reduce");
  int64_t sh[3] = {B3, R, C};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 3, sh);
  pto_tensor *t_rs = pto_rowsum(p, ta), *t_cs = pto_colsum(p, ta);
  pto_output(p, t_rs, "rowsum");
  pto_output(p, pto_rowmax(p, ta), "rowmax");
  pto_output(p, pto_rowmin(p, ta), "rowmin");
  pto_output(p, t_cs, "colsum");
  pto_output(p, pto_colmax(p, ta), "colmax");
  BUILD_OK(p);
  cr_expect(pto_tensor_dim(t_rs, 0) == B3 && pto_tensor_dim(t_rs, 1) == R &&
            pto_tensor_dim(t_rs, 2) == 1);
  cr_expect(pto_tensor_dim(t_cs, 0) == B3 && pto_tensor_dim(t_cs, 1) == 1 &&
            pto_tensor_dim(t_cs, 2) == C);
  const void *ins[] = {a};
  void *outs[] = {rs, rmax, rmin, cs, cmax};
  EVAL_OK(p, ins, outs);
  for (int q = 0; q < B3; q++) {
    for (int r = 0; r < R; r++) {
      double s = 0, mag = 0;
      float mx = -INFINITY, mn = INFINITY;
      int has_nan = 0;
      for (int c = 0; c < C; c++) {
        float v = a[(q * R + r) * C + c];
        has_nan |= isnan(v);
        s += v;
        mag += fabs(v);
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
      }
      int i = q * R + r;
      if (has_nan) {
        cr_expect(isnan(rs[i]) && isnan(rmax[i]) && isnan(rmin[i]), "%d", i);
        continue;
      }
      EXPECT_CLOSE(rs[i], s, mag, 1e-5, "rowsum %d", i);
      EXPECT_F32(rmax[i], mx, "rowmax %d", i);
      EXPECT_F32(rmin[i], mn, "rowmin %d", i);
    }
    for (int c = 0; c < C; c++) {
      double s = 0, mag = 0;
      float mx = -INFINITY;
      int has_nan = 0;
      for (int r = 0; r < R; r++) {
        float v = a[(q * R + r) * C + c];
        has_nan |= isnan(v);
        s += v;
        mag += fabs(v);
        mx = v > mx ? v : mx;
      }
      int i = q * C + c;
      if (has_nan) {
        cr_expect(isnan(cs[i]) && isnan(cmax[i]), "col %d", i);
        continue;
      }
      EXPECT_CLOSE(cs[i], s, mag, 1e-5, "colsum %d", i);
      EXPECT_F32(cmax[i], mx, "colmax %d", i);
    }
  }
  pto_program_free(p);
}

Test(core, eval_reductions_i32_wrap) {
  int32_t a[2 * 4] = {INT32_MAX, 1, 2, 3, -5, INT32_MIN, -1, 7};
  int32_t rs[2], rmax[2], rmin[2], cs[4];
  pto_program *p = pto_program_new("reduce_i32");
  pto_tensor *ta = in2(p, "a", PTO_I32, 2, 4);
  pto_output(p, pto_rowsum(p, ta), "rs");
  pto_output(p, pto_rowmax(p, ta), "rmax");
  pto_output(p, pto_rowmin(p, ta), "rmin");
  pto_output(p, pto_colsum(p, ta), "cs");
  const void *ins[] = {a};
  void *outs[] = {rs, rmax, rmin, cs};
  EVAL_OK(p, ins, outs);
  cr_expect_eq(rs[0], wrap((int64_t)INT32_MAX + 6));
  cr_expect_eq(rs[1], wrap((int64_t)INT32_MIN + 1));
  cr_expect_eq(rmax[0], INT32_MAX);
  cr_expect_eq(rmin[1], INT32_MIN);
  for (int c = 0; c < 4; c++)
    cr_expect_eq(cs[c], wrap((int64_t)a[c] + a[4 + c]), "col %d", c);
  pto_program_free(p);
}

/* ---- matmul ------------------------------------------------------------- */

#define MM 5
#define MK 7
#define MN 3
/* a is [M,K] (or [K,M] when ta), b is [K,N] (or [N,K] when tb). */
static double ref_mm(const float *a, const float *b, int ta, int tb, int m,
                     int n, double *mag) {
  double s = 0;
  *mag = 0;
  for (int k = 0; k < MK; k++) {
    double x = ta ? a[k * MM + m] : a[m * MK + k];
    double y = tb ? b[n * MK + k] : b[k * MN + n];
    s += x * y;
    *mag += fabs(x * y);
  }
  return s;
}

Test(core, eval_matmul_each_transpose_flag) {
  float a[MM * MK], b[MK * MN], out[4][MM * MN];
  fill(a, MM * MK, 25, -2, 2);
  fill(b, MK * MN, 26, -2, 2);
  pto_program *p = pto_program_new("matmul");
  pto_tensor *a_mk = in2(p, "a_mk", PTO_F32, MM, MK);
  pto_tensor *a_km = in2(p, "a_km", PTO_F32, MK, MM);
  pto_tensor *b_kn = in2(p, "b_kn", PTO_F32, MK, MN);
  pto_tensor *b_nk = in2(p, "b_nk", PTO_F32, MN, MK);
  pto_output(p, pto_matmul(p, a_mk, b_kn, 0), "ab");
  pto_output(p, pto_matmul(p, a_km, b_kn, PTO_MATMUL_TRANS_A), "aTb");
  pto_output(p, pto_matmul(p, a_mk, b_nk, PTO_MATMUL_TRANS_B), "abT");
  pto_output(p,
             pto_matmul(p, a_km, b_nk, PTO_MATMUL_TRANS_A | PTO_MATMUL_TRANS_B),
             "aTbT");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dim(pto_program_output(p, 1), 0), MM);
  cr_expect_eq(pto_tensor_dim(pto_program_output(p, 1), 1), MN);
  /* the same data in each layout (both buffers hold the same numbers, read
   * through the layout the flag says) */
  const void *ins[] = {a, a, b, b};
  void *outs[] = {out[0], out[1], out[2], out[3]};
  EVAL_OK(p, ins, outs);
  for (int f = 0; f < 4; f++)
    for (int m = 0; m < MM; m++)
      for (int n = 0; n < MN; n++) {
        double mag, want = ref_mm(a, b, f & 1, (f >> 1) & 1, m, n, &mag);
        EXPECT_CLOSE(out[f][m * MN + n], want, mag, 1e-5, "flags %d (%d,%d)", f,
                     m, n);
      }
  pto_program_free(p);
}

/* a [2,3,M,K] x b [3,K,N] -> [2,3,M,N]; a [1,M,K] x b [4,K,N] -> [4,M,N]. */
Test(core, eval_matmul_batch_broadcast) {
  float a[2 * 3 * MM * MK], b[3 * MK * MN], o[2 * 3 * MM * MN];
  float b4[4 * MK * MN], o4[4 * MM * MN];
  fill(a, 2 * 3 * MM * MK, 27, -1, 1);
  fill(b, 3 * MK * MN, 28, -1, 1);
  fill(b4, 4 * MK * MN, 29, -1, 1);
  pto_program *p = pto_program_new("batch");
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 4, (int64_t[]){2, 3, MM, MK});
  pto_tensor *tb = pto_input(p, "b", PTO_F32, 3, (int64_t[]){3, MK, MN});
  pto_tensor *tb4 = pto_input(p, "b4", PTO_F32, 3, (int64_t[]){4, MK, MN});
  pto_tensor *c = pto_matmul(p, ta, tb, 0);
  pto_output(p, c, "c");
  /* a[1,0] as a [1,M,K] operand: a slice with a batch dim of 1 */
  pto_tensor *a10 = pto_reshape(
      p, pto_slice(p, ta, (int64_t[]){1, 0, 0, 0}, (int64_t[]){2, 1, MM, MK}),
      3, (int64_t[]){1, MM, MK});
  pto_output(p, pto_matmul(p, a10, tb4, 0), "c4");
  BUILD_OK(p);
  cr_expect(pto_tensor_ndim(c) == 4 && pto_tensor_dim(c, 0) == 2 &&
            pto_tensor_dim(c, 1) == 3);
  const void *ins[] = {a, b, b4};
  void *outs[] = {o, o4};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int m = 0; m < MM; m++)
        for (int n = 0; n < MN; n++) {
          double mag;
          double want = ref_mm(a + (i * 3 + j) * MM * MK, b + j * MK * MN, 0, 0,
                               m, n, &mag);
          EXPECT_CLOSE(o[((i * 3 + j) * MM + m) * MN + n], want, mag, 1e-5,
                       "[%d,%d,%d,%d]", i, j, m, n);
        }
  for (int q = 0; q < 4; q++)
    for (int m = 0; m < MM; m++)
      for (int n = 0; n < MN; n++) {
        double mag;
        double want =
            ref_mm(a + 3 * MM * MK, b4 + q * MK * MN, 0, 0, m, n, &mag);
        EXPECT_CLOSE(o4[(q * MM + m) * MN + n], want, mag, 1e-5, "b4 %d", q);
      }
  pto_program_free(p);
}

/* matmul_relu_wsum on [2 batches, 3 groups of 4 rows (=12), K 7] x k^T
 * [2, 9 keys, 7], a weight per row, a causal diagonal of 5 (row r sees
 * keys n <= r + 5): computed here from ref_mm in double. */
Test(core, eval_matmul_relu_wsum_groups_and_causal_mask) {
  enum { WB = 2, WG = 4, WR = 3, WM = WR * WG, WK = MK, WN = 9 };
  float q[WB * WM * WK], k[WB * WN * WK], w[WM];
  float o[WB * WR * WN], oc[WB * WR * WN];
  fill(q, WB * WM * WK, 31, -1, 1);
  fill(k, WB * WN * WK, 32, -1, 1);
  fill(w, WM, 33, -1, 1);
  pto_program *p = pto_program_new("wsum");
  pto_tensor *tq = pto_input(p, "q", PTO_F32, 3, (int64_t[]){WB, WM, WK});
  pto_tensor *tk = pto_input(p, "k", PTO_F32, 3, (int64_t[]){WB, WN, WK});
  pto_tensor *tw = in2(p, "w", PTO_F32, WM, 1); /* broadcast over batches */
  pto_output(p, pto_matmul_relu_wsum(p, tq, tk, tw, WG, PTO_MATMUL_TRANS_B, 0),
             "s");
  pto_output(p,
             pto_matmul_relu_wsum(p, tq, tk, tw, WG,
                                  PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL, 5),
             "causal");
  const void *ins[] = {q, k, w};
  void *outs[] = {o, oc};
  EVAL_OK(p, ins, outs);
  for (int b = 0; b < WB; b++)
    for (int r = 0; r < WR; r++)
      for (int n = 0; n < WN; n++) {
        double want = 0, mag = 0;
        for (int g = 0; g < WG; g++) {
          double dmag;
          double dot = ref_mm(q + (b * WM + r * WG + g) * WK, k + b * WN * WK, 0, 1,
                              0, n, &dmag);
          want += w[r * WG + g] * (dot < 0 ? 0 : dot);
          mag += fabs(w[r * WG + g]) * dmag;
        }
        const int i = (b * WR + r) * WN + n;
        EXPECT_CLOSE(o[i], want, mag, 1e-6, "[%d,%d,%d]", b, r, n);
        if (n > r + 5)
          cr_expect(isinf(oc[i]) && oc[i] < 0, "causal [%d,%d,%d] = %g", b, r,
                    n, oc[i]);
        else
          cr_expect_eq(oc[i], o[i], "causal [%d,%d,%d]", b, r, n);
      }
  pto_program_free(p);
}

Test(core, eval_matmul_acc_and_transposed_view_and_half_operands) {
  float a[MM * MK], b[MK * MN], acc[MM * MN], o_acc[MM * MN], o_view[MM * MN];
  float o_half[MM * MN];
  fill(a, MM * MK, 30, -2, 2);
  fill(b, MK * MN, 31, -2, 2);
  fill(acc, MM * MN, 32, -100, 100);
  uint16_t ab[MM * MK], bh[MK * MN];
  float af[MM * MK], bf[MK * MN]; /* their f32 values */
  for (int i = 0; i < MM * MK; i++) {
    uint32_t u;
    memcpy(&u, &a[i], 4);
    ab[i] = (uint16_t)(u >> 16); /* truncated: an exact bf16 */
    af[i] = (float)bf16_val(ab[i]);
  }
  for (int i = 0; i < MK * MN; i++) {
    bh[i] = f16_enc(b[i]);
    bf[i] = (float)f16_val(bh[i]);
  }
  pto_program *p = pto_program_new("acc");
  pto_tensor *ta = in2(p, "a", PTO_F32, MM, MK),
             *tb = in2(p, "b", PTO_F32, MK, MN);
  pto_tensor *tacc = in2(p, "acc", PTO_F32, MM, MN);
  pto_tensor *tab = in2(p, "a_bf16", PTO_BF16, MM, MK);
  pto_tensor *tbh = in2(p, "b_f16", PTO_F16, MK, MN);
  pto_output(p, pto_matmul_acc(p, tacc, ta, tb, 0), "acc");
  /* transpose(a) is a [K,M] view; TRANS_A reads it back as [M,K] */
  pto_output(p,
             pto_matmul(p, pto_transpose(p, ta, 0, 1), tb, PTO_MATMUL_TRANS_A),
             "view");
  pto_output(p, pto_matmul(p, tab, tbh, 0), "half");
  const void *ins[] = {a, b, acc, ab, bh};
  void *outs[] = {o_acc, o_view, o_half};
  EVAL_OK(p, ins, outs);
  for (int m = 0; m < MM; m++)
    for (int n = 0; n < MN; n++) {
      double mag, want = ref_mm(a, b, 0, 0, m, n, &mag);
      EXPECT_CLOSE(o_acc[m * MN + n], want + acc[m * MN + n],
                   mag + fabs(acc[m * MN + n]), 1e-5, "acc %d,%d", m, n);
      EXPECT_CLOSE(o_view[m * MN + n], want, mag, 1e-5, "view %d,%d", m, n);
      want = ref_mm(af, bf, 0, 0, m, n, &mag);
      EXPECT_CLOSE(o_half[m * MN + n], want, mag, 1e-5, "half %d,%d", m, n);
    }
  pto_program_free(p);
}

/* ---- composites --------------------------------------------------------- */

Test(core, eval_softmax) {
  enum { M = 6, N = 10 };
  float a[M * N], o[M * N];
  fill(a, M * N, 33, -20, 20);
  pto_program *p = pto_program_new("softmax");
  pto_output(p, pto_softmax(p, in2(p, "a", PTO_F32, M, N)), "y");
  BUILD_OK(p);
  cr_expect_eq(pto_program_num_ops(p), 6); /* rowmax sub exp rowsum recip mul */
  const void *ins[] = {a};
  void *outs[] = {o};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < M; r++) {
    double mx = -INFINITY, s = 0, total = 0;
    for (int c = 0; c < N; c++)
      mx = a[r * N + c] > mx ? a[r * N + c] : mx;
    for (int c = 0; c < N; c++)
      s += exp(a[r * N + c] - mx);
    for (int c = 0; c < N; c++) {
      double want = exp(a[r * N + c] - mx) / s;
      EXPECT_CLOSE(o[r * N + c], want, want, 1e-5, "%d,%d", r, c);
      total += o[r * N + c];
    }
    EXPECT_CLOSE(total, 1.0, 1.0, 1e-5, "row %d sums to 1", r);
  }
  pto_program_free(p);
}

/* ---- PyPTO's worked example --------------------------------------------- */

Test(core, eval_pypto_example_rowsum_matmul) {
  enum { N = 64, W = 32 };
  static float A[N * N], B[N * N], Wt[N * W], Cout[N];
  fill(A, N * N, 43, -1, 1);
  fill(B, N * N, 44, -1, 1);
  fill(Wt, N * W, 45, -1, 1);
  pto_program *p = pto_program_new("example");
  int64_t s[2] = {N, N}, w[2] = {N, W};
  pto_tensor *a = pto_input(p, "A", PTO_F32, 2, s);
  pto_tensor *b = pto_input(p, "B", PTO_F32, 2, s);
  pto_tensor *tw = pto_input(p, "W", PTO_F32, 2, w);
  pto_program_set_vec_tile(p, 32, 32);
  pto_tensor *c =
      pto_rowsum(p, pto_matmul(p, pto_add(p, pto_muls(p, a, 2), b), tw, 0));
  pto_output(p, c, "C");
  BUILD_OK(p);
  cr_expect(pto_tensor_dim(c, 0) == N && pto_tensor_dim(c, 1) == 1);
  const void *ins[] = {A, B, Wt};
  void *outs[] = {Cout};
  EVAL_OK(p, ins, outs);
  for (int m = 0; m < N; m++) {
    double want = 0, mag = 0;
    for (int n = 0; n < W; n++)
      for (int k = 0; k < N; k++) {
        double x = 2.0 * A[m * N + k] + B[m * N + k];
        want += x * Wt[k * W + n];
        mag += fabs(x * Wt[k * W + n]);
      }
    EXPECT_CLOSE(Cout[m], want, mag, 1e-5, "row %d", m);
  }
  pto_program_free(p);
}
