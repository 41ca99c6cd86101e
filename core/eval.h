/* core/eval.h (internal): what the two files of the reference evaluator,
 * core/eval.c (the run, the scalar semantics and the element-wise ops) and
 * core/eval_ops.c (matmul, top-k, gather, custom instructions and sparse
 * attention), share: the evaluation context, element access, index helpers,
 * the run-time error, and the ops eval_ops.c defines for eval.c's table.
 * Included by those two only. */
#ifndef PTO_CORE_EVAL_H
#define PTO_CORE_EVAL_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "core/convert.h"
#include "core/program.h"

/* ---- element access ----------------------------------------------------- */

typedef struct eval_ctx {
  pto_program *p;
  const void **rd; /* by tensor id: a root's storage, to read */
  void **wr;       /* by tensor id: an op result's storage, to write */
} eval_ctx;

/* Wraps a 64-bit two's-complement value to i32 (modulo 2^32), without
 * relying on implementation-defined conversions. */
static inline int32_t wrap32(uint64_t u) {
  uint32_t v = (uint32_t)u;
  return v <= INT32_MAX ? (int32_t)v : -(int32_t)(~v) - 1;
}

static inline double load(const void *base, pto_dtype dt, int64_t i) {
  switch (dt) {
  case PTO_F32:
    return ((const float *)base)[i];
  case PTO_I32:
    return ((const int32_t *)base)[i];
  case PTO_BF16:
    return pto__bf16_to_f32(((const uint16_t *)base)[i]);
  case PTO_F16:
    return pto__f16_to_f32(((const uint16_t *)base)[i]);
  default:
    return 0;
  }
}

/* Stores v rounded to dt. An i32 value reaching here is already an integer
 * in range (select, topk, full, casts from i32); it is saturated anyway so
 * that no input can make the conversion undefined. */
static inline void store(void *base, pto_dtype dt, int64_t i, double v) {
  switch (dt) {
  case PTO_F32:
    ((float *)base)[i] = (float)v;
    break;
  case PTO_I32:
    ((int32_t *)base)[i] = isnan(v)         ? 0
                           : v <= INT32_MIN ? INT32_MIN
                           : v >= INT32_MAX ? INT32_MAX
                                            : (int32_t)v;
    break;
  case PTO_BF16:
    ((uint16_t *)base)[i] = pto__f32_to_bf16((float)v);
    break;
  case PTO_F16:
    ((uint16_t *)base)[i] = pto__f32_to_f16((float)v);
    break;
  default:
    break;
  }
}

/* Element i of t's root storage, as a double or as an integer (i32). */
static inline double ldf(const eval_ctx *e, const pto_tensor *t, int64_t off) {
  return load(e->rd[t->root->id], t->dtype, off);
}
static inline int64_t ldi(const eval_ctx *e, const pto_tensor *t, int64_t off) {
  return ((const int32_t *)e->rd[t->root->id])[off];
}
/* Element j of an op result (dense, offset 0). */
static inline void stf(const eval_ctx *e, const pto_tensor *out, int64_t j,
                       double v) {
  store(e->wr[out->id], out->dtype, j, v);
}
static inline void sti(const eval_ctx *e, const pto_tensor *out, int64_t j,
                       uint64_t v) {
  ((int32_t *)e->wr[out->id])[j] = wrap32(v);
}
/* Copies one raw element (same dtype) from t at off to out at j. */
static inline void copy_elem(const eval_ctx *e, const pto_tensor *t,
                             int64_t off, const pto_tensor *out, int64_t j) {
  size_t es = pto_dtype_size(t->dtype);
  memcpy((char *)e->wr[out->id] + (size_t)j * es,
         (const char *)e->rd[t->root->id] + (size_t)off * es, es);
}

/* ---- index helpers ------------------------------------------------------ */

static inline int64_t numel(const pto_tensor *t) {
  return pto_tensor_numel(t);
}

/* Multi-index of row-major linear index j in shape. */
static inline void unravel(int64_t j, int nd, const int64_t *shape,
                           int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = j % shape[d];
    j /= shape[d];
  }
}

static inline int64_t ravel(int nd, const int64_t *shape, const int64_t *idx) {
  int64_t j = 0;
  for (int d = 0; d < nd; d++)
    j = j * shape[d] + idx[d];
  return j;
}

/* Storage offset of element idx (an index into an nd-dim result) in t, with
 * numpy broadcasting: t's dims are right-aligned and a dim of 1 stays 0. */
static inline int64_t bcast_off(const pto_tensor *t, int nd,
                                const int64_t *idx) {
  int64_t off = t->offset;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != 1)
      off += idx[nd - t->ndim + d] * t->stride[d];
  return off;
}

/* ---- run-time errors ---------------------------------------------------- */

/* Records "<op>[ '<label>']: <message>" as the run-time error. */
__attribute__((format(printf, 5, 6))) static inline pto_status
run_fail(pto_program *p, const char *op, const char *label, pto_status st,
         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pto__error_op(&p->run_err, 0, st, op, label, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- ops of core/eval_ops.c --------------------------------------------- */

pto_status pto__eval_matmul(eval_ctx *e, const pto_node *n);
pto_status pto__eval_topk(eval_ctx *e, const pto_node *n);
pto_status pto__eval_gather(eval_ctx *e, const pto_node *n);
pto_status pto__eval_custom(eval_ctx *e, const pto_node *n);
pto_status pto__eval_attention(eval_ctx *e, const pto_node *n);
pto_status pto__eval_tprog(eval_ctx *e, const pto_node *n);

#endif /* PTO_CORE_EVAL_H */
