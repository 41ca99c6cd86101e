/* What the pto-bench subcommands share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pto/pto.h"

static json_t *results;
static int results_kept; /* printed by another process (rank 0) */

json_t *bench_results(void) {
  if (!results)
    results = json_array();
  return results;
}

void bench_results_keep(void) { results_kept = 1; }
int bench_results_kept(void) { return results_kept; }

FILE *bench_out(const bench_opts *o) {
  return o->json ? stderr : stdout;
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
  if (n <= 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_progress(const bench_opts *o, const char *fmt, ...) {
  if (!o->progress)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("pto-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int bench_cores(const bench_opts *o) {
  if (o->threads > 0)
    return o->threads;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void bench_spin_ns(uint64_t ns) {
  uint64_t end = bench_now_ns() + ns;
  while (bench_now_ns() < end)
    ;
}

void bench_pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

#define PROBE_ITERS (20ull * 1000 * 1000) /* ~0.1 s per probe */

void bench_openblas_coretype(const char *cmd) {
  if (!pto_isa_supported("avx512"))
    return; /* SkylakeX where AVX-512 is missing dies of SIGILL */
  const char *v = getenv("OPENBLAS_CORETYPE");
  if (!v || !v[0]) {
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    return;
  }
  static const char *const avx512_cores[] = {"skylakex", "cooperlake",
                                             "sapphirerapids"};
  for (size_t i = 0; i < sizeof avx512_cores / sizeof avx512_cores[0]; i++)
    if (!strcasecmp(v, avx512_cores[i]))
      return;
  fprintf(stderr,
          "pto-bench %s: warning: OPENBLAS_CORETYPE=%s holds OpenBLAS (and "
          "PyTorch's f32 matmuls, which run on it) to kernels without "
          "AVX-512 on this AVX-512 CPU: the peers run slower than they "
          "could (unset it, or set SkylakeX)\n",
          cmd, v);
}

int bench_engine_bf16(const char *engine) {
  const size_t n = engine ? strlen(engine) : 0;
  return n >= 5 && !strcmp(engine + n - 5, "-bf16");
}

/* engine: the matmul engine whose instruction to probe
 * (pto_matmul_engine); NULL or any f32 engine: f32 FMAs */
static double peak_probe(const char *engine, int threads, int repeats,
                         uint64_t iters, const char **isa) {
  if (engine && !strcmp(engine, "avx512-bf16") &&
      pto_isa_supported("avx512bf16")) {
    *isa = "AVX-512 BF16 (vdpbf16ps)";
    return bench_peak_avx512bf16(threads, repeats, iters);
  }
  if (pto_isa_supported("avx512")) {
    *isa = "AVX-512";
    return bench_peak_avx512(threads, repeats, iters);
  }
  if (pto_isa_supported("avx2")) {
    *isa = "AVX2";
    return bench_peak_avx2(threads, repeats, iters);
  }
  *isa = "none";
  return 0;
}

double bench_peak_fma(int threads, int repeats, const char **isa) {
  return peak_probe(NULL, threads, repeats, PROBE_ITERS, isa);
}

double bench_peak_engine(const char *engine, int threads, int repeats,
                         const char **isa) {
  return peak_probe(engine, threads, repeats, PROBE_ITERS, isa);
}

double bench_peak_fma_now(int threads) {
  const char *isa;
  return peak_probe(NULL, threads, 1, PROBE_ITERS / 5, &isa);
}

void bench_peak_refresh(double *peak, const char *engine, int threads,
                        int repeats) {
  const char *isa;
  if (*peak <= 0)
    return;
  const double again = peak_probe(engine, threads, repeats, PROBE_ITERS, &isa);
  *peak = again > *peak ? again : *peak;
}

int bench_machine(const char *cmd, int threads, pto_machine *m) {
  pto_status st = pto_machine_host(m);
  if (st) {
    fprintf(stderr, "pto-bench %s: host machine: %s\n", cmd, pto_strerror(st));
    return -1;
  }
  if ((uint32_t)threads > m->workers[PTO_CORE_VECTOR])
    fprintf(stderr,
            "pto-bench %s: warning: %d threads, but this process may run "
            "on %u core%s (taskset, cgroups): workers share cores and the "
            "figures do not scale\n",
            cmd, threads, m->workers[PTO_CORE_VECTOR],
            m->workers[PTO_CORE_VECTOR] == 1 ? "" : "s");
  m->shared = 1;
  m->workers[PTO_CORE_CUBE] = m->workers[PTO_CORE_VECTOR] = (uint32_t)threads;
  return 0;
}

pto_config *bench_config_new(const char *cmd) {
  pto_config *c = pto_config_new();
  const char *path = getenv("PTO_CONFIG");
  if (!c) {
    fprintf(stderr, "pto-bench %s: out of memory\n", cmd);
    return NULL;
  }
  if (path && pto_config_load_file(c, path) != PTO_OK) {
    fprintf(stderr, "pto-bench %s: PTO_CONFIG=%s: %s\n", cmd, path,
            pto_config_error(c));
    pto_config_free(c);
    return NULL;
  }
  return c;
}

pto_runtime *bench_runtime_new(const char *cmd, const pto_machine *m,
                               int trace) {
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = m;
  p.trace = trace;
  pto_runtime *rt = NULL;
  if (pto_runtime_new(&p, &rt)) {
    fprintf(stderr, "pto-bench %s: cannot start %u workers: %s\n", cmd,
            m->workers[PTO_CORE_VECTOR], pto_runtime_error(NULL));
    return NULL;
  }
  return rt;
}
