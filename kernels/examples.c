/* Example operators and their plain-C references. */
#include "examples.h"

enum { EX_N = 64, EX_W = 32 };

pto_program *pto_example_pypto(void) {
  pto_program *p = pto_program_new("pypto-example");
  if (!p)
    return NULL;
  const int64_t ab[2] = {EX_N, EX_N}, w[2] = {EX_N, EX_W};
  pto_tensor *A = pto_input(p, "A", PTO_F32, 2, ab);
  pto_tensor *B = pto_input(p, "B", PTO_F32, 2, ab);
  pto_tensor *W = pto_input(p, "W", PTO_F32, 2, w);
  pto_program_set_vec_tile(p, 32, 32);
  pto_program_set_cube_tile(p, 0, 0, 0);
  pto_program_push_label(p, "example");
  pto_tensor *x = pto_add(p, pto_muls(p, A, 2.0), B);
  pto_tensor *y = pto_matmul(p, x, W, 0);
  pto_output(p, pto_rowsum(p, y), "C");
  pto_program_pop_label(p);
  return p;
}

void pto_example_pypto_ref(const float *A, const float *B, const float *W,
                           float *C) {
  for (int i = 0; i < EX_N; i++) {
    double sum = 0;
    for (int j = 0; j < EX_W; j++)
      for (int k = 0; k < EX_N; k++)
        sum += (2.0 * A[i * EX_N + k] + B[i * EX_N + k]) * W[k * EX_W + j];
    C[i] = (float)sum;
  }
}
