/* GEMM as a PTO program, its tile choice, and the plain-C reference. */
#include "pto/gemm.h"
#include "pto/pto.h"

#include <stddef.h>

pto_status pto_gemm_tile(const pto_machine *mach, int64_t M, int64_t N,
                         int64_t K, uint32_t workers, pto_tile_shape *tile) {
  return pto_matmul_tile(mach, 1, M, N, K, workers, tile);
}

pto_program *pto_gemm_program(int64_t M, int64_t N, int64_t K,
                              const pto_tile_shape *tile) {
  return pto_gemm_program_dtype(M, N, K, tile, PTO_F32);
}

pto_program *pto_gemm_program_dtype(int64_t M, int64_t N, int64_t K,
                                    const pto_tile_shape *tile, pto_dtype dt) {
  pto_program *p = pto_program_new("gemm");
  if (!p)
    return NULL;
  pto_tile_shape chosen = pto_tile_shape_default();
  if (!tile) {
    pto_machine host;
    if (pto_machine_host(&host) == PTO_OK &&
        pto_gemm_tile(&host, M, N, K, host.workers[PTO_CORE_CUBE],
                      &chosen) == PTO_OK)
      tile = &chosen;
  }
  const int64_t as[2] = {M, K}, bs[2] = {K, N};
  if (dt != PTO_F32 && dt != PTO_BF16) {
    pto_program_fail(p, PTO_EDTYPE, "gemm", "operands of %s: f32 or bf16 only",
                     pto_dtype_name(dt));
    return p;
  }
  pto_tensor *A = pto_input(p, "A", dt, 2, as);
  pto_tensor *B = pto_input(p, "B", dt, 2, bs);
  if (tile)
    pto_program_set_cube_tile(p, tile->cube_m, tile->cube_n, tile->cube_k);
  pto_program_push_label(p, "gemm");
  pto_output(p, pto_matmul(p, A, B, 0), "C");
  pto_program_pop_label(p);
  return p;
}

void pto_gemm_ref(int64_t M, int64_t N, int64_t K, const float *A,
                  const float *B, float *C) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double sum = 0;
      for (int64_t k = 0; k < K; k++)
        sum += (double)A[i * K + k] * B[k * N + j];
      C[i * N + j] = (float)sum;
    }
}
