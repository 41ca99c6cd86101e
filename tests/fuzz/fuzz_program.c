/* libFuzzer target: a program built from arbitrary bytes, compiled under a
 * config also drawn from them, run serially and compared with the evaluator.
 *
 * The bytes drive every choice of the random-program generator
 * (tests/randprog.h: which op, which operands, shapes, views, tile scopes,
 * labels, machine and knobs), so each byte string is a valid program and
 * coverage guidance explores the builder, compiler and executor. A
 * mismatch prints the program as C and aborts; so do sanitizer reports,
 * leaks and hangs (-timeout). Open bugs are avoided as in fuzz_diff
 * (PTO_RP_KNOWN / PTO_RP_FIXED). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/randprog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rp_env *env;
  static rp_switches sw;
  char msg[1024];
  if (!env) {
    if (rp_switches_from_env(&sw, msg, sizeof msg)) {
      fprintf(stderr, "fuzz_program: %s\n", msg);
      abort();
    }
    env = rp_env_new(NULL);
    rp_env_serial_only(env, 1);
  }
  rp_case *c = rp_generate_bytes(data, size, &sw);
  rp_outcome r = rp_run(env, c, msg, sizeof msg);
  if (r == RP_FAIL) {
    fprintf(stderr, "fuzz_program: %s\n", msg);
    rp_print_c(c, stderr);
    fprintf(stderr, "fuzz_program: %s\n", msg); /* again, below the program */
    abort();
  }
  rp_case_free(c);
  return 0;
}
