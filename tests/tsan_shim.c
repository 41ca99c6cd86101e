/* The runner behind tests/tsan_shim.h: runs the registered tests in order
 * (filter with an optional substring argument), exits 1 on any failure. */
#include "tests/tsan_shim.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define SHIM_MAX 64

static struct {
  const char *suite, *name;
  void (*fn)(void);
  shim_params p;
} tests[SHIM_MAX];
static int n_tests, failures;
static const char *current = "";

void shim_register(const char *suite, const char *name, void (*fn)(void),
                   shim_params p) {
  if (n_tests == SHIM_MAX) {
    fprintf(stderr, "tsan_shim: more than %d tests\n", SHIM_MAX);
    exit(1);
  }
  tests[n_tests].suite = suite;
  tests[n_tests].name = name;
  tests[n_tests].fn = fn;
  tests[n_tests].p = p;
  n_tests++;
}

void shim_fail(int fatal, const char *file, int line, const char *what) {
  fprintf(stderr, "[FAIL] %s: %s:%d: %s\n", current, file, line, what);
  failures++;
  if (fatal)
    exit(1);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "[FAIL] timed out\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  int ran = 0;
  for (int i = 0; i < n_tests; i++) {
    if (argc > 1 && !strstr(tests[i].name, argv[1]))
      continue;
    current = tests[i].name;
    double t = tests[i].p.timeout > 0 ? tests[i].p.timeout : 60;
    /* sanitizers slow everything down: four times the Criterion budget */
    alarm((unsigned)(4 * t));
    int before = failures;
    tests[i].fn();
    alarm(0);
    fprintf(stderr, "[%s] %s::%s\n", failures > before ? "FAIL" : "PASS",
            tests[i].suite, tests[i].name);
    ran++;
  }
  fprintf(stderr, "tsan_shim: %d tests, %d failures\n", ran, failures);
  return failures || !ran;
}
