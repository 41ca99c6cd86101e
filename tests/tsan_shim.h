/* tests/tsan_shim.h: the subset of Criterion's API the scheduler suite uses,
 * for its ThreadSanitizer run only. Criterion itself cannot start under
 * TSan: its process arena must be mapped at an address TSan's shadow memory
 * reserves (Snaipe/Criterion#274), so under -fsanitize=thread the
 * suite's files (tests/test_runtime*.c, test_trace.c, test_stage_runs.c)
 * include this instead and run every test in one process, in order, each
 * under its .timeout (SIGALRM ends the run). */
#ifndef PTO_TESTS_TSAN_SHIM_H
#define PTO_TESTS_TSAN_SHIM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shim_params {
  int unused;
  double timeout;
} shim_params;

void shim_register(const char *suite, const char *name, void (*fn)(void),
                   shim_params p);
/* Reports a failed check (its arguments as written, message included);
 * fatal ends the process. */
void shim_fail(int fatal, const char *file, int line, const char *what);

#define Test(suite, name, ...)                                                 \
  static void suite##_##name(void);                                            \
  __attribute__((constructor)) static void shim_reg_##suite##_##name(void) {   \
    shim_params p = {0, __VA_ARGS__};                                          \
    shim_register(#suite, #name, suite##_##name, p);                           \
  }                                                                            \
  static void suite##_##name(void)

/* the first and second of the macro arguments (the rest is the message) */
#define SHIM_1(...) SHIM_1_(__VA_ARGS__, ~)
#define SHIM_1_(a, ...) a
#define SHIM_2(...) SHIM_2_(__VA_ARGS__, ~)
#define SHIM_2_(a, b, ...) b

#define SHIM_CHECK(fatal, ok, what)                                            \
  do {                                                                         \
    if (!(ok))                                                                 \
      shim_fail(fatal, __FILE__, __LINE__, what);                              \
  } while (0)

#define cr_assert(...) SHIM_CHECK(1, SHIM_1(__VA_ARGS__), #__VA_ARGS__)
#define cr_expect(...) SHIM_CHECK(0, SHIM_1(__VA_ARGS__), #__VA_ARGS__)
#define SHIM_CMP(fatal, op, ...)                                               \
  SHIM_CHECK(fatal, (SHIM_1(__VA_ARGS__))op(SHIM_2(__VA_ARGS__)),              \
             #op ": " #__VA_ARGS__)
#define cr_assert_eq(...) SHIM_CMP(1, ==, __VA_ARGS__)
#define cr_expect_eq(...) SHIM_CMP(0, ==, __VA_ARGS__)
#define cr_assert_lt(...) SHIM_CMP(1, <, __VA_ARGS__)
#define cr_expect_lt(...) SHIM_CMP(0, <, __VA_ARGS__)
#define cr_expect_geq(...) SHIM_CMP(0, >=, __VA_ARGS__)
#define cr_assert_not_null(...) SHIM_CMP(1, !=, SHIM_1(__VA_ARGS__), NULL)
#define cr_expect_null(...) SHIM_CMP(0, ==, SHIM_1(__VA_ARGS__), NULL)
/* strings: equal, neither NULL */
#define SHIM_STREQ(a, b) ((a) && (b) && !strcmp((a), (b)))
#define cr_expect_str_eq(...)                                                  \
  SHIM_CHECK(0, SHIM_STREQ(SHIM_1(__VA_ARGS__), SHIM_2(__VA_ARGS__)),          \
             "str_eq: " #__VA_ARGS__)

#endif /* PTO_TESTS_TSAN_SHIM_H */
