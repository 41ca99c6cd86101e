/* partitioner: tile shapes the compiler chooses. A matmul whose cube tile
 * nobody set gets pto_matmul_tile's choice for the machine it is compiled
 * for: it compiles where the whole matmul would not fit, computes what the
 * evaluator does, shows in the tensor-stage dump, and gives way to a tile
 * set in code or in a config. */
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

/* The cube tile the tensor-stage dump shows for the program's matmul. */
static pto_tile_shape dumped_cube_tile(const pto_executable *e) {
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
    if (strcmp(json_string_value(json_object_get(op, "op")), "matmul"))
      continue;
    json_t *cube = json_object_get(json_object_get(op, "tile"), "cube");
    t.cube_m = (uint32_t)json_integer_value(json_array_get(cube, 0));
    t.cube_n = (uint32_t)json_integer_value(json_array_get(cube, 1));
    t.cube_k = (uint32_t)json_integer_value(json_array_get(cube, 2));
    found = 1;
  }
  cr_assert(found, "no matmul in the tensor dump: %s", buf);
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
  pto_tile_shape t = dumped_cube_tile(e), chosen;
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
