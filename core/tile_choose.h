/* core/tile_choose.h (internal): tile shapes the compiler chooses for ops
 * whose tile shape nobody set (core/tile_choose.c). */
#ifndef PTO_CORE_TILE_CHOOSE_H
#define PTO_CORE_TILE_CHOOSE_H

#include <stdint.h>

#include "pto/config.h"
#include "pto/status.h"
#include "pto/types.h"

/* What tiling needs to know of the machine and the engine it plans for:
 * the machine's local memories and workers, and the matmul micro-kernel's
 * panel widths (rows of A, cols of B). */
typedef struct pto_tile_ctx {
  const pto_machine *machine;
  uint32_t mr, nr;
} pto_tile_ctx;

/* The cube tile {m, n, k} for `batch` independent M x N x K matmuls run by
 * `workers` workers on machine mach, with micro-kernel panels of mr rows
 * and nr cols (pto_matmul_tile in pto/executable.h says how it is scored).
 * PTO_EINVAL for a NULL pointer or a size < 1, PTO_ECAPACITY when not even
 * one panel fits the machine's L0A/L0B/L0C. */
pto_status pto__matmul_tile(const pto_machine *mach, int64_t batch, int64_t M,
                            int64_t N, int64_t K, uint32_t workers,
                            uint32_t mr, uint32_t nr, pto_tile_shape *tile);

#endif /* PTO_CORE_TILE_CHOOSE_H */
