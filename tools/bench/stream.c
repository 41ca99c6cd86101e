/* STREAM's triad, the DRAM probe of pto-bench softmax and pto-bench ops
 * (declared in bench/bench.h). Compiled with OpenMP, as the peers are
 * (tools/CMakeLists.txt): the probe runs on the threads the peers use. */
#include <stddef.h>

#include "bench/bench.h"

void bench_triad(float *restrict a, const float *restrict b,
                 const float *restrict c, size_t n, int threads) {
  const float s = 3.0f;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < n; i++)
    a[i] = b[i] + s * c[i];
}
