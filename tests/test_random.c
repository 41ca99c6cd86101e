/* e2e: random programs over the whole builder API, compiled under random
 * configs (machines, knobs, label overrides), run serially and on runtimes
 * of 1-3 workers with every policy, compared with the reference evaluator
 * (tests/randprog.h); about a quarter of them with dynamic dims, compiled
 * once and run at several bindings (extents of 0 and 1, tile boundaries,
 * the maxima) against the evaluator at each. A fixed set of seeds;
 * fuzz_diff runs more. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/randprog.h"

/* Seeds [start, start + n): none may fail, hang or crash. */
static void run_seeds(uint64_t start, uint64_t n) {
  char msg[256];
  rp_switches sw;
  cr_assert_eq(rp_switches_from_env(&sw, msg, sizeof msg), 0, "%s", msg);
  rp_totals t;
  cr_assert_eq(rp_supervise(start, n, &sw, 30, NULL, 0, stderr, &t), 0);
  cr_expect_eq(t.seeds, n);
  cr_expect_gt(t.by[RP_PASS], n / 2,
               "only %" PRIu64 " of %" PRIu64 " seeds compared anything",
               t.by[RP_PASS], n);
  if (n >= 50)
    cr_expect_gt(t.dynamic, n / 8,
                 "only %" PRIu64 " of %" PRIu64 " seeds have dynamic dims",
                 t.dynamic, n);
  cr_assert_eq(t.by[RP_FAIL], 0,
               "%" PRIu64 " of %" PRIu64 " seeds failed (%" PRIu64
               " hangs, %" PRIu64 " crashes), the first %" PRIu64
               "; each failing seed's C program is on stderr",
               t.by[RP_FAIL], n, t.hangs, t.crashes, t.first_fail);
}

#define E2E_SEEDS 100

Test(e2e, random_programs_first_half, .timeout = 300) {
  run_seeds(1, E2E_SEEDS);
}

Test(e2e, random_programs_second_half, .timeout = 300) {
  run_seeds(1 + E2E_SEEDS, E2E_SEEDS);
}

/* A fusion that a path through two other clusters turns into a cycle:
 * min -> select fuse first, then maxs -> mul would, but maxs -> cmp ->
 * select sits in min's cluster, and min -> mul closes the loop. The
 * cluster search must walk every cluster a and b reach: pruned by node
 * order (a cluster whose nodes all come after a's and b's), it missed the
 * jump inside min's cluster from select back to min, and compiling
 * failed with a task cycle (seed 103253, while the search was sped up). */
Test(e2e, regress_cycle_through_cluster, .timeout = 60) {
  run_seeds(103253, 1);
}

/* A matmul whose operand an instruction computed (packed by the kernel,
 * tileops/mm_loops.h) emptied by a dynamic extent bound to 0: the packed
 * loops divided by its zero blocks (seed 5008, when the kernels started
 * packing such operands). */
Test(e2e, regress_computed_operand_emptied, .timeout = 60) {
  run_seeds(5008, 1);
}

/* A strict gather in a fused subgraph with several of its units, its index
 * [D0, D0, 5] emptied by D0 = 0: the index tiles loaded empty while the
 * gathers' destinations kept their rows (tiles carry no batch clip), and
 * the gather checked the stale indices past them (the libFuzzer target's
 * input, tests/fuzz/corpus/program/regress-gather-emptied-index). A
 * gather now writes one row per index. */
Test(e2e, regress_gather_of_an_emptied_index, .timeout = 120) {
  static const uint8_t bytes[] = {
    0x32, 0x00, 0x3a, 0x40, 0xdf, 0x80, 0x43, 0x2e, 0x3f, 0x32, 0x9a, 0xae,
    0xea, 0x54, 0x4a, 0xb8, 0xc2, 0xe5, 0x5e, 0x08, 0x8f, 0xeb, 0x98, 0xbd,
    0xf1, 0xc9, 0xc1, 0x28, 0x82, 0xa5, 0xd7, 0x32, 0x5d, 0x7d, 0x62, 0x3e,
    0xf5, 0x63, 0x8b, 0x8d, 0xc6, 0xe8, 0x50, 0x7c, 0xea, 0xf3, 0x9c, 0x08,
    0x3f, 0xa4, 0xef, 0x6d, 0x78, 0xc6, 0x56, 0x16, 0x43, 0xce, 0x1a, 0x21,
    0x33, 0x0d, 0xb1, 0xed, 0x24, 0x36, 0x42, 0x7c, 0x72, 0x20, 0x8b, 0xa5,
    0x61, 0x0d, 0xc8, 0x1b, 0x41, 0xb4, 0x5e, 0x8a, 0x6c, 0x6b, 0x20, 0x71,
    0x38, 0x17, 0x25, 0xce, 0xb9, 0x2c, 0xf7, 0xff, 0x48, 0xc6, 0xfe, 0x6c,
    0x75, 0x39, 0xe6, 0xbe, 0x11, 0xa0, 0x13, 0xb4, 0xb7, 0x2f, 0x75, 0x1b,
    0x33, 0x4d, 0x65, 0x6d, 0x54, 0x6f, 0x74, 0x61, 0x6c, 0x3a, 0x20, 0x75,
    0x22, 0x9b, 0x18, 0xdf, 0xa4, 0xaf, 0x40, 0xe6, 0xdb, 0xd1, 0xe2, 0x1c,
    0x94, 0x96, 0xa3, 0xa2, 0x5d, 0x2e, 0xdd, 0x18, 0xbf, 0xdf, 0x7c, 0xa4,
    0xaf, 0x40, 0xe2, 0x1c, 0x94, 0x96, 0xa3, 0xa2, 0x5d, 0x32, 0x2e, 0xdd,
    0x18, 0xbf, 0xdf, 0x7c, 0x83, 0xac, 0x30, 0x45, 0x73, 0x9f, 0x37, 0x7a,
    0x16, 0x47, 0x3d, 0x2b, 0x1e, 0x07, 0x29, 0xbd, 0x69, 0x1d, 0xaf, 0x86,
    0x96, 0x17, 0x6b, 0x6e, 0x6f, 0x62, 0x73, 0xaf, 0x2b, 0x88, 0x62, 0x74,
    0x4f, 0x7c, 0x75, 0x6f, 0x6a, 0x98, 0xd3, 0x18, 0x41, 0x79, 0x64, 0x3c,
    0x73, 0xdd, 0x9d, 0xf0, 0x00, 0x3a, 0x40, 0xdf, 0x80, 0x7d, 0x11, 0x91,
    0x43, 0x2e, 0x3f, 0x35, 0x9a, 0x24, 0x7d, 0xb4, 0x44, 0x92, 0x70, 0x04,
    0xd3, 0xb4, 0x67, 0xf1, 0xfc, 0xae,
  };
  char msg[1024];
  rp_switches sw;
  cr_assert_eq(rp_switches_from_env(&sw, msg, sizeof msg), 0, "%s", msg);
  rp_env *env = rp_env_new(NULL);
  rp_env_serial_only(env, 1);
  rp_case *c = rp_generate_bytes(bytes, sizeof bytes, &sw);
  const rp_outcome r = rp_run(env, c, msg, sizeof msg);
  cr_expect_neq(r, RP_FAIL, "%s", msg);
  rp_case_free(c);
  rp_env_free(env);
}

/* An assemble chain over a concat, under 3x3 vector tiles: the chain's last
 * assemble tiles the whole chain (the earlier ones have no units) and reads
 * the concat's result at windows no concat tile matches (f16 stores never
 * forward). Fusion judged the chain by its inputs, so every edge along it
 * was vacuously fusable and the concat joined the chain's cluster through
 * the unit-less assembles; nbuffer then grouped the concat's copies with
 * the chain's isomorphic ones, and two such tasks read each other's
 * stores: compiling failed with a task cycle (the libFuzzer target's input,
 * tests/fuzz/corpus/program/regress-assemble-chain-cluster). Edges now
 * come from what an op's units read. */
Test(e2e, regress_assemble_chain_over_a_concat, .timeout = 60) {
  static const int64_t rows[16] = {2, 3, 2, 4, 3, 4, 4, 3,
                                   2, 1, 4, 2, 4, 4, 1, 2};
  static const struct {
    int64_t r, c, at[2];
  } blk[4] = {{41, 40, {3, 3}}, {26, 35, {18, 0}}, {33, 22, {4, 12}},
              {42, 8, {2, 18}}};
  pto_program *p = pto_program_new("assemble_over_concat");
  pto_program_push_tile(p, &(pto_tile_shape){3, 3, 0, 16, 0});
  pto_tensor *part[16];
  int64_t n_in = 0, total = 0;
  void *in[20];
  char name[16];
  for (int i = 0; i < 16; i++, n_in++) {
    snprintf(name, sizeof name, "c%d", i);
    part[i] = pto_input(p, name, PTO_F16, 2, (const int64_t[]){rows[i], 48});
    total += rows[i];
  }
  pto_tensor *x = pto_concat(p, 16, part, 0);
  for (int b = 0; b < 4; b++, n_in++) {
    snprintf(name, sizeof name, "b%d", b);
    pto_tensor *t = pto_input(p, name, PTO_F16, 2,
                              (const int64_t[]){blk[b].r + 3, blk[b].c});
    t = pto_slice(p, t, (const int64_t[]){3, 0},
                  (const int64_t[]){blk[b].r + 3, blk[b].c});
    x = pto_assemble(p, x, t, blk[b].at);
  }
  pto_output(p, x, "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  /* f16 inputs given as f16 bits of small integers (exact) */
  uint16_t *bits[20];
  for (int i = 0; i < n_in; i++) {
    const int64_t n =
        i < 16 ? rows[i] * 48 : (blk[i - 16].r + 3) * blk[i - 16].c;
    bits[i] = malloc((size_t)n * sizeof *bits[i]);
    cr_assert_not_null(bits[i]);
    for (int64_t k = 0; k < n; k++) /* 1 + (k*7+i) % 16 as f16 */
      bits[i][k] = (uint16_t)(0x3c00 + (((k * 7 + i) % 16) << 6));
    in[i] = bits[i];
  }
  const size_t n_out = (size_t)total * 48;
  uint16_t *want = malloc(n_out * 2), *got = malloc(n_out * 2);
  cr_assert(want && got);
  const void *const *ins = (const void *const *)in;
  void *o[] = {want};
  cr_assert_eq(pto_program_eval(p, ins, o), PTO_OK, "%s",
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  for (unsigned w = 0; w <= 2; w++) {
    memset(got, 0xa5, n_out * 2);
    o[0] = got;
    pto_runtime *rt = NULL;
    if (w) {
      pto_machine m;
      cr_assert_eq(pto_machine_host(&m), PTO_OK);
      m.workers[PTO_CORE_CUBE] = m.workers[PTO_CORE_VECTOR] = w;
      m.shared = 1;
      pto_runtime_params prm = pto_runtime_params_default();
      prm.machine = &m;
      cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK);
    }
    const pto_status st = w ? pto_runtime_run(rt, e, ins, o)
                            : pto_executable_run_serial(e, ins, o);
    cr_assert_eq(st, PTO_OK, "%s", pto_executable_error(e));
    for (size_t k = 0; k < n_out; k++)
      cr_assert_eq(got[k], want[k], "%u workers: [%zu] %#x vs %#x", w, k,
                   got[k], want[k]);
    pto_runtime_free(rt);
  }
  pto_executable_free(e);
  pto_program_free(p);
  for (int i = 0; i < n_in; i++)
    free(bits[i]);
  free(want);
  free(got);
}

/* ---- regressions for what the random test found ---------------------------
 * Each is skipped while its switch says the bug is open (PTO_RP_KNOWN=name);
 * they are all fixed, so they run. */

static rp_switches switches(void) {
  char msg[256];
  rp_switches sw;
  cr_assert_eq(rp_switches_from_env(&sw, msg, sizeof msg), 0, "%s", msg);
  return sw;
}

/* Dead ops next to isomorphic subgraphs merged into one task (nbuffer):
 * the second instance stores a live tensor the compiler gave no storage,
 * and the serial executor writes through NULL (seed 105616). */
Test(e2e, regress_dead_op_store, .timeout = 60) {
  if (switches().dead_op_store)
    cr_skip_test(
        "known bug dead_op_store (PTO_RP_FIXED=dead_op_store runs it)");
  pto_program *p = pto_program_new("dead_op_store");
  int64_t s[2] = {13, 13};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, s);
  pto_tensor *a = pto_mins(p, pto_maxs(p, x, -4), 4);
  pto_tensor *b = pto_mins(p, pto_maxs(p, x, -4), 4);
  pto_tensor *y = pto_matmul(p, a, b, 0);
  pto_matmul(p, pto_mins(p, pto_maxs(p, a, -4), 4),
             pto_mins(p, pto_maxs(p, b, -4), 4), 0); /* dead */
  pto_output(p, y, "y");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 64), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  static float in[169], got[169], want[169];
  for (int i = 0; i < 169; i++)
    in[i] = (float)(i % 9) - 4;
  const void *ins[] = {in};
  void *o1[] = {got}, *o2[] = {want};
  cr_assert_eq(pto_program_eval(p, ins, o2), PTO_OK);
  cr_assert_eq(pto_executable_run_serial(e, ins, o1), PTO_OK, "%s",
               pto_executable_error(e));
  for (int i = 0; i < 169; i++)
    cr_assert_eq(got[i], want[i], "[%d] %g vs %g", i, got[i], want[i]);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* A strict gather no output needs: the evaluator runs it and fails with
 * PTO_ERANGE, the compiled program drops it and succeeds (seed 248). */
Test(e2e, regress_dead_strict_gather, .timeout = 60) {
  if (switches().dead_strict_gather)
    cr_skip_test("known bug dead_strict_gather "
                 "(PTO_RP_FIXED=dead_strict_gather runs it)");
  pto_program *p = pto_program_new("dead_strict_gather");
  pto_tensor *table =
      pto_input(p, "table", PTO_F32, 2, (const int64_t[]){3, 2});
  pto_tensor *idx = pto_input(p, "idx", PTO_I32, 1, (const int64_t[]){2});
  pto_gather(p, table, idx, PTO_GATHER_STRICT); /* nothing reads it */
  pto_output(p, pto_neg(p, table), "y");
  float t[6] = {1, 2, 3, 4, 5, 6}, y[6];
  int32_t i[2] = {0, 7}; /* 7 is outside [0, 3) */
  const void *in[] = {t, i};
  void *out[] = {y};
  pto_status est = pto_program_eval(p, in, out);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_status st = pto_executable_run_serial(e, in, out);
  cr_assert_eq(st, est, "serial %s, eval %s (%s)", pto_status_name(st),
               pto_status_name(est), pto_program_error(p));
  pto_executable_free(e);
  pto_program_free(p);
}

/* select([96,1,1,1] mask, maxs(a [96,1]), c [1,1]) under a 1x16 vector
 * tile: 74 016 tile instructions take 11 s to compile, almost all of it in
 * local-memory planning (with a an input, 0.1 s; big-add's 114 688
 * instructions compile in 0.13 s). Seed 110849 took minutes. */
Test(e2e, regress_slow_split_plan, .timeout = 120) {
  if (switches().slow_split_plan)
    cr_skip_test(
        "known bug slow_split_plan (PTO_RP_FIXED=slow_split_plan runs it)");
  const int64_t n = 96;
  pto_program *p = pto_program_new("slow_split_plan");
  pto_tensor *m = pto_input(p, "m", PTO_I32, 4, (const int64_t[]){n, 1, 1, 1});
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, (const int64_t[]){n, 1});
  pto_tensor *c = pto_input(p, "c", PTO_F32, 2, (const int64_t[]){1, 1});
  pto_program_set_vec_tile(p, 1, 16);
  pto_output(p, pto_colsum(p, pto_select(p, m, pto_maxs(p, a, 0.25), c)),
             "out");
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_exe_stats s;
  cr_assert_eq(pto_executable_stats(e, &s), PTO_OK);
  cr_expect_lt(s.ms_total, 2000,
               "compile took %.0f ms (plan %.0f ms) for %u "
               "tile instructions",
               s.ms_total, s.ms_plan, s.tile_instructions);
  pto_executable_free(e);
  pto_program_free(p);
}

/* Fuzz seed 7882854, cut down: under a label's 2 x 1 vector tile, a
 * [9,13,9,13] op and a 64 x 64 matmul's vector consumers put ~2,000 live
 * tiles in one program; first fit passed over every live tile until
 * nothing moved and planned for 25 s. It now keeps them sorted by offset:
 * 69 ms. */
Test(e2e, regress_plan_many_live_tiles, .timeout = 120) {
  pto_program *p = pto_program_new("plan_many_live_tiles");
  pto_tensor *h = pto_input(p, "h", PTO_F16, 1, (const int64_t[]){1});
  pto_tensor *x =
      pto_input(p, "x", PTO_F16, 4, (const int64_t[]){9, 13, 9, 13});
  pto_tensor *s = pto_input(p, "s", PTO_F32, 1, (const int64_t[]){1});
  pto_tensor *x1 = pto_subs(p, x, -1), *h1 = pto_mins(p, h, 0.25);
  pto_select(p, pto_cmp(p, h1, x, PTO_CMP_EQ), x, x1); /* dead */
  pto_tensor *s1 = pto_add(p, s, h1);
  pto_program_push_label(p, "x");
  pto_tensor *y = pto_mins(p, x1, 1000);
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, (const int64_t[]){64, 64});
  pto_tensor *m = pto_matmul(p, a, a, 0), *n = pto_neg(p, a);
  pto_matmul_acc(p, n, m, a, 0); /* dead */
  pto_output(p,
             pto_select(p, pto_cmp(p, m, m, PTO_CMP_GT), pto_mul(p, n, m), s1),
             "z");
  pto_output(p, y, "y");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_tile(c, "x", &(pto_tile_shape){2, 1, 13, 0, 8}),
               PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_expect_lt(st.ms_plan, 2000, "planned in %.0f ms for %u tile instructions",
               st.ms_plan, st.tile_instructions);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* Known bug 3 without any overflow: on the host, a matmul split into
 * K slices of 1 under l1_reuse 2 never finishes compiling (slices of 2,
 * or l1_reuse 1, compile in milliseconds). Seed 6004630. */
Test(e2e, regress_l1_reuse_k1, .timeout = 30) {
  if (switches().l1_reuse_hang)
    cr_skip_test(
        "known bug l1_reuse_hang (PTO_RP_FIXED=l1_reuse_hang runs it)");
  pto_program *p = pto_program_new("l1_reuse_k1");
  pto_program_set_cube_tile(p, 48, 7, 1);
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, (const int64_t[]){33, 129});
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, (const int64_t[]){33, 129});
  pto_output(p, pto_matmul(p, a, b, PTO_MATMUL_TRANS_B), "y");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, 2), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* ---- what the dynamic cases found ---------------------------------------- */

/* An open bug's test (its switch in tests/randprog.h is 1) still runs, and
 * expects the bug to show, so that a fix is noticed (a skipped test could
 * not fail): its switch then goes to 0, and the test expects the right
 * result. */
static void verdict(int open, const char *bug, int right, const char *what) {
  if (open)
    cr_expect(!right,
              "known bug %s no longer shows (%s): set its switch in "
              "tests/randprog.h to 0",
              bug, what);
  else
    cr_expect(right, "known bug %s: %s", bug, what);
}

/* Fills n floats with small values, or with a pattern's bytes. */
static void fill_vals(float *v, int n, int pattern) {
  for (int i = 0; i < n; i++)
    v[i] = (float)(i % 7) / 4 - 0.5f;
  if (pattern)
    memset(v, pattern, (size_t)n * sizeof *v);
}

/* Compiled once, bound to ext and run serially, whether p's outputs (at
 * most 2, f32, n[i] floats at the maxima) equal the evaluator's at ext,
 * past the extents too (both start from one pattern); the input has n_in
 * floats. If not, what says how. */
static int same_as_eval(pto_program *p, const int64_t *ext, int n_in,
                        const int *n, char *what, size_t size) {
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  static float in[4096], want[2][4096], got[2][4096];
  fill_vals(in, n_in, 0);
  const int n_out = pto_program_num_outputs(p);
  void *w[2] = {want[0], want[1]}, *g[2] = {got[0], got[1]};
  for (int j = 0; j < n_out; j++) {
    fill_vals(want[j], n[j], 0xa5);
    fill_vals(got[j], n[j], 0xa5);
  }
  const void *ins[] = {in};
  pto_status est = pto_program_eval_dims(p, ext, ins, w);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  for (int k = 0; k < pto_program_num_dims(p); k++)
    cr_assert_eq(pto_run_bind_index(run, k, ext[k]), PTO_OK);
  pto_status st = pto_run_exec_serial(run, ins, g);
  int right = st == est;
  snprintf(what, size, "run %s (%s), eval %s (%s)", pto_status_name(st),
           pto_run_error(run), pto_status_name(est), pto_program_error(p));
  for (int j = 0; j < n_out && right && st == PTO_OK; j++) {
    int bad = 0, first = -1;
    for (int i = 0; i < n[j]; i++)
      if (memcmp(&got[j][i], &want[j][i], sizeof(float)) &&
          !(fabsf(got[j][i] - want[j][i]) <= 1e-5f) && bad++ == 0)
        first = i;
    if (bad) {
      right = 0;
      snprintf(what, size,
               "output %d: %d of %d differ, the first [%d]: %g, "
               "eval %g",
               j, bad, n[j], first, got[j][first], want[j][first]);
    }
  }
  pto_run_free(run);
  pto_executable_free(e);
  return right;
}

/* softmax of x [B<=7, 1, 13] at B = 5: the fused softmax (one
 * TLOADSOFTMAXSTORE over the rows) wrote rows 5 and 6 too, past B's
 * extent, where the evaluator writes nothing (unfused, it was right): its
 * tiles carry no batch clip. Instances past the extents now run nothing,
 * and a load from an emptied window loads an empty tile. Seed 1680. */
Test(e2e, regress_softmax_batch_tail, .timeout = 60) {
  pto_program *p = pto_program_new("softmax_batch_tail");
  const int64_t B = pto_dim_dynamic(p, "B", 7);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, (const int64_t[]){B, 1, 13});
  pto_output(p, pto_softmax(p, x), "y");
  const int64_t ext[1] = {5};
  char what[256];
  const int right =
      same_as_eval(p, ext, 91, (const int[]){91}, what, sizeof what);
  verdict(switches().softmax_batch_tail, "softmax_batch_tail", right, what);
  pto_program_free(p);
}

/* rowmax of x [4, S<=8] and colmax of its transpose at S = 0: the
 * evaluator gave 0 (its running max started there), a run -inf (the max's
 * identity; INT32_MIN in i32, and +inf for rowmin). Both give the identity
 * now (docs/dynamic.md, "Extents of 0"). Seeds 381, 679, 1584. */
Test(e2e, regress_empty_max_reduce, .timeout = 60) {
  pto_program *p = pto_program_new("empty_max_reduce");
  const int64_t S = pto_dim_dynamic(p, "S", 8);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, (const int64_t[]){4, S});
  pto_output(p, pto_rowmax(p, x), "rows");
  pto_output(p, pto_colmax(p, pto_transpose(p, x, 0, 1)), "cols");
  const int64_t ext[1] = {0};
  char what[256];
  const int right =
      same_as_eval(p, ext, 32, (const int[]){4, 4}, what, sizeof what);
  verdict(switches().empty_max_reduce, "empty_max_reduce", right, what);
  pto_program_free(p);
}

/* A strict gather from table [2, D<=4] by an index out of range, at D = 0:
 * the evaluator checked the indices and failed with PTO_ERANGE; the run has
 * nothing to store, skips the task and succeeds. Rows of no columns gather
 * nothing, so neither checks an index now. Seeds 3087, 3209. */
Test(e2e, regress_empty_strict_gather, .timeout = 60) {
  pto_program *p = pto_program_new("empty_strict_gather");
  const int64_t D = pto_dim_dynamic(p, "D", 4);
  pto_tensor *t = pto_input(p, "t", PTO_F32, 2, (const int64_t[]){2, D});
  pto_tensor *i = pto_input(p, "i", PTO_I32, 1, (const int64_t[]){3});
  pto_output(p, pto_gather(p, t, i, PTO_GATHER_STRICT), "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  float tb[8] = {0}, y[12];
  const int32_t ix[3] = {0, 7, 1}; /* 7 is outside [0, 2) */
  const void *in[] = {tb, ix};
  void *out[] = {y};
  const int64_t ext[1] = {0};
  pto_status est = pto_program_eval_dims(p, ext, in, out);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  cr_assert_eq(pto_run_bind(run, "D", 0), PTO_OK);
  pto_status st = pto_run_exec_serial(run, in, out);
  char what[256];
  snprintf(what, sizeof what, "run %s (%s), eval %s (%s)", pto_status_name(st),
           pto_run_error(run), pto_status_name(est), pto_program_error(p));
  verdict(switches().empty_strict_gather, "empty_strict_gather", st == est,
          what);
  pto_run_free(run);
  pto_executable_free(e);
  pto_program_free(p);
}

/* pto_topk_masked over x [3, S<=8] at S = 0 and 1: rows of no entries (or
 * one) are all padding, -inf and -1. The evaluator divided by the row
 * length (rows = numel / len) and died of SIGFPE at S = 0; the run was
 * right. Seeds 132, 575, 610. */
Test(e2e, regress_topk_masked_empty_row, .timeout = 60) {
  pto_program *p = pto_program_new("topk_masked_empty_row");
  const int64_t S = pto_dim_dynamic(p, "S", 8);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, (const int64_t[]){3, S});
  pto_tensor *idx = NULL;
  pto_output(p, pto_topk_masked(p, x, 2, &idx), "v");
  pto_output(p, idx, "i");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  float xb[24];
  for (int i = 0; i < 24; i++)
    xb[i] = (float)(i % 5);
  const void *in[] = {xb};
  for (int64_t s = 0; s <= 1; s++) {
    float v[2][6];
    int32_t ix[2][6];
    void *want[] = {v[0], ix[0]}, *got[] = {v[1], ix[1]};
    cr_assert_eq(pto_program_eval_dims(p, &s, in, want), PTO_OK, "%s",
                 pto_program_error(p));
    cr_assert_eq(pto_run_bind(run, "S", s), PTO_OK);
    cr_assert_eq(pto_run_exec_serial(run, in, got), PTO_OK, "%s",
                 pto_run_error(run));
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 2; c++) {
        const int j = r * 2 + c, pad = c >= s;
        cr_expect(pad ? v[0][j] == -INFINITY && ix[0][j] == -1
                      : v[0][j] == xb[r * 8] && ix[0][j] == 0,
                  "S=%ld [%d,%d]: eval %g, %d", (long)s, r, c, v[0][j],
                  ix[0][j]);
        cr_expect(v[1][j] == v[0][j] && ix[1][j] == ix[0][j],
                  "S=%ld [%d,%d]: run %g, %d; eval %g, %d", (long)s, r, c,
                  v[1][j], ix[1][j], v[0][j], ix[0][j]);
      }
  }
  pto_run_free(run);
  pto_executable_free(e);
  pto_program_free(p);
}

/* A strict gather by y = i + 1, i [S<=13, 3], run at S = 13 with indices
 * out of range and then at S = 1, 5, 9 with indices in range: the second
 * executions failed with PTO_ERANGE, naming an index of row S: the
 * instances of the batches past the extent ran, on tiles holding what the
 * first execution left there. They run nothing now. Seeds 48769, 49677
 * and 51364 found it (as the overlay made them before it widened pinned
 * dims). */
Test(e2e, regress_strict_gather_tail, .timeout = 60) {
  pto_program *p = pto_program_new("strict_gather_tail");
  const int64_t S = pto_dim_dynamic(p, "S", 13);
  pto_tensor *t = pto_input(p, "t", PTO_F32, 2, (const int64_t[]){8, 4});
  pto_tensor *i = pto_input(p, "i", PTO_I32, 2, (const int64_t[]){S, 3});
  pto_output(p, pto_gather(p, t, pto_adds(p, i, 1), PTO_GATHER_STRICT), "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static float tb[32], y[13 * 3 * 4];
  static int32_t ib[39];
  for (int k = 0; k < 32; k++)
    tb[k] = (float)k;
  for (int k = 0; k < 39; k++)
    ib[k] = 1000 + k; /* out of range: this execution must fail */
  const void *in[] = {tb, ib};
  void *out[] = {y};
  cr_assert_eq(pto_run_bind(run, "S", 13), PTO_OK);
  cr_assert_eq(pto_run_exec_serial(run, in, out), PTO_ERANGE);
  for (int k = 0; k < 39; k++)
    ib[k] = k % 7; /* y = i + 1 is in [1, 7] */
  int right = 1;
  char what[256] = "";
  for (int64_t s = 1; s <= 9; s += 4) {
    cr_assert_eq(pto_run_bind(run, "S", s), PTO_OK);
    const pto_status st = pto_run_exec_serial(run, in, out);
    if (st != PTO_OK && right) {
      right = 0;
      snprintf(what, sizeof what, "S=%ld: %s", (long)s, pto_run_error(run));
    }
  }
  verdict(switches().strict_gather_tail, "strict_gather_tail", right, what);
  pto_run_free(run);
  pto_executable_free(e);
  pto_program_free(p);
}

/* y = a [4,1] * x [4, S<=2] (a broadcast) under a 4 x 1 vector tile, then
 * pto_topk_masked(y, 1): at S = 0 and S = 1 the run gave 0 in every row
 * where the evaluator gives -inf (no entry) and x's first column (all
 * negative): the product's tile was shaped like a's, which is static, so
 * the tile past the extent stayed valid and came into the selection as
 * zeros. An element-wise result is clipped as its output tile now. With
 * x * x, or x + 1, it was right. Seeds 16226 and 21227. */
Test(e2e, regress_topk_bcast_tail, .timeout = 60) {
  pto_program *p = pto_program_new("topk_bcast_tail");
  const int64_t S = pto_dim_dynamic(p, "S", 2);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, (const int64_t[]){4, S});
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, (const int64_t[]){4, 1});
  pto_program_set_vec_tile(p, 4, 1);
  pto_tensor *idx = NULL;
  pto_output(p, pto_topk_masked(p, pto_mul(p, a, x), 1, &idx), "v");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  const float xb[8] = {-1, -2, -3, -4, -5, -6, -7, -8}, ab[4] = {1, 1, 1, 1};
  const void *in[] = {xb, ab};
  int right = 1;
  char what[256] = "";
  for (int64_t s = 0; s <= 1; s++) {
    float want[4], got[4];
    void *w[] = {want}, *g[] = {got};
    cr_assert_eq(pto_program_eval_dims(p, &s, in, w), PTO_OK);
    cr_assert_eq(pto_run_bind(run, "S", s), PTO_OK);
    cr_assert_eq(pto_run_exec_serial(run, in, g), PTO_OK, "%s",
                 pto_run_error(run));
    for (int r = 0; r < 4; r++)
      if (memcmp(&got[r], &want[r], sizeof(float)) && right) {
        right = 0;
        snprintf(what, sizeof what, "S=%ld row %d: run %g, eval %g", (long)s, r,
                 got[r], want[r]);
      }
  }
  verdict(switches().topk_bcast_tail, "topk_bcast_tail", right, what);
  pto_run_free(run);
  pto_executable_free(e);
  pto_program_free(p);
}

/* Known bug fused_empty_strict_gather (fuzz seed 9353098): a strict
 * gather fused into its reader, a max against [D0] broadcast, runs in the
 * reader's tasks; bound to D0 = 0, the reader is empty, its tasks are
 * skipped, and the gather from the table of 0 rows never fails, where the
 * evaluator (and docs/dynamic.md) say PTO_ERANGE. At D0 = 3 both fail on an
 * index outside the table and pass on indices inside it. */
Test(e2e, regress_fused_empty_strict_gather, .timeout = 60) {
  pto_program *p = pto_program_new("fused_empty_strict_gather");
  const int64_t d = pto_dim_dynamic(p, "D0", 3);
  pto_tensor *table =
      pto_input(p, "table", PTO_F32, 2, (const int64_t[]){d, 1});
  pto_tensor *m = pto_input(p, "m", PTO_F32, 1, (const int64_t[]){d});
  pto_tensor *idx = pto_input(p, "idx", PTO_I32, 1, (const int64_t[]){4});
  pto_tensor *g = pto_gather(p, table, idx, PTO_GATHER_STRICT); /* [4, 1] */
  pto_output(p, pto_max(p, m, pto_abs(p, g)), "y");             /* [4, D0] */
  float t[3] = {1, -2, 3}, mv[3] = {0.5f, 0.5f, 0.5f}, y[12];
  const void *in[] = {t, mv, NULL};
  void *out[] = {y};
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *r = NULL;
  cr_assert_eq(pto_run_new(e, &r), PTO_OK);
  const int32_t ok[4] = {0, 2, 1, 0}, bad[4] = {0, 2, 7, 0};
  for (int k = 0; k < 2; k++) { /* D0 = 3: in range, and 7 outside [0, 3) */
    const int64_t three[1] = {3};
    in[2] = k ? bad : ok;
    const pto_status want = k ? PTO_ERANGE : PTO_OK;
    cr_assert_eq(pto_run_bind(r, "D0", 3), PTO_OK);
    cr_expect_eq(pto_program_eval_dims(p, three, in, out), want, "eval: %s",
                 pto_program_error(p));
    cr_expect_eq(pto_run_exec_serial(r, in, out), want, "run: %s",
                 pto_run_error(r));
  }
  const int64_t zero[1] = {0}; /* no row: every index outside */
  in[2] = ok;
  cr_assert_eq(pto_run_bind(r, "D0", 0), PTO_OK);
  const pto_status est = pto_program_eval_dims(p, zero, in, out),
                   st = pto_run_exec_serial(r, in, out);
  cr_expect_eq(est, PTO_ERANGE, "eval: %s", pto_status_name(est));
  char what[160];
  snprintf(what, sizeof what, "at D0 = 0 the run gave %s, the evaluator %s",
           pto_status_name(st), pto_status_name(est));
  verdict(switches().fused_empty_strict_gather, "fused_empty_strict_gather",
          st == est, what);
  pto_run_free(r);
  pto_executable_free(e);
  pto_program_free(p);
}
