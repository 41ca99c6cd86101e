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

pto_program *pto_example_softmax(void) {
  pto_program *p = pto_program_new("softmax");
  if (!p)
    return NULL;
  const int64_t s[2] = {1024, 1024};
  pto_tensor *X = pto_input(p, "X", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 1024);
  pto_program_push_label(p, "softmax");
  pto_output(p, pto_softmax(p, X), "Y");
  pto_program_pop_label(p);
  return p;
}

pto_program *pto_example_mlp(void) {
  pto_program *p = pto_program_new("mlp");
  if (!p)
    return NULL;
  const int64_t x[2] = {128, 256}, w1[2] = {256, 512}, w2[2] = {512, 128};
  pto_tensor *X = pto_input(p, "X", PTO_F32, 2, x);
  pto_tensor *W1 = pto_input(p, "W1", PTO_F32, 2, w1);
  pto_tensor *W2 = pto_input(p, "W2", PTO_F32, 2, w2);
  pto_program_set_vec_tile(p, 64, 128);
  pto_program_set_cube_tile(p, 64, 64, 64);
  pto_program_push_label(p, "mlp");
  pto_program_push_label(p, "up");
  pto_tensor *h = pto_matmul(p, X, W1, 0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "act");
  h = pto_relu(p, h);
  pto_program_pop_label(p);
  pto_program_push_label(p, "down");
  pto_output(p, pto_matmul(p, h, W2, 0), "Y");
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  return p;
}

pto_program *pto_example_big_add(void) {
  pto_program *p = pto_program_new("big-add");
  if (!p)
    return NULL;
  const int64_t s[2] = {4096, 4096};
  pto_tensor *x[8];
  for (int i = 0; i < 8; i++) {
    char name[4] = {'X', (char)('0' + i), 0, 0};
    x[i] = pto_input(p, name, PTO_F32, 2, s);
  }
  pto_program_set_vec_tile(p, 32, 128);
  pto_program_push_label(p, "big-add");
  pto_tensor *y = x[0];
  for (int i = 1; i < 8; i++)
    y = pto_add(p, y, x[i]);
  pto_output(p, y, "Y");
  pto_program_pop_label(p);
  return p;
}
