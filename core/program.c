/* The program builder: the program, its scopes (tile shapes, knobs,
 * labels), inputs and outputs, views, and the checks every op constructor
 * runs (core/build.h; the constructors are in core/program_ops.c). A
 * failed check records a sticky error naming the op, its label, the
 * tensors and their sizes, and returns NULL. */
#include "core/program.h"
#include "core/config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/build.h"
#include "core/tprog.h"

static const struct {
  const char *name;
  pto_top_class cls;
} tops[PTO_TOP_COUNT] = {
#define PTO_TOP(name, str, cls) {str, PTO_TC_##cls},
#include "core/ops.def"
#undef PTO_TOP
};

const char *pto__top_name(pto_top op) {
  return (unsigned)op < PTO_TOP_COUNT ? tops[op].name : "?";
}

pto_top_class pto__top_class(pto_top op) {
  return tops[op].cls;
}

pto_core_type pto__top_core(pto_top op) {
  pto_top_class c = pto__top_class(op);
  return c == PTO_TC_MATMUL || c == PTO_TC_ATTENTION ? PTO_CORE_CUBE
                                                     : PTO_CORE_VECTOR;
}

/* ---- helpers ------------------------------------------------------------ */

void pto__dense_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    stride[i] = s;
    s *= shape[i];
  }
}

int pto__tensor_is_contiguous(const pto_tensor *t) {
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->stride[i] != s)
      return 0;
    s *= t->shape[i];
  }
  return 1;
}

void pto__shape_str(int ndim, const int64_t *shape, char *buf, size_t size) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, size - n, "[");
  for (int i = 0; i < ndim && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? "," : "",
                          shape[i]);
  if (n < size)
    snprintf(buf + n, size - n, "]");
}

/* Walking back from the outputs in reverse topological order, a node is
 * live when one of its results shares storage with a needed tensor, and
 * then needs its inputs' storages. A live assemble needs the blocks of
 * its whole chain and the chain's base (unless the blocks cover it), not
 * the chain's intermediate results: it writes every block itself. */
uint8_t *pto__live_nodes(const pto_program *p) {
  return pto__live_nodes_using(p, NULL);
}

uint8_t *pto__live_nodes_using(const pto_program *p,
                               const pto_tensor *const *const *reads) {
  uint8_t *live = calloc(p->n_nodes + p->n_tensors + 1, 1);
  if (!live)
    return NULL;
  uint8_t *need = live + p->n_nodes;
  for (uint32_t j = 0; j < p->n_outputs; j++)
    need[p->outputs[j]->root->id] = 1;
  for (uint32_t i = p->n_nodes; i-- > 0;) {
    const pto_node *n = p->nodes[i];
    for (int k = 0; k < n->n_out; k++)
      live[i] |= need[n->out[k]->root->id];
    if (live[i] && n->op == PTO_TOP_ASSEMBLE) {
      const pto_node *c = n;
      for (const pto_node *q; (q = pto__assemble_prev(c)) != NULL; c = q)
        need[c->in[1]->root->id] = 1;
      need[c->in[1]->root->id] = 1;
      if (!(n->flags & PTO_ASSEMBLE_COVERED))
        need[c->in[0]->root->id] = 1;
      continue;
    }
    if (live[i] && reads && reads[i]) {
      for (const pto_tensor *const *r = reads[i]; *r; r++)
        need[(*r)->root->id] = 1;
      continue;
    }
    for (int k = 0; live[i] && k < n->n_in; k++)
      if (n->in[k])
        need[n->in[k]->root->id] = 1;
  }
  return live;
}

const char *pto__tensor_desc(const pto_tensor *t, char *buf, size_t size) {
  char sh[96];
  size_t n = (size_t)snprintf(sh, sizeof sh, "[");
  for (int i = 0; i < t->ndim && n < sizeof sh; i++) {
    /* a dynamic axis as its dim and maximum: [S<=8192,128] */
    const int d = t->dyn[i];
    if (d >= 0 && t->prog && t->dyn_off[i] < 0) /* after static rows */
      n += (size_t)snprintf(sh + n, sizeof sh - n, "%s%" PRId64 "+%s<=%" PRId64,
                            i ? "," : "", -t->dyn_off[i],
                            t->prog->dims[d].name, t->shape[i]);
    else if (d >= 0 && t->prog && t->dyn_off[i]) /* a slice: [S[3:4],16] */
      n += (size_t)snprintf(sh + n, sizeof sh - n,
                            "%s%s[%" PRId64 ":%" PRId64 "]", i ? "," : "",
                            t->prog->dims[d].name, t->dyn_off[i],
                            t->dyn_off[i] + t->shape[i]);
    else if (d >= 0 && t->prog)
      n += (size_t)snprintf(sh + n, sizeof sh - n, "%s%s<=%" PRId64,
                            i ? "," : "", t->prog->dims[d].name, t->shape[i]);
    else
      n += (size_t)snprintf(sh + n, sizeof sh - n, "%s%" PRId64, i ? "," : "",
                            t->shape[i]);
  }
  if (n < sizeof sh)
    snprintf(sh + n, sizeof sh - n, "]");
  snprintf(buf, size, "'%s' %s%s", t->name, pto_dtype_name(t->dtype), sh);
  return buf;
}

static const char *cur_label(const pto_program *p) {
  return p->n_labels ? p->labels[p->n_labels - 1] : "";
}

pto_status pto__error_op(pto_error *e, int first, pto_status st,
                         const char *op, const char *label, const char *fmt,
                         va_list ap) {
  char msg[PTO_ERROR_MSG];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (label && label[0])
    return first ? pto__error_first(e, st, "%s '%s': %s", op, label, msg)
                 : pto__error_set(e, st, "%s '%s': %s", op, label, msg);
  return first ? pto__error_first(e, st, "%s: %s", op, msg)
               : pto__error_set(e, st, "%s: %s", op, msg);
}

pto_tensor *pto__fail(pto_program *p, const char *op, pto_status st,
                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pto__error_op(&p->err, 1, st, op, cur_label(p), fmt, ap);
  va_end(ap);
  return NULL;
}

pto_status pto_program_fail(pto_program *p, pto_status status, const char *op,
                            const char *fmt, ...) {
  if (!p || !op || !fmt)
    return pto__last_error(PTO_EINVAL, "pto_program_fail: %s is NULL",
                           !p    ? "the program"
                           : !op ? "op"
                                 : "fmt");
  if (status >= 0) /* not recorded: the program stays usable */
    return pto__last_error(PTO_EINVAL,
                           "pto_program_fail: status %d is not an error "
                           "(errors are negative)",
                           (int)status);
  char msg[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pto__fail(p, op, status, "%s", msg);
  return status;
}

const char *pto_tensor_describe(const pto_tensor *t, char *buf, size_t size) {
  if (!t || !buf || !size)
    return "";
  return pto__tensor_desc(t, buf, size);
}

static pto_tensor *fail_nomem(pto_program *p, const char *op) {
  return pto__fail(p, op, PTO_ENOMEM, "out of memory");
}

int pto__check_operands(pto_program *p, const char *op, int n,
                        pto_tensor *const *ts) {
  for (int i = 0; i < n; i++) {
    const pto_tensor *t = ts[i];
    if (!t) {
      if (p->err.status == PTO_OK)
        pto__fail(p, op, PTO_EINVAL, "operand %d is NULL", i);
      return 0;
    }
    if (t->id >= p->n_tensors || p->tensors[t->id] != t) {
      pto__fail(p, op, PTO_EINVAL, "operand %d belongs to another program", i);
      return 0;
    }
  }
  return 1;
}

/* The first dim of shape that is < 1 or takes numel to 2^40 or more (numel
 * and the dense strides then stay far inside int64), or -1. */
static int bad_dim(int ndim, const int64_t *shape) {
  const int64_t max = (INT64_C(1) << 40) - 1;
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 1 || shape[i] > max / numel)
      return i;
    numel *= shape[i];
  }
  return -1;
}

int pto__dim_of_code(const pto_program *p, int64_t v) {
  if (v > PTO_DIM_CODE_BASE || v <= PTO_DIM_CODE_BASE - PTO_DIMS_MAX)
    return -1;
  int i = (int)(PTO_DIM_CODE_BASE - v);
  return i < p->n_dims ? i : -1;
}

int pto__resolve_shape(const pto_program *p, int ndim, const int64_t *shape,
                       int64_t *max, int8_t *dyn) {
  for (int i = 0; i < ndim; i++) {
    int d = pto__dim_of_code(p, shape[i]);
    max[i] = d >= 0 ? p->dims[d].max : shape[i];
    dyn[i] = (int8_t)d;
  }
  for (int i = ndim; i < PTO_MAX_DIMS; i++)
    dyn[i] = -1;
  return 0;
}

int pto__check_shape(pto_program *p, const char *op, const char *what, int ndim,
                     const int64_t *shape_in) {
  if (ndim < 1 || ndim > PTO_MAX_DIMS) {
    pto__fail(p, op, PTO_EINVAL, "%s has %d dims; 1 to %d are supported", what,
              ndim, PTO_MAX_DIMS);
    return 0;
  }
  if (!shape_in) {
    pto__fail(p, op, PTO_EINVAL, "%s: shape is NULL", what);
    return 0;
  }
  int64_t shape[PTO_MAX_DIMS];
  int8_t dyn[PTO_MAX_DIMS];
  for (int k = 0; k < ndim; k++)
    if (shape_in[k] <= PTO_DIM_CODE_BASE &&
        pto__dim_of_code(p, shape_in[k]) < 0) {
      pto__fail(p, op, PTO_EINVAL,
                "%s: axis %d is %" PRId64 ", the code of no dynamic dim of "
                "program '%s' (it has %d)",
                what, k, shape_in[k], p->name, p->n_dims);
      return 0;
    }
  pto__resolve_shape(p, ndim, shape_in, shape, dyn);
  int i = bad_dim(ndim, shape);
  if (i >= 0) {
    char sh[64];
    pto__shape_str(ndim, shape, sh, sizeof sh);
    pto__fail(p, op, PTO_EINVAL,
              "%s shape %s: dim %d is %" PRId64
              " (dims must be >= 1 and numel < 2^40)",
              what, sh, i, shape[i]);
    return 0;
  }
  return 1;
}

int pto__check_dtype(pto_program *p, const char *op, pto_dtype dt) {
  if ((unsigned)dt >= PTO_DTYPE_COUNT) {
    pto__fail(p, op, PTO_EDTYPE, "dtype %d is not a pto_dtype", (int)dt);
    return 0;
  }
  return 1;
}

/* ---- object creation ---------------------------------------------------- */

static pto_tensor *new_tensor(pto_program *p, const char *op) {
  if (pto__grow((void **)&p->tensors, sizeof *p->tensors, &p->cap_tensors,
                p->n_tensors + 1))
    return fail_nomem(p, op);
  pto_tensor *t = pto__arena_alloc(&p->arena, sizeof *t, 8);
  if (!t)
    return fail_nomem(p, op);
  t->id = p->n_tensors;
  t->input_index = -1;
  t->prog = p;
  p->tensors[p->n_tensors++] = t;
  return t;
}

pto_tensor *pto__new_root(pto_program *p, const char *op, pto_dtype dt,
                          int ndim, const int64_t *shape, const char *name) {
  pto_tensor *t = new_tensor(p, op);
  if (!t)
    return NULL;
  char buf[64];
  if (!name) {
    snprintf(buf, sizeof buf, "%s%u", op, t->id);
    name = buf;
  }
  t->name = pto__arena_strdup(&p->arena, name);
  if (!t->name)
    return fail_nomem(p, op);
  t->dtype = dt;
  t->ndim = ndim;
  pto__resolve_shape(p, ndim, shape, t->shape, t->dyn);
  memset(t->dyn_off, 0, sizeof t->dyn_off);
  for (int d = 0; d < PTO_MAX_DIMS; d++)
    t->dyn_mul[d] = 1;
  pto__dense_strides(ndim, t->shape, t->stride);
  t->root = t;
  return t;
}

/* Whether the shape an op derives from its operands (broadcast, matmul,
 * gather, concat ...) is one pto_input would accept (bad_dim), so that its
 * numel and dense strides fit int64. Else records an error naming the op,
 * the shape and the operands. */
static int check_result_shape(pto_program *p, const char *op, int n_in,
                              pto_tensor *const *in, int ndim,
                              const int64_t *shape) {
  int bad = bad_dim(ndim, shape);
  if (bad < 0)
    return 1;
  char sh[96], ops[300];
  pto__shape_str(ndim, shape, sh, sizeof sh);
  size_t n = 0;
  ops[0] = '\0';
  for (int i = 0; i < n_in && n < sizeof ops; i++)
    n += (size_t)snprintf(ops + n, sizeof ops - n, "%s%s",
                          i ? (i + 1 == n_in ? " and " : ", ") : " of ",
                          D(in[i]));
  pto__fail(p, op, PTO_ESHAPE,
            "the result%s would be %s: dim %d is %" PRId64
            " (dims must be >= 1 and numel < 2^40)",
            ops, sh, bad, shape[bad]);
  return 0;
}

pto_node *pto__new_node(pto_program *p, pto_top op, int n_in,
                        pto_tensor *const *in, pto_dtype dt, int ndim,
                        const int64_t *shape) {
  const char *name = pto__top_name(op);
  int64_t max[PTO_MAX_DIMS];
  int8_t dyn[PTO_MAX_DIMS];
  pto__resolve_shape(p, ndim, shape, max, dyn);
  if (!check_result_shape(p, name, n_in, in, ndim, max))
    return NULL;
  if (pto__grow((void **)&p->nodes, sizeof *p->nodes, &p->cap_nodes,
                p->n_nodes + 1)) {
    fail_nomem(p, name);
    return NULL;
  }
  pto_node *n = pto__arena_alloc(&p->arena, sizeof *n, 8);
  pto_tensor *out = n ? pto__new_root(p, name, dt, ndim, shape, NULL) : NULL;
  if (!out) {
    if (!n)
      fail_nomem(p, name);
    return NULL;
  }
  n->id = p->n_nodes;
  n->op = op;
  n->n_in = n_in;
  n->in = n->in_buf;
  if (n_in > PTO_NODE_MAX_IN &&
      !(n->in = pto__arena_alloc(&p->arena, (size_t)n_in * sizeof *n->in,
                                 8))) {
    fail_nomem(p, name);
    return NULL;
  }
  for (int i = 0; i < n_in; i++)
    n->in[i] = in[i];
  n->n_out = 1;
  n->out[0] = out;
  n->label = cur_label(p);
  n->tile = p->tiles[p->n_tiles - 1];
  n->tile_set = p->tile_set[p->n_tiles - 1];
  n->knob_set = p->knob_set[p->n_tiles - 1];
  memcpy(n->knob, p->knobs[p->n_tiles - 1], sizeof n->knob);
  out->producer = n;
  p->nodes[p->n_nodes++] = n;
  switch (pto__top_class(op)) {
  case PTO_TC_MATMUL: /* their constructors call it when n is complete */
  case PTO_TC_TOPK:
  case PTO_TC_CONCAT:
  case PTO_TC_ATTENTION:
  case PTO_TC_TPROG:
    return n;
  default:
    return pto__node_dims(p, n) ? n : NULL;
  }
}

int pto__node_copy(pto_arena *a, pto_node *dst, const pto_node *src) {
  *dst = *src;
  dst->in = dst->in_buf;
  if (src->n_in > PTO_NODE_MAX_IN &&
      !(dst->in = pto__arena_alloc(a, (size_t)src->n_in * sizeof *dst->in, 8)))
    return -1;
  memcpy(dst->in, src->in, (size_t)src->n_in * sizeof *dst->in);
  if (src->tprog && !(dst->tprog = pto__tprog_copy(a, src->tprog)))
    return -1;
  if (src->offs) { /* ASSEMBLE: its begin, then its boxes */
    const size_t nd = (size_t)src->out[0]->ndim;
    size_t bytes = (nd + (src->ival > 0 ? (size_t)src->ival * 2 * nd : 0)) *
                   sizeof *src->offs;
    int64_t *o = pto__arena_alloc(a, bytes, 8);
    if (!o)
      return -1;
    memcpy(o, src->offs, bytes);
    dst->offs = o;
  }
  return 0;
}

/* ---- program ------------------------------------------------------------ */

pto_program *pto_program_new(const char *name) {
  pto_program *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  pto__arena_init(&p->arena);
  p->name = pto__arena_strdup(&p->arena, name ? name : "program");
  if (!p->name) {
    free(p);
    return NULL;
  }
  p->tiles[0] = pto_tile_shape_default();
  p->n_tiles = 1;
  return p;
}

void pto_program_free(pto_program *p) {
  if (!p)
    return;
  free(p->tensors);
  free(p->nodes);
  free(p->inputs);
  free(p->outputs);
  free(p->output_names);
  free(p->eqs);
  pto__arena_free(&p->arena);
  free(p);
}

const char *pto_program_name(const pto_program *p) {
  return p ? p->name : "";
}

pto_status pto_program_status(const pto_program *p) {
  return p ? p->err.status : PTO_EINVAL;
}

/* The build error when there is one, else the last eval's run-time error
 * (which does not make the program unusable: the next eval clears it). */
const char *pto_program_error(const pto_program *p) {
  if (!p)
    return "program is NULL";
  return p->err.status != PTO_OK ? p->err.msg : p->run_err.msg;
}

/* ---- dynamic dims ------------------------------------------------------- */

int64_t pto_dim_dynamic(pto_program *p, const char *name, int64_t max) {
  if (!p)
    return 0;
  if (!name || !name[0] || strlen(name) > 31) {
    pto__fail(p, "dim_dynamic", PTO_EINVAL,
              "a dynamic dim needs a name of 1 to 31 characters");
    return 0;
  }
  if (pto_program_find_dim(p, name) >= 0) {
    pto__fail(p, "dim_dynamic", PTO_EINVAL, "dim '%s' is declared twice", name);
    return 0;
  }
  if (max < 1 || max >= (INT64_C(1) << 40)) {
    pto__fail(p, "dim_dynamic", PTO_ERANGE,
              "dim '%s': maximum %" PRId64 " is not in [1, 2^40)", name, max);
    return 0;
  }
  if (p->n_dims == PTO_DIMS_MAX) {
    pto__fail(p, "dim_dynamic", PTO_ECAPACITY,
              "dim '%s': a program has at most %d dynamic dims", name,
              PTO_DIMS_MAX);
    return 0;
  }
  const char *nm = pto__arena_strdup(&p->arena, name);
  if (!nm) {
    fail_nomem(p, "dim_dynamic");
    return 0;
  }
  p->dims[p->n_dims].name = nm;
  p->dims[p->n_dims].max = max;
  return PTO__DIM_CODE(p->n_dims++);
}

int pto_program_num_dims(const pto_program *p) {
  return p ? p->n_dims : 0;
}
const char *pto_program_dim_name(const pto_program *p, int i) {
  return p && i >= 0 && i < p->n_dims ? p->dims[i].name : "";
}
int64_t pto_program_dim_max(const pto_program *p, int i) {
  return p && i >= 0 && i < p->n_dims ? p->dims[i].max : -1;
}
int pto_program_find_dim(const pto_program *p, const char *name) {
  for (int i = 0; p && name && i < p->n_dims; i++)
    if (!strcmp(p->dims[i].name, name))
      return i;
  return -1;
}

int pto__dim_join(pto_program *p, const char *op, pto_dref a, pto_dref b,
                  int64_t extent, pto_dref *out) {
  *out = a.dim >= 0 ? a : b;
  if (a.dim < 0 && b.dim < 0)
    return 1;
  if (a.dim >= 0 && a.dim == b.dim) {
    if (a.off == b.off && a.mul == b.mul)
      return 1;
    pto__fail(p, op, PTO_ENOTSUP,
              "two axes of dynamic dim '%s' from offsets %" PRId64
              " and %" PRId64 " are matched: their valid lengths differ",
              p->dims[a.dim].name, a.off, b.off);
    return 0;
  }
  /* a dynamic dim against a static extent (its maximum: the ops checked
   * the maxima) or another dim: equal extents, checked at bind time */
  if (pto__grow((void **)&p->eqs, sizeof *p->eqs, &p->cap_eqs,
                p->n_eqs + 1)) {
    fail_nomem(p, op);
    return 0;
  }
  pto_dim_eq *q = &p->eqs[p->n_eqs++];
  q->a = a.dim >= 0 ? a : b;
  q->b = a.dim >= 0 ? b : a;
  q->len = extent;
  q->op = op;
  q->label = p->n_labels ? p->labels[p->n_labels - 1] : "";
  return 1;
}

/* ---- scopes ------------------------------------------------------------- */

pto_status pto_program_push_tile(pto_program *p, const pto_tile_shape *shape) {
  if (!p)
    return PTO_EINVAL;
  if (p->n_tiles == PTO_SCOPE_MAX) {
    pto__fail(p, "push_tile", PTO_ESTATE, "more than %d nested tile scopes",
              PTO_SCOPE_MAX - 1);
    return PTO_ESTATE;
  }
  p->tiles[p->n_tiles] = shape ? *shape : p->tiles[p->n_tiles - 1];
  p->tile_set[p->n_tiles] = shape ? PTO_TILE_SET_VEC | PTO_TILE_SET_CUBE
                                  : p->tile_set[p->n_tiles - 1];
  p->knob_set[p->n_tiles] = p->knob_set[p->n_tiles - 1];
  memcpy(p->knobs[p->n_tiles], p->knobs[p->n_tiles - 1], sizeof p->knobs[0]);
  p->n_tiles++;
  return PTO_OK;
}

pto_status pto_program_set_knob(pto_program *p, pto_knob k, int64_t value) {
  if (!p)
    return PTO_EINVAL;
  char msg[160];
  pto_status st = pto__knob_check(k, value, msg, sizeof msg);
  if (st) {
    pto__fail(p, "set_knob", st, "%s", msg);
    return st;
  }
  if (k == PTO_KNOB_POLICY) {
    pto__fail(p, "set_knob", PTO_ECONFIG,
              "policy is not an op's: one run has one scheduling policy "
              "(pto_runtime_params.policy, or the config's knobs.policy)");
    return PTO_ECONFIG;
  }
  p->knob_set[p->n_tiles - 1] |= UINT32_C(1) << k;
  p->knobs[p->n_tiles - 1][k] = value;
  return PTO_OK;
}

pto_status pto_program_pop_tile(pto_program *p) {
  if (!p)
    return PTO_EINVAL;
  if (p->n_tiles == 1) {
    pto__fail(p, "pop_tile", PTO_ESTATE, "no tile scope to pop");
    return PTO_ESTATE;
  }
  if (p->n_scopes && p->scopes[p->n_scopes - 1].tiles == p->n_tiles) {
    pto__fail(p, "pop_tile", PTO_ESTATE,
              "the innermost tile scope was pushed by push_scope: "
              "pop_scope pops it");
    return PTO_ESTATE;
  }
  p->n_tiles--;
  return PTO_OK;
}

pto_status pto_program_set_vec_tile(pto_program *p, uint32_t rows,
                                    uint32_t cols) {
  if (!p)
    return PTO_EINVAL;
  p->tiles[p->n_tiles - 1].vec_rows = rows;
  p->tiles[p->n_tiles - 1].vec_cols = cols;
  p->tile_set[p->n_tiles - 1] |= PTO_TILE_SET_VEC;
  return PTO_OK;
}

pto_status pto_program_set_cube_tile(pto_program *p, uint32_t m, uint32_t n,
                                     uint32_t k) {
  if (!p)
    return PTO_EINVAL;
  pto_tile_shape *t = &p->tiles[p->n_tiles - 1];
  t->cube_m = m;
  t->cube_n = n;
  t->cube_k = k;
  p->tile_set[p->n_tiles - 1] |= PTO_TILE_SET_CUBE;
  return PTO_OK;
}

/* The innermost scope's part `part` (PTO_TILE_SET_*) left to the
 * compiler: its values back to the program's defaults, its flag cleared. */
static pto_status auto_part(pto_program *p, const char *op, unsigned part) {
  if (!p)
    return PTO_EINVAL;
  if (p->n_tiles < 2) { /* the program's own scope is never set */
    pto__fail(p, op, PTO_ESTATE,
              "no tile scope is open (pto_program_push_tile first)");
    return PTO_ESTATE;
  }
  pto_tile_shape *t = &p->tiles[p->n_tiles - 1];
  const pto_tile_shape d = p->tiles[0];
  if (part & PTO_TILE_SET_CUBE) {
    t->cube_m = d.cube_m;
    t->cube_n = d.cube_n;
    t->cube_k = d.cube_k;
  }
  if (part & PTO_TILE_SET_VEC) {
    t->vec_rows = d.vec_rows;
    t->vec_cols = d.vec_cols;
  }
  p->tile_set[p->n_tiles - 1] &= (uint8_t)~part;
  return PTO_OK;
}

pto_status pto_program_auto_cube_tile(pto_program *p) {
  return auto_part(p, "auto_cube_tile", PTO_TILE_SET_CUBE);
}

pto_status pto_program_auto_vec_tile(pto_program *p) {
  return auto_part(p, "auto_vec_tile", PTO_TILE_SET_VEC);
}

pto_tile_shape pto_program_tile(const pto_program *p) {
  return p ? p->tiles[p->n_tiles - 1] : pto_tile_shape_default();
}

pto_status pto_program_push_label(pto_program *p, const char *label) {
  if (!p)
    return PTO_EINVAL;
  if (!label || !label[0] || strlen(label) > 128) {
    pto__fail(p, "push_label", PTO_EINVAL,
              "a label must be 1 to 128 characters");
    return PTO_EINVAL;
  }
  if (p->n_labels == PTO_SCOPE_MAX) {
    pto__fail(p, "push_label", PTO_ESTATE, "more than %d nested labels",
              PTO_SCOPE_MAX);
    return PTO_ESTATE;
  }
  const char *outer = cur_label(p);
  size_t n = strlen(outer) + strlen(label) + 2;
  char *full = pto__arena_alloc(&p->arena, n, 1);
  if (!full) {
    fail_nomem(p, "push_label");
    return PTO_ENOMEM;
  }
  snprintf(full, n, "%s%s%s", outer, outer[0] ? "." : "", label);
  p->labels[p->n_labels++] = full;
  return PTO_OK;
}

pto_status pto_program_pop_label(pto_program *p) {
  if (!p)
    return PTO_EINVAL;
  if (p->n_labels == 0) {
    pto__fail(p, "pop_label", PTO_ESTATE, "no label to pop");
    return PTO_ESTATE;
  }
  if (p->n_scopes && p->scopes[p->n_scopes - 1].labels == p->n_labels) {
    pto__fail(p, "pop_label", PTO_ESTATE,
              p->scopes[p->n_scopes - 1].has_label
                  ? "label '%s' was pushed by push_scope: pop_scope pops it"
                  : "label '%s' was pushed before the open scope "
                    "(push_scope): pop_scope first",
              cur_label(p));
    return PTO_ESTATE;
  }
  p->n_labels--;
  return PTO_OK;
}

pto_status pto_program_push_scope(pto_program *p, const char *label,
                                  const pto_tile_shape *tile) {
  if (!p)
    return PTO_EINVAL;
  if (label && (!label[0] || strlen(label) > 128)) {
    pto__fail(p, "push_scope", PTO_EINVAL,
              "a label must be 1 to 128 characters (or NULL: none)");
    return PTO_EINVAL;
  }
  if (p->n_scopes == PTO_SCOPE_MAX || p->n_tiles == PTO_SCOPE_MAX ||
      (label && p->n_labels == PTO_SCOPE_MAX)) {
    pto__fail(p, "push_scope", PTO_ESTATE,
              "more than %d nested scopes, labels or tile scopes",
              PTO_SCOPE_MAX - 1);
    return PTO_ESTATE;
  }
  /* the label first: it is the part that can fail on its own, and its
   * failure must leave no tile scope behind */
  pto_status st = label ? pto_program_push_label(p, label) : PTO_OK;
  if (st == PTO_OK && (st = pto_program_push_tile(p, tile)) != PTO_OK &&
      label)
    p->n_labels--;
  if (st != PTO_OK)
    return st;
  p->scopes[p->n_scopes].labels = (int8_t)p->n_labels;
  p->scopes[p->n_scopes].tiles = (int8_t)p->n_tiles;
  p->scopes[p->n_scopes].has_label = label != NULL;
  p->n_scopes++;
  return PTO_OK;
}

pto_status pto_program_pop_scope(pto_program *p) {
  if (!p)
    return PTO_EINVAL;
  if (p->n_scopes == 0) {
    pto__fail(p, "pop_scope", PTO_ESTATE, "no scope to pop (push_scope)");
    return PTO_ESTATE;
  }
  const int k = p->n_scopes - 1;
  if (p->n_labels != p->scopes[k].labels || p->n_tiles != p->scopes[k].tiles) {
    pto__fail(p, "pop_scope", PTO_ESTATE,
              "%d label(s) and %d tile scope(s) pushed inside the scope are "
              "still open: pop them first",
              p->n_labels - p->scopes[k].labels,
              p->n_tiles - p->scopes[k].tiles);
    return PTO_ESTATE;
  }
  p->n_scopes--;
  p->n_tiles--;
  if (p->scopes[k].has_label)
    p->n_labels--;
  return PTO_OK;
}

/* ---- inputs and outputs ------------------------------------------------- */

pto_tensor *pto_input(pto_program *p, const char *name, pto_dtype dt, int ndim,
                      const int64_t *shape) {
  if (!p)
    return NULL;
  if (!name || !name[0])
    return pto__fail(p, "input", PTO_EINVAL, "an input needs a name");
  if (pto_program_find_input(p, name) >= 0)
    return pto__fail(p, "input", PTO_EINVAL, "input '%s' is declared twice",
                     name);
  if (!pto__check_dtype(p, "input", dt) ||
      !pto__check_shape(p, "input", name, ndim, shape))
    return NULL;
  if (pto__grow((void **)&p->inputs, sizeof *p->inputs, &p->cap_inputs,
                p->n_inputs + 1))
    return fail_nomem(p, "input");
  pto_tensor *t = pto__new_root(p, "input", dt, ndim, shape, name);
  if (!t)
    return NULL;
  t->input_index = (int)p->n_inputs;
  p->inputs[p->n_inputs++] = t;
  return t;
}

pto_status pto_output(pto_program *p, pto_tensor *t, const char *name) {
  if (!p)
    return PTO_EINVAL;
  if (!pto__check_operands(p, "output", 1, &t))
    return p->err.status;
  if (!name || !name[0]) {
    pto__fail(p, "output", PTO_EINVAL, "output of %s needs a name", D(t));
    return PTO_EINVAL;
  }
  if (pto_program_find_output(p, name) >= 0) {
    pto__fail(p, "output", PTO_EINVAL, "output '%s' is declared twice", name);
    return PTO_EINVAL;
  }
  unsigned cap = p->cap_outputs;
  const char *nm = pto__arena_strdup(&p->arena, name);
  if (!nm ||
      pto__grow((void **)&p->outputs, sizeof *p->outputs, &p->cap_outputs,
                p->n_outputs + 1) ||
      pto__grow((void **)&p->output_names, sizeof *p->output_names, &cap,
                p->n_outputs + 1)) {
    fail_nomem(p, "output");
    return PTO_ENOMEM;
  }
  p->outputs[p->n_outputs] = t;
  p->output_names[p->n_outputs++] = nm;
  return PTO_OK;
}

int pto_program_num_inputs(const pto_program *p) {
  return p ? (int)p->n_inputs : 0;
}
int pto_program_num_outputs(const pto_program *p) {
  return p ? (int)p->n_outputs : 0;
}
pto_tensor *pto_program_input(const pto_program *p, int i) {
  return p && i >= 0 && (unsigned)i < p->n_inputs ? p->inputs[i] : NULL;
}
pto_tensor *pto_program_output(const pto_program *p, int i) {
  return p && i >= 0 && (unsigned)i < p->n_outputs ? p->outputs[i] : NULL;
}
int pto_program_find_input(const pto_program *p, const char *name) {
  for (unsigned i = 0; p && name && i < p->n_inputs; i++)
    if (strcmp(p->inputs[i]->name, name) == 0)
      return (int)i;
  return -1;
}
int pto_program_find_output(const pto_program *p, const char *name) {
  for (unsigned i = 0; p && name && i < p->n_outputs; i++)
    if (strcmp(p->output_names[i], name) == 0)
      return (int)i;
  return -1;
}
int pto_program_num_ops(const pto_program *p) {
  return p ? (int)p->n_nodes : 0;
}

const char *pto_tensor_name(const pto_tensor *t) {
  return t ? t->name : "";
}
pto_dtype pto_tensor_dtype(const pto_tensor *t) {
  return t ? t->dtype : PTO_DTYPE_COUNT;
}
int pto_tensor_ndim(const pto_tensor *t) {
  return t ? t->ndim : 0;
}
int64_t pto_tensor_dim(const pto_tensor *t, int axis) {
  if (!t)
    return -1;
  if (axis < 0)
    axis += t->ndim;
  return axis >= 0 && axis < t->ndim ? t->shape[axis] : -1;
}
int pto_tensor_dim_dynamic(const pto_tensor *t, int axis) {
  if (!t)
    return -1;
  if (axis < 0)
    axis += t->ndim;
  return axis >= 0 && axis < t->ndim ? t->dyn[axis] : -1;
}
int64_t pto_tensor_dim_code(const pto_tensor *t, int axis) {
  if (!t)
    return -1;
  if (axis < 0)
    axis += t->ndim;
  if (axis < 0 || axis >= t->ndim)
    return -1;
  /* the code only where the axis is the dim itself, not a slice or a
   * merge of it (its length is not the dim's maximum there) */
  return t->dyn[axis] >= 0 && !t->dyn_off[axis] && t->dyn_mul[axis] == 1 &&
                 t->shape[axis] == t->prog->dims[t->dyn[axis]].max
             ? PTO__DIM_CODE(t->dyn[axis])
             : t->shape[axis];
}
int64_t pto_tensor_numel(const pto_tensor *t) {
  if (!t)
    return 0;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= t->shape[i];
  return n;
}

/* ---- views -------------------------------------------------------------- */

static pto_tensor *new_view(pto_program *p, const char *op, pto_tensor *t) {
  pto_tensor *v = new_tensor(p, op);
  if (!v)
    return NULL;
  int id = (int)v->id;
  *v = *t;
  v->id = (uint32_t)id;
  v->input_index = -1;
  v->parent = t;
  char buf[160];
  snprintf(buf, sizeof buf, "%s.%s%d", t->name, op, id);
  v->name = pto__arena_strdup(&p->arena, buf);
  return v->name ? v : fail_nomem(p, op);
}

pto_tensor *pto_slice(pto_program *p, pto_tensor *t, const int64_t *begin,
                      const int64_t *end) {
  if (!p || !pto__check_operands(p, "slice", 1, &t))
    return NULL;
  if (!begin || !end)
    return pto__fail(p, "slice", PTO_EINVAL, "begin and end are required");
  for (int i = 0; i < t->ndim; i++)
    if (begin[i] < 0 || begin[i] >= end[i] || end[i] > t->shape[i])
      return pto__fail(p, "slice", PTO_ERANGE,
                       "axis %d of %s: [%" PRId64 ", %" PRId64
                       ") is not a non-empty range inside [0, %" PRId64 ")",
                       i, D(t), begin[i], end[i], t->shape[i]);
  pto_tensor *v = new_view(p, "slice", t);
  if (!v)
    return NULL;
  v->view = PTO_VIEW_SLICE;
  for (int i = 0; i < t->ndim; i++) {
    v->offset += begin[i] * t->stride[i];
    v->shape[i] = end[i] - begin[i];
    v->view_begin[i] = begin[i];
    /* a slice of a dynamic axis: valid as far as the dim reaches past
     * begin */
    if (t->dyn[i] >= 0)
      v->dyn_off[i] = t->dyn_off[i] + begin[i];
  }
  return v;
}

/* The dynamic axes of t reshaped to shape (maxima): each dynamic axis i of
 * t (valid as a prefix of its block, the elements from it inward) must find
 * an axis j of the new shape with as many elements outside it and in its
 * block, whose inner part divides the valid prefix's unit: then j is the
 * same dim with mul = mul_i * inner_i / inner_j (a merge of [S, H] into
 * [S*H] gives mul H; splitting it back, 1). Codes given in the new shape
 * (given_dyn) must agree with what is found. 1 with dyn/dmul set (dyn_off
 * 0), or 0 when some dim does not survive the reshape whole. */
static int reshape_dims(const pto_tensor *t, int ndim, const int64_t *shape,
                        const int8_t *given_dyn, int8_t *dyn, int64_t *dmul,
                        int64_t *doff) {
  for (int j = 0; j < PTO_MAX_DIMS; j++) {
    dyn[j] = -1;
    dmul[j] = 1;
    doff[j] = 0;
  }
  for (int i = 0; i < t->ndim; i++) {
    if (t->dyn[i] < 0)
      continue;
    int64_t in_i = 1, out_i = 1;
    for (int k = i + 1; k < t->ndim; k++)
      in_i *= t->shape[k];
    for (int k = 0; k < i; k++)
      out_i *= t->shape[k];
    /* the new axis that holds the dim: where the shape names it, else the
     * first that fits and is not a 1 (with a dim of at most 1, axes of 1
     * around it fit too: [1, n, H] to [1, n * H] keeps it beside H, not
     * on the batch axis), else the first that fits */
    int best = -1, rank = 0;
    int64_t best_mul = 1, best_off = 0;
    for (int j = 0; j < ndim && rank < 3; j++) {
      int64_t in = 1, out = 1;
      for (int k = j + 1; k < ndim; k++)
        in *= shape[k];
      for (int k = 0; k < j; k++)
        out *= shape[k];
      /* a valid prefix of (E * mul - off) * in_i elements: in units of
       * the new axis, E * mul * in_i / in - off * in_i / in */
      const int64_t unit = t->dyn_mul[i] * in_i, shift = t->dyn_off[i] * in_i;
      if (out != out_i || shape[j] * in != t->shape[i] * in_i || unit % in ||
          shift % in || dyn[j] >= 0)
        continue;
      /* the inner axes the new one takes in with the dim: static only */
      int64_t inner = 1, merged_dyn = 0;
      for (int k = i + 1; k < t->ndim && inner * in < in_i; k++) {
        inner *= t->shape[k];
        merged_dyn |= t->dyn[k] >= 0;
      }
      if (merged_dyn)
        continue;
      const int r = given_dyn[j] == t->dyn[i] ? 3 : shape[j] != 1 ? 2 : 1;
      if (r > rank) {
        best = j, rank = r;
        best_mul = unit / in, best_off = shift / in;
      }
    }
    if (best < 0)
      return 0;
    dyn[best] = t->dyn[i];
    dmul[best] = best_mul;
    doff[best] = best_off;
  }
  for (int j = 0; j < ndim; j++)
    if (given_dyn[j] >= 0 &&
        (given_dyn[j] != dyn[j] || dmul[j] != 1 || doff[j]))
      return 0;
  return 1;
}

pto_tensor *pto_reshape(pto_program *p, pto_tensor *t, int ndim,
                        const int64_t *shape_in) {
  if (!p || !pto__check_operands(p, "reshape", 1, &t) ||
      !pto__check_shape(p, "reshape", "new shape", ndim, shape_in))
    return NULL;
  int64_t shape[PTO_MAX_DIMS];
  int8_t dyn[PTO_MAX_DIMS];
  pto__resolve_shape(p, ndim, shape_in, shape, dyn);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    n *= shape[i];
  char sh[64];
  pto__shape_str(ndim, shape, sh, sizeof sh);
  if (n != pto_tensor_numel(t))
    return pto__fail(p, "reshape", PTO_ESHAPE,
                     "%s has %" PRId64 " elements, shape %s has %" PRId64, D(t),
                     pto_tensor_numel(t), sh, n);
  if (!pto__tensor_is_contiguous(t))
    return pto__fail(p, "reshape", PTO_ENOTSUP,
                     "%s is not contiguous (a transposed or sliced view); "
                     "reshape to %s needs a copy: apply an op first",
                     D(t), sh);
  int8_t vdyn[PTO_MAX_DIMS];
  int64_t vmul[PTO_MAX_DIMS], voff[PTO_MAX_DIMS];
  if (!reshape_dims(t, ndim, shape, dyn, vdyn, vmul, voff))
    return pto__fail(p, "reshape", PTO_ENOTSUP,
                     "%s to %s: a reshape keeps each dynamic dim whole: as "
                     "its own axis, or merged with the static axes inside "
                     "it ([S, H] to [S*H]), and never with an axis outside "
                     "it",
                     D(t), sh);
  pto_tensor *v = new_view(p, "reshape", t);
  if (!v)
    return NULL;
  v->view = PTO_VIEW_RESHAPE;
  v->ndim = ndim;
  memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
  memcpy(v->dyn, vdyn, sizeof v->dyn);
  memcpy(v->dyn_mul, vmul, sizeof v->dyn_mul);
  memcpy(v->dyn_off, voff, sizeof v->dyn_off);
  pto__dense_strides(ndim, shape, v->stride);
  return v;
}

pto_tensor *pto_transpose(pto_program *p, pto_tensor *t, int axis0, int axis1) {
  if (!p || !pto__check_operands(p, "transpose", 1, &t))
    return NULL;
  int a0 = axis0 < 0 ? axis0 + t->ndim : axis0;
  int a1 = axis1 < 0 ? axis1 + t->ndim : axis1;
  if (a0 < 0 || a0 >= t->ndim || a1 < 0 || a1 >= t->ndim)
    return pto__fail(p, "transpose", PTO_EINVAL,
                     "axes %d and %d are not both axes of %s", axis0, axis1,
                     D(t));
  pto_tensor *v = new_view(p, "transpose", t);
  if (!v)
    return NULL;
  v->view = PTO_VIEW_TRANSPOSE;
  v->view_axes[0] = (int8_t)a0;
  v->view_axes[1] = (int8_t)a1;
  v->shape[a0] = t->shape[a1];
  v->shape[a1] = t->shape[a0];
  v->stride[a0] = t->stride[a1];
  v->stride[a1] = t->stride[a0];
  v->dyn[a0] = t->dyn[a1];
  v->dyn[a1] = t->dyn[a0];
  v->dyn_off[a0] = t->dyn_off[a1];
  v->dyn_off[a1] = t->dyn_off[a0];
  v->dyn_mul[a0] = t->dyn_mul[a1];
  v->dyn_mul[a1] = t->dyn_mul[a0];
  return v;
}
