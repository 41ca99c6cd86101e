/* pto-bench gemm: C = A x B (row-major), PTO's GEMM (kernels/gemm.c,
 * compiled with pto_compile and run with pto_runtime_run on a runtime of
 * that many workers) against its peers on the same threads and inputs, in
 * one run, with the FMA peak of the engine in use measured in the same
 * run. f32 (the default): OpenBLAS's cblas_sgemm. --dtype bf16 (A and B
 * bf16, C f32): PyTorch's bf16 matmul (tools/pto_bench_torch.py, and on
 * the operands widened to f32), OpenBLAS's cblas_sbgemm where the library
 * exports it (said plainly where it does not) and cblas_sgemm on the
 * widened operands; the fastest is the peer. OpenBLAS is loaded with
 * dlopen after OPENBLAS_CORETYPE is set (SkylakeX, its AVX-512 kernel,
 * where the CPU runs AVX-512 and the caller set none; elsewhere OpenBLAS's
 * own choice), because it picks its kernel when it loads. Every PTO result
 * is checked against OpenBLAS's cblas_sgemm on the same (widened) values,
 * so a wrong fast result fails the command; bf16 products are exact in
 * f32, so the f32 bound holds for bf16 too. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/gemm_peer.h"
#include "bench/harness.h"
#include "bench/sim.h"
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
/* The same bound for the peers on bf16: cblas_sbgemm sums in f32 (1e-5
 * would do; 1e-3 leaves room for its own order), PyTorch's bf16 matmul
 * rounds C to bf16 and, on CPUs without a bf16 matmul unit, sums in bf16
 * (torch 1.13 on Zen 3 measured 1.9e-2 at K = 256 and 3.7e-2 at K = 1024):
 * held only to 0.1, which a wrong product still fails. */
#define SB_REL_ERR_MAX 1e-3
#define TORCH_BF16_REL_ERR_MAX 0.1

/* ---- OpenBLAS, loaded at run time --------------------------------------- */

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b,
                         int ldb, float beta, float *c, int ldc);
/* bf16 operands as their bits, C f32 (OpenBLAS's BUILD_BFLOAT16 builds) */
typedef void (*sbgemm_fn)(int order, int ta, int tb, int m, int n, int k,
                          float alpha, const uint16_t *a, int lda,
                          const uint16_t *b, int ldb, float beta, float *c,
                          int ldc);

typedef struct openblas {
  void *lib;
  sgemm_fn sgemm;
  sbgemm_fn sbgemm; /* NULL: the library does not export cblas_sbgemm */
  char *(*config)(void);
  void (*set_threads)(int);
  char *(*corename)(void);
} openblas;

static int openblas_load(openblas *ob) {
  bench_openblas_coretype("gemm"); /* before it initialises */
  static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
  memset(ob, 0, sizeof *ob);
  for (size_t i = 0; i < 2 && !ob->lib; i++)
    ob->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!ob->lib)
    return -1;
  *(void **)&ob->sgemm = dlsym(ob->lib, "cblas_sgemm");
  *(void **)&ob->set_threads = dlsym(ob->lib, "openblas_set_num_threads");
  *(void **)&ob->corename = dlsym(ob->lib, "openblas_get_corename");
  *(void **)&ob->sbgemm = dlsym(ob->lib, "cblas_sbgemm");
  *(void **)&ob->config = dlsym(ob->lib, "openblas_get_config");
  return ob->sgemm && ob->set_threads ? 0 : -1;
}

/* ---- one case ------------------------------------------------------------ */

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

/* f32 x rounded to the nearest even bf16, as its bits (x finite). */
static uint16_t to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* The command's own options. */
typedef struct gemm_opts {
  pto_dtype dtype;    /* --dtype: A and B f32 or bf16 */
  int trace;          /* --trace */
  int no_peer;        /* --no-peer: no PyTorch (bf16) */
  const char *python; /* --python PATH */
  const char *script; /* --peer-script FILE */
  const char *simulate; /* --simulate MACHINE */
  bench_sim *sim;       /* its profile, or NULL */
} gemm_opts;

typedef struct result {
  pto_tile_shape tile;
  uint32_t tasks;
  double pto_ms, blas_ms, err;
  bench_stats ratio;          /* OpenBLAS ms / PTO ms, run pair by pair */
  double sb_ms, sb_err;       /* cblas_sbgemm (0: not run) */
  double torch_err;           /* PyTorch's C against OpenBLAS's */
  bench_gemm_torch_result tr; /* tr.ms 0: PyTorch not run */
  int torch_wrong;
  double sim_ms; /* --simulate: the simulated makespan (0: none) */
} result;

/* The buffers of a case: A and B as f32 (for bf16: the bf16 values
 * widened, which OpenBLAS's sgemm reads) and as bf16 bits; C for PTO and
 * every peer. */
typedef struct bufs {
  float *A, *B, *C, *Cb, *Cs, *Ct;
  uint16_t *Ah, *Bh;
} bufs;

static void bufs_free(bufs *b) {
  free(b->A);
  free(b->B);
  free(b->C);
  free(b->Cb);
  free(b->Cs);
  free(b->Ct);
  free(b->Ah);
  free(b->Bh);
}

static int bufs_new(const gcase *c, int bf16, bufs *b) {
  const size_t na = (size_t)(c->m * c->k), nb = (size_t)(c->k * c->n),
               nc = (size_t)(c->m * c->n);
  memset(b, 0, sizeof *b);
  b->A = pto_buffer_alloc(na * sizeof *b->A);
  b->B = pto_buffer_alloc(nb * sizeof *b->B);
  b->C = pto_buffer_alloc(nc * sizeof *b->C);
  b->Cb = pto_buffer_alloc(nc * sizeof *b->Cb);
  int ok = b->A && b->B && b->C && b->Cb;
  if (bf16) {
    b->Ah = pto_buffer_alloc(na * sizeof *b->Ah);
    b->Bh = pto_buffer_alloc(nb * sizeof *b->Bh);
    b->Cs = pto_buffer_alloc(nc * sizeof *b->Cs);
    b->Ct = pto_buffer_alloc(nc * sizeof *b->Ct);
    ok = ok && b->Ah && b->Bh && b->Cs && b->Ct;
  }
  if (!ok) {
    bufs_free(b);
    return -1;
  }
  srand(12345);
  for (size_t i = 0; i < na; i++)
    b->A[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  for (size_t i = 0; i < nb; i++)
    b->B[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  if (bf16) { /* the bf16 values, and exactly them as f32 */
    for (size_t i = 0; i < na; i++)
      b->A[i] = bench_bf16_f32(b->Ah[i] = to_bf16(b->A[i]));
    for (size_t i = 0; i < nb; i++)
      b->B[i] = bench_bf16_f32(b->Bh[i] = to_bf16(b->B[i]));
  }
  return 0;
}

/* Times PTO and OpenBLAS (and for bf16 cblas_sbgemm when exported, then
 * PyTorch) on case c with `threads` threads. 0 or 1 (error, printed). */
static int run_case(const bench_opts *o, const gemm_opts *go, const gcase *c,
                    int threads, int repeats, const openblas *ob,
                    const bench_peer *peer, result *res) {
  const int bf16 = go->dtype == PTO_BF16;
  const size_t nc = (size_t)(c->m * c->n);
  bufs b;
  double *t = calloc((size_t)repeats, sizeof *t),
         *tb = calloc((size_t)repeats, sizeof *tb),
         *ts = calloc((size_t)repeats, sizeof *ts),
         *pair = calloc((size_t)repeats, sizeof *pair);
  pto_program *p = NULL;
  pto_config *cfg = bench_config_new("gemm");
  pto_executable *e = NULL;
  pto_runtime *rt = NULL;
  int rc = 1, have_bufs = !bufs_new(c, bf16, &b);
  if (!cfg)
    goto done;
  if (!have_bufs || !t || !tb || !ts || !pair) {
    fprintf(stderr, "pto-bench gemm: out of memory\n");
    goto done;
  }
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
  p = pto_gemm_program_dtype(c->m, c->n, c->k, &res->tile, go->dtype);
  if (!p || pto_compile(p, cfg, &e) != PTO_OK) {
    fprintf(stderr, "pto-bench gemm: %s\n",
            p ? pto_program_error(p) : "out of memory");
    goto done;
  }
  res->tasks = pto_executable_num_tasks(e);
  if (!(rt = bench_runtime_new("gemm", &m, 0)))
    goto done;
  const void *in[2] = {bf16 ? (const void *)b.Ah : b.A,
                       bf16 ? (const void *)b.Bh : b.B};
  void *out[1] = {b.C};
  const int sb = bf16 && ob->sbgemm;
  /* PTO and OpenBLAS (then cblas_sbgemm) alternate run by run after a
   * warm-up each (r = -1), so a burst of noise on the machine (a neighbour
   * can halve the FMA rate for seconds) falls on both runs of a pair: the
   * ratio is the median of the pairs' ratios. OpenBLAS's threads spin for
   * about 0.1 s after a call and PTO's for a few ms, so each side starts
   * once the other's are asleep. */
  ob->set_threads(threads);
  for (int r = -1; r < repeats; r++) {
    if (threads > 1 || r < 0)
      bench_pause_ms(200); /* OpenBLAS's threads go to sleep */
    uint64_t t0 = bench_now_ns();
    st = pto_runtime_run(rt, e, in, out);
    if (r >= 0)
      t[r] = (double)(bench_now_ns() - t0) * 1e-6;
    if (st) {
      fprintf(stderr, "pto-bench gemm: %s\n", pto_executable_error(e));
      goto done;
    }
    bench_pause_ms(5); /* PTO's workers stop spinning */
    t0 = bench_now_ns();
    ob->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)c->m,
              (int)c->n, (int)c->k, 1.0f, b.A, (int)c->k, b.B, (int)c->n, 0.0f,
              b.Cb, (int)c->n);
    if (r >= 0)
      tb[r] = (double)(bench_now_ns() - t0) * 1e-6;
    if (sb) {
      t0 = bench_now_ns();
      ob->sbgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)c->m,
                 (int)c->n, (int)c->k, 1.0f, b.Ah, (int)c->k, b.Bh, (int)c->n,
                 0.0f, b.Cs, (int)c->n);
      if (r >= 0)
        ts[r] = (double)(bench_now_ns() - t0) * 1e-6;
    }
  }
  for (int r = 0; r < repeats; r++)
    pair[r] = tb[r] / t[r];
  res->ratio = bench_stats_of(pair, repeats);
  res->pto_ms = bench_median(t, repeats);
  if (go->sim) { /* the measured executable, or the program tiled for the
                  * simulated machine */
    pto_program *ps = NULL;
    if (!go->sim->same) {
      const pto_machine *sm = bench_sim_machine(go->sim);
      pto_tile_shape st_tile;
      if (!pto_gemm_tile(sm, c->m, c->n, c->k, sm->workers[PTO_CORE_CUBE],
                         &st_tile))
        ps = pto_gemm_program_dtype(c->m, c->n, c->k, &st_tile, go->dtype);
    }
    go->sim->threads = threads;
    if (bench_sim_case("gemm", go->sim, e, go->sim->same ? p : ps, cfg, 0,
                       NULL, &res->sim_ms, NULL))
      res->sim_ms = 0;
    pto_program_free(ps);
  }
  res->blas_ms = bench_median(tb, repeats);
  if (sb) {
    res->sb_ms = bench_median(ts, repeats);
    res->sb_err = rel_err(b.Cs, b.Cb, nc);
  }
  if (go->trace) { /* one more run, traced (after a warm-up on its new
                    * runtime: the first run's page faults are not
                    * the kernels'), summarised on stderr */
    bench_pause_ms(200);
    pto_runtime *trt = bench_runtime_new("gemm", &m, 1);
    if (trt && !bench_traced_run(trt, e, in, out)) {
      fprintf(stderr, "-- trace, %ldx%ldx%ld on %d threads:\n", (long)c->m,
              (long)c->n, (long)c->k, threads);
      pto_executable_trace_summary(e, stderr);
    }
    pto_runtime_free(trt);
  }
  pto_runtime_free(rt);
  rt = NULL;
  res->err = rel_err(b.C, b.Cb, nc);
  rc = 0;
  if (!(res->err <= REL_ERR_MAX)) {
    fprintf(stderr,
            "pto-bench gemm: %ldx%ldx%ld on %d threads: PTO's C differs "
            "from OpenBLAS's by %.3g (relative Frobenius norm > %g)\n",
            (long)c->m, (long)c->n, (long)c->k, threads, res->err, REL_ERR_MAX);
    rc = 1;
  }
  if (sb && !(res->sb_err <= SB_REL_ERR_MAX)) {
    fprintf(stderr,
            "pto-bench gemm: cblas_sbgemm's C differs from cblas_sgemm's by "
            "%.3g (> %g): not counted\n",
            res->sb_err, SB_REL_ERR_MAX);
    res->sb_ms = 0;
  }
  if (bf16 && peer) { /* PyTorch last, with PTO's workers stopped */
    /* its bf16 matmul is slow on CPUs without a bf16 unit: 3 runs */
    const int tr = repeats < 3 ? repeats : 3;
    bench_pause_ms(200);
    bench_progress(o, "gemm %ldx%ldx%ld, %d threads: PyTorch (%s), %d runs",
                   (long)c->m, (long)c->n, (long)c->k, threads, peer->python,
                   tr);
    if (bench_gemm_torch(o, peer, c->m, c->n, c->k, go->dtype, b.Ah, b.Bh,
                         threads, tr, b.Ct, &res->tr)) {
      rc = 1;
    } else {
      res->torch_err = rel_err(b.Ct, b.Cb, nc);
      if (!(res->torch_err <= TORCH_BF16_REL_ERR_MAX)) {
        fprintf(stderr,
                "pto-bench gemm: WRONG RESULT from PyTorch: its C differs "
                "from OpenBLAS's by %.3g (> %g)\n",
                res->torch_err, TORCH_BF16_REL_ERR_MAX);
        res->torch_wrong = 1;
        rc = 1;
      }
    }
  }
  bench_progress(o,
                 "gemm %ldx%ldx%ld, %d threads: PTO %.2f ms, OpenBLAS "
                 "%.2f ms",
                 (long)c->m, (long)c->n, (long)c->k, threads, res->pto_ms,
                 res->blas_ms);
done:
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(cfg);
  if (have_bufs)
    bufs_free(&b);
  free(t);
  free(tb);
  free(ts);
  free(pair);
  return rc;
}

/* ---- the command -----------------------------------------------------------
 */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "gemm [--dtype f32|bf16]\n"
        "                 [--trace] [--no-peer] [--python PATH]\n"
        "                 [--peer-script FILE] [--simulate MACHINE] "
        "[MxNxK...]\n"
        "\n"
        "GEMM, C = A x B row-major, C f32: PTO (kernels/gemm.c: pto_compile,\n"
        "pto_runtime_run on that many workers) against its peers, same\n"
        "inputs and threads, in one run, plus the peak of the instruction\n"
        "the matmul engine in use runs on (pto_matmul_engine: f32 FMAs of\n"
        "the widest vectors the CPU runs, or vdpbf16ps for avx512-bf16),\n"
        "measured in the same run. Default cases: 512, 1024, 2048 square\n"
        "and 128x8192x576 (--quick: 512 and 1024), on 1 and 2 threads\n"
        "(--threads N: N only).\n"
        "  --dtype f32   (default) A, B f32; the peer is OpenBLAS's\n"
        "                cblas_sgemm (OPENBLAS_CORETYPE=SkylakeX on an\n"
        "                AVX-512 CPU unless set).\n"
        "  --dtype bf16  A, B bf16 (the f32 draws rounded to nearest even);\n"
        "                PTO's engine multiplies them as bf16 where it has\n"
        "                a bf16 engine (avx512-bf16, k packed in pairs),\n"
        "                else widens them while packing. Peers, the\n"
        "                fastest counts: PyTorch's bf16 matmul and its f32\n"
        "                matmul on the widened operands\n"
        "                (tools/pto_bench_torch.py, 3 runs: its bf16 matmul\n"
        "                is slow on CPUs without a bf16 unit), OpenBLAS's\n"
        "                cblas_sbgemm when the library exports it (the\n"
        "                headline says when it does not), and cblas_sgemm on\n"
        "                the widened operands.\n"
        "  --no-peer     no PyTorch; --python PATH: its interpreter;\n"
        "                --peer-script FILE: another peer script.\n"
        "PTO and OpenBLAS alternate run by run. Prints medians (GFLOP/s),\n"
        "PTO / OpenBLAS as the median of the run pairs' speed ratios with\n"
        "their quartiles (robust to noise that lasts seconds), PTO / peer,\n"
        "and fractions of peak (the best of the probes before the cases\n"
        "and after each); fails when PTO's C differs from cblas_sgemm's\n"
        "(on the same values) by more than 1e-5 (relative Frobenius norm;\n"
        "bf16 products are exact in f32, so the bound is the same), or\n"
        "PyTorch's bf16 C by more than 0.1 (it rounds C to bf16 and may\n"
        "sum in bf16). --trace: one extra traced PTO run per case,\n"
        "summarised on stderr. --simulate MACHINE: each case also simulated\n"
        "(pto/sim.h) on MACHINE: host (this CPU's profile, pto-bench\n"
        "calibrate; the measured executable itself), host:N (its cores N\n"
        "times over), ascend, or a profile file; the figure goes under the\n"
        "row and into sim_ms, sim_machine, sim_ratio (simulated over\n"
        "measured).\n"
        "JSON fields: m, n, k, threads, dtype, engine, tile, tasks, pto_ms,\n"
        "openblas_ms, pto_gflops, openblas_gflops, peer (the fastest),\n"
        "peer_gflops, peak_gflops, ratio (PTO / OpenBLAS, the median pair),\n"
        "ratio_q25, ratio_q75 (its quartiles), peer_ratio\n"
        "(PTO / peer), pto_peak_fraction, openblas_peak_fraction, rel_err,\n"
        "correct; with bf16 also torch_gflops, torch_variant,\n"
        "torch_variants, torch_rel_err, sbgemm_gflops, sbgemm_rel_err\n"
        "(null when not run).\n",
        f);
}

static int parse_case(const char *s, gcase *c) {
  long long m, n, k;
  char tail;
  if (sscanf(s, "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 ||
      k < 1 || m > 65536 || n > 65536 || k > 65536)
    return -1;
  c->m = m;
  c->n = n;
  c->k = k;
  c->quick = 1;
  return 0;
}

/* The options; 0, or 2 after printing why. */
static int parse(int argc, char **argv, gemm_opts *go, gcase *cases,
                 size_t *n_cases) {
  for (int a = 1; a < argc; a++) {
    const char *v = a + 1 < argc ? argv[a + 1] : NULL;
    if (!strcmp(argv[a], "--trace")) {
      go->trace = 1;
    } else if (!strcmp(argv[a], "--no-peer")) {
      go->no_peer = 1;
    } else if (!strcmp(argv[a], "--python") ||
               !strcmp(argv[a], "--peer-script")) {
      if (!v || !*v) {
        fprintf(stderr, "pto-bench gemm: %s needs a %s\n", argv[a],
                argv[a][2] == 'p' && argv[a][3] == 'y' ? "path" : "file");
        return 2;
      }
      *(argv[a][2] == 'p' && argv[a][3] == 'y' ? &go->python : &go->script) = v;
      a++;
    } else if (!strcmp(argv[a], "--simulate")) {
      if (!v || !*v) {
        fprintf(stderr, "pto-bench gemm: --simulate needs a machine (host, "
                        "host:N, ascend or a profile file)\n");
        return 2;
      }
      go->simulate = v;
      a++;
    } else if (!strcmp(argv[a], "--dtype")) {
      if (v && !strcmp(v, "f32")) {
        go->dtype = PTO_F32;
      } else if (v && !strcmp(v, "bf16")) {
        go->dtype = PTO_BF16;
      } else {
        fprintf(stderr,
                "pto-bench gemm: --dtype: '%s' is neither f32 nor "
                "bf16\n",
                v ? v : "");
        return 2;
      }
      a++;
    } else if (*n_cases < MAX_CASES && !parse_case(argv[a], &cases[*n_cases])) {
      ++*n_cases;
    } else {
      fprintf(stderr, "pto-bench gemm: bad case '%s' (expected MxNxK)\n",
              argv[a]);
      usage(stderr);
      return 2;
    }
  }
  return 0;
}

/* The fastest peer of a result: its name and GFLOP/s. */
static double best_peer(const gcase *c, const gemm_opts *go, const result *r,
                        const char **name) {
  double best = gflops(c, r->blas_ms);
  *name = go->dtype == PTO_BF16 ? "openblas-sgemm-widened" : "openblas-sgemm";
  if (r->sb_ms > 0 && gflops(c, r->sb_ms) > best) {
    best = gflops(c, r->sb_ms);
    *name = "openblas-sbgemm";
  }
  if (r->tr.ms > 0 && !r->torch_wrong && gflops(c, r->tr.ms) > best) {
    best = gflops(c, r->tr.ms);
    *name = !strcmp(r->tr.best, "matmul") ? "torch-bf16" : "torch-widened-f32";
  }
  return best;
}

static int run(const bench_opts *o, int argc, char **argv) {
  gcase cases[MAX_CASES];
  size_t n_cases = 0;
  gemm_opts go = {PTO_F32, 0, 0, NULL, NULL, NULL, NULL};
  int prc = parse(argc, argv, &go, cases, &n_cases);
  if (prc)
    return prc;
  const int bf16 = go.dtype == PTO_BF16;
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
  bench_peer peer_s, *peer = NULL;
  if (bf16 && !go.no_peer) {
    char why[2048];
    bench_progress(o, "gemm: looking for the Python peer");
    if (!bench_peer_find(go.python, go.script, &peer_s, why, sizeof why))
      peer = &peer_s;
    else
      fprintf(stderr,
              "pto-bench gemm: no PyTorch peer (%s; tools/install-deps.sh "
              "installs python3-torch): OpenBLAS alone\n",
              why);
  }
  int cores = bench_cores(o), n_thr = 0, thr[2];
  bench_sim sim;
  if (go.simulate) {
    if (bench_sim_open(o, "gemm", go.simulate, cores, &sim))
      return 1;
    go.sim = &sim;
  }
  if (o->threads) {
    thr[n_thr++] = o->threads;
  } else {
    thr[n_thr++] = 1;
    if (cores >= 2)
      thr[n_thr++] = 2;
  }
  /* the peak of the instruction the engine in use runs on */
  const char *engine = pto_matmul_engine(go.dtype);
  const int native = bench_engine_bf16(engine);
  double peak[2] = {0, 0};
  const char *peak_isa = "none";
  for (int i = 0; i < n_thr; i++) {
    bench_progress(o, "gemm: %s peak on %d threads", engine ? engine : "FMA",
                   thr[i]);
    peak[i] = bench_peak_engine(engine, thr[i], 5, &peak_isa);
  }
  uint32_t mr, nr;
  pto_matmul_panel(&mr, &nr);
  FILE *out = bench_out(o);
  fprintf(out,
          "gemm %s row-major%s, median of R runs; PTO engine %s%s, panels "
          "%ux%u; OpenBLAS %s core %s (OPENBLAS_CORETYPE=%s)",
          bench_dtype_flag(go.dtype), bf16 ? " (A, B bf16; C f32)" : "",
          engine ? engine : "?",
          !bf16    ? ""
          : native ? " (bf16 packed in k pairs, multiplied as bf16)"
                   : " (bf16 widened to f32 while packing)",
          mr, nr, ob.config ? ob.config() : "?",
          ob.corename ? ob.corename() : "?",
          getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
  if (bf16)
    fprintf(out, "; cblas_sbgemm: %s; PyTorch: %s%s; the best peer counts",
            ob.sbgemm ? "exported" : "NOT exported by this OpenBLAS",
            peer ? "torch " : "none", peer ? peer->torch : "");
  fprintf(out, "; %s%s peak (the engine's)", peak_isa, native ? "" : " FMA");
  for (int i = 0; i < n_thr; i++)
    fprintf(out, " %s%d thr %.1f", i ? ", " : "", thr[i], peak[i]);
  fprintf(out, " GFLOP/s%s\n", peak[0] > 0 ? "" : " (not measured)");
  if (bf16)
    fprintf(out,
            "%-16s %3s %14s %5s %3s %9s %9s %9s %-6s %9s %9s %-22s %7s "
            "%6s %8s\n",
            "MxNxK", "thr", "tile", "tasks", "R", "PTO ms", "PTO GF/s",
            "torch GF/s", "(var)", "OBf32 GF/s", "sbgemm", "best peer",
            "PTO/peer", "PTO%pk", "rel err");
  else
    fprintf(out, "%-16s %3s %14s %5s %3s %9s %9s %9s %6s %13s %6s %6s %8s\n",
            "MxNxK", "thr", "tile", "tasks", "R", "PTO ms", "PTO GF/s",
            "OB GF/s", "PTO/OB", "(quartiles)", "PTO%pk", "OB%pk", "rel err");
  int rc = 0;
  for (size_t ci = 0; ci < n_cases; ci++)
    for (int ti = 0; ti < n_thr; ti++) {
      const gcase *c = &cases[ci];
      double flop = 2.0 * (double)c->m * (double)c->n * (double)c->k;
      int repeats = o->repeats   ? o->repeats
                    : o->quick   ? 3
                    : flop > 4e9 ? 7
                                 : 15;
      result r;
      memset(&r, 0, sizeof r);
      bench_progress(o, "gemm %ldx%ldx%ld on %d threads", (long)c->m,
                     (long)c->n, (long)c->k, thr[ti]);
      int bad = run_case(o, &go, c, thr[ti], repeats, &ob, peer, &r);
      if (bad && !r.pto_ms) {
        rc = 1;
        json_decref(r.tr.variants);
        continue;
      }
      rc |= bad;
      const char *pname;
      double pg = gflops(c, r.pto_ms), bg = gflops(c, r.blas_ms);
      double peer_g = best_peer(c, &go, &r, &pname);
      bench_peak_refresh(&peak[ti], engine, thr[ti], o->quick ? 1 : 3);
      double pk = peak[ti];
      char shape[40], tile[40];
      snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)c->m, (long)c->n,
               (long)c->k);
      snprintf(tile, sizeof tile, "%ux%ux%u", r.tile.cube_m, r.tile.cube_n,
               r.tile.cube_k);
      const int wrong = r.err > REL_ERR_MAX || !(r.err == r.err);
      if (bf16) {
        char tg[16] = "-", sg[16] = "-";
        if (r.tr.ms > 0)
          snprintf(tg, sizeof tg, "%.1f", gflops(c, r.tr.ms));
        if (r.sb_ms > 0)
          snprintf(sg, sizeof sg, "%.1f", gflops(c, r.sb_ms));
        fprintf(out,
                "%-16s %3d %14s %5u %3d %9.2f %9.1f %9s %-6s %9.1f %9s %-22s "
                "%6.2fx %5.1f%% %8.1e%s\n",
                shape, thr[ti], tile, r.tasks, repeats, r.pto_ms, pg, tg,
                r.tr.ms > 0 ? r.tr.best : "-", bg, ob.sbgemm ? sg : "n/a",
                pname, pg / peer_g, pk > 0 ? 100 * pg / pk : 0, r.err,
                wrong           ? "  WRONG"
                : r.torch_wrong ? "  torch WRONG"
                                : "");
      } else {
        fprintf(out,
                "%-16s %3d %14s %5u %3d %9.2f %9.1f %9.1f %5.2fx [%4.2f-%4.2f] "
                "%5.1f%% %5.1f%% %8.1e%s\n",
                shape, thr[ti], tile, r.tasks, repeats, r.pto_ms, pg, bg,
                r.ratio.median, r.ratio.q1, r.ratio.q3,
                pk > 0 ? 100 * pg / pk : 0, pk > 0 ? 100 * bg / pk : 0, r.err,
                wrong ? "  WRONG" : "");
      }
      fflush(out);
      json_t *j = json_pack(
          "{s:I, s:I, s:I, s:i, s:s, s:s?, s:[i,i,i], s:i, s:f, s:f, s:f, "
          "s:f, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b}",
          "m", (json_int_t)c->m, "n", (json_int_t)c->n, "k", (json_int_t)c->k,
          "threads", thr[ti], "dtype", bench_dtype_flag(go.dtype), "engine",
          engine, "tile", (int)r.tile.cube_m, (int)r.tile.cube_n,
          (int)r.tile.cube_k, "tasks", (int)r.tasks, "pto_ms", r.pto_ms,
          "openblas_ms", r.blas_ms, "pto_gflops", pg, "openblas_gflops", bg,
          "peer", pname, "peer_gflops", peer_g, "peak_gflops", pk, "ratio",
          r.ratio.median, "ratio_q25", r.ratio.q1, "ratio_q75", r.ratio.q3,
          "peer_ratio", pg / peer_g, "pto_peak_fraction",
          pk > 0 ? pg / pk : 0.0, "openblas_peak_fraction",
          pk > 0 ? bg / pk : 0.0, "rel_err", r.err, "correct", !wrong);
      if (j && bf16) {
        json_object_set_new(j, "torch_gflops",
                            r.tr.ms > 0 ? json_real(gflops(c, r.tr.ms))
                                        : json_null());
        json_object_set_new(j, "torch_variant",
                            r.tr.ms > 0 ? json_string(r.tr.best) : json_null());
        json_object_set_new(j, "torch_variants",
                            r.tr.variants ? json_incref(r.tr.variants)
                                          : json_null());
        json_object_set_new(j, "torch_rel_err",
                            r.tr.ms > 0 ? json_real(r.torch_err) : json_null());
        json_object_set_new(j, "sbgemm_gflops",
                            r.sb_ms > 0 ? json_real(gflops(c, r.sb_ms))
                                        : json_null());
        json_object_set_new(j, "sbgemm_rel_err",
                            r.sb_ms > 0 ? json_real(r.sb_err) : json_null());
        json_object_set_new(
            j, "sbgemm", json_string(ob.sbgemm ? "exported" : "not exported"));
      }
      json_decref(r.tr.variants);
      if (go.sim && r.sim_ms > 0)
        bench_sim_report(out, j, go.sim, r.sim_ms, r.pto_ms);
      json_array_append_new(bench_results(), j);
    }
  bench_sim_close(go.sim);
  return rc;
}

const bench_cmd bench_gemm = {
    "gemm",
    "GEMM (f32, or bf16 operands) against OpenBLAS and PyTorch, with the "
    "measured FMA peak",
    run, usage};
