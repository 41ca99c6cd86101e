/* pto/tileop.h: tiles and user-defined (custom) tile instructions.
 *
 * A tile is a 2-D block in a core's local memory: a static capacity
 * (rows x cols, padded row stride) and a dynamic valid region for edge tiles.
 * Buffers are 64-byte aligned and the stride keeps every row 64-byte aligned.
 *
 * A custom tile instruction is a C function over tiles that the tiler,
 * partitioner and runtime treat like a built-in one. Its tensor op is a
 * tile-local map: the output is cut into vector tiles and the function is
 * called once per tile with the co-located tiles of every input (inputs must
 * have the output's shape). It runs on a worker thread: it must not allocate,
 * lock or block, and it returns 0 or a negative status, which fails the run.
 */
#ifndef PTO_TILEOP_H
#define PTO_TILEOP_H

#include <stddef.h>
#include <stdint.h>

#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

#define PTO_TILE_ALIGN 64

typedef struct pto_tile {
  void *data;                      /* PTO_TILE_ALIGN-aligned */
  pto_dtype dtype;
  uint32_t rows, cols;             /* static capacity */
  uint32_t stride;                 /* elements between rows, >= cols */
  uint32_t valid_rows, valid_cols; /* dynamic valid region */
} pto_tile;

/* Row stride (elements) that keeps rows of `cols` elements 64-byte aligned. */
PTO_API uint32_t pto_tile_stride(pto_dtype dt, uint32_t cols);
/* Bytes of local memory a rows x cols tile of dt occupies. */
PTO_API size_t pto_tile_bytes(pto_dtype dt, uint32_t rows, uint32_t cols);

/* The panel widths the active instruction table packs matmul operands in:
 * rows of an A panel (*mr) and cols of a B panel (*nr), its micro-kernel's
 * register block (PTO_ISA chooses the table). The compiler pads a matmul's
 * A tile to a multiple of *mr rows and its B tile to a multiple of *nr
 * cols, so cube tiles {m, n, k} with m and n multiples of them waste no
 * local memory. */
PTO_API void pto_matmul_panel(uint32_t *mr, uint32_t *nr);

/* The engine that runs matmuls on operands of dtype dt under the active
 * instruction table, as "<isa>-<what it computes in>": "scalar-f32",
 * "avx2-f32", "avx512-f32" are f32 engines: bf16 and f16 operands are
 * widened to f32 (exactly) as they are loaded and packed, their products
 * are exact in f32 and the sums run in f32, so a bf16 matmul matches the
 * scalar reference within the f32 tolerance of its accumulation order.
 * The avx512bf16 table names "avx512-bf16" for PTO_BF16: operands loaded
 * from bf16 tensors stay bf16, packed in k pairs, and vdpbf16ps multiplies
 * them (products exact in f32, sums in f32 with subnormals flushed to
 * zero): TMATMUL, TMATMUL_ACC, and the operators' TMATMUL_RELU_WSUM_G (the
 * indexer's q.k^T) and TMATMUL_GA (the attention's q.kv^T) on bf16 tables;
 * TMATMUL_GB (P.V, P being f32) widens bf16 on every table. Chosen at
 * start-up with the table (PTO_ISA forces one); NULL for i32, a bad dt,
 * or when PTO_ISA names a table this machine cannot run. */
PTO_API const char *pto_matmul_engine(pto_dtype dt);

typedef int (*pto_custom_fn)(pto_tile *dst, const pto_tile *const *src,
                             int n_src, void *user);

typedef struct pto_custom_op_desc {
  const char *name;     /* unique; copied */
  pto_core_type core;   /* PTO_CORE_VECTOR or PTO_CORE_CUBE */
  int n_src;            /* 1..4 input tiles */
  pto_dtype out_dtype;  /* dtype of the output tile */
  size_t scratch_bytes; /* local memory it needs beyond its operands */
  pto_custom_fn fn;
  void *user;           /* passed to fn */
} pto_custom_op_desc;

/* Registers a custom tile instruction for the life of the process. On success
 * *id receives its instruction id (>= the number of built-in instructions).
 * EINVAL for a missing name or function, an n_src outside 1..4 or a core type
 * other than cube or vector; EINVAL also when the name is taken. */
PTO_API pto_status pto_custom_op_register(const pto_custom_op_desc *desc,
                                          int *id);
/* The id registered under name, or -1. */
PTO_API int pto_custom_op_find(const char *name);

/* Applies custom instruction id to n tensors of equal shape (the output has
 * that shape and the registered out_dtype). */
PTO_API pto_tensor *pto_custom(pto_program *p, int id, int n,
                               pto_tensor *const *inputs);

PTO_EXTERN_C_END

#endif /* PTO_TILEOP_H */
