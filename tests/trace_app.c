/* trace_app: an application as a user would write one, tuned from outside
 * without rebuilding it: it compiles with no config of its own (so
 * PTO_CONFIG applies), runs on a runtime with default parameters
 * (PTO_THREADS sets its workers, PTO_TRACE traces its runs), and checks
 * its results. Used by the environment tests, the pto-trace tests and the
 * browser test.
 *   trace_app softmax|indexer [RUNS]
 * prints "workload W tasks N workers K runs R ok" on success; on failure
 * the library's message on stderr and exit status 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

static float *random_f32(int64_t n, unsigned seed) {
  float *v = malloc((size_t)n * sizeof *v + 1);
  for (int64_t i = 0; v && i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "softmax") && strcmp(argv[1], "indexer"))) {
    fprintf(stderr, "usage: trace_app softmax|indexer [RUNS]\n");
    return 2;
  }
  const int softmax = !strcmp(argv[1], "softmax");
  const int runs = argc > 2 ? atoi(argv[2]) : 1;
  /* softmax: 512 x 1024, 16-row tiles; indexer: 2 batches of 128
   * queries over 2048 keys, 8 heads of 64, top 128, causal (46 tasks) */
  const int64_t rows = 512, cols = 1024;
  pto_indexer_dims d = {2, 128, 2048, 8, 64};
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = 128; /* tiles: the operator's own choice for the host */
  pto_program *p = softmax ? pto_softmax_program(rows, cols, 16, 0)
                           : pto_indexer_program(&d, &prm);
  if (!p || pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "trace_app: %s\n", p ? pto_program_error(p) : "ENOMEM");
    return 1;
  }
  pto_executable *e = NULL;
  if (pto_compile(p, NULL, &e) != PTO_OK) { /* no config: PTO_CONFIG's */
    fprintf(stderr, "trace_app: %s\n", pto_program_error(p));
    pto_program_free(p);
    return 1;
  }
  pto_runtime *rt = NULL;
  if (pto_runtime_new(NULL, &rt) != PTO_OK) { /* PTO_THREADS, PTO_TRACE */
    fprintf(stderr, "trace_app: %s\n", pto_runtime_error(NULL));
    pto_executable_free(e);
    pto_program_free(p);
    return 1;
  }
  int bad = 0;
  char msg[256] = "";
  if (softmax) {
    float *x = random_f32(rows * cols, 1), *y = malloc(rows * cols * 4),
          *ref = malloc(rows * cols * 4);
    const void *in[] = {x};
    void *out[] = {y};
    for (int r = 0; r < runs && !bad; r++)
      bad = pto_runtime_run(rt, e, in, out) != PTO_OK;
    pto_softmax_ref(x, ref, cols, 0, rows);
    for (int64_t i = 0; i < rows * cols && !bad; i++)
      if (fabsf(y[i] - ref[i]) > 1e-5f * fabsf(ref[i]) + 1e-9f) {
        snprintf(msg, sizeof msg, "softmax: element %lld is %g, not %g",
                 (long long)i, (double)y[i], (double)ref[i]);
        bad = 1;
      }
    free(x);
    free(y);
    free(ref);
  } else {
    int64_t nq = d.b * d.s1;
    float *q = random_f32(nq * d.h * d.d, 1),
          *k = random_f32(d.b * d.s2 * d.d, 2), *w = random_f32(nq * d.h, 3),
          *val = malloc(nq * prm.topk * 4);
    int32_t *idx = malloc(nq * prm.topk * 4);
    const void *in[] = {q, k, w};
    void *out[] = {idx, val};
    for (int r = 0; r < runs && !bad; r++)
      bad = pto_runtime_run(rt, e, in, out) != PTO_OK;
    if (!bad && pto_indexer_check(&d, &prm, q, k, w, idx, val, 0, nq, 0, msg,
                                  sizeof msg))
      bad = 1;
    free(q);
    free(k);
    free(w);
    free(val);
    free(idx);
  }
  if (bad)
    fprintf(stderr, "trace_app: %s\n", msg[0] ? msg : pto_executable_error(e));
  else
    printf("workload %s tasks %u workers %u runs %d ok\n", argv[1],
           pto_executable_num_tasks(e), pto_runtime_num_workers(rt), runs);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  return bad;
}
