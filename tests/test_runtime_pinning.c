/* scheduler: where a runtime's work lands. A traced run of a random DAG
 * has one event per task, each after its producers', and a summary; as
 * many pinned workers as the host has take distinct cores of the CPU set
 * the process may run on, and a worker pins within the caller's CPU set
 * (as under taskset). Every test has a timeout. */
#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pto/pto.h"
#include "tests/runtime_test.h"

/* ---- traces --------------------------------------------------------------- */

Test(scheduler, trace_has_one_event_per_task_after_its_producers,
     .timeout = 60) {
  pto_runtime *rt = runtime_with(2, 1);
  dag d;
  tctx *ctx;
  pto_graph *g = random_dag(&d, &ctx, 300, 3, 20, 11, 0);
  char path[] = "/tmp/pto_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_expect_eq(pto_graph_write_trace(g, path), PTO_ENOTFOUND);
  cr_assert_eq(pto_runtime_run_graph(rt, g), PTO_OK);
  cr_assert_eq(pto_graph_write_trace(g, path), PTO_OK);
  cr_expect_eq(pto_graph_write_trace(g, "/"), PTO_EIO);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  cr_assert_not_null(root, "%s:%d: %s", path, err.line, err.text);
  json_t *events = json_object_get(root, "traceEvents");
  size_t i, n_x = 0, n_meta = 0;
  json_t *ev;
  double *end = calloc(d.n, sizeof *end), *start = calloc(d.n, sizeof *start);
  json_array_foreach(events, i, ev) {
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    if (!strcmp(ph, "M")) {
      n_meta++;
      continue;
    }
    n_x++;
    json_t *args = json_object_get(ev, "args");
    uint32_t t = (uint32_t)json_integer_value(json_object_get(args, "task"));
    cr_assert_lt(t, d.n);
    start[t] = json_real_value(json_object_get(ev, "ts"));
    end[t] = start[t] + json_real_value(json_object_get(ev, "dur"));
    json_t *prods = json_object_get(args, "producers");
    cr_assert_eq(json_array_size(prods), d.pred_off[t + 1] - d.pred_off[t],
                 "task %u", t);
  }
  cr_expect_eq(n_x, d.n);
  cr_expect_eq(n_meta, 1 + 2, "process name and one lane per worker");
  for (uint32_t t = 0; t < d.n; t++)
    for (uint32_t k = d.pred_off[t]; k < d.pred_off[t + 1]; k++)
      cr_expect_geq(start[t] + 0.002, end[d.pred[k]], "task %u starts after %u",
                    t, d.pred[k]);
  json_decref(root);
  free(start);
  free(end);
  unlink(path);
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  cr_assert_eq(pto_graph_trace_summary(g, mem), PTO_OK);
  fclose(mem);
  cr_expect(strstr(buf, "makespan") && strstr(buf, "critical path") &&
                strstr(buf, "worker 1") && strstr(buf, "task"),
            "%s", buf);
  free(buf);
  pto_graph_free(g);
  dag_free(&d, ctx);
  pto_runtime_free(rt);
}

/* ---- pinning ------------------------------------------------------------- */

/* The CPUs sharing cpu's core as sysfs lists them ("" where it does not). */
static void core_siblings(int cpu, char *buf, int size) {
  char path[96];
  snprintf(path, sizeof path,
           "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
  FILE *f = fopen(path, "r");
  buf[0] = '\0';
  if (f) {
    if (!fgets(buf, size, f))
      buf[0] = '\0';
    fclose(f);
  }
}

/* As many pinned workers as the host machine has: each on a CPU this
 * process may run on, no two on one CPU, nor (where sysfs says) on the two
 * hyperthreads of one core. */
Test(scheduler, pinned_workers_take_distinct_cores_of_the_cpu_set,
     .timeout = 30) {
  cpu_set_t may;
  cr_assert_eq(sched_getaffinity(0, sizeof may, &may), 0);
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  uint32_t n = m.workers[PTO_CORE_VECTOR];
  pto_runtime *rt = runtime(n, 1, PTO_POLICY_FIFO);
  char(*sib)[128] = calloc(n, sizeof *sib);
  cr_assert_not_null(sib);
  for (uint32_t i = 0; i < n; i++) {
    int pu = pto_runtime_worker_pu(rt, i);
    cr_assert(pu >= 0 && pu < CPU_SETSIZE, "worker %u not pinned: %d", i, pu);
    cr_expect(CPU_ISSET(pu, &may), "worker %u on CPU %d, outside the set", i,
              pu);
    core_siblings(pu, sib[i], (int)sizeof *sib);
    for (uint32_t k = 0; k < i; k++) {
      cr_expect(pto_runtime_worker_pu(rt, k) != pu,
                "workers %u and %u both on CPU %d", k, i, pu);
      cr_expect(!sib[i][0] || strcmp(sib[i], sib[k]) != 0,
                "workers %u and %u share the core of CPUs %s", k, i, sib[i]);
    }
  }
  cr_expect_eq(pto_runtime_worker_pu(rt, n), -1, "no such worker");
  cr_expect_eq(pto_runtime_worker_pu(NULL, 0), -1);
  free(sib);
  pto_runtime_free(rt);
  /* unpinned on request */
  m.workers[0] = m.workers[1] = 2;
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = &m;
  p.pin = 0;
  p.spin_us = 50;
  p.yield_us = 200;
  cr_assert_eq(pto_runtime_new(&p, &rt), PTO_OK);
  cr_expect_eq(pto_runtime_worker_pu(rt, 0), -1);
  cr_expect_eq(pto_runtime_worker_pu(rt, 1), -1);
  pto_runtime_free(rt);
}

/* With the calling thread restricted to its last CPU (as under taskset),
 * the one worker is pinned to that CPU, not to the machine's first, and
 * runs a compiled program as the serial executor does. */
Test(scheduler, worker_pins_within_the_callers_cpu_set, .timeout = 60) {
  cpu_set_t may, one;
  cr_assert_eq(sched_getaffinity(0, sizeof may, &may), 0);
  int last = CPU_SETSIZE - 1;
  while (last > 0 && !CPU_ISSET(last, &may))
    last--;
  CPU_ZERO(&one);
  CPU_SET(last, &one);
  /* pid 0: the calling thread only */
  cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
  pto_runtime *rt = runtime(1, 1, PTO_POLICY_FIFO);
  cr_expect_eq(pto_runtime_worker_pu(rt, 0), last, "pinned to %d, not %d",
               pto_runtime_worker_pu(rt, 0), last);
  pto_program *p = softmax_mm();
  static float a[96 * 64], b[64 * 80], want[96 * 80], got[96 * 80];
  for (int i = 0; i < 96 * 64; i++)
    a[i] = (float)(i % 13) / 13 - 0.5f;
  for (int i = 0; i < 64 * 80; i++)
    b[i] = (float)(i % 5) / 5 - 0.5f;
  const void *in[] = {a, b};
  void *ws[] = {want}, *gs[] = {got};
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(pto_executable_run_serial(e, in, ws), PTO_OK);
  cr_expect_eq(pto_runtime_run(rt, e, in, gs), PTO_OK, "%s",
               pto_executable_error(e));
  cr_expect(memcmp(got, want, sizeof got) == 0);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  cr_assert_eq(sched_setaffinity(0, sizeof may, &may), 0);
}
