/* pto/types.h: element types, core types and tile shapes. */
#ifndef PTO_TYPES_H
#define PTO_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "pto/export.h"

PTO_EXTERN_C_BEGIN

#define PTO_MAX_DIMS 4

/* Element types. f32 and i32 are computed on; bf16 and f16 are storage types
 * that loads convert to f32 and casts convert back. */
#define PTO_DTYPE_MAP(X)                                                       \
  X(F32, "f32", 4)                                                             \
  X(I32, "i32", 4)                                                             \
  X(BF16, "bf16", 2)                                                           \
  X(F16, "f16", 2)

typedef enum pto_dtype {
#define PTO__DTYPE_ENUM(name, str, size) PTO_##name,
  PTO_DTYPE_MAP(PTO__DTYPE_ENUM)
#undef PTO__DTYPE_ENUM
  PTO_DTYPE_COUNT
} pto_dtype;

PTO_API const char *pto_dtype_name(pto_dtype dt); /* "?" when out of range */
PTO_API size_t pto_dtype_size(pto_dtype dt);      /* 0 when out of range */

/* The kind of core an instruction, program or task runs on. MEMORY marks
 * data-movement instructions, which run on whichever core owns the subgraph. */
typedef enum pto_core_type {
  PTO_CORE_CUBE,
  PTO_CORE_VECTOR,
  PTO_CORE_MEMORY,
  PTO_CORE_TYPE_COUNT
} pto_core_type;

PTO_API const char *pto_core_type_name(pto_core_type c);

/* The tile shapes in force when a tensor op is added. A vector tile
 * {rows, cols} applies to element-wise, reduce and data-movement ops (over the
 * last two dimensions); a cube tile {m, n, k} applies to matmul. A zero means
 * "the whole extent" (untiled along that axis). */
typedef struct pto_tile_shape {
  uint32_t vec_rows, vec_cols;
  uint32_t cube_m, cube_n, cube_k;
} pto_tile_shape;

/* Attention masks over S1 queries and S2 keys. CAUSAL is end-aligned (the
 * queries are the last S1 positions of the sequence): query i sees key j
 * only when j <= S2 - S1 + i. */
typedef enum pto_mask_mode {
  PTO_MASK_NONE,
  PTO_MASK_CAUSAL,
  PTO_MASK_MODE_COUNT
} pto_mask_mode;
/* "none", "causal"; "?" when out of range. */
PTO_API const char *pto_mask_name(pto_mask_mode m);
/* The mode named name; PTO_EINVAL (and *m unchanged) for any other name. */
PTO_API int pto_mask_from_name(const char *name, pto_mask_mode *m);

/* Vector tile 32x128 (16 KiB of f32), matmul untiled: the shape a program
 * starts with (pto_program_tile). It is not what an op nobody tiled gets:
 * the compiler chooses those (docs/tiles.md). */
PTO_API pto_tile_shape pto_tile_shape_default(void);

PTO_EXTERN_C_END

#endif /* PTO_TYPES_H */
