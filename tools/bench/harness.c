/* The operator benchmarks' shared options and PTO side (bench/harness.h). */
#include <stdlib.h>
#include <string.h>

#include "bench/harness.h"
#include "bench/preset.h"

bench_harness bench_harness_default(const char *cmd) {
  bench_harness h;
  memset(&h, 0, sizeof h);
  h.cmd = cmd;
  h.seed = 1;
  return h;
}

int bench_harness_arg(bench_harness *h, int argc, char **argv, int *i) {
  static const struct {
    const char *opt;
    size_t off;
  } paths[] = {
      {"--save", offsetof(bench_harness, save_dir)},
      {"--config", offsetof(bench_harness, config_path)},
      {"--against", offsetof(bench_harness, against)},
      {"--trace", offsetof(bench_harness, trace_path)},
      {"--python", offsetof(bench_harness, python)},
      {"--peer-script", offsetof(bench_harness, peer_script)},
      {"--simulate", offsetof(bench_harness, simulate)},
  };
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (!strcmp(a, "--peak-each")) {
    h->peak_each = 1;
    return 1;
  }
  if (!strcmp(a, "--dynamic")) {
    h->dynamic = 1;
    return 1;
  }
  if (!strcmp(a, "--no-peer")) {
    h->no_peer = 1;
    return 1;
  }
  if (!strcmp(a, "--dtype")) {
    ++*i;
    if (v && !strcmp(v, "f32")) {
      h->dtype = PTO_F32;
    } else if (v && !strcmp(v, "bf16")) {
      h->dtype = PTO_BF16;
    } else {
      fprintf(stderr, "pto-bench %s: --dtype: '%s' is neither f32 nor bf16\n",
              h->cmd, v ? v : "");
      return -1;
    }
    return 1;
  }
  if (!strcmp(a, "--seed")) {
    int64_t s;
    ++*i;
    if (bench_parse_i64(h->cmd, a, v, 0, INT64_MAX, &s))
      return -1;
    h->seed = (uint64_t)s;
    return 1;
  }
  for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
    if (strcmp(a, paths[k].opt))
      continue;
    ++*i;
    if (!v || !*v) {
      fprintf(stderr, "pto-bench %s: %s needs a %s\n", h->cmd, a,
              k == 0                                ? "directory"
              : !strcmp(paths[k].opt, "--simulate") ? "machine"
                                                    : "file");
      return -1;
    }
    *(const char **)(void *)((char *)h + paths[k].off) = v;
    return 1;
  }
  return 0;
}

void bench_harness_usage(FILE *f) {
  fputs("  --seed N         inputs drawn from seed N (default 1)\n"
        "  --save DIR       write the inputs and PTO's outputs as .npy files\n"
        "                   and meta.json into DIR (DIR/PRESET/ when several\n"
        "                   presets run)\n"
        "  --config FILE    a tuning config (JSON: machine, knobs, label\n"
        "                   overrides such as \"indexer.qk\"; docs/config.md)\n"
        "  --against FILE   a second config: PTO also runs under it, its\n"
        "                   result checked, its timed runs alternating with\n"
        "                   --config's (so a noisy machine weighs on both\n"
        "                   alike); a line under the row gives both medians\n"
        "                   and their ratio (not for dsa)\n"
        "  --trace FILE     one extra traced PTO run (after a warm-up run on\n"
        "                   its runtime): its swimlane as Chrome trace JSON\n"
        "                   in FILE (FILE-PRESET.json when several presets\n"
        "                   run), its summary on stderr\n"
        "  --python PATH    the interpreter for the PyTorch peer (default:\n"
        "                   /usr/bin/python3, then python3 on PATH, the first\n"
        "                   that imports torch and numpy)\n"
        "  --peer-script F  another peer script (default: pto_bench_torch.py\n"
        "                   beside pto-bench or in ../share/pto/)\n"
        "  --no-peer        time PTO alone\n"
        "  --peak-each      a 20 ms FMA probe before each timed PTO run (its\n"
        "                   workers asleep first): a line under the row gives\n"
        "                   the median of the runs' fractions of the probe\n"
        "                   just before each, which a neighbour's load slows\n"
        "                   alike (not with --against; not for dsa)\n"
        "  --dynamic        also the operator's program with its sizes dynamic\n"
        "                   dims, the case's sizes their maxima, compiled\n"
        "                   once and bound to them (dsa: to each step), its\n"
        "                   result checked and its runs timed in turn with\n"
        "                   the static program's: a line under the row gives\n"
        "                   both and their ratio (what compiling once costs\n"
        "                   at equal sizes)\n"
        "  --dtype T        f32 (default) or bf16: the dtype of the inputs\n"
        "                   the cube reads (bf16 drawn as the f32 values\n"
        "                   rounded to nearest even); PyTorch then runs its\n"
        "                   bf16 matmuls on them\n"
        "  --simulate M     each case also simulated (pto/sim.h,\n"
        "                   docs/simulation.md) on machine M: host (this\n"
        "                   CPU's profile from pto-bench calibrate: the\n"
        "                   measured executable itself), host:N (its cores\n"
        "                   N times over), ascend, or a profile file; a\n"
        "                   line under the row, JSON sim_ms, sim_machine,\n"
        "                   sim_ratio; with --trace, the simulated swimlane\n"
        "                   beside the measured one (FILE.sim.json)\n",
        f);
}

const char *bench_dtype_flag(pto_dtype dt) {
  return dt == PTO_BF16 ? "bf16" : "f32";
}

float bench_bf16_f32(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

void bench_fill_uniform_bf16(uint16_t *x, size_t n, uint64_t seed,
                             uint64_t stream, float lo, float hi) {
  bench_rng r = bench_rng_new(seed, stream);
  const double span = (double)hi - (double)lo;
  for (size_t i = 0; i < n; i++) {
    const float f =
        (float)(lo + span * (double)(bench_rng_next(&r) >> 11) * 0x1p-53);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* finite: round to nearest even */
    x[i] = (uint16_t)(u >> 16);
  }
}

int bench_case_path(char *buf, size_t size, const char *path,
                    const char *name, int several, int is_dir) {
  int n;
  if (!several) {
    n = snprintf(buf, size, "%s", path);
  } else if (is_dir) {
    n = snprintf(buf, size, "%s/%s", path, name);
  } else {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == path ||
        (slash && dot == slash + 1))
      n = snprintf(buf, size, "%s-%s", path, name);
    else
      n = snprintf(buf, size, "%.*s-%s%s", (int)(dot - path), path, name,
                   dot);
  }
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The machine of `threads` workers, PTO_CONFIG's settings, then the config
 * file at path (NULL: none; flag names it in a message). */
static pto_config *config_with(const bench_harness *h, int threads,
                               const char *path, const char *flag) {
  pto_machine m;
  if (bench_machine(h->cmd, threads, &m))
    return NULL;
  /* PTO_CONFIG's settings first, as every command's (bench_config_new),
   * then the benchmark's machine, then the file */
  pto_config *cfg = bench_config_new(h->cmd);
  if (!cfg)
    return NULL;
  if (pto_config_set_machine(cfg, &m)) {
    fprintf(stderr, "pto-bench %s: machine: %s\n", h->cmd,
            pto_config_error(cfg));
    pto_config_free(cfg);
    return NULL;
  }
  if (path && pto_config_load_file(cfg, path)) {
    fprintf(stderr, "pto-bench %s: %s: %s\n", h->cmd, flag,
            pto_config_error(cfg));
    pto_config_free(cfg);
    return NULL;
  }
  return cfg;
}

pto_config *bench_harness_config(const bench_harness *h, int threads) {
  return config_with(h, threads, h->config_path, "--config");
}

pto_config *bench_harness_against(const bench_harness *h, int threads,
                                  int *failed) {
  *failed = 0;
  if (!h->against)
    return NULL;
  pto_config *cfg = config_with(h, threads, h->against, "--against");
  *failed = !cfg;
  return cfg;
}

/* ---- inputs and statistics --------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bench_rng bench_rng_new(uint64_t seed, uint64_t stream) {
  bench_rng r = {seed * 0x2545f4914f6cdd1dull + stream * 0x9e3779b97f4a7c15ull};
  return r;
}

uint64_t bench_rng_next(bench_rng *r) {
  return splitmix64(&r->s);
}

uint64_t bench_rng_below(bench_rng *r, uint64_t n) {
  const uint64_t floor = -n % n; /* 2^64 mod n: values below it are biased */
  for (;;) {
    const uint64_t v = splitmix64(&r->s);
    if (v >= floor)
      return v % n;
  }
}

void bench_draw_distinct(bench_rng *r, int64_t n, int64_t k, int32_t *out,
                         unsigned char *mark) {
  /* Floyd: for j = n-k .. n-1 take a random t <= j, or j when t is taken */
  for (int64_t j = n - k, m = 0; j < n; j++, m++) {
    int64_t t = (int64_t)bench_rng_below(r, (uint64_t)j + 1);
    if (mark[t])
      t = j;
    mark[t] = 1;
    out[m] = (int32_t)t;
  }
  for (int64_t m = k - 1; m > 0; m--) { /* Floyd's order is not uniform */
    const int64_t t = (int64_t)bench_rng_below(r, (uint64_t)m + 1);
    const int32_t v = out[m];
    out[m] = out[t];
    out[t] = v;
  }
  for (int64_t m = 0; m < k; m++)
    mark[out[m]] = 0;
}

void bench_fill_uniform(float *x, size_t n, uint64_t seed, uint64_t stream,
                        float lo, float hi) {
  bench_rng r = bench_rng_new(seed, stream);
  const double span = (double)hi - (double)lo;
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(lo + span * (double)(bench_rng_next(&r) >> 11) * 0x1p-53);
}

static double quantile(const double *v, int n, double q) {
  double pos = q * (n - 1);
  int i = (int)pos;
  return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[n - 1];
}

bench_stats bench_stats_of(double *v, int n) {
  bench_stats s;
  memset(&s, 0, sizeof s);
  if (n < 1)
    return s;
  s.n = n;
  s.median = bench_median(v, n); /* sorts v */
  s.min = v[0];
  s.max = v[n - 1];
  s.q1 = quantile(v, n, 0.25);
  s.q3 = quantile(v, n, 0.75);
  return s;
}

/* ---- the PTO side -------------------------------------------------------------- */

int bench_pto_compile(bench_pto *r, const char *cmd, pto_program *p,
                      const pto_config *cfg) {
  memset(r, 0, sizeof *r);
  r->cmd = cmd;
  r->cfg = cfg;
  if (!p) {
    fprintf(stderr, "pto-bench %s: out of memory\n", cmd);
    return -1;
  }
  if (pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "pto-bench %s: %s\n", cmd, pto_program_error(p));
    return -1;
  }
  uint64_t t0 = bench_now_ns();
  pto_status st = pto_compile(p, cfg, &r->e);
  r->compile_ms = (double)(bench_now_ns() - t0) * 1e-6;
  if (st) {
    fprintf(stderr, "pto-bench %s: compile: %s: %s\n", cmd, pto_strerror(st),
            pto_program_error(p));
    return -1;
  }
  r->tasks = pto_executable_num_tasks(r->e);
  return 0;
}

static pto_runtime *start(const bench_pto *r, int trace) {
  pto_runtime_params prm = pto_runtime_params_from_config(r->cfg);
  prm.trace = trace;
  pto_runtime *rt = NULL;
  if (pto_runtime_new(&prm, &rt)) {
    fprintf(stderr, "pto-bench %s: cannot start the runtime: %s\n", r->cmd,
            pto_runtime_error(NULL));
    return NULL;
  }
  return rt;
}

int bench_pto_start(bench_pto *r) {
  if (!r->rt)
    r->rt = start(r, 0);
  return r->rt ? 0 : -1;
}

int bench_pto_run(bench_pto *r, const void *const *in, void *const *out) {
  if (bench_pto_start(r))
    return -1;
  pto_status st = pto_runtime_run(r->rt, r->e, in, out);
  if (st) {
    fprintf(stderr, "pto-bench %s: run: %s: %s\n", r->cmd, pto_strerror(st),
            pto_executable_error(r->e));
    return -1;
  }
  return 0;
}

/* Long enough for an idle runtime's workers to be asleep: they spin, then
 * yield, then wait on a semaphore. */
static void pause_idle(const bench_pto *r) {
  const pto_runtime_params prm = pto_runtime_params_from_config(r->cfg);
  bench_pause_ms((int)((prm.spin_us + prm.yield_us) / 1000) + 2);
}

int bench_pto_time_probed(bench_pto *r, const void *const *in, void *const *out,
                          int warmup, int repeats, int threads, double *t,
                          double *probe) {
  for (int k = -warmup; k < repeats; k++) {
    double g = 0;
    if (probe) {
      pause_idle(r);
      g = bench_peak_fma_now(threads);
    }
    uint64_t t0 = bench_now_ns();
    if (bench_pto_run(r, in, out))
      return -1;
    if (k >= 0) {
      t[k] = (double)(bench_now_ns() - t0) * 1e-6;
      if (probe)
        probe[k] = g;
    }
  }
  return 0;
}

int bench_pto_time(bench_pto *r, const void *const *in, void *const *out,
                   int warmup, int repeats, bench_stats *st) {
  double *t = calloc((size_t)repeats, sizeof *t);
  if (!t) {
    fprintf(stderr, "pto-bench %s: out of memory\n", r->cmd);
    return -1;
  }
  const int rc = bench_pto_time_probed(r, in, out, warmup, repeats, 0, t, NULL);
  if (!rc)
    *st = bench_stats_of(t, repeats);
  free(t);
  return rc;
}

int bench_pto_time_pair(bench_pto *const r[2], const void *const *const in[2],
                        void *const *const out[2], int warmup, int repeats,
                        bench_stats st[2]) {
  double *t = calloc(2 * (size_t)repeats, sizeof *t);
  if (!t) {
    fprintf(stderr, "pto-bench %s: out of memory\n", r[0]->cmd);
    return -1;
  }
  for (int k = -warmup; k < repeats; k++)
    for (int v = 0; v < 2; v++) {
      pause_idle(r[!v]);
      uint64_t t0 = bench_now_ns();
      if (bench_pto_run(r[v], in[v], out[v])) {
        free(t);
        return -1;
      }
      if (k >= 0)
        t[v * repeats + k] = (double)(bench_now_ns() - t0) * 1e-6;
    }
  st[0] = bench_stats_of(t, repeats);
  st[1] = bench_stats_of(t + repeats, repeats);
  free(t);
  return 0;
}

void bench_pto_stop(bench_pto *r) {
  pto_runtime_free(r->rt);
  r->rt = NULL;
}

pto_status bench_traced_run(pto_runtime *rt, pto_executable *e,
                            const void *const *in, void *const *out) {
  pto_status st = pto_runtime_run(rt, e, in, out);
  return st ? st : pto_runtime_run(rt, e, in, out);
}

pto_runtime *bench_pto_traced_runtime(bench_pto *r) {
  bench_pto_stop(r);
  return start(r, 1);
}

int bench_pto_trace(bench_pto *r, const void *const *in, void *const *out,
                    const char *path) {
  pto_runtime *rt = bench_pto_traced_runtime(r);
  if (!rt)
    return -1;
  pto_status st = bench_traced_run(rt, r->e, in, out);
  pto_runtime_free(rt);
  if (st) {
    fprintf(stderr, "pto-bench %s: traced run: %s: %s\n", r->cmd,
            pto_strerror(st), pto_executable_error(r->e));
    return -1;
  }
  if ((st = pto_executable_write_trace(r->e, path))) {
    fprintf(stderr, "pto-bench %s: --trace %s: %s\n", r->cmd, path,
            pto_strerror(st));
    return -1;
  }
  fprintf(stderr, "pto-bench %s: swimlane of one traced run in %s\n", r->cmd,
          path);
  pto_executable_trace_summary(r->e, stderr);
  return 0;
}

void bench_pto_free(bench_pto *r) {
  bench_pto_stop(r);
  pto_executable_free(r->e);
  r->e = NULL;
}
