/* The op constructors of the program builder: element-wise, comparison
 * and select, reductions, the matmul family, sparse attention, softmax,
 * top-k and custom instructions (data movement and fills are in
 * core/program_move.c, the neural-network composites in
 * core/program_nn.c). Each checks its
 * operands and records a node (core/build.h); a failed check records the
 * program's sticky error, naming the op, its label, the tensors and their
 * sizes, and returns NULL. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/build.h"
#include "core/custom.h"

/* ---- element-wise ------------------------------------------------------- */

/* Right-aligned numpy broadcast of n tensors into out (ndim in *ndim). */
static int broadcast(pto_program *p, const char *op, int n,
                     pto_tensor *const *ts, int *ndim, int64_t *out) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    nd = ts[i]->ndim > nd ? ts[i]->ndim : nd;
  for (int d = 0; d < nd; d++) {
    int64_t size = 1;
    for (int i = 0; i < n; i++) {
      int ax = ts[i]->ndim - nd + d;
      int64_t s = ax >= 0 ? ts[i]->shape[ax] : 1;
      if (s == 1 || s == size) {
        continue;
      }
      if (size != 1) {
        int j = 0;
        while (j < i && (ts[j]->ndim - nd + d < 0 ||
                         ts[j]->shape[ts[j]->ndim - nd + d] != size))
          j++;
        pto__fail(p, op, PTO_ESHAPE,
                  "%s and %s do not broadcast: axis %d is %" PRId64
                  " vs %" PRId64,
                  D(ts[j]), D(ts[i]), d - nd, size, s);
        return 0;
      }
      size = s;
    }
    out[d] = size;
  }
  *ndim = nd;
  return 1;
}

static pto_tensor *binary(pto_program *p, pto_top op, pto_tensor *a,
                          pto_tensor *b) {
  const char *name = pto__top_name(op);
  pto_tensor *in[2] = {a, b};
  if (!p || !pto__check_operands(p, name, 2, in))
    return NULL;
  pto_dtype dt = compute_dtype(a->dtype);
  if (dt != compute_dtype(b->dtype))
    return pto__fail(
        p, name, PTO_EDTYPE,
        "%s and %s: i32 and floating operands do not mix (cast one)", D(a),
        D(b));
  int nd;
  int64_t shape[PTO_MAX_DIMS];
  if (!broadcast(p, name, 2, in, &nd, shape))
    return NULL;
  return node_out(pto__new_node(p, op, 2, in, dt, nd, shape));
}

pto_tensor *pto_add(pto_program *p, pto_tensor *a, pto_tensor *b) {
  return binary(p, PTO_TOP_ADD, a, b);
}
pto_tensor *pto_sub(pto_program *p, pto_tensor *a, pto_tensor *b) {
  return binary(p, PTO_TOP_SUB, a, b);
}
pto_tensor *pto_mul(pto_program *p, pto_tensor *a, pto_tensor *b) {
  return binary(p, PTO_TOP_MUL, a, b);
}
pto_tensor *pto_div(pto_program *p, pto_tensor *a, pto_tensor *b) {
  return binary(p, PTO_TOP_DIV, a, b);
}
pto_tensor *pto_max(pto_program *p, pto_tensor *a, pto_tensor *b) {
  return binary(p, PTO_TOP_MAX, a, b);
}
pto_tensor *pto_min(pto_program *p, pto_tensor *a, pto_tensor *b) {
  return binary(p, PTO_TOP_MIN, a, b);
}

static pto_tensor *scalar_op(pto_program *p, pto_top op, pto_tensor *a,
                             double s) {
  const char *name = pto__top_name(op);
  if (!p || !pto__check_operands(p, name, 1, &a))
    return NULL;
  if (isnan(s) && a->dtype == PTO_I32)
    return pto__fail(p, name, PTO_EINVAL, "NaN scalar for i32 tensor %s", D(a));
  if (a->dtype == PTO_I32 && (s < INT32_MIN || s > INT32_MAX))
    return pto__fail(p, name, PTO_ERANGE, "scalar %g is outside i32 for %s", s,
                     D(a));
  pto_node *n =
      pto__new_node(p, op, 1, &a, compute_dtype(a->dtype), a->ndim, a->shape);
  if (n)
    n->scalar = a->dtype == PTO_I32 ? nearbyint(s) : s;
  return node_out(n);
}

pto_tensor *pto_adds(pto_program *p, pto_tensor *a, double s) {
  return scalar_op(p, PTO_TOP_ADDS, a, s);
}
pto_tensor *pto_subs(pto_program *p, pto_tensor *a, double s) {
  return scalar_op(p, PTO_TOP_SUBS, a, s);
}
pto_tensor *pto_muls(pto_program *p, pto_tensor *a, double s) {
  return scalar_op(p, PTO_TOP_MULS, a, s);
}
pto_tensor *pto_divs(pto_program *p, pto_tensor *a, double s) {
  return scalar_op(p, PTO_TOP_DIVS, a, s);
}
pto_tensor *pto_maxs(pto_program *p, pto_tensor *a, double s) {
  return scalar_op(p, PTO_TOP_MAXS, a, s);
}
pto_tensor *pto_mins(pto_program *p, pto_tensor *a, double s) {
  return scalar_op(p, PTO_TOP_MINS, a, s);
}

static pto_tensor *unary(pto_program *p, pto_top op, pto_tensor *a,
                         int int_ok) {
  const char *name = pto__top_name(op);
  if (!p || !pto__check_operands(p, name, 1, &a))
    return NULL;
  if (!int_ok && a->dtype == PTO_I32)
    return pto__fail(p, name, PTO_EDTYPE,
                     "%s is i32; %s needs a floating tensor", D(a), name);
  return node_out(
      pto__new_node(p, op, 1, &a, compute_dtype(a->dtype), a->ndim, a->shape));
}

pto_tensor *pto_exp(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_EXP, a, 0);
}
pto_tensor *pto_log(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_LOG, a, 0);
}
pto_tensor *pto_sqrt(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_SQRT, a, 0);
}
pto_tensor *pto_rsqrt(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_RSQRT, a, 0);
}
pto_tensor *pto_recip(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_RECIP, a, 0);
}
pto_tensor *pto_relu(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_RELU, a, 1);
}
pto_tensor *pto_abs(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_ABS, a, 1);
}
pto_tensor *pto_neg(pto_program *p, pto_tensor *a) {
  return unary(p, PTO_TOP_NEG, a, 1);
}

pto_tensor *pto_cast(pto_program *p, pto_tensor *a, pto_dtype dt) {
  if (!p || !pto__check_operands(p, "cast", 1, &a) ||
      !pto__check_dtype(p, "cast", dt))
    return NULL;
  return node_out(pto__new_node(p, PTO_TOP_CAST, 1, &a, dt, a->ndim, a->shape));
}

pto_tensor *pto_cmp(pto_program *p, pto_tensor *a, pto_tensor *b,
                    pto_cmp_mode mode) {
  pto_tensor *in[2] = {a, b};
  if (!p || !pto__check_operands(p, "cmp", 2, in))
    return NULL;
  if ((unsigned)mode >= PTO_CMP_MODE_COUNT)
    return pto__fail(p, "cmp", PTO_EINVAL, "mode %d is not a pto_cmp_mode",
                     (int)mode);
  if (compute_dtype(a->dtype) != compute_dtype(b->dtype))
    return pto__fail(
        p, "cmp", PTO_EDTYPE,
        "%s and %s: i32 and floating operands do not mix (cast one)", D(a),
        D(b));
  int nd;
  int64_t shape[PTO_MAX_DIMS];
  if (!broadcast(p, "cmp", 2, in, &nd, shape))
    return NULL;
  pto_node *n = pto__new_node(p, PTO_TOP_CMP, 2, in, PTO_I32, nd, shape);
  if (n)
    n->ival = mode;
  return node_out(n);
}

pto_tensor *pto_select(pto_program *p, pto_tensor *mask, pto_tensor *a,
                       pto_tensor *b) {
  pto_tensor *in[3] = {mask, a, b};
  if (!p || !pto__check_operands(p, "select", 3, in))
    return NULL;
  if (mask->dtype != PTO_I32)
    return pto__fail(p, "select", PTO_EDTYPE, "mask %s must be i32 (from cmp)",
                     D(mask));
  if (compute_dtype(a->dtype) != compute_dtype(b->dtype))
    return pto__fail(
        p, "select", PTO_EDTYPE,
        "%s and %s: i32 and floating operands do not mix (cast one)", D(a),
        D(b));
  int nd;
  int64_t shape[PTO_MAX_DIMS];
  if (!broadcast(p, "select", 3, in, &nd, shape))
    return NULL;
  return node_out(pto__new_node(p, PTO_TOP_SELECT, 3, in,
                                compute_dtype(a->dtype), nd, shape));
}

/* ---- reductions --------------------------------------------------------- */

static pto_tensor *reduce(pto_program *p, pto_top op, pto_tensor *a, int col) {
  const char *name = pto__top_name(op);
  if (!p || !pto__check_operands(p, name, 1, &a))
    return NULL;
  if (col && a->ndim < 2)
    return pto__fail(p, name, PTO_ESHAPE,
                     "%s has 1 dim; a column reduction needs at least 2", D(a));
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[a->ndim - 1 - col] = 1;
  return node_out(
      pto__new_node(p, op, 1, &a, compute_dtype(a->dtype), a->ndim, shape));
}

pto_tensor *pto_rowsum(pto_program *p, pto_tensor *a) {
  return reduce(p, PTO_TOP_ROWSUM, a, 0);
}
pto_tensor *pto_rowmax(pto_program *p, pto_tensor *a) {
  return reduce(p, PTO_TOP_ROWMAX, a, 0);
}
pto_tensor *pto_rowmin(pto_program *p, pto_tensor *a) {
  return reduce(p, PTO_TOP_ROWMIN, a, 0);
}
pto_tensor *pto_colsum(pto_program *p, pto_tensor *a) {
  return reduce(p, PTO_TOP_COLSUM, a, 1);
}
pto_tensor *pto_colmax(pto_program *p, pto_tensor *a) {
  return reduce(p, PTO_TOP_COLMAX, a, 1);
}

/* ---- matmul ------------------------------------------------------------- */

/* The shape of a x b (rank *nd) for op: operands f32/bf16/f16 of at least
 * 2 dims whose K agree, batch dims broadcasting like element-wise ops. 0,
 * or -1 with the error recorded. */
static int matmul_shape(pto_program *p, const char *op, const pto_tensor *a,
                        const pto_tensor *b, unsigned flags, unsigned allowed,
                        int64_t *shape, int *nd_out) {
  if (flags & ~allowed) {
    pto__fail(p, op, PTO_EINVAL, "unknown flags 0x%x", flags & ~allowed);
    return -1;
  }
  const pto_tensor *in[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    if (!is_float(in[i]->dtype)) {
      pto__fail(p, op, PTO_EDTYPE,
                "%s is i32; %s takes f32, bf16 or f16 operands", D(in[i]), op);
      return -1;
    }
    if (in[i]->ndim < 2) {
      pto__fail(p, op, PTO_ESHAPE, "%s has 1 dim; %s operands need at least 2",
                D(in[i]), op);
      return -1;
    }
  }
  int ta = (flags & PTO_MATMUL_TRANS_A) != 0;
  int tb = (flags & PTO_MATMUL_TRANS_B) != 0;
  int64_t m = a->shape[a->ndim - 2 + ta], ka = a->shape[a->ndim - 1 - ta];
  int64_t kb = b->shape[b->ndim - 2 + tb], n = b->shape[b->ndim - 1 - tb];
  if (ka != kb) {
    pto__fail(p, op, PTO_ESHAPE,
              "K of a %s%s is %" PRId64 ", K of b %s%s is %" PRId64, D(a),
              ta ? " (transposed)" : "", ka, D(b), tb ? " (transposed)" : "",
              kb);
    return -1;
  }
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int d = 0; d < nd - 2; d++) {
    int ia = a->ndim - nd + d, ib = b->ndim - nd + d;
    int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      pto__fail(p, op, PTO_ESHAPE,
                "batch axis %d of a %s is %" PRId64 ", of b %s is %" PRId64,
                d - nd, D(a), sa, D(b), sb);
      return -1;
    }
    shape[d] = sa > sb ? sa : sb;
  }
  shape[nd - 2] = m;
  shape[nd - 1] = n;
  *nd_out = nd;
  return 0;
}

/* A diagonal a matmul's or the indexer score's causal mask may take:
 * exact in the double it is kept in, with room for any tile's offset. */
static int diag_ok(pto_program *p, const char *op, int64_t diag) {
  if (diag <= (int64_t)1 << 52 && diag >= -((int64_t)1 << 52))
    return 1;
  pto__fail(p, op, PTO_ERANGE, "diagonal %" PRId64 " is out of range", diag);
  return 0;
}

/* a x b (+ acc); masked: -inf past the diagonal diag (pto_matmul_masked),
 * or past the end-aligned one when flags has PTO_MATMUL_CAUSAL. */
static pto_tensor *matmul(pto_program *p, pto_tensor *acc, pto_tensor *a,
                          pto_tensor *b, unsigned flags, int masked,
                          int64_t diag) {
  static const char op[] = "matmul";
  pto_tensor *in[3] = {a, b, acc};
  int n_in = acc ? 3 : 2;
  if (!p || !pto__check_operands(p, op, n_in, in))
    return NULL;
  if (acc && (flags & PTO_MATMUL_CAUSAL))
    return pto__fail(p, op, PTO_EINVAL,
                     "PTO_MATMUL_CAUSAL does not apply to an accumulating "
                     "matmul (accumulator %s): mask the sum instead",
                     D(acc));
  int64_t shape[PTO_MAX_DIMS];
  int nd;
  if (matmul_shape(p, op, a, b, flags,
                   PTO_MATMUL_TRANS_A | PTO_MATMUL_TRANS_B |
                       (acc ? 0u : (unsigned)PTO_MATMUL_CAUSAL),
                   shape, &nd))
    return NULL;
  if (!masked && (flags & PTO_MATMUL_CAUSAL)) /* end-aligned: N - M */
    diag = shape[nd - 1] - shape[nd - 2];
  masked |= (flags & PTO_MATMUL_CAUSAL) != 0;
  if (masked && !diag_ok(p, op, diag))
    return NULL;
  if (acc) {
    int same = acc->ndim == nd && acc->dtype == PTO_F32;
    for (int d = 0; same && d < nd; d++)
      same = acc->shape[d] == shape[d];
    if (!same) {
      char sh[64];
      pto__shape_str(nd, shape, sh, sizeof sh);
      return pto__fail(p, "matmul", PTO_ESHAPE,
                       "accumulator %s must be f32%s, the shape of a x b",
                       D(acc), sh);
    }
  }
  pto_node *node =
      pto__new_node(p, PTO_TOP_MATMUL, n_in, in, PTO_F32, nd, shape);
  if (!node)
    return NULL;
  node->flags = flags & ~(unsigned)PTO_MATMUL_CAUSAL;
  if (masked) {
    node->flags |= PTO_MATMUL_CAUSAL;
    node->scalar = (double)diag;
  }
  return pto__node_dims(p, node) ? node->out[0] : NULL;
}

pto_tensor *pto_matmul(pto_program *p, pto_tensor *a, pto_tensor *b,
                       unsigned flags) {
  return matmul(p, NULL, a, b, flags, 0, 0);
}

pto_tensor *pto_matmul_acc(pto_program *p, pto_tensor *acc, pto_tensor *a,
                           pto_tensor *b, unsigned flags) {
  if (p && !acc) {
    pto__check_operands(p, "matmul", 1, &acc);
    return NULL;
  }
  return matmul(p, acc, a, b, flags, 0, 0);
}

pto_tensor *pto_matmul_masked(pto_program *p, pto_tensor *a, pto_tensor *b,
                              unsigned flags, int64_t diag) {
  return matmul(p, NULL, a, b, flags, 1, diag);
}

pto_tensor *pto_matmul_relu_wsum(pto_program *p, pto_tensor *a, pto_tensor *b,
                                 pto_tensor *w, int64_t group, unsigned flags,
                                 int64_t diag) {
  static const char op[] = "matmul_relu_wsum";
  pto_tensor *in[3] = {a, b, w};
  if (!p || !pto__check_operands(p, op, 3, in))
    return NULL;
  int64_t shape[PTO_MAX_DIMS];
  int nd;
  if (matmul_shape(p, op, a, b, flags,
                   PTO_MATMUL_TRANS_A | PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL |
                       PTO_MATMUL_CAUSAL_END,
                   shape, &nd))
    return NULL;
  const int64_t M = shape[nd - 2];
  if (group < 1 || M % group)
    return pto__fail(p, op, PTO_ESHAPE,
                     "group %" PRId64 " must divide the %" PRId64
                     " rows of a %s into whole groups",
                     group, M, D(a));
  /* w is [..,M,1], its batch dims broadcasting to the product's */
  int same = w->dtype == PTO_F32 && w->ndim <= nd && w->ndim >= 2 &&
             w->shape[w->ndim - 2] == M && w->shape[w->ndim - 1] == 1;
  for (int d = 0; same && d < w->ndim - 2; d++) {
    int64_t sw = w->shape[d], so = shape[nd - w->ndim + d];
    same = sw == so || sw == 1;
  }
  if (!same) {
    char sh[64];
    shape[nd - 1] = 1;
    pto__shape_str(nd, shape, sh, sizeof sh);
    return pto__fail(
        p, op, PTO_ESHAPE,
        "weights %s must be f32%s (one per row of a x b; batch dims "
        "may broadcast)",
        D(w), sh);
  }
  if (flags & PTO_MATMUL_CAUSAL_END) { /* end-aligned: keys less rows */
    flags |= PTO_MATMUL_CAUSAL;
    diag = shape[nd - 1] - M / group;
  }
  if ((flags & PTO_MATMUL_CAUSAL) && !diag_ok(p, op, diag))
    return NULL;
  shape[nd - 2] = M / group;
  pto_node *node =
      pto__new_node(p, PTO_TOP_MATMUL_RELU_WSUM, 3, in, PTO_F32, nd, shape);
  if (!node)
    return NULL;
  node->flags = flags;
  node->ival = group;
  node->scalar = (double)diag;
  return pto__node_dims(p, node) ? node->out[0] : NULL;
}

pto_tensor *pto_sparse_attention(pto_program *p, pto_tensor *q, pto_tensor *kv,
                                 pto_tensor *idx, int64_t dv, double scale,
                                 pto_tensor **lse) {
  static const char op[] = "sparse_attention";
  if (lse)
    *lse = NULL;
  pto_tensor *in[3] = {q, kv, idx};
  if (!p || !pto__check_operands(p, op, 3, in))
    return NULL;
  if (!lse)
    return pto__fail(p, op, PTO_EINVAL, "lse must not be NULL");
  if (q->ndim != 4 || kv->ndim != 3 || idx->ndim != 3)
    return pto__fail(p, op, PTO_ESHAPE,
                     "q %s must be [B,S1,H,D], kv %s [B,S2,D] and indices %s "
                     "[B,S1,T]",
                     D(q), D(kv), D(idx));
  if (q->dtype != kv->dtype || (q->dtype != PTO_F32 && q->dtype != PTO_BF16))
    return pto__fail(p, op, PTO_EDTYPE,
                     "q %s and kv %s must both be f32 or both bf16", D(q),
                     D(kv));
  if (idx->dtype != PTO_I32)
    return pto__fail(p, op, PTO_EDTYPE, "indices %s must be i32", D(idx));
  const int64_t B = q->shape[0], S1 = q->shape[1], H = q->shape[2],
                Dq = q->shape[3];
  if (kv->shape[0] != B || kv->shape[2] != Dq)
    return pto__fail(p, op, PTO_ESHAPE,
                     "kv %s must be [B,S2,D] = [%" PRId64 ",S2,%" PRId64
                     "] for q %s",
                     D(kv), B, Dq, D(q));
  if (idx->shape[0] != B || idx->shape[1] != S1)
    return pto__fail(p, op, PTO_ESHAPE,
                     "indices %s must be [B,S1,T] = [%" PRId64 ",%" PRId64
                     ",T] for q %s",
                     D(idx), B, S1, D(q));
  if (dv < 1 || dv > Dq)
    return pto__fail(p, op, PTO_ERANGE,
                     "value dim %" PRId64 " is outside [1, %" PRId64 "] (q %s)",
                     dv, Dq, D(q));
  if (!isfinite(scale))
    return pto__fail(p, op, PTO_EINVAL, "scale %g is not finite", scale);
  if (kv->shape[1] > INT32_MAX)
    return pto__fail(p, op, PTO_ERANGE,
                     "kv %s has more rows than i32 indices reach", D(kv));
  const int64_t oshape[4] = {B, S1, H, dv};
  pto_node *node =
      pto__new_node(p, PTO_TOP_SPARSE_ATTENTION, 3, in, PTO_F32, 4, oshape);
  if (!node)
    return NULL;
  pto_tensor *l = pto__new_root(p, op, PTO_F32, 3, oshape, NULL);
  if (!l)
    return NULL;
  l->producer = node;
  node->out[1] = l;
  node->n_out = 2;
  node->ival = dv;
  node->scalar = scale;
  if (!pto__node_dims(p, node))
    return NULL;
  *lse = l;
  return node->out[0];
}

/* ---- composites and data movement --------------------------------------- */

pto_tensor *pto_softmax(pto_program *p, pto_tensor *a) {
  if (!p || !pto__check_operands(p, "softmax", 1, &a))
    return NULL;
  if (!is_float(a->dtype))
    return pto__fail(p, "softmax", PTO_EDTYPE,
                     "%s is i32; softmax needs a floating tensor", D(a));
  /* e times the reciprocal of its row sum: one division per row instead of
   * one per element (a division pass costs about twice a multiplication) */
  pto_tensor *e = pto_exp(p, pto_sub(p, a, pto_rowmax(p, a)));
  return pto_mul(p, e, pto_recip(p, pto_rowsum(p, e)));
}

/* Top-k of a's last axis: values and (in *indices) i32 indices. masked:
 * -inf entries are excluded and k may exceed the last dim. */
static pto_tensor *topk(pto_program *p, const char *op, pto_tensor *a,
                        int64_t k, pto_tensor **indices, int masked) {
  if (indices)
    *indices = NULL;
  if (!p || !pto__check_operands(p, op, 1, &a))
    return NULL;
  if (!indices)
    return pto__fail(p, op, PTO_EINVAL, "indices must not be NULL");
  if (a->dtype == PTO_I32)
    return pto__fail(p, op, PTO_EDTYPE,
                     "%s is i32; %s sorts floating values (cast to f32 first)",
                     D(a), op);
  int64_t n = a->shape[a->ndim - 1];
  if (n > INT32_MAX)
    return pto__fail(p, op, PTO_ESHAPE,
                     "%s has %" PRId64 " entries per row; i32 indices reach %d",
                     D(a), n, INT32_MAX);
  if (!masked && (k < 1 || k > n))
    return pto__fail(p, op, PTO_ERANGE,
                     "k = %" PRId64 " is outside [1, %" PRId64 "] for %s", k, n,
                     D(a));
  if (masked && (k < 1 || k > INT32_MAX))
    return pto__fail(p, op, PTO_ERANGE,
                     "k = %" PRId64
                     " is outside [1, %d] for %s (k may exceed the "
                     "last dim %" PRId64 ": the rest is padding)",
                     k, INT32_MAX, D(a), n);
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[a->ndim - 1] = k;
  if (!pto__check_shape(p, op, "result", a->ndim, shape))
    return NULL;
  pto_node *node = pto__new_node(p, PTO_TOP_TOPK, 1, &a,
                                 compute_dtype(a->dtype), a->ndim, shape);
  if (!node)
    return NULL;
  pto_tensor *idx = pto__new_root(p, "topk", PTO_I32, a->ndim, shape, NULL);
  if (!idx)
    return NULL;
  idx->producer = node;
  node->out[1] = idx;
  node->n_out = 2;
  node->ival = k;
  node->flags = masked ? PTO_TOPK_MASKED : 0;
  if (!pto__node_dims(p, node))
    return NULL;
  *indices = idx;
  return node->out[0];
}

pto_tensor *pto_topk(pto_program *p, pto_tensor *a, int64_t k,
                     pto_tensor **indices) {
  return topk(p, "topk", a, k, indices, 0);
}

pto_tensor *pto_topk_masked(pto_program *p, pto_tensor *a, int64_t k,
                            pto_tensor **indices) {
  return topk(p, "topk_masked", a, k, indices, 1);
}

pto_tensor *pto_custom(pto_program *p, int id, int n,
                       pto_tensor *const *inputs) {
  if (!p)
    return NULL;
  const pto_custom_op *op = pto__custom_get(id);
  if (!op)
    return pto__fail(p, "custom", PTO_ENOTFOUND,
                     "no custom instruction is registered with id %d", id);
  if (n != op->desc.n_src || !inputs)
    return pto__fail(p, op->name, PTO_EINVAL, "takes %d inputs, got %d",
                     op->desc.n_src, n);
  if (!pto__check_operands(p, op->name, n, inputs))
    return NULL;
  for (int i = 1; i < n; i++) {
    int same = inputs[i]->ndim == inputs[0]->ndim;
    for (int d = 0; same && d < inputs[0]->ndim; d++)
      same = inputs[i]->shape[d] == inputs[0]->shape[d];
    if (!same)
      return pto__fail(p, op->name, PTO_ESHAPE, "%s and %s differ in shape",
                       D(inputs[0]), D(inputs[i]));
  }
  pto_node *node =
      pto__new_node(p, PTO_TOP_CUSTOM, n, inputs, op->desc.out_dtype,
                    inputs[0]->ndim, inputs[0]->shape);
  if (node)
    node->ival = id;
  return node_out(node);
}
