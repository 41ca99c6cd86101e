/* kernels: operators built with the public API, each checked against the
 * reference evaluator (pto_program_eval) and its own plain-C reference
 * (double accumulation), run serially and on the parallel runtime. Every
 * test has a timeout. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/gemm.h"
#include "pto/pto.h"
#include "tests/kernels_test.h"

/* got within the f32 accumulation bound of the double reference:
 * |got - want| <= 1e-5 * sqrt(K) * sum_k |a_ik b_kj| (+ a denormal's worth),
 * which an in-order f32 sum meets with a wide margin and a wrong product
 * term (>= ~1e-2 here) fails. */
static void expect_gemm(const char *what, int64_t M, int64_t N, int64_t K,
                        const float *A, const float *B, const float *got,
                        const float *want) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double mag = 0;
      for (int64_t k = 0; k < K; k++)
        mag += fabs((double)A[i * K + k] * B[k * N + j]);
      double tol = 1e-5 * sqrt((double)K) * mag + 1e-30;
      double g = got[i * N + j], w = want[i * N + j];
      cr_assert(fabs(g - w) <= tol,
                "%s %ldx%ldx%ld: C[%ld][%ld] = %.9g, expected %.9g within %.3g",
                what, (long)M, (long)N, (long)K, (long)i, (long)j, g, w, tol);
    }
}

/* C = A x B through the program (evaluator), the compiled executable
 * (serial and on 1 and 2 workers), against pto_gemm_ref. */
static void check_gemm(int64_t M, int64_t N, int64_t K,
                       const pto_tile_shape *tile) {
  char what[96];
  snprintf(what, sizeof what, "gemm tile %ux%ux%u", tile ? tile->cube_m : 0,
           tile ? tile->cube_n : 0, tile ? tile->cube_k : 0);
  float *A = random_f32(M * K, (unsigned)(M * 31 + K)),
        *B = random_f32(K * N, (unsigned)(N * 17 + K));
  float *ref = malloc((size_t)(M * N) * sizeof *ref),
        *got = malloc((size_t)(M * N) * sizeof *got);
  cr_assert(ref && got);
  pto_gemm_ref(M, N, K, A, B, ref);
  pto_program *p = pto_gemm_program(M, N, K, tile);
  cr_assert_not_null(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  const void *in[2] = {A, B};
  void *out[1] = {got};
  cr_assert_eq(pto_program_eval(p, in, out), PTO_OK, "%s",
               pto_program_error(p));
  expect_gemm("eval", M, N, K, A, B, got, ref);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  memset(got, 0xff, (size_t)(M * N) * sizeof *got);
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  expect_gemm(what, M, N, K, A, B, got, ref);
  for (uint32_t w = 1; w <= 2; w++) {
    pto_runtime *rt = runtime_with(w);
    memset(got, 0xff, (size_t)(M * N) * sizeof *got);
    cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
                 pto_executable_error(e));
    expect_gemm(what, M, N, K, A, B, got, ref);
    pto_runtime_free(rt);
  }
  pto_executable_free(e);
  pto_program_free(p);
  free(A);
  free(B);
  free(ref);
  free(got);
}

Test(kernels, gemm_host_tile_matches_eval_and_reference, .timeout = 120) {
  static const int64_t sizes[][3] = {
      {37, 53, 71}, {130, 70, 300}, {1, 1, 1}, {64, 96, 600}, {257, 33, 9}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    check_gemm(sizes[i][0], sizes[i][1], sizes[i][2], NULL);
}

Test(kernels, gemm_small_tiles_split_k_and_edges, .timeout = 120) {
  /* many tiles with partial panels at every edge, K in 4 slices */
  const pto_tile_shape t1 = {0, 0, 20, 40, 37};
  check_gemm(61, 97, 140, &t1);
  const pto_tile_shape t2 = {0, 0, 1, 1, 1}; /* degenerate tiles */
  check_gemm(3, 5, 4, &t2);
}

/* The chosen tile fits the machine with its operands packed: the compiler
 * accepts it, and it honours the L0 capacities of small machines. */
Test(kernels, gemm_tile_fits_the_machine, .timeout = 60) {
  uint32_t mr, nr;
  pto_matmul_panel(&mr, &nr);
  pto_machine host;
  cr_assert_eq(pto_machine_host(&host), PTO_OK);
  pto_machine small = host;
  strcpy(small.name, "small");
  small.mem[PTO_MEM_L0A] = small.mem[PTO_MEM_L0B] = 16384;
  small.mem[PTO_MEM_L0C] = 32768;
  const pto_machine machines[] = {host, pto_machine_ascend(), small};
  static const int64_t sizes[][3] = {
      {1024, 1024, 1024}, {128, 8192, 576}, {2048, 2048, 2048}, {5, 3000, 7}};
  for (size_t mi = 0; mi < 3; mi++)
    for (size_t si = 0; si < 4; si++) {
      const pto_machine *m = &machines[mi];
      int64_t M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
      pto_tile_shape t;
      cr_assert_eq(pto_gemm_tile(m, M, N, K, m->workers[0], &t), PTO_OK);
      uint64_t rows = t.cube_m < M ? t.cube_m : (uint64_t)M;
      uint64_t cols = t.cube_n < N ? t.cube_n : (uint64_t)N;
      uint64_t kk = t.cube_k < K ? t.cube_k : (uint64_t)K;
      uint64_t a = (rows + mr - 1) / mr * mr * pto_tile_stride(PTO_F32, (uint32_t)kk) * 4;
      uint64_t b = kk * pto_tile_stride(PTO_F32, (uint32_t)((cols + nr - 1) / nr * nr)) * 4;
      uint64_t acc = rows * pto_tile_stride(PTO_F32, (uint32_t)cols) * 4;
      cr_expect(t.cube_k >= 1 && t.cube_k <= K && a <= m->mem[PTO_MEM_L0A] &&
                    b <= m->mem[PTO_MEM_L0B] && acc <= m->mem[PTO_MEM_L0C],
                "%s %ldx%ldx%ld: tile %ux%ux%u", m->name, (long)M, (long)N,
                (long)K, t.cube_m, t.cube_n, t.cube_k);
      pto_config *c = pto_config_new();
      cr_assert_eq(pto_config_set_machine(c, m), PTO_OK);
      pto_program *p = pto_gemm_program(M, N, K, &t);
      pto_executable *e = NULL;
      cr_expect_eq(pto_compile(p, c, &e), PTO_OK, "%s: %s", m->name,
                   pto_program_error(p));
      pto_executable_free(e);
      pto_program_free(p);
      pto_config_free(c);
    }
}

Test(kernels, gemm_bad_input_is_an_error, .timeout = 30) {
  pto_machine host;
  cr_assert_eq(pto_machine_host(&host), PTO_OK);
  pto_tile_shape t;
  cr_expect_eq(pto_gemm_tile(&host, 0, 4, 4, 1, &t), PTO_EINVAL);
  cr_expect_eq(pto_gemm_tile(&host, 4, 4, 4, 0, &t), PTO_EINVAL);
  cr_expect_eq(pto_gemm_tile(NULL, 4, 4, 4, 1, &t), PTO_EINVAL);
  pto_machine tiny = host;
  tiny.mem[PTO_MEM_L0C] = 16; /* not one accumulator panel */
  cr_expect_eq(pto_gemm_tile(&tiny, 64, 64, 64, 1, &t), PTO_ECAPACITY);
  pto_program *p = pto_gemm_program(8, -3, 4, NULL);
  cr_assert_not_null(p);
  cr_expect_neq(pto_program_status(p), PTO_OK);
  cr_expect(strstr(pto_program_error(p), "-3") != NULL, "message: %s",
            pto_program_error(p));
  pto_program_free(p);
}
