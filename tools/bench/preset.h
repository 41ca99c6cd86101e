/* tools/bench/preset.h (internal to pto-bench): named workload sizes
 * ("presets") of an operator benchmark, chosen with --preset NAME[,NAME...]
 * or all, each dimension also settable by its own flag (--s1 256), which
 * then applies to every chosen preset. The command declares its parameters
 * and presets as tables; this module parses, validates and reports. */
#ifndef PTO_TOOLS_BENCH_PRESET_H
#define PTO_TOOLS_BENCH_PRESET_H

#include <stdint.h>
#include <stdio.h>

#define BENCH_PRESET_MAX_PARAMS 12
#define BENCH_PRESET_MAX_CASES 16

typedef struct bench_param {
  const char *name;  /* "s1": flag --s1, JSON key "s1" */
  const char *label; /* "S1": in tables and usage */
  int64_t lo, hi;    /* accepted values */
} bench_param;

typedef struct bench_preset {
  const char *name;
  int64_t v[BENCH_PRESET_MAX_PARAMS]; /* in the order of the parameters */
} bench_preset;

typedef struct bench_preset_table {
  const char *cmd; /* messages say "pto-bench <cmd>: ..." */
  const bench_param *params;
  int n_params;
  const bench_preset *presets;
  int n_presets;
  const char *dflt;  /* run when none is chosen */
  const char *quick; /* run when none is chosen under --quick */
} bench_preset_table;

/* What the command line chose. Zero it before parsing. */
typedef struct bench_preset_sel {
  int n;                                  /* cases chosen */
  int idx[BENCH_PRESET_MAX_CASES];        /* their presets, in order */
  int64_t set[BENCH_PRESET_MAX_PARAMS];   /* values given by flag */
  unsigned char given[BENCH_PRESET_MAX_PARAMS];
} bench_preset_sel;

/* Takes argv[*i] when it is --preset or a parameter's flag, with its value
 * (advancing *i): 1. Not one of them: 0. A bad value or an unknown preset:
 * -1 after printing why on stderr (a usage error). */
int bench_preset_arg(const bench_preset_table *t, bench_preset_sel *s,
                     int argc, char **argv, int *i);
/* When no preset was chosen: the quick one under --quick, else the
 * default. */
void bench_preset_finish(const bench_preset_table *t, bench_preset_sel *s,
                         int quick);
/* Case k's name and values (flags override the preset's). */
const char *bench_preset_name(const bench_preset_table *t,
                              const bench_preset_sel *s, int k);
void bench_preset_values(const bench_preset_table *t,
                         const bench_preset_sel *s, int k, int64_t *v);
/* 1 when a flag changed case k's preset values. */
int bench_preset_changed(const bench_preset_table *t,
                         const bench_preset_sel *s, int k);

/* The presets as a usage table ("  smoke      B=1 S1=16 ..."). */
void bench_preset_usage(const bench_preset_table *t, FILE *f);

/* An integer option's value in [lo, hi], or -1 after printing
 * "pto-bench <cmd>: <opt> needs an integer in [lo, hi], got 'v'". */
int bench_parse_i64(const char *cmd, const char *opt, const char *v,
                    int64_t lo, int64_t hi, int64_t *out);
/* A finite number in [lo, hi], or -1 after printing
 * "pto-bench <cmd>: <opt> needs a number in [lo, hi], got 'v'". */
int bench_parse_f64(const char *cmd, const char *opt, const char *v,
                    double lo, double hi, double *out);

#endif /* PTO_TOOLS_BENCH_PRESET_H */
