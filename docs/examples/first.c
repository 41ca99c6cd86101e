/* docs/examples/first.c: y = rowsum(relu(x w + b)) from tensor ops, with
 * no tile shape set and a dynamic number of rows: compiled once, run at
 * three sizes, each checked against the reference evaluator. */
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
  /* 1. the operator; its rows: a dynamic dim of at most M */
  pto_program *p = pto_program_new("first");
  const int64_t xs[2] = {pto_dim_dynamic(p, "rows", M), K}, ws[2] = {K, N},
                bs[2] = {1, N};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, ws);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, bs);
  pto_program_push_label(p, "mlp"); /* names its tasks in traces */
  pto_tensor *h = pto_relu(p, pto_add(p, pto_matmul(p, x, w, 0), b));
  pto_output(p, pto_rowsum(p, h), "y");
  pto_program_pop_label(p);
  if (pto_program_status(p) != PTO_OK)
    return fail("build", pto_program_error(p));

  /* 2. buffers laid out for the maximum; small integers: sums are exact */
  float *xv = pto_buffer_alloc(sizeof(float) * M * K),
        *wv = pto_buffer_alloc(sizeof(float) * K * N),
        *bv = pto_buffer_alloc(sizeof(float) * N),
        *yv = pto_buffer_alloc(sizeof(float) * M),
        *ref = pto_buffer_alloc(sizeof(float) * M);
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

  /* 3. compile once; a run binds the rows and runs on every core */
  pto_executable *e;
  if (pto_compile(p, NULL, &e) != PTO_OK)
    return fail("compile", pto_program_error(p));
  pto_runtime *rt;
  if (pto_runtime_new(NULL, &rt) != PTO_OK)
    return fail("runtime", pto_runtime_error(NULL));
  pto_run *run;
  if (pto_run_new(e, &run) != PTO_OK)
    return fail("run", pto_last_error());
  const int64_t sizes[3] = {M, 1000, 1};
  int wrong = 0;
  for (int s = 0; s < 3; s++) {
    if (pto_run_bind(run, "rows", sizes[s]) != PTO_OK ||
        pto_run_exec(rt, run, in, out) != PTO_OK)
      return fail("run", pto_run_error(run));
    /* 4. the reference evaluator (plain C, double sums) is the oracle */
    if (pto_program_eval_dims(p, &sizes[s], in, ref_out) != PTO_OK)
      return fail("eval", pto_program_error(p));
    double worst = 0;
    for (int64_t i = 0; i < sizes[s]; i++)
      worst = fmax(worst, fabs((double)yv[i] - ref[i]));
    printf("rows %4ld: y[0] = %.0f, off the evaluator by %g\n",
           (long)sizes[s], yv[0], worst);
    wrong += worst != 0;
  }

  /* 5. a bad op is refused with a message naming it and its tensors */
  pto_program *bad = pto_program_new("bad");
  const int64_t us[2] = {M, K};
  pto_tensor *u = pto_input(bad, "u", PTO_F32, 2, us);
  pto_output(bad, pto_matmul(bad, u, u, 0), "v");
  printf("error: %s\n", pto_program_error(bad));

  pto_program_free(bad);
  pto_run_free(run); /* before its executable */
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  free(xv), free(wv), free(bv), free(yv), free(ref);
  return wrong;
}
