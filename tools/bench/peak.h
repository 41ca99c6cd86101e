/* tools/bench/peak.h (internal to pto-bench): the f32 FMA peak probe, one
 * template for every vector width. Each thread runs chains of independent
 * FMAs (more than FMA latency x pipes, so the pipes never wait) and times
 * itself; the threads run at once and their rates add up. Included once by
 * each ISA's file (peak_avx2.c, peak_avx512.c), the only files of pto-bench
 * compiled with those flags (tools/CMakeLists.txt), after defining
 *   PEAK_FN      the function's name
 *   VEC          the vector type, LANES its f32 lanes
 *   CHAINS       independent accumulators: at least FMA latency x pipes,
 *                and with the two constants no more than the registers
 *   SET1 FMADD ADD REDUCE   the intrinsics (FMADD(acc, x, y))
 *   OPERANDS     optional: declares FMADD's x and y (default: f32
 *                vectors of SET1)
 * bench_peak_fma (bench/util.c) calls the widest one the CPU runs. */
#include <pthread.h>
#include <stdint.h>

#include "bench/bench.h"

#ifndef OPERANDS
#define OPERANDS const VEC x = SET1(0.999999f), y = SET1(1e-7f);
#endif

typedef struct probe {
  uint64_t iters;
  double gflops;
  float sink;
} probe;

static void *fma_loop(void *arg) {
  probe *p = arg;
  VEC acc[CHAINS];
  OPERANDS
  for (int i = 0; i < CHAINS; i++)
    acc[i] = SET1((float)i);
  uint64_t t0 = bench_now_ns();
  for (uint64_t k = 0; k < p->iters; k++) {
#pragma GCC unroll 32
    for (int i = 0; i < CHAINS; i++)
      acc[i] = FMADD(acc[i], x, y);
  }
  double s = (double)(bench_now_ns() - t0) * 1e-9;
  VEC sum = acc[0];
  for (int i = 1; i < CHAINS; i++)
    sum = ADD(sum, acc[i]);
  p->sink = REDUCE(sum);
  /* LANES lanes x 2 flops (multiply, add) per FMADD */
  p->gflops = (double)p->iters * CHAINS * LANES * 2 / s * 1e-9;
  return NULL;
}

double PEAK_FN(int threads, int repeats, uint64_t iters) {
  enum { MAX_THREADS = 64 };
  if (threads < 1 || threads > MAX_THREADS || repeats < 1 || iters < 1)
    return 0;
  /* the best probe: a machine's peak is the fastest it runs, and noise
   * (neighbours, frequency) only ever slows a probe down */
  double best = 0;
  for (int r = 0; r < repeats; r++) {
    double gflops = 0;
    pthread_t th[MAX_THREADS];
    probe pr[MAX_THREADS];
    for (int t = 0; t < threads; t++)
      pr[t] = (probe){iters, 0, 0};
    int started = 0;
    while (started < threads &&
           !pthread_create(&th[started], NULL, fma_loop, &pr[started]))
      started++;
    for (int t = 0; t < started; t++) {
      pthread_join(th[t], NULL);
      gflops += pr[t].gflops;
    }
    if (started < threads)
      return 0; /* could not run them all at once */
    best = gflops > best ? gflops : best;
  }
  return best;
}
