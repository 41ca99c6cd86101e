/* partitioner: compiled executables compute what the reference evaluator
 * computes: PyPTO's worked example against its golden task graph, and
 * every op, alone and in chains, under vector tiles that divide and that
 * leave edges (matmul also under cube tiles and split k), serially and on
 * the parallel runtime. */
#include <criterion/criterion.h>

#include "pto/pto.h"
#include "tests/partitioner_test.h"

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
