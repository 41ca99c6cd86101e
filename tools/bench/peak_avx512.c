/* The machine's AVX-512 f32 FMA peak, measured: each thread runs chains of
 * independent FMAs (more than FMA latency x pipes, so the pipes never wait)
 * and times itself; the threads run at once and their rates add up. The
 * only file of pto-bench compiled with AVX-512 flags (tools/CMakeLists.txt);
 * call it only where the CPU runs AVX-512F (bench/gemm.c checks). */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>

#include "bench/bench.h"

#define CHAINS 20                        /* independent accumulators */
#define ITERS (20ull * 1000 * 1000)     /* ~0.1 s per probe */

typedef struct probe {
  double gflops;
  float sink;
} probe;

static void *fma_loop(void *arg) {
  probe *p = arg;
  __m512 acc[CHAINS];
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < CHAINS; i++)
    acc[i] = _mm512_set1_ps((float)i);
  uint64_t t0 = bench_now_ns();
  for (uint64_t k = 0; k < ITERS; k++) {
#pragma GCC unroll 20
    for (int i = 0; i < CHAINS; i++)
      acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  double s = (double)(bench_now_ns() - t0) * 1e-9;
  __m512 sum = acc[0];
  for (int i = 1; i < CHAINS; i++)
    sum = _mm512_add_ps(sum, acc[i]);
  p->sink = _mm512_reduce_add_ps(sum);
  /* 16 lanes x 2 flops (multiply, add) per FMA */
  p->gflops = (double)ITERS * CHAINS * 32 / s * 1e-9;
  return NULL;
}

double bench_peak_avx512(int threads, int repeats) {
  enum { MAX_THREADS = 64 };
  if (threads < 1 || threads > MAX_THREADS || repeats < 1)
    return 0;
  /* the best probe: a machine's peak is the fastest it runs, and noise
   * (neighbours, frequency) only ever slows a probe down */
  double best = 0;
  for (int r = 0; r < repeats; r++) {
    double gflops = 0;
    pthread_t th[MAX_THREADS];
    probe pr[MAX_THREADS] = {{0, 0}};
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
