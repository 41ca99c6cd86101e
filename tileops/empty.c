/* What an instruction gives when a run's dynamic extents leave one of its
 * sources empty but not its destination: a reduction of no element is its
 * identity, a matmul over no k adds nothing, a selection from no candidate
 * is all padding. The executor asks before it calls a kernel, so kernels
 * never see an empty source (tileops/tileops.h). */
#include <math.h>
#include <stdint.h>

#include "tileops/ref.h"
#include "tileops/tileops.h"

static int empty_tile(const pto_tile *t) {
  return !t->valid_rows || !t->valid_cols;
}

/* dst's valid region set to v (i32 tiles: iv). */
static void fill(pto_tile *d, float v, int32_t iv) {
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (d->dtype == PTO_I32)
        sti(d, r, c, iv);
      else
        stf(d, r, c, v);
}

/* K of a matmul instruction, from its operands as pto__insn_flops reads
 * them (0 when a clip emptied it). */
static uint32_t matmul_k(int op, const pto_targs *a) {
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  switch (op) {
  case PTO_OP_TMATMUL_GA:
    return s1->valid_rows;
  case PTO_OP_TMATMUL_GB:
    return s0->valid_cols;
  case PTO_OP_TMATMUL_RELU_WSUM_G:
    return s0->valid_rows;
  default:
    return a->flags & PTO_TF_TRANS_A ? s0->valid_rows : s0->valid_cols;
  }
}

int pto__insn_empty(int op, const pto_targs *a) {
  const pto_tile *x = a->src[0];
  pto_tile *d = a->dst[0];
  switch (op) {
  case PTO_OP_TROWSUM:
  case PTO_OP_TCOLSUM:
    if (!empty_tile(x))
      return 0;
    fill(d, 0.0f, 0);
    return 1;
  case PTO_OP_TROWMAX:
  case PTO_OP_TCOLMAX:
    if (!empty_tile(x))
      return 0;
    fill(d, -INFINITY, INT32_MIN);
    return 1;
  case PTO_OP_TROWMIN:
  case PTO_OP_TCOLMIN:
    if (!empty_tile(x))
      return 0;
    fill(d, INFINITY, INT32_MAX);
    return 1;
  /* the fused loads of softmax: what the row reductions of an empty
   * window give (the loaded tile, dst0, is as empty as the window) */
  case PTO_OP_TLOADROWMAX:
    if (!empty_tile(d))
      return 0;
    fill(a->dst[1], -INFINITY, 0);
    return 1;
  case PTO_OP_TLOADEXPDIFSUM:
  case PTO_OP_TLOADSOFTMAXSTORE: /* and it stores nothing */
    if (!empty_tile(d))
      return 0;
    fill(a->dst[1], 0.0f, 0);
    return 1;
  case PTO_OP_TROWEXPANDEXPDIFSUM: /* a row sum of no exp */
    if (!empty_tile(x))
      return 0;
    fill(a->dst[1], 0.0f, 0);
    return 1;
  case PTO_OP_TMATMUL:
  case PTO_OP_TMATMUL_ACC:
  case PTO_OP_TMATMUL_RELU_WSUM:
  case PTO_OP_TMATMUL_GA:
  case PTO_OP_TMATMUL_GB:
  case PTO_OP_TMATMUL_RELU_WSUM_G:
    if (matmul_k(op, a) || (a->flags & PTO_TF_ROWSCALE))
      return 0; /* a row scale still applies: the kernel's */
    /* an accumulation adds nothing (its destination is its accumulator,
     * in place); a product is 0 (ReLU of 0 too) */
    if (op == PTO_OP_TMATMUL_ACC ||
        (op == PTO_OP_TMATMUL_GB && (a->flags & PTO_TF_ACC)))
      return 1;
    fill(d, 0.0f, 0);
    return 1;
  case PTO_OP_TTOPK:
    if (!empty_tile(x))
      return 0;
    /* masked (the only kind a dynamic row reaches): every slot padding */
    fill(a->dst[0], -INFINITY, 0);
    fill(a->dst[1], 0.0f, -1);
    return 1;
  default:
    return 0;
  }
}
