/* Copies of a program's tensor graph: a frozen one for the executable
 * compiled from it (the executable keeps what its dumps, traces and task
 * labels read, so the program may be freed, or grow, while it lives), and
 * a static one at a binding's extents, for the evaluator to check a
 * dynamic program with. */
#include <stdlib.h>
#include <string.h>

#include "core/program.h"

/* Copies *src's array of n pointers into *dst (malloc'ed, as the builder's
 * growable arrays are), mapping each through map (NULL stays NULL). */
static int copy_tensors(pto_tensor ***dst, pto_tensor *const *src, uint32_t n,
                        pto_tensor *const *map) {
  *dst = malloc((n + 1) * sizeof **dst);
  if (!*dst)
    return -1;
  for (uint32_t i = 0; i < n; i++)
    (*dst)[i] = src[i] ? map[src[i]->id] : NULL;
  return 0;
}

/* t's shape, strides and offset at the extents ext, made again from its
 * (already bound) parent for a view, dense for a root. */
static void bind_tensor(pto_tensor *t, const int64_t *ext) {
  for (int d = 0; d < t->ndim; d++)
    if (t->dyn[d] >= 0) /* a slice of a dim starts dyn_off into it */
      t->shape[d] = pto__dref_len(
          (pto_dref){t->dyn[d], t->dyn_off[d], t->dyn_mul[d]}, t->shape[d],
          ext);
  const pto_tensor *q = t->parent;
  switch (q ? t->view : PTO_VIEW_NONE) {
  case PTO_VIEW_SLICE:
    t->offset = q->offset;
    for (int d = 0; d < t->ndim; d++) {
      t->offset += t->view_begin[d] * q->stride[d];
      t->stride[d] = q->stride[d];
    }
    break;
  case PTO_VIEW_RESHAPE:
    t->offset = q->offset;
    pto__dense_strides(t->ndim, t->shape, t->stride);
    break;
  case PTO_VIEW_TRANSPOSE:
    t->offset = q->offset;
    for (int d = 0; d < t->ndim; d++)
      t->stride[d] = q->stride[d];
    t->stride[t->view_axes[0]] = q->stride[t->view_axes[1]];
    t->stride[t->view_axes[1]] = q->stride[t->view_axes[0]];
    break;
  default:
    pto__dense_strides(t->ndim, t->shape, t->stride);
    break;
  }
  for (int d = 0; d < PTO_MAX_DIMS; d++) {
    t->dyn[d] = -1;
    t->dyn_off[d] = 0;
    t->dyn_mul[d] = 1;
  }
}

/* The copy; with ext, bound to those extents (no dims left). */
static pto_program *copy(const pto_program *p, const int64_t *ext) {
  pto_program *s = pto_program_new(p->name);
  if (!s)
    return NULL;
  pto_arena *a = &s->arena;
  s->err = p->err;
  s->tensors = malloc((p->n_tensors + 1) * sizeof *s->tensors);
  s->nodes = malloc((p->n_nodes + 1) * sizeof *s->nodes);
  if (!s->tensors || !s->nodes)
    goto fail;
  s->n_tensors = s->cap_tensors = p->n_tensors;
  s->n_nodes = s->cap_nodes = p->n_nodes;
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    pto_tensor *t = pto__arena_alloc(a, sizeof *t, 8);
    if (!t)
      goto fail;
    *t = *p->tensors[i];
    if (!(t->name = pto__arena_strdup(a, p->tensors[i]->name)))
      goto fail;
    s->tensors[i] = t;
  }
  for (uint32_t i = 0; i < p->n_nodes; i++) {
    const pto_node *o = p->nodes[i];
    pto_node *n = pto__arena_alloc(a, sizeof *n, 8);
    if (!n || pto__node_copy(a, n, o)) /* inputs and offsets of its own */
      goto fail;
    if (!(n->label = pto__arena_strdup(a, o->label)))
      goto fail;
    for (int k = 0; k < o->n_in; k++)
      n->in[k] = s->tensors[o->in[k]->id];
    for (int k = 0; k < o->n_out; k++)
      n->out[k] = s->tensors[o->out[k]->id];
    s->nodes[i] = n;
  }
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    pto_tensor *t = s->tensors[i];
    const pto_tensor *o = p->tensors[i];
    t->root = s->tensors[o->root->id];
    t->prog = s;
    t->parent = o->parent ? s->tensors[o->parent->id] : NULL;
    t->producer = o->producer ? s->nodes[o->producer->id] : NULL;
    if (ext) /* a view's parent has a lower id: it is bound first */
      bind_tensor(t, ext);
  }
  for (uint32_t i = 0; ext && i < p->n_nodes; i++) {
    pto_node *n = s->nodes[i]; /* scalars that move with the extents */
    for (int k = 0; k < 2; k++) {
      n->scalar = pto__sterm_apply(n->scalar, &n->st[k], ext);
      n->st[k].sign = 0;
    }
  }
  if (!ext) {
    for (int i = 0; i < p->n_dims; i++) {
      s->dims[i].max = p->dims[i].max;
      if (!(s->dims[i].name = pto__arena_strdup(a, p->dims[i].name)))
        goto fail;
    }
    s->n_dims = p->n_dims;
    if (p->n_eqs) {
      if (!(s->eqs = malloc(p->n_eqs * sizeof *s->eqs)))
        goto fail;
      for (unsigned i = 0; i < p->n_eqs; i++) {
        s->eqs[i] = p->eqs[i];
        if (!(s->eqs[i].label = pto__arena_strdup(a, p->eqs[i].label)))
          goto fail;
      }
      s->n_eqs = s->cap_eqs = p->n_eqs;
    }
  }
  if (copy_tensors(&s->inputs, p->inputs, p->n_inputs, s->tensors) ||
      copy_tensors(&s->outputs, p->outputs, p->n_outputs, s->tensors))
    goto fail;
  s->n_inputs = s->cap_inputs = p->n_inputs;
  s->n_outputs = s->cap_outputs = p->n_outputs;
  s->output_names = malloc((p->n_outputs + 1) * sizeof *s->output_names);
  if (!s->output_names)
    goto fail;
  for (uint32_t i = 0; i < p->n_outputs; i++)
    if (!(s->output_names[i] = pto__arena_strdup(a, p->output_names[i])))
      goto fail;
  return s;
fail:
  pto_program_free(s);
  return NULL;
}

pto_program *pto__program_snapshot(const pto_program *p) {
  return copy(p, NULL);
}

pto_program *pto__program_bind(const pto_program *p, const int64_t *ext) {
  return copy(p, ext);
}
