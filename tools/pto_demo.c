/* pto-demo: builds PyPTO's worked example, runs it through the reference
 * evaluator and checks it against a direct plain-C computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

static void usage(FILE *f) {
  fputs("usage: pto-demo [--seed N]\n"
        "Builds C = rowsum(matmul(A*2 + B, W)) (A, B 64x64, W 64x32) with the\n"
        "PTO program builder, evaluates it with the reference evaluator and\n"
        "compares with a plain-C computation. Exit status 0 when they agree.\n",
        f);
}

int main(int argc, char **argv) {
  unsigned seed = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = (unsigned)strtoul(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "pto-demo: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  pto_program *p = pto_example_pypto();
  if (!p || pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "pto-demo: building the example failed: %s\n",
            p ? pto_program_error(p) : "out of memory");
    pto_program_free(p);
    return 1;
  }
  static float A[64 * 64], B[64 * 64], W[64 * 32], C[64], ref[64];
  srand(seed);
  for (int i = 0; i < 64 * 64; i++) {
    A[i] = (float)rand() / RAND_MAX - 0.5f;
    B[i] = (float)rand() / RAND_MAX - 0.5f;
  }
  for (int i = 0; i < 64 * 32; i++)
    W[i] = (float)rand() / RAND_MAX - 0.5f;
  const void *in[] = {A, B, W};
  void *out[] = {C};
  pto_status st = pto_program_eval(p, in, out);
  if (st != PTO_OK) {
    fprintf(stderr, "pto-demo: eval failed: %s: %s\n", pto_status_name(st),
            pto_program_error(p));
    pto_program_free(p);
    return 1;
  }
  pto_example_pypto_ref(A, B, W, ref);
  double max_err = 0;
  for (int i = 0; i < 64; i++) {
    double e = fabs((double)C[i] - ref[i]) / (fabs(ref[i]) + 1e-6);
    max_err = e > max_err ? e : max_err;
  }
  printf("program '%s': %d inputs, %d outputs, %d tensor ops\n",
         pto_program_name(p), pto_program_num_inputs(p),
         pto_program_num_outputs(p), pto_program_num_ops(p));
  printf("C[0..3] = %.6f %.6f %.6f %.6f\n", C[0], C[1], C[2], C[3]);
  printf("max relative error vs plain C: %.3g (%s)\n", max_err,
         max_err <= 1e-5 ? "ok" : "MISMATCH");
  pto_program_free(p);
  return max_err <= 1e-5 ? 0 : 1;
}
