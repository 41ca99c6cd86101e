/* A consumer of an installed PTO: includes only the installed headers,
 * builds the installed GEMM and softmax operators, compiles them and runs
 * them serially and on the parallel runtime, and compares with their
 * plain-C references. tests/install/run.sh builds it against an install
 * through pkg-config (shared and static) and find_package(pto). Exit 0 when
 * every result matches; otherwise a message on stderr and exit 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/gemm.h>
#include <pto/pto.h>
#include <pto/softmax.h>

#define FAIL(...)                                                              \
  do {                                                                         \
    fprintf(stderr, "consumer: " __VA_ARGS__);                                 \
    fputc('\n', stderr);                                                       \
    return 1;                                                                  \
  } while (0)

static void fill(float *v, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

/* max |got - want| / (1 + |want|) */
static double max_err(const float *got, const float *want, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]) / (1.0 + fabs((double)want[i]));
    m = e > m || isnan(e) ? e : m;
  }
  return m;
}

/* Compiles p and runs it serially and on rt; each result within tol of
 * want. */
static int run_both(const char *what, pto_program *p, pto_runtime *rt,
                    const void *const *in, float *out, size_t n,
                    const float *want, double tol) {
  pto_executable *e = NULL;
  if (pto_compile(p, NULL, &e) != PTO_OK)
    FAIL("%s: compile: %s", what, pto_program_error(p));
  for (int parallel = 0; parallel < 2; parallel++) {
    void *outs[1] = {out};
    memset(out, 0xff, n * sizeof *out);
    pto_status st = parallel ? pto_runtime_run(rt, e, in, outs)
                             : pto_executable_run_serial(e, in, outs);
    if (st != PTO_OK) {
      fprintf(stderr, "consumer: %s: run: %s\n", what, pto_executable_error(e));
      pto_executable_free(e);
      return 1;
    }
    double err = max_err(out, want, n);
    if (!(err <= tol)) {
      fprintf(stderr, "consumer: %s (%s): error %.3g > %.3g\n", what,
              parallel ? "runtime" : "serial", err, tol);
      pto_executable_free(e);
      return 1;
    }
  }
  printf("consumer: %s: %u tasks, serial and runtime match the reference\n",
         what, pto_executable_num_tasks(e));
  pto_executable_free(e);
  return 0;
}

int main(void) {
  enum { M = 96, N = 80, K = 72, R = 33, C = 200 };
  static float A[M * K], B[K * N], Cg[M * N], Cw[M * N];
  static float X[R * C], Y[R * C], Yw[R * C];
  fill(A, M * K, 1);
  fill(B, K * N, 2);
  fill(X, R * C, 3);
  pto_gemm_ref(M, N, K, A, B, Cw);
  pto_softmax_ref(X, Yw, C, 0, R);

  pto_runtime_params prm = pto_runtime_params_default();
  prm.pin = 0;
  pto_runtime *rt = NULL;
  if (pto_runtime_new(&prm, &rt) != PTO_OK)
    FAIL("runtime: %s", pto_runtime_error(NULL));

  int rc = 0;
  pto_program *p = pto_gemm_program(M, N, K, NULL);
  if (!p || pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "consumer: gemm: %s\n", pto_program_error(p));
    rc = 1;
  } else {
    const void *in[2] = {A, B};
    rc |= run_both("gemm 96x80x72", p, rt, in, Cg, M * N, Cw, 1e-5);
  }
  pto_program_free(p);

  p = pto_softmax_program(R, C, 0, 0);
  if (!p || pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "consumer: softmax: %s\n", pto_program_error(p));
    rc = 1;
  } else {
    const void *in[1] = {X};
    rc |= run_both("softmax 33x200", p, rt, in, Y, R * C, Yw, 1e-6);
  }
  pto_program_free(p);
  pto_runtime_free(rt);
  return rc;
}
