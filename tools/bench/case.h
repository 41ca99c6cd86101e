/* tools/bench/case.h (internal to pto-bench): an operator benchmark
 * (indexer, attention) around the operator's own code: one driver for the
 * command and each case's flow (how many runs to time, finding the PyTorch
 * peer, compiling, running, checking a result over threads, --save,
 * --trace, running the peer on the case's inputs and reading its outputs
 * back), and the outcome as the result columns of a table row and as JSON
 * fields. The operator's presets, sizes, inputs, program and checker stay
 * in its command, given to the driver as a bench_workload. */
#ifndef PTO_TOOLS_BENCH_CASE_H
#define PTO_TOOLS_BENCH_CASE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/bench.h"
#include "bench/files.h"
#include "bench/harness.h"
#include "bench/peer.h"
#include "bench/preset.h"

/* How far a case got, on both sides. Zero it before the case. */
typedef struct bench_case_result {
  int pto_wrong;     /* PTO's result failed its check */
  int pto_checked;   /* PTO's result passed its check */
  int torch_ran;     /* the peer ran and reported times */
  int torch_checked; /* and its outputs passed the same check */
  bench_stats pto, torch;
  bench_stats against; /* PTO under --against (n 0: none), timed in turn */
  /* --dynamic (n 0: none): the dynamic program, timed in turn with the
   * static one; its compile and whether its result checked */
  bench_stats dynamic;
  double dynamic_compile_ms;
  int dynamic_checked, dynamic_wrong;
  /* --peak-each (n 0: not asked): the timed runs' fractions of the FMA
   * probe just before each, and the probes (GFLOP/s) */
  bench_stats peak_frac, peak_now;
  double compile_ms;
  uint32_t tasks;
  json_t *variants; /* the peer's {"name": median ms or null}; owned */
  char best[32];    /* the peer's fastest variant */
  double sim_ms;    /* --simulate: the simulated makespan (0: none) */
} bench_case_result;

void bench_case_result_free(bench_case_result *r); /* its variants */

/* ---- an operator command, run by one driver ------------------------------ */

/* The options every operator command has. A command's own options struct
 * begins with it, so the driver hands it back to the command's callbacks,
 * which reach their own fields from it. */
typedef struct bench_case_opts {
  bench_harness h;
  bench_preset_sel sel;
  /* --against's config, read once at start-up (NULL without it) */
  pto_config *against_cfg;
  /* --simulate's profile, opened once at start-up (NULL without it) */
  struct bench_sim *sim;
} bench_case_opts;

#define BENCH_CASE_MAX_IN 20
#define BENCH_CASE_MAX_OUT 5
/* What a case's buffers may take, inputs and both sides' outputs. */
#define BENCH_CASE_MAX_BYTES (16.0 * (1 << 30))

/* One case: the program's inputs and outputs in the program's order,
 * named as --save and the peer name their files. The command describes
 * them (init), the driver allocates their buffers, the command fills the
 * inputs (fill). A command's own case struct begins with it. */
typedef struct bench_case {
  const char *preset;
  double gflop; /* its work: how many runs are timed */
  int64_t rows; /* what the check spreads over the threads */
  size_t n_in, n_out;
  bench_array in[BENCH_CASE_MAX_IN];   /* names, dtypes, shapes */
  bench_array out[BENCH_CASE_MAX_OUT]; /* (their data unused) */
  /* the driver's buffers, of those dtypes and shapes (freed by it) */
  void *in_data[BENCH_CASE_MAX_IN];
  void *pto_out[BENCH_CASE_MAX_OUT];  /* where PTO writes out[i] */
  void *peer_out[BENCH_CASE_MAX_OUT]; /* where the peer's out[i] is read */
} bench_case;

/* Input i of c uniform in [lo, hi) from the seed's stream, drawn in f32
 * and, for a bf16 input, rounded to it (bench_fill_uniform{,_bf16}). */
void bench_case_fill_uniform(bench_case *c, size_t i, uint64_t seed,
                             uint64_t stream, float lo, float hi);

/* An operator command: its presets and what is its own in a case. */
typedef struct bench_workload {
  /* its presets; table->cmd names the command and the peer's workload */
  const bench_preset_table *table;
  /* the labels a --config sets tiles for, as the hint after a failed
   * compile names them: "\"indexer.qk\", \"indexer.topk\"" */
  const char *labels;
  size_t case_size; /* of its case struct, which begins with a bench_case */
  /* Which of its matmuls multiply bf16 operands on the table's bf16
   * engine where it has one (pto_matmul_engine(PTO_BF16)), as the headline
   * says it ("q.k^T"); the headline, the JSON's engine and the peak then
   * name that engine. NULL: they all widen bf16 to f32, on every table. */
  const char *bf16_native;
  /* Its own options: argv[*i] taken with its value (advancing *i): 1; not
   * one of them: 0; a bad value: -1 after printing why. NULL: none. */
  int (*arg)(bench_case_opts *x, int argc, char **argv, int *i);
  /* Case k into c (zeroed, case_size bytes): its preset, sizes and
   * parameters, gflop, rows and the arrays' descriptions. 0, or -1 after
   * printing why (sizes it does not take). */
  int (*init)(const bench_case_opts *x, int k, bench_case *c);
  /* The inputs into c->in_data from the seed. 0, or -1 when out of memory
   * (the driver says so). */
  int (*fill)(const bench_case_opts *x, bench_case *c);
  /* The operator's program for c (NULL when out of memory). */
  pto_program *(*program)(const bench_case *c);
  /* Optional (--dynamic): the operator's program for c with its sizes
   * dynamic dims, c's sizes their maxima, so that its executable-level
   * runs are at c's sizes. NULL: the command has no --dynamic, or handles
   * it in its run_case. */
  pto_program *(*program_dynamic)(const bench_case *c);
  /* Optional: the same with the tiles the operator chooses for machine m
   * instead of the host (--simulate on a machine that is not the measured
   * one). NULL: program's, tiled for the host. */
  pto_program *(*program_for)(const bench_case *c, const pto_machine *m);
  /* Checks rows [r0, r1) of outputs out (c's inputs): 0, or nonzero with
   * a message in msg. peer: the outputs are the peer's (PyTorch's bf16
   * matmuls round their results to bf16, so a command may allow it a
   * bf16 tolerance where PTO, summing in f32, gets the f32 one). */
  int (*check)(const bench_case *c, int peer, void *const *out, int64_t r0,
               int64_t r1, char *msg, size_t size);
  /* The case as meta.json says it (for --save and the peer). */
  json_t *(*meta)(const bench_case_opts *x, const bench_case *c);
  /* The heads of its own columns, before the result columns. */
  void (*head)(FILE *f);
  /* Case k's own columns into f (nm: its name, with '*' when a flag
   * changed the preset) and its JSON object from "workload" to "seed" and
   * any fields of its own; *gflop: its work. c: the case as init and fill
   * made it, or NULL when it could not be made. */
  json_t *(*report)(const bench_case_opts *x, int k, const bench_case *c,
                    const char *nm, int threads, FILE *f, double *gflop);
  /* Optional: a case's own flow instead of the driver's one compile and
   * run (a command of several steps or several PTO settings), built from
   * the pieces below; the same contract as the driver's flow: 0, or -1
   * (printed; res says how far it got). NULL: the driver's flow. */
  int (*run_case)(const bench_opts *o, const struct bench_workload *w,
                  const bench_case_opts *x, bench_case *c,
                  const pto_config *cfg, const bench_peer *peer, int threads,
                  bench_case_result *res);
  /* Optional: after case k's row and JSON object (j) are made, lines of
   * its own under the row and fields of its own in j; c as in report. */
  void (*after)(const bench_case_opts *x, const bench_case *c,
                const bench_case_result *res, FILE *f, json_t *j);
} bench_workload;

/* ---- the pieces of the driver's flow, for a run_case of its own ---------- */

/* Timed runs per case: --repeats, else 3 under --quick, else 5 above 20
 * GFLOP, else 10. */
int bench_case_repeats(const bench_opts *o, double gflop);
/* Checks `who`'s outputs out of case c with w->check over c->rows spread
 * on `threads` threads. 0, or -1 after printing "pto-bench CMD: PRESET:
 * WRONG RESULT from WHO: <the check's message>". */
int bench_case_check(const bench_opts *o, const bench_workload *w,
                     const bench_case *c, int threads, const char *who,
                     void *const *out);
/* --save: c's inputs, PTO's outputs (c->pto_out) and meta. 0, or -1. */
int bench_case_save(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, const bench_case *c);
/* The peer on c's inputs (`repeats` timed runs after one warm-up): its
 * times into res, its outputs into c->peer_out. 0, or -1 (printed). */
int bench_case_peer(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, const bench_case *c,
                    const bench_peer *peer, int threads, int repeats,
                    bench_case_result *res);

/* Runs command w (argv[0] its name) with x, its options struct with its
 * own defaults set: parses the options; makes the config and finds the
 * peer; measures the FMA peak; prints the headline and the table head.
 * Then per chosen preset: the case made (w->init; its buffers, refused
 * beyond BENCH_CASE_MAX_BYTES naming the preset's values; w->fill),
 * compiled (the hint naming w->labels when a config is to blame), run once
 * and checked, --save, a warm-up and the timed runs, --trace's extra run,
 * the runtime freed, the peer on the same inputs and its outputs checked;
 * and its outcome as a table row and a JSON object. The exit status: 0, 1
 * when a case failed, 2 on a usage error. */
int bench_case_main(const bench_opts *o, const bench_workload *w,
                    bench_case_opts *x, int argc, char **argv);

/* ---- the outcome in a table row and in JSON ------------------------------ */

/* The result columns' heads: thr, R, PTO ms, PyTorch ms, torch (variant),
 * ratio, PTO GF/s, %pk, compile, check; then a newline. */
void bench_case_print_head(FILE *f);
/* The result columns of a case with `gflop` of work, the FMA peak `peak`
 * (0: unknown) and a peer or not; then a newline. */
void bench_case_print(FILE *f, const bench_case_result *r, int threads,
                      double gflop, double peak, int have_peer);

/* Sets the outcome's fields in j: repeats, tasks, compile_ms, gflop,
 * peak_gflops, peak_isa, torch_version, pto_ms(_min, _max), pto_gflops,
 * pto_peak_fraction, pto_peak_fraction_each and peak_each_gflops
 * (--peak-each), torch_ms(_min, _max), torch_gflops, ratio,
 * torch_variant, torch_variants, check ("ok", "wrong", "failed") and
 * torch_check ("ok", "wrong", null without a peer's result); a figure
 * the case did not get is null. */
void bench_case_json(json_t *j, const bench_case_result *r, double gflop,
                     double peak, const char *peak_isa, const bench_peer *peer);

#endif /* PTO_TOOLS_BENCH_CASE_H */
