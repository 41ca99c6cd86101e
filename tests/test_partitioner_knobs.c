/* partitioner: its knobs: nbuffer merging isomorphic vector tasks,
 * l1_reuse merging cube tasks that share an operand, the causal mask of
 * matmul_relu_wsum skipping tiles past the diagonal, and a program's own
 * knob recommendations between a config's label and global settings. */
#include <criterion/criterion.h>

#include "core/exe.h"
#include "pto/pto.h"
#include "tests/partitioner_test.h"

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
