/* pto/gemm.h: GEMM, C = A x B in f32 (row-major A [M,K], B [K,N],
 * C [M,N]), built as a PTO program with the public API, and its plain-C
 * reference. */
#ifndef PTO_GEMM_H
#define PTO_GEMM_H

#include <stdint.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* The cube tile {m, n, k} for an M x N x K f32 GEMM on machine mach run by
 * `workers` workers: pto_matmul_tile (pto/executable.h) with one batch,
 * the choice the compiler makes for a matmul whose tile nobody set. m x n
 * is the output block whose accumulator fits L0C in whole panels of the
 * micro-kernel (pto_matmul_panel), scored by reuse per packed element; k
 * splits K into accumulating slices whose packed A (m x k) fits L0A and B
 * (k x n) L0B, at most 256 (a B panel slice stays in the L1 cache). m and
 * n shrink while there are fewer than 2 tiles per worker. vec_rows and
 * vec_cols are left 0. Returns PTO_EINVAL for a NULL argument, a size < 1
 * or 0 workers, and PTO_ECAPACITY when not even one panel fits the
 * machine. */
PTO_API pto_status pto_gemm_tile(const pto_machine *mach, int64_t M, int64_t N,
                         int64_t K, uint32_t workers, pto_tile_shape *tile);

/* A new program "gemm" with inputs "A" f32 [M,K] and "B" f32 [K,N] and
 * output "C" = A x B, tiled by *tile (NULL: pto_gemm_tile for the host
 * machine and its workers), labelled "gemm". Returns NULL on ENOMEM;
 * otherwise check pto_program_status (bad sizes are reported there, naming
 * the op and the sizes). */
PTO_API pto_program *pto_gemm_program(int64_t M, int64_t N, int64_t K,
                              const pto_tile_shape *tile);

/* pto_gemm_program with A and B of dtype dt: PTO_F32, or PTO_BF16 (C
 * stays f32; products are exact, sums run in f32: the bf16 engine's
 * vdpbf16ps where the table has one, else the operands widened to f32
 * exactly as they are packed; pto_matmul_engine names the engine).
 * Another dt fails the program with PTO_EDTYPE. */
PTO_API pto_program *pto_gemm_program_dtype(int64_t M, int64_t N, int64_t K,
                                            const pto_tile_shape *tile,
                                            pto_dtype dt);

/* C = A x B accumulated in double, rounded once to f32. */
PTO_API void pto_gemm_ref(int64_t M, int64_t N, int64_t K, const float *A,
                  const float *B, float *C);

PTO_EXTERN_C_END

#endif /* PTO_GEMM_H */
