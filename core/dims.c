/* Binding dynamic dims: the checks every binding passes (each extent in
 * [1, its maximum], the equalities the ops recorded), and the reference
 * evaluator at a binding: the program bound to the extents
 * (pto__program_bind), run on the valid regions of buffers laid out for
 * the maxima. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dims.h"

pto_status pto__dims_check(const pto_program *p, const int64_t *ext,
                           pto_error *err) {
  for (int i = 0; i < p->n_dims; i++)
    if (ext[i] < 0 || ext[i] > p->dims[i].max)
      return pto__error_set(err, PTO_ERANGE,
                            "dim '%s' is bound to %" PRId64
                            "; it takes 0 to its maximum %" PRId64,
                            p->dims[i].name, ext[i], p->dims[i].max);
  for (unsigned k = 0; k < p->n_eqs; k++) {
    const pto_dim_eq *q = &p->eqs[k];
    const int64_t la = pto__dref_len(q->a, q->len, ext),
                  lb = pto__dref_len(q->b, q->len, ext);
    if (la == lb)
      continue;
    char side[2][96];
    const pto_dref *r[2] = {&q->a, &q->b};
    for (int i = 0; i < 2; i++) {
      if (r[i]->dim < 0)
        snprintf(side[i], sizeof side[i], "the static extent %" PRId64,
                 q->len);
      else if (r[i]->off)
        snprintf(side[i], sizeof side[i],
                 "dim '%s' = %" PRId64 " from %" PRId64 " (%" PRId64 ")",
                 p->dims[r[i]->dim].name, ext[r[i]->dim], r[i]->off,
                 i ? lb : la);
      else
        snprintf(side[i], sizeof side[i], "dim '%s' = %" PRId64,
                 p->dims[r[i]->dim].name, i ? lb : la);
    }
    return pto__error_set(err, PTO_ESHAPE,
                          "%s%s%s%s: %s must equal %s (the op matches the two "
                          "axes)",
                          q->op, q->label[0] ? " '" : "", q->label,
                          q->label[0] ? "'" : "", side[0], side[1]);
  }
  return PTO_OK;
}

/* Copies the region `shape` of a tensor between its layout at the maxima
 * (dense over max[]) and a dense one over shape[] (to_dense: max -> dense).
 * es: element size. */
static void copy_region(int nd, const int64_t *shape, const int64_t *max,
                        size_t es, const unsigned char *from,
                        unsigned char *to, int to_dense) {
  int64_t ms[PTO_MAX_DIMS], ds[PTO_MAX_DIMS], idx[PTO_MAX_DIMS] = {0};
  int64_t numel = 1;
  for (int d = nd - 1; d >= 0; d--) {
    ms[d] = d == nd - 1 ? 1 : ms[d + 1] * max[d + 1];
    ds[d] = d == nd - 1 ? 1 : ds[d + 1] * shape[d + 1];
    numel *= shape[d];
  }
  const int64_t row = shape[nd - 1];
  for (int64_t j = 0; j < numel; j += row) {
    int64_t mo = 0, dof = 0, r = j;
    for (int d = nd - 1; d >= 0; d--) {
      idx[d] = r % shape[d];
      r /= shape[d];
      mo += idx[d] * ms[d];
      dof += idx[d] * ds[d];
    }
    if (to_dense)
      memcpy(to + (size_t)dof * es, from + (size_t)mo * es, (size_t)row * es);
    else
      memcpy(to + (size_t)mo * es, from + (size_t)dof * es, (size_t)row * es);
  }
}

static size_t bytes_of(const pto_tensor *t) {
  return (size_t)pto_tensor_numel(t) * pto_dtype_size(t->dtype);
}

pto_status pto_program_eval_dims(pto_program *p, const int64_t *dims,
                                 const void *const *inputs,
                                 void *const *outputs) {
  if (!p)
    return PTO_EINVAL;
  if (!p->n_dims || p->err.status != PTO_OK)
    return pto_program_eval(p, inputs, outputs);
  pto__error_clear(&p->run_err);
  if (!dims)
    return pto__error_set(&p->run_err, PTO_EINVAL,
                          "eval: dims is NULL; program '%s' has %d dynamic "
                          "dims",
                          p->name, p->n_dims);
  if ((!inputs && p->n_inputs) || (!outputs && p->n_outputs))
    return pto__error_set(&p->run_err, PTO_EINVAL,
                          "eval: inputs and outputs arrays are required");
  pto_status st = pto__dims_check(p, dims, &p->run_err);
  if (st)
    return st;
  pto_program *q = pto__program_bind(p, dims);
  void **in = calloc(p->n_inputs + 1, sizeof *in),
       **out = calloc(p->n_outputs + 1, sizeof *out);
  st = PTO_ENOMEM;
  if (!q || !in || !out)
    goto done;
  for (uint32_t i = 0; i < p->n_inputs; i++) {
    const pto_tensor *a = p->inputs[i], *b = q->inputs[i];
    if (!inputs[i]) {
      st = pto__error_set(&p->run_err, PTO_EINVAL,
                          "inputs[%u] (input '%s') is NULL", i, a->name);
      goto done;
    }
    if (!(in[i] = malloc(bytes_of(b) + 1)))
      goto done;
    copy_region(a->ndim, b->shape, a->shape, pto_dtype_size(a->dtype),
                inputs[i], in[i], 1);
  }
  for (uint32_t i = 0; i < p->n_outputs; i++) {
    if (!outputs[i]) {
      st = pto__error_set(&p->run_err, PTO_EINVAL,
                          "outputs[%u] (output '%s') is NULL", i,
                          p->output_names[i]);
      goto done;
    }
    if (!(out[i] = malloc(bytes_of(q->outputs[i]) + 1)))
      goto done;
  }
  st = pto_program_eval(q, (const void *const *)in, out);
  if (st) {
    p->run_err = q->run_err;
    goto done;
  }
  for (uint32_t i = 0; i < p->n_outputs; i++) {
    const pto_tensor *a = p->outputs[i], *b = q->outputs[i];
    copy_region(a->ndim, b->shape, a->shape, pto_dtype_size(a->dtype), out[i],
                outputs[i], 0);
  }
done:
  if (st == PTO_ENOMEM && p->run_err.status == PTO_OK)
    pto__error_set(&p->run_err, st, "eval: out of memory");
  for (uint32_t i = 0; in && i < p->n_inputs; i++)
    free(in[i]);
  for (uint32_t i = 0; out && i < p->n_outputs; i++)
    free(out[i]);
  free(in);
  free(out);
  pto_program_free(q);
  return st;
}
