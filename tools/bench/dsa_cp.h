/* tools/bench/dsa_cp.h (internal to pto-bench): pto-bench dsa --preset
 * decode-long, the context-parallel decode over MPI ranks
 * (bench/dsa_cp.c). */
#ifndef PTO_TOOLS_BENCH_DSA_CP_H
#define PTO_TOOLS_BENCH_DSA_CP_H

#include <stdio.h>

#include "bench/bench.h"

/* 1 when argv chooses a decode-long preset (the command is then
 * dsa_cp_run's); -1 (printed: a usage error) when it mixes one with other
 * presets; else 0. */
int dsa_cp_wants(int argc, char **argv);
/* pto-bench dsa with a decode-long preset (argv[0] "dsa"). */
int dsa_cp_run(const bench_opts *o, int argc, char **argv);
/* Its part of pto-bench dsa --help. */
void dsa_cp_usage(FILE *f);

#endif /* PTO_TOOLS_BENCH_DSA_CP_H */
