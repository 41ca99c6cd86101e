/* The reference evaluator: runs a program op by op in plain C. It is the
 * oracle every compiled run is checked against, so it is written to be
 * obviously right, not fast.
 *
 * Storage. Every root tensor (input or op result) has one dense row-major
 * buffer in its own dtype: an input reads the caller's buffer directly (never
 * written), an op result gets a zeroed buffer. A view reads its root's buffer
 * through its offset and strides. Outputs are copied into the caller's dense
 * buffers at the end, and only when the whole run succeeded.
 *
 * Arithmetic. Every operand is read as a double (f32, bf16, f16 and i32 are all
 * exact in double) and each result is rounded once to its dtype:
 *   - f32 results are computed in double and rounded to f32. For add, sub,
 *     mul, div, recip (1/x) and sqrt this is element-exact with the f32
 *     operation itself: double has more than 2p+2 = 50 bits of precision for
 *     p = 24, so rounding the exact double result to f32 gives the correctly
 *     rounded f32 result (double rounding is innocuous for + - * / sqrt). max,
 *     min, abs, neg, relu, cmp, select, cast and every data-movement op are
 *     exact too. exp, log and rsqrt are not: double then rounded is more
 *     accurate than an f32 implementation and may differ in the last bit.
 *   - The scalar of an f32 tensor-scalar op is rounded to f32 first, as a tile
 *     instruction receives it, so adds/subs/muls/divs are exact f32 ops.
 *   - Reductions and matmul accumulate in double and round once at the end.
 *   - i32 arithmetic is done in 64-bit integers and wrapped to 32 bits: add,
 *     sub, mul, neg, abs and sums wrap; div truncates, x/0 is 0 and
 *     INT32_MIN/-1 wraps to INT32_MIN. No operation has undefined behaviour.
 *   - max/min (and rowmax, rowmin, colmax, maxs, mins, relu) follow IEEE
 *     754-2019 maximum/minimum: a NaN operand gives NaN, and +0 > -0.
 *   - bf16/f16 results (cast, full) are f32 values rounded to nearest even
 *     by core/convert.h; gather, concat and copies move raw elements.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/convert.h"
#include "core/custom.h"
#include "core/program.h"

/* ---- element access ----------------------------------------------------- */

typedef struct eval_ctx {
  pto_program *p;
  const void **rd; /* by tensor id: a root's storage, to read */
  void **wr;       /* by tensor id: an op result's storage, to write */
} eval_ctx;

/* Wraps a 64-bit two's-complement value to i32 (modulo 2^32), without
 * relying on implementation-defined conversions. */
static int32_t wrap32(uint64_t u) {
  uint32_t v = (uint32_t)u;
  return v <= INT32_MAX ? (int32_t)v : -(int32_t)(~v) - 1;
}

static double load(const void *base, pto_dtype dt, int64_t i) {
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
static void store(void *base, pto_dtype dt, int64_t i, double v) {
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
static double ldf(const eval_ctx *e, const pto_tensor *t, int64_t off) {
  return load(e->rd[t->root->id], t->dtype, off);
}
static int64_t ldi(const eval_ctx *e, const pto_tensor *t, int64_t off) {
  return ((const int32_t *)e->rd[t->root->id])[off];
}
/* Element j of an op result (dense, offset 0). */
static void stf(const eval_ctx *e, const pto_tensor *out, int64_t j, double v) {
  store(e->wr[out->id], out->dtype, j, v);
}
static void sti(const eval_ctx *e, const pto_tensor *out, int64_t j,
                uint64_t v) {
  ((int32_t *)e->wr[out->id])[j] = wrap32(v);
}
/* Copies one raw element (same dtype) from t at off to out at j. */
static void copy_elem(const eval_ctx *e, const pto_tensor *t, int64_t off,
                      const pto_tensor *out, int64_t j) {
  size_t es = pto_dtype_size(t->dtype);
  memcpy((char *)e->wr[out->id] + (size_t)j * es,
         (const char *)e->rd[t->root->id] + (size_t)off * es, es);
}

/* ---- index helpers ------------------------------------------------------ */

static int64_t numel(const pto_tensor *t) {
  return pto_tensor_numel(t);
}

/* Multi-index of row-major linear index j in shape. */
static void unravel(int64_t j, int nd, const int64_t *shape, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = j % shape[d];
    j /= shape[d];
  }
}

static int64_t ravel(int nd, const int64_t *shape, const int64_t *idx) {
  int64_t j = 0;
  for (int d = 0; d < nd; d++)
    j = j * shape[d] + idx[d];
  return j;
}

/* Storage offset of element idx (an index into an nd-dim result) in t, with
 * numpy broadcasting: t's dims are right-aligned and a dim of 1 stays 0. */
static int64_t bcast_off(const pto_tensor *t, int nd, const int64_t *idx) {
  int64_t off = t->offset;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != 1)
      off += idx[nd - t->ndim + d] * t->stride[d];
  return off;
}

/* ---- run-time errors ---------------------------------------------------- */

/* Records "<op>[ '<label>']: <message>" as the run-time error. */
__attribute__((format(printf, 5, 6))) static pto_status
run_fail(pto_program *p, const char *op, const char *label, pto_status st,
         const char *fmt, ...) {
  char msg[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (label && label[0])
    pto__error_set(&p->run_err, st, "%s '%s': %s", op, label, msg);
  else
    pto__error_set(&p->run_err, st, "%s: %s", op, msg);
  return st;
}

/* ---- scalar semantics ---------------------------------------------------- */

/* IEEE 754-2019 maximum and minimum: NaN propagates, +0 > -0. */
static double max_f(double a, double b) {
  if (isnan(a) || isnan(b))
    return isnan(a) ? a : b;
  if (a == b)
    return signbit(a) ? b : a;
  return a > b ? a : b;
}
static double min_f(double a, double b) {
  if (isnan(a) || isnan(b))
    return isnan(a) ? a : b;
  if (a == b)
    return signbit(a) ? a : b;
  return a < b ? a : b;
}

/* i32 x/y: truncates, x/0 = 0, INT32_MIN/-1 wraps (done in 64 bits). */
static uint64_t div_i(int64_t a, int64_t b) {
  return b == 0 ? 0 : (uint64_t)(a / b);
}

/* The arithmetic of the binary and tensor-scalar ops, by binary op. */
static double arith_f(pto_top op, double a, double b) {
  switch (op) {
  case PTO_TOP_ADD:
    return a + b;
  case PTO_TOP_SUB:
    return a - b;
  case PTO_TOP_MUL:
    return a * b;
  case PTO_TOP_DIV:
    return a / b;
  case PTO_TOP_MAX:
    return max_f(a, b);
  default:
    return min_f(a, b);
  }
}

static uint64_t arith_i(pto_top op, int64_t a, int64_t b) {
  switch (op) {
  case PTO_TOP_ADD:
    return (uint64_t)a + (uint64_t)b;
  case PTO_TOP_SUB:
    return (uint64_t)a - (uint64_t)b;
  case PTO_TOP_MUL:
    return (uint64_t)(a * b); /* |a*b| <= 2^62: no overflow in 64 bits */
  case PTO_TOP_DIV:
    return div_i(a, b);
  case PTO_TOP_MAX:
    return (uint64_t)(a > b ? a : b);
  default:
    return (uint64_t)(a < b ? a : b);
  }
}

/* ---- ops ---------------------------------------------------------------- */

typedef pto_status (*eval_fn)(eval_ctx *e, const pto_node *n);

static pto_status eval_binary(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *b = n->in[1], *out = n->out[0];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    int64_t oa = bcast_off(a, out->ndim, idx),
            ob = bcast_off(b, out->ndim, idx);
    if (out->dtype == PTO_I32)
      sti(e, out, j, arith_i(n->op, ldi(e, a, oa), ldi(e, b, ob)));
    else
      stf(e, out, j, arith_f(n->op, ldf(e, a, oa), ldf(e, b, ob)));
  }
  return PTO_OK;
}

static pto_status eval_scalar(eval_ctx *e, const pto_node *n) {
  static const pto_top as_binary[] = {
      [PTO_TOP_ADDS] = PTO_TOP_ADD, [PTO_TOP_SUBS] = PTO_TOP_SUB,
      [PTO_TOP_MULS] = PTO_TOP_MUL, [PTO_TOP_DIVS] = PTO_TOP_DIV,
      [PTO_TOP_MAXS] = PTO_TOP_MAX, [PTO_TOP_MINS] = PTO_TOP_MIN};
  const pto_tensor *a = n->in[0], *out = n->out[0];
  pto_top op = as_binary[n->op];
  /* The builder made an i32 scalar an integer inside i32; an f32 op gets its
   * scalar as an f32, as a tile instruction does. */
  double s = out->dtype == PTO_I32 ? n->scalar : (double)(float)n->scalar;
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    int64_t off = bcast_off(a, out->ndim, idx);
    if (out->dtype == PTO_I32)
      sti(e, out, j, arith_i(op, ldi(e, a, off), (int64_t)s));
    else
      stf(e, out, j, arith_f(op, ldf(e, a, off), s));
  }
  return PTO_OK;
}

static double unary_f(pto_top op, double x) {
  switch (op) {
  case PTO_TOP_EXP:
    return exp(x);
  case PTO_TOP_LOG:
    return log(x);
  case PTO_TOP_SQRT:
    return sqrt(x);
  case PTO_TOP_RSQRT:
    return 1.0 / sqrt(x);
  case PTO_TOP_RECIP:
    return 1.0 / x;
  case PTO_TOP_RELU:
    return max_f(x, 0.0);
  case PTO_TOP_ABS:
    return fabs(x);
  default:
    return -x;
  }
}

static uint64_t unary_i(pto_top op, int64_t x) {
  switch (op) {
  case PTO_TOP_RELU:
    return (uint64_t)(x > 0 ? x : 0);
  case PTO_TOP_ABS:
    return (uint64_t)(x < 0 ? -x : x); /* abs(INT32_MIN) wraps */
  default:
    return (uint64_t)-x;
  }
}

static pto_status eval_unary(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *out = n->out[0];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    int64_t off = bcast_off(a, out->ndim, idx);
    if (out->dtype == PTO_I32)
      sti(e, out, j, unary_i(n->op, ldi(e, a, off)));
    else
      stf(e, out, j, unary_f(n->op, ldf(e, a, off)));
  }
  return PTO_OK;
}

/* Casts go through f32, as a tile load does: float -> i32 rounds to nearest
 * even and saturates (NaN -> 0); i32 -> f32 rounds to nearest even; i32 ->
 * bf16/f16 rounds to f32 first and then to the narrow type. */
static pto_status eval_cast(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *out = n->out[0];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    int64_t off = bcast_off(a, out->ndim, idx);
    if (a->dtype == out->dtype)
      copy_elem(e, a, off, out, j);
    else if (out->dtype == PTO_I32)
      sti(e, out, j,
          (uint64_t)(int64_t)pto__f32_to_i32_sat((float)ldf(e, a, off)));
    else
      stf(e, out, j, (double)(float)ldf(e, a, off));
  }
  return PTO_OK;
}

static int compare(pto_cmp_mode mode, double a, double b) {
  switch (mode) { /* C comparisons: NaN is false except for != */
  case PTO_CMP_EQ:
    return a == b;
  case PTO_CMP_NE:
    return a != b;
  case PTO_CMP_LT:
    return a < b;
  case PTO_CMP_LE:
    return a <= b;
  case PTO_CMP_GT:
    return a > b;
  default:
    return a >= b;
  }
}

/* i32 operands are exact in double, so one comparison serves both. */
static pto_status eval_cmp(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *b = n->in[1], *out = n->out[0];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    double x = ldf(e, a, bcast_off(a, out->ndim, idx));
    double y = ldf(e, b, bcast_off(b, out->ndim, idx));
    sti(e, out, j, (uint64_t)compare((pto_cmp_mode)n->ival, x, y));
  }
  return PTO_OK;
}

static pto_status eval_select(eval_ctx *e, const pto_node *n) {
  const pto_tensor *m = n->in[0], *out = n->out[0];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    const pto_tensor *t =
        ldi(e, m, bcast_off(m, out->ndim, idx)) ? n->in[1] : n->in[2];
    stf(e, out, j, ldf(e, t, bcast_off(t, out->ndim, idx)));
  }
  return PTO_OK;
}

/* Row ops reduce the last axis, column ops the one before; dims are kept. */
static pto_status eval_reduce(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *out = n->out[0];
  int col = n->op == PTO_TOP_COLSUM || n->op == PTO_TOP_COLMAX;
  int sum = n->op == PTO_TOP_ROWSUM || n->op == PTO_TOP_COLSUM;
  int axis = a->ndim - 1 - col;
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    double acc = 0;    /* float sum, or running max/min */
    uint64_t iacc = 0; /* i32 sum, wrapping */
    int64_t iext = 0;  /* i32 max/min */
    for (int64_t r = 0; r < a->shape[axis]; r++) {
      idx[axis] = r;
      int64_t off = bcast_off(a, a->ndim, idx);
      if (out->dtype == PTO_I32) {
        int64_t v = ldi(e, a, off);
        if (sum)
          iacc += (uint64_t)v;
        else if (r == 0 || (n->op == PTO_TOP_ROWMIN ? v < iext : v > iext))
          iext = v;
      } else {
        double v = ldf(e, a, off);
        if (sum)
          acc += v;
        else if (r == 0)
          acc = v;
        else
          acc = n->op == PTO_TOP_ROWMIN ? min_f(acc, v) : max_f(acc, v);
      }
    }
    if (out->dtype == PTO_I32)
      sti(e, out, j, sum ? iacc : (uint64_t)iext);
    else
      stf(e, out, j, acc);
  }
  return PTO_OK;
}

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

/* out[.., m, n] = (acc[.., m, n] +) sum_k A[.., m, k] * B[.., k, n], with A
 * stored [.., K, M] under TRANS_A and B stored [.., N, K] under TRANS_B. The
 * products of f32 values are exact in double; the sum is in double. */
/* (a x b)[.., m, c] at batch index idx, in double. */
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

static pto_status eval_matmul(eval_ctx *e, const pto_node *n) {
  if (n->op == PTO_TOP_MATMUL_RELU_WSUM)
    return eval_matmul_wsum(e, n);
  const pto_tensor *out = n->out[0];
  const pto_tensor *acc = n->n_in > 2 ? n->in[2] : NULL;
  int nd = out->ndim;
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, nd, out->shape, idx);
    double s = acc ? ldf(e, acc, bcast_off(acc, nd, idx)) : 0.0;
    stf(e, out, j, s + mm_dot(e, n, nd, idx, idx[nd - 2], idx[nd - 1]));
  }
  return PTO_OK;
}

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
static pto_status eval_topk(eval_ctx *e, const pto_node *n) {
  const pto_tensor *a = n->in[0], *vals = n->out[0], *inds = n->out[1];
  int nd = a->ndim;
  int64_t len = a->shape[nd - 1], k = n->ival, rows = numel(a) / len;
  const int masked = (n->flags & PTO_TOPK_MASKED) != 0;
  topk_item *items = malloc((size_t)len * sizeof *items);
  if (!items)
    return run_fail(e->p, "topk", n->label, PTO_ENOMEM,
                    "out of memory for a row of %" PRId64, len);
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t r = 0; r < rows; r++) {
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
static pto_status eval_gather(eval_ctx *e, const pto_node *n) {
  const pto_tensor *table = n->in[0], *index = n->in[1], *out = n->out[0];
  int64_t rows = table->shape[0], width = table->shape[1];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t s = 0; s < numel(index); s++) {
    unravel(s, index->ndim, index->shape, idx);
    int64_t row = ldi(e, index, bcast_off(index, index->ndim, idx));
    if (row < 0 || row >= rows) {
      if (!(n->flags & PTO_GATHER_STRICT))
        continue;
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

static pto_status eval_concat(eval_ctx *e, const pto_node *n) {
  const pto_tensor *out = n->out[0];
  int ax = (int)n->ival;
  int64_t shift = 0, idx[PTO_MAX_DIMS];
  for (int i = 0; i < n->n_in; i++) {
    const pto_tensor *t = n->in[i];
    for (int64_t j = 0; j < numel(t); j++) {
      unravel(j, t->ndim, t->shape, idx);
      int64_t off = bcast_off(t, t->ndim, idx);
      idx[ax] += shift;
      copy_elem(e, t, off, out, ravel(out->ndim, out->shape, idx));
    }
    shift += t->shape[ax];
  }
  return PTO_OK;
}

static pto_status eval_fill(eval_ctx *e, const pto_node *n) {
  const pto_tensor *out = n->out[0];
  for (int64_t j = 0; j < numel(out); j++)
    stf(e, out, j, n->scalar);
  return PTO_OK;
}

static pto_status eval_iota(eval_ctx *e, const pto_node *n) {
  const pto_tensor *out = n->out[0];
  int64_t last = out->shape[out->ndim - 1];
  for (int64_t j = 0; j < numel(out); j++) {
    int64_t v = n->ival + j % last; /* in i32 for an i32 iota (builder) */
    if (out->dtype == PTO_I32)
      sti(e, out, j, (uint64_t)v);
    else
      ((float *)e->wr[out->id])[j] = (float)v;
  }
  return PTO_OK;
}

/* A custom op is a tile-local map, so it may run once over the whole tensor,
 * flattened to 2-D [numel/last, last]. Its source tiles hold the inputs in
 * their compute dtype (bf16/f16 loaded as f32, as a tile load does); its
 * destination tile has the registered out_dtype. */
static pto_status eval_custom(eval_ctx *e, const pto_node *n) {
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

/* Per query: the valid indices, scores in double, a max-shifted log-sum-
 * exp, then the weighted sum of the value rows. */
static pto_status eval_attention(eval_ctx *e, const pto_node *n) {
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
        if (j >= 0 && j < S2)
          sel[nv++] = j;
      }
      for (int64_t h = 0; h < H; h++) {
        const int64_t qo = q->offset + b * q->stride[0] + i * q->stride[1] +
                           h * q->stride[2];
        double mx = -INFINITY;
        for (int64_t t = 0; t < nv; t++) {
          const int64_t ko = kv->offset + b * kv->stride[0] +
                             sel[t] * kv->stride[1];
          double dot = 0;
          for (int64_t d = 0; d < D; d++)
            dot += ldf(e, q, qo + d * q->stride[3]) *
                   ldf(e, kv, ko + d * kv->stride[2]);
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
            o += exp(x[t] - l) * ldf(e, kv, kv->offset + b * kv->stride[0] +
                                                sel[t] * kv->stride[1] +
                                                c * kv->stride[2]);
          stf(e, out, row * dv + c, o);
        }
      }
    }
  free(sel);
  free(x);
  return PTO_OK;
}

static const eval_fn eval_fns[PTO_TC_COUNT] = {
    [PTO_TC_BINARY] = eval_binary, [PTO_TC_SCALAR] = eval_scalar,
    [PTO_TC_UNARY] = eval_unary,   [PTO_TC_CAST] = eval_cast,
    [PTO_TC_CMP] = eval_cmp,       [PTO_TC_SELECT] = eval_select,
    [PTO_TC_REDUCE] = eval_reduce, [PTO_TC_MATMUL] = eval_matmul,
    [PTO_TC_TOPK] = eval_topk,     [PTO_TC_GATHER] = eval_gather,
    [PTO_TC_CONCAT] = eval_concat, [PTO_TC_FILL] = eval_fill,
    [PTO_TC_IOTA] = eval_iota,     [PTO_TC_CUSTOM] = eval_custom,
    [PTO_TC_ATTENTION] = eval_attention,
};

/* ---- the run ------------------------------------------------------------ */

/* Copies t (any view) into a dense row-major buffer. */
static void copy_out(const eval_ctx *e, const pto_tensor *t, void *dst) {
  size_t es = pto_dtype_size(t->dtype);
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(t); j++) {
    unravel(j, t->ndim, t->shape, idx);
    memcpy((char *)dst + (size_t)j * es,
           (const char *)e->rd[t->root->id] +
               (size_t)bcast_off(t, t->ndim, idx) * es,
           es);
  }
}

pto_status pto_program_eval(pto_program *p, const void *const *inputs,
                            void *const *outputs) {
  if (!p)
    return PTO_EINVAL;
  pto__error_clear(&p->run_err);
  if (p->err.status != PTO_OK)
    return p->err.status;
  /* A program without inputs (or outputs) may pass NULL for that array. */
  if (!inputs && p->n_inputs)
    return run_fail(p, "eval", NULL, PTO_EINVAL,
                    "inputs is NULL; program '%s' has %u inputs", p->name,
                    p->n_inputs);
  if (!outputs && p->n_outputs)
    return run_fail(p, "eval", NULL, PTO_EINVAL,
                    "outputs is NULL; program '%s' has %u outputs", p->name,
                    p->n_outputs);
  for (uint32_t i = 0; i < p->n_inputs; i++)
    if (!inputs[i])
      return run_fail(p, "eval", NULL, PTO_EINVAL,
                      "inputs[%u] (input '%s') is NULL", i, p->inputs[i]->name);
  for (uint32_t i = 0; i < p->n_outputs; i++)
    if (!outputs[i])
      return run_fail(p, "eval", NULL, PTO_EINVAL,
                      "outputs[%u] (output '%s') is NULL", i,
                      p->output_names[i]);

  pto_status st = PTO_OK;
  uint8_t *live = NULL;
  eval_ctx e = {p, calloc(p->n_tensors + 1, sizeof(void *)),
                calloc(p->n_tensors + 1, sizeof(void *))};
  if (!e.rd || !e.wr) {
    st = run_fail(p, "eval", NULL, PTO_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < p->n_inputs; i++)
    e.rd[p->inputs[i]->id] = inputs[i];
  /* as pto_compile: an op no output depends on is not run, so it cannot
   * fail the run (a strict gather nothing reads) */
  live = pto__live_nodes(p);
  if (!live) {
    st = run_fail(p, "eval", NULL, PTO_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < p->n_nodes && st == PTO_OK; i++) {
    const pto_node *n = p->nodes[i];
    if (!live[i])
      continue;
    for (int o = 0; o < n->n_out; o++) {
      const pto_tensor *t = n->out[o];
      size_t bytes = (size_t)numel(t) * pto_dtype_size(t->dtype);
      e.wr[t->id] = calloc(1, bytes);
      e.rd[t->id] = e.wr[t->id];
      if (!e.wr[t->id]) {
        st = run_fail(p, pto__top_name(n->op), n->label, PTO_ENOMEM,
                      "out of memory for %zu bytes of result", bytes);
        goto done;
      }
    }
    st = eval_fns[pto__top_class(n->op)](&e, n);
  }
  if (st == PTO_OK)
    for (uint32_t i = 0; i < p->n_outputs; i++)
      copy_out(&e, p->outputs[i], outputs[i]);
done:
  if (e.wr)
    for (uint32_t i = 0; i < p->n_tensors; i++)
      free(e.wr[i]);
  free(e.rd);
  free(e.wr);
  free(live);
  return st;
}
