/* tests/exe_test.h (internal to the tests): editing an executable's task
 * graph as the compiler never would (core/exe.h), for the scheduler and
 * partitioner suites. Static: each file includes it once. */
#ifndef PTO_TESTS_EXE_TEST_H
#define PTO_TESTS_EXE_TEST_H

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif
#include <stdlib.h>

#include "core/exe.h"

/* Adds the edge from -> to to e's task graph (rebuilding its successor
 * lists): the way a test makes the cyclic executable the compiler refuses
 * to build. Before e's first run, which caches the graph. */
static inline void add_edge(pto_executable *e, uint32_t from, uint32_t to) {
  uint32_t *succ = malloc((e->n_edges + 2) * sizeof *succ);
  cr_assert_not_null(succ);
  uint32_t at = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    pto_task *k = &e->tasks[t];
    uint32_t first = k->succ;
    k->succ = at;
    for (uint32_t i = 0; i < k->n_succ; i++)
      succ[at++] = e->succ[first + i];
    if (t == from) {
      succ[at++] = to;
      k->n_succ++;
    }
  }
  e->tasks[to].n_pred++;
  free(e->succ);
  e->succ = succ;
  e->n_edges++;
}

#endif /* PTO_TESTS_EXE_TEST_H */
