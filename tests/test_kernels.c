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
  for (uint32_t w = 0; w <= 2; w++) {
    memset(got, 0xff, (size_t)(M * N) * sizeof *got);
    run_on_workers(e, in, out, w, what);
    expect_gemm(what, M, N, K, A, B, got, ref);
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

/* bf16 A and B (the f32 engine widens them while packing; C f32): against
 * pto_gemm_ref on the same values widened by the test, within the f32
 * bound of expect_gemm, since bf16 products are exact in f32 and only the
 * f32 sum's order differs. Host tile and split-K edges. */
Test(kernels, gemm_bf16_operands, .timeout = 120) {
  const int64_t sizes[][3] = {{64, 96, 128}, {61, 97, 140}, {3, 5, 4}};
  const pto_tile_shape split = {0, 0, 12, 32, 24};
  for (int i = 0; i < 3; i++) {
    const int64_t M = sizes[i][0], N = sizes[i][1], K = sizes[i][2];
    uint16_t *Ah = random_bf16(M * K, 5 + i), *Bh = random_bf16(K * N, 9 + i);
    float *A = malloc((size_t)(M * K) * sizeof *A),
          *B = malloc((size_t)(K * N) * sizeof *B),
          *ref = malloc((size_t)(M * N) * sizeof *ref),
          *got = malloc((size_t)(M * N) * sizeof *got);
    cr_assert(A && B && ref && got);
    for (int64_t j = 0; j < M * K; j++)
      A[j] = bf16_f32(Ah[j]);
    for (int64_t j = 0; j < K * N; j++)
      B[j] = bf16_f32(Bh[j]);
    pto_gemm_ref(M, N, K, A, B, ref);
    for (int t = 0; t < 2; t++) {
      pto_program *p =
          pto_gemm_program_dtype(M, N, K, t ? &split : NULL, PTO_BF16);
      cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
      pto_executable *e = NULL;
      cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s",
                   pto_program_error(p));
      const void *in[2] = {Ah, Bh};
      void *out[1] = {got};
      for (uint32_t w = 0; w <= 2; w++) {
        memset(got, 0xff, (size_t)(M * N) * sizeof *got);
        run_on_workers(e, in, out, w, "gemm bf16");
        expect_gemm(t ? "gemm bf16 split-k" : "gemm bf16", M, N, K, A, B, got,
                    ref);
      }
      pto_executable_free(e);
      pto_program_free(p);
    }
    free(Ah);
    free(Bh);
    free(A);
    free(B);
    free(ref);
    free(got);
  }
  /* the engine that ran them is named: the bf16 one of the avx512bf16
   * table, else the table's f32 engine */
  const char *eng = pto_matmul_engine(PTO_BF16);
  cr_assert_not_null(eng);
  const int bf_table = !strcmp(pto_isa_name(), "avx512bf16");
  char want[32]; /* avx512bf16 keeps avx512's f32 engine */
  snprintf(want, sizeof want, "%s-f32", bf_table ? "avx512" : pto_isa_name());
  cr_expect_str_eq(pto_matmul_engine(PTO_F32), want);
  cr_expect_str_eq(eng, bf_table ? "avx512-bf16" : want);
  cr_expect_null(pto_matmul_engine(PTO_I32));
  cr_expect_null(pto_matmul_engine((pto_dtype)99));
  /* operands the GEMM does not take */
  pto_program *p = pto_gemm_program_dtype(4, 4, 4, NULL, PTO_I32);
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  cr_expect(strstr(pto_program_error(p), "gemm") &&
                strstr(pto_program_error(p), "i32"),
            "message: %s", pto_program_error(p));
  pto_program_free(p);
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

/* ---- lightning indexer: its top-k ---------------------------------------- */

/* The indexer program for d with this topk, mask and top-k tile, through
 * the evaluator, the serial executor and the runtime (2 workers), each
 * checked by pto_indexer_check. Query row 2 of each batch has zero weights,
 * so every visible score is 0: ties at the threshold, which must resolve
 * by index (keys 0, 1, ...). */
static void check_indexer_topk(const pto_indexer_dims *d, int64_t topk,
                               pto_mask_mode mask, uint32_t tr, uint32_t tc) {
  char what[160];
  snprintf(what, sizeof what,
           "indexer B %ld S1 %ld S2 %ld H %ld D %ld topk %ld %s tile %ux%u",
           (long)d->b, (long)d->s1, (long)d->s2, (long)d->h, (long)d->d,
           (long)topk, mask == PTO_MASK_CAUSAL ? "causal" : "none", tr, tc);
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = topk;
  prm.mask = mask;
  prm.topk_tile.vec_rows = tr;
  prm.topk_tile.vec_cols = tc;
  pto_program *p = pto_indexer_program(d, &prm);
  cr_assert_not_null(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  const int64_t rows = d->b * d->s1;
  float *q = random_f32(rows * d->h * d->d, 11),
        *k = random_f32(d->b * d->s2 * d->d, 12),
        *w = random_f32(rows * d->h, 13);
  for (int64_t b = 0; b < d->b && d->s1 > 2; b++)
    memset(w + (b * d->s1 + 2) * d->h, 0, (size_t)d->h * sizeof *w);
  int32_t *idx = malloc((size_t)(rows * topk) * sizeof *idx);
  float *val = malloc((size_t)(rows * topk) * sizeof *val);
  cr_assert(idx && val);
  const void *in[3] = {q, k, w};
  void *out[2] = {idx, val};
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  for (int run = 0; run < 3; run++) {
    memset(idx, 0x5a, (size_t)(rows * topk) * sizeof *idx);
    memset(val, 0x5a, (size_t)(rows * topk) * sizeof *val);
    const char *how = run == 0 ? "eval" : run == 1 ? "serial" : "runtime";
    if (run == 0)
      cr_assert_eq(pto_program_eval(p, in, out), PTO_OK, "%s: %s", what,
                   pto_program_error(p));
    else
      run_on_workers(e, in, out, run == 1 ? 0 : 2, what);
    char msg[256];
    cr_assert_eq(pto_indexer_check(d, &prm, q, k, w, idx, val, 0, rows, 0, msg,
                                   sizeof msg),
                 0, "%s, %s: %s", what, how, msg);
    for (int64_t b = 0; b < d->b && d->s1 > 2; b++) {
      const int64_t r = b * d->s1 + 2, n = pto_indexer_visible(d, mask, 2);
      for (int64_t t = 0; t < topk; t++)
        cr_assert_eq(idx[r * topk + t], t < n ? (int32_t)t : -1,
                     "%s, %s: all-zero row %ld slot %ld", what, how, (long)r,
                     (long)t);
    }
  }
  pto_executable_free(e);
  pto_program_free(p);
  free(q);
  free(k);
  free(w);
  free(idx);
  free(val);
}

Test(kernels, indexer_topk_matches_reference, .timeout = 120) {
  const pto_indexer_dims d = {2, 5, 37, 3, 8};
  /* topk below a block, equal to S2 and past it (every row padded); top-k
   * tiles with merges (blocks of 8 and 5 columns) and whole rows */
  static const int64_t ks[] = {4, 37, 50};
  static const uint32_t tiles[][2] = {{2, 8}, {3, 5}, {0, 0}};
  for (int m = 0; m < 2; m++)
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
      for (size_t j = 0; j < sizeof tiles / sizeof tiles[0]; j++)
        check_indexer_topk(&d, ks[i], m ? PTO_MASK_CAUSAL : PTO_MASK_NONE,
                           tiles[j][0], tiles[j][1]);
  /* causal with S1 > S2: queries 0..3 see no key (all padding) */
  const pto_indexer_dims d2 = {1, 9, 5, 2, 4};
  check_indexer_topk(&d2, 3, PTO_MASK_CAUSAL, 2, 2);
  check_indexer_topk(&d2, 8, PTO_MASK_CAUSAL, 4, 0);
}
