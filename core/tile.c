/* Tile geometry: 64-byte aligned rows. */
#include "pto/tileop.h"

uint32_t pto_tile_stride(pto_dtype dt, uint32_t cols) {
  size_t es = pto_dtype_size(dt);
  if (!es)
    return 0;
  uint32_t per_line = (uint32_t)(PTO_TILE_ALIGN / es);
  return (cols + per_line - 1) / per_line * per_line;
}

size_t pto_tile_bytes(pto_dtype dt, uint32_t rows, uint32_t cols) {
  return (size_t)rows * pto_tile_stride(dt, cols) * pto_dtype_size(dt);
}
