/* A tile program's walk, windows and copy (core/tprog.h). */
#include <string.h>

#include "core/tprog.h"

int64_t pto__tprog_blocks(const pto_tprog_def *d) {
  int64_t n = 1;
  for (int g = 0; g < d->ngrid; g++)
    n *= d->grid[g];
  return n;
}

/* Instructions [i, end) at depth `depth` (the next loop's var is
 * ngrid + depth). */
static int walk(const pto_tprog_def *d, uint32_t i, uint32_t end,
                int64_t *vars, pto_tp_visit_fn fn, void *ctx) {
  while (i < end) {
    const pto_tp_inst *in = &d->insts[i];
    if (in->kind == PTO_TPI_FOR) {
      const int64_t trip = pto__tp_eval(&in->trip, vars);
      for (int64_t it = 0; it < trip; it++) {
        vars[in->var] = it;
        int r = walk(d, i + 1, in->end, vars, fn, ctx);
        if (r)
          return r;
      }
      vars[in->var] = 0;
      i = in->end + 1;
      continue;
    }
    int r = fn(ctx, i, vars);
    if (r)
      return r;
    i++;
  }
  return 0;
}

int pto__tprog_walk(const pto_tprog_def *d, int64_t b, pto_tp_visit_fn fn,
                    void *ctx) {
  int64_t vars[PTO_TP_VARS] = {0};
  for (int g = d->ngrid - 1; g >= 0; g--) {
    vars[g] = b % d->grid[g];
    b /= d->grid[g];
  }
  return walk(d, 0, d->n_insts, vars, fn, ctx);
}

void pto__tprog_window(const pto_tprog_def *d, const pto_tp_inst *in,
                       const int64_t *vars, int64_t at[4], int64_t ext[4]) {
  const pto_tp_arg *a = &d->args[in->arg];
  const pto_tp_tile *t =
      &d->tiles[in->kind == PTO_TPI_LOAD ? in->dst[0] : in->src[0]];
  const int pad = 4 - a->ndim;
  for (int x = 0; x < 4; x++) {
    at[x] = x < pad ? 0 : pto__tp_eval(&in->at[x - pad], vars);
    ext[x] = 1;
  }
  const int trans = (in->flags & PTO_TP_TRANS) != 0;
  ext[trans ? 3 : 2] = t->rows;
  ext[trans ? 2 : 3] = t->cols;
}

pto_tp_span pto__tprog_span(const pto_tprog_def *d, const pto_tp_inst *in,
                            const int64_t *vars, const int64_t stride[4]) {
  int64_t at[4], ext[4];
  pto__tprog_window(d, in, vars, at, ext);
  pto_tp_span s = {0, 0, 0, 0, 0};
  for (int x = 0; x < 4; x++)
    s.off += at[x] * stride[x];
  const int trans = (in->flags & PTO_TP_TRANS) != 0;
  s.rows = trans ? ext[3] : ext[2];
  s.cols = trans ? ext[2] : ext[3];
  s.rs = trans ? stride[3] : stride[2];
  s.cs = trans ? stride[2] : stride[3];
  return s;
}

pto_tprog_def *pto__tprog_copy(pto_arena *a, const pto_tprog_def *d) {
  pto_tprog_def *c = pto__arena_alloc(a, sizeof *c, 8);
  if (!c)
    return NULL;
  *c = *d;
  c->name = pto__arena_strdup(a, d->name);
  c->args = pto__arena_alloc(a, (size_t)d->n_args * sizeof *c->args + 1, 8);
  c->tiles = pto__arena_alloc(a, (size_t)d->n_tiles * sizeof *c->tiles + 1, 8);
  c->insts = pto__arena_alloc(a, (size_t)d->n_insts * sizeof *c->insts + 1, 8);
  if (!c->name || !c->args || !c->tiles || !c->insts)
    return NULL;
  memcpy(c->args, d->args, (size_t)d->n_args * sizeof *c->args);
  memcpy(c->tiles, d->tiles, (size_t)d->n_tiles * sizeof *c->tiles);
  memcpy(c->insts, d->insts, (size_t)d->n_insts * sizeof *c->insts);
  for (int i = 0; i < d->n_args; i++)
    if (!(c->args[i].name = pto__arena_strdup(a, d->args[i].name)))
      return NULL;
  for (int i = 0; i < d->n_tiles; i++)
    if (!(c->tiles[i].name = pto__arena_strdup(a, d->tiles[i].name)))
      return NULL;
  return c;
}
