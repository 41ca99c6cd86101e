/* partitioner: tile shapes the compiler chooses. A matmul whose cube tile
 * nobody set gets pto_matmul_tile's choice for the machine it is compiled
 * for: it compiles where the whole matmul would not fit, computes what the
 * evaluator does, shows in the tensor-stage dump, and gives way to a tile
 * set in code or in a config. A chain of vector ops nobody tiled gets one
 * tile of whole rows where they fit (a norm fuses into one program), column
 * blocks where they do not (and still fuses, reading its rows twice),
 * smaller tiles where the fused chain does not fit, and a warning when a
 * fusion is given up (docs/tiles.md). */
#include <stdio.h>

#include <jansson.h>

#include "tests/partitioner_test.h"

/* A [batch..., M, K] x [K, N] matmul program, nothing tiled by hand unless
 * `tile` is given. */
static pto_program *matmul_program(int ndim, const int64_t *as, int64_t N,
                                   const pto_tile_shape *tile) {
  pto_program *p = pto_program_new("mm");
  const int64_t bs[2] = {as[ndim - 1], N};
  pto_tensor *a = pto_input(p, "a", PTO_F32, ndim, as);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, bs);
  if (tile)
    pto_program_set_cube_tile(p, tile->cube_m, tile->cube_n, tile->cube_k);
  pto_program_push_label(p, "mm");
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  pto_program_pop_label(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

/* The tile the tensor-stage dump shows for the program's last op named
 * `op`, and (chosen not NULL) whether its vector tile is the compiler's. */
static pto_tile_shape dumped_tile(const pto_executable *e, const char *opname,
                                  int *chosen) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  cr_assert_eq(pto_executable_dump(e, PTO_STAGE_TENSOR, PTO_DUMP_JSON, f),
               PTO_OK);
  fclose(f);
  json_error_t err;
  json_t *j = json_loads(buf, 0, &err);
  cr_assert_not_null(j, "%s", err.text);
  pto_tile_shape t = {0};
  json_t *ops = json_object_get(j, "ops"), *op;
  size_t i;
  int found = 0;
  json_array_foreach(ops, i, op) {
    if (strcmp(json_string_value(json_object_get(op, "op")), opname))
      continue;
    json_t *tile = json_object_get(op, "tile");
    json_t *cube = json_object_get(tile, "cube");
    json_t *vec = json_object_get(tile, "vec");
    t.cube_m = (uint32_t)json_integer_value(json_array_get(cube, 0));
    t.cube_n = (uint32_t)json_integer_value(json_array_get(cube, 1));
    t.cube_k = (uint32_t)json_integer_value(json_array_get(cube, 2));
    t.vec_rows = (uint32_t)json_integer_value(json_array_get(vec, 0));
    t.vec_cols = (uint32_t)json_integer_value(json_array_get(vec, 1));
    if (chosen)
      *chosen = json_is_true(json_object_get(tile, "vec_chosen"));
    found = 1;
  }
  cr_assert(found, "no %s in the tensor dump: %s", opname, buf);
  json_decref(j);
  free(buf);
  return t;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    x[i] = (float)((i * 2654435761u + seed) % 9) - 4.0f;
}

/* Compiles p under c, requires the dump to show pto_matmul_tile's choice
 * (or `want` when given) and the results to match the evaluator. */
static void check_choice(pto_program *p, const pto_config *c, int64_t batch,
                         int64_t M, int64_t N, int64_t K,
                         const pto_tile_shape *want) {
  pto_executable *e = compile_ok(p, c);
  const pto_machine *m = pto_config_machine(c);
  pto_tile_shape t = dumped_tile(e, "matmul", NULL), chosen;
  if (want) {
    chosen = *want;
  } else {
    cr_assert_eq(pto_matmul_tile(m, batch, M, N, K, m->workers[PTO_CORE_CUBE],
                                 &chosen),
                 PTO_OK);
  }
  cr_expect(t.cube_m == chosen.cube_m && t.cube_n == chosen.cube_n &&
                t.cube_k == chosen.cube_k,
            "%s: dump shows %ux%ux%u, expected %ux%ux%u", m->name, t.cube_m,
            t.cube_n, t.cube_k, chosen.cube_m, chosen.cube_n, chosen.cube_k);
  const size_t na = (size_t)(batch * M * K), nb = (size_t)(K * N),
               nc = (size_t)(batch * M * N);
  float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b),
        *got = malloc(nc * sizeof *got), *ref = malloc(nc * sizeof *ref);
  cr_assert(a && b && got && ref);
  fill(a, na, 1);
  fill(b, nb, 2);
  const void *in[] = {a, b};
  /* small integers: every sum is exact, so the results are too */
  serial_parallel_and_eval_agree(e, p, in, got, ref, nc, 0);
  free(a), free(b), free(got), free(ref);
  pto_executable_free(e);
}

Test(partitioner, matmul_with_no_tile_compiles_where_whole_does_not) {
  /* the first program a newcomer writes: the whole matmul needs 2 MiB of
   * L0A, more than the host's or the Ascend model's */
  const int64_t as[2] = {2048, 256};
  pto_program *p = matmul_program(2, as, 256, NULL);
  pto_config *host = host_config(2), *npu = ascend_config();
  check_choice(p, host, 1, 2048, 256, 256, NULL);
  check_choice(p, npu, 1, 2048, 256, 256, NULL);
  /* the whole matmul, asked for, still fails with the sizes */
  const pto_tile_shape whole = {0};
  pto_program *q = matmul_program(2, as, 256, &whole);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(q, npu, &e), PTO_ECAPACITY);
  cr_expect(strstr(pto_program_error(q), "L0A"), "%s", pto_program_error(q));
  pto_program_free(q);
  pto_config_free(host);
  pto_config_free(npu);
  pto_program_free(p);
}

Test(partitioner, matmul_tile_choice_counts_batch_dims) {
  /* 16 heads of 128 x 64 x 128: each head is a small matmul, so every
   * head stays one tile rather than being split further */
  const int64_t as[3] = {16, 128, 128};
  pto_program *p = matmul_program(3, as, 64, NULL);
  pto_config *host = host_config(2);
  pto_tile_shape t;
  cr_assert_eq(pto_matmul_tile(pto_config_machine(host), 16, 128, 64, 128, 2,
                               &t),
               PTO_OK);
  cr_expect_eq(t.cube_m, 128);
  cr_expect_eq(t.cube_n, 64);
  check_choice(p, host, 16, 128, 64, 128, NULL);
  pto_config_free(host);
  pto_program_free(p);
}

Test(partitioner, matmul_tile_choice_keeps_a_small_matmul_whole) {
  pto_machine m = pto_machine_ascend();
  pto_tile_shape t;
  cr_assert_eq(pto_matmul_tile(&m, 1, 64, 32, 64, 24, &t), PTO_OK);
  cr_expect(t.cube_m == 64 && t.cube_n == 32 && t.cube_k == 64,
            "%ux%ux%u", t.cube_m, t.cube_n, t.cube_k);
  /* and splits a large one for the workers */
  cr_assert_eq(pto_matmul_tile(&m, 1, 4096, 4096, 1024, 24, &t), PTO_OK);
  cr_expect_gt((4096 / t.cube_m) * (4096 / t.cube_n), 24);
  cr_expect_leq(t.cube_k, 256);
}

Test(partitioner, matmul_tile_set_in_code_or_config_wins) {
  const int64_t as[2] = {512, 256};
  const pto_tile_shape mine = {0, 0, 64, 64, 64};
  pto_program *p = matmul_program(2, as, 256, &mine);
  pto_config *host = host_config(2);
  check_choice(p, host, 1, 512, 256, 256, &mine);
  pto_program_free(p);
  /* the config's label setting over no tile in code */
  p = matmul_program(2, as, 256, NULL);
  cr_assert_eq(pto_config_load_string(
                   host, "{\"labels\": {\"mm\": {\"cube_tile\": [96, 128, 32]}}}"),
               PTO_OK, "%s", pto_config_error(host));
  const pto_tile_shape cfg = {0, 0, 96, 128, 32};
  check_choice(p, host, 1, 512, 256, 256, &cfg);
  pto_config_free(host);
  pto_program_free(p);
}

Test(partitioner, matmul_tile_choice_bad_arguments) {
  pto_machine m = pto_machine_ascend();
  pto_tile_shape t;
  cr_expect_eq(pto_matmul_tile(NULL, 1, 8, 8, 8, 1, &t), PTO_EINVAL);
  cr_expect_eq(pto_matmul_tile(&m, 1, 8, 8, 8, 1, NULL), PTO_EINVAL);
  cr_expect_eq(pto_matmul_tile(&m, 0, 8, 8, 8, 1, &t), PTO_EINVAL);
  cr_expect_eq(pto_matmul_tile(&m, 1, 0, 8, 8, 1, &t), PTO_EINVAL);
  cr_expect_eq(pto_matmul_tile(&m, 1, 8, 8, 8, 0, &t), PTO_EINVAL);
  m.mem[PTO_MEM_L0C] = 64; /* not one panel's accumulator */
  cr_expect_eq(pto_matmul_tile(&m, 1, 512, 512, 64, 1, &t), PTO_ECAPACITY);
}

/* The indexer score's chooser: its tile for the machine, and bad sizes
 * refused. */
Test(partitioner, relu_wsum_tile_choice_and_bad_arguments) {
  pto_machine m = pto_machine_ascend();
  pto_tile_shape t;
  cr_assert_eq(pto_matmul_relu_wsum_tile(&m, 1, 128 * 64, 64, 128, 8192, &t),
               PTO_OK);
  cr_expect_gt(t.cube_m, 0);
  cr_expect_eq(t.cube_m % 64, 0, "whole groups: %u", t.cube_m);
  cr_expect_gt(t.cube_n, 0);
  cr_expect_leq(t.cube_n, 8192);
  cr_expect_eq(pto_matmul_relu_wsum_tile(NULL, 1, 64, 64, 128, 8, &t),
               PTO_EINVAL);
  cr_expect_eq(pto_matmul_relu_wsum_tile(&m, 1, 64, 64, 128, 8, NULL),
               PTO_EINVAL);
  cr_expect_eq(pto_matmul_relu_wsum_tile(&m, 0, 64, 64, 128, 8, &t),
               PTO_EINVAL);
  cr_expect_eq(pto_matmul_relu_wsum_tile(&m, 1, 64, 0, 128, 8, &t),
               PTO_EINVAL);
  cr_expect_eq(pto_matmul_relu_wsum_tile(&m, 1, 64, 64, 0, 8, &t),
               PTO_EINVAL);
  cr_expect_eq(pto_matmul_relu_wsum_tile(&m, 1, 64, 64, 128, 0, &t),
               PTO_EINVAL);
}

/* auto_cube_tile / auto_vec_tile leave a scope's tile to the compiler; on
 * the program's own scope they are refused. */
Test(partitioner, auto_tiles_need_a_scope) {
  pto_program *p = pto_program_new("auto");
  cr_expect_eq(pto_program_auto_cube_tile(p), PTO_ESTATE);
  cr_expect(strstr(pto_program_error(p), "no tile scope is open"), "%s",
            pto_program_error(p));
  pto_program_free(p);
  p = pto_program_new("auto");
  cr_expect_eq(pto_program_auto_vec_tile(p), PTO_ESTATE);
  pto_program_free(p);
  p = pto_program_new("auto");
  cr_expect_eq(pto_program_push_tile(p, &(pto_tile_shape){8, 8, 16, 16, 16}),
               PTO_OK);
  cr_expect_eq(pto_program_auto_cube_tile(p), PTO_OK);
  cr_expect_eq(pto_program_tile(p).vec_rows, 8);
  cr_expect_eq(pto_program_auto_vec_tile(p), PTO_OK);
  cr_expect_eq(pto_program_status(p), PTO_OK);
  cr_expect_eq(pto_program_auto_cube_tile(NULL), PTO_EINVAL);
  pto_program_free(p);
}

/* ---- vector tiles ------------------------------------------------------- */

/* y = rms_norm(x) * gamma over [R, C] rows, labelled "norm"; `tile` set in
 * code when not NULL. */
static pto_program *rms_program(int64_t R, int64_t C,
                                const pto_tile_shape *tile) {
  pto_program *p = pto_program_new("rms");
  const int64_t xs[2] = {R, C}, gs[2] = {1, C};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  pto_tensor *g = pto_input(p, "g", PTO_F32, 2, gs);
  if (tile)
    pto_program_set_vec_tile(p, tile->vec_rows, tile->vec_cols);
  pto_program_push_label(p, "norm");
  pto_output(p, pto_rms_norm(p, x, g, 1e-6), "y");
  pto_program_pop_label(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

/* Runs p's executable e against the evaluator on inputs filled with small
 * values; n_in inputs of the given sizes, one output of n_out. */
static void agrees(pto_executable *e, pto_program *p, int n_in,
                   const size_t *sizes, size_t n_out, float tol) {
  float *in[4];
  for (int i = 0; i < n_in; i++) {
    in[i] = malloc(sizes[i] * sizeof *in[i]);
    cr_assert_not_null(in[i]);
    for (size_t j = 0; j < sizes[i]; j++)
      in[i][j] = (float)((j * 2654435761u + 7u * (unsigned)i) % 17) / 8.0f -
                 1.0f;
  }
  float *got = malloc(n_out * sizeof *got), *ref = malloc(n_out * sizeof *ref);
  cr_assert(got && ref);
  serial_parallel_and_eval_agree(e, p, (const void *const *)in, got, ref,
                                 n_out, tol);
  for (int i = 0; i < n_in; i++)
    free(in[i]);
  free(got), free(ref);
}

Test(partitioner, vector_chain_with_no_tile_fuses_whole_rows) {
  /* the reduction over each row and its broadcast back share a tile of
   * whole rows: one program, x read once (gamma once per subgraph) */
  const int64_t R = 256, C = 2048;
  pto_config *cfgs[2] = {host_config(2), ascend_config()};
  for (int k = 0; k < 2; k++) {
    pto_program *p = rms_program(R, C, NULL);
    pto_executable *e = compile_ok(p, cfgs[k]);
    const char *mname = pto_config_machine(cfgs[k])->name;
    int chosen = 0;
    pto_tile_shape t = dumped_tile(e, "rowsum", &chosen);
    cr_expect(chosen, "%s: the rowsum's tile is not marked chosen", mname);
    cr_expect_eq(t.vec_cols, C, "%s: tile %ux%u", mname, t.vec_rows,
                 t.vec_cols);
    pto_tile_shape tm = dumped_tile(e, "mul", NULL);
    cr_expect(tm.vec_rows == t.vec_rows && tm.vec_cols == t.vec_cols,
              "%s: mul's tile %ux%u, rowsum's %ux%u", mname, tm.vec_rows,
              tm.vec_cols, t.vec_rows, t.vec_cols);
    pto_exe_stats st;
    cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
    /* one program, and one more where the rows leave a tail tile */
    cr_expect_eq(st.programs, R % t.vec_rows ? 2 : 1, "%s: %u programs", mname,
                 st.programs);
    const uint64_t least = 2ull * R * C * 4;
    cr_expect_leq(st.boundary_bytes, least + (uint64_t)st.subgraphs * C * 4,
                  "%s: %llu bytes moved, %u subgraphs", mname,
                  (unsigned long long)st.boundary_bytes, st.subgraphs);
    cr_expect_str_empty(pto_executable_warnings(e));
    const size_t sizes[2] = {(size_t)(R * C), (size_t)C};
    agrees(e, p, 2, sizes, (size_t)(R * C), 1e-5f);
    pto_executable_free(e);
    pto_program_free(p);
    pto_config_free(cfgs[k]);
  }
}

Test(partitioner, vector_tile_set_in_code_or_config_wins) {
  const pto_tile_shape mine = {32, 128, 0, 0, 0};
  pto_config *host = host_config(2);
  pto_program *p = rms_program(128, 1024, &mine);
  pto_executable *e = compile_ok(p, host);
  int chosen = 1;
  pto_tile_shape t = dumped_tile(e, "rowsum", &chosen);
  cr_expect(!chosen && t.vec_rows == 32 && t.vec_cols == 128, "%ux%u%s",
            t.vec_rows, t.vec_cols, chosen ? " (chosen)" : "");
  pto_executable_free(e);
  pto_program_free(p);
  /* the config's label setting over no tile in code */
  p = rms_program(128, 1024, NULL);
  cr_assert_eq(pto_config_load_string(
                   host, "{\"labels\": {\"norm\": {\"vec_tile\": [8, 256]}}}"),
               PTO_OK, "%s", pto_config_error(host));
  e = compile_ok(p, host);
  t = dumped_tile(e, "rowsum", &chosen);
  cr_expect(!chosen && t.vec_rows == 8 && t.vec_cols == 256, "%ux%u%s",
            t.vec_rows, t.vec_cols, chosen ? " (chosen)" : "");
  const size_t sizes[2] = {128 * 1024, 1024};
  agrees(e, p, 2, sizes, 128 * 1024, 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(host);
}

/* a_i = exp(x * i / 16) for i < n, r = rowsum(a_0 + ... + a_{n-1}), and
 * y = a_0 * r + ... + a_{n-1} * r: every a_i is still needed after the
 * reduction, so the fused chain holds n tiles live at once */
static pto_program *wide_chain(int64_t R, int64_t C, int n,
                               const pto_tile_shape *tile) {
  pto_program *p = pto_program_new("chain");
  const int64_t xs[2] = {R, C};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  if (tile)
    pto_program_set_vec_tile(p, tile->vec_rows, tile->vec_cols);
  pto_tensor *a[16];
  for (int i = 0; i < n; i++)
    a[i] = pto_exp(p, pto_muls(p, x, (i + 1) / 16.0));
  pto_tensor *s = a[0];
  for (int i = 1; i < n; i++)
    s = pto_add(p, s, a[i]);
  pto_tensor *r = pto_rowsum(p, s), *y = pto_mul(p, a[0], r);
  for (int i = 1; i < n; i++)
    y = pto_add(p, y, pto_mul(p, a[i], r));
  pto_output(p, y, "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

Test(partitioner, vector_chain_too_big_to_fuse_gets_smaller_tiles) {
  const int64_t R = 64, C = 4096;
  pto_config *host = host_config(2);
  const uint64_t ub = pto_config_machine(host)->mem[PTO_MEM_UB];
  pto_program *p = wide_chain(R, C, 12, NULL);
  pto_executable *e = compile_ok(p, host);
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_expect_eq(st.programs, 1, "%u programs: %s", st.programs,
               pto_executable_warnings(e));
  pto_tile_shape t = dumped_tile(e, "rowsum", NULL);
  cr_expect_lt((uint64_t)t.vec_rows * t.vec_cols * 4, ub / 8,
               "tile %ux%u is not smaller than the first choice", t.vec_rows,
               t.vec_cols);
  const size_t sizes[1] = {(size_t)(R * C)};
  agrees(e, p, 1, sizes, (size_t)(R * C), 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
  /* the same chain on a tile set in code that cannot hold it fused (a
   * quarter of this host's UB a tile, twelve of them live): it compiles
   * unfused and says so, naming the ops, the bytes and the tile */
  uint32_t rows = (uint32_t)(ub / ((uint64_t)C * 4) / 4);
  rows = rows < 1 ? 1 : rows > R ? (uint32_t)R : rows;
  const pto_tile_shape big = {rows, 4096, 0, 0, 0};
  char named[64];
  snprintf(named, sizeof named, "vector tile %ux4096", rows);
  p = wide_chain(R, C, 12, &big);
  e = compile_ok(p, host);
  const char *w = pto_executable_warnings(e);
  cr_expect(strstr(w, "fusion undone") && strstr(w, "exp -> ") &&
                strstr(w, "bytes of UB") && strstr(w, named),
            "warnings: '%s' (UB %llu bytes)", w, (unsigned long long)ub);
  agrees(e, p, 1, sizes, (size_t)(R * C), 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(host);
}

Test(partitioner, vector_rows_too_wide_for_a_tile_are_cut_into_columns) {
  /* rows of 65536 floats (256 KiB): column blocks, the reduction and its
   * broadcast in separate passes, the same results */
  const int64_t R = 8, C = 65536;
  pto_config *host = host_config(2);
  pto_program *p = pto_program_new("softmax");
  const int64_t xs[2] = {R, C};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  pto_tensor *ex = pto_exp(p, pto_sub(p, x, pto_rowmax(p, x)));
  pto_output(p, pto_div(p, ex, pto_rowsum(p, ex)), "y");
  pto_executable *e = compile_ok(p, host);
  int chosen = 0;
  pto_tile_shape t = dumped_tile(e, "exp", &chosen);
  cr_expect(chosen && t.vec_cols < C && t.vec_cols >= 128, "%ux%u", t.vec_rows,
            t.vec_cols);
  const size_t sizes[1] = {(size_t)(R * C)};
  agrees(e, p, 1, sizes, (size_t)(R * C), 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
  /* an RMS norm over such rows still fuses: the rowsum streams its column
   * tiles as x * x makes them, then the rows are read once more to scale
   * them (partitioner/fuse.c, the order of a subgraph's instructions) */
  const int64_t RR = 64, RC = 32768; /* two row blocks: both workers busy */
  p = rms_program(RR, RC, NULL);
  e = compile_ok(p, host);
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_expect_eq(st.programs, 1, "%u programs: %s", st.programs,
               pto_executable_warnings(e));
  cr_expect_leq(st.boundary_bytes,
                3ull * RR * RC * 4 + (uint64_t)st.subgraphs * RC * 4,
                "%llu bytes moved", (unsigned long long)st.boundary_bytes);
  const size_t rsizes[2] = {(size_t)(RR * RC), (size_t)RC};
  agrees(e, p, 2, rsizes, (size_t)(RR * RC), 1e-5f);
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(host);
}
