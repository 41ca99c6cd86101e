/* libFuzzer target: a config from arbitrary bytes, then a small program
 * compiled with it, run serially and compared with the evaluator.
 *
 * The first byte picks one of a few fixed random programs (their ops carry
 * the labels a, b, mm, sm, x, which the dictionary knows); the rest is the
 * JSON text given to pto_config_load_string. A config that loads must
 * survive pto_config_to_json and load again to the same JSON; one that does
 * not must say why. Then the program must compile (or fail with
 * PTO_ECAPACITY and a message) and give the evaluator's values. Anything
 * else aborts, as do sanitizer reports, leaks and hangs (-timeout). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/randprog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Seeds whose programs have labels and a matmul or a softmax. */
static const uint64_t programs[] = {3, 17, 42, 77, 101, 256, 1000, 4242};

static void check(int ok, const char *what, const char *detail) {
  if (ok)
    return;
  fprintf(stderr, "fuzz_config: %s: %s\n", what, detail);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rp_env *env;
  static rp_switches sw;
  if (!env) {
    char msg[256];
    check(rp_switches_from_env(&sw, msg, sizeof msg) == 0, "switches", msg);
    env = rp_env_new(NULL);
    rp_env_serial_only(env, 1);
  }
  if (size < 1)
    return 0;
  uint64_t seed = programs[data[0] % (sizeof programs / sizeof programs[0])];
  char *json = malloc(size);
  check(json != NULL, "malloc", "");
  memcpy(json, data + 1, size - 1);
  json[size - 1] = 0;
  pto_config *c = pto_config_new();
  check(c != NULL, "pto_config_new", "NULL");
  pto_status st = pto_config_load_string(c, json);
  if (st != PTO_OK) {
    check(pto_config_error(c)[0] != 0, "a failed load has no message", json);
    check(st == PTO_ECONFIG || st == PTO_EINVAL, "unexpected load status",
          pto_status_name(st));
  } else {
    char *j1 = pto_config_to_json(c);
    if (j1) { /* NULL for names that are not UTF-8 */
      pto_config *d = pto_config_new();
      check(pto_config_load_string(d, j1) == PTO_OK, "to_json does not load",
            j1);
      char *j2 = pto_config_to_json(d);
      check(j2 && strcmp(j1, j2) == 0, "to_json is not a fixed point", j1);
      free(j2);
      pto_config_free(d);
      free(j1);
    }
    char msg[1024];
    rp_case *k = rp_generate(seed, &sw);
    rp_outcome r = rp_run_config(env, k, c, msg, sizeof msg);
    if (r == RP_FAIL) {
      fprintf(stderr, "fuzz_config: seed %llu under config %s: %s\n",
              (unsigned long long)seed, json, msg);
      rp_print_c(k, stderr);
      abort();
    }
    rp_case_free(k);
  }
  pto_config_free(c);
  free(json);
  return 0;
}
