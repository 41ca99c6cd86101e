/* randprog.h (internal to the tests): random programs over the whole
 * builder API, compiled under random configs and checked against the
 * reference evaluator. Used by the end-to-end suite (test_e2e), the long
 * run (fuzz_diff) and the libFuzzer program target (tests/fuzz/).
 *
 * A case is a list of steps (inputs, ops, views, scopes, outputs) plus a
 * config and a list of runs. It is generated from a seed or from fuzzer
 * bytes, built into a pto_program, printed as a stand-alone C program, and
 * run: eval, compile, run serially and on runtimes, compare.
 *
 * Every generated tensor carries what the test knows of its values: an
 * interval, and one of three levels. GRID: multiples of 2^-q small enough
 * that every sum over them is exact in f32 in any order, so reductions and
 * matmul must be bit-exact too; EXACT: made by correctly rounded ops from
 * exact operands, so bit-exact; APPROX: an absolute error bound derived op
 * by op (exp/log/rsqrt within a few ulp, f32 sums in any order within
 * (n+1) u sum|x|, softmax, and everything downstream of them).
 *
 * About a quarter of the cases (chosen by a stream of their own, so the
 * steps stay what the seed made) declare dynamic dims on some axes of
 * their inputs and fills (randprog_dims.c): such a case is compiled once
 * and run at several bindings (extents of 0 and 1, tile boundaries, the
 * maxima, random ones; now and then one that breaks an equality the ops
 * recorded, which must be refused) against the evaluator at each, with
 * every output buffer starting from a pattern that what lies past the
 * extents must keep. */
#ifndef PTO_TESTS_RANDPROG_H
#define PTO_TESTS_RANDPROG_H

#include <stdint.h>
#include <stdio.h>

#include "pto/pto.h"

/* Bugs the generator can steer around, each behind its own switch: 1 =
 * the bug is open, avoid the pattern (or classify its symptom as known);
 * 0 = it is fixed, generate the pattern and check it. X(name, open): the
 * bugs listed as 0 are fixed (the regression tests in tests/test_random.c
 * keep them so); a bug found later is added here open until it is fixed.
 * PTO_RP_KNOWN="name,name" in the environment sets switches to 1, and
 * PTO_RP_FIXED="name,name" (or "all") to 0. */
#define RP_KNOWN_BUGS(X)                                                       \
  X(matmul_acc_alias, 0)   /* 1: acc whose data a subgraph loads twice */      \
  X(fusion_cycle, 0)       /* 2: fusion makes a task-graph cycle */            \
  X(l1_reuse_hang, 0)      /* 3: l1_reuse >= 2 on an overflowing matmul */     \
  X(huge_shapes, 0)        /* 4: derived shapes of 2^40 elements unchecked */  \
  X(fusion_parallelism, 0) /* 5: fusion joins all tasks or hits ERANGE */      \
  /* found by this test: */                                                    \
  X(dead_strict_gather, 0) /* eval fails on a strict gather no output needs */ \
  X(dead_op_store, 0)      /* merged instances store to no storage */          \
  X(slow_split_plan, 0) /* tiny tiles: an over-fused subgraph plans in n^2 */  \
  /* found by its dynamic cases: */                                            \
  X(softmax_batch_tail, 0)  /* fused softmax writes rows past a batch dim */   \
  X(empty_max_reduce, 0)    /* max/min over an extent of 0: eval gave 0 */     \
  X(empty_strict_gather, 0) /* D of 0: the run skipped it, eval: ERANGE */     \
  X(strict_gather_tail, 0)  /* checks index rows past the extent (stale) */    \
  X(topk_bcast_tail, 0)     /* masked topk of a broadcast: 0s past extents */  \
  /* a strict gather fused into a reader empty at the binding is skipped       \
   * with it: the run succeeds, the evaluator gives PTO_ERANGE */              \
  X(fused_empty_strict_gather, 1)

typedef struct rp_switches {
#define RP__SW(name, open) int name;
  RP_KNOWN_BUGS(RP__SW)
#undef RP__SW
} rp_switches;

/* Every open bug avoided, every fixed one generated. */
rp_switches rp_switches_default(void);
/* The defaults, then PTO_RP_KNOWN and PTO_RP_FIXED; returns -1 (and names
 * the word in msg) for an unknown name. */
int rp_switches_from_env(rp_switches *sw, char *msg, size_t size);
/* "matmul_acc_alias=1 fusion_cycle=1 ..." */
void rp_switches_print(const rp_switches *sw, FILE *out);

typedef struct rp_case rp_case;

rp_case *rp_generate(uint64_t seed, const rp_switches *sw);
/* From arbitrary bytes: each choice takes the next bytes (zeros once they
 * run out), so every byte string is a valid case. */
rp_case *rp_generate_bytes(const uint8_t *data, size_t size,
                           const rp_switches *sw);
/* No seed's case may hang in-process: those from bytes never set l1_reuse
 * >= 2 while l1_reuse_hang is on (a supervisor is what makes it safe). */
void rp_case_free(rp_case *c);
uint64_t rp_case_seed(const rp_case *c);
int rp_case_num_ops(const rp_case *c);
/* Its dynamic dims (0: a static case) and the bindings it runs at. */
int rp_case_num_dims(const rp_case *c);
int rp_case_num_binds(const rp_case *c);

/* The case as a C program against the public API (pto/pto.h) that builds
 * the program, fills the inputs, compiles under the case's config, runs
 * serially and on each of the case's runtimes (a dynamic case: at each of
 * its bindings) and compares with the evaluator; it exits 0 when
 * everything matches. */
void rp_print_c(const rp_case *c, FILE *out);

typedef enum rp_outcome {
  RP_PASS,  /* every run matched the evaluator */
  RP_SKIP,  /* nothing to compare: the config's memory cannot hold it */
  RP_KNOWN, /* a known bug's pattern or symptom, switched on */
  RP_FAIL,  /* a finding */
  RP_OUTCOME_COUNT
} rp_outcome;

/* Stages, for hang and crash reports. */
#define RP_STAGES(X)                                                           \
  X(IDLE)                                                                      \
  X(GENERATE) X(BUILD) X(EVAL) X(COMPILE) X(COMPILE_L1_REUSE) X(SERIAL)        \
      X(RUNTIME) X(COMPARE)
typedef enum rp_stage {
#define RP__ST(n) RP_STAGE_##n,
  RP_STAGES(RP__ST)
#undef RP__ST
      RP_STAGE_COUNT
} rp_stage;
const char *rp_stage_name(int stage);

/* Where a run is, written as it goes (a supervisor reads it from shared
 * memory to name the seed and stage of a hang or crash). */
typedef struct rp_progress {
  volatile uint64_t seed;
  volatile int stage;
  volatile uint64_t beat; /* bumped at every stage change */
} rp_progress;

typedef struct rp_env rp_env;
/* Runtimes are made on demand and kept: 1-3 workers, shared or dedicated,
 * every policy. progress may be NULL. */
rp_env *rp_env_new(rp_progress *progress);
void rp_env_free(rp_env *env);

/* Only the serial executor, no runtimes (the libFuzzer targets). */
void rp_env_serial_only(rp_env *env, int on);
/* n more runs on each of a case's runtimes (races that show rarely). */
void rp_env_repeat(rp_env *env, int n);

/* Runs the case; on RP_FAIL (and RP_KNOWN, RP_SKIP) msg says why. */
rp_outcome rp_run(rp_env *env, const rp_case *c, char *msg, size_t size);
/* The same under a config of the caller's (NULL: the defaults) instead of
 * the case's. With the l1_reuse_hang switch on, a copy of cfg with every
 * l1_reuse the case's ops can see set to 1 is used. */
rp_outcome rp_run_config(rp_env *env, const rp_case *c, const pto_config *cfg,
                         char *msg, size_t size);

/* A smaller case that fails the same way (each candidate runs in a child
 * process, so crashes and hangs minimize too): outputs, dead ops, scopes,
 * dims, bindings, config settings and runtimes removed one at a time.
 * NULL (and msg says why) when c does not fail; else msg is the failure. */
rp_case *rp_minimize(const rp_case *c, double timeout_s, char *msg, size_t size,
                     FILE *log);

/* Seeds [start, start + count) in a child process watched by this one: a
 * seed running longer than timeout_s, or a crash, is reported with its seed
 * and stage and the child restarts after it. Each failing seed's message
 * and C program go to out (program_dir non-NULL: also to
 * program_dir/seed-<seed>.c). */
typedef struct rp_totals {
  uint64_t seeds, by[RP_OUTCOME_COUNT], hangs, crashes, ops;
  uint64_t first_fail;     /* UINT64_MAX if none */
  uint64_t dynamic, binds; /* cases with dynamic dims, their bindings */
} rp_totals;
int rp_supervise(uint64_t start, uint64_t count, const rp_switches *sw,
                 double timeout_s, const char *program_dir, int verbose,
                 FILE *out, rp_totals *totals);

#endif /* PTO_TESTS_RANDPROG_H */
