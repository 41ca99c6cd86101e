/* tools/bench/dsa.h (internal to pto-bench): what pto-bench dsa's files
 * share: a case (its steps and what each side measured) and the time per
 * part read from a run's swimlane (bench/dsa_parts.c). */
#ifndef PTO_TOOLS_BENCH_DSA_H
#define PTO_TOOLS_BENCH_DSA_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/case.h"
#include "pto/dsa.h"

#define DSA_MAX_B 4096
#define DSA_MAX_STEPS 64

/* The chain's four parts, the stage barriers' prefixes in order; tasks of
 * no part (a join of the barriers, an output copy) count as "other". */
enum { DSA_PARTS = 4, DSA_OTHER = DSA_PARTS };
extern const char *const dsa_part_names[DSA_PARTS];

/* What one traced run's swimlane says per part: the busy time of its tasks
 * summed over the workers, and its span from its first task's start to its
 * last task's end; and the run's makespan. ms, summed over the steps. */
typedef struct dsa_parts {
  double busy[DSA_PARTS + 1], span[DSA_PARTS + 1], makespan;
  int traced; /* steps whose swimlane was read */
} dsa_parts;

/* Adds the swimlane in trace file path (pto_executable_write_trace's) to
 * p. 0, or -1 with the reason in err. */
int dsa_parts_add(dsa_parts *p, const char *path, char *err, size_t size);

/* One step of a case, on both PTO settings (0 MPMD, 1 stage barriers). */
typedef struct dsa_step_result {
  double compile_ms[2];
  /* --dynamic: the serving program bound to the step, and the MPMD
   * program's runs in the same turns */
  bench_stats dyn, dyn_static;
  double sim_ms[2]; /* --simulate: MPMD and stage barriers (0: none) */
  bench_stats run[2];
  uint32_t tasks[2];
  int64_t len_min, len_max;
} dsa_step_result;

typedef struct dsa_case {
  bench_case base; /* first: the driver hands it back */
  pto_dsa_dims d;
  pto_dsa_params prm;
  int small; /* the smoke dims */
  int64_t b, steps, tokens;
  int64_t n[DSA_MAX_B], len0[DSA_MAX_B]; /* new tokens; length at step 0 */
  int64_t blocks, max_blocks;
  /* what the run measured */
  int ran_steps;
  dsa_step_result step[DSA_MAX_STEPS];
  dsa_parts parts[2];
  int compile_counted;  /* steps > 1: each step compiles anew */
  bench_stats total[2]; /* all steps, compile included when counted */
  int bar_checked, bar_wrong;
  /* --dynamic: one compile of pto_dsa_serve_program for every step, at
   * the case's sizes as its maxima; its outputs and how they checked */
  int dynamic;
  double dyn_compile_ms;
  uint32_t dyn_tasks;
  void *dyn_out[PTO_DSA_OUTPUT_COUNT];
  int dyn_checked, dyn_wrong;
} dsa_case;

/* The smoke dims (D 64, Q 32, H 4, N 16, R 8, L 32, HI 4, DI 16, BS 4). */
pto_dsa_dims dsa_small_dims(void);
/* The rotary table row of a token at position pos: angle pos *
 * 10000^(-2i/R) for i < R/2, both halves alike (the rotate-half form). */
void dsa_rope_row(int64_t R, double pos, float *co, float *si);
/* Every weight of a case's inputs (indexed as pto_dsa_input_name's) from
 * the seed: projections uniform in +-sqrt(3 / fan_in), norms' gammas and
 * betas, the Hadamard matrix. */
void dsa_fill_weights(bench_case *bc, const pto_dsa_dims *d, uint64_t seed);

/* Step s of c: its lengths into len (c->b of them) and its description. */
pto_dsa_step dsa_step_of(const dsa_case *c, int64_t s, int64_t *len);

/* The lines under a case's row (per step and per part) and their JSON
 * fields (bench_workload.after). */
void dsa_after(const bench_case_opts *x, const bench_case *bc,
               const bench_case_result *res, FILE *f, json_t *j);

#endif /* PTO_TOOLS_BENCH_DSA_H */
