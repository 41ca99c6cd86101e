/* tests/kernels_test.h (internal to the kernels suite): what its test files
 * share. Static: each file includes it once. */
#ifndef PTO_TESTS_KERNELS_TEST_H
#define PTO_TESTS_KERNELS_TEST_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/program_test.h"
#include "tests/runtime_test.h"

/* n values uniform in [-2, 2], fixed by seed; free() them. */
static inline float *random_f32(int64_t n, unsigned seed) {
  float *v = malloc((size_t)n * sizeof *v);
  cr_assert_not_null(v);
  srand(seed);
  for (int64_t i = 0; i < n; i++)
    v[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
  return v;
}

/* n bf16 values (raw bits) of random_f32's range, fixed by seed: each
 * f32 rounded to nearest even by definition (the top 16 bits, plus the
 * rounding carry); the test inputs are finite. free() them. */
static inline uint16_t *random_bf16(int64_t n, unsigned seed) {
  float *f = random_f32(n, seed);
  uint16_t *v = malloc((size_t)n * sizeof *v);
  cr_assert_not_null(v);
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &f[i], sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    v[i] = (uint16_t)(u >> 16);
  }
  free(f);
  return v;
}

/* The f32 value of bf16 bits h (exact). */
static inline float bf16_f32(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Runs e serially (workers 0) or on a runtime of that many workers; `what`
 * names the run in a failure. */
static inline void run_on_workers(pto_executable *e, const void *const *in,
                                  void *const *out, uint32_t workers,
                                  const char *what) {
  if (!workers) {
    cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s: %s", what,
                 pto_executable_error(e));
    return;
  }
  pto_runtime *rt = runtime_with(workers, 0);
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s on %u workers: %s",
               what, workers, pto_executable_error(e));
  pto_runtime_free(rt);
}

#endif /* PTO_TESTS_KERNELS_TEST_H */
