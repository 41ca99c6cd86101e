/* core/build.h (internal): what the program builder (core/program.c) and
 * the op constructors (core/program_ops.c) share: checks that record the
 * program's sticky error, and node creation. */
#ifndef PTO_CORE_BUILD_H
#define PTO_CORE_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "core/program.h"

/* Records "<op>[ '<label>']: <message>" as p's sticky error (the first one
 * stays); returns NULL. */
__attribute__((format(printf, 4, 5))) pto_tensor *
pto__fail(pto_program *p, const char *op, pto_status st, const char *fmt, ...);

/* Checks that each operand is a live tensor of p. A NULL operand after an
 * earlier error just propagates it. 1: fine; 0: error recorded. */
int pto__check_operands(pto_program *p, const char *op, int n,
                        pto_tensor *const *ts);
/* ndim in 1..PTO_MAX_DIMS, every dim >= 1 and numel < 2^40 ("what" names
 * the shape in the message). 1 or 0, as above. */
int pto__check_shape(pto_program *p, const char *op, const char *what, int ndim,
                     const int64_t *shape);
/* dt is a pto_dtype. 1 or 0, as above. */
int pto__check_dtype(pto_program *p, const char *op, pto_dtype dt);

/* A new root tensor (dense storage) named name ("<op><id>" when NULL). */
pto_tensor *pto__new_root(pto_program *p, const char *op, pto_dtype dt,
                          int ndim, const int64_t *shape, const char *name);
/* A node of op with n_in inputs producing one new tensor of dt/shape, in
 * the current tile, knob and label scopes; NULL (error recorded) when the
 * shape is out of range or memory runs out. */
pto_node *pto__new_node(pto_program *p, pto_top op, int n_in,
                        pto_tensor *const *in, pto_dtype dt, int ndim,
                        const int64_t *shape);

/* Shape values (extents, or dynamic dims' codes) as maxima and dims (-1
 * static) for the ndim axes; dyn[ndim..] get -1. Codes must be p's. */
int pto__resolve_shape(const pto_program *p, int ndim, const int64_t *shape,
                       int64_t *max, int8_t *dyn);
/* Joins axes a and b that an op matches, of the same length `extent`,
 * into *out: both static, or the same dim from the same offset, need
 * nothing; the same dim from two offsets is refused; otherwise the
 * equality of their valid lengths is recorded for runs to check when they
 * bind. 1, or 0 with the error recorded. */
int pto__dim_join(pto_program *p, const char *op, pto_dref a, pto_dref b,
                  int64_t extent, pto_dref *out);
/* Axis ax of t as a pto_dref, and setting it. */
static inline pto_dref pto__axis(const pto_tensor *t, int ax) {
  pto_dref r = {t->dyn[ax], t->dyn[ax] >= 0 ? t->dyn_off[ax] : 0,
                t->dyn[ax] >= 0 ? t->dyn_mul[ax] : 1};
  return r;
}
static inline void pto__set_axis(pto_tensor *t, int ax, pto_dref r) {
  t->dyn[ax] = r.dim;
  t->dyn_off[ax] = r.dim >= 0 ? r.off : 0;
  t->dyn_mul[ax] = r.dim >= 0 ? r.mul : 1;
}
/* Sets the dynamic dims of n's results from its operands'
 * (core/program_dims.c). pto__new_node calls it for the ops whose shape
 * follows from their operands alone; the matmuls, top-k, concat and
 * sparse attention call it once their flags, parameters and second
 * results are set. 1, or 0 with the error recorded. */
int pto__node_dims(pto_program *p, pto_node *n);

/* "[64,32]" into buf. */
void pto__shape_str(int ndim, const int64_t *shape, char *buf, size_t size);

/* Tensor descriptions for messages: D(t) expands to a temporary buffer. */
typedef struct {
  char s[128];
} desc_buf;
static inline desc_buf describe(const pto_tensor *t) {
  desc_buf b;
  pto__tensor_desc(t, b.s, sizeof b.s);
  return b;
}
#define D(t) (describe(t).s)

static inline int is_float(pto_dtype dt) {
  return dt != PTO_I32;
}

/* bf16 and f16 are storage types: computed on as f32. */
static inline pto_dtype compute_dtype(pto_dtype dt) {
  return dt == PTO_I32 ? PTO_I32 : PTO_F32;
}

static inline pto_tensor *node_out(pto_node *n) {
  return n ? n->out[0] : NULL;
}

#endif /* PTO_CORE_BUILD_H */
