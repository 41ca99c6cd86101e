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

PTO_EXTERN_C_END

#endif /* PTO_KERNELS_EXAMPLES_H */
