/* The program builder's data movement and fills: gather, concat of any
 * count, assemble (a tensor written into a window of another: chains of
 * them are one op), full, and iota along any axis. Each checks its
 * operands and records a node (core/build.h); a failed check records the
 * program's sticky error, naming the op, its label, the tensors and their
 * sizes, and returns NULL. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/build.h"

/* ---- gather ------------------------------------------------------------- */

/* The checks and the node of pto_gather and pto_gather_else (other:
 * NULL for pto_gather). */
static pto_tensor *gather(pto_program *p, const char *op, pto_tensor *table,
                          pto_tensor *index, pto_tensor *other,
                          unsigned flags) {
  pto_tensor *in[3] = {table, index, other};
  const int n_in = other ? 3 : 2;
  if (!p || !pto__check_operands(p, op, n_in, in))
    return NULL;
  if (flags & ~(unsigned)(PTO_GATHER_STRICT | PTO_GATHER_PAD))
    return pto__fail(p, op, PTO_EINVAL, "unknown flags 0x%x", flags);
  if (table->ndim != 2)
    return pto__fail(p, op, PTO_ESHAPE, "table %s must have 2 dims [N,D]",
                     D(table));
  if (index->dtype != PTO_I32)
    return pto__fail(p, op, PTO_EDTYPE, "index %s must be i32", D(index));
  if (index->ndim + 1 > PTO_MAX_DIMS)
    return pto__fail(p, op, PTO_ESHAPE,
                     "index %s has %d dims; the result would exceed %d",
                     D(index), index->ndim, PTO_MAX_DIMS);
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, index->shape, (size_t)index->ndim * sizeof *shape);
  shape[index->ndim] = table->shape[1];
  if (other) {
    if (other->dtype != table->dtype)
      return pto__fail(p, op, PTO_EDTYPE,
                       "other %s and table %s differ in dtype", D(other),
                       D(table));
    int same = other->ndim == index->ndim + 1;
    for (int d = 0; same && d <= index->ndim; d++)
      same = other->shape[d] == shape[d];
    if (!same)
      return pto__fail(p, op, PTO_ESHAPE,
                       "other %s must have the result's shape: index %s's "
                       "dims, then table %s's %" PRId64 " columns",
                       D(other), D(index), D(table), table->shape[1]);
  }
  pto_node *n = pto__new_node(p, PTO_TOP_GATHER, n_in, in, table->dtype,
                              index->ndim + 1, shape);
  if (n) /* -1 is the other's row: padding, strict or not */
    n->flags = flags | (other ? PTO_GATHER_PAD : 0u);
  return node_out(n);
}

pto_tensor *pto_gather(pto_program *p, pto_tensor *table, pto_tensor *index,
                       unsigned flags) {
  return gather(p, "gather", table, index, NULL, flags);
}

pto_tensor *pto_gather_else(pto_program *p, pto_tensor *table,
                            pto_tensor *index, pto_tensor *other,
                            unsigned flags) {
  if (p && !other)
    return pto__fail(p, "gather_else", PTO_EINVAL, "other is NULL");
  return gather(p, "gather_else", table, index, other, flags);
}

/* ---- concat and assemble ------------------------------------------------ */

pto_tensor *pto_concat(pto_program *p, int n, pto_tensor *const *ts, int axis) {
  if (!p)
    return NULL;
  if (n < 1 || !ts)
    return pto__fail(p, "concat", PTO_EINVAL,
                     "%d tensors%s; it takes 1 or more", n,
                     ts ? "" : " (ts is NULL)");
  if (!pto__check_operands(p, "concat", n, ts))
    return NULL;
  const pto_tensor *a = ts[0];
  int ax = axis < 0 ? axis + a->ndim : axis;
  if (ax < 0 || ax >= a->ndim)
    return pto__fail(p, "concat", PTO_EINVAL, "axis %d is not an axis of %s",
                     axis, D(a));
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  const int64_t max = (INT64_C(1) << 40) - 1;
  for (int i = 1; i < n; i++) {
    const pto_tensor *t = ts[i];
    if (t->dtype != a->dtype)
      return pto__fail(p, "concat", PTO_EDTYPE,
                       "%s and %s (input %d) differ in dtype", D(a), D(t), i);
    int same = t->ndim == a->ndim;
    for (int d = 0; same && d < a->ndim; d++)
      same = d == ax || t->shape[d] == a->shape[d];
    if (!same)
      return pto__fail(p, "concat", PTO_ESHAPE,
                       "%s and %s (input %d) differ outside axis %d", D(a),
                       D(t), i, ax);
    /* each dim is < 2^40: the sum stays far inside int64 until it is
     * refused (pto__new_node names the result's shape) */
    shape[ax] = shape[ax] > max ? shape[ax] : shape[ax] + t->shape[ax];
  }
  pto_node *node =
      pto__new_node(p, PTO_TOP_CONCAT, n, ts, a->dtype, a->ndim, shape);
  if (!node)
    return NULL;
  node->ival = ax;
  return pto__node_dims(p, node) ? node->out[0] : NULL;
}

/* Boxes [lo, hi) of nd axes, 2 * nd int64 each: lo[0..nd), then hi. */
enum { BOX_MAX = 64 }; /* the uncovered part of a chain's base we follow */

/* Appends to out (room for cap boxes, *n used) the parts of box a outside
 * box c: up to 2 nd boxes, slabs cut axis by axis. -1 when they do not
 * fit. */
static int box_minus(int nd, const int64_t *a, const int64_t *c, int64_t *out,
                     int *n, int cap) {
  for (int d = 0; d < nd; d++)
    if (c[d] >= a[nd + d] || c[nd + d] <= a[d]) { /* disjoint: a whole */
      if (*n >= cap)
        return -1;
      memcpy(out + (size_t)*n * 2 * nd, a, 2 * (size_t)nd * sizeof *a);
      ++*n;
      return 0;
    }
  int64_t rest[2 * PTO_MAX_DIMS];
  memcpy(rest, a, 2 * (size_t)nd * sizeof *a);
  for (int d = 0; d < nd; d++) {
    const int64_t lo = c[d] > rest[d] ? c[d] : rest[d];
    const int64_t hi = c[nd + d] < rest[nd + d] ? c[nd + d] : rest[nd + d];
    for (int side = 0; side < 2; side++) { /* below lo, then from hi */
      if (side == 0 ? rest[d] >= lo : hi >= rest[nd + d])
        continue;
      if (*n >= cap)
        return -1;
      int64_t *b = out + (size_t)*n * 2 * nd;
      memcpy(b, rest, 2 * (size_t)nd * sizeof *b);
      if (side == 0)
        b[nd + d] = lo;
      else
        b[d] = hi;
      ++*n;
    }
    rest[d] = lo;
    rest[nd + d] = hi;
  }
  return 0;
}

pto_tensor *pto_assemble(pto_program *p, pto_tensor *dst, pto_tensor *src,
                         const int64_t *begin) {
  static const char op[] = "assemble";
  pto_tensor *in[2] = {dst, src};
  if (!p || !pto__check_operands(p, op, 2, in))
    return NULL;
  if (!begin)
    return pto__fail(p, op, PTO_EINVAL, "begin is NULL (block %s into %s)",
                     D(src), D(dst));
  if (src->dtype != dst->dtype)
    return pto__fail(p, op, PTO_EDTYPE,
                     "block %s and %s differ in dtype (assemble copies "
                     "values: cast the block first)",
                     D(src), D(dst));
  if (src->ndim != dst->ndim)
    return pto__fail(p, op, PTO_ESHAPE, "block %s has %d dims, %s has %d",
                     D(src), src->ndim, D(dst), dst->ndim);
  const int nd = dst->ndim;
  char at[96];
  pto__shape_str(nd, begin, at, sizeof at);
  for (int d = 0; d < nd; d++)
    if (begin[d] < 0 || begin[d] > dst->shape[d] - src->shape[d])
      return pto__fail(p, op, PTO_ERANGE,
                       "block %s at %s does not fit in %s: axis %d spans "
                       "[%" PRId64 ", %" PRId64 ") of [0, %" PRId64 ")",
                       D(src), at, D(dst), d, begin[d],
                       begin[d] > INT64_MAX - src->shape[d]
                           ? INT64_MAX
                           : begin[d] + src->shape[d],
                       dst->shape[d]);
  /* the chain's uncovered part: the previous assemble's, or all of dst */
  const pto_node *prev = dst->root == dst && dst->producer &&
                                 dst->producer->op == PTO_TOP_ASSEMBLE
                             ? dst->producer
                             : NULL;
  int64_t whole[2 * PTO_MAX_DIMS], cut[2 * PTO_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    whole[d] = 0;
    whole[nd + d] = dst->shape[d];
    cut[d] = begin[d];
    cut[nd + d] = begin[d] + src->shape[d];
  }
  int n_prev = prev ? (int)prev->ival : 1;
  const int64_t *boxes = prev ? prev->offs + nd : whole;
  int64_t *uncov = NULL;
  int n_uncov = 0;
  if (n_prev > 0) {
    uncov = pto__arena_alloc(&p->arena,
                             (size_t)BOX_MAX * 2 * (size_t)nd * sizeof *uncov,
                             8);
    if (!uncov)
      return pto__fail(p, op, PTO_ENOMEM, "out of memory");
    for (int i = 0; i < n_prev && n_uncov >= 0; i++)
      if (box_minus(nd, boxes + (size_t)i * 2 * nd, cut, uncov, &n_uncov,
                    BOX_MAX))
        n_uncov = -1; /* too many pieces to follow: the base stays */
  } else if (n_prev < 0) {
    n_uncov = -1;
  }
  pto_node *node = pto__new_node(p, PTO_TOP_ASSEMBLE, 2, in, dst->dtype, nd,
                                 dst->shape);
  if (!node)
    return NULL;
  int64_t *offs = pto__arena_alloc(
      &p->arena,
      ((size_t)nd + (n_uncov > 0 ? (size_t)n_uncov * 2 * (size_t)nd : 0)) *
          sizeof *offs,
      8);
  if (!offs)
    return pto__fail(p, op, PTO_ENOMEM, "out of memory");
  memcpy(offs, begin, (size_t)nd * sizeof *offs);
  if (n_uncov > 0)
    memcpy(offs + nd, uncov, (size_t)n_uncov * 2 * (size_t)nd * sizeof *offs);
  node->offs = offs;
  node->ival = n_uncov;
  if (n_uncov == 0) /* every element of the base is written over */
    node->flags |= PTO_ASSEMBLE_COVERED;
  return node->out[0];
}

/* ---- fills -------------------------------------------------------------- */

pto_tensor *pto_full(pto_program *p, pto_dtype dt, int ndim,
                     const int64_t *shape, double value) {
  if (!p || !pto__check_dtype(p, "full", dt) ||
      !pto__check_shape(p, "full", "full", ndim, shape))
    return NULL;
  if (dt == PTO_I32 && !(value >= INT32_MIN && value <= INT32_MAX))
    return pto__fail(p, "full", PTO_ERANGE, "value %g is outside i32", value);
  pto_node *n = pto__new_node(p, PTO_TOP_FULL, 0, NULL, dt, ndim, shape);
  if (n)
    n->scalar = dt == PTO_I32 ? nearbyint(value) : value;
  return node_out(n);
}

/* pto_iota_axis's checks and node; op names the call. */
static pto_tensor *iota(pto_program *p, const char *op, pto_dtype dt, int ndim,
                        const int64_t *codes, int axis, int64_t start) {
  if (!p || !pto__check_dtype(p, op, dt) ||
      !pto__check_shape(p, op, op, ndim, codes))
    return NULL;
  /* the checks below on the maxima; the node keeps the dims' codes */
  int64_t shape[PTO_MAX_DIMS];
  int8_t dyn[PTO_MAX_DIMS];
  pto__resolve_shape(p, ndim, codes, shape, dyn);
  if (dt != PTO_I32 && dt != PTO_F32)
    return pto__fail(p, op, PTO_EDTYPE, "%s makes i32 or f32, not %s", op,
                     pto_dtype_name(dt));
  const int ax = axis < 0 ? axis + ndim : axis;
  if (ax < 0 || ax >= ndim) {
    char sh[64];
    pto__shape_str(ndim, shape, sh, sizeof sh);
    return pto__fail(p, op, PTO_EINVAL, "axis %d is not an axis of %s", axis,
                     sh);
  }
  /* counted in i32 (TCI's immediate), then converted: shape[] < 2^40 and
   * start is checked first, so the sum cannot overflow */
  if (start < INT32_MIN || start > INT32_MAX ||
      start + shape[ax] - 1 > INT32_MAX)
    return pto__fail(p, op, PTO_ERANGE,
                     "values from %" PRId64 " over the %" PRId64
                     " entries of axis %d are outside i32",
                     start, shape[ax], ax);
  pto_node *n = pto__new_node(p, PTO_TOP_IOTA, 0, NULL, dt, ndim, codes);
  if (!n)
    return NULL;
  n->ival = start;
  n->axis = ax;
  return n->out[0];
}

pto_tensor *pto_iota(pto_program *p, pto_dtype dt, int ndim,
                     const int64_t *shape, int64_t start) {
  return iota(p, "iota", dt, ndim, shape, -1, start);
}

pto_tensor *pto_iota_axis(pto_program *p, pto_dtype dt, int ndim,
                          const int64_t *shape, int axis, int64_t start) {
  return iota(p, "iota_axis", dt, ndim, shape, axis, start);
}
