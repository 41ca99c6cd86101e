/* tools/bench/gemm_peer.h (internal to pto-bench): pto-bench gemm's
 * PyTorch peer, the "gemm" workload of tools/pto_bench_torch.py (C = A x B
 * by torch.matmul in the inputs' dtype, and for bf16 also on the operands
 * widened to f32; the faster counts), run on the case's own A and B. */
#ifndef PTO_TOOLS_BENCH_GEMM_PEER_H
#define PTO_TOOLS_BENCH_GEMM_PEER_H

#include <jansson.h>
#include <stdint.h>

#include "bench/bench.h"
#include "bench/peer.h"

typedef struct bench_gemm_torch_result {
  double ms;        /* the fastest variant's median */
  char best[32];    /* its name */
  json_t *variants; /* {"name": median ms or null}; owned by the caller */
} bench_gemm_torch_result;

/* Runs the peer on A [m,k] and B [k,n] of dtype dt (f32, or bf16 as its
 * bits) on `threads` threads, `repeats` timed runs after one warm-up; its
 * C (f32 [m,n]) into C. 0, or -1 after printing why. */
int bench_gemm_torch(const bench_opts *o, const bench_peer *peer, int64_t m,
                     int64_t n, int64_t k, pto_dtype dt, const void *A,
                     const void *B, int threads, int repeats, float *C,
                     bench_gemm_torch_result *r);

#endif /* PTO_TOOLS_BENCH_GEMM_PEER_H */
