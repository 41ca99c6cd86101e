/* A frozen copy of a program's tensor graph, for the executable compiled
 * from it: the executable keeps what its dumps, traces and task labels
 * read, so the program may be freed, or grow, while it lives. */
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

pto_program *pto__program_snapshot(const pto_program *p) {
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
    t->root = s->tensors[p->tensors[i]->root->id];
    t->producer = p->tensors[i]->producer
                      ? s->nodes[p->tensors[i]->producer->id]
                      : NULL;
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
