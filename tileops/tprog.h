/* tileops/tprog.h (internal): a tile program being built (pto/tileprog.h),
 * shared by the builder (tileops/tprog.c) and the op it becomes with its
 * checks, rebuilds and evaluator (tileops/tprog_op.c). */
#ifndef PTO_TILEOPS_TPROG_H
#define PTO_TILEOPS_TPROG_H

#include "core/error.h"
#include "core/tprog.h"

struct pto_tprog {
  pto_tprog_def d;
  unsigned cap_args, cap_tiles, cap_insts;
  uint32_t open[PTO_TP_VARS]; /* the open loops' FOR instructions */
  int depth;
  pto_error err;
};

/* Runs d with the scalar reference of its instructions (core/tprog.h's
 * pto_tprog_eval_fn, the evaluator's). */
pto_status pto__tprog_eval(const pto_tprog_def *d, const pto_tp_view *views,
                           char *msg, size_t msg_size);

#endif /* PTO_TILEOPS_TPROG_H */
