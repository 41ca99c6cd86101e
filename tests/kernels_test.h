/* tests/kernels_test.h (internal to the kernels suite): what its test files
 * share. Static: each file includes it once. */
#ifndef PTO_TESTS_KERNELS_TEST_H
#define PTO_TESTS_KERNELS_TEST_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "pto/pto.h"

/* n values uniform in [-2, 2], fixed by seed; free() them. */
static inline float *random_f32(int64_t n, unsigned seed) {
  float *v = malloc((size_t)n * sizeof *v);
  cr_assert_not_null(v);
  srand(seed);
  for (int64_t i = 0; i < n; i++)
    v[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
  return v;
}

/* A runtime of `workers` unpinned workers serving both core types, with
 * short spins (tests run beside each other). */
static inline pto_runtime *runtime_with(uint32_t workers) {
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[0] = m.workers[1] = workers;
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = &m;
  p.pin = 0;
  p.spin_us = 50;
  p.yield_us = 200;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&p, &rt), PTO_OK, "%u workers", workers);
  return rt;
}

#endif /* PTO_TESTS_KERNELS_TEST_H */
