/* tools/bench/harness.h (internal to pto-bench): what the operator
 * benchmarks (indexer, attention) share around their own code: the common
 * options (--seed --save --config --trace --python --peer-script
 * --no-peer), the config a case compiles with, seeded inputs, timing
 * statistics, and the PTO side of a case: compile once, run on a runtime
 * of every core, time, trace, and free the runtime before a peer runs. */
#ifndef PTO_TOOLS_BENCH_HARNESS_H
#define PTO_TOOLS_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/bench.h"

typedef struct bench_harness {
  const char *cmd;         /* "indexer" */
  uint64_t seed;           /* --seed N (default 1) */
  const char *save_dir;    /* --save DIR */
  const char *config_path; /* --config FILE */
  const char *against;     /* --against FILE: a second config, timed in turn */
  const char *trace_path;  /* --trace FILE */
  const char *python;      /* --python PATH: this interpreter only */
  const char *peer_script; /* --peer-script FILE: another peer script */
  int no_peer;             /* --no-peer: PTO alone */
  int peak_each;           /* --peak-each: a short FMA probe before each
                              timed PTO run */
  pto_dtype dtype;         /* --dtype f32|bf16: the operator's inputs
                              that the cube reads (default f32) */
  const char *simulate;    /* --simulate MACHINE (tools/bench/sim.h) */
  int dynamic;             /* --dynamic: also the operator's program with
                              its sizes dynamic, timed in turn */
} bench_harness;

/* The defaults (seed 1, nothing else set). */
bench_harness bench_harness_default(const char *cmd);
/* Takes argv[*i] when it is one of the common options, with its value
 * (advancing *i): 1; not one: 0; a bad value: -1 after printing why. */
int bench_harness_arg(bench_harness *h, int argc, char **argv, int *i);
/* The common options' lines for a command's usage text. */
void bench_harness_usage(FILE *f);

/* Where case `name` goes when `several` cases run: path itself for one
 * case; for several, path/<name> (is_dir) or path with "-<name>" before
 * its extension ("trace.json" -> "trace-medium.json"). -1 if too long. */
int bench_case_path(char *buf, size_t size, const char *path,
                    const char *name, int several, int is_dir);

/* A config for `threads` shared workers of this host with --config's file
 * loaded over it (its machine, knobs and label overrides win), or NULL
 * after printing why (the file's own message when it does not load). */
pto_config *bench_harness_config(const bench_harness *h, int threads);
/* The same with --against's file in place of --config's; NULL without
 * --against (or on an error, printed: *failed set). */
pto_config *bench_harness_against(const bench_harness *h, int threads,
                                  int *failed);

/* n floats uniform in [lo, hi), the same for the same (seed, stream) on
 * every machine (splitmix64). */
void bench_fill_uniform(float *x, size_t n, uint64_t seed, uint64_t stream,
                        float lo, float hi);
/* The same values rounded to bf16 (nearest even), as their 16 bits. */
void bench_fill_uniform_bf16(uint16_t *x, size_t n, uint64_t seed,
                             uint64_t stream, float lo, float hi);
/* bf16 bits h as f32 (exact). */
float bench_bf16_f32(uint16_t h);
/* "f32" or "bf16", as --dtype spells them. */
const char *bench_dtype_flag(pto_dtype dt);

/* The generator behind it, for inputs other than uniform floats: the same
 * numbers for the same (seed, stream) on every machine. */
typedef struct bench_rng {
  uint64_t s;
} bench_rng;
bench_rng bench_rng_new(uint64_t seed, uint64_t stream);
uint64_t bench_rng_next(bench_rng *r);
/* Uniform in [0, n), n >= 1 (rejection, no modulo bias). */
uint64_t bench_rng_below(bench_rng *r, uint64_t n);
/* k distinct values of [0, n) (k <= n <= INT32_MAX + 1), each k-subset
 * equally likely, in random order, into out. mark: n bytes of zeros,
 * left zero (scratch, so drawing many rows costs O(k) each: Floyd's
 * sampling, then a shuffle). */
void bench_draw_distinct(bench_rng *r, int64_t n, int64_t k, int32_t *out,
                         unsigned char *mark);

/* Medians with their spread. */
typedef struct bench_stats {
  int n;
  double median, min, max, q1, q3;
} bench_stats;
/* Sorts v (n >= 1). */
bench_stats bench_stats_of(double *v, int n);

/* ---- the PTO side of a case ----------------------------------------------- */

typedef struct bench_pto {
  const char *cmd;
  const pto_config *cfg;
  pto_executable *e;
  pto_runtime *rt;
  double compile_ms; /* pto_compile alone */
  uint32_t tasks;
} bench_pto;

/* Compiles p with cfg (timed). 0, or -1 after printing why. */
int bench_pto_compile(bench_pto *r, const char *cmd, pto_program *p,
                      const pto_config *cfg);
/* Starts a runtime with cfg's machine and policy. 0, or -1 (printed). */
int bench_pto_start(bench_pto *r);
/* One run on the runtime. 0, or -1 after printing the executable's error. */
int bench_pto_run(bench_pto *r, const void *const *in, void *const *out);
/* warmup untimed runs, then `repeats` timed ones; 0 or -1 (printed). */
int bench_pto_time(bench_pto *r, const void *const *in, void *const *out,
                   int warmup, int repeats, bench_stats *st);
/* The timed runs' times into t[0..repeats), and with probe, a short FMA
 * probe (bench_peak_fma_now on `threads` threads, the workers asleep
 * first) before every run, its GFLOP/s into probe[0..repeats): a neighbour
 * that slows the machine for seconds slows a run and the probe just before
 * it alike. Without probe the runs go back to back (bench_pto_time). 0 or
 * -1 (printed). */
int bench_pto_time_probed(bench_pto *r, const void *const *in, void *const *out,
                          int warmup, int repeats, int threads, double *t,
                          double *probe);
/* The same for two executables in turn (r[0], r[1], r[0], ...; warmup
 * rounds untimed), each on its own runtime with its inputs and outputs,
 * so drift and neighbours on a shared machine weigh on both alike: the
 * fair way to compare two settings. Before each run the other runtime's
 * workers are left time to fall asleep. 0 or -1 (printed). */
int bench_pto_time_pair(bench_pto *const r[2], const void *const *const in[2],
                        void *const *const out[2], int warmup, int repeats,
                        bench_stats st[2]);
/* Frees the runtime: its workers stop spinning, so a peer that runs next
 * has every core. bench_pto_start starts it again. */
void bench_pto_stop(bench_pto *r);
/* e run twice on a fresh traced runtime rt, the second run the one its
 * trace keeps: the first touches the workers' new scratchpads (huge pages
 * faulted in, compacted by the kernel: up to 8 ms in the first task's
 * first TLOAD, 14% of a decode run's swimlane), which the timed runs,
 * on a runtime that ran before, never pay. */
pto_status bench_traced_run(pto_runtime *rt, pto_executable *e,
                            const void *const *in, void *const *out);
/* A fresh runtime of r's settings that traces, r's own stopped first (its
 * workers would compete); NULL (printed) if it cannot start. The caller
 * frees it. */
pto_runtime *bench_pto_traced_runtime(bench_pto *r);
/* One extra run on a tracing runtime (the main one stopped first, and
 * warmed by bench_traced_run): writes the swimlane to path (Chrome trace
 * JSON) and its summary to stderr. */
int bench_pto_trace(bench_pto *r, const void *const *in, void *const *out,
                    const char *path);
void bench_pto_free(bench_pto *r); /* runtime and executable */

#endif /* PTO_TOOLS_BENCH_HARNESS_H */
