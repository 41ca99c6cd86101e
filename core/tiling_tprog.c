/* Tiling a tile program (pto/tileprog.h): each block becomes one unit of
 * its instructions, loops unrolled, every write of a declared tile a new
 * tile value (SSA, core/tilegraph.h), so the planner gives buffers and
 * levels as it does for the compiler's own units. */
#include <inttypes.h>
#include <stdlib.h>

#include "core/tiler.h"
#include "core/tprog.h"
#include "pto/tileop.h"

typedef struct lower {
  tiler *t;
  const pto_tprog_def *d;
  view4 views[PTO_NODE_MAX_IN + PTO_NODE_MAX_OUT];
  uint32_t *cur; /* per declared tile, its current value */
} lower;

static pto_gref gref_of(const lower *L, const pto_tp_inst *in,
                        const int64_t *vars) {
  const view4 *v = &L->views[in->arg];
  const pto_tp_span s = pto__tprog_span(L->d, in, vars, v->stride);
  pto_gref g;
  memset(&g, 0, sizeof g);
  g.storage = v->storage;
  g.dtype = v->dtype;
  g.offset = v->off + s.off;
  g.rows = s.rows;
  g.cols = s.cols;
  g.rs = s.rs;
  g.cs = s.cs;
  g.cr = g.cc = g.cb[0] = g.cb[1] = PTO_CLIP_NONE;
  return g;
}

static uint32_t new_tile_val(lower *L, int tile) {
  const pto_tp_tile *tt = &L->d->tiles[tile];
  return new_val(L->t, tt->dtype, tt->rows, tt->cols, tt->rows, tt->cols);
}

static int visit(void *ctx, uint32_t i, const int64_t *vars) {
  lower *L = ctx;
  tiler *t = L->t;
  const pto_tp_inst *in = &L->d->insts[i];
  if (in->kind == PTO_TPI_LOAD) {
    const uint32_t v = new_tile_val(L, in->dst[0]);
    pto_tinst *e = emit(t, PTO_OP_TLOAD);
    e->dst[0] = v;
    e->g = gref_of(L, in, vars);
    L->cur[in->dst[0]] = v;
    return t->failed;
  }
  if (in->kind == PTO_TPI_STORE) {
    pto_tinst *e = emit(t, PTO_OP_TSTORE);
    e->src[0] = L->cur[in->src[0]];
    e->g = gref_of(L, in, vars);
    return t->failed;
  }
  /* an instruction: its sources' current values, new destinations, and
   * the accumulator's previous value after its sources */
  uint32_t src[PTO_MAX_SRC], dst[2];
  for (int k = 0; k < in->n_src; k++)
    src[k] = L->cur[in->src[k]];
  const uint32_t acc = L->cur[in->dst[0]];
  for (int k = 0; k < in->n_dst; k++)
    dst[k] = new_tile_val(L, in->dst[k]);
  pto_tinst *e = emit(t, in->op);
  if (t->failed)
    return 1;
  /* the accumulator's value after the row's sources, before a flag's */
  const int acc_at = pto__facts_acc(pto__insn_facts(in->op), in->iflags)
                         ? pto__insn_info(in->op)->n_src
                         : -1;
  int k = 0;
  for (int s = 0; s <= in->n_src; s++) {
    if (s == acc_at)
      e->src[k++] = acc;
    if (s < in->n_src)
      e->src[k++] = src[s];
  }
  e->n_src = (uint8_t)k;
  e->flags = in->iflags;
  for (int d = 0; d < in->n_dst; d++) {
    e->dst[d] = dst[d];
    L->cur[in->dst[d]] = dst[d];
  }
  e->s = in->s;
  for (int i2 = 0; i2 < 2; i2++)
    e->imm[i2] = (int32_t)pto__tp_eval(&in->imm[i2], vars);
  return 0;
}

/* The declared footprint per level against the machine's. */
static pto_status check_footprint(tiler *t, const pto_node *n,
                                  const pto_tprog_def *d,
                                  const pto_machine *m) {
  if (!m)
    return PTO_OK;
  uint64_t need[PTO_MEM_LEVEL_COUNT] = {0};
  for (int i = 0; i < d->n_tiles; i++) {
    const pto_tp_tile *tt = &d->tiles[i];
    need[tt->level] +=
        (uint64_t)pto_tile_bytes(tt->dtype, tt->rows, tt->cols) *
        (uint64_t)tt->count;
  }
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    if (need[l] > m->mem[l])
      return pto__error_set(
          &t->tg->err, PTO_ECAPACITY,
          "tile program '%s'%s%s%s: its tiles need %" PRIu64
          " bytes of %s, the machine '%s' has %zu: use smaller tiles or "
          "fewer buffers",
          d->name, n->label[0] ? " (label '" : "", n->label,
          n->label[0] ? "')" : "", need[l],
          pto_mem_level_name((pto_mem_level)l), m->name, m->mem[l]);
  return PTO_OK;
}

pto_status pto__tile_tprog(tiler *t, const pto_node *n, const pto_tprog_def *d,
                           const pto_machine *m) {
  pto_status st = check_footprint(t, n, d, m);
  if (st)
    return st;
  lower L = {t, d, {{0}}, NULL};
  for (int a = 0; a < d->n_args; a++)
    L.views[a] = view_of(d->args[a].is_out ? n->out[d->args[a].index]
                                           : n->in[d->args[a].index]);
  L.cur = malloc(((size_t)d->n_tiles + 1) * sizeof *L.cur);
  if (!L.cur) {
    t->failed = 1;
    return PTO_OK;
  }
  const int64_t nb = pto__tprog_blocks(d);
  for (int64_t b = 0; b < nb && !t->failed; b++) {
    for (int i = 0; i < d->n_tiles; i++)
      L.cur[i] = PTO_NONE;
    unit_begin(t, n->id, d->core);
    if (pto__tprog_walk(d, b, visit, &L))
      t->failed = 1;
    unit_end(t);
  }
  free(L.cur);
  return PTO_OK;
}
