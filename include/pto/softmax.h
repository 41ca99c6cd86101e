/* pto/softmax.h: row softmax, y[r][c] = exp(x[r][c] - max_r) / sum_r,
 * built with the public API, and its plain-C reference. */
#ifndef PTO_SOFTMAX_H
#define PTO_SOFTMAX_H

#include <stdint.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* Input X [rows, cols] f32, output Y, label "softmax". Each vector tile is
 * tile_rows whole rows ({tile_rows, cols}), so the row max and sum of a
 * tile need no other tile and the whole chain fuses into one program that
 * reads X once and writes Y once. tile_rows 0 picks the most rows whose
 * fused working set (three tiles of the row block) fits half of an L2
 * the size of `l2_bytes` (0: 1 MiB). Returns a program whose status tells
 * whether it was built. */
PTO_API pto_program *pto_softmax_program(int64_t rows, int64_t cols,
                                 uint32_t tile_rows, size_t l2_bytes);

/* The tile rows pto_softmax_program picks for tile_rows 0. */
PTO_API uint32_t pto_softmax_tile_rows(int64_t cols, size_t l2_bytes);

/* Plain C, one pass over memory per row (max, then exp and a double sum,
 * then the scale, while the row is in cache), rows [r0, r1). */
PTO_API void pto_softmax_ref(const float *x, float *y, int64_t cols, int64_t r0,
                     int64_t r1);

PTO_EXTERN_C_END

#endif /* PTO_SOFTMAX_H */
