/* tools/bench/bench.h (internal to pto-bench): the subcommands and what they
 * share: timing, medians, the machine's measured peak, progress and JSON. */
#ifndef PTO_TOOLS_BENCH_H
#define PTO_TOOLS_BENCH_H

#include "pto/pto.h"
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* Options every subcommand understands (parsed by pto-bench's main). */
typedef struct bench_opts {
  int json;     /* --json: one JSON array on stdout, tables on stderr */
  int quick;    /* --quick: smaller sizes and fewer repeats (CI, smoke) */
  int repeats;  /* --repeats N: timed repeats per case (0: the default) */
  int threads;  /* --threads N: worker threads (0: every core) */
  int progress; /* progress lines on stderr (off with --quiet) */
} bench_opts;

/* A subcommand: parses its own arguments (argv[0] is its name), returns the
 * process exit status (0 ok, 1 failure, 2 usage). */
typedef struct bench_cmd {
  const char *name;
  const char *summary;
  int (*run)(const bench_opts *o, int argc, char **argv);
  void (*usage)(FILE *f);
} bench_cmd;

extern const bench_cmd bench_indexer;
extern const bench_cmd bench_attention;
extern const bench_cmd bench_dsa;
extern const bench_cmd bench_runtime;
extern const bench_cmd bench_gemm;
extern const bench_cmd bench_softmax;
extern const bench_cmd bench_ops;
extern const bench_cmd bench_flash;
extern const bench_cmd bench_calibrate_cmd; /* not in `all` */

/* With --json, every command appends one object per case to this array
 * (json_array_append_new); pto-bench prints it at the end. */
json_t *bench_results(void);
/* This process prints no JSON at the end (a rank other than 0 of an MPI
 * run: rank 0 prints the run's), and whether one said so. */
void bench_results_keep(void);
int bench_results_kept(void);
/* Where tables go: stdout, or stderr with --json. */
FILE *bench_out(const bench_opts *o);

/* ---- shared helpers (tools/bench/util.c) --------------------------------- */

uint64_t bench_now_ns(void); /* monotonic */
/* Sorts v and returns its median. */
double bench_median(double *v, int n);
/* Prints "pto-bench <what>: <fmt>" on stderr when progress is on. */
void bench_progress(const bench_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The number of cores the benchmark runs on (threads option, or all). */
int bench_cores(const bench_opts *o);
/* This host as `threads` shared workers (cube and vector): 0, or -1 after
 * printing why on stderr, prefixed "pto-bench <cmd>: ". */
int bench_machine(const char *cmd, int threads, pto_machine *m);
/* The config a command starts from: the defaults, with PTO_CONFIG's file
 * merged in when it is set (as pto_compile does for a compile given no
 * config), so a run is retuned without new options; the command's own
 * options (machine, knobs) apply over it. NULL after printing why. */
pto_config *bench_config_new(const char *cmd);
/* A runtime on m (tracing runs when trace is set), or NULL after printing
 * why (pto_runtime_error(NULL): PTO_ISA's refusal included). */
pto_runtime *bench_runtime_new(const char *cmd, const pto_machine *m,
                               int trace);
/* Busy-waits ns nanoseconds (for synthetic tasks). */
void bench_spin_ns(uint64_t ns);
/* Sleeps ms milliseconds: between the two sides of a comparison, so the
 * side that just ran lets its spinning threads go to sleep. */
void bench_pause_ms(int ms);
/* OpenBLAS's kernel for the peers (the gemm's own calls, PyTorch's f32
 * matmuls in the peer process, which inherits the environment), set
 * before either loads it: on an AVX-512 CPU, an unset OPENBLAS_CORETYPE
 * becomes SkylakeX (Debian's 0.3.21 picks its AVX2 kernel on AVX-512
 * Zen), and one naming a core without AVX-512 is kept but warned about
 * on stderr, as it slows the peers. */
void bench_openblas_coretype(const char *cmd);
/* The f32 FMA peak of `threads` threads running at once, GFLOP/s, the best
 * of `repeats` probes with the widest vectors this CPU and OS run (*isa:
 * "AVX-512" or "AVX2"); 0 (and *isa "none") when neither runs or the
 * threads cannot start. */
double bench_peak_fma(int threads, int repeats, const char **isa);
/* Whether a matmul engine's name (pto_matmul_engine, "<isa>-<what it
 * computes in>") says it multiplies bf16 as it is ("avx512-bf16"), rather
 * than widening it to f32 ("avx512-f32"). NULL: no. */
int bench_engine_bf16(const char *engine);
/* The same for the instruction a matmul engine (pto_matmul_engine) runs
 * on: vdpbf16ps for "avx512-bf16" (*isa "AVX-512 BF16 (vdpbf16ps)"), f32
 * FMAs for every other engine, and for NULL. */
double bench_peak_engine(const char *engine, int threads, int repeats,
                         const char **isa);
/* *peak probed again (`repeats` probes of engine's instruction, as
 * bench_peak_engine) after a case, the best kept: a probe that ran while
 * a neighbour shared the cores reads low (half, on some VMs), and a case's
 * fraction of peak is only as honest as the best probe of the run so far.
 * A peak of 0 (not measured) stays 0. */
void bench_peak_refresh(double *peak, const char *engine, int threads,
                        int repeats);
/* One short probe (about 20 ms) of the same kind: the rate the machine
 * gives right now, for a run timed right after it (--peak-each). */
double bench_peak_fma_now(int threads);
/* The probes behind them (bench/peak.h), each only for a CPU that runs it:
 * `iters` rounds of FMAs per thread (20 million: about 0.1 s). */
double bench_peak_avx512(int threads, int repeats, uint64_t iters);
double bench_peak_avx2(int threads, int repeats, uint64_t iters);
double bench_peak_avx512bf16(int threads, int repeats, uint64_t iters);

/* STREAM's triad a[i] = b[i] + 3 * c[i] on `threads` OpenMP threads
 * (bench/stream.c, in pto-bench only): STREAM counts it as 12 bytes an
 * element (no write-allocate read of a). */
void bench_triad(float *restrict a, const float *restrict b,
                 const float *restrict c, size_t n, int threads);

#endif /* PTO_TOOLS_BENCH_H */
