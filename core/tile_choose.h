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
  unsigned vec_shrink; /* pto__vector_tile's shrink for chosen vector tiles */
} pto_tile_ctx;

/* The cube tile {m, n, k} for `batch` independent M x N x K matmuls run by
 * `workers` workers on machine mach, with micro-kernel panels of mr rows
 * and nr cols (pto_matmul_tile in pto/executable.h says how it is scored).
 * PTO_EINVAL for a NULL pointer or a size < 1, PTO_ECAPACITY when not even
 * one panel fits the machine's L0A/L0B/L0C. */
pto_status pto__matmul_tile(const pto_machine *mach, int64_t batch, int64_t M,
                            int64_t N, int64_t K, uint32_t workers,
                            uint32_t mr, uint32_t nr, pto_tile_shape *tile);

/* The tile of an attention chain tiled as one op (core/tiling_flash.c):
 * cube_m query rows a task, cube_k keys a block of the online softmax
 * (the second matmul's K), cube_n the Dv output columns; for `batch`
 * planes of M queries and N keys, D the queries' and Dv the values'
 * width. The rows give every worker about four tasks (a causal mask
 * makes the blocks' work unequal) in whole nr panels (the columns of the
 * transposed scores), at most 128; the key block is the largest of 128,
 * 64, ... rounded up to whole mr panels whose Q, K and V blocks, P, the
 * scores and the output fit L0A, L0B and L0C. PTO_EINVAL for a bad
 * argument, PTO_ECAPACITY when nothing fits. */
pto_status pto__flash_tile(const pto_machine *mach, int64_t batch, int64_t M,
                           int64_t N, int64_t D, int64_t Dv, uint32_t workers,
                           uint32_t mr, uint32_t nr, pto_tile_shape *tile);

/* The vector tile {rows, cols} for the ops of one chain whose vector tile
 * nobody set: `batch` planes of R rows, the widest row C elements, run by
 * `workers` workers on machine mach. A tile holds about UB / 8 bytes of
 * f32 (halved `shrink` times: pto_compile retries a chain whose fused
 * subgraph did not fit with a smaller tile before it gives the fusion up):
 * whole rows where such a tile holds one, so that a reduction over the
 * row and its broadcast back fuse, as many of them as keep two tasks per
 * worker; else rows cut into column blocks. PTO_EINVAL for a NULL pointer
 * or a size < 1. */
#define PTO_VEC_SHRINK_MAX 2u /* the smallest: a quarter of the first */
pto_status pto__vector_tile(const pto_machine *mach, int64_t batch, int64_t R,
                            int64_t C, uint32_t workers, unsigned shrink,
                            pto_tile_shape *tile);

/* The cube tile {m heads a task, n slots a block of the online softmax}
 * of a sparse attention (pto_sparse_attention) of `heads` query heads of
 * width D, values of width Dv and topk slots a query, on machine mach
 * with micro-kernel panels of mr rows and nr cols: all heads a task when
 * their queries and scores fit L0A (else as few balanced head tiles as
 * fit, in whole nr panels), as many slots a block as the gathered rows'
 * G^T fits in L0B and their V in L1 (at most 512), fewer when the final
 * output and the softmax state would not fit L1 beside them.
 * PTO_EINVAL for a NULL pointer or a size < 1. */
pto_status pto__attention_tile(const pto_machine *mach, int64_t heads,
                               int64_t D, int64_t Dv, int64_t topk,
                               uint32_t mr, uint32_t nr, pto_tile_shape *tile);

/* The cube tile {m, n} of a pto_matmul_relu_wsum (the lightning indexer's
 * score) whose cube tile nobody set, on machine mach with panels of mr x
 * nr: `batch` products of `rows` rows of a in groups of `group` (a query's
 * heads), K deep, N keys. L0B holds whole groups' a^T (a group padded to
 * whole nr panels, each row of K floats plus a 64-byte row of weights),
 * as many groups as fit (at most rows / group); L0A as many keys as fit
 * in whole panels (at most N, at least one panel); then the keys halve
 * (whole panels, at least four) while there are fewer than two tiles per
 * cube worker. m = groups x group. PTO_EINVAL for a NULL pointer or a
 * size < 1. */
pto_status pto__relu_wsum_tile(const pto_machine *mach, int64_t batch,
                               int64_t rows, int64_t group, int64_t K,
                               int64_t N, uint32_t mr, uint32_t nr,
                               pto_tile_shape *tile);

struct pto_program;

/* The vector tiles of the ops of p whose vector tile nobody set (vec_set[i]
 * 0 for op i) and that are tiled by rows and cols (element-wise, custom
 * vector, reduction, gather, concat, fill, iota, assemble), into tile[i]
 * with chosen[i] = 1; the others are left alone. Ops that pass a tensor of
 * the same rows (and planes) to each other form a chain that gets one
 * tile, sized by its widest row, so that their stores and loads match and
 * they can fuse. PTO_ENOMEM, or PTO_OK. */
pto_status pto__choose_vector_tiles(const struct pto_program *p,
                                    const uint8_t *live,
                                    const uint8_t *vec_set,
                                    const pto_tile_ctx *ctx,
                                    pto_tile_shape *tile, uint8_t *chosen);

#endif /* PTO_CORE_TILE_CHOOSE_H */
