/* tests/runtime_test.h (internal to the tests): what the suites that run
 * executables share (scheduler, kernels): a runtime fit for tests and a
 * program of both core types. Static: each file includes it once. Under
 * the scheduler suite's ThreadSanitizer build it asserts through
 * tests/tsan_shim.h instead of Criterion. */
#ifndef PTO_TESTS_RUNTIME_TEST_H
#define PTO_TESTS_RUNTIME_TEST_H

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif

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
