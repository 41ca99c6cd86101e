/* Dynamic dims through the ops: which dynamic dim each axis of an op's
 * results has, derived from its operands' as the op derives its shape.
 * Axes the op matches up (broadcast axes, a matmul's K, concat's other
 * axes) join their dims: a dynamic dim against a static extent or another
 * dim is an equality a run checks when it binds them (pto__dim_join); an
 * axis the compiler cannot follow at a run-time extent is refused here,
 * naming the op, the tensor and the dim. */
#include <inttypes.h>

#include "core/build.h"

/* Refuses op because axis `axis` of t is dynamic where `why`. */
static int refuse(pto_program *p, const char *op, const pto_tensor *t,
                  int axis, const char *why) {
  pto__fail(p, op, PTO_ENOTSUP,
            "axis %d of %s is dynamic dim '%s'; %s", axis, D(t),
            p->dims[t->dyn[axis]].name, why);
  return 0;
}

/* Joins axis ax of t (if it has one aligned with out axis d of nd, and it
 * is not a broadcast 1: a static 1 is one always) into *dim. */
static int join_aligned(pto_program *p, const char *op, const pto_tensor *t,
                        int nd, int d, int64_t extent, pto_dref *dim,
                        int *seen) {
  int ax = t->ndim - nd + d;
  if (ax >= 0 && t->shape[ax] != extent && t->dyn[ax] >= 0)
    return refuse(p, op, t, ax,
                  "its valid length is the dim's (at most one element of a "
                  "slice may be past the extent), so it is not broadcast");
  /* a static 1 broadcasts, even against a dynamic dim of at most 1 */
  if (ax < 0 || t->shape[ax] != extent || (extent == 1 && t->dyn[ax] < 0))
    return 1;
  if (!*seen) {
    *dim = pto__axis(t, ax);
    *seen = 1;
    return 1;
  }
  return pto__dim_join(p, op, *dim, pto__axis(t, ax), extent, dim);
}

static const pto_dref STATIC = {-1, 0, 1};

/* out's axes from numpy broadcasting of n inputs (right-aligned). */
static int broadcast_dims(pto_program *p, const char *op, int n,
                          pto_tensor *const *in, pto_tensor *out) {
  for (int d = 0; d < out->ndim; d++) {
    pto_dref dim = STATIC;
    int seen = 0;
    for (int i = 0; i < n; i++)
      if (!join_aligned(p, op, in[i], out->ndim, d, out->shape[d], &dim,
                        &seen))
        return 0;
    pto__set_axis(out, d, dim);
  }
  return 1;
}

static void copy_dims(pto_tensor *out, const pto_tensor *in) {
  for (int d = 0; d < PTO_MAX_DIMS; d++)
    pto__set_axis(out, d,
                  d < in->ndim && d < out->ndim ? pto__axis(in, d) : STATIC);
}

static int any_dynamic(const pto_tensor *t, int *axis) {
  for (int d = 0; d < t->ndim; d++)
    if (t->dyn[d] >= 0) {
      *axis = d;
      return 1;
    }
  return 0;
}

static int matmul_dims(pto_program *p, const char *op, pto_node *n) {
  const pto_tensor *a = n->in[0], *b = n->in[1];
  pto_tensor *out = n->out[0];
  const int ta = (n->flags & PTO_MATMUL_TRANS_A) != 0,
            tb = (n->flags & PTO_MATMUL_TRANS_B) != 0, nd = out->ndim;
  pto_dref k;
  if (!pto__dim_join(p, op, pto__axis(a, a->ndim - 1 - ta),
                     pto__axis(b, b->ndim - 2 + tb), a->shape[a->ndim - 1 - ta],
                     &k))
    return 0;
  for (int d = 0; d < nd - 2; d++) {
    pto_dref dim = STATIC;
    int seen = 0;
    const pto_tensor *ab[2] = {a, b};
    for (int i = 0; i < 2; i++) {
      /* batch axes align right of the last two */
      int ax = ab[i]->ndim - nd + d;
      if (ax >= 0 && ax < ab[i]->ndim - 2 && ab[i]->dyn[ax] >= 0 &&
          ab[i]->shape[ax] != out->shape[d])
        return refuse(p, op, ab[i], ax,
                      "a dynamic batch axis is not broadcast");
      if (ax < 0 || ax >= ab[i]->ndim - 2 || ab[i]->shape[ax] != out->shape[d])
        continue;
      if (!seen) {
        dim = pto__axis(ab[i], ax);
        seen = 1;
      } else if (!pto__dim_join(p, op, dim, pto__axis(ab[i], ax),
                                out->shape[d], &dim)) {
        return 0;
      }
    }
    pto__set_axis(out, d, dim);
  }
  pto__set_axis(out, nd - 2, pto__axis(a, a->ndim - 2 + ta));
  pto__set_axis(out, nd - 1, pto__axis(b, b->ndim - 1 - tb));
  const int follows = n->op == PTO_TOP_MATMUL_RELU_WSUM &&
                      (n->flags & PTO_MATMUL_CAUSAL_END);
  if ((n->flags & PTO_MATMUL_CAUSAL) && !follows && out->dyn[nd - 1] >= 0)
    return refuse(p, op, b, b->ndim - 1 - tb,
                  "a causal mask's diagonal is static here (the indexer's "
                  "score takes PTO_MATMUL_CAUSAL_END, which follows the keys)");
  if ((n->flags & PTO_MATMUL_CAUSAL) && !follows &&
      pto__axis(a, a->ndim - 2 + ta).dim >= 0)
    return refuse(p, op, a, a->ndim - 2 + ta,
                  "a causal mask's diagonal is static here (the indexer's "
                  "score takes PTO_MATMUL_CAUSAL_END, which follows the rows)");
  if (n->op == PTO_TOP_MATMUL_RELU_WSUM) {
    const pto_tensor *w = n->in[2];
    const int64_t G = n->ival;
    /* the rows come in groups of G (a query's heads): a dynamic row axis
     * counts whole groups ([S1, H] merged into S1*H rows: mul H) */
    pto_dref rows = pto__axis(a, a->ndim - 2 + ta), wrows;
    if (rows.dim >= 0 && (rows.mul % G || rows.off % G))
      return refuse(p, op, a, a->ndim - 2 + ta,
                    "its rows are grouped (whole groups of a query's heads): "
                    "a dynamic number of rows comes in whole groups");
    if (!pto__dim_join(p, op, rows, pto__axis(w, w->ndim - 2),
                       a->shape[a->ndim - 2 + ta], &wrows))
      return 0;
    if (rows.dim >= 0) {
      rows.mul /= G;
      rows.off /= G;
    }
    pto__set_axis(out, nd - 2, rows);
    /* an end-aligned diagonal moves with the keys (+) and the rows (-) */
    if (follows) {
      const pto_dref axes[2] = {pto__axis(out, nd - 1), rows};
      const int64_t lens[2] = {out->shape[nd - 1], out->shape[nd - 2]};
      for (int j = 0; j < 2; j++) {
        if (axes[j].dim < 0)
          continue;
        pto_sterm *t = &n->st[j];
        t->r = axes[j];
        t->len = lens[j];
        int64_t at_max[PTO_DIMS_MAX];
        for (int i = 0; i < p->n_dims; i++)
          at_max[i] = p->dims[i].max;
        t->base = pto__dref_len(t->r, t->len, at_max);
        t->sign = j ? -1 : 1;
      }
    }
    for (int d = 0; d < w->ndim - 2; d++) {
      int o = nd - w->ndim + d;
      pto_dref j;
      if (w->shape[d] == out->shape[o] &&
          !pto__dim_join(p, op, pto__axis(out, o), pto__axis(w, d),
                         out->shape[o], &j))
        return 0;
    }
  } else if (n->n_in > 2) { /* the accumulator has the product's shape */
    const pto_tensor *acc = n->in[2];
    for (int d = 0; d < nd; d++) {
      pto_dref j;
      if (!pto__dim_join(p, op, pto__axis(out, d), pto__axis(acc, d),
                         out->shape[d], &j))
        return 0;
      pto__set_axis(out, d, j);
    }
  }
  return 1;
}

static int attention_dims(pto_program *p, const char *op, const pto_node *n) {
  const pto_tensor *q = n->in[0], *kv = n->in[1], *ix = n->in[2];
  static const char why_static[] =
      "sparse_attention takes its heads, head dim and slots static";
  if (q->dyn[2] >= 0)
    return refuse(p, op, q, 2, why_static);
  if (q->dyn[3] >= 0)
    return refuse(p, op, q, 3, why_static);
  if (kv->dyn[2] >= 0)
    return refuse(p, op, kv, 2, why_static);
  if (ix->dyn[2] >= 0)
    return refuse(p, op, ix, 2, why_static);
  pto_dref b, s1;
  if (!pto__dim_join(p, op, pto__axis(q, 0), pto__axis(kv, 0), q->shape[0],
                     &b) ||
      !pto__dim_join(p, op, b, pto__axis(ix, 0), q->shape[0], &b) ||
      !pto__dim_join(p, op, pto__axis(q, 1), pto__axis(ix, 1), q->shape[1],
                     &s1))
    return 0;
  for (int k = 0; k < n->n_out; k++) {
    pto_tensor *o = n->out[k];
    for (int d = 0; d < PTO_MAX_DIMS; d++)
      pto__set_axis(o, d, STATIC);
    pto__set_axis(o, 0, b);
    pto__set_axis(o, 1, s1);
  }
  return 1;
}

int pto__node_dims(pto_program *p, pto_node *n) {
  const char *op = pto__top_name(n->op);
  pto_tensor *out = n->out[0];
  int ax;
  switch (pto__top_class(n->op)) {
  case PTO_TC_BINARY:
  case PTO_TC_CMP:
  case PTO_TC_SELECT:
  case PTO_TC_CUSTOM:
    return broadcast_dims(p, op, n->n_in, n->in, out);
  case PTO_TC_SCALAR:
  case PTO_TC_UNARY:
  case PTO_TC_CAST:
    copy_dims(out, n->in[0]);
    return 1;
  case PTO_TC_REDUCE: {
    const int col = n->op == PTO_TOP_COLSUM || n->op == PTO_TOP_COLMAX;
    copy_dims(out, n->in[0]);
    pto__set_axis(out, out->ndim - 1 - col, STATIC);
    return 1;
  }
  case PTO_TC_MATMUL:
    return matmul_dims(p, op, n);
  case PTO_TC_ATTENTION:
    return attention_dims(p, op, n);
  case PTO_TC_TOPK: {
    const pto_tensor *a = n->in[0];
    if (a->dyn[a->ndim - 1] >= 0 && !(n->flags & PTO_TOPK_MASKED))
      return refuse(p, op, a, a->ndim - 1,
                    "pto_topk needs k of its entries; pto_topk_masked "
                    "selects among the valid ones and pads with (-inf, -1)");
    for (int k = 0; k < n->n_out; k++) {
      copy_dims(n->out[k], a);
      pto__set_axis(n->out[k], a->ndim - 1, STATIC);
    }
    return 1;
  }
  case PTO_TC_GATHER: {
    const pto_tensor *table = n->in[0], *index = n->in[1];
    copy_dims(out, index);
    pto__set_axis(out, index->ndim, pto__axis(table, 1));
    if (n->n_in > 2) /* pto_gather_else: other has the result's shape */
      for (int d = 0; d < out->ndim; d++) {
        pto_dref j;
        if (!pto__dim_join(p, op, pto__axis(out, d), pto__axis(n->in[2], d),
                           out->shape[d], &j))
          return 0;
        pto__set_axis(out, d, j);
      }
    return 1;
  }
  case PTO_TC_CONCAT: {
    /* along the axis only the last tensor may be dynamic (from the start
     * of its dim): then every tensor starts where it does at the maxima,
     * and the result's valid length is the others' plus the last's */
    const int axis = (int)n->ival, last = n->n_in - 1;
    for (int i = 0; i < last; i++)
      if (n->in[i]->dyn[axis] >= 0)
        return refuse(p, op, n->in[i], axis,
                      "only the last tensor of a concat may be dynamic along "
                      "its axis (the others' starts would move)");
    if (n->in[last]->dyn[axis] >= 0 && n->in[last]->dyn_off[axis])
      return refuse(p, op, n->in[last], axis,
                    "the last tensor of a concat along a dynamic axis starts "
                    "at the start of its dim");
    for (int d = 0; d < out->ndim; d++) {
      pto_dref j = pto__axis(n->in[0], d);
      for (int i = 1; d != axis && i < n->n_in; i++)
        if (!pto__dim_join(p, op, j, pto__axis(n->in[i], d), out->shape[d],
                           &j))
          return 0;
      if (d == axis) {
        j = pto__axis(n->in[last], d);
        if (j.dim >= 0) /* E * mul valid rows after the others' */
          j.off = -(out->shape[d] - n->in[last]->shape[d]);
      }
      pto__set_axis(out, d, j);
    }
    return 1;
  }
  case PTO_TC_FILL:
  case PTO_TC_IOTA:
    return 1; /* the dims its shape named (pto__new_root) */
  default:
    for (int i = 0; i < n->n_in; i++)
      if (any_dynamic(n->in[i], &ax))
        return refuse(p, op, n->in[i], ax, "this op takes static tensors only");
    return 1;
  }
}
