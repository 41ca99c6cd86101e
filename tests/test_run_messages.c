/* scheduler: what runs of compiled executables tell the user. A failing
 * strict gather names its index, position and table as the evaluator does,
 * serially and on the runtime; swimlane boxes are named even without a
 * label; every failing call of the run API leaves a message about itself.
 * Every test has a timeout. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pto/pto.h"
#include "tests/runtime_test.h"

#define EXPECT_HAS(msg, part)                                                  \
  cr_expect(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

/* ---- strict gather ------------------------------------------------------- */

enum { GN = 5, GD = 8 };

/* Runs e serially and on runtimes of 1 and 2 workers; each must fail with
 * PTO_ERANGE and a message holding every part of want[] (NULL-ended). */
static void expect_run_fails(pto_executable *e, const void *const *in,
                             void *const *out, const char *const *want) {
  for (int how = 0; how < 3; how++) {
    pto_runtime *rt = how ? runtime_with((uint32_t)how, 0) : NULL;
    pto_status st = rt ? pto_runtime_run(rt, e, in, out)
                       : pto_executable_run_serial(e, in, out);
    cr_expect_eq(st, PTO_ERANGE, "%s: %s", how ? "runtime" : "serial",
                 pto_executable_error(e));
    for (int k = 0; want[k]; k++)
      EXPECT_HAS(pto_executable_error(e), want[k]);
    pto_runtime_free(rt);
  }
}

/* p builds, and the evaluator refuses in with PTO_ERANGE: its message into
 * msg (size bytes); then p, compiled. */
static pto_executable *eval_fails_compile(pto_program *p, const void *const *in,
                                          void *const *out, char *msg,
                                          size_t size) {
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(pto_program_eval(p, in, out), PTO_ERANGE);
  snprintf(msg, size, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  return e;
}

/* A 1-D index input: the compiled run's message holds the evaluator's,
 * word for word (index, position, index tensor, table). */
Test(scheduler, strict_gather_failure_names_index_position_and_table,
     .timeout = 60) {
  static float table[GN * GD], out[4 * GD];
  for (int i = 0; i < GN * GD; i++)
    table[i] = (float)i;
  int32_t bad[4] = {0, 1, 7, 2};
  pto_program *p = pto_program_new("strict");
  int64_t ts[2] = {GN, GD}, is[1] = {4};
  pto_program_push_label(p, "sfa");
  pto_program_push_label(p, "kv");
  pto_tensor *tt = pto_input(p, "table", PTO_F32, 2, ts);
  pto_tensor *ti = pto_input(p, "idx", PTO_I32, 1, is);
  pto_output(p, pto_gather(p, tt, ti, PTO_GATHER_STRICT), "g");
  const void *in[] = {table, bad};
  void *outs[] = {out};
  char eval_msg[512];
  pto_executable *e =
      eval_fails_compile(p, in, outs, eval_msg, sizeof eval_msg);
  EXPECT_HAS(eval_msg, "index 7 at [2] of idx");
  const char *want[] = {eval_msg, "TGATHER", "label 'sfa.kv'", NULL};
  expect_run_fails(e, in, outs, want);
  pto_executable_free(e);
  pto_program_free(p);
}

/* A 2-D index read through a transposed view, one tile per index row: the
 * position is in the view's coordinates, and a good index afterwards runs. */
Test(scheduler, strict_gather_failure_position_in_an_index_view,
     .timeout = 60) {
  static float table[GN * GD], out[3 * 2 * GD];
  for (int i = 0; i < GN * GD; i++)
    table[i] = (float)i;
  /* idx [2,3]; its transpose [3,2] is gathered: view [1][1] = idx[1][1] */
  int32_t bad[6] = {0, 1, 2, 3, -4, 4}, good[6] = {4, 3, 2, 1, 0, 0};
  pto_program *p = pto_program_new("strict2d");
  int64_t ts[2] = {GN, GD}, is[2] = {2, 3};
  pto_tensor *tt = pto_input(p, "table", PTO_F32, 2, ts);
  pto_tensor *ti = pto_input(p, "idx", PTO_I32, 2, is);
  pto_program_set_vec_tile(p, 1, GD);
  pto_tensor *tv = pto_transpose(p, ti, 0, 1);
  pto_output(p, pto_gather(p, tt, tv, PTO_GATHER_STRICT), "g");
  const void *in[] = {table, bad};
  void *outs[] = {out};
  char eval_msg[512];
  pto_executable *e =
      eval_fails_compile(p, in, outs, eval_msg, sizeof eval_msg);
  EXPECT_HAS(eval_msg, "index -4 at [1,1]");
  const char *want[] = {eval_msg, NULL};
  expect_run_fails(e, in, outs, want);
  in[1] = good;
  cr_expect_eq(pto_executable_run_serial(e, in, outs), PTO_OK, "%s",
               pto_executable_error(e));
  cr_expect_str_eq(pto_executable_error(e), "");
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++)
      cr_expect_eq(out[(r * 2 + c) * GD], table[good[c * 3 + r] * GD], "%d,%d",
                   r, c);
  pto_executable_free(e);
  pto_program_free(p);
}

/* PTO_GATHER_PAD: -1 is padding (a zero row) to a strict gather, on every
 * instruction table, and any other index outside still fails it, named as
 * the evaluator names it; the evaluator gives the same zero rows. */
Test(scheduler, strict_gather_with_padding, .timeout = 60) {
  static float table[GN * GD], out[4 * GD], want[4 * GD];
  for (int i = 0; i < GN * GD; i++)
    table[i] = (float)i + 1;
  int32_t good[4] = {2, -1, 0, -1}, bad[4] = {2, -1, -2, 0};
  pto_program *p = pto_program_new("padded");
  int64_t ts[2] = {GN, GD}, is[1] = {4};
  pto_tensor *tt = pto_input(p, "table", PTO_F32, 2, ts);
  pto_tensor *ti = pto_input(p, "idx", PTO_I32, 1, is);
  pto_output(p, pto_gather(p, tt, ti, PTO_GATHER_STRICT | PTO_GATHER_PAD),
             "g");
  const void *in[] = {table, good};
  void *outs[] = {out}, *wants[] = {want};
  cr_assert_eq(pto_program_eval(p, in, wants), PTO_OK, "%s",
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  memset(out, 0xa5, sizeof out);
  cr_expect_eq(pto_executable_run_serial(e, in, outs), PTO_OK, "%s",
               pto_executable_error(e));
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < GD; c++) {
      const float w = good[r] < 0 ? 0.0f : table[good[r] * GD + c];
      cr_expect(out[r * GD + c] == w && want[r * GD + c] == w,
                "[%d,%d]: run %g, eval %g, want %g", r, c, out[r * GD + c],
                want[r * GD + c], w);
    }
  pto_executable_free(e);
  in[1] = bad;
  char eval_msg[512];
  e = eval_fails_compile(p, in, outs, eval_msg, sizeof eval_msg);
  EXPECT_HAS(eval_msg, "index -2 at [2] of idx");
  const char *msgs[] = {eval_msg, NULL};
  expect_run_fails(e, in, outs, msgs);
  pto_executable_free(e);
  pto_program_free(p);
}

/* pto_gather_else: the rows of index -1 come from `other` (here an input,
 * and one computed in the gather's task), the others from the table or
 * zero; compiled runs give the evaluator's and plain C's values, serially
 * and on 1 and 2 workers; a strict one fails on any other index outside,
 * as pto_gather does. */
Test(scheduler, gather_else_takes_the_other_rows, .timeout = 60) {
  enum { NI = 6 };
  static float table[GN * GD], other[NI * GD], out[2][NI * GD],
      want[2][NI * GD];
  for (int i = 0; i < GN * GD; i++)
    table[i] = (float)i + 1;
  for (int i = 0; i < NI * GD; i++)
    other[i] = 1000.0f + (float)i;
  int32_t good[NI] = {2, -1, 0, -1, 4, 7}, bad[NI] = {2, -1, -2, 0, 1, 1};
  pto_program *p = pto_program_new("merged");
  pto_tensor *tt = pto_input(p, "table", PTO_F32, 2, (int64_t[]){GN, GD});
  pto_tensor *ti = pto_input(p, "idx", PTO_I32, 1, (int64_t[]){NI});
  pto_tensor *to = pto_input(p, "other", PTO_F32, 2, (int64_t[]){NI, GD});
  pto_output(p, pto_gather_else(p, tt, ti, to, 0), "g");
  pto_output(p,
             pto_gather_else(p, tt, pto_mins(p, ti, 4.0),
                             pto_adds(p, to, 0.5), PTO_GATHER_STRICT),
             "s");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  const void *in[] = {table, good, other};
  void *outs[] = {out[0], out[1]}, *wants[] = {want[0], want[1]};
  cr_assert_eq(pto_program_eval(p, in, wants), PTO_OK, "%s",
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  for (int how = 0; how < 3; how++) {
    pto_runtime *rt = how ? runtime_with((uint32_t)how, 0) : NULL;
    memset(out, 0xa5, sizeof out);
    cr_expect_eq(rt ? pto_runtime_run(rt, e, in, outs)
                    : pto_executable_run_serial(e, in, outs),
                 PTO_OK, "%s", pto_executable_error(e));
    pto_runtime_free(rt);
    for (int r = 0; r < NI; r++)
      for (int c = 0; c < GD; c++) {
        const int32_t i = good[r], j = i < 4 ? i : 4;
        const float w0 = i == -1              ? other[r * GD + c]
                         : i < 0 || i >= GN ? 0.0f
                                              : table[i * GD + c],
                    w1 = j == -1 ? other[r * GD + c] + 0.5f : table[j * GD + c];
        cr_expect(out[0][r * GD + c] == w0 && want[0][r * GD + c] == w0,
                  "g[%d,%d] (%d): run %g, eval %g, want %g", r, c, how,
                  out[0][r * GD + c], want[0][r * GD + c], w0);
        cr_expect(out[1][r * GD + c] == w1 && want[1][r * GD + c] == w1,
                  "s[%d,%d] (%d): run %g, eval %g, want %g", r, c, how,
                  out[1][r * GD + c], want[1][r * GD + c], w1);
      }
  }
  pto_executable_free(e);
  in[1] = bad;
  char eval_msg[512];
  e = eval_fails_compile(p, in, outs, eval_msg, sizeof eval_msg);
  EXPECT_HAS(eval_msg, "index -2 at [2] of");
  const char *msgs[] = {eval_msg, NULL};
  expect_run_fails(e, in, outs, msgs);
  pto_executable_free(e);
  pto_program_free(p);
}

/* An index the task computes itself (its cast fused into the gather's
 * subgraph): the position comes from where the gathered row is stored,
 * again word for word the evaluator's. When the gathered rows are consumed
 * in the task too, there is no tensor position to name: the message still
 * names the value, the op, the tensor the index comes from and the table. */
static pto_program *computed_index(int then_exp) {
  pto_program *p = pto_program_new("computed");
  int64_t ts[2] = {GN, GD}, xs[1] = {4};
  pto_tensor *tt = pto_input(p, "table", PTO_F32, 2, ts);
  pto_tensor *tx = pto_input(p, "x", PTO_F32, 1, xs);
  pto_program_push_label(p, "pick");
  pto_tensor *g =
      pto_gather(p, tt, pto_cast(p, tx, PTO_I32), PTO_GATHER_STRICT);
  pto_output(p, then_exp ? pto_exp(p, g) : g, "g");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

Test(scheduler, strict_gather_failure_of_a_computed_index, .timeout = 60) {
  static float table[GN * GD], out[4 * GD];
  float x[4] = {0, 1, 9, 2};
  const void *in[] = {table, x};
  void *outs[] = {out};
  for (int then_exp = 0; then_exp < 2; then_exp++) {
    pto_program *p = computed_index(then_exp);
    char eval_msg[512];
    pto_executable *e =
        eval_fails_compile(p, in, outs, eval_msg, sizeof eval_msg);
    cr_expect_eq(pto_executable_num_tasks(e), 1, "the cast is fused");
    const char *exact[] = {eval_msg, NULL};
    const char *parts[] = {
        "gather 'pick'",          "index 9", "cast", "[0, 5)",
        "table 'table' f32[5,8]", NULL};
    expect_run_fails(e, in, outs, then_exp ? parts : exact);
    pto_executable_free(e);
    pto_program_free(p);
  }
}

/* ---- traces ----------------------------------------------------------------
 */

/* Every box of a traced run has a name: its label, or its program's when it
 * has none; args keep both. */
Test(scheduler, trace_names_unlabelled_tasks_by_program, .timeout = 60) {
  pto_program *p = pto_program_new("names");
  int64_t s[2] = {64, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 64);
  pto_tensor *y = pto_exp(p, a); /* unlabelled */
  pto_program_push_label(p, "named");
  pto_output(p, pto_matmul(p, y, a, 0), "z");
  pto_program_pop_label(p);
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  static float x[64 * 64], z[64 * 64];
  const void *in[] = {x};
  void *out[] = {z};
  pto_runtime *rt = runtime_with(2, 1);
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  char path[] = "/tmp/pto_trace_names_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(pto_executable_write_trace(e, path), PTO_OK, "%s",
               pto_executable_error(e));
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  cr_assert_not_null(root, "%s:%d: %s", path, err.line, err.text);
  size_t i, boxes = 0, unlabelled = 0, labelled = 0;
  json_t *ev;
  json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
    if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
      continue;
    boxes++;
    json_t *args = json_object_get(ev, "args");
    const char *name = json_string_value(json_object_get(ev, "name"));
    const char *label = json_string_value(json_object_get(args, "label"));
    const char *prog = json_string_value(json_object_get(args, "program"));
    cr_assert(name && label && prog);
    uint32_t t = (uint32_t)json_integer_value(json_object_get(args, "task"));
    cr_expect_str_eq(label, pto_executable_task_label(e, t));
    cr_expect_str_eq(prog, pto_executable_program_name(
                               e, pto_executable_task_program(e, t)));
    cr_expect_neq(name[0], '\0', "task %u has a blank box", t);
    if (label[0]) {
      labelled++;
      cr_expect_str_eq(name, label);
    } else {
      unlabelled++;
      cr_expect_str_eq(name, prog);
    }
  }
  cr_expect_eq(boxes, pto_executable_num_tasks(e));
  cr_expect_gt(unlabelled, 0);
  cr_expect_gt(labelled, 0);
  json_decref(root);
  unlink(path);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* ---- failing calls leave a message about themselves -----------------------
 */

static pto_program *small_program(void) {
  pto_program *p = pto_program_new("small");
  int64_t s[2] = {8, 8};
  pto_output(p, pto_exp(p, pto_input(p, "x", PTO_F32, 2, s)), "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

Test(scheduler, failing_run_calls_say_why, .timeout = 60) {
  pto_program *p = small_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime_with(1, 0);
  static float x[64], y[64];
  const void *in[] = {x};
  void *out[] = {y};
  cr_expect_eq(pto_runtime_run(rt, NULL, in, out), PTO_EINVAL);
  EXPECT_HAS(pto_runtime_error(rt), "run: the executable is NULL");
  cr_expect_str_eq(pto_executable_error(NULL), "executable is NULL");
  cr_expect_eq(pto_runtime_run(NULL, e, in, out), PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "run: the runtime is NULL");
  cr_expect_eq(pto_runtime_run(NULL, NULL, in, out), PTO_EINVAL);
  EXPECT_HAS(pto_last_error(), "run: the runtime and the executable are NULL");
  cr_expect_eq(pto_runtime_submit(rt, e, in, out, NULL, NULL, NULL, NULL),
               PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "submit: a loop and a callback");
  cr_expect_eq(pto_executable_run_serial(NULL, in, out), PTO_EINVAL);
  EXPECT_HAS(pto_last_error(), "pto_executable_run_serial: the executable");
  /* and the executable still runs */
  cr_expect_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  cr_expect_str_eq(pto_executable_error(e), "");
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

/* Before this was fixed, write_trace on an untraced executable returned
 * ENOTFOUND and left the previous run's message in place. */
Test(scheduler, trace_calls_say_why_not_what_came_before, .timeout = 60) {
  pto_program *p = small_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime_with(1, 0);
  static float x[64];
  const void *in[] = {x};
  cr_expect_eq(pto_runtime_run(rt, e, in, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "buffers are required");
  cr_expect_eq(pto_executable_write_trace(e, "/tmp/pto_never_written.json"),
               PTO_ENOTFOUND);
  EXPECT_HAS(pto_executable_error(e),
             "write_trace: no traced run has finished");
  EXPECT_HAS(pto_executable_error(e), "params.trace");
  cr_expect_eq(access("/tmp/pto_never_written.json", F_OK), -1);
  cr_expect_eq(pto_executable_trace_summary(e, stdout), PTO_ENOTFOUND);
  EXPECT_HAS(pto_executable_error(e), "trace_summary: no traced run");
  cr_expect_eq(pto_executable_write_trace(e, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "write_trace: path is NULL");
  cr_expect_eq(pto_executable_write_trace(NULL, "x"), PTO_EINVAL);
  EXPECT_HAS(pto_last_error(), "the executable is NULL");
  pto_runtime_free(rt);
  /* traced: a path that cannot be written names itself and why */
  rt = runtime_with(1, 1);
  static float y[64];
  void *out[] = {y};
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  cr_expect_eq(pto_executable_write_trace(e, "/nonexistent-dir/t.json"),
               PTO_EIO);
  EXPECT_HAS(
      pto_executable_error(e),
      "write_trace: cannot open '/nonexistent-dir/t.json': No such file");
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

static int nop_task(void *arg) {
  (void)arg;
  return 0;
}

Test(scheduler, failing_graph_calls_say_why, .timeout = 60) {
  pto_graph *g = pto_graph_new();
  cr_assert_not_null(g);
  cr_assert_eq(pto_graph_add(g, PTO_CORE_VECTOR, nop_task, NULL), 0);
  cr_expect_eq(pto_runtime_run_graph(NULL, g), PTO_EINVAL);
  EXPECT_HAS(pto_graph_error(g), "run_graph: the runtime is NULL");
  pto_runtime *rt = runtime_with(1, 0);
  cr_expect_eq(pto_runtime_run_graph(rt, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_runtime_error(rt), "run_graph: the graph is NULL");
  cr_expect_eq(pto_runtime_run_graph(rt, g), PTO_OK, "%s", pto_graph_error(g));
  cr_expect_eq(pto_graph_write_trace(g, "/tmp/pto_never_written.json"),
               PTO_ENOTFOUND);
  EXPECT_HAS(pto_graph_error(g), "write_trace: no traced run has finished");
  cr_expect_eq(pto_graph_trace_summary(g, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_graph_error(g), "trace_summary: out is NULL");
  cr_expect_eq(pto_graph_add(NULL, PTO_CORE_VECTOR, nop_task, NULL),
               PTO_EINVAL);
  EXPECT_HAS(pto_last_error(), "pto_graph_add: the graph is NULL");
  pto_runtime_free(rt);
  pto_graph_free(g);
}

Test(scheduler, failing_runtime_new_says_why, .timeout = 60) {
  pto_runtime_params prm = pto_runtime_params_default();
  prm.policy = (pto_policy)7;
  pto_runtime *rt = (pto_runtime *)&prm; /* set to NULL on failure */
  cr_expect_eq(pto_runtime_new(&prm, &rt), PTO_EINVAL);
  cr_expect_null(rt);
  EXPECT_HAS(pto_runtime_error(NULL), "runtime: unknown policy 7");
  EXPECT_HAS(pto_runtime_error(NULL), "fifo, critical-path, locality");
  EXPECT_HAS(pto_last_error(), "runtime: unknown policy 7");
  cr_expect_eq(pto_runtime_new(NULL, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_runtime_error(NULL), "runtime: rt is NULL");
  pto_machine m = pto_machine_ascend();
  prm = pto_runtime_params_default();
  prm.machine = &m;
  m.workers[PTO_CORE_CUBE] = 0;
  m.workers[PTO_CORE_VECTOR] = 0;
  cr_expect_eq(pto_runtime_new(&prm, &rt), PTO_ECONFIG);
  EXPECT_HAS(pto_runtime_error(NULL), "machine 'ascend' has no workers");
  /* a success clears what pto_runtime_error(NULL) reports */
  rt = runtime_with(1, 0);
  cr_expect_str_eq(pto_runtime_error(NULL), "runtime is NULL");
  pto_runtime_free(rt);
}
