/* tools/bench/ops.h (internal to pto-bench): the operators of `pto-bench
 * ops` (bench/ops_defs.c), each written as a user would write it with the
 * public tensor ops, no tile shape set, and its plain-C reference, one row
 * at a time in double; the command (bench/ops.c) builds, times and checks
 * them all alike from this table. */
#ifndef PTO_TOOLS_BENCH_OPS_H
#define PTO_TOOLS_BENCH_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "pto/pto.h"

#define OPS_MAX_DIMS 4
#define OPS_MAX_OUTPUTS 2

typedef struct ops_def {
  const char *name; /* --op NAME, the peer's name for it too */
  const char *what; /* one line for --list and --help */
  /* "tensor" or "expert" for the operators of `pto-bench flash` (written
   * as tensor ops, or as a tile program), which `ops` runs only when
   * --op names them; NULL for the rest */
  const char *mode;
  /* its sizes, default and --quick, in the order build() takes them */
  int64_t d[OPS_MAX_DIMS], dq[OPS_MAX_DIMS];
  /* the largest relative error the check allows (ops_rel_err's) */
  double tol;
  /* rows checked, spread evenly from the first to the last (0: all) */
  int64_t check_rows;
  /* the outputs' names, in the order build() declares them */
  const char *outputs[OPS_MAX_OUTPUTS];
  /* the program; its inputs are named as the peer reads them */
  pto_program *(*build)(const int64_t *d);
  /* "8192x4096" for the table */
  void (*shape)(const int64_t *d, char *buf, size_t size);
  /* the operator's flops (0: none worth counting: a memory-bound op) */
  double (*flops)(const int64_t *d);
  /* fills input i's n elements; NULL: uniform in [-1, 1), f32 */
  void (*fill)(const int64_t *d, int i, void *buf, size_t n, uint64_t seed);
  /* rows of the check (each output's rows: its leading dims flattened) */
  int64_t (*rows)(const int64_t *d);
  /* doubles of scratch check_row needs for one row */
  size_t (*scratch_size)(const int64_t *d);
  /* the worst relative error in row r of the outputs out[] against the
   * reference computed from in[] (NaN or inf count as infinitely wrong) */
  double (*check_row)(const int64_t *d, const void *const *in,
                      const void *const *out, int64_t r, double *scratch);
} ops_def;

extern const ops_def bench_ops_defs[];
extern const size_t bench_ops_count;

/* Uniform in [-1, 1) times scale, the same for the same seed and index on
 * every machine. */
void ops_fill_uniform(float *buf, size_t n, uint64_t seed, double scale);
/* max_j |got[j] - ref[j]| / max(|ref[j]|, rms(ref)): relative, except that
 * entries below the row's root-mean-square are measured against it (a sum
 * that cancels to near 0 keeps the absolute error of its terms); NaN and
 * inf give INFINITY. */
double ops_rel_err(const float *got, const double *ref, int64_t n);

#endif /* PTO_TOOLS_BENCH_OPS_H */
