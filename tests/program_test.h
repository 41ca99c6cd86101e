/* tests/program_test.h (internal to the tests): what the suites that build
 * programs share (the program builder's, the evaluator's through
 * tests/eval_test.h, the kernels' through tests/kernels_test.h): a 2-D
 * input and the check that the program's error message holds a fragment.
 * Static: each file includes it once. */
#ifndef PTO_TESTS_PROGRAM_TEST_H
#define PTO_TESTS_PROGRAM_TEST_H

#include <criterion/criterion.h>
#include <string.h>

#include "pto/pto.h"

#define EXPECT_MSG_HAS(p, s)                                                   \
  cr_expect(strstr(pto_program_error(p), (s)) != NULL,                         \
            "message \"%s\" lacks \"%s\"", pto_program_error(p), (s))

static inline pto_tensor *in2(pto_program *p, const char *name, pto_dtype dt,
                              int64_t r, int64_t c) {
  int64_t s[2] = {r, c};
  return pto_input(p, name, dt, 2, s);
}

#endif
