/* fuzz_diff: the long run of the random differential test (randprog.h).
 *
 *   fuzz_diff [--seeds N] [--start S] [--timeout SEC] [--dir DIR] [-v]
 *   fuzz_diff --print-c SEED      the case as a stand-alone C program
 *   fuzz_diff --run SEED [--repeat N]  one seed in this process (N more
 *                                 runs on each runtime: races)
 *   fuzz_diff --minimize SEED     a smaller failing case, as C
 *
 * A case with dynamic dims runs at each of its bindings (randprog.h); the
 * summary counts them. Seeds run in a child process watched by this one; a
 * hang (no progress for --timeout seconds) or a crash is reported with its
 * seed and stage, and each failing seed's C program is printed (and written
 * to DIR/seed-S.c).
 * PTO_RP_FIXED="name,..." checks known bugs as fixed (see randprog.h).
 * Exit status: 0 when no seed failed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/randprog.h"

static void usage(FILE *o) {
  fprintf(o, "usage: fuzz_diff [--seeds N] [--start S] [--timeout SEC] "
             "[--dir DIR] [-v|-vv]\n"
             "       fuzz_diff --print-c SEED | --run SEED [--repeat N] | "
             "--minimize SEED\n"
             "env PTO_RP_KNOWN=name,... to avoid an open bug's pattern,\n"
             "    PTO_RP_FIXED=name,...|all to check it (the default):\n"
             "  matmul_acc_alias fusion_cycle l1_reuse_hang huge_shapes "
             "fusion_parallelism\n  dead_strict_gather dead_op_store "
             "slow_split_plan softmax_batch_tail\n  empty_max_reduce "
             "empty_strict_gather strict_gather_tail\n  topk_bcast_tail "
             "fused_empty_strict_gather\n");
}

int main(int argc, char **argv) {
  uint64_t start = 1, count = 1000;
  double timeout = 30;
  const char *dir = NULL;
  int verbose = 0, repeat = 0;
  char msg[1024];
  rp_switches sw;
  if (rp_switches_from_env(&sw, msg, sizeof msg)) {
    fprintf(stderr, "fuzz_diff: %s\n", msg);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--seeds") && v) {
      count = strtoull(v, NULL, 0);
      i++;
    } else if (!strcmp(a, "--start") && v) {
      start = strtoull(v, NULL, 0);
      i++;
    } else if (!strcmp(a, "--timeout") && v) {
      timeout = atof(v);
      i++;
    } else if (!strcmp(a, "--dir") && v) {
      dir = v;
      i++;
    } else if (!strcmp(a, "--repeat") && v) {
      repeat = atoi(v);
      i++;
    } else if (!strcmp(a, "-v")) {
      verbose = 1;
    } else if (!strcmp(a, "-vv")) {
      verbose = 2;
    } else if (!strcmp(a, "--print-c") && v) {
      rp_case *c = rp_generate(strtoull(v, NULL, 0), &sw);
      rp_print_c(c, stdout);
      rp_case_free(c);
      return 0;
    } else if (!strcmp(a, "--run") && v) {
      rp_case *c = rp_generate(strtoull(v, NULL, 0), &sw);
      rp_env *env = rp_env_new(NULL);
      rp_env_repeat(env, repeat);
      rp_outcome r = rp_run(env, c, msg, sizeof msg);
      static const char *names[] = {"pass", "skip", "known", "FAIL"};
      printf("seed %s: %s %s\n", v, names[r], msg);
      rp_env_free(env);
      rp_case_free(c);
      return r == RP_FAIL;
    } else if (!strcmp(a, "--minimize") && v) {
      rp_case *c = rp_generate(strtoull(v, NULL, 0), &sw);
      rp_case *m = rp_minimize(c, timeout, msg, sizeof msg, stderr);
      if (m) {
        printf("/* minimized from seed %s (%d ops to %d): %s */\n", v,
               rp_case_num_ops(c), rp_case_num_ops(m), msg);
        rp_print_c(m, stdout);
      } else
        fprintf(stderr, "fuzz_diff: seed %s: %s\n", v, msg);
      rp_case_free(m);
      rp_case_free(c);
      return m ? 0 : 1;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  printf("fuzz_diff: seeds %" PRIu64 "..%" PRIu64 ", timeout %.0f s, ", start,
         start + count - 1, timeout);
  rp_switches_print(&sw, stdout);
  printf("\n");
  fflush(stdout);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  rp_totals tot;
  if (rp_supervise(start, count, &sw, timeout, dir, verbose, stdout, &tot)) {
    perror("fuzz_diff");
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("fuzz_diff: %" PRIu64 " seeds (%" PRIu64 " ops; %" PRIu64
         " with dynamic dims, at %" PRIu64 " bindings) in %.1f s: %" PRIu64
         " pass, %" PRIu64 " skip (capacity), %" PRIu64 " known, %" PRIu64
         " fail (%" PRIu64 " hangs, %" PRIu64 " crashes)\n",
         tot.seeds, tot.ops, tot.dynamic, tot.binds, s, tot.by[RP_PASS],
         tot.by[RP_SKIP], tot.by[RP_KNOWN], tot.by[RP_FAIL], tot.hangs,
         tot.crashes);
  if (tot.by[RP_FAIL])
    printf("fuzz_diff: first failing seed %" PRIu64 "\n", tot.first_fail);
  return tot.by[RP_FAIL] ? 1 : 0;
}
