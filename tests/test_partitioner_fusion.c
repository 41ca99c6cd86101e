/* partitioner: the structure fusion gives an executable: isomorphic tiles
 * share one program, ops fuse into subgraphs that the parallelism rule
 * cuts where they fan in and out, fused instructions (softmax's passes,
 * load and row max, stores straight from a product), streaming stores, and
 * the fuse knob turned off. */
#include <criterion/criterion.h>

#include "core/exe.h"
#include "pto/pto.h"
#include "tests/partitioner_test.h"

/* ---- structure ---------------------------------------------------------- */

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
