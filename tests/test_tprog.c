/* Tile programs (pto/tileprog.h): blocks of tile instructions written by
 * hand run as tasks beside the compiler's, give the plain-C answer and the
 * evaluator's serially and on 1-3 workers, mix with tensor ops, and are
 * refused with messages naming the program, the instruction and the sizes
 * when they are wrong. */
#include "tests/partitioner_test.h"

#include "examples.h"

#include <stdint.h>
#include <stdio.h>

#define D2(a, b) ((const int64_t[]){a, b})

static pto_tp_expr c0(void) { return pto_tp_const(0); }

/* Row softmax of [M, N], rb rows a block. */
static pto_tprog *softmax_tprog(int64_t M, int64_t N, uint32_t rb) {
  pto_tprog *tp = pto_tprog_new("softmax", 1, (int64_t[]){M / rb});
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(M, N));
  int y = pto_tprog_output(tp, "y", PTO_F32, 2, D2(M, N));
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, rb, (uint32_t)N, 1);
  int m = pto_tprog_tile(tp, "m", PTO_MEM_UB, PTO_F32, rb, 1, 1);
  pto_tp_expr at[2] = {pto_tp_var(pto_tprog_block(tp, 0), rb), c0()};
  pto_tprog_load(tp, t, x, at);
  int tm[2] = {t, m};
  pto_tprog_op(tp, "TROWMAX", 1, &m, 1, &t, NULL);
  pto_tprog_op(tp, "TROWEXPANDSUB", 1, &t, 2, tm, NULL);
  pto_tprog_op(tp, "TEXP", 1, &t, 1, &t, NULL);
  pto_tprog_op(tp, "TROWSUM", 1, &m, 1, &t, NULL);
  pto_tprog_op(tp, "TROWEXPANDDIV", 1, &t, 2, tm, NULL);
  pto_tprog_store(tp, t, y, at);
  cr_assert_eq(pto_tprog_status(tp), PTO_OK, "%s", pto_tprog_error(tp));
  return tp;
}

/* Compiles p (one f32 output of n elements) for 2 host workers; its
 * serial, parallel and evaluated results agree; also on 1 worker. */
static void runs_everywhere(pto_program *p, const void *const *in, float *got,
                            size_t n, float tol) {
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c);
  float *ref = malloc(n * sizeof *ref);
  cr_assert_not_null(ref);
  serial_parallel_and_eval_agree(e, p, in, got, ref, n, tol);
  runtime_equals_serial(e, in, got, n * sizeof *got, 1, 1, 1);
  free(ref);
  pto_executable_free(e);
  pto_config_free(c);
}

Test(partitioner, tile_program_softmax_matches_plain_c, .timeout = 60) {
  const int64_t M = 96, N = 80;
  pto_program *p = pto_program_new("tp_softmax");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(M, N)), *y;
  pto_tprog *tp = softmax_tprog(M, N, 16);
  pto_program_push_label(p, "expert");
  cr_assert_eq(pto_tile_program(p, tp, 1, &x, &y), PTO_OK, "%s",
               pto_program_error(p));
  pto_program_pop_label(p);
  pto_tprog_free(tp); /* the program keeps a copy */
  pto_output(p, y, "y");
  float *xv = filled((size_t)(M * N), 7), *got = malloc(M * N * sizeof *got);
  const void *in[] = {xv};
  runs_everywhere(p, in, got, (size_t)(M * N), 1e-5f);
  for (int64_t r = 0; r < M; r++) {
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < N; c++)
      mx = fmax(mx, xv[r * N + c]);
    for (int64_t c = 0; c < N; c++)
      s += exp(xv[r * N + c] - mx);
    for (int64_t c = 0; c < N; c++) {
      const double want = exp(xv[r * N + c] - mx) / s;
      cr_assert(fabs(got[r * N + c] - want) <= 1e-5 * (1 + want),
                "y[%ld][%ld] %g vs %g", (long)r, (long)c, got[r * N + c], want);
    }
  }
  free(xv);
  free(got);
  pto_program_free(p);
}

/* C = A B^T with B given as [N, K]: a grid of (M / tm, N / tn) blocks,
 * each a TMATMUL then TMATMUL_ACC over the k slices. */
static pto_tprog *gemm_tprog(int64_t M, int64_t N, int64_t K, uint32_t tm,
                             uint32_t tn, uint32_t tk) {
  pto_tprog *tp = pto_tprog_new("gemm", 2, (int64_t[]){M / tm, N / tn});
  int A = pto_tprog_input(tp, "A", PTO_F32, 2, D2(M, K));
  int B = pto_tprog_input(tp, "Bt", PTO_F32, 2, D2(N, K));
  int C = pto_tprog_output(tp, "C", PTO_F32, 2, D2(M, N));
  int a = pto_tprog_tile(tp, "a", PTO_MEM_L0A, PTO_F32, tm, tk, 2);
  int b = pto_tprog_tile(tp, "b", PTO_MEM_L0B, PTO_F32, tk, tn, 2);
  int c = pto_tprog_tile(tp, "c", PTO_MEM_L0C, PTO_F32, tm, tn, 1);
  const int bi = pto_tprog_block(tp, 0), bj = pto_tprog_block(tp, 1);
  int ab[2] = {a, b};
  pto_tprog_load(tp, a, A, (pto_tp_expr[]){pto_tp_var(bi, tm), c0()});
  pto_tprog_load_t(tp, b, B, (pto_tp_expr[]){pto_tp_var(bj, tn), c0()},
                   PTO_TP_TRANS);
  pto_tprog_op(tp, "TMATMUL", 1, &c, 2, ab, NULL);
  const int k = pto_tprog_for(tp, pto_tp_const(K / tk - 1));
  pto_tprog_load(tp, a, A,
                 (pto_tp_expr[]){pto_tp_var(bi, tm), pto_tp_axpb(k, tk, tk)});
  pto_tprog_load_t(tp, b, B,
                   (pto_tp_expr[]){pto_tp_var(bj, tn), pto_tp_axpb(k, tk, tk)},
                   PTO_TP_TRANS);
  pto_tprog_op(tp, "TMATMUL_ACC", 1, &c, 2, ab, NULL);
  pto_tprog_end(tp);
  pto_tprog_store(tp, c, C,
                  (pto_tp_expr[]){pto_tp_var(bi, tm), pto_tp_var(bj, tn)});
  cr_assert_eq(pto_tprog_status(tp), PTO_OK, "%s", pto_tprog_error(tp));
  return tp;
}

Test(partitioner, tile_program_gemm_accumulates_over_k, .timeout = 60) {
  const int64_t M = 64, N = 96, K = 128;
  pto_program *p = pto_program_new("tp_gemm");
  pto_tensor *ins[2] = {pto_input(p, "A", PTO_F32, 2, D2(M, K)),
                        pto_input(p, "Bt", PTO_F32, 2, D2(N, K))};
  pto_tensor *C;
  pto_tprog *tp = gemm_tprog(M, N, K, 32, 48, 32);
  cr_assert_eq(pto_tile_program(p, tp, 2, ins, &C), PTO_OK, "%s",
               pto_program_error(p));
  pto_tprog_free(tp);
  pto_output(p, C, "C");
  float *a = filled((size_t)(M * K), 3), *b = filled((size_t)(N * K), 4);
  float *got = malloc(M * N * sizeof *got);
  const void *in[] = {a, b};
  runs_everywhere(p, in, got, (size_t)(M * N), 2e-5f);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0;
      for (int64_t q = 0; q < K; q++)
        s += (double)a[i * K + q] * b[j * K + q];
      cr_assert(fabs(got[i * N + j] - s) <= 1e-4 * (1 + fabs(s)),
                "C[%ld][%ld] %g vs %g", (long)i, (long)j, got[i * N + j], s);
    }
  pto_exe_stats st;
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c);
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_assert_eq(st.tasks, (uint32_t)((M / 32) * (N / 48)), "one task a block");
  pto_executable_free(e);
  pto_config_free(c);
  free(a);
  free(b);
  free(got);
  pto_program_free(p);
}

/* Block i of the output is the sum of x's row blocks 0..i: a loop whose
 * trip follows the block index, a tile accumulated in place. */
Test(partitioner, tile_program_trip_follows_the_block, .timeout = 60) {
  const int64_t nb = 5, rb = 8, N = 24;
  pto_tprog *tp = pto_tprog_new("prefix", 1, (int64_t[]){nb});
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(nb * rb, N));
  int y = pto_tprog_output(tp, "y", PTO_F32, 2, D2(nb * rb, N));
  int s = pto_tprog_tile(tp, "s", PTO_MEM_UB, PTO_F32, rb, N, 1);
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, rb, N, 1);
  const int b = pto_tprog_block(tp, 0);
  pto_tprog_load(tp, s, x, (pto_tp_expr[]){c0(), c0()});
  const int j = pto_tprog_for(tp, pto_tp_var(b, 1));
  pto_tprog_load(tp, t, x, (pto_tp_expr[]){pto_tp_axpb(j, rb, rb), c0()});
  int st[2] = {s, t};
  pto_tprog_op(tp, "TADD", 1, &s, 2, st, NULL);
  pto_tprog_end(tp);
  pto_tprog_store(tp, s, y, (pto_tp_expr[]){pto_tp_var(b, rb), c0()});
  cr_assert_eq(pto_tprog_status(tp), PTO_OK, "%s", pto_tprog_error(tp));
  pto_program *p = pto_program_new("tp_prefix");
  pto_tensor *X = pto_input(p, "x", PTO_F32, 2, D2(nb * rb, N)), *Y;
  cr_assert_eq(pto_tile_program(p, tp, 1, &X, &Y), PTO_OK, "%s",
               pto_program_error(p));
  pto_tprog_free(tp);
  pto_output(p, Y, "y");
  const size_t n = (size_t)(nb * rb * N);
  float *xv = filled(n, 11), *got = malloc(n * sizeof *got);
  const void *in[] = {xv};
  runs_everywhere(p, in, got, n, 1e-6f);
  for (int64_t i = 0; i < nb * rb; i++)
    for (int64_t c = 0; c < N; c++) {
      float want = xv[(i % rb) * N + c]; /* the reference's order */
      for (int64_t q = 1; q <= i / rb; q++)
        want += xv[(q * rb + i % rb) * N + c];
      cr_assert_eq(got[i * N + c], want, "y[%ld][%ld]", (long)i, (long)c);
    }
  free(xv);
  free(got);
  pto_program_free(p);
}

/* A tensor op feeds the tile program and another reads its result: they
 * run together, and the tile program's tasks carry its label. */
Test(partitioner, tile_program_mixes_with_tensor_ops, .timeout = 60) {
  const int64_t M = 64, N = 48;
  pto_program *p = pto_program_new("tp_mixed");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(M, N)), *y;
  pto_tensor *x2 = pto_muls(p, x, 2.0);
  pto_tprog *tp = softmax_tprog(M, N, 16);
  pto_program_push_label(p, "expert.softmax");
  cr_assert_eq(pto_tile_program(p, tp, 1, &x2, &y), PTO_OK, "%s",
               pto_program_error(p));
  pto_program_pop_label(p);
  pto_tprog_free(tp);
  pto_output(p, pto_adds(p, y, 1.0), "z");
  float *xv = filled((size_t)(M * N), 5), *got = malloc(M * N * sizeof *got);
  const void *in[] = {xv};
  runs_everywhere(p, in, got, (size_t)(M * N), 1e-5f);
  for (int64_t r = 0; r < M; r++) {
    double s = 0;
    for (int64_t c = 0; c < N; c++)
      s += got[r * N + c] - 1.0;
    cr_assert(fabs(s - 1.0) < 1e-5, "row %ld sums to %g", (long)r, s);
  }
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c);
  int labelled = 0;
  for (uint32_t t = 0; t < pto_executable_num_tasks(e); t++)
    labelled += strcmp(pto_executable_task_label(e, t), "expert.softmax") == 0;
  cr_assert_geq(labelled, 1, "no task carries the tile program's label");
  pto_executable_free(e);
  pto_config_free(c);
  free(xv);
  free(got);
  pto_program_free(p);
}

/* The causal flash attention of kernels/examples_flash.c (an online
 * softmax over key steps, the steps past the diagonal skipped, a loop
 * over the steps beside it with masks that follow its index) against
 * plain C, for blocks of one step and of several. */
Test(partitioner, tile_program_flash_attention_matches_plain_c,
     .timeout = 120) {
  const int64_t H = 2, S = 96, D = 16;
  const uint32_t shapes[][2] = {{32, 32}, {48, 16}, {96, 32}};
  for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
    pto_program *p = pto_program_new("tp_flash");
    const int64_t sh[3] = {H, S, D};
    pto_tensor *q = pto_input(p, "q", PTO_F32, 3, sh),
               *k = pto_input(p, "k", PTO_F32, 3, sh),
               *v = pto_input(p, "v", PTO_F32, 3, sh);
    pto_output(p, pto_example_flash_expert(p, q, k, v, shapes[c][0],
                                           shapes[c][1]),
               "out");
    const size_t n = (size_t)(H * S * D);
    float *qv = filled(n, 21), *kv = filled(n, 22), *vv = filled(n, 23),
          *got = malloc(n * sizeof *got);
    const void *in[] = {qv, kv, vv};
    runs_everywhere(p, in, got, n, 2e-5f);
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < S; i++) {
        double w[96], mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; j++) {
          double dot = 0;
          for (int64_t x = 0; x < D; x++)
            dot += (double)qv[(h * S + i) * D + x] * kv[(h * S + j) * D + x];
          w[j] = dot / sqrt((double)D);
          mx = fmax(mx, w[j]);
        }
        for (int64_t j = 0; j <= i; j++)
          sum += w[j] = exp(w[j] - mx);
        for (int64_t x = 0; x < D; x++) {
          double o = 0;
          for (int64_t j = 0; j <= i; j++)
            o += w[j] / sum * vv[(h * S + j) * D + x];
          const float g = got[(h * S + i) * D + x];
          cr_assert(fabs(g - o) <= 1e-5 * (1 + fabs(o)),
                    "%ux%u: out[%ld][%ld][%ld] %g vs %g", shapes[c][0],
                    shapes[c][1], (long)h, (long)i, (long)x, g, o);
        }
      }
    free(qv);
    free(kv);
    free(vv);
    free(got);
    pto_program_free(p);
  }
  pto_program *p = pto_program_new("tp_flash_bad");
  const int64_t sh[3] = {1, 96, 16};
  pto_tensor *q = pto_input(p, "q", PTO_F32, 3, sh);
  cr_assert_null(pto_example_flash_expert(p, q, q, q, 32, 64));
  cr_assert(strstr(pto_program_error(p), "32 query rows a block by 64 keys"),
            "%s", pto_program_error(p));
  pto_program_free(p);
}

/* A tuned tile program: a config's cube_tile for its label builds it
 * again with that tile (fewer, larger blocks), which still gives plain
 * C's answer; a tile the builder cannot take fails the compile with its
 * message; a config tile for an untuned tile program is reported unused. */
Test(partitioner, tile_program_tuned_by_a_config, .timeout = 120) {
  const int64_t sh[3] = {2, 96, 16};
  pto_program *p = pto_program_new("tp_tuned");
  pto_tensor *q = pto_input(p, "q", PTO_F32, 3, sh),
             *k = pto_input(p, "k", PTO_F32, 3, sh),
             *v = pto_input(p, "v", PTO_F32, 3, sh);
  pto_program_push_label(p, "attn");
  pto_output(p, pto_example_flash_expert(p, q, k, v, 0, 0), "out");
  pto_program_pop_label(p);
  const size_t n = 2 * 96 * 16;
  float *qv = filled(n, 31), *kv = filled(n, 32), *vv = filled(n, 33);
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  const void *in[] = {qv, kv, vv};
  void *oa[] = {a}, *ob[] = {b};
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c); /* 32-row blocks: 6 tasks */
  cr_assert_eq(pto_executable_run_serial(e, in, oa), PTO_OK);
  const uint32_t plain = pto_executable_num_tasks(e);
  pto_executable_free(e);
  const pto_tile_shape t = {0, 0, 48, 16, 0};
  cr_assert_eq(pto_config_set_tile(c, "attn", &t), PTO_OK);
  e = compile_ok(p, c); /* 48-row blocks by 16-key steps: 4 tasks */
  cr_assert_eq(pto_executable_run_serial(e, in, ob), PTO_OK);
  /* the scaling op's tasks are the same in both */
  cr_assert_eq(plain - pto_executable_num_tasks(e), 6 - 4, "%u and %u tasks",
               plain, pto_executable_num_tasks(e));
  for (size_t i = 0; i < n; i++)
    cr_assert(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(a[i])), "out[%zu]", i);
  pto_executable_free(e);
  const pto_tile_shape bad = {0, 0, 32, 64, 0};
  cr_assert_eq(pto_config_set_tile(c, "attn", &bad), PTO_OK);
  cr_assert_eq(pto_compile(p, c, &e), PTO_EINVAL);
  cr_assert(strstr(pto_program_error(p),
                   "tile_program 'attn': for the config's tile (vec 0x0, "
                   "cube 32x64x0): tile program 'flash': 32 query rows a "
                   "block by 64 keys"),
            "%s", pto_program_error(p));
  pto_config_free(c);
  pto_program_free(p);
  /* untuned: the setting is unused, and said so */
  pto_tprog *tp = softmax_tprog(64, 32, 16);
  p = pto_program_new("tp_untuned");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(64, 32)), *y;
  pto_program_push_label(p, "sm");
  cr_assert_eq(pto_tile_program(p, tp, 1, &x, &y), PTO_OK);
  pto_program_pop_label(p);
  pto_output(p, y, "y");
  c = host_config(2);
  cr_assert_eq(pto_config_set_tile(c, "sm", &t), PTO_OK);
  e = compile_ok(p, c);
  cr_assert(strstr(pto_executable_warnings(e), "label 'sm'"), "%s",
            pto_executable_warnings(e));
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
  pto_tprog_free(tp);
  free(qv);
  free(kv);
  free(vv);
  free(a);
  free(b);
}

/* ---- refused, with messages -------------------------------------------- */

static void refused(pto_tprog *tp, pto_status st, const char *needle) {
  cr_assert_eq(pto_tprog_status(tp), st, "status %d: %s", pto_tprog_status(tp),
               pto_tprog_error(tp));
  cr_assert(strstr(pto_tprog_error(tp), needle), "message: %s",
            pto_tprog_error(tp));
}

Test(partitioner, tile_program_bad_instructions_are_refused_when_built) {
  struct {
    const char *insn;
    int n_dst, n_src, tiles[3]; /* dst, then sources */
    pto_status st;
    const char *needle;
  } bad[] = {
      {"TFROB", 1, 1, {0, 1}, PTO_EINVAL, "'TFROB' is no instruction"},
      {"TADD", 1, 1, {0, 1}, PTO_EINVAL, "takes 2 sources"},
      {"TADD", 1, 2, {0, 0, 2}, PTO_ESHAPE, "src1 b f32[8x16]"},
      {"TADD", 1, 2, {0, 0, 3}, PTO_EDTYPE, "i32"},
      {"TADD", 1, 2, {0, 0, 9}, PTO_EINVAL, "tile 9 is not declared"},
      {"TLOAD", 1, 0, {0}, PTO_EINVAL, "pto_tprog_load"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    pto_tprog *tp = pto_tprog_new("bad", 1, (int64_t[]){1});
    pto_tprog_tile(tp, "a", PTO_MEM_UB, PTO_F32, 8, 8, 1);
    pto_tprog_tile(tp, "a2", PTO_MEM_UB, PTO_F32, 8, 8, 1);
    pto_tprog_tile(tp, "b", PTO_MEM_UB, PTO_F32, 8, 16, 1);
    pto_tprog_tile(tp, "n", PTO_MEM_UB, PTO_I32, 8, 8, 1);
    pto_tprog_op(tp, bad[i].insn, bad[i].n_dst, bad[i].tiles, bad[i].n_src,
                 bad[i].tiles + 1, NULL);
    refused(tp, bad[i].st, bad[i].needle);
    cr_assert(strstr(pto_tprog_error(tp), "tile program 'bad'"), "%s",
              pto_tprog_error(tp));
    pto_tprog_free(tp);
  }
  pto_tprog *tp = pto_tprog_new("bad", 1, (int64_t[]){1});
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(8, 8));
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 8, 8, 1);
  pto_tprog_store(tp, t, x, (pto_tp_expr[]){c0(), c0()});
  refused(tp, PTO_EINVAL, "'x' is an input");
  pto_tprog_free(tp);
  tp = pto_tprog_new("bad", 1, (int64_t[]){1});
  x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(8, 8));
  t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 8, 8, 1);
  pto_tprog_load(tp, t, x, (pto_tp_expr[]){pto_tp_var(3, 1), c0()});
  refused(tp, PTO_EINVAL, "uses var 3");
  pto_tprog_free(tp);
  tp = pto_tprog_new("bad", 0, NULL);
  refused(tp, PTO_EINVAL, "a grid of 0 dims");
  pto_tprog_free(tp);
}

/* The declarations and structure calls refuse what they cannot take,
 * each with its message; pto_tile_program refuses what is unfinished. */
Test(partitioner, tile_program_bad_declarations_are_refused) {
  const int64_t big[1] = {INT64_C(1) << 32};
  pto_tprog *tp = pto_tprog_new("bad", 1, big);
  refused(tp, PTO_EINVAL, "grid dim 0 has 4294967296 blocks");
  pto_tprog_free(tp);
  struct {
    int what;
    pto_status st;
    const char *needle;
  } bad[] = {
      {0, PTO_EINVAL, "input 'x' has 5 dims (1..4)"},
      {1, PTO_ESHAPE, "output 'y' dim 1 is 0"},
      {2, PTO_EINVAL, "output 'o3': at most 2 outputs"},
      {3, PTO_EINVAL, "tile 't' has 3 buffers (1 or 2)"},
      {4, PTO_ESHAPE, "tile 't' is 0x8"},
      {5, PTO_EINVAL, "pto_tprog_end with no open loop"},
      {6, PTO_EINVAL, "loops nest 8 deep"},
      {7, PTO_EINVAL, "(TADD) takes no PTO_TP_ROWSCALE"},
      {8, PTO_EINVAL, "block index of grid dim 1: the grid has 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tp = pto_tprog_new("bad", 1, (int64_t[]){2});
    const int64_t s5[5] = {1, 1, 1, 1, 1}, s2[2] = {4, 0}, s1[1] = {8};
    switch (bad[i].what) {
    case 0: pto_tprog_input(tp, "x", PTO_F32, 5, s5); break;
    case 1: pto_tprog_output(tp, "y", PTO_F32, 2, s2); break;
    case 2:
      for (int k = 1; k <= 3; k++) {
        char name[8];
        snprintf(name, sizeof name, "o%d", k);
        pto_tprog_output(tp, name, PTO_F32, 1, s1);
      }
      break;
    case 3: pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 8, 8, 3); break;
    case 4: pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 0, 8, 1); break;
    case 5: pto_tprog_end(tp); break;
    case 6:
      for (int k = 0; k < 8; k++)
        pto_tprog_for(tp, pto_tp_const(1));
      break;
    case 7: {
      int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 8, 8, 1);
      const pto_tp_opargs a = {.flags = PTO_TP_ROWSCALE};
      pto_tprog_op(tp, "TADD", 1, &t, 2, (int[]){t, t}, &a);
      break;
    }
    default: pto_tprog_block(tp, 1); break;
    }
    refused(tp, bad[i].st, bad[i].needle);
    pto_tprog_free(tp);
  }
  /* unfinished: an open loop, no output, the wrong inputs, no builder */
  pto_program *p = pto_program_new("tp_unfinished");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(8, 8)), *y[2];
  tp = pto_tprog_new("open", 1, (int64_t[]){1});
  pto_tprog_output(tp, "y", PTO_F32, 2, D2(8, 8));
  pto_tprog_for(tp, pto_tp_const(2));
  cr_assert_eq(pto_tile_program(p, tp, 0, NULL, y), PTO_EINVAL);
  cr_assert(strstr(pto_program_error(p), "'open': 1 loops not ended"), "%s",
            pto_program_error(p));
  pto_tprog_free(tp);
  pto_program_free(p);
  p = pto_program_new("tp_unfinished");
  x = pto_input(p, "x", PTO_F32, 2, D2(8, 8));
  tp = pto_tprog_new("none", 1, (int64_t[]){1});
  pto_tprog_input(tp, "x", PTO_F32, 2, D2(8, 8));
  cr_assert_eq(pto_tile_program(p, tp, 1, &x, y), PTO_EINVAL);
  cr_assert(strstr(pto_program_error(p), "'none' has no output"), "%s",
            pto_program_error(p));
  pto_tprog_free(tp);
  pto_program_free(p);
  p = pto_program_new("tp_unfinished");
  x = pto_input(p, "x", PTO_F32, 2, D2(8, 8));
  tp = softmax_tprog(64, 32, 16);
  cr_assert_eq(pto_tile_program(p, tp, 2, (pto_tensor *[]){x, x}, y),
               PTO_EINVAL);
  cr_assert(strstr(pto_program_error(p), "takes 1 inputs, it was given 2"),
            "%s", pto_program_error(p));
  pto_tprog_free(tp);
  pto_program_free(p);
  p = pto_program_new("tp_unfinished");
  x = pto_input(p, "x", PTO_F32, 2, D2(8, 8));
  cr_assert_eq(pto_tile_program_tuned(p, NULL, NULL, 1, &x, y), PTO_EINVAL);
  cr_assert(strstr(pto_program_error(p), "no builder"), "%s",
            pto_program_error(p));
  pto_program_free(p);
}

/* A custom instruction is an instruction of a tile program as any other:
 * compiled, run and evaluated through its registered function. */
static int halve(pto_tile *dst, const pto_tile *const *src, int n_src,
                 void *user) {
  (void)n_src;
  (void)user;
  for (uint32_t r = 0; r < dst->valid_rows; r++)
    for (uint32_t c = 0; c < dst->valid_cols; c++)
      ((float *)dst->data)[r * dst->stride + c] =
          ((const float *)src[0]->data)[r * src[0]->stride + c] * 0.5f;
  return 0;
}

Test(partitioner, tile_program_runs_a_custom_instruction, .timeout = 60) {
  int id = pto_custom_op_find("tp_halve");
  if (id < 0) {
    const pto_custom_op_desc desc = {"tp_halve", PTO_CORE_VECTOR, 1,
                                     PTO_F32, 0, halve, NULL};
    cr_assert_eq(pto_custom_op_register(&desc, &id), PTO_OK);
  }
  pto_tprog *tp = pto_tprog_new("halves", 1, (int64_t[]){4});
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(32, 24));
  int y = pto_tprog_output(tp, "y", PTO_F32, 2, D2(32, 24));
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 8, 24, 1);
  const pto_tp_expr at[2] = {pto_tp_var(pto_tprog_block(tp, 0), 8), c0()};
  pto_tprog_load(tp, t, x, at);
  pto_tprog_op(tp, "tp_halve", 1, &t, 1, &t, NULL);
  pto_tprog_store(tp, t, y, at);
  cr_assert_eq(pto_tprog_status(tp), PTO_OK, "%s", pto_tprog_error(tp));
  pto_program *p = pto_program_new("tp_custom");
  pto_tensor *X = pto_input(p, "x", PTO_F32, 2, D2(32, 24)), *Y;
  cr_assert_eq(pto_tile_program(p, tp, 1, &X, &Y), PTO_OK, "%s",
               pto_program_error(p));
  pto_tprog_free(tp);
  pto_output(p, Y, "y");
  float *xv = filled(32 * 24, 41), *got = malloc(32 * 24 * sizeof *got);
  const void *in[] = {xv};
  runs_everywhere(p, in, got, 32 * 24, 0);
  for (int i = 0; i < 32 * 24; i++)
    cr_assert_eq(got[i], xv[i] * 0.5f, "y[%d]", i);
  free(xv);
  free(got);
  pto_program_free(p);
}

/* Built with n blocks of rb rows over a [M, 8] input and output, the
 * store of block b at row b * step: the program pto_tile_program takes or
 * refuses. */
static pto_status try_program(int64_t M, int64_t n, int64_t rb, int64_t step,
                              int read_first, char *msg, size_t size) {
  pto_tprog *tp = pto_tprog_new("rows", 1, (int64_t[]){n});
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(M, 8));
  int y = pto_tprog_output(tp, "y", PTO_F32, 2, D2(M, 8));
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, (uint32_t)rb, 8, 1);
  int u = pto_tprog_tile(tp, "u", PTO_MEM_UB, PTO_F32, (uint32_t)rb, 8, 1);
  pto_tp_expr at[2] = {pto_tp_var(pto_tprog_block(tp, 0), step), c0()};
  if (read_first)
    pto_tprog_op(tp, "TEXP", 1, &t, 1, &u, NULL);
  pto_tprog_load(tp, t, x, at);
  pto_tprog_store(tp, t, y, at);
  cr_assert_eq(pto_tprog_status(tp), PTO_OK, "%s", pto_tprog_error(tp));
  pto_program *p = pto_program_new("tp_bad");
  pto_tensor *X = pto_input(p, "x", PTO_F32, 2, D2(M, 8)), *Y = (void *)1;
  pto_status st = pto_tile_program(p, tp, 1, &X, &Y);
  cr_assert_eq(st, pto_program_status(p));
  cr_assert(st ? Y == NULL : Y != NULL);
  snprintf(msg, size, "%s", pto_program_error(p));
  pto_tprog_free(tp);
  pto_program_free(p);
  return st;
}

Test(partitioner, tile_program_bad_windows_and_coverage_are_refused) {
  char msg[512];
  cr_assert_eq(try_program(32, 4, 8, 8, 0, msg, sizeof msg), PTO_OK, "%s", msg);
  cr_assert_eq(try_program(32, 5, 8, 8, 0, msg, sizeof msg), PTO_ERANGE);
  cr_assert(strstr(msg, "block 4, instruction 0 (TLOAD): tile 't' 8x8: "
                        "window [8,8] from [32,0] leaves input 'x' f32[32,8]"),
            "%s", msg);
  cr_assert_eq(try_program(32, 3, 8, 8, 0, msg, sizeof msg), PTO_EINVAL);
  cr_assert(strstr(msg, "no block stores element 192 of output 'y'"), "%s",
            msg);
  cr_assert_eq(try_program(32, 4, 8, 4, 0, msg, sizeof msg), PTO_EINVAL);
  cr_assert(strstr(msg, "block 1, instruction 1 (TSTORE): tile 't' stores "
                        "element 32 of output 'y' again"),
            "%s", msg);
  cr_assert_eq(try_program(32, 4, 8, 8, 1, msg, sizeof msg), PTO_EINVAL);
  cr_assert(strstr(msg, "block 0, instruction 0 (TEXP): reads tile 'u' before"),
            "%s", msg);
}

/* A block of [8, 8] rows whose loop adds 1 `trip` times (trip 0: no
 * loop), over `blocks` blocks: what pto_tile_program takes or refuses. */
static pto_status try_unrolled(int64_t blocks, int64_t trip, char *msg,
                               size_t size) {
  const int64_t M = 8 * blocks;
  pto_tprog *tp = pto_tprog_new("unrolled", 1, (int64_t[]){blocks});
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, D2(M, 8));
  int y = pto_tprog_output(tp, "y", PTO_F32, 2, D2(M, 8));
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 8, 8, 1);
  pto_tp_expr at[2] = {pto_tp_var(pto_tprog_block(tp, 0), 8), c0()};
  pto_tprog_load(tp, t, x, at);
  if (trip) {
    pto_tprog_for(tp, pto_tp_const(trip));
    pto_tprog_op(tp, "TADDS", 1, &t, 1, &t, &(pto_tp_opargs){.s = 1});
    pto_tprog_end(tp);
  }
  pto_tprog_store(tp, t, y, at);
  cr_assert_eq(pto_tprog_status(tp), PTO_OK, "%s", pto_tprog_error(tp));
  pto_program *p = pto_program_new("tp_unrolled");
  pto_tensor *X = pto_input(p, "x", PTO_F32, 2, D2(M, 8)), *Y = NULL;
  pto_status st = pto_tile_program(p, tp, 1, &X, &Y);
  snprintf(msg, size, "%s", pto_program_error(p));
  pto_tprog_free(tp);
  pto_program_free(p);
  return st;
}

/* Loops unroll into one task per block: a block past 65536 instructions,
 * or a program past 2^24 in all, is refused with its count, before the
 * compiler would expand it; an empty loop is refused when it ends. */
Test(partitioner, tile_program_unrolled_size_is_bounded, .timeout = 60) {
  char msg[512];
  cr_assert_eq(try_unrolled(2, PTO_TPROG_BLOCK_INSTS_MAX - 2, msg, sizeof msg),
               PTO_OK, "%s", msg);
  cr_assert_eq(try_unrolled(2, PTO_TPROG_BLOCK_INSTS_MAX - 1, msg, sizeof msg),
               PTO_ECAPACITY);
  cr_assert(strstr(msg, "block 0's loops unroll to more than 65536 "
                        "instructions, which run as one task"),
            "%s", msg);
  cr_assert_eq(try_unrolled(INT64_C(1) << 20, 30, msg, sizeof msg),
               PTO_ECAPACITY);
  cr_assert(strstr(msg, "1048576 blocks unroll to more than 16777216 "
                        "instructions in all"),
            "%s", msg);
  pto_tprog *tp = pto_tprog_new("empty", 1, (int64_t[]){1});
  pto_tprog_for(tp, pto_tp_const(INT64_C(1) << 40));
  cr_assert_eq(pto_tprog_end(tp), PTO_EINVAL);
  cr_assert(strstr(pto_tprog_error(tp), "the loop opened by instruction 0 "
                                        "has no instruction"),
            "%s", pto_tprog_error(tp));
  pto_tprog_free(tp);
}

Test(partitioner, tile_program_bad_operands_and_footprints_are_refused) {
  pto_tprog *tp = softmax_tprog(64, 32, 16);
  pto_program *p = pto_program_new("tp_bad");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(64, 48)), *y;
  cr_assert_eq(pto_tile_program(p, tp, 1, &x, &y), PTO_ESHAPE);
  cr_assert(strstr(pto_program_error(p), "input 'x' is declared f32[64,32], "
                                         "it was given 'x' f32[64,48]"),
            "%s", pto_program_error(p));
  pto_program_free(p);
  p = pto_program_new("tp_dyn");
  const int64_t S = pto_dim_dynamic(p, "S", 64);
  x = pto_input(p, "x", PTO_F32, 2, D2(S, 32));
  cr_assert_neq(pto_tile_program(p, tp, 1, &x, &y), PTO_OK);
  cr_assert(strstr(pto_program_error(p), "static"), "%s", pto_program_error(p));
  pto_program_free(p);
  pto_tprog_free(tp);
  /* 65 KiB of UB on a machine with 32 KiB: refused when compiled */
  tp = softmax_tprog(256, 1024, 16);
  p = pto_program_new("tp_big");
  x = pto_input(p, "x", PTO_F32, 2, D2(256, 1024));
  cr_assert_eq(pto_tile_program(p, tp, 1, &x, &y), PTO_OK, "%s",
               pto_program_error(p));
  pto_output(p, y, "y");
  pto_config *c = host_config(2);
  pto_machine m = *pto_config_machine(c);
  m.mem[PTO_MEM_UB] = 32 << 10;
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_ECAPACITY);
  cr_assert(strstr(pto_program_error(p), "tile program 'softmax': its tiles "
                                         "need 66560 bytes of UB"),
            "%s", pto_program_error(p));
  pto_config_free(c);
  pto_program_free(p);
  pto_tprog_free(tp);
}
