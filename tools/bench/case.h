/* tools/bench/case.h (internal to pto-bench): one case of an operator
 * benchmark (indexer, attention) around the operator's own code: how many
 * runs to time, finding the PyTorch peer, checking a result over threads,
 * --save, running the peer on the case's inputs and reading its outputs
 * back, and the outcome as the result columns of a table row and as JSON
 * fields. The operator's sizes, inputs and checker stay in its command. */
#ifndef PTO_TOOLS_BENCH_CASE_H
#define PTO_TOOLS_BENCH_CASE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/bench.h"
#include "bench/files.h"
#include "bench/harness.h"
#include "bench/parallel.h"
#include "bench/peer.h"

/* How far a case got, on both sides. Zero it before the case. */
typedef struct bench_case_result {
  int pto_wrong;     /* PTO's result failed its check */
  int pto_checked;   /* PTO's result passed its check */
  int torch_ran;     /* the peer ran and reported times */
  int torch_checked; /* and its outputs passed the same check */
  bench_stats pto, torch;
  double compile_ms;
  uint32_t tasks;
  json_t *variants; /* the peer's {"name": median ms or null}; owned */
  char best[32];    /* the peer's fastest variant */
} bench_case_result;

void bench_case_result_free(bench_case_result *r); /* its variants */

/* Timed runs per case: --repeats, else 3 under --quick, else 5 above 20
 * GFLOP, else 10. */
int bench_case_repeats(const bench_opts *o, double gflop);

/* The peer unless --no-peer: on success *p and p; when none is found, one
 * line on stderr saying why and how to install it, and NULL (the command
 * then reports PTO alone). */
const bench_peer *bench_case_peer(const bench_opts *o, const bench_harness *h,
                                  bench_peer *p);

/* Checks `who`'s result of case `preset` with fn over rows [0, rows)
 * spread on `threads` threads, with progress on stderr. 0, or -1 after
 * printing "pto-bench CMD: PRESET: WRONG RESULT from WHO: <fn's message>". */
int bench_case_check(const bench_opts *o, const char *cmd, const char *preset,
                     const char *who, int threads, int64_t rows,
                     bench_rows_fn fn, void *ctx);

/* --save: the arrays and meta into h->save_dir (its PRESET subdirectory
 * when several presets run). 0 (also without --save), or -1 (printed). */
int bench_case_save(const bench_opts *o, const bench_harness *h,
                    const char *preset, int several, const bench_array *a,
                    size_t n, const json_t *meta);

/* The peer on a case: the inputs and meta written into a private
 * directory, the peer's workload of the command's name (h->cmd) run there on
 * `threads` threads
 * (`repeats` timed runs after one warm-up), its fastest variant's times
 * into r->torch, r->best and r->variants (r->torch_ran set), then its
 * outputs read into outputs[i].data, which must be writable and exactly
 * of the dtype and shape given (a file that is not: an error naming both).
 * 0, or -1 after printing why. */
int bench_case_peer_run(const bench_opts *o, const bench_harness *h,
                        const char *preset, const bench_peer *peer,
                        const bench_array *inputs, size_t n_in,
                        const json_t *meta, const bench_array *outputs,
                        size_t n_out, int threads, int repeats,
                        bench_case_result *r);

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
 * pto_peak_fraction, torch_ms(_min, _max), torch_gflops, ratio,
 * torch_variant, torch_variants, check ("ok", "wrong", "failed") and
 * torch_check ("ok", "wrong", null without a peer's result); a figure
 * the case did not get is null. */
void bench_case_json(json_t *j, const bench_case_result *r, double gflop,
                     double peak, const char *peak_isa, const bench_peer *peer);

#endif /* PTO_TOOLS_BENCH_CASE_H */
