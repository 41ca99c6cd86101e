/* pto-bench gemm: C = A x B in f32 (row-major), PTO's GEMM (kernels/gemm.c,
 * compiled with pto_compile and run with pto_runtime_run on a runtime of
 * that many workers) against OpenBLAS's cblas_sgemm on the same threads and
 * buffers, in one run, with the machine's FMA peak measured in the same
 * run. OpenBLAS is loaded with dlopen after OPENBLAS_CORETYPE is set
 * (SkylakeX, its AVX-512 kernel, where the CPU runs AVX-512 and the caller
 * set none; elsewhere OpenBLAS's own choice), because it picks its kernel
 * when it loads. Every PTO result is checked against OpenBLAS's, so a
 * wrong fast result fails the command. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "pto/gemm.h"
#include "pto/pto.h"

typedef struct gcase {
  int64_t m, n, k;
  int quick; /* part of --quick */
} gcase;

static const gcase default_cases[] = {
    {512, 512, 512, 1},
    {1024, 1024, 1024, 1},
    {2048, 2048, 2048, 0},
    {128, 8192, 576, 0}, /* skinny: M = 128 queries, K = 576 head dim */
};
#define N_DEFAULT (sizeof default_cases / sizeof default_cases[0])
#define MAX_CASES 16
#define REL_ERR_MAX 1e-5 /* ||C_pto - C_blas||_F / ||C_blas||_F */

/* ---- OpenBLAS, loaded at run time --------------------------------------- */

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b,
                         int ldb, float beta, float *c, int ldc);

typedef struct openblas {
  void *lib;
  sgemm_fn sgemm;
  void (*set_threads)(int);
  char *(*corename)(void);
} openblas;

static int openblas_load(openblas *ob) {
  /* before it initialises; Debian's OpenBLAS picks its AVX2 kernel on
   * AVX-512 Zen, and SkylakeX where AVX-512 is missing dies of SIGILL */
  if (pto_isa_supported("avx512"))
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
  memset(ob, 0, sizeof *ob);
  for (size_t i = 0; i < 2 && !ob->lib; i++)
    ob->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!ob->lib)
    return -1;
  *(void **)&ob->sgemm = dlsym(ob->lib, "cblas_sgemm");
  *(void **)&ob->set_threads = dlsym(ob->lib, "openblas_set_num_threads");
  *(void **)&ob->corename = dlsym(ob->lib, "openblas_get_corename");
  return ob->sgemm && ob->set_threads ? 0 : -1;
}

/* ---- one case ------------------------------------------------------------ */

#define ROUNDS 3 /* PTO and OpenBLAS alternate this many times per case */

static double gflops(const gcase *c, double ms) {
  return 2.0 * (double)c->m * (double)c->n * (double)c->k / (ms * 1e6);
}

static double rel_err(const float *got, const float *want, size_t n) {
  double d = 0, w = 0;
  for (size_t i = 0; i < n; i++) {
    double e = (double)got[i] - want[i];
    d += e * e;
    w += (double)want[i] * want[i];
  }
  return w > 0 ? sqrt(d / w) : sqrt(d);
}

typedef struct result {
  pto_tile_shape tile;
  uint32_t tasks;
  double pto_ms, blas_ms, err;
} result;

/* Times PTO and OpenBLAS on case c with `threads` threads. 0 or 1 (error,
 * printed). */
static int run_case(const bench_opts *o, const gcase *c, int threads,
                    int repeats, int trace, const openblas *ob, result *res) {
  const size_t na = (size_t)(c->m * c->k), nb = (size_t)(c->k * c->n),
               nc = (size_t)(c->m * c->n);
  float *A = pto_buffer_alloc(na * sizeof *A),
        *B = pto_buffer_alloc(nb * sizeof *B),
        *C = pto_buffer_alloc(nc * sizeof *C),
        *Cb = pto_buffer_alloc(nc * sizeof *Cb);
  double *t = calloc((size_t)repeats, sizeof *t);
  pto_program *p = NULL;
  pto_config *cfg = bench_config_new("gemm");
  pto_executable *e = NULL;
  pto_runtime *rt = NULL;
  int rc = 1;
  if (!cfg)
    goto done;
  if (!A || !B || !C || !Cb || !t || !cfg) {
    fprintf(stderr, "pto-bench gemm: out of memory\n");
    goto done;
  }
  srand(12345);
  for (size_t i = 0; i < na; i++)
    A[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  for (size_t i = 0; i < nb; i++)
    B[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  pto_machine m;
  if (bench_machine("gemm", threads, &m))
    goto done;
  pto_status st = pto_config_set_machine(cfg, &m);
  if (!st)
    st = pto_gemm_tile(&m, c->m, c->n, c->k, (uint32_t)threads, &res->tile);
  if (st) {
    fprintf(stderr, "pto-bench gemm: machine or tile: %s\n", pto_strerror(st));
    goto done;
  }
  p = pto_gemm_program(c->m, c->n, c->k, &res->tile);
  if (!p || pto_compile(p, cfg, &e) != PTO_OK) {
    fprintf(stderr, "pto-bench gemm: %s\n",
            p ? pto_program_error(p) : "out of memory");
    goto done;
  }
  res->tasks = pto_executable_num_tasks(e);
  if (!(rt = bench_runtime_new("gemm", &m, 0)))
    goto done;
  const void *in[2] = {A, B};
  void *out[1] = {C};
  /* ROUNDS rounds of PTO then OpenBLAS, each side warmed up once per round
   * and the other side's spinning threads asleep first, so a burst of
   * noise on the machine falls on both sides rather than on one */
  double *tb = calloc((size_t)repeats, sizeof *tb);
  if (!tb) {
    fprintf(stderr, "pto-bench gemm: out of memory\n");
    goto done;
  }
  ob->set_threads(threads);
  for (int round = 0, r0 = 0; round < ROUNDS && r0 < repeats; round++) {
    const int r1 = repeats * (round + 1) / ROUNDS;
    bench_pause_ms(200); /* OpenBLAS's threads go to sleep */
    for (int r = r0 - 1; r < r1; r++) { /* r = r0 - 1: warm-up */
      uint64_t t0 = bench_now_ns();
      st = pto_runtime_run(rt, e, in, out);
      if (r >= r0)
        t[r] = (double)(bench_now_ns() - t0) * 1e-6;
      if (st) {
        fprintf(stderr, "pto-bench gemm: %s\n", pto_executable_error(e));
        free(tb);
        goto done;
      }
    }
    bench_pause_ms(5); /* PTO's workers stop spinning */
    for (int r = r0 - 1; r < r1; r++) {
      uint64_t t0 = bench_now_ns();
      ob->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)c->m,
                (int)c->n, (int)c->k, 1.0f, A, (int)c->k, B, (int)c->n, 0.0f,
                Cb, (int)c->n);
      if (r >= r0)
        tb[r] = (double)(bench_now_ns() - t0) * 1e-6;
    }
    r0 = r1;
  }
  res->pto_ms = bench_median(t, repeats);
  res->blas_ms = bench_median(tb, repeats);
  free(tb);
  if (trace) { /* one more run, traced, summarised on stderr */
    bench_pause_ms(200);
    pto_runtime *trt = bench_runtime_new("gemm", &m, 1);
    if (trt && !pto_runtime_run(trt, e, in, out)) {
      fprintf(stderr, "-- trace, %ldx%ldx%ld on %d threads:\n", (long)c->m,
              (long)c->n, (long)c->k, threads);
      pto_executable_trace_summary(e, stderr);
    }
    pto_runtime_free(trt);
  }
  pto_runtime_free(rt);
  rt = NULL;
  res->err = rel_err(C, Cb, nc);
  rc = 0;
  if (!(res->err <= REL_ERR_MAX)) {
    fprintf(stderr,
            "pto-bench gemm: %ldx%ldx%ld on %d threads: PTO's C differs "
            "from OpenBLAS's by %.3g (relative Frobenius norm > %g)\n",
            (long)c->m, (long)c->n, (long)c->k, threads, res->err,
            REL_ERR_MAX);
    rc = 1;
  }
  bench_progress(o, "gemm %ldx%ldx%ld, %d threads: PTO %.2f ms, OpenBLAS "
                    "%.2f ms",
                 (long)c->m, (long)c->n, (long)c->k, threads, res->pto_ms,
                 res->blas_ms);
done:
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(cfg);
  free(A);
  free(B);
  free(C);
  free(Cb);
  free(t);
  return rc;
}

/* ---- the command ----------------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "gemm [--trace] [MxNxK...]\n"
        "\n"
        "f32 GEMM, C = A x B row-major: PTO (kernels/gemm.c: pto_compile,\n"
        "pto_runtime_run on that many workers) against OpenBLAS's\n"
        "cblas_sgemm (OPENBLAS_CORETYPE=SkylakeX on an AVX-512 CPU unless\n"
        "set), same buffers and threads, in one run, plus the FMA peak of\n"
        "the widest vectors the CPU runs, measured in the same run. Default cases: 512, 1024, 2048 square and 128x8192x576\n"
        "(--quick: 512 and 1024), on 1 and 2 threads (--threads N: N only).\n"
        "Prints medians (GFLOP/s), PTO / OpenBLAS, and fractions of peak;\n"
        "fails when PTO's C differs from OpenBLAS's by more than 1e-5\n"
        "(relative Frobenius norm). --trace: one extra traced PTO run per\n"
        "case, summarised on stderr.\n"
        "JSON fields: m, n, k, threads, tile, tasks, pto_ms, openblas_ms,\n"
        "pto_gflops, openblas_gflops, peak_gflops, ratio (PTO / OpenBLAS),\n"
        "pto_peak_fraction, openblas_peak_fraction, rel_err.\n",
        f);
}

static int parse_case(const char *s, gcase *c) {
  long long m, n, k;
  char tail;
  if (sscanf(s, "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 ||
      n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536)
    return -1;
  c->m = m;
  c->n = n;
  c->k = k;
  c->quick = 1;
  return 0;
}

static int run(const bench_opts *o, int argc, char **argv) {
  gcase cases[MAX_CASES];
  size_t n_cases = 0;
  int trace = 0;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--trace")) {
      trace = 1;
    } else if (n_cases < MAX_CASES && !parse_case(argv[a], &cases[n_cases])) {
      n_cases++;
    } else {
      fprintf(stderr, "pto-bench gemm: bad case '%s' (expected MxNxK)\n",
              argv[a]);
      usage(stderr);
      return 2;
    }
  }
  if (!n_cases)
    for (size_t i = 0; i < N_DEFAULT; i++)
      if (!o->quick || default_cases[i].quick)
        cases[n_cases++] = default_cases[i];
  openblas ob;
  if (openblas_load(&ob)) {
    fprintf(stderr,
            "pto-bench gemm: cannot load OpenBLAS (libopenblas.so.0 with "
            "cblas_sgemm): %s; install libopenblas-dev "
            "(tools/install-deps.sh)\n",
            dlerror() ? dlerror() : "symbols missing");
    return 1;
  }
  int cores = bench_cores(o), n_thr = 0, thr[2];
  if (o->threads) {
    thr[n_thr++] = o->threads;
  } else {
    thr[n_thr++] = 1;
    if (cores >= 2)
      thr[n_thr++] = 2;
  }
  double peak[2] = {0, 0};
  const char *peak_isa = "none";
  for (int i = 0; i < n_thr; i++) {
    bench_progress(o, "gemm: FMA peak on %d threads", thr[i]);
    peak[i] = bench_peak_fma(thr[i], 5, &peak_isa);
  }
  uint32_t mr, nr;
  pto_matmul_panel(&mr, &nr);
  FILE *out = bench_out(o);
  fprintf(out,
          "gemm f32 row-major, median of R runs; OpenBLAS core %s "
          "(OPENBLAS_CORETYPE=%s); PTO panels %ux%u; %s FMA peak",
          ob.corename ? ob.corename() : "?",
          getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset",
          mr, nr, peak_isa);
  for (int i = 0; i < n_thr; i++)
    fprintf(out, " %s%d thr %.1f", i ? ", " : "", thr[i], peak[i]);
  fprintf(out, " GFLOP/s%s\n", peak[0] > 0 ? "" : " (not measured)");
  fprintf(out, "%-16s %3s %14s %5s %3s %9s %9s %9s %6s %6s %6s %8s\n", "MxNxK",
          "thr", "tile", "tasks", "R", "PTO ms", "PTO GF/s", "OB GF/s",
          "PTO/OB", "PTO%pk", "OB%pk", "rel err");
  int rc = 0;
  for (size_t ci = 0; ci < n_cases; ci++)
    for (int ti = 0; ti < n_thr; ti++) {
      const gcase *c = &cases[ci];
      double flop = 2.0 * (double)c->m * (double)c->n * (double)c->k;
      int repeats = o->repeats  ? o->repeats
                    : o->quick  ? 3
                    : flop > 4e9 ? 7
                                 : 15;
      result r;
      memset(&r, 0, sizeof r);
      bench_progress(o, "gemm %ldx%ldx%ld on %d threads", (long)c->m,
                     (long)c->n, (long)c->k, thr[ti]);
      int bad = run_case(o, c, thr[ti], repeats, trace, &ob, &r);
      if (bad && !r.pto_ms) {
        rc = 1;
        continue;
      }
      rc |= bad;
      double pg = gflops(c, r.pto_ms), bg = gflops(c, r.blas_ms);
      double pk = peak[ti];
      char shape[40], tile[40];
      snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)c->m, (long)c->n,
               (long)c->k);
      snprintf(tile, sizeof tile, "%ux%ux%u", r.tile.cube_m, r.tile.cube_n,
               r.tile.cube_k);
      fprintf(out,
              "%-16s %3d %14s %5u %3d %9.2f %9.1f %9.1f %5.2fx %5.1f%% "
              "%5.1f%% %8.1e%s\n",
              shape, thr[ti], tile, r.tasks, repeats, r.pto_ms, pg, bg, pg / bg,
              pk > 0 ? 100 * pg / pk : 0, pk > 0 ? 100 * bg / pk : 0, r.err,
              bad ? "  WRONG" : "");
      fflush(out);
      json_t *j = json_pack(
          "{s:I, s:I, s:I, s:i, s:[i,i,i], s:i, s:f, s:f, s:f, s:f, s:f, "
          "s:f, s:f, s:f, s:f, s:b}",
          "m", (json_int_t)c->m, "n", (json_int_t)c->n, "k", (json_int_t)c->k,
          "threads", thr[ti], "tile", (int)r.tile.cube_m, (int)r.tile.cube_n,
          (int)r.tile.cube_k, "tasks", (int)r.tasks, "pto_ms", r.pto_ms,
          "openblas_ms", r.blas_ms, "pto_gflops", pg, "openblas_gflops", bg,
          "peak_gflops", pk, "ratio", pg / bg, "pto_peak_fraction",
          pk > 0 ? pg / pk : 0.0, "openblas_peak_fraction",
          pk > 0 ? bg / pk : 0.0, "rel_err", r.err, "correct", !bad);
      json_array_append_new(bench_results(), j);
    }
  return rc;
}

const bench_cmd bench_gemm = {
    "gemm", "f32 GEMM against OpenBLAS, with the measured FMA peak", run,
    usage};
