/* tests/partitioner_test.h (internal to the tests): what the
 * partitioner's suites (tests/test_partitioner*.c) share: the Ascend and
 * host machines as configs, compiling a program that must compile, and
 * running an executable serially, on the parallel runtime and through the
 * reference evaluator to require the same results. Static: each file
 * includes it once. */
#ifndef PTO_TESTS_PARTITIONER_TEST_H
#define PTO_TESTS_PARTITIONER_TEST_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

static inline pto_config *ascend_config(void) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  pto_machine m = pto_machine_ascend();
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  return c;
}

/* n f32 values in [-1, 1) from seed, the same on every machine. */
static inline float *filled(size_t n, uint32_t seed) {
  float *x = malloc(n * sizeof *x);
  cr_assert_not_null(x);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return x;
}

/* Runs e on a runtime of `cube` cube and `vector` vector workers of the
 * host (shared: the same workers serve both) and requires exactly the
 * bytes the serial executor wrote to out[0] (n_bytes). */
static inline void runtime_equals_serial(pto_executable *e,
                                         const void *const *in,
                                         const void *serial, size_t n_bytes,
                                         int shared, uint32_t cube,
                                         uint32_t vector) {
  void *got = malloc(n_bytes);
  cr_assert_not_null(got);
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = shared;
  m.workers[PTO_CORE_CUBE] = cube;
  m.workers[PTO_CORE_VECTOR] = vector;
  pto_runtime_params prm = pto_runtime_params_default();
  prm.machine = &m;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK);
  memset(got, 0xa5, n_bytes);
  void *out[1] = {got};
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  cr_assert(memcmp(got, serial, n_bytes) == 0,
            "parallel (%u cube and %u vector workers, %s) differs from serial",
            cube, vector, shared ? "shared" : "dedicated");
  pto_runtime_free(rt);
  free(got);
}

/* Runs e on the parallel runtime, with 2 shared workers and with dedicated
 * cube and vector workers (1 + 2), and requires exactly the bytes the
 * serial executor wrote to out[0] (n_bytes). */
static inline void parallel_equals_serial(pto_executable *e,
                                          const void *const *in,
                                          const void *serial, size_t n_bytes) {
  runtime_equals_serial(e, in, serial, n_bytes, 1, 2, 2);
  runtime_equals_serial(e, in, serial, n_bytes, 0, 1, 2);
}

/* The host machine with n shared workers, as a config. */
static inline pto_config *host_config(uint32_t n) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[PTO_CORE_CUBE] = m.workers[PTO_CORE_VECTOR] = n;
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  return c;
}

/* Runs e serially into got (n f32, its one output), requires the parallel
 * runs to write the same bytes and every value to be within tol * (1 +
 * |ref|) of p's reference evaluation (into ref). */
static inline void serial_parallel_and_eval_agree(pto_executable *e,
                                                  pto_program *p,
                                                  const void *const *in,
                                                  float *got, float *ref,
                                                  size_t n, float tol) {
  void *out[] = {got}, *refs[] = {ref};
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  parallel_equals_serial(e, in, got, n * sizeof *got);
  cr_assert_eq(pto_program_eval(p, in, refs), PTO_OK);
  for (size_t i = 0; i < n; i++)
    cr_assert(fabsf(got[i] - ref[i]) <= tol * (1 + fabsf(ref[i])),
              "out[%zu] %g vs %g", i, got[i], ref[i]);
}

static inline pto_executable *compile_ok(pto_program *p, const pto_config *c) {
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  return e;
}

#endif
