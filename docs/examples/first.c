/* docs/examples/first.c: a first operator with PTO. It builds
 * y = rowsum(relu(x w + b)) from tensor ops with no tile shape set (the
 * compiler chooses them for this machine), compiles it, runs it on a
 * runtime of every core, checks it against the reference evaluator, and
 * shows the message a bad op leaves. CI builds and runs this file and
 * compares its output with the README's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pto/pto.h>

enum { M = 2048, K = 256, N = 256 };

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "%s: %s\n", what, msg);
  return 1;
}

int main(void) {
  /* 1. the operator, as a graph of tensor ops */
  pto_program *p = pto_program_new("first");
  const int64_t xs[2] = {M, K}, ws[2] = {K, N}, bs[2] = {1, N};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, ws);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, bs);
  pto_program_push_label(p, "mlp"); /* names its tasks in traces */
  pto_tensor *h = pto_relu(p, pto_add(p, pto_matmul(p, x, w, 0), b));
  pto_tensor *y = pto_rowsum(p, h);
  pto_program_pop_label(p);
  pto_output(p, y, "y");
  if (pto_program_status(p) != PTO_OK)
    return fail("build", pto_program_error(p));

  /* 2. inputs: small integers, so every sum is exact in f32 */
  float *xv = pto_buffer_alloc(sizeof(float) * M * K);
  float *wv = pto_buffer_alloc(sizeof(float) * K * N);
  float *bv = pto_buffer_alloc(sizeof(float) * N);
  float *yv = pto_buffer_alloc(sizeof(float) * M);
  float *ref = pto_buffer_alloc(sizeof(float) * M);
  if (!xv || !wv || !bv || !yv || !ref)
    return fail("alloc", "out of memory");
  for (int i = 0; i < M * K; i++)
    xv[i] = (float)(i % 7 - 3);
  for (int i = 0; i < K * N; i++)
    wv[i] = (float)(i % 5 - 2);
  for (int i = 0; i < N; i++)
    bv[i] = (float)(i % 3);
  const void *in[] = {xv, wv, bv};
  void *out[] = {yv}, *ref_out[] = {ref};

  /* 3. compile for this machine, run on every core */
  pto_executable *e;
  if (pto_compile(p, NULL, &e) != PTO_OK)
    return fail("compile", pto_program_error(p));
  pto_runtime *rt;
  if (pto_runtime_new(NULL, &rt) != PTO_OK)
    return fail("runtime", pto_runtime_error(NULL));
  if (pto_runtime_run(rt, e, in, out) != PTO_OK)
    return fail("run", pto_executable_error(e));

  /* 4. the reference evaluator (plain C, double sums) is the oracle */
  if (pto_program_eval(p, in, ref_out) != PTO_OK)
    return fail("eval", pto_program_error(p));
  double worst = 0;
  for (int i = 0; i < M; i++)
    worst = fmax(worst, fabs((double)yv[i] - ref[i]));
  printf("y[0..3] = %.0f %.0f %.0f %.0f\n", yv[0], yv[1], yv[2], yv[3]);
  printf("largest difference from the evaluator: %g\n", worst);

  /* 5. a bad op is refused with a message naming it and its tensors */
  pto_program *bad = pto_program_new("bad");
  pto_tensor *u = pto_input(bad, "u", PTO_F32, 2, xs);
  pto_output(bad, pto_matmul(bad, u, u, 0), "v");
  printf("error: %s\n", pto_program_error(bad));

  pto_program_free(bad);
  pto_runtime_free(rt);
  pto_executable_free(e); /* before its program */
  pto_program_free(p);
  free(xv), free(wv), free(bv), free(yv), free(ref);
  return worst == 0 ? 0 : 1;
}
