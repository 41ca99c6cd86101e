/* The reference evaluator's ops beyond the element-wise ones: the matmul
 * family (plain, accumulating, transposed, ReLU-weighted sum), top-k, gather,
 * custom instructions and sparse attention. One function per op class, as
 * obviously right as the rest of the evaluator (core/eval.c, whose head
 * states the arithmetic); core/eval.c's table runs them. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/custom.h"
#include "core/eval.h"
#include "core/tprog.h"

/* ---- matmul ------------------------------------------------------------- */

/* Storage offset of a matmul operand t at batch index bidx (of the nd-dim
 * result, broadcast) and matrix element (r, c) as stored. */
static int64_t mat_off(const pto_tensor *t, int nd, const int64_t *bidx,
                       int64_t r, int64_t c) {
  int64_t off = t->offset;
  for (int d = 0; d < t->ndim - 2; d++)
    if (t->shape[d] != 1)
      off += bidx[nd - t->ndim + d] * t->stride[d];
  return off + r * t->stride[t->ndim - 2] + c * t->stride[t->ndim - 1];
}

/* (a x b)[.., m, c] at batch index idx, in double: sum_k A[.., m, k] *
 * B[.., k, c], with A stored [.., K, M] under TRANS_A and B stored
 * [.., N, K] under TRANS_B. The products of f32 values are exact in
 * double; the sum is in double. */
static double mm_dot(eval_ctx *e, const pto_node *n, int nd,
                     const int64_t *idx, int64_t m, int64_t c) {
  const pto_tensor *a = n->in[0], *b = n->in[1];
  int ta = (n->flags & PTO_MATMUL_TRANS_A) != 0;
  int tb = (n->flags & PTO_MATMUL_TRANS_B) != 0;
  int64_t K = a->shape[a->ndim - 1 - ta];
  /* A[m][k] and B[k][n] for k = 0: each then steps along its K axis */
  int64_t xa = ta ? mat_off(a, nd, idx, 0, m) : mat_off(a, nd, idx, m, 0);
  int64_t xb = tb ? mat_off(b, nd, idx, c, 0) : mat_off(b, nd, idx, 0, c);
  int64_t sa = a->stride[a->ndim - 1 - ta], sb = b->stride[b->ndim - 2 + tb];
  double s = 0;
  for (int64_t k = 0; k < K; k++)
    s += ldf(e, a, xa + k * sa) * ldf(e, b, xb + k * sb);
  return s;
}

/* out[.., r, c] = sum_g w[.., r*G + g] * ReLU((a x b)[.., r*G + g, c]) in
 * double, -inf past the causal diagonal. */
static pto_status eval_matmul_wsum(eval_ctx *e, const pto_node *n) {
  const pto_tensor *w = n->in[2], *out = n->out[0];
  const int nd = out->ndim;
  const int64_t G = n->ival;
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, nd, out->shape, idx);
    const int64_t r = idx[nd - 2], c = idx[nd - 1];
    double s = 0;
    if ((n->flags & PTO_MATMUL_CAUSAL) && (double)c > (double)r + n->scalar) {
      s = -INFINITY;
    } else {
      for (int64_t g = 0; g < G; g++) {
        double x = mm_dot(e, n, nd, idx, r * G + g, c);
        s += ldf(e, w, mat_off(w, nd, idx, r * G + g, 0)) * (x < 0 ? 0 : x);
      }
    }
    stf(e, out, j, s);
  }
  return PTO_OK;
}

/* out[.., m, n] = (acc[.., m, n] +) (a x b)[.., m, n], and -inf past a
 * masked matmul's diagonal (n > m + diag). */
pto_status pto__eval_matmul(eval_ctx *e, const pto_node *n) {
  if (n->op == PTO_TOP_MATMUL_RELU_WSUM)
    return eval_matmul_wsum(e, n);
  const pto_tensor *out = n->out[0];
  const pto_tensor *acc = n->n_in > 2 ? n->in[2] : NULL;
  int nd = out->ndim;
  int64_t idx[PTO_MAX_DIMS];
  const int masked = (n->flags & PTO_MATMUL_CAUSAL) != 0;
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, nd, out->shape, idx);
    if (masked && (double)idx[nd - 1] > (double)idx[nd - 2] + n->scalar) {
      stf(e, out, j, -INFINITY); /* past the diagonal */
      continue;
    }
    double s = acc ? ldf(e, acc, bcast_off(acc, nd, idx)) : 0.0;
    stf(e, out, j, s + mm_dot(e, n, nd, idx, idx[nd - 2], idx[nd - 1]));
  }
  return PTO_OK;
}

/* ---- top-k and gather --------------------------------------------------- */

typedef struct topk_item {
  double v;
  int64_t i;
} topk_item;

/* Value descending, NaN below everything (-inf included), then index
 * ascending. -0 and +0 are equal values. */
static int topk_order(const void *x, const void *y) {
  const topk_item *a = x, *b = y;
  int an = isnan(a->v) != 0, bn = isnan(b->v) != 0;
  if (an != bn)
    return an - bn;
  if (!an && a->v != b->v)
    return a->v > b->v ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Sorts each row and keeps its first k; pto_topk_masked's -inf entries
 * are left out first, and slots past the rest are -inf / -1. */
pto_status pto__eval_topk(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *vals = n->out[0], *inds = n->out[1];
  int nd = a->ndim;
  int64_t len = a->shape[nd - 1], k = n->ival, rows = 1;
  for (int d = 0; d < nd - 1; d++) /* not numel / len: a row may be empty */
    rows *= a->shape[d];
  const int masked = (n->flags & PTO_TOPK_MASKED) != 0;
  topk_item *items = malloc((size_t)(len ? len : 1) * sizeof *items);
  if (!items)
    return run_fail(e->p, "topk", n->label, PTO_ENOMEM,
                    "out of memory for a row of %" PRId64, len);
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t r = 0; r < rows; r++) {
    if (len) /* an empty row has no entries to index */
      unravel(r * len, nd, a->shape, idx);
    int64_t m = 0;
    for (int64_t c = 0; c < len; c++) {
      idx[nd - 1] = c;
      items[m].v = ldf(e, a, bcast_off(a, nd, idx));
      items[m].i = c;
      m += !(masked && items[m].v == -INFINITY);
    }
    qsort(items, (size_t)m, sizeof *items, topk_order);
    for (int64_t c = 0; c < k; c++) {
      stf(e, vals, r * k + c, c < m ? items[c].v : -INFINITY);
      sti(e, inds, r * k + c, c < m ? (uint64_t)items[c].i : (uint64_t)-1);
    }
  }
  free(items);
  return PTO_OK;
}

/* out[s..., d] = table[index[s...], d]; an index outside [0, N) gives a zero
 * row (the result buffer starts zeroed) or, when strict, a run-time error. */
pto_status pto__eval_gather(eval_ctx *e, const pto_node *n) {
  const pto_tensor *table = n->in[0], *index = n->in[1], *out = n->out[0],
                   *other = n->n_in > 2 ? n->in[2] : NULL;
  int64_t rows = table->shape[0], width = table->shape[1];
  int64_t idx[PTO_MAX_DIMS];
  /* rows of no columns gather nothing, so no index is checked: a run
   * skips such a gather (nothing of an empty extent runs) */
  if (!width)
    return PTO_OK;
  for (int64_t s = 0; s < numel(index); s++) {
    unravel(s, index->ndim, index->shape, idx);
    int64_t row = ldi(e, index, bcast_off(index, index->ndim, idx));
    if (row == -1 && other) { /* pto_gather_else: other's row */
      int64_t oi[PTO_MAX_DIMS];
      memcpy(oi, idx, (size_t)index->ndim * sizeof *oi);
      for (int64_t c = 0; c < width; c++) {
        oi[index->ndim] = c;
        copy_elem(e, other, bcast_off(other, other->ndim, oi), out,
                  s * width + c);
      }
      continue;
    }
    if (row < 0 || row >= rows) {
      if (!(n->flags & PTO_GATHER_STRICT) ||
          (row == -1 && (n->flags & PTO_GATHER_PAD)))
        continue; /* a zero row: the result buffer starts zeroed */
      char buf[128], at[64];
      size_t len = 0;
      for (int d = 0; d < index->ndim && len < sizeof at; d++)
        len += (size_t)snprintf(at + len, sizeof at - len, "%s%" PRId64,
                                d ? "," : "", idx[d]);
      return run_fail(e->p, "gather", n->label, PTO_ERANGE,
                      "index %" PRId64 " at [%s] of %s is outside [0, %" PRId64
                      ") of table %s",
                      row, at, index->name, rows,
                      pto__tensor_desc(table, buf, sizeof buf));
    }
    for (int64_t c = 0; c < width; c++)
      copy_elem(e, table,
                table->offset + row * table->stride[0] + c * table->stride[1],
                out, s * width + c);
  }
  return PTO_OK;
}

/* ---- custom instructions and sparse attention --------------------------- */

/* A custom op is a tile-local map, so it may run once over the whole tensor,
 * flattened to 2-D [numel/last, last]. Its source tiles hold the inputs in
 * their compute dtype (bf16/f16 loaded as f32, as a tile load does); its
 * destination tile has the registered out_dtype. */
pto_status pto__eval_custom(eval_ctx *e, const pto_node *n) {
  const pto_tensor *out = n->out[0];
  const pto_custom_op *op = pto__custom_get((int)n->ival);
  if (!op)
    return run_fail(e->p, "custom", n->label, PTO_ENOTFOUND,
                    "no custom instruction has id %" PRId64, n->ival);
  int64_t cols = out->shape[out->ndim - 1], rows = numel(out) / cols;
  if (rows > UINT32_MAX || cols > UINT32_MAX)
    return run_fail(e->p, op->name, n->label, PTO_ENOTSUP,
                    "a [%" PRId64 ",%" PRId64 "] tile does not fit uint32 dims",
                    rows, cols);
  pto_tile tiles[PTO_NODE_MAX_IN + 1];
  const pto_tile *src[PTO_NODE_MAX_IN];
  memset(tiles, 0, sizeof tiles);
  pto_status st = PTO_OK;
  int64_t idx[PTO_MAX_DIMS];
  for (int i = 0; i <= n->n_in; i++) { /* tiles[n_in] is the destination */
    pto_tile *t = &tiles[i];
    t->dtype = i < n->n_in ? (n->in[i]->dtype == PTO_I32 ? PTO_I32 : PTO_F32)
                           : out->dtype;
    t->rows = t->valid_rows = (uint32_t)rows;
    t->cols = t->valid_cols = (uint32_t)cols;
    t->stride = pto_tile_stride(t->dtype, t->cols);
    size_t bytes = pto_tile_bytes(t->dtype, t->rows, t->cols);
    t->data = aligned_alloc(PTO_TILE_ALIGN, bytes);
    if (!t->data) {
      st = run_fail(e->p, op->name, n->label, PTO_ENOMEM,
                    "out of memory for a %zu-byte tile", bytes);
      goto done;
    }
    memset(t->data, 0, bytes);
    if (i == n->n_in)
      break;
    src[i] = t;
    const pto_tensor *in = n->in[i];
    for (int64_t j = 0; j < numel(in); j++) {
      unravel(j, in->ndim, in->shape, idx);
      store(t->data, t->dtype, j / cols * t->stride + j % cols,
            ldf(e, in, bcast_off(in, in->ndim, idx)));
    }
  }
  int rc = op->desc.fn(&tiles[n->n_in], src, n->n_in, op->desc.user);
  if (rc < 0) {
    st = rc > -PTO_STATUS_COUNT ? (pto_status)rc : PTO_ETASK;
    run_fail(e->p, op->name, n->label, st,
             "custom instruction returned %d (%s)", rc, pto_status_name(rc));
    goto done;
  }
  size_t es = pto_dtype_size(out->dtype);
  for (int64_t j = 0; j < numel(out); j++)
    memcpy((char *)e->wr[out->id] + (size_t)j * es,
           (const char *)tiles[n->n_in].data +
               (size_t)(j / cols * tiles[n->n_in].stride + j % cols) * es,
           es);
done:
  for (int i = 0; i <= n->n_in; i++)
    free(tiles[i].data);
  return st;
}

/* Per query: the valid indices' rows of kv, scores in double, a
 * max-shifted log-sum-exp, then the weighted sum of the value rows. */
pto_status pto__eval_attention(eval_ctx *e, const pto_node *n) {
  const pto_tensor *q = n->in[0], *kv = n->in[1], *ix = n->in[2];
  const pto_tensor *out = n->out[0], *lse = n->out[1];
  const int64_t B = q->shape[0], S1 = q->shape[1], H = q->shape[2],
                D = q->shape[3], S2 = kv->shape[1], T = ix->shape[2],
                dv = n->ival;
  int64_t *sel = malloc((size_t)T * sizeof *sel);
  double *x = malloc((size_t)T * sizeof *x);
  if (!sel || !x) {
    free(sel);
    free(x);
    return run_fail(e->p, "sparse_attention", n->label, PTO_ENOMEM,
                    "out of memory for %" PRId64 " slots", T);
  }
  for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < S1; i++) {
      int64_t nv = 0;
      for (int64_t t = 0; t < T; t++) {
        int64_t j = ldi(e, ix, ix->offset + b * ix->stride[0] +
                                   i * ix->stride[1] + t * ix->stride[2]);
        if (j >= 0 && j < S2) /* the selected key's row of kv */
          sel[nv++] = kv->offset + b * kv->stride[0] + j * kv->stride[1];
      }
      for (int64_t h = 0; h < H; h++) {
        const int64_t qo = q->offset + b * q->stride[0] + i * q->stride[1] +
                           h * q->stride[2];
        double mx = -INFINITY;
        for (int64_t t = 0; t < nv; t++) {
          double dot = 0;
          for (int64_t d = 0; d < D; d++)
            dot += ldf(e, q, qo + d * q->stride[3]) *
                   ldf(e, kv, sel[t] + d * kv->stride[2]);
          x[t] = n->scalar * dot;
          mx = x[t] > mx ? x[t] : mx;
        }
        double sum = 0;
        for (int64_t t = 0; t < nv; t++)
          sum += exp(x[t] - mx);
        const double l = nv ? mx + log(sum) : INFINITY;
        const int64_t row = ((b * S1 + i) * H + h);
        stf(e, lse, row, l);
        for (int64_t c = 0; c < dv; c++) {
          double o = 0;
          for (int64_t t = 0; t < nv; t++)
            o += exp(x[t] - l) * ldf(e, kv, sel[t] + c * kv->stride[2]);
          stf(e, out, row * dv + c, o);
        }
      }
    }
  free(sel);
  free(x);
  return PTO_OK;
}

/* A tile program: its instructions with the scalar reference, block by
 * block (the evaluator the builder gave it, tileops/tprog.c). */
pto_status pto__eval_tprog(eval_ctx *e, const pto_node *n) {
  const pto_tprog_def *d = n->tprog;
  pto_tp_view v[PTO_NODE_MAX_IN + PTO_NODE_MAX_OUT];
  for (int a = 0; a < d->n_args; a++) {
    const pto_tp_arg *g = &d->args[a];
    const pto_tensor *t = g->is_out ? n->out[g->index] : n->in[g->index];
    const int pad = 4 - t->ndim;
    v[a].dtype = t->dtype;
    v[a].base = g->is_out ? e->wr[t->id] : (void *)e->rd[t->root->id];
    if (!g->is_out)
      v[a].base = (char *)v[a].base +
                  (size_t)t->offset * pto_dtype_size(t->dtype);
    for (int x = 0; x < 4; x++) {
      v[a].shape[x] = x < pad ? 1 : t->shape[x - pad];
      v[a].stride[x] = x < pad ? 0 : t->stride[x - pad];
    }
    if (g->is_out) /* a result is dense from offset 0 */
      pto__dense_strides(4, v[a].shape, v[a].stride);
  }
  char msg[256];
  pto_status st = d->eval(d, v, msg, sizeof msg);
  return st ? run_fail(e->p, "tile_program", n->label, st, "'%s': %s",
                       d->name, msg)
            : PTO_OK;
}
