/* core: the reference evaluator on the composites (sigmoid, SiLU, GELU,
 * mean, variance, layer and RMS norm), the masked matmul, iota along any
 * axis, concat of many tensors and assemble chains, each against a plain-C
 * reference written here: the composites in double within the bounds
 * include/pto/program.h states, the rest exact. */
#include "core/program.h"
#include "tests/eval_test.h"

static const double U = 0x1p-24;

/* ---- activations -------------------------------------------------------- */

/* Random values in [-12, 12] and the edges: infinities, NaN, signed zeros,
 * where exp overflows. */
static void act_inputs(float *x, int n, uint64_t seed) {
  static const float edge[] = {-INFINITY, INFINITY, NAN,    0.0f,  -0.0f,
                               -87.0f,    -88.5f,   -90.0f, 88.5f, 100.0f,
                               -1e-30f,   1e-30f,   -3.0f,  3.0f,  -0.6f};
  fill(x, n, seed, -12, 12);
  for (int i = 0; i < (int)(sizeof edge / sizeof edge[0]) && i < n; i++)
    x[i] = edge[i];
}

static double sigmoid_ref(double x) {
  return 1 / (1 + exp(-x));
}

Test(core, eval_activations_within_their_bounds) {
  enum { N = 400 };
  float x[N], sg[N], sl[N], ge[N];
  act_inputs(x, N, 71);
  pto_program *p = pto_program_new("act");
  pto_tensor *t = pto_input(p, "x", PTO_F32, 1, (const int64_t[]){N});
  pto_output(p, pto_sigmoid(p, t), "sigmoid");
  pto_output(p, pto_silu(p, t), "silu");
  pto_output(p, pto_gelu(p, t), "gelu");
  const void *ins[] = {x};
  void *outs[] = {sg, sl, ge};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < N; i++) {
    const double v = x[i], s = sigmoid_ref(v);
    const double z = 0.79788456080286535588 * (v + 0.044715 * v * v * v);
    const double g = 0.5 * v * (1 + tanh(z)), l = v * s;
    if (isnan(v)) {
      cr_expect(isnan(sg[i]) && isnan(sl[i]) && isnan(ge[i]), "NaN at %d", i);
      continue;
    }
    if (isinf(v)) {
      EXPECT_F32(sg[i], v > 0 ? 1.0f : 0.0f, "sigmoid(%g)", v);
      if (v > 0)
        EXPECT_F32(sl[i], INFINITY, "silu(+inf)");
      else
        cr_expect(isnan(sl[i]), "silu(-inf) is NaN, as x sigmoid(x) is");
      continue;
    }
    const double bs = s >= 0x1p-126 ? 6 * U * s : 0x1p-126;
    EXPECT_CLOSE(sg[i], s, bs, 1, "sigmoid(%.9g)", v);
    EXPECT_CLOSE(sl[i], l, v >= -88 ? 6 * U * fabs(l) : 0x1p-120, 1,
                 "silu(%.9g)", v);
    EXPECT_CLOSE(ge[i], g, 0x1p-21 * (1 + fabs(v)), 1, "gelu(%.9g)", v);
  }
  pto_program_free(p);
}

/* ---- row statistics and norms ------------------------------------------- */

typedef struct row_stats {
  double mean, amean, var, ms;
} row_stats;

static row_stats stats_of(const float *x, int n) {
  row_stats s = {0, 0, 0, 0};
  for (int i = 0; i < n; i++) {
    s.mean += x[i];
    s.amean += fabs(x[i]);
    s.ms += (double)x[i] * x[i];
  }
  s.mean /= n;
  s.amean /= n;
  s.ms /= n;
  for (int i = 0; i < n; i++)
    s.var += (x[i] - s.mean) * (x[i] - s.mean);
  s.var /= n;
  return s;
}

/* Rows of n (several row lengths, an offset that makes the variance small
 * against the mean), each op against its reference and bound. */
static void check_norms(int rows, int n, float offset, uint64_t seed) {
  const size_t sz = (size_t)rows * n;
  float *x = malloc(sz * sizeof *x), *g = malloc(n * sizeof *g),
        *b = malloc(n * sizeof *b), *ln = malloc(sz * sizeof *ln),
        *rn = malloc(sz * sizeof *rn), *mn = malloc(rows * sizeof *mn),
        *vr = malloc(rows * sizeof *vr), *ln0 = malloc(sz * sizeof *ln0);
  cr_assert(x && g && b && ln && rn && mn && vr && ln0);
  fill(x, (int)sz, seed, -2, 2);
  for (size_t i = 0; i < sz; i++)
    x[i] += offset;
  fill(g, n, seed + 1, -1.5f, 1.5f);
  fill(b, n, seed + 2, -1, 1);
  const double eps = 1e-5, epsf = (float)eps;
  pto_program *p = pto_program_new("norms");
  pto_tensor *tx = in2(p, "x", PTO_F32, rows, n);
  pto_tensor *tg = pto_input(p, "g", PTO_F32, 1, (const int64_t[]){n});
  pto_tensor *tb = in2(p, "b", PTO_F32, 1, n);
  pto_output(p, pto_layer_norm(p, tx, tg, tb, eps), "ln");
  pto_output(p, pto_rms_norm(p, tx, tg, eps), "rms");
  pto_output(p, pto_mean(p, tx), "mean");
  pto_output(p, pto_var(p, tx), "var");
  pto_output(p, pto_layer_norm(p, tx, NULL, NULL, 0), "ln0");
  const void *ins[] = {x, g, b};
  void *outs[] = {ln, rn, mn, vr, ln0};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * n;
    row_stats s = stats_of(xr, n);
    const double d = (n + 1) * U * s.amean;
    EXPECT_CLOSE(mn[r], s.mean, d, 1, "mean of row %d (n %d)", r, n);
    EXPECT_CLOSE(vr[r], s.var, (n + 5) * U * s.var + d * d, 1,
                 "var of row %d (n %d)", r, n);
    const double sd = sqrt(s.var + epsf), sd0 = sqrt(s.var),
                 rr = 1 / sqrt(s.ms + epsf);
    for (int c = 0; c < n; c++) {
      const size_t i = (size_t)r * n + c;
      const double z = (xr[c] - s.mean) / sd, y = z * g[c] + b[c];
      EXPECT_CLOSE(ln[i], y,
                   fabs(g[c]) * ((n + 1) * U * s.amean / sd +
                                 (n / 2.0 + 9) * U * fabs(z)) +
                       U * fabs(y),
                   1, "layer_norm [%d,%d] (n %d)", r, c, n);
      if (sd0 > 0) {
        const double z0 = (xr[c] - s.mean) / sd0;
        EXPECT_CLOSE(ln0[i], z0,
                     (n + 1) * U * s.amean / sd0 + (n / 2.0 + 9) * U * fabs(z0),
                     1, "layer_norm without gamma [%d,%d]", r, c);
      }
      const double yr = xr[c] * rr * g[c];
      EXPECT_CLOSE(rn[i], yr, (n / 2.0 + 8) * U * fabs(yr), 1,
                   "rms_norm [%d,%d] (n %d)", r, c, n);
    }
  }
  pto_program_free(p);
  free(x), free(g), free(b), free(ln), free(rn), free(mn), free(vr), free(ln0);
}

Test(core, eval_norms_and_row_statistics_within_their_bounds) {
  check_norms(3, 1, 0, 5);
  check_norms(4, 7, 0, 6);
  check_norms(5, 129, 0.5f, 7);
  check_norms(2, 4096, 3, 8);
  check_norms(3, 64, 100, 9); /* a mean far larger than the spread */
}

/* A constant row: variance 0, the layer norm is beta (eps keeps it finite). */
Test(core, eval_layer_norm_of_a_constant_row_is_beta) {
  float x[8], b[8], y[8], v[1];
  for (int i = 0; i < 8; i++)
    x[i] = 3.25f, b[i] = (float)i - 2;
  pto_program *p = pto_program_new("const");
  pto_tensor *tx = in2(p, "x", PTO_F32, 1, 8);
  pto_output(p,
             pto_layer_norm(p, tx, NULL,
                            pto_input(p, "b", PTO_F32, 1, (const int64_t[]){8}),
                            1e-6),
             "y");
  pto_output(p, pto_var(p, tx), "v");
  const void *ins[] = {x, b};
  void *outs[] = {y, v};
  EVAL_OK(p, ins, outs);
  EXPECT_F32(v[0], 0.0f, "var");
  for (int i = 0; i < 8; i++)
    EXPECT_F32(y[i], b[i], "y[%d]", i);
  pto_program_free(p);
}

/* ---- masked matmul ------------------------------------------------------ */

/* Small integers: every product and sum is exact, so the values are too. */
static void check_masked(int B, int M, int N, int K, int causal, int64_t diag) {
  const int na = B * M * K, nb = N * K, no = B * M * N;
  float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b),
        *o = malloc(no * sizeof *o);
  cr_assert(a && b && o);
  uint64_t s = (uint64_t)(B * 1000 + M * 100 + N * 10 + K);
  for (int i = 0; i < na; i++)
    a[i] = (float)((int)(rng_next(&s) % 9) - 4);
  for (int i = 0; i < nb; i++)
    b[i] = (float)((int)(rng_next(&s) % 9) - 4);
  pto_program *p = pto_program_new("masked");
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 3, (const int64_t[]){B, M, K});
  pto_tensor *tb = in2(p, "b", PTO_F32, N, K);
  pto_tensor *y =
      causal ? pto_matmul(p, ta, tb, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL)
             : pto_matmul_masked(p, ta, tb, PTO_MATMUL_TRANS_B, diag);
  pto_output(p, y, "y");
  const void *ins[] = {a, b};
  void *outs[] = {o};
  EVAL_OK(p, ins, outs);
  const int64_t dg = causal ? N - M : diag;
  for (int z = 0; z < B; z++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double want = -INFINITY;
        if (j <= i + dg) {
          want = 0;
          for (int k = 0; k < K; k++)
            want += (double)a[(z * M + i) * K + k] * b[j * K + k];
        }
        EXPECT_F32(o[(z * M + i) * N + j], (float)want,
                   "[%d,%d,%d] diag %lld", z, i, j, (long long)dg);
      }
  pto_program_free(p);
  free(a), free(b), free(o);
}

Test(core, eval_masked_matmul_is_minus_inf_past_its_diagonal) {
  check_masked(1, 5, 9, 3, 1, 0); /* causal, end-aligned: diag 4 */
  check_masked(2, 6, 6, 4, 1, 0); /* square: the lower triangle */
  check_masked(2, 7, 5, 2, 0, -2);
  check_masked(1, 4, 4, 3, 0, 10); /* nothing masked */
  check_masked(1, 4, 4, 3, 0, -9); /* everything masked */
}

/* ---- iota, concat, assemble --------------------------------------------- */

Test(core, eval_iota_counts_along_any_axis) {
  const int64_t s[4] = {2, 3, 4, 5};
  enum { N = 2 * 3 * 4 * 5 };
  int32_t oi[4][N];
  float of[4][N];
  pto_program *p = pto_program_new("iota");
  for (int ax = 0; ax < 4; ax++) {
    char nm[8];
    snprintf(nm, sizeof nm, "i%d", ax);
    pto_output(p, pto_iota_axis(p, PTO_I32, 4, s, ax - 4, -3 + ax), nm);
    snprintf(nm, sizeof nm, "f%d", ax);
    pto_output(p, pto_iota_axis(p, PTO_F32, 4, s, ax, 1000 * ax), nm);
  }
  void *outs[] = {oi[0], of[0], oi[1], of[1], oi[2], of[2], oi[3], of[3]};
  EVAL_OK(p, NULL, outs);
  for (int j = 0; j < N; j++) {
    int64_t idx[4] = {j / 60, j / 20 % 3, j / 5 % 4, j % 5};
    for (int ax = 0; ax < 4; ax++) {
      cr_expect_eq(oi[ax][j], -3 + ax + idx[ax], "i32 axis %d at %d", ax, j);
      EXPECT_F32(of[ax][j], (float)(1000 * ax + idx[ax]), "f32 axis %d", ax);
    }
  }
  pto_program_free(p);
}

Test(core, eval_concat_of_many) {
  enum { K = 20 };
  float x[K][6], o0[K * 6], o1[K * 6];
  pto_program *p = pto_program_new("cat");
  pto_tensor *ts[K];
  for (int i = 0; i < K; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "x%d", i);
    ts[i] = in2(p, nm, PTO_F32, 2, 3);
    fill(x[i], 6, 100 + i, -9, 9);
  }
  pto_output(p, pto_concat(p, K, ts, 0), "rows");
  pto_output(p, pto_concat(p, K, ts, -1), "cols");
  const void *ins[K];
  for (int i = 0; i < K; i++)
    ins[i] = x[i];
  void *outs[] = {o0, o1};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < K; i++)
    for (int r = 0; r < 2; r++)
      for (int c = 0; c < 3; c++) {
        EXPECT_F32(o0[(2 * i + r) * 3 + c], x[i][r * 3 + c], "rows %d", i);
        EXPECT_F32(o1[r * 3 * K + 3 * i + c], x[i][r * 3 + c], "cols %d", i);
      }
  pto_program_free(p);
}

/* The reference: base, then each block written in order. */
static void ref_assemble(float *out, const float *base, int NR, int NC, int n,
                         const int (*blk)[4], float *const *src) {
  if (base)
    memcpy(out, base, (size_t)NR * NC * sizeof *out);
  for (int k = 0; k < n; k++) /* {r0, c0, rows, cols} */
    for (int r = 0; r < blk[k][2]; r++)
      for (int c = 0; c < blk[k][3]; c++)
        out[(blk[k][0] + r) * NC + blk[k][1] + c] = src[k][r * blk[k][3] + c];
}

Test(core, eval_assemble_writes_blocks_in_order) {
  enum { NR = 12, NC = 10, NB = 6 };
  /* overlapping blocks, one past another's edge, one covering a corner */
  static const int blk[NB][4] = {{0, 0, 6, 5},  {3, 2, 6, 5}, {6, 5, 6, 5},
                                 {0, 5, 12, 1}, {5, 0, 2, 10}, {11, 9, 1, 1}};
  float base[NR * NC], *src[NB], want[NR * NC], got[NR * NC], mid[NR * NC],
      fork[NR * NC], wmid[NR * NC], wfork[NR * NC];
  fill(base, NR * NC, 1, -5, 5);
  pto_program *p = pto_program_new("asm");
  pto_tensor *tb = in2(p, "base", PTO_F32, NR, NC), *y = pto_adds(p, tb, 1);
  float base1[NR * NC];
  for (int i = 0; i < NR * NC; i++)
    base1[i] = base[i] + 1;
  pto_tensor *ts[NB];
  for (int k = 0; k < NB; k++) {
    src[k] = malloc((size_t)blk[k][2] * blk[k][3] * sizeof(float));
    fill(src[k], blk[k][2] * blk[k][3], 10 + k, -50, 50);
    char nm[8];
    snprintf(nm, sizeof nm, "s%d", k);
    ts[k] = in2(p, nm, PTO_F32, blk[k][2], blk[k][3]);
  }
  pto_tensor *m = NULL;
  for (int k = 0; k < NB; k++) {
    y = pto_assemble(p, y, ts[k], (const int64_t[]){blk[k][0], blk[k][1]});
    if (k == 2)
      m = y;
  }
  pto_output(p, y, "y");
  pto_output(p, m, "mid"); /* an intermediate result of the chain, needed */
  /* a fork off the middle of the chain */
  pto_output(p, pto_assemble(p, m, ts[5], (const int64_t[]){0, 0}), "fork");
  const void *ins[1 + NB] = {base};
  for (int k = 0; k < NB; k++)
    ins[1 + k] = src[k];
  void *outs[] = {got, mid, fork};
  EVAL_OK(p, ins, outs);
  ref_assemble(want, base1, NR, NC, NB, blk, src);
  ref_assemble(wmid, base1, NR, NC, 3, blk, src);
  const int fb[4][4] = {{0, 0, 6, 5}, {3, 2, 6, 5}, {6, 5, 6, 5}, {0, 0, 1, 1}};
  float *fs[4] = {src[0], src[1], src[2], src[5]};
  ref_assemble(wfork, base1, NR, NC, 4, fb, fs);
  for (int i = 0; i < NR * NC; i++) {
    EXPECT_F32(got[i], want[i], "y[%d,%d]", i / NC, i % NC);
    EXPECT_F32(mid[i], wmid[i], "mid[%d,%d]", i / NC, i % NC);
    EXPECT_F32(fork[i], wfork[i], "fork[%d,%d]", i / NC, i % NC);
  }
  pto_program_free(p);
  for (int k = 0; k < NB; k++)
    free(src[k]);
}

/* 16 bf16 blocks cover the whole output: the chain never reads its base
 * (the fill is not even run), and every block lands bit for bit. */
Test(core, eval_assemble_of_a_grid_of_blocks) {
  enum { S = 4, B = 3 };
  uint16_t blocks[S * S][B * B], out[S * B * S * B];
  pto_program *p = pto_program_new("grid");
  pto_tensor *y =
      pto_full(p, PTO_BF16, 2, (const int64_t[]){S * B, S * B}, -1);
  const void *ins[S * S];
  for (int k = 0; k < S * S; k++) {
    char nm[8];
    snprintf(nm, sizeof nm, "b%d", k);
    pto_tensor *t = in2(p, nm, PTO_BF16, B, B);
    for (int i = 0; i < B * B; i++)
      blocks[k][i] = (uint16_t)(0x3f80 + k * 16 + i); /* distinct values */
    ins[k] = blocks[k];
    y = pto_assemble(p, y, t, (const int64_t[]){B * (k / S), B * (k % S)});
  }
  cr_expect(y->producer->flags & PTO_ASSEMBLE_COVERED);
  pto_output(p, y, "y");
  void *outs[] = {out};
  EVAL_OK(p, ins, outs);
  for (int k = 0; k < S * S; k++)
    for (int i = 0; i < B * B; i++) {
      int r = B * (k / S) + i / B, c = B * (k % S) + i % B;
      cr_expect_eq(out[r * S * B + c], blocks[k][i], "block %d at %d", k, i);
    }
  pto_program_free(p);
}
