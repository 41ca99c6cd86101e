/* tests/runtime_test.h (internal to the tests): what the suites that run
 * executables share (scheduler, kernels): a runtime fit for tests and a
 * program of both core types; for the scheduler, random task graphs whose
 * tasks check their own order and a runtime of given policy and workers.
 * Static: each file includes it once. Under the scheduler suite's
 * ThreadSanitizer build it asserts through tests/tsan_shim.h instead of
 * Criterion. */
#ifndef PTO_TESTS_RUNTIME_TEST_H
#define PTO_TESTS_RUNTIME_TEST_H

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif

#include <stdatomic.h>
#include <stdlib.h>

#include "pto/pto.h"

/* A runtime of `workers` unpinned workers serving both core types, with
 * short spins (tests run beside each other); trace: it records traces. */
static inline pto_runtime *runtime_with(uint32_t workers, int trace) {
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[0] = m.workers[1] = workers;
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = &m;
  p.pin = 0;
  p.spin_us = 50;
  p.yield_us = 200;
  p.trace = trace;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&p, &rt), PTO_OK, "%u workers: %s", workers,
               pto_runtime_error(NULL));
  return rt;
}

/* A random task graph's record: each task (ctx: its tctx) counts its runs
 * and counts a violation when a producer has not finished. */
typedef struct dag {
  uint32_t n;
  uint32_t *pred_off, *pred; /* producers of each task */
  atomic_int *runs;          /* times each task ran */
  atomic_int *done;          /* set (release) when a task finishes */
  atomic_int violations;
} dag;

typedef struct tctx {
  dag *d;
  uint32_t id;
} tctx;

static inline int check_task(void *arg) {
  tctx *c = arg;
  dag *d = c->d;
  for (uint32_t k = d->pred_off[c->id]; k < d->pred_off[c->id + 1]; k++)
    if (!atomic_load_explicit(&d->done[d->pred[k]], memory_order_acquire))
      atomic_fetch_add(&d->violations, 1);
  atomic_fetch_add_explicit(&d->runs[c->id], 1, memory_order_relaxed);
  atomic_store_explicit(&d->done[c->id], 1, memory_order_release);
  return 0;
}

/* A random DAG: each task depends on up to `fan` earlier tasks; a hub of
 * width `hub` makes one wide fan-out and fan-in. */
static inline pto_graph *random_dag(dag *d, tctx **ctx, uint32_t n,
                                    uint32_t fan, uint32_t hub, unsigned seed,
                                    int mixed) {
  srand(seed);
  d->n = n;
  d->pred_off = calloc(n + 1, sizeof *d->pred_off);
  uint32_t cap = n * (fan + 2) + 2 * hub;
  d->pred = malloc(cap * sizeof *d->pred);
  d->runs = calloc(n, sizeof *d->runs);
  d->done = calloc(n, sizeof *d->done);
  atomic_init(&d->violations, 0);
  *ctx = malloc(n * sizeof **ctx);
  pto_graph *g = pto_graph_new();
  cr_assert(g && d->pred_off && d->pred && d->runs && d->done && *ctx);
  uint32_t m = 0;
  for (uint32_t t = 0; t < n; t++) {
    (*ctx)[t].d = d;
    (*ctx)[t].id = t;
    pto_core_type core = mixed && rand() % 3 == 0 ? PTO_CORE_CUBE
                                                  : PTO_CORE_VECTOR;
    cr_assert_eq(pto_graph_add(g, core, check_task, &(*ctx)[t]), t);
    d->pred_off[t] = m;
    if (t > 0 && t <= hub) { /* fan-out from task 0 */
      d->pred[m++] = 0;
    } else if (t == hub + 1 && hub) { /* fan-in of the hub */
      for (uint32_t p = 1; p <= hub; p++)
        d->pred[m++] = p;
    } else if (t > 0) {
      uint32_t k = (uint32_t)rand() % (fan + 1);
      for (uint32_t i = 0; i < k; i++) {
        uint32_t p = (uint32_t)rand() % t;
        int dup = 0;
        for (uint32_t j = d->pred_off[t]; j < m; j++)
          dup |= d->pred[j] == p;
        if (!dup)
          d->pred[m++] = p;
      }
    }
    for (uint32_t j = d->pred_off[t]; j < m; j++)
      cr_assert_eq(pto_graph_depend(g, d->pred[j], t), PTO_OK);
  }
  d->pred_off[n] = m;
  return g;
}

static inline void dag_free(dag *d, tctx *ctx) {
  free(d->pred_off);
  free(d->pred);
  free(d->runs);
  free(d->done);
  free(ctx);
}

/* A runtime of `workers` workers (pinned) under policy pol: shared, each
 * serving both core types; otherwise one cube worker and workers - 1 vector
 * ones. Short spins, as runtime_with. */
static inline pto_runtime *runtime(uint32_t workers, int shared,
                                   pto_policy pol) {
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = shared;
  if (shared) {
    m.workers[0] = m.workers[1] = workers;
  } else {
    m.workers[PTO_CORE_CUBE] = 1;
    m.workers[PTO_CORE_VECTOR] = workers - 1;
  }
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = &m;
  p.policy = pol;
  p.spin_us = 50;
  p.yield_us = 200;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&p, &rt), PTO_OK, "%u workers", workers);
  cr_assert_eq(pto_runtime_num_workers(rt), workers);
  return rt;
}

/* "softmax_mm": a matmul labelled "mm" (cube tile 32x32x32) of a [96,64]
 * and a [64,80] input into a softmax labelled "softmax", output "y". */
static inline pto_program *softmax_mm(void) {
  pto_program *p = pto_program_new("softmax_mm");
  const int64_t sa[2] = {96, 64}, sb[2] = {64, 80};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, sa);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, sb);
  pto_program_set_vec_tile(p, 16, 32);
  pto_program_set_cube_tile(p, 32, 32, 32);
  pto_program_push_label(p, "mm");
  pto_tensor *c = pto_matmul(p, a, b, 0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "softmax");
  pto_output(p, pto_softmax(p, pto_muls(p, c, 0.125)), "y");
  pto_program_pop_label(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

#endif /* PTO_TESTS_RUNTIME_TEST_H */
