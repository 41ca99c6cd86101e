/* kernels/examples.h: small example operators built with the public API,
 * each with a plain-C reference. */
#ifndef PTO_KERNELS_EXAMPLES_H
#define PTO_KERNELS_EXAMPLES_H

#include "pto/pto.h"

PTO_EXTERN_C_BEGIN

/* PyPTO's worked example: C = rowsum(matmul(A*2 + B, W)), A and B [64,64],
 * W [64,32], C [64,1]; vector tile 32x32, matmul untiled. Inputs A, B, W;
 * output C. Returns a program whose status tells whether it was built. */
pto_program *pto_example_pypto(void);

/* The same computed directly in double. */
void pto_example_pypto_ref(const float *A, const float *B, const float *W,
                           float *C);

/* Causal attention softmax(q k^T / sqrt(D), key j hidden from query i
 * where j > i) v of q, k, v [H, S, D] f32 tensors of p, written as a tile
 * program (expert mode, kernels/examples_flash.c): blocks of tq query rows
 * of one head, key steps of kb (tq a multiple of kb, dividing S; 0: the
 * largest power of two up to 256 dividing S), the steps past the diagonal
 * skipped; the queries scaled by a tensor op in front. A tuned tile
 * program (pto_tile_program_tuned): a config's cube_tile [tq, kb, 0] for
 * its label builds it again with those. Its [H, S, D] output, or NULL
 * with p's error set. */
pto_tensor *pto_example_flash_expert(pto_program *p, pto_tensor *q,
                                     pto_tensor *k, pto_tensor *v,
                                     uint32_t tq, uint32_t kb);

/* Row softmax of X [1024,1024] f32 (output Y), vector tile 16x1024: one
 * row block per tile, thousands of tile instructions. Label "softmax". */
pto_program *pto_example_softmax(void);

/* A small MLP: Y = relu(X W1) W2 with X [128,256], W1 [256,512],
 * W2 [512,128], f32; cube tile 64x64x64, vector tile 64x128. Labels
 * "mlp.up", "mlp.act", "mlp.down". Inputs X, W1, W2; output Y. */
pto_program *pto_example_mlp(void);

/* A large element-wise sum: Y = X0 + X1 + ... + X7, each [4096,4096] f32,
 * vector tile 32x128: 7 adds of 4096 tiles, 114 688 tile instructions, to
 * time compilation (too large to run in a test). Label "big-add". */
pto_program *pto_example_big_add(void);

PTO_EXTERN_C_END

#endif /* PTO_KERNELS_EXAMPLES_H */
