/* Row softmax through PTO, and the plain-C reference. */
#include "pto/softmax.h"

#include <math.h>

uint32_t pto_softmax_tile_rows(int64_t cols, size_t l2_bytes) {
  if (!l2_bytes)
    l2_bytes = 1u << 20;
  /* x, exp(x - max) and the quotient are live at once (the planner reuses
   * x's buffer for the quotient's input), plus two row vectors */
  size_t row = (size_t)cols * sizeof(float) * 3 + 2 * 64;
  size_t rows = l2_bytes / 2 / (row ? row : 1);
  return rows < 1 ? 1 : rows > 64 ? 64 : (uint32_t)rows;
}

pto_program *pto_softmax_program(int64_t rows, int64_t cols,
                                 uint32_t tile_rows, size_t l2_bytes) {
  pto_program *p = pto_program_new("softmax");
  if (!p)
    return NULL;
  const int64_t shape[2] = {rows, cols};
  pto_tensor *x = pto_input(p, "X", PTO_F32, 2, shape);
  uint32_t tr = tile_rows ? tile_rows : pto_softmax_tile_rows(cols, l2_bytes);
  pto_program_set_vec_tile(p, tr, (uint32_t)cols);
  pto_program_push_label(p, "softmax");
  pto_output(p, pto_softmax(p, x), "Y");
  pto_program_pop_label(p);
  return p;
}

void pto_softmax_ref(const float *x, float *y, int64_t cols, int64_t r0,
                     int64_t r1) {
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t c = 0; c < cols; c++)
      m = xr[c] > m ? xr[c] : m;
    double sum = 0;
    for (int64_t c = 0; c < cols; c++) {
      float e = expf(xr[c] - m);
      yr[c] = e;
      sum += e;
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t c = 0; c < cols; c++)
      yr[c] *= inv;
  }
}
