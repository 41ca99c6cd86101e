/* tileops/tprog.h (internal): a tile program being built (pto/tileprog.h),
 * shared by the builder (tileops/tprog.c) and the op it becomes with its
 * checks, rebuilds and evaluator (tileops/tprog_op.c). */
#ifndef PTO_TILEOPS_TPROG_H
#define PTO_TILEOPS_TPROG_H

#include "core/error.h"
#include "core/tprog.h"
#include "pto/tileop.h"

struct pto_tprog {
  pto_tprog_def d;
  unsigned cap_args, cap_tiles, cap_insts;
  uint32_t open[PTO_TP_VARS]; /* the open loops' FOR instructions */
  int depth;
  pto_error err;
};

/* A tile of declaration t at data: its capacity all valid (windows and
 * instructions move whole tiles). */
static inline pto_tile pto__tprog_tile(const pto_tp_tile *t, void *data) {
  pto_tile x;
  x.data = data;
  x.dtype = t->dtype;
  x.rows = x.valid_rows = t->rows;
  x.cols = x.valid_cols = t->cols;
  x.stride = pto_tile_stride(t->dtype, t->cols);
  return x;
}

/* Runs d with the scalar reference of its instructions (core/tprog.h's
 * pto_tprog_eval_fn, the evaluator's). */
pto_status pto__tprog_eval(const pto_tprog_def *d, const pto_tp_view *views,
                           char *msg, size_t msg_size);

#endif /* PTO_TILEOPS_TPROG_H */
