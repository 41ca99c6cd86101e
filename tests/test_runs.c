/* scheduler: runs (pto_run). One executable serves many runs at once, from
 * several threads and runtimes, each with its own workspace and trace; a
 * run executes again and again, and once at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif

#include "pto/pto.h"

enum { R = 96, C = 160 };

/* y = rowsum(exp(x * s) + x) per row: a vector chain with a workspace
 * between its ops (fusion off), so every run writes a workspace of its
 * own. */
static pto_executable *chain(void) {
  pto_program *p = pto_program_new("runs");
  const int64_t s[2] = {R, C};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 32);
  pto_program_push_label(p, "chain");
  pto_tensor *y = pto_rowsum(p, pto_add(p, pto_exp(p, pto_muls(p, x, 0.25)), x));
  pto_program_pop_label(p);
  pto_output(p, y, "y");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_assert(st.workspace_bytes > 0, "the chain keeps intermediates");
  pto_config_free(c);
  pto_program_free(p); /* the executable owns what it needs */
  return e;
}

static void inputs(float *x, int seed) {
  for (int i = 0; i < R * C; i++)
    x[i] = (float)((i * 7 + seed * 13) % 17) / 17.0f;
}

static pto_runtime *runtime(int trace) {
  pto_runtime_params prm = pto_runtime_params_default();
  prm.trace = trace;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK, "%s",
               pto_runtime_error(NULL));
  return rt;
}

typedef struct worker_arg {
  const pto_executable *e;
  pto_runtime *rt; /* NULL: serial */
  int seed, iters;
  int failures;
  float want[R];
} worker_arg;

/* Runs e iters times on a run of its own, each time checking the result
 * against the serial run's of the same inputs. */
static void worker(void *p) {
  worker_arg *a = p;
  static _Thread_local float x[R * C], y[R];
  inputs(x, a->seed);
  pto_run *run = NULL;
  if (pto_run_new(a->e, &run) != PTO_OK) {
    a->failures++;
    return;
  }
  const void *in[] = {x};
  void *out[] = {y};
  for (int i = 0; i < a->iters; i++) {
    memset(y, 0, sizeof y);
    pto_status st = a->rt ? pto_run_exec(a->rt, run, in, out)
                          : pto_run_exec_serial(run, in, out);
    if (st != PTO_OK || memcmp(y, a->want, sizeof y))
      a->failures++;
  }
  pto_run_free(run);
}

Test(scheduler, one_executable_runs_on_several_threads_at_once,
     .timeout = 120) {
  pto_executable *e = chain();
  pto_runtime *rt1 = runtime(0), *rt2 = runtime(0);
  worker_arg args[4];
  for (int k = 0; k < 4; k++) {
    memset(&args[k], 0, sizeof args[k]);
    args[k].e = e;
    args[k].seed = k;
    args[k].iters = 40;
    /* two threads on one runtime, one on another, one serial */
    args[k].rt = k < 2 ? rt1 : k == 2 ? rt2 : NULL;
    float x[R * C];
    inputs(x, k);
    const void *in[] = {x};
    void *out[] = {args[k].want};
    cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
                 pto_executable_error(e));
  }
  uv_thread_t th[4];
  for (int k = 0; k < 4; k++)
    cr_assert_eq(uv_thread_create(&th[k], worker, &args[k]), 0);
  for (int k = 0; k < 4; k++)
    uv_thread_join(&th[k]);
  for (int k = 0; k < 4; k++)
    cr_expect_eq(args[k].failures, 0, "thread %d", k);
  pto_runtime_free(rt1);
  pto_runtime_free(rt2);
  pto_executable_free(e);
}

Test(scheduler, a_run_keeps_its_own_trace_and_error, .timeout = 60) {
  pto_executable *e = chain();
  pto_runtime *rt = runtime(1);
  static float x[R * C], y[R];
  inputs(x, 3);
  const void *in[] = {x};
  void *out[] = {y};
  pto_run *a = NULL, *b = NULL;
  cr_assert_eq(pto_run_new(e, &a), PTO_OK);
  cr_assert_eq(pto_run_new(e, &b), PTO_OK);
  cr_expect_eq(pto_run_executable(a), e);
  /* no execution yet: no trace */
  cr_expect_eq(pto_run_write_trace(a, "/tmp/never.json"), PTO_ENOTFOUND);
  cr_expect(strstr(pto_run_error(a), "no traced run"), "%s", pto_run_error(a));
  cr_assert_eq(pto_run_exec(rt, a, in, out), PTO_OK, "%s", pto_run_error(a));
  cr_expect_eq(pto_run_error(a)[0], '\0');
  char path[] = "/tmp/pto_run_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_expect_eq(pto_run_write_trace(a, path), PTO_OK, "%s", pto_run_error(a));
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  char head[64] = "";
  cr_expect(fread(head, 1, sizeof head - 1, f) > 0);
  fclose(f);
  unlink(path);
  cr_expect(strchr(head, '{') != NULL, "%s", head);
  /* b has none of a's, and the executable none of either (its own calls
   * keep theirs) */
  cr_expect_eq(pto_run_trace_summary(b, stdout), PTO_ENOTFOUND);
  cr_expect_eq(pto_executable_trace_summary(e, stdout), PTO_ENOTFOUND);
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK);
  cr_expect_eq(pto_executable_trace_summary(e, stdout), PTO_OK);
  /* bad buffers: the run's message, not the executable's */
  void *none[] = {NULL};
  cr_expect_eq(pto_run_exec(rt, b, in, none), PTO_EINVAL);
  cr_expect(strstr(pto_run_error(b), "1 output buffers are required"), "%s",
            pto_run_error(b));
  cr_expect_eq(pto_executable_error(e)[0], '\0', "%s",
               pto_executable_error(e));
  cr_expect_eq(pto_run_exec(NULL, b, in, out), PTO_EINVAL);
  cr_expect_eq(pto_run_exec(rt, NULL, in, out), PTO_EINVAL);
  pto_run *z = (pto_run *)1;
  cr_expect_eq(pto_run_new(NULL, &z), PTO_EINVAL);
  cr_expect_null(z);
  cr_expect_eq(pto_run_new(e, NULL), PTO_EINVAL);
  pto_run_free(NULL);
  pto_run_free(a);
  pto_run_free(b);
  pto_runtime_free(rt);
  pto_executable_free(e);
}
