/* pto-demo: builds PyPTO's worked example, runs it through the reference
 * evaluator and checks it against a direct plain-C computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

/* fp32 against a double reference: abs 1e-5 / rel 1e-4 (ANCHORS.md). The
 * worst |got - want| / (1e-5 + 1e-4 |want|): 1 or less passes. */
static double worst(const float *got, const float *want, int n) {
  double w = 0;
  for (int i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]) / (1e-5 + 1e-4 * fabs(want[i]));
    w = e > w ? e : w;
  }
  return w;
}

static void usage(FILE *f) {
  fputs("usage: pto-demo [--seed N] [--machine host|ascend]\n"
        "Builds C = rowsum(matmul(A*2 + B, W)) (A, B 64x64, W 64x32) with the\n"
        "PTO program builder, evaluates it with the reference evaluator,\n"
        "compiles it (tiles, subgraphs, programs, tasks), runs the compiled\n"
        "tasks in order on this thread and on the parallel runtime (printing\n"
        "its trace summary); all must agree with a plain-C computation.\n"
        "Exit status 0 when they do.\n",
        f);
}

int main(int argc, char **argv) {
  unsigned seed = 1;
  const char *machine = "ascend";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--machine") && i + 1 < argc) {
      machine = argv[++i];
      if (strcmp(machine, "host") && strcmp(machine, "ascend")) {
        fprintf(stderr, "pto-demo: unknown machine '%s' (host or ascend)\n",
                machine);
        return 2;
      }
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
    A[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    B[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  }
  for (int i = 0; i < 64 * 32; i++)
    W[i] = (float)rand() / (float)RAND_MAX - 0.5f;
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
  double max_err = worst(C, ref, 64);
  printf("program '%s': %d inputs, %d outputs, %d tensor ops\n",
         pto_program_name(p), pto_program_num_inputs(p),
         pto_program_num_outputs(p), pto_program_num_ops(p));
  printf("reference evaluator: C[0..3] = %.6f %.6f %.6f %.6f, error vs plain C "
         "%.3g of tolerance\n",
         C[0], C[1], C[2], C[3], max_err);

  pto_config *cfg = pto_config_new();
  pto_machine m;
  if (!strcmp(machine, "ascend"))
    m = pto_machine_ascend();
  else
    pto_machine_host(&m);
  pto_executable *e = NULL;
  if (!cfg || pto_config_set_machine(cfg, &m) != PTO_OK ||
      pto_compile(p, cfg, &e) != PTO_OK) {
    fprintf(stderr, "pto-demo: compile failed: %s\n", pto_program_error(p));
    pto_config_free(cfg);
    pto_program_free(p);
    return 1;
  }
  pto_exe_stats s;
  pto_executable_stats(e, &s);
  printf("compiled for '%s': %u tile instructions, %u subgraphs, %u programs, "
         "%u tasks, %u edges in %.2f ms\n",
         m.name, s.tile_instructions, s.subgraphs, s.programs, s.tasks,
         s.edges, s.ms_total);
  void *cout[] = {C};
  st = pto_executable_run_serial(e, in, cout);
  if (st != PTO_OK) {
    fprintf(stderr, "pto-demo: run failed: %s\n", pto_executable_error(e));
    max_err = HUGE_VAL; /* a failed run fails the demo */
  } else {
    double err2 = worst(C, ref, 64);
    printf("compiled run (serial): error vs plain C %.3g of tolerance\n",
           err2);
    max_err = err2 > max_err ? err2 : max_err;
  }
  /* and on the parallel runtime: this host's workers, traced */
  pto_runtime_params rp = pto_runtime_params_default();
  rp.trace = 1;
  pto_runtime *rt = NULL;
  memset(C, 0, sizeof C);
  if ((st = pto_runtime_new(&rp, &rt)) != PTO_OK ||
      (st = pto_runtime_run(rt, e, in, cout)) != PTO_OK) {
    fprintf(stderr, "pto-demo: parallel run failed: %s\n",
            rt ? pto_executable_error(e) : pto_strerror(st));
    max_err = HUGE_VAL;
  } else {
    double err3 = worst(C, ref, 64);
    printf("compiled run (parallel, %u workers): error vs plain C %.3g of "
           "tolerance\n",
           pto_runtime_num_workers(rt), err3);
    max_err = err3 > max_err ? err3 : max_err;
    pto_executable_trace_summary(e, stdout);
  }
  pto_runtime_free(rt);
  printf("%s\n", max_err <= 1 ? "ok" : "MISMATCH");
  pto_executable_free(e);
  pto_config_free(cfg);
  pto_program_free(p);
  return max_err <= 1 ? 0 : 1;
}
