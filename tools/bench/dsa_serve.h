/* tools/bench/dsa_serve.h (internal to pto-bench): pto-bench dsa --preset
 * serve, the serving loop of continuous batching (bench/dsa_serve.c). */
#ifndef PTO_TOOLS_BENCH_DSA_SERVE_H
#define PTO_TOOLS_BENCH_DSA_SERVE_H

#include <stdio.h>

#include "bench/bench.h"

/* 1 when argv chooses a serving preset (--preset serve...): the command
 * is then dsa_serve_run's; -1 (printed: a usage error) when it mixes one
 * with other presets; else 0. */
int dsa_serve_wants(int argc, char **argv);
/* pto-bench dsa with a serving preset (argv[0] "dsa"). */
int dsa_serve_run(const bench_opts *o, int argc, char **argv);
/* Its part of pto-bench dsa --help. */
void dsa_serve_usage(FILE *f);

#endif /* PTO_TOOLS_BENCH_DSA_SERVE_H */
