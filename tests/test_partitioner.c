/* partitioner: tiling, fusion, isomorphism, local-memory planning and the
 * execution graph, checked end to end against the reference evaluator. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/exe.h"
#include "pto/pto.h"

static pto_config *ascend_config(void) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  pto_machine m = pto_machine_ascend();
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  return c;
}

/* Runs e on the parallel runtime, with 2 shared workers and with dedicated
 * cube and vector workers (1 + 2), and requires exactly the bytes the
 * serial executor wrote to out[0] (n_bytes). */
static void parallel_equals_serial(pto_executable *e, const void *const *in,
                                   const void *serial, size_t n_bytes) {
  void *got = malloc(n_bytes);
  cr_assert_not_null(got);
  for (int shared = 1; shared >= 0; shared--) {
    pto_machine m;
    cr_assert_eq(pto_machine_host(&m), PTO_OK);
    m.shared = shared;
    m.workers[PTO_CORE_CUBE] = shared ? 2 : 1;
    m.workers[PTO_CORE_VECTOR] = 2;
    pto_runtime_params prm = pto_runtime_params_default();
    prm.machine = &m;
    pto_runtime *rt = NULL;
    cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK);
    memset(got, 0xa5, n_bytes);
    void *out[1] = {got};
    cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
                 pto_executable_error(e));
    cr_assert(memcmp(got, serial, n_bytes) == 0,
              "parallel (%s workers) differs from serial",
              shared ? "shared" : "dedicated");
    pto_runtime_free(rt);
  }
  free(got);
}

/* The host machine with n shared workers, as a config. */
static pto_config *host_config(uint32_t n) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[PTO_CORE_CUBE] = m.workers[PTO_CORE_VECTOR] = n;
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  return c;
}

/* Runs e serially into got (n f32, its one output), requires the parallel
 * runs to write the same bytes and every value to be within tol * (1 +
 * |ref|) of p's reference evaluation (into ref). */
static void serial_parallel_and_eval_agree(pto_executable *e, pto_program *p,
                                           const void *const *in, float *got,
                                           float *ref, size_t n, float tol) {
  void *out[] = {got}, *refs[] = {ref};
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  parallel_equals_serial(e, in, got, n * sizeof *got);
  cr_assert_eq(pto_program_eval(p, in, refs), PTO_OK);
  for (size_t i = 0; i < n; i++)
    cr_assert(fabsf(got[i] - ref[i]) <= tol * (1 + fabsf(ref[i])),
              "out[%zu] %g vs %g", i, got[i], ref[i]);
}

static pto_program *pypto_example(void) {
  pto_program *p = pto_program_new("pypto-example");
  const int64_t ab[2] = {64, 64}, w[2] = {64, 32};
  pto_tensor *A = pto_input(p, "A", PTO_F32, 2, ab);
  pto_tensor *B = pto_input(p, "B", PTO_F32, 2, ab);
  pto_tensor *W = pto_input(p, "W", PTO_F32, 2, w);
  pto_program_set_vec_tile(p, 32, 32);
  pto_tensor *x = pto_add(p, pto_muls(p, A, 2.0), B);
  pto_output(p, pto_rowsum(p, pto_matmul(p, x, W, 0)), "C");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

Test(partitioner, golden_pypto_example_is_3_programs_7_tasks) {
  pto_program *p = pypto_example();
  pto_config *c = ascend_config();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_exe_stats s;
  cr_assert_eq(pto_executable_stats(e, &s), PTO_OK);
  cr_expect_eq(s.programs, 3);
  cr_expect_eq(s.tasks, 7);
  cr_expect_eq(s.edges, 6, "4 MulS_Add -> Matmul, Matmul -> 2 RowSum");
  /* by hand: four MulS+Add tasks feed the matmul, which feeds two rowsums */
  int per_prog[3] = {0};
  uint32_t mm = UINT32_MAX;
  for (uint32_t t = 0; t < s.tasks; t++) {
    uint32_t q = pto_executable_task_program(e, t);
    cr_assert_lt(q, 3);
    per_prog[q]++;
    if (strstr(pto_executable_program_name(e, q), "TMATMUL"))
      mm = t;
  }
  cr_assert_neq(mm, UINT32_MAX);
  int n1 = 0, n2 = 0, n4 = 0;
  for (int q = 0; q < 3; q++) {
    n1 += per_prog[q] == 1;
    n2 += per_prog[q] == 2;
    n4 += per_prog[q] == 4;
  }
  cr_expect(n1 == 1 && n2 == 1 && n4 == 1, "task counts per program %d %d %d",
            per_prog[0], per_prog[1], per_prog[2]);
  const uint32_t *succ;
  cr_expect_eq(pto_executable_task_succ(e, mm, &succ), 2);
  for (uint32_t t = 0; t < s.tasks; t++) {
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    uint32_t n = pto_executable_task_succ(e, t, &succ);
    if (strstr(name, "TMULS")) {
      cr_expect(strstr(name, "TADD") != NULL, "MulS and Add fused: %s", name);
      cr_expect_eq(n, 1);
      cr_expect_eq(succ[0], mm);
    } else if (strstr(name, "TROWSUM")) {
      cr_expect_eq(n, 0);
    }
  }
  /* and it computes what the reference evaluator computes */
  static float A[64 * 64], B[64 * 64], W[64 * 32], C[64], R[64];
  srand(7);
  for (int i = 0; i < 64 * 64; i++) {
    A[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    B[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  }
  for (int i = 0; i < 64 * 32; i++)
    W[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  const void *in[] = {A, B, W};
  serial_parallel_and_eval_agree(e, p, in, C, R, 64, 1e-4f);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* ---- parity with the reference evaluator -------------------------------- */

typedef pto_tensor *(*build_fn)(pto_program *p, pto_tensor **in);

/* Fills buffers for every input, runs the reference evaluator and the
 * compiled program (serial executor) and compares every output: bit-exact
 * when tol is 0, else equal or |a - b| <= tol * (1 + |b|). */
static void check_parity(const char *what, int n_in, const pto_dtype *dts,
                         const int64_t (*shapes)[4], const int *ndims,
                         build_fn build, uint32_t vr, uint32_t vc,
                         const pto_tile_shape *cube, double tol) {
  pto_program *p = pto_program_new(what);
  pto_tensor *in[4];
  char name[8];
  for (int i = 0; i < n_in; i++) {
    snprintf(name, sizeof name, "x%d", i);
    in[i] = pto_input(p, name, dts[i], ndims[i], shapes[i]);
  }
  pto_program_set_vec_tile(p, vr, vc);
  if (cube)
    pto_program_set_cube_tile(p, cube->cube_m, cube->cube_n, cube->cube_k);
  pto_tensor *o = build(p, in);
  pto_output(p, o, "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  void *bufs[4] = {NULL, NULL, NULL, NULL};
  srand(1234);
  for (int i = 0; i < n_in; i++) {
    int64_t n = pto_tensor_numel(in[i]);
    bufs[i] = malloc((size_t)n * 4);
    for (int64_t k = 0; k < n; k++) {
      if (dts[i] == PTO_I32)
        ((int32_t *)bufs[i])[k] = rand() % 41 - 20;
      else
        ((float *)bufs[i])[k] = (float)rand() / (float)RAND_MAX * 4 - 2;
    }
  }
  int64_t n_out = pto_tensor_numel(o);
  size_t es = pto_dtype_size(pto_tensor_dtype(o));
  void *got = calloc((size_t)n_out, es), *want = calloc((size_t)n_out, es);
  const void *ins[4] = {bufs[0], bufs[1], bufs[2], bufs[3]};
  void *outs[1] = {got}, *refs[1] = {want};
  cr_assert_eq(pto_program_eval(p, ins, refs), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  cr_assert_eq(pto_executable_run_serial(e, ins, outs), PTO_OK, "%s: %s",
               what, pto_executable_error(e));
  parallel_equals_serial(e, ins, got, (size_t)n_out * es);
  for (int64_t k = 0; k < n_out; k++) {
    if (pto_tensor_dtype(o) == PTO_I32) {
      cr_assert_eq(((int32_t *)got)[k], ((int32_t *)want)[k],
                   "%s tile %ux%u: [%ld] %d vs %d", what, vr, vc, (long)k,
                   ((int32_t *)got)[k], ((int32_t *)want)[k]);
    } else {
      float g = ((float *)got)[k], w = ((float *)want)[k];
      if (tol == 0)
        cr_assert(memcmp(&g, &w, 4) == 0, "%s tile %ux%u: [%ld] %.9g vs %.9g",
                  what, vr, vc, (long)k, g, w);
      else
        cr_assert(g == w || fabs((double)g - w) <= tol * (1 + fabs((double)w)),
                  "%s tile %ux%u: [%ld] %.9g vs %.9g", what, vr, vc, (long)k,
                  g, w);
    }
  }
  pto_executable_free(e);
  for (int i = 0; i < n_in; i++)
    free(bufs[i]);
  free(got);
  free(want);
  pto_program_free(p);
}

/* Tile shapes that divide [48, 96] and that leave edge tiles. */
static const uint32_t tiles[][2] = {{16, 32}, {48, 96}, {13, 37}, {0, 0},
                                    {1, 8}};
#define N_TILES (sizeof tiles / sizeof tiles[0])

#define UNARY_CASE(fn, body, dt, tol)                                          \
  static pto_tensor *build_##fn(pto_program *p, pto_tensor **in) {            \
    return body;                                                               \
  }                                                                            \
  Test(partitioner, parity_##fn) {                                             \
    const pto_dtype dts[1] = {dt};                                             \
    const int64_t shapes[1][4] = {{48, 96}};                                   \
    const int nd[1] = {2};                                                     \
    for (size_t i = 0; i < N_TILES; i++)                                       \
      check_parity(#fn, 1, dts, shapes, nd, build_##fn, tiles[i][0],           \
                   tiles[i][1], NULL, tol);                                    \
  }

UNARY_CASE(adds, pto_adds(p, in[0], 1.5), PTO_F32, 0)
UNARY_CASE(subs, pto_subs(p, in[0], 1.5), PTO_F32, 0)
UNARY_CASE(muls, pto_muls(p, in[0], -3.0), PTO_F32, 0)
UNARY_CASE(divs, pto_divs(p, in[0], 7.0), PTO_F32, 0)
UNARY_CASE(maxs, pto_maxs(p, in[0], 0.25), PTO_F32, 0)
UNARY_CASE(mins, pto_mins(p, in[0], 0.25), PTO_F32, 0)
UNARY_CASE(exp, pto_exp(p, in[0]), PTO_F32, 1e-6)
UNARY_CASE(log, pto_log(p, pto_abs(p, in[0])), PTO_F32, 1e-6)
UNARY_CASE(sqrt, pto_sqrt(p, pto_abs(p, in[0])), PTO_F32, 0)
UNARY_CASE(rsqrt, pto_rsqrt(p, pto_adds(p, pto_abs(p, in[0]), 0.5)), PTO_F32, 1e-6)
UNARY_CASE(recip, pto_recip(p, pto_adds(p, pto_abs(p, in[0]), 0.5)), PTO_F32, 0)
UNARY_CASE(relu, pto_relu(p, in[0]), PTO_F32, 0)
UNARY_CASE(neg, pto_neg(p, in[0]), PTO_F32, 0)
UNARY_CASE(abs_i32, pto_abs(p, in[0]), PTO_I32, 0)
UNARY_CASE(muls_i32, pto_muls(p, in[0], 3), PTO_I32, 0)
UNARY_CASE(cast_i32, pto_cast(p, pto_muls(p, in[0], 10.0), PTO_I32), PTO_F32, 0)
UNARY_CASE(cast_bf16, pto_cast(p, pto_cast(p, in[0], PTO_BF16), PTO_F32), PTO_F32, 0)
UNARY_CASE(rowsum, pto_rowsum(p, in[0]), PTO_F32, 1e-5)
UNARY_CASE(rowmax, pto_rowmax(p, in[0]), PTO_F32, 0)
UNARY_CASE(rowmin, pto_rowmin(p, in[0]), PTO_F32, 0)
UNARY_CASE(colsum, pto_colsum(p, in[0]), PTO_F32, 1e-5)
UNARY_CASE(colmax, pto_colmax(p, in[0]), PTO_F32, 0)
UNARY_CASE(softmax, pto_softmax(p, in[0]), PTO_F32, 1e-5)
UNARY_CASE(transpose_view, pto_adds(p, pto_transpose(p, in[0], 0, 1), 1), PTO_F32, 0)
UNARY_CASE(slice_view,
           pto_muls(p, pto_slice(p, in[0], (int64_t[]){5, 7},
                                 (int64_t[]){40, 90}), 2),
           PTO_F32, 0)
UNARY_CASE(output_is_view, pto_transpose(p, pto_adds(p, in[0], 1), 0, 1), PTO_F32, 0)
UNARY_CASE(concat_cols, pto_concat(p, 2, (pto_tensor *[]){in[0], pto_neg(p, in[0])}, 1), PTO_F32, 0)
UNARY_CASE(concat_rows, pto_concat(p, 2, (pto_tensor *[]){in[0], pto_neg(p, in[0])}, 0), PTO_F32, 0)
UNARY_CASE(full_plus, pto_add(p, in[0], pto_full(p, PTO_F32, 2, (int64_t[]){48, 96}, 0.5)), PTO_F32, 0)
UNARY_CASE(iota_plus, pto_add(p, pto_cast(p, in[0], PTO_I32), pto_iota(p, PTO_I32, 2, (int64_t[]){48, 96}, 3)), PTO_F32, 0)
UNARY_CASE(topk_values, pto_topk(p, in[0], 20, &(pto_tensor *){NULL}), PTO_F32, 0)
UNARY_CASE(chain, pto_exp(p, pto_muls(p, pto_adds(p, in[0], 1), 0.5)), PTO_F32, 1e-6)

static pto_tensor *build_topk_idx(pto_program *p, pto_tensor **in) {
  pto_tensor *idx = NULL;
  pto_topk(p, in[0], 17, &idx);
  return idx;
}
Test(partitioner, parity_topk_indices) {
  const pto_dtype dts[1] = {PTO_F32};
  const int64_t shapes[1][4] = {{48, 96}};
  const int nd[1] = {2};
  for (size_t i = 0; i < N_TILES; i++)
    check_parity("topk_indices", 1, dts, shapes, nd, build_topk_idx,
                 tiles[i][0], tiles[i][1], NULL, 0);
}

/* ---- incremental top-k (core/tiling_topk.c) ----------------------------- */

/* Scores with ties (a few levels), NaN, +-0, +-inf; masked: many -inf and
 * some rows wholly -inf (no entry left). */
static void topk_scores(float *x, int64_t rows, int64_t n, unsigned seed,
                        int masked) {
  srand(seed);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < n; c++) {
      float v = (float)(rand() % 7) - 3.0f; /* ties */
      int u = rand() % 64;
      if (u < 24)
        v = (float)rand() / (float)RAND_MAX * 8 - 4;
      else if (u == 24)
        v = NAN;
      else if (u == 25)
        v = u % 2 ? INFINITY : -0.0f;
      if (masked && (r % 5 == 3 || rand() % 3 == 0))
        v = -INFINITY;
      x[r * n + c] = v;
    }
}

/* topk (or topk_masked) of x [b, rows, n] under vector tile {tr, tc}:
 * compiled and run serially and on the runtime, it must give the
 * evaluator's values and indices exactly. */
static void check_topk(int64_t b, int64_t rows, int64_t n, int64_t k,
                       int masked, uint32_t tr, uint32_t tc, unsigned seed) {
  char what[128];
  snprintf(what, sizeof what, "topk%s [%ld,%ld,%ld] k %ld tile %ux%u",
           masked ? "_masked" : "", (long)b, (long)rows, (long)n, (long)k, tr,
           tc);
  pto_program *p = pto_program_new("topk");
  const int64_t shape[3] = {b, rows, n};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, shape), *idx = NULL;
  pto_program_set_vec_tile(p, tr, tc);
  pto_tensor *v = masked ? pto_topk_masked(p, x, k, &idx)
                         : pto_topk(p, x, k, &idx);
  pto_output(p, v, "values");
  pto_output(p, idx, "indices");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  const int64_t m = b * rows;
  float *in = malloc((size_t)(m * n) * sizeof *in);
  float *wv = malloc((size_t)(m * k) * 4), *gv = malloc((size_t)(m * k) * 4);
  int32_t *wi = malloc((size_t)(m * k) * 4), *gi = malloc((size_t)(m * k) * 4);
  cr_assert(in && wv && gv && wi && gi);
  topk_scores(in, m, n, seed, masked);
  const void *ins[1] = {in};
  void *want[2] = {wv, wi}, *got[2] = {gv, gi};
  cr_assert_eq(pto_program_eval(p, ins, want), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  for (int run = 0; run < 3; run++) {
    memset(gv, 0x5a, (size_t)(m * k) * 4);
    memset(gi, 0x5a, (size_t)(m * k) * 4);
    pto_runtime *rt = NULL;
    if (run == 0) {
      cr_assert_eq(pto_executable_run_serial(e, ins, got), PTO_OK, "%s: %s",
                   what, pto_executable_error(e));
    } else {
      pto_machine mc;
      cr_assert_eq(pto_machine_host(&mc), PTO_OK);
      mc.shared = 1;
      mc.workers[PTO_CORE_CUBE] = mc.workers[PTO_CORE_VECTOR] = (uint32_t)run;
      pto_runtime_params prm = pto_runtime_params_default();
      prm.machine = &mc;
      cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK);
      cr_assert_eq(pto_runtime_run(rt, e, ins, got), PTO_OK, "%s: %s", what,
                   pto_executable_error(e));
      pto_runtime_free(rt);
    }
    for (int64_t j = 0; j < m * k; j++) {
      int same =
          memcmp(&gv[j], &wv[j], 4) == 0 || (isnan(gv[j]) && isnan(wv[j]));
      cr_assert(same && gi[j] == wi[j],
                "%s, run %d: row %ld slot %ld is (%.9g, %d), the evaluator "
                "gives (%.9g, %d)",
                what, run, (long)(j / k), (long)(j % k), gv[j], gi[j], wv[j],
                wi[j]);
    }
  }
  pto_executable_free(e);
  pto_program_free(p);
  free(in);
  free(wv);
  free(gv);
  free(wi);
  free(gi);
}

Test(partitioner, topk_tiles_match_eval, .timeout = 120) {
  /* tiles that divide 96 and that do not, blocks shorter than k, whole
   * rows, one row per tile, k from 1 to the whole row */
  static const uint32_t tl[][2] = {{16, 32}, {13, 37}, {1, 8}, {4, 96},
                                   {0, 0},   {5, 5},   {48, 20}};
  static const int64_t ks[] = {1, 20, 37, 96};
  for (size_t i = 0; i < sizeof tl / sizeof tl[0]; i++)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
      check_topk(1, 48, 96, ks[j], 0, tl[i][0], tl[i][1],
                 (unsigned)(i * 7 + j));
  /* rank 3, several levels of merges (16 blocks -> 4 -> 1, 40 -> ...) */
  check_topk(2, 5, 1000, 250, 0, 3, 100, 1);
  check_topk(2, 5, 1000, 7, 0, 2, 64, 2);
  check_topk(1, 3, 1000, 30, 0, 3, 25, 3);
  check_topk(1, 9, 5000, 300, 0, 4, 512, 4);
}

Test(partitioner, topk_masked_tiles_match_eval, .timeout = 120) {
  static const uint32_t tl[][2] = {{16, 32}, {13, 37}, {1, 8}, {0, 0}, {5, 7}};
  /* k past the row (every row padded), past a block, equal to the row */
  static const int64_t ks[] = {1, 20, 96, 130};
  for (size_t i = 0; i < sizeof tl / sizeof tl[0]; i++)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
      check_topk(1, 48, 96, ks[j], 1, tl[i][0], tl[i][1],
                 (unsigned)(i * 5 + j + 100));
  check_topk(2, 5, 1000, 250, 1, 3, 100, 5);
  check_topk(1, 7, 300, 700, 1, 2, 64, 6);
}

/* A producer whose tiles are the selection's blocks fuses with it (the
 * score never reaches global memory), and the result is the evaluator's. */
Test(partitioner, topk_fuses_with_its_producer, .timeout = 60) {
  pto_program *p = pto_program_new("topk");
  const int64_t shape[2] = {12, 1000};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape), *idx = NULL;
  pto_program_set_vec_tile(p, 4, 128);
  pto_tensor *v = pto_topk_masked(p, pto_muls(p, x, -2.0), 50, &idx);
  pto_output(p, v, "values");
  pto_output(p, idx, "indices");
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  int fused = 0;
  for (uint32_t t = 0; t < pto_executable_num_tasks(e); t++) {
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    fused |= strstr(name, "TMULS") && strstr(name, "TTOPK");
  }
  cr_expect(fused, "no program holds both TMULS and TTOPK");
  float *in = malloc(12 * 1000 * sizeof *in), gv[12 * 50], wv[12 * 50];
  int32_t gi[12 * 50], wi[12 * 50];
  topk_scores(in, 12, 1000, 77, 1);
  const void *ins[1] = {in};
  void *got[2] = {gv, gi}, *want[2] = {wv, wi};
  cr_assert_eq(pto_program_eval(p, ins, want), PTO_OK);
  cr_assert_eq(pto_executable_run_serial(e, ins, got), PTO_OK, "%s",
               pto_executable_error(e));
  for (int j = 0; j < 12 * 50; j++)
    cr_assert((memcmp(&gv[j], &wv[j], 4) == 0 ||
               (isnan(gv[j]) && isnan(wv[j]))) &&
                  gi[j] == wi[j],
              "slot %d: (%g, %d) vs (%g, %d)", j, gv[j], gi[j], wv[j], wi[j]);
  free(in);
  pto_executable_free(e);
  pto_program_free(p);
}

/* No unit holds a whole row: the selection reads blocks of the tile's
 * columns and a merge 4 runs of candidates; each first-level merge waits
 * for exactly its own 4 blocks, so merges start before a row is done; and
 * the units of a level are one program. */
Test(partitioner, topk_is_incremental, .timeout = 60) {
  pto_program *p = pto_program_new("topk");
  const int64_t shape[2] = {16, 4096};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape), *idx = NULL;
  pto_program_set_vec_tile(p, 4, 256);
  pto_tensor *v = pto_topk(p, x, 64, &idx);
  pto_output(p, v, "values");
  pto_output(p, idx, "indices");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  const pto_tgraph *tg = &e->tg;
  uint32_t selects = 0, merges = 0;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (in->op == PTO_OP_TLOAD)
      cr_expect_leq(in->g.cols, 256, "a load of %ld columns", (long)in->g.cols);
    selects += in->op == PTO_OP_TTOPK;
    merges += in->op == PTO_OP_TMRGTOPK;
    cr_expect(in->op != PTO_OP_TSORT32 && in->op != PTO_OP_TMRGSORT);
  }
  /* 4 row tiles x 16 blocks; merges 16 -> 4 -> 1 per row tile of 2 rows
   * (4 runs of 64 with their indices, and 64 kept, take 2560 bytes a row;
   * a select 256 x 4 + 64 x 8 = 1536, 4 rows of it 6144) */
  cr_expect_eq(selects, 64);
  cr_expect_eq(merges, 8 * (4 + 1));
  cr_expect_eq(tg->n_scratch, 4, "values and indices of 2 levels");
  /* indices relative to each unit's columns: one program per level */
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_expect_eq(st.programs, 3, "selection, first and last merge");
  /* predecessors of each task, from the successor lists */
  const uint32_t nt = pto_executable_num_tasks(e);
  uint32_t *npred = calloc(nt, sizeof *npred);
  uint32_t *from_select = calloc(nt, sizeof *from_select);
  for (uint32_t t = 0; t < nt; t++) {
    const uint32_t *succ;
    const uint32_t ns = pto_executable_task_succ(e, t, &succ);
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    for (uint32_t j = 0; j < ns; j++) {
      npred[succ[j]]++;
      from_select[succ[j]] += strstr(name, "TTOPK") != NULL;
    }
  }
  uint32_t first_level = 0;
  for (uint32_t t = 0; t < nt; t++) {
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    if (!strstr(name, "TMRGTOPK"))
      continue;
    cr_expect_eq(npred[t], 4, "merge task %u waits for %u tasks", t, npred[t]);
    first_level += from_select[t] == 4;
  }
  cr_expect_eq(first_level, 32, "32 merges of 4 blocks each");
  free(npred);
  free(from_select);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

#define BINARY_CASE(fn, body, sa0, sa1, sb0, sb1, dt, tol)                     \
  static pto_tensor *build_##fn(pto_program *p, pto_tensor **in) {            \
    return body;                                                               \
  }                                                                            \
  Test(partitioner, parity_##fn) {                                             \
    const pto_dtype dts[2] = {dt, dt};                                         \
    const int64_t shapes[2][4] = {{sa0, sa1}, {sb0, sb1}};                     \
    const int nd[2] = {2, 2};                                                  \
    for (size_t i = 0; i < N_TILES; i++)                                       \
      check_parity(#fn, 2, dts, shapes, nd, build_##fn, tiles[i][0],           \
                   tiles[i][1], NULL, tol);                                    \
  }

BINARY_CASE(add, pto_add(p, in[0], in[1]), 48, 96, 48, 96, PTO_F32, 0)
BINARY_CASE(sub, pto_sub(p, in[0], in[1]), 48, 96, 48, 96, PTO_F32, 0)
BINARY_CASE(mul, pto_mul(p, in[0], in[1]), 48, 96, 48, 96, PTO_F32, 0)
BINARY_CASE(div, pto_div(p, in[0], in[1]), 48, 96, 48, 96, PTO_F32, 0)
BINARY_CASE(max, pto_max(p, in[0], in[1]), 48, 96, 48, 96, PTO_F32, 0)
BINARY_CASE(min, pto_min(p, in[0], in[1]), 48, 96, 48, 96, PTO_F32, 0)
BINARY_CASE(add_i32, pto_add(p, in[0], in[1]), 48, 96, 48, 96, PTO_I32, 0)
BINARY_CASE(div_i32, pto_div(p, in[0], in[1]), 48, 96, 48, 96, PTO_I32, 0)
BINARY_CASE(sub_rowvec, pto_sub(p, in[0], in[1]), 48, 96, 48, 1, PTO_F32, 0)
BINARY_CASE(div_rowvec, pto_div(p, in[0], in[1]), 48, 96, 48, 1, PTO_F32, 0)
BINARY_CASE(min_rowvec, pto_min(p, in[0], in[1]), 48, 96, 48, 1, PTO_F32, 0)
BINARY_CASE(mul_colvec, pto_mul(p, in[0], in[1]), 48, 96, 1, 96, PTO_F32, 0)
BINARY_CASE(max_colvec, pto_max(p, in[0], in[1]), 48, 96, 1, 96, PTO_F32, 0)
BINARY_CASE(add_scalar_tensor, pto_add(p, in[0], in[1]), 48, 96, 1, 1, PTO_F32, 0)
BINARY_CASE(rowvec_first, pto_sub(p, in[1], in[0]), 48, 96, 48, 1, PTO_F32, 0)
BINARY_CASE(cmp_select,
            pto_select(p, pto_cmp(p, in[0], in[1], PTO_CMP_LT), in[0], in[1]),
            48, 96, 48, 96, PTO_F32, 0)
/* Matmul tolerance: K = 96 products of operands in [-2, 2] summed in f32
 * (the SIMD tables fuse and reorder them): typically a few 1e-6 off the
 * double-accumulated reference, up to about 1.5e-5 seen; 1e-4 * (1 + |w|)
 * keeps a margin and still fails any wrong term (>= ~1e-2). */
#define MM_TOL 1e-4
BINARY_CASE(matmul, pto_matmul(p, in[0], in[1], 0), 48, 96, 96, 40, PTO_F32, MM_TOL)
BINARY_CASE(matmul_tb, pto_matmul(p, in[0], in[1], PTO_MATMUL_TRANS_B), 48, 96, 40, 96, PTO_F32, MM_TOL)
BINARY_CASE(matmul_ta, pto_matmul(p, in[0], in[1], PTO_MATMUL_TRANS_A), 96, 48, 96, 40, PTO_F32, MM_TOL)
BINARY_CASE(gather, pto_gather(p, in[0], pto_cast(p, pto_muls(p, in[1], 20), PTO_I32), 0), 48, 96, 3, 20, PTO_F32, 0)

static pto_tensor *build_mm_tiled(pto_program *p, pto_tensor **in) {
  pto_tensor *c = pto_matmul(p, in[0], in[1], 0);
  return pto_matmul_acc(p, c, in[0], in[1], 0);
}
Test(partitioner, parity_matmul_cube_tiles_and_split_k) {
  const pto_dtype dts[2] = {PTO_F32, PTO_F32};
  const int64_t shapes[2][4] = {{48, 96}, {96, 40}};
  const int nd[2] = {2, 2};
  const pto_tile_shape cubes[] = {{0, 0, 16, 16, 32}, {0, 0, 13, 7, 40},
                                  {0, 0, 48, 40, 96}, {0, 0, 0, 0, 17}};
  for (size_t i = 0; i < sizeof cubes / sizeof cubes[0]; i++)
    check_parity("matmul_cube", 2, dts, shapes, nd, build_mm_tiled, 16, 32,
                 &cubes[i], MM_TOL);
}

static pto_tensor *build_batched(pto_program *p, pto_tensor **in) {
  return pto_rowmax(p, pto_matmul(p, in[0], in[1], PTO_MATMUL_TRANS_B));
}
Test(partitioner, parity_batched_matmul_with_broadcast) {
  const pto_dtype dts[2] = {PTO_F32, PTO_F32};
  const int64_t shapes[2][4] = {{3, 2, 24, 32}, {40, 32}};
  const int nd[2] = {4, 2};
  check_parity("batched", 2, dts, shapes, nd, build_batched, 8, 16, NULL,
               MM_TOL);
}

/* matmul_relu_wsum, compiled: groups of 4 rows, causal diagonals through,
 * before and past the tiles, cube tiles that divide, that leave edges and
 * whose m is not whole groups (rounded down), batch broadcast of k and w;
 * k stored as rows (TRANS_B: TMATMUL_RELU_WSUM_G reads them in place) and
 * as K x N (TMATMUL_RELU_WSUM on a loaded B). */
static int64_t wsum_diag;
static unsigned wsum_flags;
static pto_tensor *build_wsum(pto_program *p, pto_tensor **in) {
  return pto_matmul_relu_wsum(p, in[0], in[1], in[2], 4, wsum_flags,
                              wsum_diag);
}
Test(partitioner, parity_matmul_relu_wsum_tiles_and_causal_mask) {
  const pto_dtype dts[3] = {PTO_F32, PTO_F32, PTO_F32};
  const int nd[3] = {3, 3, 3}, nd_shared[3] = {3, 2, 2};
  const pto_tile_shape cubes[] = {{0, 0, 8, 16, 0},  {0, 0, 12, 7, 0},
                                  {0, 0, 0, 0, 0},   {0, 0, 5, 30, 0},
                                  {0, 0, 3, 13, 64}, {0, 0, 24, 32, 8}};
  const int64_t diags[] = {20, 0, -3, 100, -40};
  for (int rows = 0; rows < 2; rows++) { /* k: N x K rows, or K x N */
    const int64_t n = rows ? 30 : 40, k = rows ? 40 : 30;
    const int64_t shapes[3][4] = {{2, 24, 40}, {2, n, k}, {2, 24, 1}};
    const int64_t shared[3][4] = {{2, 24, 40}, {n, k}, {24, 1}};
    for (size_t i = 0; i < sizeof cubes / sizeof cubes[0]; i++)
      for (size_t j = 0; j < sizeof diags / sizeof diags[0]; j++) {
        wsum_flags = (rows ? PTO_MATMUL_TRANS_B : 0u) |
                     (j ? PTO_MATMUL_CAUSAL : 0u);
        wsum_diag = diags[j];
        check_parity("wsum", 3, dts, j & 1 ? shared : shapes,
                     j & 1 ? nd_shared : nd, build_wsum, 16, 32, &cubes[i],
                     MM_TOL);
      }
  }
}

/* ---- structure ---------------------------------------------------------- */

static pto_executable *compile_ok(pto_program *p, const pto_config *c) {
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  return e;
}

/* Compiles p with the default config, expects its first program to be
 * named want, and frees both. */
static void expect_program(pto_program *p, const char *want) {
  pto_executable *e = compile_ok(p, NULL);
  cr_expect_str_eq(pto_executable_program_name(e, 0), want);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(partitioner, isomorphic_tiles_share_one_program) {
  pto_program *p = pto_program_new("iso");
  const int64_t s[2] = {256, 256};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 32, 32);
  pto_output(p, pto_add(p, a, b), "c");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_executable *e = compile_ok(p, c);
  pto_config_free(c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, 64);
  cr_expect_eq(st.programs, 1);
  cr_expect_eq(st.edges, 0);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(partitioner, softmax_fuses_into_one_subgraph_per_row_block) {
  pto_program *p = pto_program_new("softmax");
  const int64_t s[2] = {16, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_output(p, pto_softmax(p, a), "y");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_executable *e = compile_ok(p, c);
  pto_config_free(c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, 4);
  cr_expect_eq(st.programs, 1);
  cr_expect_eq(st.workspace_bytes, 0, "no intermediate leaves local memory");
  pto_executable_free(e);
  pto_program_free(p);
}

/* An RMS norm over 8 column tiles on 2 workers: x * x fans in to a rowsum,
 * a chain of one-tile ops (muls, adds, rsqrt) fans out to x * r. Fused
 * whole it is one subgraph; the parallelism rule cuts the fan-in and the
 * fan-out (where the cluster collapses) and leaves the chain with the
 * rowsum: 2 + 1 + 2 tasks. Cutting the chain's edges one at a time, as it
 * did, gave 8 tasks (three of a single tiny instruction each, in a row on
 * the critical path) after a formation of every subgraph per cut. */
Test(partitioner, a_norm_chain_splits_where_it_fans_in_and_out) {
  pto_program *p = pto_program_new("rms");
  const int64_t s[2] = {4, 4096};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 512);
  pto_tensor *ms = pto_muls(p, pto_rowsum(p, pto_mul(p, x, x)), 1.0 / 4096);
  pto_tensor *r = pto_rsqrt(p, pto_adds(p, ms, 1e-6));
  pto_output(p, pto_mul(p, x, r), "y");
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c);
  pto_config_free(c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, 5);
  cr_expect_eq(st.programs, 3);
  uint32_t chain = 0; /* the rowsum's task feeds both x * r tasks */
  for (uint32_t t = 0; t < st.tasks; t++) {
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    const uint32_t *succ;
    chain +=
        strstr(name, "TROWSUM") && pto_executable_task_succ(e, t, &succ) == 2;
  }
  cr_expect_eq(chain, 1, "rowsum, muls, adds and rsqrt are not one task");
  static float X[4 * 4096], Y[4 * 4096], R[4 * 4096];
  srand(11);
  for (int i = 0; i < 4 * 4096; i++)
    X[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  const void *in[] = {X};
  serial_parallel_and_eval_agree(e, p, in, Y, R, 4 * 4096, 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
}

/* l1_reuse joins cube units only, so it must not count against a vector
 * op's tasks in the parallelism rule. A column sum of a column fans out
 * to the row tiles of (s - m1) / (m4 + 0.25) - m7 on 4 workers: 4 tasks
 * per vector op alone, and 5 fused (the sum, then 4 at once). With
 * l1_reuse 32 the rule took every op for one task alone and let the
 * cluster collapse into a single task (fuzz_diff seed 7406893). */
Test(partitioner, l1_reuse_does_not_collapse_vector_ops) {
  pto_program *p = pto_program_new("reuse");
  pto_program_set_vec_tile(p, 32, 128); /* 4 row tiles on any machine */
  pto_tensor *m1 = pto_input(p, "m1", PTO_F32, 2, (const int64_t[]){127, 1});
  pto_tensor *m4 =
      pto_input(p, "m4", PTO_F32, 2, (const int64_t[]){127, 127});
  pto_tensor *m7 =
      pto_input(p, "m7", PTO_F32, 2, (const int64_t[]){127, 127});
  pto_tensor *d = pto_div(p, pto_sub(p, pto_colsum(p, m1), m1),
                          pto_adds(p, m4, 0.25));
  pto_output(p, pto_sub(p, d, m7), "y");
  pto_config *c = host_config(4);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, 32), PTO_OK);
  pto_executable *e = compile_ok(p, c);
  pto_config_free(c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  uint32_t widest = 0;
  for (uint32_t t = 0; t < st.tasks; t++) {
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, t, &succ);
    widest = k > widest ? k : widest;
  }
  cr_expect_eq(st.tasks, 5, "tasks %u", st.tasks);
  cr_expect_eq(widest, 4, "the sum feeds %u tasks, not the 4 row tiles",
               widest);
  static float M1[127], M4[127 * 127], M7[127 * 127], Y[127 * 127],
      R[127 * 127];
  srand(7);
  for (int i = 0; i < 127 * 127; i++) {
    M4[i] = (float)rand() / (float)RAND_MAX;
    M7[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    if (i < 127)
      M1[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  }
  const void *in[] = {M1, M4, M7};
  serial_parallel_and_eval_agree(e, p, in, Y, R, 127 * 127, 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
}

/* exp(x - rowmax) and its row sum become one TROWEXPANDEXPDIFSUM pass,
 * that with the load and the max one TLOADEXPDIFSUM, and that with the
 * quotients and the scaled store one TLOADSOFTMAXSTORE (parity_softmax
 * checks the values). */
Test(partitioner, softmax_exp_of_difference_and_sum_are_one_instruction) {
  pto_program *p = pto_program_new("softmax");
  const int64_t s[2] = {16, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_output(p, pto_softmax(p, a), "y");
  pto_executable *e = compile_ok(p, NULL);
  const char *name = pto_executable_program_name(e, 0);
  cr_expect_str_eq(name, "p0:TLOADSOFTMAXSTORE");
  /* it loads x through its slot, stores y through slot2, and streams, as
   * the TSTORE it replaces did */
  const pto_cprog *pr = &e->progs[0];
  cr_expect(pr->insts[0].slot >= 0 && pr->insts[0].slot2 >= 0 &&
            pr->insts[0].slot != pr->insts[0].slot2);
  cr_expect(pr->insts[0].flags & PTO_TF_STREAM);
  pto_executable_free(e);
  pto_program_free(p);
  /* a difference read elsewhere stays: (x - max) is also an output */
  p = pto_program_new("keep");
  a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_tensor *d = pto_sub(p, a, pto_rowmax(p, a));
  pto_output(p, pto_exp(p, d), "y");
  pto_output(p, d, "d");
  e = compile_ok(p, NULL);
  int sub = 0;
  for (uint32_t q = 0; q < e->n_progs; q++)
    for (uint32_t k = 0; k < e->progs[q].n_insts; k++)
      sub += e->progs[q].insts[k].op == PTO_OP_TROWEXPANDSUB;
  cr_expect_gt(sub, 0, "the difference is stored: it must be computed");
  pto_executable_free(e);
  pto_program_free(p);
  /* without the sum, exp(x - max) stays one TROWEXPANDEXPDIF */
  p = pto_program_new("nosum");
  a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_output(p, pto_exp(p, pto_sub(p, a, pto_rowmax(p, a))), "y");
  expect_program(p, "p0:TLOADROWMAX.TROWEXPANDEXPDIF.TSTORE");
  /* a max that is also an output keeps its load: TLOADROWMAX stays */
  p = pto_program_new("keepmax");
  a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_tensor *m = pto_rowmax(p, a);
  pto_output(p, pto_rowsum(p, pto_exp(p, pto_sub(p, a, m))), "s");
  pto_output(p, m, "m");
  expect_program(p, "p0:TLOADROWMAX.TSTORE.TROWEXPANDEXPDIFSUM.TSTORE");
  /* without it, the same sums come from one TLOADEXPDIFSUM */
  p = pto_program_new("sums");
  a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_output(p, pto_rowsum(p, pto_exp(p, pto_sub(p, a, pto_rowmax(p, a)))),
             "s");
  expect_program(p, "p0:TLOADEXPDIFSUM.TSTORE");
}

/* softmax's scaling by 1 / row sum goes straight to global as one
 * TROWEXPANDMULSTORE (softmax_exp_of_difference_and_sum_are_one_instruction
 * checks the fused program); a product another instruction reads stays a
 * TROWEXPANDMUL into a tile. */
Test(partitioner, a_product_read_again_is_not_stored_fused) {
  const int64_t s[2] = {16, 64};
  pto_program *p = pto_program_new("keep");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_tensor *y = pto_mul(p, a, pto_rowmax(p, a));
  pto_output(p, y, "y");
  pto_output(p, pto_exp(p, y), "z");
  pto_executable *e = compile_ok(p, NULL);
  int muls = 0;
  for (uint32_t q = 0; q < e->n_progs; q++)
    for (uint32_t k = 0; k < e->progs[q].n_insts; k++)
      muls += e->progs[q].insts[k].op == PTO_OP_TROWEXPANDMUL;
  cr_expect_gt(muls, 0, "the product is read by TEXP: it must be a tile");
  pto_executable_free(e);
  pto_program_free(p);
}

/* The row max is taken while the tile is loaded: TLOAD and TROWMAX of what
 * it loaded become one TLOADROWMAX, whose window the executor prefetches as
 * a TLOAD's (parity_softmax checks the values). A loaded tile that is not
 * f32 keeps the separate passes. */
Test(partitioner, load_and_row_max_are_one_instruction) {
  static const struct {
    pto_dtype dt;
    const char *want;
  } cases[] = {{PTO_F32, "p0:TLOADROWMAX.TSTORE"},
               {PTO_I32, "p0:TLOAD.TROWMAX.TSTORE"}};
  const int64_t s[2] = {16, 64};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_program *p = pto_program_new("rowmax");
    pto_tensor *a = pto_input(p, "a", cases[i].dt, 2, s);
    pto_program_set_vec_tile(p, 4, 64);
    pto_output(p, pto_rowmax(p, a), "m");
    expect_program(p, cases[i].want);
  }
}

/* Stores of program outputs that no task reads are marked streaming;
 * stores of intermediates are not. */
Test(partitioner, stores_of_unread_outputs_stream) {
  pto_program *p = pto_program_new("stream");
  const int64_t s[2] = {16, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_output(p, pto_exp(p, pto_adds(p, a, 1)), "y");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  pto_executable *e = compile_ok(p, c);
  int out_stream = 0, ws_stream = 0, ws_plain = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_cprog *pr = &e->progs[e->tasks[t].prog];
    for (uint32_t k = 0; k < pr->n_insts; k++) {
      const pto_pinst *in = &pr->insts[k];
      if (in->op != PTO_OP_TSTORE)
        continue;
      uint32_t st = e->args[e->tasks[t].args + (uint32_t)in->slot].storage;
      int stream = (in->flags & PTO_TF_STREAM) != 0;
      if (e->storages[st].kind == PTO_STORAGE_OUTPUT)
        out_stream += stream;
      else if (stream)
        ws_stream++;
      else
        ws_plain++;
    }
  }
  cr_expect_gt(out_stream, 0);
  cr_expect_gt(ws_plain, 0);
  cr_expect_eq(ws_stream, 0);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, fuse_knob_off_keeps_ops_apart) {
  pto_program *p = pto_program_new("nofuse");
  const int64_t s[2] = {16, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 4, 64);
  pto_output(p, pto_exp(p, pto_adds(p, a, 1)), "y");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, 8);
  cr_expect_eq(st.programs, 2);
  cr_expect_eq(st.edges, 4);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, working_set_too_large_is_a_clear_error) {
  pto_program *p = pto_program_new("big");
  const int64_t s[2] = {512, 512};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 512, 512); /* 1 MiB tiles; UB is 192 KiB */
  pto_program_push_label(p, "big.sum");
  pto_output(p, pto_rowsum(p, a), "y");
  pto_config *c = ascend_config();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_ECAPACITY);
  cr_expect_null(e);
  const char *msg = pto_program_error(p);
  cr_expect(strstr(msg, "rowsum") && strstr(msg, "big.sum") &&
                strstr(msg, "UB") && strstr(msg, "196608"),
            "message: %s", msg);
  pto_config_free(c);
  pto_program_free(p);
}

/* A matmul operand that cannot fit: the message names the level, the tile
 * and the panel widths its operands are padded to. */
Test(partitioner, matmul_tile_too_large_names_the_packed_panels) {
  pto_program *p = pto_program_new("bigmm");
  const int64_t as[2] = {256, 256}, bs[2] = {256, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, as);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, bs);
  pto_program_set_cube_tile(p, 256, 64, 256); /* A tile 256 KiB > 64 KiB */
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  pto_config *c = ascend_config();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_ECAPACITY);
  cr_expect_null(e);
  const char *msg = pto_program_error(p);
  cr_expect(strstr(msg, "matmul") && strstr(msg, "L0A") &&
                strstr(msg, "65536") && strstr(msg, "256x64x256") &&
                strstr(msg, "packed in panels of"),
            "message: %s", msg);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, oversized_fusion_is_split_not_refused) {
  /* each op alone fits in UB; fused they would not */
  pto_program *p = pto_program_new("split");
  const int64_t s[2] = {64, 256};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 64, 256); /* 64 KiB per tile, 3 fit in UB */
  pto_tensor *x = pto_adds(p, a, 1);
  pto_tensor *ex = pto_exp(p, x);
  pto_tensor *y = pto_mul(p, x, ex); /* x, ex, y and z live at once: 256 KiB */
  pto_tensor *z = pto_sub(p, x, ex);
  pto_output(p, pto_add(p, y, z), "y");
  pto_config *c = ascend_config();
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_leq(st.mem_peak[PTO_MEM_UB], 196608);
  cr_expect_gt(st.tasks, 1);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, compile_without_outputs_is_rejected) {
  pto_program *p = pto_program_new("empty");
  const int64_t s[1] = {4};
  pto_input(p, "a", PTO_F32, 1, s);
  pto_executable *e = (pto_executable *)1;
  cr_expect_eq(pto_compile(p, NULL, &e), PTO_EINVAL);
  cr_expect_null(e);
  cr_expect(strstr(pto_program_error(p), "no outputs"));
  pto_program_free(p);
}

/* An op no output depends on is not computed: a program with an unused
 * intermediate (here exp(a) and a chain hanging off it) compiles to the
 * tasks of the one without it, and the unused tensors get no storage. A
 * view of an intermediate that is an output keeps that intermediate. */
static pto_program *plus_one(int with_unused, pto_tensor **unused) {
  const int64_t s[2] = {64, 64};
  pto_program *p = pto_program_new("dead");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 64);
  if (with_unused)
    *unused = pto_muls(p, pto_exp(p, a), 2.0);
  pto_output(p, pto_adds(p, a, 1.0), "y");
  return p;
}

Test(partitioner, ops_no_output_needs_are_not_computed) {
  const int64_t s[2] = {64, 64};
  pto_tensor *unused = NULL;
  pto_program *p = plus_one(0, NULL);
  pto_executable *e = compile_ok(p, NULL);
  pto_exe_stats live;
  pto_executable_stats(e, &live);
  pto_executable_free(e);
  pto_program_free(p);
  p = plus_one(1, &unused);
  e = compile_ok(p, NULL);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, live.tasks, "%u tasks, %u without the unused ops",
               st.tasks, live.tasks);
  cr_expect_eq(st.tile_instructions, live.tile_instructions);
  cr_expect_eq(st.workspace_bytes, 0);
  cr_expect_eq(e->storages[unused->id].kind, PTO_STORAGE_NONE);
  cr_expect_str_eq(pto_executable_program_name(e, 0), "p0:TLOAD.TADDS.TSTORE");
  pto_executable_free(e);
  pto_program_free(p);
  /* an output that is a view of an intermediate keeps its producer */
  p = pto_program_new("view");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 64);
  const int64_t lo[2] = {0, 0}, hi[2] = {32, 64};
  pto_output(p, pto_slice(p, pto_exp(p, a), lo, hi), "y");
  e = compile_ok(p, NULL);
  float x[64 * 64], y[32 * 64];
  for (int i = 0; i < 64 * 64; i++)
    x[i] = (float)(i % 7) * 0.25f;
  const void *in[] = {x};
  void *out[] = {y};
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  for (int i = 0; i < 32 * 64; i++)
    cr_assert(fabs(y[i] - exp((double)x[i])) <= 1e-6 * exp((double)x[i]),
              "y[%d] = %.9g, exp gives %.9g", i, (double)y[i],
              exp((double)x[i]));
  pto_executable_free(e);
  pto_program_free(p);
}

/* ---- knobs -------------------------------------------------------------- */

static pto_program *add_256(void) {
  pto_program *p = pto_program_new("add");
  const int64_t s[2] = {256, 256};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 32, 32);
  pto_program_push_label(p, "sum");
  pto_output(p, pto_add(p, a, b), "c");
  pto_program_pop_label(p);
  return p;
}

static uint32_t tasks_with(pto_program *p, const pto_machine *m,
                           const char *label, pto_knob k, int64_t v) {
  pto_config *c = pto_config_new();
  if (m)
    cr_assert_eq(pto_config_set_machine(c, m), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, label, k, v), PTO_OK);
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  pto_executable_free(e);
  pto_config_free(c);
  return st.tasks;
}

Test(partitioner, nbuffer_merges_isomorphic_vector_tasks) {
  pto_program *p = add_256(); /* 64 tiles of 32x32 */
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_NBUFFER, 1), 64);
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_NBUFFER, 4), 16);
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_NBUFFER, 5), 13);
  cr_expect_eq(tasks_with(p, NULL, "sum", PTO_KNOB_NBUFFER, 8), 8,
               "per-label knob");
  cr_expect_eq(tasks_with(p, NULL, "other", PTO_KNOB_NBUFFER, 8), 2,
               "a knob for another label leaves auto in force");
  /* auto: small tasks, about one per vector worker */
  pto_machine two = pto_machine_ascend();
  two.workers[PTO_CORE_VECTOR] = 2;
  cr_expect_eq(tasks_with(p, &two, NULL, PTO_KNOB_NBUFFER, 0), 2);
  pto_machine m = pto_machine_ascend(); /* 48 vector workers: 64 -> 32 */
  cr_expect_eq(tasks_with(p, &m, NULL, PTO_KNOB_NBUFFER, 0), 32);
  pto_program_free(p);
}

Test(partitioner, nbuffer_runs_every_instance) {
  pto_program *p = add_256();
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 7);
  pto_executable *e = compile_ok(p, c);
  static float a[256 * 256], b[256 * 256], out[256 * 256];
  for (int i = 0; i < 256 * 256; i++) {
    a[i] = (float)i;
    b[i] = 0.5f;
  }
  const void *in[] = {a, b};
  void *o[] = {out};
  cr_assert_eq(pto_executable_run_serial(e, in, o), PTO_OK);
  parallel_equals_serial(e, in, out, sizeof out);
  for (int i = 0; i < 256 * 256; i++)
    cr_assert_eq(out[i], (float)i + 0.5f, "[%d]", i);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

static pto_program *matmul_128(void) {
  pto_program *p = pto_program_new("mm");
  const int64_t sa[2] = {128, 64}, sb[2] = {64, 128};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, sa);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, sb);
  pto_program_set_cube_tile(p, 32, 32, 32);
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  return p;
}

Test(partitioner, l1_reuse_merges_cube_tasks_sharing_an_operand) {
  pto_program *p = matmul_128(); /* 4 x 4 output tiles, 2 k-steps each */
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_L1_REUSE, 1), 16);
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_L1_REUSE, 2), 8);
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_L1_REUSE, 4), 4);
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_L1_REUSE, 64), 4,
               "at most the tiles that share the operand");
  /* the shared window is loaded once: fewer bytes cross the boundary */
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, 4);
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st4, st1;
  pto_executable_stats(e, &st4);
  static float a[128 * 64], b[64 * 128], got[128 * 128], want[128 * 128];
  for (int i = 0; i < 128 * 64; i++) {
    a[i] = (float)(i % 7) - 3;
    b[i] = (float)(i % 5) - 2;
  }
  const void *in[] = {a, b};
  void *o[] = {got}, *r[] = {want};
  cr_assert_eq(pto_executable_run_serial(e, in, o), PTO_OK);
  parallel_equals_serial(e, in, got, sizeof got);
  cr_assert_eq(pto_program_eval(p, in, r), PTO_OK);
  cr_expect(memcmp(got, want, sizeof got) == 0, "small integers are exact");
  pto_executable_free(e);
  pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, 1);
  e = compile_ok(p, c);
  pto_executable_stats(e, &st1);
  cr_expect_lt(st4.boundary_bytes, st1.boundary_bytes);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* The causal mask skips work: a tile wholly past the diagonal is a vector
 * task that fills -inf, a tile the diagonal crosses is a cube task told
 * where it runs (TMATMUL_RELU_WSUM_G: the keys, stored as rows, read in
 * place), and a tile before it carries no mask; with l1_reuse the key
 * tiles of a query block share one packed Q^T. */
Test(partitioner, matmul_relu_wsum_skips_tiles_past_the_diagonal) {
  pto_program *p = pto_program_new("causal");
  pto_tensor *q = pto_input(p, "q", PTO_F32, 2, (int64_t[]){8 * 4, 16});
  pto_tensor *k = pto_input(p, "k", PTO_F32, 2, (int64_t[]){64, 16});
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, (int64_t[]){8 * 4, 1});
  pto_program_set_cube_tile(p, 8, 16, 0); /* 2 rows x 16 keys per tile */
  /* row r (of 8) sees keys <= r + 12 (of 64) */
  pto_output(p,
             pto_matmul_relu_wsum(p, q, k, w, 4,
                                  PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL, 12),
             "s");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1); /* a task per tile */
  pto_executable *e = compile_ok(p, c);
  /* 4 row tiles x 4 key tiles of 16. Rows 0-1 see keys <= 12-13 and rows
   * 2-3 <= 14-15: key tile 0 only, crossed by the diagonal. Rows 4-5 (<=
   * 16-17) and 6-7 (<= 18-19): key tile 0 whole, key tile 1 crossed. The
   * other 10 tiles are past the diagonal. */
  uint32_t cube = 0, vec = 0, masked = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++)
    e->tasks[t].core == PTO_CORE_CUBE ? cube++ : vec++;
  for (uint32_t g = 0; g < e->n_progs; g++)
    for (uint32_t i = 0; i < e->progs[g].n_insts; i++)
      if (e->progs[g].insts[i].op == PTO_OP_TMATMUL_RELU_WSUM_G &&
          (e->progs[g].insts[i].flags & PTO_TF_CAUSAL))
        masked += e->progs[g].n_tasks;
  cr_expect_eq(cube, 6, "cube tasks: %u", cube);
  cr_expect_eq(masked, 4, "cube tasks the diagonal crosses: %u", masked);
  cr_expect_eq(vec, 10, "fill tasks: %u", vec);
  float qv[32 * 16], kv[64 * 16], wv[32], got[8 * 64], want[8 * 64];
  for (int i = 0; i < 32 * 16; i++)
    qv[i] = (float)(i % 7) - 3;
  for (int i = 0; i < 64 * 16; i++)
    kv[i] = (float)(i % 5) - 2;
  for (int i = 0; i < 32; i++)
    wv[i] = (float)(i % 3) - 1;
  const void *in[] = {qv, kv, wv};
  void *o[] = {got}, *r[] = {want};
  cr_assert_eq(pto_executable_run_serial(e, in, o), PTO_OK, "%s",
               pto_executable_error(e));
  parallel_equals_serial(e, in, got, sizeof got);
  cr_assert_eq(pto_program_eval(p, in, r), PTO_OK);
  cr_expect(memcmp(got, want, sizeof got) == 0, "small integers are exact");
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* A program's knob recommendation (pto_program_set_knob) applies to the ops
 * of its tile scope: a config's label setting overrides it, and it
 * overrides the config's global value; bad values are refused. */
Test(partitioner, program_knobs_sit_between_label_and_global_settings) {
  pto_program *p = pto_program_new("mm");
  const int64_t sa[2] = {128, 64}, sb[2] = {64, 128};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, sa);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, sb);
  pto_program_set_cube_tile(p, 32, 32, 32);
  pto_program_push_tile(p, NULL);
  cr_assert_eq(pto_program_set_knob(p, PTO_KNOB_L1_REUSE, 4), PTO_OK);
  pto_program_push_label(p, "mm");
  pto_tensor *c = pto_matmul(p, a, b, 0);
  pto_program_pop_label(p);
  pto_program_pop_tile(p);
  pto_output(p, c, "c");
  /* outside the scope (the same tiles) nothing is recommended */
  pto_tensor *d = pto_matmul(p, a, b, 0);
  pto_output(p, d, "d");
  /* 16 tiles each; c's 4 rows of tiles share their A: 4 tasks */
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_L1_REUSE, 1), 4 + 16);
  cr_expect_eq(tasks_with(p, NULL, NULL, PTO_KNOB_L1_REUSE, 2), 4 + 8,
               "the global value reaches only d");
  uint32_t n = tasks_with(p, NULL, "mm", PTO_KNOB_L1_REUSE, 1);
  cr_expect_eq(n, 16 + 16, "the label setting wins over the program's: %u",
               n);
  pto_program_free(p);

  p = pto_program_new("bad");
  cr_expect_eq(pto_program_set_knob(p, PTO_KNOB_L1_REUSE, 0), PTO_EINVAL);
  cr_expect(strstr(pto_program_error(p), "l1_reuse") != NULL, "%s",
            pto_program_error(p));
  pto_program_free(p);
  p = pto_program_new("bad");
  cr_expect_eq(pto_program_set_knob(p, PTO_KNOB_POLICY, 1), PTO_ECONFIG);
  cr_expect(strstr(pto_program_error(p), "policy") != NULL, "%s",
            pto_program_error(p));
  pto_program_free(p);
  p = pto_program_new("bad");
  cr_expect_eq(pto_program_set_knob(p, (pto_knob)99, 1), PTO_EINVAL);
  pto_program_free(p);
  cr_expect_eq(pto_program_set_knob(NULL, PTO_KNOB_FUSE, 1), PTO_EINVAL);
}
