/* The program builder: records tensor ops after checking every argument. A
 * failed check records a sticky error naming the op, its label, the tensors
 * and their sizes, and returns NULL. */
#include "core/config.h"
#include "core/program.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/custom.h"

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

pto_top_class pto__top_class(pto_top op) { return tops[op].cls; }

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

static void shape_str(int ndim, const int64_t *shape, char *buf, size_t size) {
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
 * then needs its inputs' storages. */
uint8_t *pto__live_nodes(const pto_program *p) {
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
    for (int k = 0; live[i] && k < n->n_in; k++)
      if (n->in[k])
        need[n->in[k]->root->id] = 1;
  }
  return live;
}

const char *pto__tensor_desc(const pto_tensor *t, char *buf, size_t size) {
  char sh[64];
  shape_str(t->ndim, t->shape, sh, sizeof sh);
  snprintf(buf, size, "'%s' %s%s", t->name, pto_dtype_name(t->dtype), sh);
  return buf;
}

/* Tensor descriptions for messages: D(t) expands to a temporary buffer. */
typedef struct {
  char s[128];
} desc_buf;
static desc_buf describe(const pto_tensor *t) {
  desc_buf b;
  pto__tensor_desc(t, b.s, sizeof b.s);
  return b;
}
#define D(t) (describe(t).s)

static const char *cur_label(const pto_program *p) {
  return p->n_labels ? p->labels[p->n_labels - 1] : "";
}

/* Records "<op>[ '<label>']: <message>" as the sticky error; returns NULL. */
__attribute__((format(printf, 4, 5))) static pto_tensor *
fail(pto_program *p, const char *op, pto_status st, const char *fmt, ...) {
  char msg[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *label = cur_label(p);
  if (label[0])
    pto__error_first(&p->err, st, "%s '%s': %s", op, label, msg);
  else
    pto__error_first(&p->err, st, "%s: %s", op, msg);
  return NULL;
}

pto_status pto_program_fail(pto_program *p, pto_status status,
                            const char *op, const char *fmt, ...) {
  if (!p || !op || !fmt)
    return pto__last_error(PTO_EINVAL, "pto_program_fail: %s is NULL",
                           !p ? "the program" : !op ? "op" : "fmt");
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
  fail(p, op, status, "%s", msg);
  return status;
}

const char *pto_tensor_describe(const pto_tensor *t, char *buf, size_t size) {
  if (!t || !buf || !size)
    return "";
  return pto__tensor_desc(t, buf, size);
}

static pto_tensor *fail_nomem(pto_program *p, const char *op) {
  return fail(p, op, PTO_ENOMEM, "out of memory");
}

/* Checks that each operand is a live tensor of p. A NULL operand after an
 * earlier error just propagates it. */
static int check_operands(pto_program *p, const char *op, int n,
                          pto_tensor *const *ts) {
  for (int i = 0; i < n; i++) {
    const pto_tensor *t = ts[i];
    if (!t) {
      if (p->err.status == PTO_OK)
        fail(p, op, PTO_EINVAL, "operand %d is NULL", i);
      return 0;
    }
    if (t->id >= p->n_tensors || p->tensors[t->id] != t) {
      fail(p, op, PTO_EINVAL, "operand %d belongs to another program", i);
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

static int check_shape(pto_program *p, const char *op, const char *what,
                       int ndim, const int64_t *shape) {
  if (ndim < 1 || ndim > PTO_MAX_DIMS) {
    fail(p, op, PTO_EINVAL, "%s has %d dims; 1 to %d are supported", what,
         ndim, PTO_MAX_DIMS);
    return 0;
  }
  if (!shape) {
    fail(p, op, PTO_EINVAL, "%s: shape is NULL", what);
    return 0;
  }
  int i = bad_dim(ndim, shape);
  if (i >= 0) {
    char sh[64];
    shape_str(ndim, shape, sh, sizeof sh);
    fail(p, op, PTO_EINVAL,
         "%s shape %s: dim %d is %" PRId64
         " (dims must be >= 1 and numel < 2^40)",
         what, sh, i, shape[i]);
    return 0;
  }
  return 1;
}

static int check_dtype(pto_program *p, const char *op, pto_dtype dt) {
  if ((unsigned)dt >= PTO_DTYPE_COUNT) {
    fail(p, op, PTO_EDTYPE, "dtype %d is not a pto_dtype", (int)dt);
    return 0;
  }
  return 1;
}

static int is_float(pto_dtype dt) { return dt != PTO_I32; }

/* bf16 and f16 are storage types: computed on as f32. */
static pto_dtype compute_dtype(pto_dtype dt) {
  return dt == PTO_I32 ? PTO_I32 : PTO_F32;
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
  p->tensors[p->n_tensors++] = t;
  return t;
}

static pto_tensor *new_root(pto_program *p, const char *op, pto_dtype dt,
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
  memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
  pto__dense_strides(ndim, shape, t->stride);
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
  shape_str(ndim, shape, sh, sizeof sh);
  size_t n = 0;
  ops[0] = '\0';
  for (int i = 0; i < n_in && n < sizeof ops; i++)
    n += (size_t)snprintf(ops + n, sizeof ops - n, "%s%s",
                          i ? (i + 1 == n_in ? " and " : ", ") : " of ",
                          D(in[i]));
  fail(p, op, PTO_ESHAPE,
       "the result%s would be %s: dim %d is %" PRId64
       " (dims must be >= 1 and numel < 2^40)",
       ops, sh, bad, shape[bad]);
  return 0;
}

/* A node with n_in inputs producing one new tensor of dt/shape. */
static pto_node *new_node(pto_program *p, pto_top op, int n_in,
                          pto_tensor *const *in, pto_dtype dt, int ndim,
                          const int64_t *shape) {
  const char *name = pto__top_name(op);
  if (!check_result_shape(p, name, n_in, in, ndim, shape))
    return NULL;
  if (pto__grow((void **)&p->nodes, sizeof *p->nodes, &p->cap_nodes,
                p->n_nodes + 1)) {
    fail_nomem(p, name);
    return NULL;
  }
  pto_node *n = pto__arena_alloc(&p->arena, sizeof *n, 8);
  pto_tensor *out = n ? new_root(p, name, dt, ndim, shape, NULL) : NULL;
  if (!out) {
    if (!n)
      fail_nomem(p, name);
    return NULL;
  }
  n->id = p->n_nodes;
  n->op = op;
  n->n_in = n_in;
  for (int i = 0; i < n_in; i++)
    n->in[i] = in[i];
  n->n_out = 1;
  n->out[0] = out;
  n->label = cur_label(p);
  n->tile = p->tiles[p->n_tiles - 1];
  n->knob_set = p->knob_set[p->n_tiles - 1];
  memcpy(n->knob, p->knobs[p->n_tiles - 1], sizeof n->knob);
  out->producer = n;
  p->nodes[p->n_nodes++] = n;
  return n;
}

static pto_tensor *node_out(pto_node *n) { return n ? n->out[0] : NULL; }

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
  pto__arena_free(&p->arena);
  free(p);
}

const char *pto_program_name(const pto_program *p) { return p ? p->name : ""; }

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

/* ---- scopes ------------------------------------------------------------- */

pto_status pto_program_push_tile(pto_program *p, const pto_tile_shape *shape) {
  if (!p)
    return PTO_EINVAL;
  if (p->n_tiles == PTO_SCOPE_MAX) {
    fail(p, "push_tile", PTO_ESTATE, "more than %d nested tile scopes",
         PTO_SCOPE_MAX - 1);
    return PTO_ESTATE;
  }
  p->tiles[p->n_tiles] = shape ? *shape : p->tiles[p->n_tiles - 1];
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
    fail(p, "set_knob", st, "%s", msg);
    return st;
  }
  if (k == PTO_KNOB_POLICY) {
    fail(p, "set_knob", PTO_ECONFIG,
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
    fail(p, "pop_tile", PTO_ESTATE, "no tile scope to pop");
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
  return PTO_OK;
}

pto_tile_shape pto_program_tile(const pto_program *p) {
  return p ? p->tiles[p->n_tiles - 1] : pto_tile_shape_default();
}

pto_status pto_program_push_label(pto_program *p, const char *label) {
  if (!p)
    return PTO_EINVAL;
  if (!label || !label[0] || strlen(label) > 128) {
    fail(p, "push_label", PTO_EINVAL, "a label must be 1 to 128 characters");
    return PTO_EINVAL;
  }
  if (p->n_labels == PTO_SCOPE_MAX) {
    fail(p, "push_label", PTO_ESTATE, "more than %d nested labels",
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
    fail(p, "pop_label", PTO_ESTATE, "no label to pop");
    return PTO_ESTATE;
  }
  p->n_labels--;
  return PTO_OK;
}

/* ---- inputs and outputs ------------------------------------------------- */

pto_tensor *pto_input(pto_program *p, const char *name, pto_dtype dt,
                      int ndim, const int64_t *shape) {
  if (!p)
    return NULL;
  if (!name || !name[0])
    return fail(p, "input", PTO_EINVAL, "an input needs a name");
  if (pto_program_find_input(p, name) >= 0)
    return fail(p, "input", PTO_EINVAL, "input '%s' is declared twice", name);
  if (!check_dtype(p, "input", dt) || !check_shape(p, "input", name, ndim, shape))
    return NULL;
  if (pto__grow((void **)&p->inputs, sizeof *p->inputs, &p->cap_inputs,
                p->n_inputs + 1))
    return fail_nomem(p, "input");
  pto_tensor *t = new_root(p, "input", dt, ndim, shape, name);
  if (!t)
    return NULL;
  t->input_index = (int)p->n_inputs;
  p->inputs[p->n_inputs++] = t;
  return t;
}

pto_status pto_output(pto_program *p, pto_tensor *t, const char *name) {
  if (!p)
    return PTO_EINVAL;
  if (!check_operands(p, "output", 1, &t))
    return p->err.status;
  if (!name || !name[0]) {
    fail(p, "output", PTO_EINVAL, "output of %s needs a name", D(t));
    return PTO_EINVAL;
  }
  if (pto_program_find_output(p, name) >= 0) {
    fail(p, "output", PTO_EINVAL, "output '%s' is declared twice", name);
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

const char *pto_tensor_name(const pto_tensor *t) { return t ? t->name : ""; }
pto_dtype pto_tensor_dtype(const pto_tensor *t) {
  return t ? t->dtype : PTO_DTYPE_COUNT;
}
int pto_tensor_ndim(const pto_tensor *t) { return t ? t->ndim : 0; }
int64_t pto_tensor_dim(const pto_tensor *t, int axis) {
  if (!t)
    return -1;
  if (axis < 0)
    axis += t->ndim;
  return axis >= 0 && axis < t->ndim ? t->shape[axis] : -1;
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
  char buf[160];
  snprintf(buf, sizeof buf, "%s.%s%d", t->name, op, id);
  v->name = pto__arena_strdup(&p->arena, buf);
  return v->name ? v : fail_nomem(p, op);
}

pto_tensor *pto_slice(pto_program *p, pto_tensor *t, const int64_t *begin,
                      const int64_t *end) {
  if (!p || !check_operands(p, "slice", 1, &t))
    return NULL;
  if (!begin || !end)
    return fail(p, "slice", PTO_EINVAL, "begin and end are required");
  for (int i = 0; i < t->ndim; i++)
    if (begin[i] < 0 || begin[i] >= end[i] || end[i] > t->shape[i])
      return fail(p, "slice", PTO_ERANGE,
                  "axis %d of %s: [%" PRId64 ", %" PRId64
                  ") is not a non-empty range inside [0, %" PRId64 ")",
                  i, D(t), begin[i], end[i], t->shape[i]);
  pto_tensor *v = new_view(p, "slice", t);
  if (!v)
    return NULL;
  for (int i = 0; i < t->ndim; i++) {
    v->offset += begin[i] * t->stride[i];
    v->shape[i] = end[i] - begin[i];
  }
  return v;
}

pto_tensor *pto_reshape(pto_program *p, pto_tensor *t, int ndim,
                        const int64_t *shape) {
  if (!p || !check_operands(p, "reshape", 1, &t) ||
      !check_shape(p, "reshape", "new shape", ndim, shape))
    return NULL;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    n *= shape[i];
  char sh[64];
  shape_str(ndim, shape, sh, sizeof sh);
  if (n != pto_tensor_numel(t))
    return fail(p, "reshape", PTO_ESHAPE,
                "%s has %" PRId64 " elements, shape %s has %" PRId64, D(t),
                pto_tensor_numel(t), sh, n);
  if (!pto__tensor_is_contiguous(t))
    return fail(p, "reshape", PTO_ENOTSUP,
                "%s is not contiguous (a transposed or sliced view); "
                "reshape to %s needs a copy: apply an op first",
                D(t), sh);
  pto_tensor *v = new_view(p, "reshape", t);
  if (!v)
    return NULL;
  v->ndim = ndim;
  memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
  pto__dense_strides(ndim, shape, v->stride);
  return v;
}

pto_tensor *pto_transpose(pto_program *p, pto_tensor *t, int axis0,
                          int axis1) {
  if (!p || !check_operands(p, "transpose", 1, &t))
    return NULL;
  int a0 = axis0 < 0 ? axis0 + t->ndim : axis0;
  int a1 = axis1 < 0 ? axis1 + t->ndim : axis1;
  if (a0 < 0 || a0 >= t->ndim || a1 < 0 || a1 >= t->ndim)
    return fail(p, "transpose", PTO_EINVAL,
                "axes %d and %d are not both axes of %s", axis0, axis1, D(t));
  pto_tensor *v = new_view(p, "transpose", t);
  if (!v)
    return NULL;
  v->shape[a0] = t->shape[a1];
  v->shape[a1] = t->shape[a0];
  v->stride[a0] = t->stride[a1];
  v->stride[a1] = t->stride[a0];
  return v;
}

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
        fail(p, op, PTO_ESHAPE,
             "%s and %s do not broadcast: axis %d is %" PRId64 " vs %" PRId64,
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
  if (!p || !check_operands(p, name, 2, in))
    return NULL;
  pto_dtype dt = compute_dtype(a->dtype);
  if (dt != compute_dtype(b->dtype))
    return fail(p, name, PTO_EDTYPE,
                "%s and %s: i32 and floating operands do not mix (cast one)",
                D(a), D(b));
  int nd;
  int64_t shape[PTO_MAX_DIMS];
  if (!broadcast(p, name, 2, in, &nd, shape))
    return NULL;
  return node_out(new_node(p, op, 2, in, dt, nd, shape));
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
  if (!p || !check_operands(p, name, 1, &a))
    return NULL;
  if (isnan(s) && a->dtype == PTO_I32)
    return fail(p, name, PTO_EINVAL, "NaN scalar for i32 tensor %s", D(a));
  if (a->dtype == PTO_I32 && (s < INT32_MIN || s > INT32_MAX))
    return fail(p, name, PTO_ERANGE, "scalar %g is outside i32 for %s", s,
                D(a));
  pto_node *n = new_node(p, op, 1, &a, compute_dtype(a->dtype), a->ndim,
                         a->shape);
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
  if (!p || !check_operands(p, name, 1, &a))
    return NULL;
  if (!int_ok && a->dtype == PTO_I32)
    return fail(p, name, PTO_EDTYPE, "%s is i32; %s needs a floating tensor",
                D(a), name);
  return node_out(
      new_node(p, op, 1, &a, compute_dtype(a->dtype), a->ndim, a->shape));
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
  if (!p || !check_operands(p, "cast", 1, &a) || !check_dtype(p, "cast", dt))
    return NULL;
  return node_out(new_node(p, PTO_TOP_CAST, 1, &a, dt, a->ndim, a->shape));
}

pto_tensor *pto_cmp(pto_program *p, pto_tensor *a, pto_tensor *b,
                    pto_cmp_mode mode) {
  pto_tensor *in[2] = {a, b};
  if (!p || !check_operands(p, "cmp", 2, in))
    return NULL;
  if ((unsigned)mode >= PTO_CMP_MODE_COUNT)
    return fail(p, "cmp", PTO_EINVAL, "mode %d is not a pto_cmp_mode",
                (int)mode);
  if (compute_dtype(a->dtype) != compute_dtype(b->dtype))
    return fail(p, "cmp", PTO_EDTYPE,
                "%s and %s: i32 and floating operands do not mix (cast one)",
                D(a), D(b));
  int nd;
  int64_t shape[PTO_MAX_DIMS];
  if (!broadcast(p, "cmp", 2, in, &nd, shape))
    return NULL;
  pto_node *n = new_node(p, PTO_TOP_CMP, 2, in, PTO_I32, nd, shape);
  if (n)
    n->ival = mode;
  return node_out(n);
}

pto_tensor *pto_select(pto_program *p, pto_tensor *mask, pto_tensor *a,
                       pto_tensor *b) {
  pto_tensor *in[3] = {mask, a, b};
  if (!p || !check_operands(p, "select", 3, in))
    return NULL;
  if (mask->dtype != PTO_I32)
    return fail(p, "select", PTO_EDTYPE, "mask %s must be i32 (from cmp)",
                D(mask));
  if (compute_dtype(a->dtype) != compute_dtype(b->dtype))
    return fail(p, "select", PTO_EDTYPE,
                "%s and %s: i32 and floating operands do not mix (cast one)",
                D(a), D(b));
  int nd;
  int64_t shape[PTO_MAX_DIMS];
  if (!broadcast(p, "select", 3, in, &nd, shape))
    return NULL;
  return node_out(
      new_node(p, PTO_TOP_SELECT, 3, in, compute_dtype(a->dtype), nd, shape));
}

/* ---- reductions --------------------------------------------------------- */

static pto_tensor *reduce(pto_program *p, pto_top op, pto_tensor *a, int col) {
  const char *name = pto__top_name(op);
  if (!p || !check_operands(p, name, 1, &a))
    return NULL;
  if (col && a->ndim < 2)
    return fail(p, name, PTO_ESHAPE,
                "%s has 1 dim; a column reduction needs at least 2", D(a));
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[a->ndim - 1 - col] = 1;
  return node_out(
      new_node(p, op, 1, &a, compute_dtype(a->dtype), a->ndim, shape));
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
    fail(p, op, PTO_EINVAL, "unknown flags 0x%x", flags & ~allowed);
    return -1;
  }
  const pto_tensor *in[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    if (!is_float(in[i]->dtype)) {
      fail(p, op, PTO_EDTYPE, "%s is i32; %s takes f32, bf16 or f16 operands",
           D(in[i]), op);
      return -1;
    }
    if (in[i]->ndim < 2) {
      fail(p, op, PTO_ESHAPE, "%s has 1 dim; %s operands need at least 2",
           D(in[i]), op);
      return -1;
    }
  }
  int ta = (flags & PTO_MATMUL_TRANS_A) != 0;
  int tb = (flags & PTO_MATMUL_TRANS_B) != 0;
  int64_t m = a->shape[a->ndim - 2 + ta], ka = a->shape[a->ndim - 1 - ta];
  int64_t kb = b->shape[b->ndim - 2 + tb], n = b->shape[b->ndim - 1 - tb];
  if (ka != kb) {
    fail(p, op, PTO_ESHAPE,
         "K of a %s%s is %" PRId64 ", K of b %s%s is %" PRId64, D(a),
         ta ? " (transposed)" : "", ka, D(b), tb ? " (transposed)" : "", kb);
    return -1;
  }
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int d = 0; d < nd - 2; d++) {
    int ia = a->ndim - nd + d, ib = b->ndim - nd + d;
    int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      fail(p, op, PTO_ESHAPE,
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

static pto_tensor *matmul(pto_program *p, pto_tensor *acc, pto_tensor *a,
                          pto_tensor *b, unsigned flags) {
  pto_tensor *in[3] = {a, b, acc};
  int n_in = acc ? 3 : 2;
  if (!p || !check_operands(p, "matmul", n_in, in))
    return NULL;
  int64_t shape[PTO_MAX_DIMS];
  int nd;
  if (matmul_shape(p, "matmul", a, b, flags,
                   PTO_MATMUL_TRANS_A | PTO_MATMUL_TRANS_B, shape, &nd))
    return NULL;
  if (acc) {
    int same = acc->ndim == nd && acc->dtype == PTO_F32;
    for (int d = 0; same && d < nd; d++)
      same = acc->shape[d] == shape[d];
    if (!same) {
      char sh[64];
      shape_str(nd, shape, sh, sizeof sh);
      return fail(p, "matmul", PTO_ESHAPE,
                  "accumulator %s must be f32%s, the shape of a x b", D(acc),
                  sh);
    }
  }
  pto_node *node = new_node(p, PTO_TOP_MATMUL, n_in, in, PTO_F32, nd, shape);
  if (node)
    node->flags = flags;
  return node_out(node);
}

pto_tensor *pto_matmul(pto_program *p, pto_tensor *a, pto_tensor *b,
                       unsigned flags) {
  return matmul(p, NULL, a, b, flags);
}

pto_tensor *pto_matmul_acc(pto_program *p, pto_tensor *acc, pto_tensor *a,
                           pto_tensor *b, unsigned flags) {
  if (p && !acc) {
    check_operands(p, "matmul", 1, &acc);
    return NULL;
  }
  return matmul(p, acc, a, b, flags);
}

pto_tensor *pto_matmul_relu_wsum(pto_program *p, pto_tensor *a,
                                 pto_tensor *b, pto_tensor *w, int64_t group,
                                 unsigned flags, int64_t diag) {
  static const char op[] = "matmul_relu_wsum";
  pto_tensor *in[3] = {a, b, w};
  if (!p || !check_operands(p, op, 3, in))
    return NULL;
  int64_t shape[PTO_MAX_DIMS];
  int nd;
  if (matmul_shape(p, op, a, b, flags,
                   PTO_MATMUL_TRANS_A | PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL,
                   shape, &nd))
    return NULL;
  const int64_t M = shape[nd - 2];
  if (group < 1 || M % group)
    return fail(p, op, PTO_ESHAPE,
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
    shape_str(nd, shape, sh, sizeof sh);
    return fail(p, op, PTO_ESHAPE,
                "weights %s must be f32%s (one per row of a x b; batch dims "
                "may broadcast)",
                D(w), sh);
  }
  if ((flags & PTO_MATMUL_CAUSAL) && (diag > (int64_t)1 << 52 ||
                                      diag < -((int64_t)1 << 52)))
    return fail(p, op, PTO_ERANGE, "diagonal %" PRId64 " is out of range",
                diag);
  shape[nd - 2] = M / group;
  pto_node *node = new_node(p, PTO_TOP_MATMUL_RELU_WSUM, 3, in, PTO_F32, nd,
                            shape);
  if (!node)
    return NULL;
  node->flags = flags;
  node->ival = group;
  node->scalar = (double)diag;
  return node_out(node);
}

pto_tensor *pto_sparse_attention(pto_program *p, pto_tensor *q, pto_tensor *kv,
                                 pto_tensor *idx, int64_t dv, double scale,
                                 pto_tensor **lse) {
  static const char op[] = "sparse_attention";
  if (lse)
    *lse = NULL;
  pto_tensor *in[3] = {q, kv, idx};
  if (!p || !check_operands(p, op, 3, in))
    return NULL;
  if (!lse)
    return fail(p, op, PTO_EINVAL, "lse must not be NULL");
  if (q->ndim != 4 || kv->ndim != 3 || idx->ndim != 3)
    return fail(p, op, PTO_ESHAPE,
                "q %s must be [B,S1,H,D], kv %s [B,S2,D] and indices %s "
                "[B,S1,T]",
                D(q), D(kv), D(idx));
  if (q->dtype != kv->dtype || (q->dtype != PTO_F32 && q->dtype != PTO_BF16))
    return fail(p, op, PTO_EDTYPE,
                "q %s and kv %s must both be f32 or both bf16", D(q), D(kv));
  if (idx->dtype != PTO_I32)
    return fail(p, op, PTO_EDTYPE, "indices %s must be i32", D(idx));
  const int64_t B = q->shape[0], S1 = q->shape[1], H = q->shape[2],
                Dq = q->shape[3];
  if (kv->shape[0] != B || kv->shape[2] != Dq)
    return fail(p, op, PTO_ESHAPE,
                "kv %s must be [B,S2,D] = [%" PRId64 ",S2,%" PRId64
                "] for q %s",
                D(kv), B, Dq, D(q));
  if (idx->shape[0] != B || idx->shape[1] != S1)
    return fail(p, op, PTO_ESHAPE,
                "indices %s must be [B,S1,T] = [%" PRId64 ",%" PRId64
                ",T] for q %s",
                D(idx), B, S1, D(q));
  if (dv < 1 || dv > Dq)
    return fail(p, op, PTO_ERANGE,
                "value dim %" PRId64 " is outside [1, %" PRId64 "] (q %s)", dv,
                Dq, D(q));
  if (!isfinite(scale))
    return fail(p, op, PTO_EINVAL, "scale %g is not finite", scale);
  if (kv->shape[1] > INT32_MAX)
    return fail(p, op, PTO_ERANGE, "kv %s has more rows than i32 indices reach",
                D(kv));
  const int64_t oshape[4] = {B, S1, H, dv};
  pto_node *node = new_node(p, PTO_TOP_SPARSE_ATTENTION, 3, in, PTO_F32, 4,
                            oshape);
  if (!node)
    return NULL;
  pto_tensor *l = new_root(p, op, PTO_F32, 3, oshape, NULL);
  if (!l)
    return NULL;
  l->producer = node;
  node->out[1] = l;
  node->n_out = 2;
  node->ival = dv;
  node->scalar = scale;
  *lse = l;
  return node->out[0];
}

/* ---- composites and data movement --------------------------------------- */

pto_tensor *pto_softmax(pto_program *p, pto_tensor *a) {
  if (!p || !check_operands(p, "softmax", 1, &a))
    return NULL;
  if (!is_float(a->dtype))
    return fail(p, "softmax", PTO_EDTYPE,
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
  if (!p || !check_operands(p, op, 1, &a))
    return NULL;
  if (!indices)
    return fail(p, op, PTO_EINVAL, "indices must not be NULL");
  if (a->dtype == PTO_I32)
    return fail(p, op, PTO_EDTYPE,
                "%s is i32; %s sorts floating values (cast to f32 first)",
                D(a), op);
  int64_t n = a->shape[a->ndim - 1];
  if (n > INT32_MAX)
    return fail(p, op, PTO_ESHAPE,
                "%s has %" PRId64 " entries per row; i32 indices reach %d",
                D(a), n, INT32_MAX);
  if (!masked && (k < 1 || k > n))
    return fail(p, op, PTO_ERANGE,
                "k = %" PRId64 " is outside [1, %" PRId64 "] for %s", k, n,
                D(a));
  if (masked && (k < 1 || k > INT32_MAX))
    return fail(p, op, PTO_ERANGE,
                "k = %" PRId64 " is outside [1, %d] for %s (k may exceed the "
                "last dim %" PRId64 ": the rest is padding)",
                k, INT32_MAX, D(a), n);
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[a->ndim - 1] = k;
  if (!check_shape(p, op, "result", a->ndim, shape))
    return NULL;
  pto_node *node = new_node(p, PTO_TOP_TOPK, 1, &a, compute_dtype(a->dtype),
                            a->ndim, shape);
  if (!node)
    return NULL;
  pto_tensor *idx = new_root(p, "topk", PTO_I32, a->ndim, shape, NULL);
  if (!idx)
    return NULL;
  idx->producer = node;
  node->out[1] = idx;
  node->n_out = 2;
  node->ival = k;
  node->flags = masked ? PTO_TOPK_MASKED : 0;
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

pto_tensor *pto_gather(pto_program *p, pto_tensor *table, pto_tensor *index,
                       unsigned flags) {
  pto_tensor *in[2] = {table, index};
  if (!p || !check_operands(p, "gather", 2, in))
    return NULL;
  if (flags & ~(unsigned)PTO_GATHER_STRICT)
    return fail(p, "gather", PTO_EINVAL, "unknown flags 0x%x", flags);
  if (table->ndim != 2)
    return fail(p, "gather", PTO_ESHAPE, "table %s must have 2 dims [N,D]",
                D(table));
  if (index->dtype != PTO_I32)
    return fail(p, "gather", PTO_EDTYPE, "index %s must be i32", D(index));
  if (index->ndim + 1 > PTO_MAX_DIMS)
    return fail(p, "gather", PTO_ESHAPE,
                "index %s has %d dims; the result would exceed %d", D(index),
                index->ndim, PTO_MAX_DIMS);
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, index->shape, (size_t)index->ndim * sizeof *shape);
  shape[index->ndim] = table->shape[1];
  pto_node *n = new_node(p, PTO_TOP_GATHER, 2, in, table->dtype,
                         index->ndim + 1, shape);
  if (n)
    n->flags = flags;
  return node_out(n);
}

pto_tensor *pto_concat(pto_program *p, int n, pto_tensor *const *ts,
                       int axis) {
  if (!p)
    return NULL;
  if (n < 1 || n > PTO_NODE_MAX_IN || !ts)
    return fail(p, "concat", PTO_EINVAL, "%d tensors; 1 to %d are supported",
                n, PTO_NODE_MAX_IN);
  if (!check_operands(p, "concat", n, ts))
    return NULL;
  const pto_tensor *a = ts[0];
  int ax = axis < 0 ? axis + a->ndim : axis;
  if (ax < 0 || ax >= a->ndim)
    return fail(p, "concat", PTO_EINVAL, "axis %d is not an axis of %s", axis,
                D(a));
  int64_t shape[PTO_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  for (int i = 1; i < n; i++) {
    const pto_tensor *t = ts[i];
    if (t->dtype != a->dtype)
      return fail(p, "concat", PTO_EDTYPE, "%s and %s differ in dtype", D(a),
                  D(t));
    int same = t->ndim == a->ndim;
    for (int d = 0; same && d < a->ndim; d++)
      same = d == ax || t->shape[d] == a->shape[d];
    if (!same)
      return fail(p, "concat", PTO_ESHAPE,
                  "%s and %s differ outside axis %d", D(a), D(t), ax);
    shape[ax] += t->shape[ax];
  }
  pto_node *node = new_node(p, PTO_TOP_CONCAT, n, ts, a->dtype, a->ndim,
                            shape);
  if (node)
    node->ival = ax;
  return node_out(node);
}

pto_tensor *pto_full(pto_program *p, pto_dtype dt, int ndim,
                     const int64_t *shape, double value) {
  if (!p || !check_dtype(p, "full", dt) ||
      !check_shape(p, "full", "full", ndim, shape))
    return NULL;
  if (dt == PTO_I32 && !(value >= INT32_MIN && value <= INT32_MAX))
    return fail(p, "full", PTO_ERANGE, "value %g is outside i32", value);
  pto_node *n = new_node(p, PTO_TOP_FULL, 0, NULL, dt, ndim, shape);
  if (n)
    n->scalar = dt == PTO_I32 ? nearbyint(value) : value;
  return node_out(n);
}

pto_tensor *pto_iota(pto_program *p, pto_dtype dt, int ndim,
                     const int64_t *shape, int64_t start) {
  if (!p || !check_dtype(p, "iota", dt) ||
      !check_shape(p, "iota", "iota", ndim, shape))
    return NULL;
  if (dt != PTO_I32 && dt != PTO_F32)
    return fail(p, "iota", PTO_EDTYPE, "iota makes i32 or f32, not %s",
                pto_dtype_name(dt));
  /* shape[] < 2^40 and start is checked first, so the sum cannot overflow */
  if (dt == PTO_I32 && (start < INT32_MIN || start > INT32_MAX ||
                        start + shape[ndim - 1] - 1 > INT32_MAX))
    return fail(p, "iota", PTO_ERANGE,
                "values from %" PRId64 " over %" PRId64
                " columns are outside i32",
                start, shape[ndim - 1]);
  if (dt == PTO_F32 && (start < -(INT64_C(1) << 53) ||
                        start > (INT64_C(1) << 53)))
    return fail(p, "iota", PTO_ERANGE,
                "start %" PRId64 " is not exact in f32 arithmetic", start);
  pto_node *n = new_node(p, PTO_TOP_IOTA, 0, NULL, dt, ndim, shape);
  if (n)
    n->ival = start;
  return node_out(n);
}

pto_tensor *pto_custom(pto_program *p, int id, int n,
                       pto_tensor *const *inputs) {
  if (!p)
    return NULL;
  const pto_custom_op *op = pto__custom_get(id);
  if (!op)
    return fail(p, "custom", PTO_ENOTFOUND,
                "no custom instruction is registered with id %d", id);
  if (n != op->desc.n_src || !inputs)
    return fail(p, op->name, PTO_EINVAL, "takes %d inputs, got %d",
                op->desc.n_src, n);
  if (!check_operands(p, op->name, n, inputs))
    return NULL;
  for (int i = 1; i < n; i++) {
    int same = inputs[i]->ndim == inputs[0]->ndim;
    for (int d = 0; same && d < inputs[0]->ndim; d++)
      same = inputs[i]->shape[d] == inputs[0]->shape[d];
    if (!same)
      return fail(p, op->name, PTO_ESHAPE, "%s and %s differ in shape",
                  D(inputs[0]), D(inputs[i]));
  }
  pto_node *node = new_node(p, PTO_TOP_CUSTOM, n, inputs, op->desc.out_dtype,
                            inputs[0]->ndim, inputs[0]->shape);
  if (node)
    node->ival = id;
  return node_out(node);
}
