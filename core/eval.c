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
 *
 * This file holds the run, the scalar semantics and the element-wise ops
 * (with reductions, concat, assemble, fill and iota); the matmul family, top-k,
 * gather, custom instructions and sparse attention are in core/eval_ops.c,
 * and what the two share (element access, index helpers, the run-time
 * error) is in core/eval.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/convert.h"
#include "core/eval.h"
#include "core/program.h"

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
    /* from the identity, which an axis of extent 0 leaves (a run's
     * tiles give it too, tileops/empty.c) */
    const int mn = n->op == PTO_TOP_ROWMIN;
    double acc = sum ? 0 : mn ? INFINITY : -INFINITY; /* sum, or max/min */
    uint64_t iacc = 0;                                 /* i32 sum, wrapping */
    int64_t iext = mn ? INT32_MAX : INT32_MIN;         /* i32 max/min */
    for (int64_t r = 0; r < a->shape[axis]; r++) {
      idx[axis] = r;
      int64_t off = bcast_off(a, a->ndim, idx);
      if (out->dtype == PTO_I32) {
        int64_t v = ldi(e, a, off);
        if (sum)
          iacc += (uint64_t)v;
        else if (mn ? v < iext : v > iext)
          iext = v;
      } else {
        double v = ldf(e, a, off);
        if (sum)
          acc += v;
        else if (r == 0)
          acc = v;
        else
          acc = mn ? min_f(acc, v) : max_f(acc, v);
      }
    }
    if (out->dtype == PTO_I32)
      sti(e, out, j, sum ? iacc : (uint64_t)iext);
    else
      stf(e, out, j, acc);
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

/* start + the index along the axis: in i32 (the builder checked), then
 * converted for an f32 iota. */
static pto_status eval_iota(eval_ctx *e, const pto_node *n) {
  const pto_tensor *out = n->out[0];
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(out); j++) {
    unravel(j, out->ndim, out->shape, idx);
    int64_t v = n->ival + idx[n->axis];
    if (out->dtype == PTO_I32)
      sti(e, out, j, (uint64_t)v);
    else
      ((float *)e->wr[out->id])[j] = (float)v;
  }
  return PTO_OK;
}

/* Copies t (any view) into the window of out (dense) starting at begin. */
static void copy_window(eval_ctx *e, const pto_tensor *t, const pto_tensor *out,
                        const int64_t *begin) {
  int64_t idx[PTO_MAX_DIMS];
  for (int64_t j = 0; j < numel(t); j++) {
    unravel(j, t->ndim, t->shape, idx);
    int64_t off = bcast_off(t, t->ndim, idx);
    for (int d = 0; d < t->ndim; d++)
      idx[d] += begin[d];
    copy_elem(e, t, off, out, ravel(out->ndim, out->shape, idx));
  }
}

/* The chain's base, unless its blocks cover it, then every block of the
 * chain in the order they were assembled: each element is the last
 * block's that covers it. */
static pto_status eval_assemble(eval_ctx *e, const pto_node *n) {
  const pto_tensor *out = n->out[0];
  int len = 1;
  const pto_node *c = n;
  for (const pto_node *q; (q = pto__assemble_prev(c)) != NULL; c = q)
    len++;
  const pto_node **chain = malloc((size_t)len * sizeof *chain);
  if (!chain)
    return run_fail(e->p, "assemble", n->label, PTO_ENOMEM,
                    "out of memory for a chain of %d blocks", len);
  c = n;
  for (int i = len; i-- > 0; c = pto__assemble_prev(c))
    chain[i] = c;
  if (!(n->flags & PTO_ASSEMBLE_COVERED)) {
    const int64_t zero[PTO_MAX_DIMS] = {0};
    copy_window(e, chain[0]->in[0], out, zero);
  }
  for (int i = 0; i < len; i++)
    copy_window(e, chain[i]->in[1], out, chain[i]->offs);
  free(chain);
  return PTO_OK;
}

static const eval_fn eval_fns[PTO_TC_COUNT] = {
    [PTO_TC_BINARY] = eval_binary,
    [PTO_TC_SCALAR] = eval_scalar,
    [PTO_TC_UNARY] = eval_unary,
    [PTO_TC_CAST] = eval_cast,
    [PTO_TC_CMP] = eval_cmp,
    [PTO_TC_SELECT] = eval_select,
    [PTO_TC_REDUCE] = eval_reduce,
    [PTO_TC_MATMUL] = pto__eval_matmul,
    [PTO_TC_TOPK] = pto__eval_topk,
    [PTO_TC_GATHER] = pto__eval_gather,
    [PTO_TC_CONCAT] = eval_concat,
    [PTO_TC_FILL] = eval_fill,
    [PTO_TC_IOTA] = eval_iota,
    [PTO_TC_CUSTOM] = pto__eval_custom,
    [PTO_TC_ATTENTION] = pto__eval_attention,
    [PTO_TC_ASSEMBLE] = eval_assemble,
    [PTO_TC_TPROG] = pto__eval_tprog,
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
