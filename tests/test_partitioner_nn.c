/* partitioner: the composites (sigmoid, SiLU, GELU, mean, variance, layer
 * and RMS norm), the masked matmul, iota along any axis, concat of many
 * tensors and assemble chains, compiled: each against a plain-C reference
 * (the bounds include/pto/program.h states; data movement exact) and the
 * reference evaluator, run serially and on runtimes of 1 to 3 workers
 * (shared, and dedicated cube and vector ones) that must write the serial
 * run's bytes; and the structure they compile to (tiles past a mask's
 * diagonal never computed, assembled blocks stored straight into the
 * output). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "core/exe.h"
#include "pto/pto.h"
#include "tests/partitioner_test.h"

static const double U = 0x1p-24;

static uint64_t rng(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static float *rand_f32(size_t n, uint64_t seed, float lo, float hi) {
  float *x = malloc((n + 1) * sizeof *x);
  cr_assert_not_null(x);
  for (size_t i = 0; i < n; i++)
    x[i] = lo + (hi - lo) * (float)((double)(rng(&seed) >> 40) / 16777216.0);
  return x;
}

/* Small integers: products and sums of them are exact in f32. */
static float *rand_int(size_t n, uint64_t seed, int span) {
  float *x = malloc((n + 1) * sizeof *x);
  cr_assert_not_null(x);
  for (size_t i = 0; i < n; i++)
    x[i] = (float)((int)(rng(&seed) % (uint64_t)(2 * span + 1)) - span);
  return x;
}

/* Runs e serially into outs (n outputs of bytes[i] bytes), then on runtimes
 * of 1, 2 and 3 shared workers and of 1+1, 1+2 and 2+1 dedicated cube and
 * vector workers: each must write exactly the serial run's bytes. */
static void run_everywhere(pto_executable *e, const void *const *ins,
                           void **outs, int n, const size_t *bytes) {
  cr_assert_eq(pto_executable_run_serial(e, ins, outs), PTO_OK, "%s",
               pto_executable_error(e));
  void *got[8];
  cr_assert(n <= 8);
  for (int i = 0; i < n; i++)
    cr_assert_not_null(got[i] = malloc(bytes[i]));
  static const uint32_t ded[3][2] = {{1, 1}, {1, 2}, {2, 1}};
  for (int v = 0; v < 6; v++) {
    pto_machine m;
    cr_assert_eq(pto_machine_host(&m), PTO_OK);
    m.shared = v < 3;
    m.workers[PTO_CORE_CUBE] = v < 3 ? (uint32_t)v + 1 : ded[v - 3][0];
    m.workers[PTO_CORE_VECTOR] = v < 3 ? (uint32_t)v + 1 : ded[v - 3][1];
    pto_runtime_params prm = pto_runtime_params_default();
    prm.machine = &m;
    pto_runtime *rt = NULL;
    cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK);
    for (int i = 0; i < n; i++)
      memset(got[i], 0xa5, bytes[i]);
    cr_assert_eq(pto_runtime_run(rt, e, ins, got), PTO_OK, "%s",
                 pto_executable_error(e));
    for (int i = 0; i < n; i++)
      cr_assert(memcmp(got[i], outs[i], bytes[i]) == 0,
                "output %d: %u+%u %s workers differ from the serial run", i,
                m.workers[PTO_CORE_CUBE], m.workers[PTO_CORE_VECTOR],
                m.shared ? "shared" : "dedicated");
    pto_runtime_free(rt);
  }
  for (int i = 0; i < n; i++)
    free(got[i]);
}

/* Bit for bit, any NaN matching any NaN. */
static int same_f32(float a, float b) {
  return isnan(a) || isnan(b) ? isnan(a) && isnan(b)
                              : memcmp(&a, &b, sizeof a) == 0;
}
#define EXPECT_F32(got, want, ...)                                             \
  do {                                                                         \
    const float g_ = (got), w_ = (want);                                       \
    if (!same_f32(g_, w_)) {                                                   \
      cr_log_error("got %.9g want %.9g", (double)g_, (double)w_);              \
      cr_expect_fail(__VA_ARGS__);                                             \
    }                                                                          \
  } while (0)

/* |got - want| <= bound, NaN matching NaN and infinities exactly. */
#define EXPECT_NEAR(got, want, bound, ...)                                     \
  do {                                                                         \
    const double g_ = (got), w_ = (want), b_ = (bound);                        \
    int ok_ = isnan(w_)   ? isnan(g_)                                          \
              : isinf(w_) ? g_ == w_                                           \
                          : fabs(g_ - w_) <= b_;                               \
    if (!ok_) {                                                                \
      cr_log_error("got %.9g want %.9g (bound %g)", g_, w_, b_);               \
      cr_expect_fail(__VA_ARGS__);                                             \
    }                                                                          \
  } while (0)

/* ---- activations -------------------------------------------------------- */

Test(partitioner, activations_compiled_within_their_bounds) {
  enum { M = 37, N = 300 };
  const size_t n = (size_t)M * N, bytes[3] = {n * 4, n * 4, n * 4};
  float *x = rand_f32(n, 3, -12, 12), *sg = malloc(n * 4), *sl = malloc(n * 4),
        *ge = malloc(n * 4), *ev[3] = {malloc(n * 4), malloc(n * 4),
                                       malloc(n * 4)};
  x[0] = -INFINITY, x[1] = INFINITY, x[2] = NAN, x[3] = -90, x[4] = 88.5f;
  for (int tiles = 0; tiles < 2; tiles++) {
    pto_program *p = pto_program_new("act");
    pto_tensor *t = pto_input(p, "x", PTO_F32, 2, (const int64_t[]){M, N});
    if (tiles)
      pto_program_set_vec_tile(p, 8, 64);
    pto_output(p, pto_sigmoid(p, t), "sigmoid");
    pto_output(p, pto_silu(p, t), "silu");
    pto_output(p, pto_gelu(p, t), "gelu");
    pto_executable *e = compile_ok(p, NULL);
    const void *ins[] = {x};
    void *outs[] = {sg, sl, ge};
    run_everywhere(e, ins, outs, 3, bytes);
    cr_assert_eq(pto_program_eval(p, ins, (void **)ev), PTO_OK);
    for (size_t i = 0; i < n; i++) {
      const double v = x[i], s = 1 / (1 + exp(-v));
      const double z = 0.79788456080286535588 * (v + 0.044715 * v * v * v);
      const double g = 0.5 * v * (1 + tanh(z));
      const double bs = s >= 0x1p-126 ? 6 * U * s : 0x1p-126;
      const double bl = v >= -88 ? 6 * U * fabs(v * s) : 0x1p-120;
      const double bg = 0x1p-21 * (1 + fabs(v));
      if (isinf(v) && v < 0) {
        cr_expect(isnan(sl[i]) && isnan(ev[1][i]), "silu(-inf)");
        EXPECT_F32(sg[i], 0.0f, "sigmoid(-inf)");
        continue;
      }
      EXPECT_NEAR(sg[i], s, bs, "sigmoid(%.9g) tiles %d", v, tiles);
      EXPECT_NEAR(sl[i], v * s, bl, "silu(%.9g)", v);
      EXPECT_NEAR(ge[i], g, bg, "gelu(%.9g)", v);
      EXPECT_NEAR(sg[i], ev[0][i], 2 * bs, "sigmoid vs eval at %zu", i);
      EXPECT_NEAR(sl[i], ev[1][i], 2 * bl, "silu vs eval at %zu", i);
      EXPECT_NEAR(ge[i], ev[2][i], 2 * bg, "gelu vs eval at %zu", i);
    }
    pto_executable_free(e);
    pto_program_free(p);
  }
  free(x), free(sg), free(sl), free(ge);
  for (int i = 0; i < 3; i++)
    free(ev[i]);
}

/* An element-wise composite is a chain that fuses: one program, one task
 * per tile, nothing between its ops in global memory. */
Test(partitioner, an_activation_fuses_into_one_program) {
  pto_program *p = pto_program_new("silu");
  pto_tensor *t = pto_input(p, "x", PTO_F32, 2, (const int64_t[]){64, 256});
  pto_program_set_vec_tile(p, 16, 256);
  pto_output(p, pto_gelu(p, t), "y");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tensor_ops, 7);
  cr_expect_eq(st.programs, 1);
  cr_expect_eq(st.tasks, 4);
  cr_expect_eq(st.workspace_bytes, 0);
  cr_expect_eq(st.boundary_bytes, 2 * 64 * 256 * 4, "x read once, y written");
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* ---- norms and row statistics ------------------------------------------- */

static void check_norms_compiled(int M, int N, uint32_t tr, uint32_t tc,
                                 float offset) {
  const size_t n = (size_t)M * N;
  float *x = rand_f32(n, (uint64_t)(M * 7 + N), -2, 2),
        *g = rand_f32((size_t)N, 11, -1.5f, 1.5f),
        *b = rand_f32((size_t)N, 12, -1, 1);
  for (size_t i = 0; i < n; i++)
    x[i] += offset;
  float *o[4], *ev[4];
  const size_t bytes[4] = {n * 4, n * 4, (size_t)M * 4, (size_t)M * 4};
  for (int i = 0; i < 4; i++) {
    o[i] = malloc(bytes[i]);
    ev[i] = malloc(bytes[i]);
  }
  const double eps = 1e-5, epsf = (float)eps;
  pto_program *p = pto_program_new("norms");
  pto_tensor *tx = pto_input(p, "x", PTO_F32, 2, (const int64_t[]){M, N});
  pto_tensor *tg = pto_input(p, "g", PTO_F32, 1, (const int64_t[]){N});
  pto_tensor *tb = pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, N});
  if (tr || tc)
    pto_program_set_vec_tile(p, tr, tc);
  pto_output(p, pto_layer_norm(p, tx, tg, tb, eps), "ln");
  pto_output(p, pto_rms_norm(p, tx, tg, eps), "rms");
  pto_output(p, pto_mean(p, tx), "mean");
  pto_output(p, pto_var(p, tx), "var");
  pto_executable *e = compile_ok(p, NULL);
  const void *ins[] = {x, g, b};
  run_everywhere(e, ins, (void **)o, 4, bytes);
  cr_assert_eq(pto_program_eval(p, ins, (void **)ev), PTO_OK);
  for (int r = 0; r < M; r++) {
    const float *xr = x + (size_t)r * N;
    double mean = 0, amean = 0, ms = 0, var = 0;
    for (int c = 0; c < N; c++) {
      mean += xr[c];
      amean += fabs(xr[c]);
      ms += (double)xr[c] * xr[c];
    }
    mean /= N, amean /= N, ms /= N;
    for (int c = 0; c < N; c++)
      var += (xr[c] - mean) * (xr[c] - mean);
    var /= N;
    const double d = (N + 1) * U * amean, bv = (N + 5) * U * var + d * d;
    EXPECT_NEAR(o[2][r], mean, d, "mean row %d", r);
    EXPECT_NEAR(o[2][r], ev[2][r], 2 * d, "mean vs eval row %d", r);
    EXPECT_NEAR(o[3][r], var, bv, "var row %d", r);
    EXPECT_NEAR(o[3][r], ev[3][r], 2 * bv, "var vs eval row %d", r);
    const double sd = sqrt(var + epsf), rr = 1 / sqrt(ms + epsf);
    for (int c = 0; c < N; c++) {
      const size_t i = (size_t)r * N + c;
      const double z = (xr[c] - mean) / sd, y = z * g[c] + b[c];
      const double bl =
          fabs(g[c]) * ((N + 1) * U * amean / sd + (N / 2.0 + 9) * U * fabs(z)) +
          U * fabs(y);
      EXPECT_NEAR(o[0][i], y, bl, "layer_norm [%d,%d] tile %ux%u", r, c, tr,
                  tc);
      EXPECT_NEAR(o[0][i], ev[0][i], 2 * bl, "layer_norm vs eval [%d,%d]", r,
                  c);
      const double yr = xr[c] * rr * g[c], br = (N / 2.0 + 8) * U * fabs(yr);
      EXPECT_NEAR(o[1][i], yr, br, "rms_norm [%d,%d]", r, c);
      EXPECT_NEAR(o[1][i], ev[1][i], 2 * br, "rms_norm vs eval [%d,%d]", r, c);
    }
  }
  pto_executable_free(e);
  pto_program_free(p);
  free(x), free(g), free(b);
  for (int i = 0; i < 4; i++)
    free(o[i]), free(ev[i]);
}

Test(partitioner, norms_compiled_within_their_bounds) {
  check_norms_compiled(64, 1000, 8, 256, 0);
  check_norms_compiled(13, 77, 4, 0, 2); /* whole rows */
  check_norms_compiled(9, 513, 0, 0, 0); /* tiles nobody set */
  check_norms_compiled(5, 1, 3, 7, 1);
}

/* ---- masked matmul ------------------------------------------------------ */

/* q [2,M,K] x k [N,K]^T under a causal mask, cube tile 16x16: tiles past
 * the diagonal are vector fills (no matmul), tiles it crosses are masked
 * on the cube (TTRIFILL), the rest are plain; results exact (integers). */
Test(partitioner, masked_matmul_skips_tiles_past_its_diagonal) {
  enum { B = 2, M = 40, N = 56, K = 32 };
  float *q = rand_int((size_t)B * M * K, 1, 3), *k = rand_int((size_t)N * K, 2, 3);
  float *o = malloc((size_t)B * M * N * 4), *ev = malloc((size_t)B * M * N * 4);
  pto_program *p = pto_program_new("causal");
  pto_tensor *tq = pto_input(p, "q", PTO_F32, 3, (const int64_t[]){B, M, K});
  pto_tensor *tk = pto_input(p, "k", PTO_F32, 2, (const int64_t[]){N, K});
  pto_program_set_cube_tile(p, 16, 16, 0);
  pto_output(p, pto_matmul(p, tq, tk, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL),
             "s");
  pto_executable *e = compile_ok(p, NULL);
  /* diag N - M = 16; row blocks 0, 16, 32 (8 rows); col blocks of 16 */
  uint32_t cube = 0, vec = 0, masks = 0, mms = 0;
  for (uint32_t u = 0; u < e->tg.n_units; u++) {
    const pto_unit *un = &e->tg.units[u];
    if (un->node == PTO_NONE)
      continue;
    cube += un->core == PTO_CORE_CUBE;
    vec += un->core == PTO_CORE_VECTOR;
    for (uint32_t i = un->first; i < un->first + un->count; i++) {
      masks += e->tg.insts[i].op == PTO_OP_TTRIFILL;
      mms += e->tg.insts[i].op == PTO_OP_TMATMUL;
    }
  }
  cr_expect_eq(vec, B * 3, "3 tiles per batch are wholly past the diagonal");
  cr_expect_eq(cube, B * 9);
  cr_expect_eq(mms, B * 9, "no matmul for the tiles past it");
  cr_expect_eq(masks, B * 3, "3 tiles per batch are crossed by it");
  const size_t bytes[1] = {(size_t)B * M * N * 4};
  const void *ins[] = {q, k};
  void *outs[] = {o};
  run_everywhere(e, ins, outs, 1, bytes);
  void *evs[] = {ev};
  cr_assert_eq(pto_program_eval(p, ins, evs), PTO_OK);
  for (int z = 0; z < B; z++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double want = -INFINITY;
        if (j <= i + N - M) {
          want = 0;
          for (int c = 0; c < K; c++)
            want += (double)q[(z * M + i) * K + c] * k[j * K + c];
        }
        const size_t x = ((size_t)z * M + i) * N + j;
        EXPECT_F32(o[x], (float)want, "s[%d,%d,%d]", z, i, j);
        EXPECT_F32(ev[x], (float)want, "eval s[%d,%d,%d]", z, i, j);
      }
  pto_executable_free(e);
  pto_program_free(p);
  free(q), free(k), free(o), free(ev);
}

/* softmax(mask(q k^T) * scale) v with no tile set anywhere: the chosen
 * cube tile must leave room for the mask, and every row sees a key. */
Test(partitioner, causal_attention_chain_with_chosen_tiles) {
  enum { M = 96, N = 128, D = 64 };
  float *q = rand_f32((size_t)M * D, 5, -1, 1), *k = rand_f32((size_t)N * D, 6, -1, 1),
        *v = rand_f32((size_t)N * D, 7, -1, 1);
  float *o = malloc((size_t)M * D * 4), *ev = malloc((size_t)M * D * 4);
  for (int diag = 0; diag < 3; diag++) {
    pto_program *p = pto_program_new("attn");
    pto_tensor *tq = pto_input(p, "q", PTO_F32, 2, (const int64_t[]){M, D});
    pto_tensor *tk = pto_input(p, "k", PTO_F32, 2, (const int64_t[]){N, D});
    pto_tensor *tv = pto_input(p, "v", PTO_F32, 2, (const int64_t[]){N, D});
    pto_tensor *s =
        diag == 0 ? pto_matmul(p, tq, tk, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL)
                  : pto_matmul_masked(p, tq, tk, PTO_MATMUL_TRANS_B,
                                      diag == 1 ? 0 : 7);
    pto_output(p, pto_matmul(p, pto_softmax(p, pto_muls(p, s, 0.125)), tv, 0),
               "o");
    pto_executable *e = compile_ok(p, NULL);
    const size_t bytes[1] = {(size_t)M * D * 4};
    const void *ins[] = {q, k, v};
    void *outs[] = {o}, *evs[] = {ev};
    run_everywhere(e, ins, outs, 1, bytes);
    cr_assert_eq(pto_program_eval(p, ins, evs), PTO_OK);
    for (size_t i = 0; i < (size_t)M * D; i++)
      EXPECT_NEAR(o[i], ev[i], 1e-5 * (1 + fabs(ev[i])), "o[%zu] diag %d", i,
                  diag);
    pto_executable_free(e);
    pto_program_free(p);
  }
  free(q), free(k), free(v), free(o), free(ev);
}

/* ---- iota, concat, assemble --------------------------------------------- */

Test(partitioner, iota_along_every_axis_compiled) {
  const int64_t s[4] = {2, 3, 17, 9};
  enum { N = 2 * 3 * 17 * 9 };
  int32_t *oi[4];
  float *of[4];
  void *outs[8];
  size_t bytes[8];
  pto_program *p = pto_program_new("iota");
  pto_program_set_vec_tile(p, 5, 4);
  for (int ax = 0; ax < 4; ax++) {
    char nm[8];
    snprintf(nm, sizeof nm, "i%d", ax);
    pto_output(p, pto_iota_axis(p, PTO_I32, 4, s, ax, -7 + ax), nm);
    snprintf(nm, sizeof nm, "f%d", ax);
    pto_output(p, pto_iota_axis(p, PTO_F32, 4, s, ax - 4, 100 * ax), nm);
    outs[2 * ax] = oi[ax] = malloc(N * 4);
    outs[2 * ax + 1] = of[ax] = malloc(N * 4);
    bytes[2 * ax] = bytes[2 * ax + 1] = N * 4;
  }
  pto_executable *e = compile_ok(p, NULL);
  run_everywhere(e, NULL, outs, 8, bytes);
  for (int j = 0; j < N; j++) {
    const int64_t idx[4] = {j / (3 * 17 * 9), j / (17 * 9) % 3, j / 9 % 17,
                            j % 9};
    for (int ax = 0; ax < 4; ax++) {
      cr_expect_eq(oi[ax][j], -7 + ax + idx[ax], "i32 axis %d at %d", ax, j);
      cr_expect_eq(of[ax][j], (float)(100 * ax + idx[ax]), "f32 axis %d", ax);
    }
  }
  pto_executable_free(e);
  pto_program_free(p);
  for (int ax = 0; ax < 4; ax++)
    free(oi[ax]), free(of[ax]);
}

Test(partitioner, concat_of_many_compiled) {
  enum { K = 24, R = 5, C = 7 };
  float *x[K], *o = malloc((size_t)K * R * C * 4), *o2 = malloc((size_t)K * R * C * 4);
  pto_program *p = pto_program_new("cat");
  pto_tensor *ts[K];
  const void *ins[K];
  for (int i = 0; i < K; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "x%d", i);
    ts[i] = pto_input(p, nm, PTO_F32, 2, (const int64_t[]){R, C});
    ins[i] = x[i] = rand_f32(R * C, 40 + (uint64_t)i, -3, 3);
  }
  pto_program_set_vec_tile(p, 4, 4);
  pto_output(p, pto_concat(p, K, ts, 1), "cols");
  pto_output(p, pto_concat(p, K, ts, 0), "rows");
  pto_executable *e = compile_ok(p, NULL);
  const size_t bytes[2] = {(size_t)K * R * C * 4, (size_t)K * R * C * 4};
  void *outs[] = {o, o2};
  run_everywhere(e, ins, outs, 2, bytes);
  for (int i = 0; i < K; i++)
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        EXPECT_F32(o[r * K * C + i * C + c], x[i][r * C + c], "cols %d", i);
        EXPECT_F32(o2[(i * R + r) * C + c], x[i][r * C + c], "rows %d", i);
      }
  pto_executable_free(e);
  pto_program_free(p);
  for (int i = 0; i < K; i++)
    free(x[i]);
  free(o), free(o2);
}

/* 16 blocks, each made by one vector op, assembled over a fill into a 4x4
 * grid: one task per block tile, each storing its block straight into the
 * output (the fill never runs, no block reaches global memory on its own,
 * no copy of the output is made). */
Test(partitioner, assembled_blocks_are_stored_straight_into_the_output) {
  enum { S = 4, B = 32, W = S * B };
  float *x[S * S], *o = malloc((size_t)W * W * 4), *ev = malloc((size_t)W * W * 4);
  pto_program *p = pto_program_new("grid");
  pto_program_set_vec_tile(p, 16, 32);
  pto_tensor *y = pto_full(p, PTO_F32, 2, (const int64_t[]){W, W}, 0);
  const void *ins[S * S];
  for (int k = 0; k < S * S; k++) {
    char nm[8];
    snprintf(nm, sizeof nm, "x%d", k);
    pto_tensor *t = pto_input(p, nm, PTO_F32, 2, (const int64_t[]){B, B});
    ins[k] = x[k] = rand_f32(B * B, 60 + (uint64_t)k, -4, 4);
    y = pto_assemble(p, y, pto_muls(p, t, 3),
                     (const int64_t[]){B * (k / S), B * (k % S)});
  }
  pto_output(p, y, "y");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, S * S * 2, "two 16x32 tiles per block");
  cr_expect_eq(st.programs, 1);
  cr_expect_eq(st.workspace_bytes, 0);
  cr_expect_eq(st.boundary_bytes, 2 * (uint64_t)W * W * 4,
               "the blocks read once, the output written once");
  const size_t bytes[1] = {(size_t)W * W * 4};
  void *outs[] = {o}, *evs[] = {ev};
  run_everywhere(e, ins, outs, 1, bytes);
  cr_assert_eq(pto_program_eval(p, ins, evs), PTO_OK);
  for (int k = 0; k < S * S; k++)
    for (int i = 0; i < B * B; i++) {
      const size_t at = (size_t)(B * (k / S) + i / B) * W + B * (k % S) + i % B;
      EXPECT_F32(o[at], x[k][i] * 3.0f, "block %d at %d", k, i);
      EXPECT_F32(ev[at], o[at], "eval block %d at %d", k, i);
    }
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
  for (int k = 0; k < S * S; k++)
    free(x[k]);
  free(o), free(ev);
}

/* Overlapping blocks, a partly covered base, a view as a block and a
 * fork of the chain: exact, as the evaluator has it. */
Test(partitioner, overlapping_assembles_compiled_as_evaluated) {
  enum { R = 23, C = 19, NB = 5 };
  static const int blk[NB][4] = {
      {0, 0, 10, 12}, {5, 6, 10, 10}, {13, 0, 10, 19}, {2, 2, 3, 3}, {20, 15, 3, 4}};
  float *base = rand_f32(R * C, 1, -9, 9), *src[NB];
  float *o[2], *ev[2];
  for (int i = 0; i < 2; i++)
    o[i] = malloc(R * C * 4), ev[i] = malloc(R * C * 4);
  for (int tile = 0; tile < 3; tile++) {
    pto_program *p = pto_program_new("overlap");
    static const uint32_t tiles[3][2] = {{4, 8}, {0, 0}, {7, 3}};
    pto_program_set_vec_tile(p, tiles[tile][0], tiles[tile][1]);
    pto_tensor *tb = pto_input(p, "base", PTO_F32, 2, (const int64_t[]){R, C});
    pto_tensor *y = pto_neg(p, tb), *mid = NULL;
    const void *ins[1 + NB] = {base};
    for (int k = 0; k < NB; k++) {
      char nm[8];
      snprintf(nm, sizeof nm, "s%d", k);
      pto_tensor *t = pto_input(p, nm, PTO_F32, 2,
                                (const int64_t[]){blk[k][2], blk[k][3] + 1});
      if (tile == 0)
        src[k] = rand_f32((size_t)blk[k][2] * (blk[k][3] + 1), 9 + (uint64_t)k,
                          -5, 5);
      ins[1 + k] = src[k];
      /* the block is a view: all rows, its first cols */
      pto_tensor *v = pto_slice(p, t, (const int64_t[]){0, 1},
                                (const int64_t[]){blk[k][2], blk[k][3] + 1});
      y = pto_assemble(p, y, v, (const int64_t[]){blk[k][0], blk[k][1]});
      if (k == 1)
        mid = y;
    }
    pto_output(p, y, "y");
    pto_output(p, pto_assemble(p, mid, tb, (const int64_t[]){0, 0}), "fork");
    pto_executable *e = compile_ok(p, NULL);
    const size_t bytes[2] = {R * C * 4, R * C * 4};
    run_everywhere(e, ins, (void **)o, 2, bytes);
    cr_assert_eq(pto_program_eval(p, ins, (void **)ev), PTO_OK);
    cr_expect(memcmp(o[0], ev[0], bytes[0]) == 0, "y as evaluated (tile %d)",
              tile);
    cr_expect(memcmp(o[1], ev[1], bytes[1]) == 0, "fork as evaluated");
    /* by a reference of its own */
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        int last = -1;
        for (int k = 0; k < NB; k++)
          if (r >= blk[k][0] && r < blk[k][0] + blk[k][2] && c >= blk[k][1] &&
              c < blk[k][1] + blk[k][3])
            last = k;
        EXPECT_F32(o[0][r * C + c],
                   last < 0 ? -base[r * C + c]
                            : src[last][(r - blk[last][0]) * (blk[last][3] + 1) +
                                        1 + c - blk[last][1]],
                   "y[%d,%d] from block %d", r, c, last);
        EXPECT_F32(o[1][r * C + c], base[r * C + c], "the fork covers it all");
      }
    pto_executable_free(e);
    pto_program_free(p);
  }
  free(base);
  for (int k = 0; k < NB; k++)
    free(src[k]);
  for (int i = 0; i < 2; i++)
    free(o[i]), free(ev[i]);
}

/* With no tile set, on the Ascend machine and on hosts of 1 to 3 workers,
 * the new ops compile (the chosen cube tile leaves room for TTRIFILL's
 * tile in L1) and run as evaluated. */
Test(partitioner, new_ops_compile_with_chosen_tiles_on_every_machine) {
  enum { M = 200, N = 300, D = 96 };
  float *q = rand_f32((size_t)M * D, 21, -1, 1),
        *k = rand_f32((size_t)N * D, 22, -1, 1),
        *g = rand_f32(D, 23, 0.5f, 1.5f);
  float *o = malloc((size_t)M * D * 4), *ev = malloc((size_t)M * D * 4);
  for (int mach = 0; mach < 4; mach++) {
    pto_program *p = pto_program_new("chain");
    pto_tensor *tq = pto_input(p, "q", PTO_F32, 2, (const int64_t[]){M, D});
    pto_tensor *tk = pto_input(p, "k", PTO_F32, 2, (const int64_t[]){N, D});
    pto_tensor *tg = pto_input(p, "g", PTO_F32, 1, (const int64_t[]){D});
    pto_tensor *x = pto_rms_norm(p, tq, tg, 1e-6);
    pto_tensor *s =
        pto_matmul(p, x, tk, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL);
    pto_tensor *a = pto_softmax(p, pto_muls(p, s, 0.1));
    pto_tensor *y = pto_matmul(p, a, tk, 0);
    pto_output(p, pto_gelu(p, pto_layer_norm(p, y, tg, NULL, 1e-5)), "y");
    pto_config *c = mach ? host_config((uint32_t)mach) : ascend_config();
    pto_executable *e = compile_ok(p, c);
    const void *ins[] = {q, k, g};
    void *outs[] = {o}, *evs[] = {ev};
    cr_assert_eq(pto_executable_run_serial(e, ins, outs), PTO_OK, "%s",
                 pto_executable_error(e));
    cr_assert_eq(pto_program_eval(p, ins, evs), PTO_OK);
    for (size_t i = 0; i < (size_t)M * D; i++)
      EXPECT_NEAR(o[i], ev[i], 1e-4 * (1 + fabs(ev[i])), "y[%zu] machine %d",
                  i, mach);
    pto_executable_free(e);
    pto_config_free(c);
    pto_program_free(p);
  }
  free(q), free(k), free(g), free(o), free(ev);
}
