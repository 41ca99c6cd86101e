/* partitioner: stage barriers (pto_config_set_stage_barriers): every task
 * of a stage comes after every task of the stage before, through few
 * edges; unlabelled tasks keep their edges; results stay right; a stage
 * that feeds an earlier one is a clear error. The runs under a traced
 * runtime are in the scheduler suite (test_stage_runs.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/stages_test.h"

static pto_config *staged_config(int barriers, int64_t nbuffer) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, nbuffer), PTO_OK);
  if (barriers)
    cr_assert_eq(pto_config_set_stage_barriers(c, st_stages, 4), PTO_OK, "%s",
                 pto_config_error(c));
  return c;
}

static pto_executable *compile_with(pto_program *p, const pto_config *c) {
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  return e;
}

/* reach[u * n + v]: v is reachable from u (u itself included). */
static unsigned char *reachability(const pto_executable *e) {
  uint32_t n = pto_executable_num_tasks(e);
  unsigned char *reach = calloc((size_t)n * n, 1);
  uint32_t *stack = malloc(n * sizeof *stack);
  cr_assert(reach && stack);
  for (uint32_t s = 0; s < n; s++) {
    uint32_t top = 0;
    stack[top++] = s;
    reach[(size_t)s * n + s] = 1;
    while (top) {
      const uint32_t *succ;
      uint32_t u = stack[--top], k = pto_executable_task_succ(e, u, &succ);
      for (uint32_t j = 0; j < k; j++)
        if (!reach[(size_t)s * n + succ[j]]) {
          reach[(size_t)s * n + succ[j]] = 1;
          stack[top++] = succ[j];
        }
    }
  }
  free(stack);
  return reach;
}

/* Every task of stage k is reachable from every task of stage k-1; returns
 * how many tasks each stage has, and how many carry no stage's label
 * besides the joins (*free_tasks) and how many joins (*joins). */
static void expect_ordered(const pto_executable *e, uint32_t *per_stage,
                           uint32_t *free_tasks, uint32_t *joins) {
  uint32_t n = pto_executable_num_tasks(e);
  unsigned char *reach = reachability(e);
  memset(per_stage, 0, 4 * sizeof *per_stage);
  *free_tasks = *joins = 0;
  for (uint32_t t = 0; t < n; t++) {
    const char *l = pto_executable_task_label(e, t);
    int k = staged_stage(l);
    if (k >= 0)
      per_stage[k]++;
    else if (!strcmp(l, "stage_barrier"))
      (*joins)++;
    else
      (*free_tasks)++;
  }
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t v = 0; v < n; v++) {
      int ku = staged_stage(pto_executable_task_label(e, u));
      int kv = staged_stage(pto_executable_task_label(e, v));
      if (ku >= 0 && kv == ku + 1)
        cr_expect(reach[(size_t)u * n + v],
                  "task %u (%s) does not precede %u (%s)", u,
                  pto_executable_task_label(e, u), v,
                  pto_executable_task_label(e, v));
      if (kv >= 0 && ku == kv + 1)
        cr_expect(!reach[(size_t)u * n + v], "task %u (%s) precedes %u (%s)", u,
                  pto_executable_task_label(e, u), v,
                  pto_executable_task_label(e, v));
    }
  /* exp(x), under no label, neither waits for nor holds up a task */
  for (uint32_t u = 0; u < n; u++) {
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, u, &succ);
    if (!pto_executable_task_label(e, u)[0])
      cr_expect_eq(k, 0, "unlabelled task %u has successors", u);
    for (uint32_t j = 0; j < k; j++)
      cr_expect(pto_executable_task_label(e, succ[j])[0],
                "task %u feeds unlabelled task %u", u, succ[j]);
  }
  free(reach);
}

/* Without barriers stage b does not wait for stage a (no data flows from a
 * to b); with them it does, through one join of a's 32 tasks and b's 32. */
Test(partitioner, stage_barriers_order_every_stage_after_the_one_before) {
  pto_program *p = staged(8, 16);
  pto_config *plain = staged_config(0, 1), *barred = staged_config(1, 1);
  pto_executable *e0 = compile_with(p, plain), *e1 = compile_with(p, barred);
  uint32_t per0[4], per1[4], free0, free1, joins0, joins1;
  unsigned char *reach0 = reachability(e0);
  uint32_t n0 = pto_executable_num_tasks(e0), a_to_b = 0;
  for (uint32_t u = 0; u < n0; u++)
    for (uint32_t v = 0; v < n0; v++)
      a_to_b += staged_stage(pto_executable_task_label(e0, u)) == 0 &&
                staged_stage(pto_executable_task_label(e0, v)) == 1 &&
                reach0[(size_t)u * n0 + v];
  free(reach0);
  cr_expect_eq(a_to_b, 0, "without barriers b does not wait for a");
  expect_ordered(e1, per1, &free1, &joins1);
  /* counted on e0 without the ordering check */
  memset(per0, 0, sizeof per0);
  free0 = joins0 = 0;
  for (uint32_t t = 0; t < n0; t++) {
    int k = staged_stage(pto_executable_task_label(e0, t));
    if (k >= 0)
      per0[k]++;
    else
      free0++;
  }
  cr_expect_eq(per1[0], 32, "a: 64x64 in 8x16 tiles");
  cr_expect_eq(per1[1], 32);
  for (int k = 0; k < 4; k++)
    cr_expect_eq(per0[k], per1[k], "stage %d keeps its tasks", k);
  cr_expect_eq(free0, free1, "unlabelled tasks are unaffected");
  cr_expect_eq(joins0, 0);
  cr_expect_geq(joins1, 1, "32 x 32 edges would be many: a join");
  for (uint32_t t = 0; t < pto_executable_num_tasks(e1); t++)
    if (!strcmp(pto_executable_task_label(e1, t), "stage_barrier"))
      cr_expect(strstr(
          pto_executable_program_name(e1, pto_executable_task_program(e1, t)),
          "barrier"));
  pto_executable_free(e0);
  pto_executable_free(e1);
  pto_config_free(plain);
  pto_config_free(barred);
  pto_program_free(p);
}

/* One task per vector op: a single sink and source need no join. */
Test(partitioner, stage_barriers_of_single_tasks_are_direct_edges) {
  pto_program *p = staged(64, 64);
  pto_config *barred = staged_config(1, 1);
  pto_executable *e = compile_with(p, barred);
  uint32_t per[4], free_tasks, joins;
  expect_ordered(e, per, &free_tasks, &joins);
  cr_expect_eq(per[0], 1);
  cr_expect_eq(per[1], 1);
  cr_expect_leq(joins, 1, "c's 16 matmul tiles into d's: a join");
  cr_expect_geq(free_tasks, 1, "exp(x)");
  for (uint32_t t = 0; t < pto_executable_num_tasks(e); t++) {
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, t, &succ), to_b = 0;
    if (strcmp(pto_executable_task_label(e, t), "a"))
      continue;
    for (uint32_t j = 0; j < k; j++)
      to_b += !strcmp(pto_executable_task_label(e, succ[j]), "b");
    cr_expect_eq(to_b, 1, "a's one task feeds b's directly");
  }
  pto_executable_free(e);
  pto_config_free(barred);
  pto_program_free(p);
}

/* Two stages of 1024 independent tasks each: a barrier adds about 2048
 * edges and one join, not a million edges. */
Test(partitioner, stage_barrier_edges_grow_with_tasks_not_their_product) {
  pto_program *p = pto_program_new("wide");
  const int64_t s[2] = {256, 256};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 8, 8);
  pto_program_push_label(p, "one");
  pto_output(p, pto_muls(p, x, 2.0), "y1");
  pto_program_pop_label(p);
  pto_program_push_label(p, "two");
  pto_output(p, pto_adds(p, x, 1.0), "y2");
  pto_program_pop_label(p);
  pto_config *c = pto_config_new();
  const char *const stages[] = {"one", "two"};
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  pto_executable *e0 = compile_with(p, c);
  cr_assert_eq(pto_config_set_stage_barriers(c, stages, 2), PTO_OK);
  pto_executable *e1 = compile_with(p, c);
  pto_exe_stats s0, s1;
  cr_assert_eq(pto_executable_stats(e0, &s0), PTO_OK);
  cr_assert_eq(pto_executable_stats(e1, &s1), PTO_OK);
  cr_expect_eq(s0.tasks, 2048);
  cr_expect_eq(s1.tasks, 2049, "one join");
  cr_expect_eq(s1.edges - s0.edges, 2048, "1024 into the join, 1024 out");
  /* every task of "two" has the join as its only producer */
  for (uint32_t t = 0; t < s1.tasks; t++) {
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e1, t, &succ);
    const char *l = pto_executable_task_label(e1, t);
    if (!strcmp(l, "one"))
      cr_expect(k == 1 && !strcmp(pto_executable_task_label(e1, succ[0]),
                                  "stage_barrier"));
    else if (!strcmp(l, "stage_barrier"))
      cr_expect_eq(k, 1024);
  }
  pto_executable_free(e0);
  pto_executable_free(e1);
  pto_config_free(c);
  pto_program_free(p);
}

static void expect_staged_results(pto_executable *e) {
  static float x[ST_R * ST_C], w[ST_C * ST_C], c[ST_R * ST_C], d[ST_R * ST_C],
      u[ST_R * ST_C];
  static double rc[ST_R * ST_C], rd[ST_R * ST_C], ru[ST_R * ST_C];
  staged_inputs(x, w);
  staged_reference(x, w, rc, rd, ru);
  const void *in[] = {x, w};
  void *out[] = {c, d, u};
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK);
  for (int i = 0; i < ST_R * ST_C; i++) {
    cr_assert(fabs(c[i] - rc[i]) <= 1e-4 * (1 + fabs(rc[i])), "c[%d]", i);
    cr_assert(fabs(d[i] - rd[i]) <= 1e-4 * (1 + fabs(rd[i])), "d[%d]", i);
    cr_assert(fabs(u[i] - ru[i]) <= 1e-5 * ru[i], "u[%d]", i);
  }
}

Test(partitioner, stage_barriers_keep_results) {
  pto_program *p = staged(8, 16);
  for (int b = 0; b < 2; b++) {
    pto_config *c = staged_config(b, 1);
    pto_executable *e = compile_with(p, c);
    expect_staged_results(e);
    pto_executable_free(e);
    pto_config_free(c);
  }
  pto_program_free(p);
}

/* Stages listed against the data flow would deadlock: the compile says
 * which tasks of which stages. */
Test(partitioner, stage_feeding_an_earlier_stage_is_a_clear_error) {
  pto_program *p = staged(8, 16);
  pto_config *c = pto_config_new();
  const char *const backwards[] = {"c", "a"};
  cr_assert_eq(pto_config_set_stage_barriers(c, backwards, 2), PTO_OK);
  pto_executable *e = NULL;
  cr_expect_eq(pto_compile(p, c, &e), PTO_ECONFIG);
  cr_expect_null(e);
  const char *msg = pto_program_error(p);
  cr_expect(strstr(msg, "stage_barriers") && strstr(msg, "'a'") &&
                strstr(msg, "'c'") && strstr(msg, "feeds"),
            "%s", msg);
  pto_config_free(c);
  pto_program_free(p);
}

/* A stage no task falls in is skipped: d waits for b when c is empty. */
Test(partitioner, stage_barriers_skip_empty_stages) {
  pto_program *p = staged(64, 64);
  pto_config *c = pto_config_new();
  const char *const stages[] = {"b", "nothing", "d"};
  cr_assert_eq(pto_config_set_stage_barriers(c, stages, 3), PTO_OK);
  pto_executable *e = compile_with(p, c);
  unsigned char *reach = reachability(e);
  uint32_t n = pto_executable_num_tasks(e), pairs = 0;
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t v = 0; v < n; v++)
      if (!strcmp(pto_executable_task_label(e, u), "b") &&
          !strcmp(pto_executable_task_label(e, v), "d")) {
        pairs++;
        cr_expect(reach[(size_t)u * n + v]);
      }
  cr_expect_geq(pairs, 1);
  expect_staged_results(e);
  free(reach);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* A producer and its consumer of two stages, whose tiles match, fuse into
 * one task per tile without barriers; with them every task holds one
 * stage's ops, so each stage's tasks carry its label and run after the
 * previous stage's. */
Test(partitioner, stage_barriers_keep_stages_out_of_one_fused_task) {
  pto_program *p = pto_program_new("fusable");
  const int64_t sh[2] = {64, 64};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, sh);
  pto_program_set_vec_tile(p, 16, 64);
  pto_program_push_label(p, "first");
  pto_tensor *y = pto_muls(p, x, 2.0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "second");
  pto_output(p, pto_adds(p, y, 1.0), "z");
  pto_program_pop_label(p);
  pto_config *c = pto_config_new();
  const char *const stages[] = {"first", "second"};
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  pto_executable *e0 = compile_with(p, c);
  cr_assert_eq(pto_config_set_stage_barriers(c, stages, 2), PTO_OK);
  pto_executable *e1 = compile_with(p, c);
  uint32_t second0 = 0, first1 = 0, second1 = 0;
  for (uint32_t t = 0; t < pto_executable_num_tasks(e0); t++)
    second0 += !strcmp(pto_executable_task_label(e0, t), "second");
  cr_expect_eq(second0, 0, "without barriers the add fuses into the muls");
  const uint32_t n = pto_executable_num_tasks(e1);
  unsigned char *reach = reachability(e1);
  for (uint32_t t = 0; t < n; t++) {
    first1 += !strcmp(pto_executable_task_label(e1, t), "first");
    second1 += !strcmp(pto_executable_task_label(e1, t), "second");
  }
  cr_expect_eq(first1, 4);
  cr_expect_eq(second1, 4);
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t v = 0; v < n; v++)
      if (!strcmp(pto_executable_task_label(e1, u), "first") &&
          !strcmp(pto_executable_task_label(e1, v), "second"))
        cr_expect(reach[(size_t)u * n + v], "task %u precedes %u", u, v);
  free(reach);
  static float xs[64 * 64], z[64 * 64];
  for (int i = 0; i < 64 * 64; i++)
    xs[i] = (float)(i % 19) * 0.25f - 2.0f;
  const void *in[] = {xs};
  void *out[] = {z};
  cr_assert_eq(pto_executable_run_serial(e1, in, out), PTO_OK);
  for (int i = 0; i < 64 * 64; i++)
    cr_assert_eq(z[i], xs[i] * 2.0f + 1.0f, "z[%d]", i);
  pto_executable_free(e0);
  pto_executable_free(e1);
  pto_config_free(c);
  pto_program_free(p);
}
