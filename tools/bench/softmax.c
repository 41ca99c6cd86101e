/* pto-bench softmax: a row softmax of a ROWS x COLS f32 matrix through PTO
 * (kernels/softmax.c: built with the public API, compiled with pto_compile,
 * run on the parallel runtime with the host machine), reported as GB/s
 * (bytes read + written = 2 * ROWS * COLS * 4 per run) against the DRAM
 * bandwidth a STREAM-triad probe measures on the same threads in the same
 * run, next to a plain-C single-pass softmax (kernels/softmax.c) on the same
 * threads. PTO's result is checked against the plain-C one first.
 *
 * The probe is STREAM's triad a[i] = b[i] + s * c[i] over three arrays of
 * 128 MiB (4x a 32 MiB L3), counted as STREAM counts it: 12 bytes per
 * element, the write-allocate read of a[] not included, as softmax's own
 * count leaves out the write-allocate read of Y. Every figure is a median
 * over the repeats, which interleave probe, peer and PTO; each timed run
 * starts after a read of b[] (scrub), so caches hold clean lines and no
 * run pays for writing back the lines the previous one left dirty.
 *
 * A third PTO figure separates the two limits a softmax can hit: the same
 * program over the first CACHED_BYTES of X (whole tiles per worker), run
 * CACHED_RUNS times back to back, so X is read from the caches and only
 * the stores of Y reach DRAM. Where the full run is near this rate, the
 * softmax is bound by its own work (the exps), not by the DRAM. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/sim.h"
#include "pto/pto.h"
#include "pto/softmax.h"

#define PROBE_FLOATS (32u << 20) /* 128 MiB per array */
#define CACHED_BYTES (8u << 20)  /* X re-read from cache: a quarter of L3 */
#define CACHED_RUNS 8

typedef struct sm_opts {
  int64_t rows, cols;
  uint32_t tile_rows; /* 0: the kernel's choice */
  int nbuffer;        /* -1: the config default */
  const char *trace;  /* Chrome trace of the last run, or NULL */
  const char *simulate; /* --simulate MACHINE, or NULL */
} sm_opts;

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "softmax\n"
        "                 [--rows N] [--cols N] [--tile-rows N] "
        "[--nbuffer K]\n"
        "                 [--trace FILE] [--simulate MACHINE]\n"
        "\n"
        "Row softmax of a ROWS x COLS f32 matrix (default 4096 x 4096;\n"
        "--quick 1024 x 4096) through PTO on the parallel runtime, checked\n"
        "against a plain-C softmax, as GB/s (2 x ROWS x COLS x 4 bytes per\n"
        "run) and as a fraction of the DRAM bandwidth a STREAM-triad probe\n"
        "measures on the same threads in the same run. The plain-C\n"
        "single-pass softmax on the same threads is the peer. Each timed\n"
        "run starts with clean caches (a read of 128 MiB). --tile-rows\n"
        "sets the rows per vector tile (default: the kernel's choice for\n"
        "the host's UB), --nbuffer the knob (subgraphs per task), --trace\n"
        "writes the last PTO run as a Chrome trace and prints its summary.\n"
        "The row 'PTO, X in cache' runs the same program over the first\n"
        "8 MiB of X, 8 times back to back, so X comes from the caches: the\n"
        "rate the softmax's own work allows (near it, DRAM is not the limit).\n"
        "--simulate MACHINE: both PTO rows also simulated (pto/sim.h) on\n"
        "MACHINE (host, host:N, ascend or a profile file), the timed one\n"
        "from empty caches as it is timed, the cached one warm; JSON adds\n"
        "sim_ms, sim_cached_ms, sim_machine, sim_ratio; with --trace FILE,\n"
        "the timed one's simulated swimlane in FILE.sim.json.\n"
        "JSON fields: rows, cols, threads, isa, tile_rows, nbuffer, tasks,\n"
        "pto_ms, ref_ms, dram_ms, pto_gbps, ref_gbps, dram_gbps,\n"
        "pto_cached_gbps, pto_fraction_of_dram, ref_fraction_of_dram,\n"
        "max_rel_err.\n",
        f);
}

static int parse_i64(const char *opt, const char *v, int64_t lo, int64_t hi,
                     int64_t *out) {
  char *end;
  long long x = v ? strtoll(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > hi) {
    fprintf(stderr, "pto-bench softmax: %s needs an integer in [%lld, %lld]\n",
            opt, (long long)lo, (long long)hi);
    return -1;
  }
  *out = x;
  return 0;
}

static int parse(int argc, char **argv, sm_opts *s) {
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t x;
    if (!strcmp(a, "--rows") || !strcmp(a, "--cols")) {
      if (parse_i64(a, v, 1, 1 << 20, &x))
        return -1;
      *(a[2] == 'r' ? &s->rows : &s->cols) = x;
    } else if (!strcmp(a, "--tile-rows")) {
      if (parse_i64(a, v, 1, 4096, &x))
        return -1;
      s->tile_rows = (uint32_t)x;
    } else if (!strcmp(a, "--nbuffer")) {
      if (parse_i64(a, v, 0, 65536, &x))
        return -1;
      s->nbuffer = (int)x;
    } else if (!strcmp(a, "--trace") || !strcmp(a, "--simulate")) {
      if (!v) {
        fprintf(stderr, "pto-bench softmax: %s needs a %s\n", a,
                a[2] == 't' ? "file" : "machine");
        return -1;
      }
      *(a[2] == 't' ? &s->trace : &s->simulate) = v;
    } else {
      fprintf(stderr, "pto-bench softmax: unknown option '%s'\n", a);
      return -1;
    }
  }
  return 0;
}

/* ---- the probe and the peer (OpenMP, static rows per thread) ------------- */

/* One load per line of b[0..n): leaves the caches full of clean lines.
 * The sum goes to a volatile so the loads stay. */
static volatile float scrub_sum;
static void scrub(const float *b, size_t n, int threads) {
  float s = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : s)
  for (size_t i = 0; i < n; i += 16)
    s += b[i];
  scrub_sum = s;
}

static void peer(const float *x, float *y, int64_t rows, int64_t cols,
                 int threads) {
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    int64_t r0 = rows * t / n, r1 = rows * (t + 1) / n;
    pto_softmax_ref(x, y, cols, r0, r1);
  }
}

/* ---- the command ------------------------------------------------------------ */

static int run(const bench_opts *o, int argc, char **argv) {
  sm_opts s = {o->quick ? 1024 : 4096, 4096, 0, -1, NULL, NULL};
  if (parse(argc, argv, &s))
    return 2;
  const int threads = bench_cores(o);
  const int repeats = o->repeats ? o->repeats : o->quick ? 5 : 11;
  const size_t n = (size_t)s.rows * (size_t)s.cols;
  const double bytes = 2.0 * (double)n * sizeof(float);
  int rc = 1;

  pto_machine m;
  pto_status st;
  if (bench_machine("softmax", threads, &m))
    return 1;

  float *x = pto_buffer_alloc(n * sizeof *x),
        *y = pto_buffer_alloc(n * sizeof *y),
        *yref = pto_buffer_alloc(n * sizeof *yref);
  float *pa = pto_buffer_alloc(PROBE_FLOATS * sizeof *pa),
        *pb = pto_buffer_alloc(PROBE_FLOATS * sizeof *pb),
        *pc = pto_buffer_alloc(PROBE_FLOATS * sizeof *pc);
  double *t_pto = calloc((size_t)repeats, sizeof *t_pto),
         *t_ref = calloc((size_t)repeats, sizeof *t_ref),
         *t_dram = calloc((size_t)repeats, sizeof *t_dram),
         *t_hot = calloc((size_t)repeats, sizeof *t_hot);
  pto_config *cfg = bench_config_new("softmax");
  pto_program *p = NULL, *ph = NULL;
  pto_executable *e = NULL, *eh = NULL;
  pto_runtime *rt = NULL;
  if (!cfg)
    goto out;
  if (!x || !y || !yref || !pa || !pb || !pc || !t_pto || !t_ref || !t_dram ||
      !t_hot || !cfg) {
    fprintf(stderr, "pto-bench softmax: out of memory\n");
    goto out;
  }
  bench_progress(o, "softmax: %lld x %lld f32, %d threads",
                 (long long)s.rows, (long long)s.cols, threads);
  /* first touch on the threads that use the data */
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < n; i++) {
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    x[i] = (float)((double)(h >> 11) * 0x1p-53 * 16.0 - 8.0);
    y[i] = yref[i] = 0.0f;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < PROBE_FLOATS; i++) {
    pa[i] = 0.0f;
    pb[i] = 1.0f;
    pc[i] = 2.0f;
  }

  if ((st = pto_config_set_machine(cfg, &m)) ||
      (s.nbuffer >= 0 &&
       (st = pto_config_set_knob(cfg, NULL, PTO_KNOB_NBUFFER, s.nbuffer)))) {
    fprintf(stderr, "pto-bench softmax: config: %s\n", pto_config_error(cfg));
    goto out;
  }
  const uint32_t tile_rows =
      s.tile_rows ? s.tile_rows
                  : pto_softmax_tile_rows(s.cols, 2 * m.mem[PTO_MEM_UB]);
  p = pto_softmax_program(s.rows, s.cols, tile_rows, 0);
  if (!p || pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "pto-bench softmax: %s\n",
            p ? pto_program_error(p) : "out of memory");
    goto out;
  }
  if ((st = pto_compile(p, cfg, &e))) {
    fprintf(stderr, "pto-bench softmax: compile: %s\n", pto_program_error(p));
    goto out;
  }
  /* the cached run: whole tiles for every worker, within CACHED_BYTES */
  const int64_t row_bytes = s.cols * (int64_t)sizeof(float),
                group = (int64_t)tile_rows * threads;
  int64_t hot_rows = CACHED_BYTES / row_bytes / group * group;
  hot_rows = hot_rows < group ? group : hot_rows;
  hot_rows = hot_rows > s.rows ? s.rows : hot_rows;
  ph = pto_softmax_program(hot_rows, s.cols, tile_rows, 0);
  if (!ph || pto_program_status(ph) != PTO_OK || pto_compile(ph, cfg, &eh)) {
    fprintf(stderr, "pto-bench softmax: %lld-row program: %s\n",
            (long long)hot_rows, ph ? pto_program_error(ph) : "out of memory");
    goto out;
  }
  if (!(rt = bench_runtime_new("softmax", &m, s.trace != NULL)))
    goto out;
  const void *in[] = {x};
  void *outp[] = {y};

  /* correctness first: PTO against the plain-C softmax */
  peer(x, yref, s.rows, s.cols, threads);
  if ((st = pto_runtime_run(rt, e, in, outp))) {
    fprintf(stderr, "pto-bench softmax: run: %s\n", pto_executable_error(e));
    goto out;
  }
  double max_rel = 0;
  size_t bad = n;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)y[i] - yref[i]) / (fabs((double)yref[i]) + 1e-30);
    if (!(err <= max_rel)) { /* NaN too */
      max_rel = isnan(err) ? INFINITY : err;
      bad = i;
    }
  }
  if (!(max_rel <= 1e-5)) {
    fprintf(stderr,
            "pto-bench softmax: WRONG RESULT: Y[%zu][%zu] = %.9g, the plain-C "
            "softmax gives %.9g (relative error %.3g > 1e-5)\n",
            bad / (size_t)s.cols, bad % (size_t)s.cols, y[bad], yref[bad],
            max_rel);
    goto out;
  }

  bench_triad(pa, pb, pc, PROBE_FLOATS, threads); /* warm: pages, threads */
  for (int r = 0; r < repeats; r++) {
    bench_progress(o, "softmax: repeat %d of %d", r + 1, repeats);
    bench_pause_ms(20);
    scrub(pb, PROBE_FLOATS, threads);
    uint64_t t0 = bench_now_ns();
    bench_triad(pa, pb, pc, PROBE_FLOATS, threads);
    t_dram[r] = (double)(bench_now_ns() - t0) * 1e-9;
    scrub(pb, PROBE_FLOATS, threads);
    t0 = bench_now_ns();
    peer(x, yref, s.rows, s.cols, threads);
    t_ref[r] = (double)(bench_now_ns() - t0) * 1e-9;
    scrub(pb, PROBE_FLOATS, threads);
    bench_pause_ms(20);
    t0 = bench_now_ns();
    st = pto_runtime_run(rt, e, in, outp);
    t_pto[r] = (double)(bench_now_ns() - t0) * 1e-9;
    if (st) {
      fprintf(stderr, "pto-bench softmax: run: %s\n", pto_executable_error(e));
      goto out;
    }
    st = pto_runtime_run(rt, eh, in, outp); /* X's first rows into cache */
    t0 = bench_now_ns();
    for (int k = 0; k < CACHED_RUNS && !st; k++)
      st = pto_runtime_run(rt, eh, in, outp);
    t_hot[r] = (double)(bench_now_ns() - t0) * 1e-9 / CACHED_RUNS;
    if (st) {
      fprintf(stderr, "pto-bench softmax: run: %s\n", pto_executable_error(eh));
      goto out;
    }
  }
  const double dram = bench_median(t_dram, repeats),
               ref = bench_median(t_ref, repeats),
               pto = bench_median(t_pto, repeats),
               hot = bench_median(t_hot, repeats);
  const double dram_gbps = 3.0 * PROBE_FLOATS * sizeof(float) / dram * 1e-9,
               ref_gbps = bytes / ref * 1e-9, pto_gbps = bytes / pto * 1e-9,
               hot_gbps = 2.0 * (double)(hot_rows * row_bytes) / hot * 1e-9;
  pto_exe_stats es;
  pto_executable_stats(e, &es);
  const char *isa = pto_isa_name();

  FILE *f = bench_out(o);
  fprintf(f,
          "softmax %lld x %lld f32, %d threads, %s tile instructions, "
          "median of %d\n",
          (long long)s.rows, (long long)s.cols, threads, isa, repeats);
  fprintf(f, "  vector tile %u x %lld, %u tasks, nbuffer %d\n", tile_rows,
          (long long)s.cols, es.tasks, s.nbuffer < 0 ? 0 : s.nbuffer);
  fprintf(f, "  %-26s %9s %9s %9s\n", "", "ms", "GB/s", "of DRAM");
  fprintf(f, "  %-26s %9.2f %9.1f %8.0f%%\n", "DRAM (STREAM triad probe)",
          dram * 1e3, dram_gbps, 100.0);
  fprintf(f, "  %-26s %9.2f %9.1f %8.0f%%\n", "PTO softmax", pto * 1e3,
          pto_gbps, 100 * pto_gbps / dram_gbps);
  fprintf(f, "  %-26s %9.2f %9.1f %8.0f%%\n", "plain-C softmax (peer)",
          ref * 1e3, ref_gbps, 100 * ref_gbps / dram_gbps);
  char hot_label[48];
  snprintf(hot_label, sizeof hot_label, "PTO, X in cache (%lld rows)",
           (long long)hot_rows);
  fprintf(f, "  %-26s %9.2f %9.1f %8.0f%%\n", hot_label, hot * 1e3, hot_gbps,
          100 * hot_gbps / dram_gbps);
  fprintf(f, "  PTO / plain C: %.2fx; max relative error %.2g\n", ref / pto,
          max_rel);
  json_t *j = json_pack(
      "{s:I, s:I, s:i, s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, "
      "s:f, s:f, s:f, s:f}",
      "rows", (json_int_t)s.rows, "cols", (json_int_t)s.cols, "threads",
      threads, "isa", isa, "tile_rows", (int)tile_rows, "nbuffer",
      s.nbuffer < 0 ? 0 : s.nbuffer, "tasks", (int)es.tasks, "pto_ms",
      pto * 1e3, "ref_ms", ref * 1e3, "dram_ms", dram * 1e3, "pto_gbps",
      pto_gbps, "ref_gbps", ref_gbps, "dram_gbps", dram_gbps, "pto_cached_gbps",
      hot_gbps, "pto_fraction_of_dram", pto_gbps / dram_gbps,
      "ref_fraction_of_dram", ref_gbps / dram_gbps, "max_rel_err", max_rel);
  int sim_failed = 0; /* a --simulate that could not run fails the command */
  if (s.simulate) { /* the timed run from empty caches; the cached warm */
    bench_sim sim;
    double sim_ms = 0, sim_hot = 0;
    if (bench_sim_open(o, "softmax", s.simulate, threads, &sim)) {
      sim_failed = 1;
      goto out_j;
    }
    pto_program *ps = NULL, *phs = NULL;
    if (!sim.same) {
      const uint32_t tr = pto_softmax_tile_rows(
          s.cols, 2 * bench_sim_machine(&sim)->mem[PTO_MEM_UB]);
      ps = pto_softmax_program(s.rows, s.cols, s.tile_rows ? s.tile_rows : tr,
                               0);
      phs = pto_softmax_program(hot_rows, s.cols,
                                s.tile_rows ? s.tile_rows : tr, 0);
    }
    char sim_trace[4096]; /* --trace FILE: the simulated one beside it */
    if (s.trace)
      snprintf(sim_trace, sizeof sim_trace, "%s.sim.json", s.trace);
    sim_failed = bench_sim_case("softmax", &sim, e, sim.same ? p : ps, cfg, 1,
                                s.trace ? sim_trace : NULL, &sim_ms, NULL) ||
                 bench_sim_case("softmax", &sim, eh, sim.same ? ph : phs, cfg,
                                0, NULL, &sim_hot, NULL);
    if (!sim_failed) {
      bench_sim_report(f, j, &sim, sim_ms, pto * 1e3);
      fprintf(f, "  simulated on %s, X in cache: %.3f ms (measured %.3f ms: "
                 "simulated / measured %.3f)\n",
              sim.name, sim_hot, hot * 1e3, sim_hot / (hot * 1e3));
      json_object_set_new(j, "sim_cached_ms", json_real(sim_hot));
    }
    pto_program_free(ps);
    pto_program_free(phs);
    bench_sim_close(&sim);
  }
out_j:
  json_array_append_new(bench_results(), j);
  if (s.trace) {
    if (pto_executable_write_trace(e, s.trace) == PTO_OK)
      fprintf(stderr, "pto-bench softmax: trace of the last run in %s\n",
              s.trace);
    pto_executable_trace_summary(e, stderr);
  }
  rc = sim_failed;
out:
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_executable_free(eh);
  pto_program_free(p);
  pto_program_free(ph);
  pto_config_free(cfg);
  free(x);
  free(y);
  free(yref);
  free(pa);
  free(pb);
  free(pc);
  free(t_pto);
  free(t_ref);
  free(t_dram);
  free(t_hot);
  return rc;
}

const bench_cmd bench_softmax = {
    "softmax", "row softmax 4096 x 4096 against the DRAM bandwidth", run,
    usage};
