/* core/tiler.h (internal): what the tilers share (core/tiling.c, the
 * vector and data-movement ops and the driver; core/tiling_cube.c, the
 * cube's ops; core/tiling_topk.c, top-k; core/tiling_move.c, iota and
 * assemble): views of tensors as 4-D windows,
 * tile positions, and the emission of tile values, instructions, units and
 * scratch storages into a tile graph. */
#ifndef PTO_CORE_TILER_H
#define PTO_CORE_TILER_H

#include <stdint.h>
#include <string.h>

#include "core/tilegraph.h"

/* A tensor view right-aligned into 4 dims: [b0, b1, rows, cols]; padded
 * leading dims have extent 1. */
typedef struct view4 {
  uint32_t storage;
  pto_dtype dtype;
  int64_t off;
  int64_t shape[4], stride[4];
  int8_t dyn[4];     /* the dynamic dim of each axis, or -1 */
  int64_t dyn_off[4]; /* where each starts in its dim (a slice of it) */
  int64_t dyn_mul[4]; /* its elements per unit of the dim */
} view4;

static inline view4 view_of(const pto_tensor *t) {
  view4 v;
  v.storage = t->root->id;
  v.dtype = t->root->dtype;
  v.off = t->offset;
  int pad = 4 - t->ndim;
  for (int d = 0; d < 4; d++) {
    v.shape[d] = d < pad ? 1 : t->shape[d - pad];
    v.stride[d] = d < pad ? 0 : t->stride[d - pad];
    v.dyn[d] = d < pad ? -1 : t->dyn[d - pad];
    v.dyn_off[d] = d < pad ? 0 : t->dyn_off[d - pad];
    v.dyn_mul[d] = d < pad ? 1 : t->dyn_mul[d - pad];
  }
  return v;
}

/* v with its last two axes swapped: the transpose, read through strides. */
static inline view4 swap_last(view4 v) {
  int64_t x = v.shape[2];
  v.shape[2] = v.shape[3];
  v.shape[3] = x;
  x = v.stride[2];
  v.stride[2] = v.stride[3];
  v.stride[3] = x;
  const int8_t d = v.dyn[2];
  v.dyn[2] = v.dyn[3];
  v.dyn[3] = d;
  x = v.dyn_off[2];
  v.dyn_off[2] = v.dyn_off[3];
  v.dyn_off[3] = x;
  x = v.dyn_mul[2];
  v.dyn_mul[2] = v.dyn_mul[3];
  v.dyn_mul[3] = x;
  return v;
}

/* The clip of axis d of v for a tile starting at `at` along it (none on a
 * static axis): at in the dim, past where v's axis starts in it. */
static inline pto_clip axis_clip(const view4 *v, int d, int64_t at) {
  pto_clip c = PTO_CLIP_NONE;
  if (v->dyn[d] >= 0) { /* never a broadcast (core/program_dims.c) */
    c.d1 = (uint8_t)(v->dyn[d] + 1);
    c.off = v->dyn_off[d] + at;
    c.mul = v->dyn_mul[d];
  }
  return c;
}

/* A tile position in an output's 4-D space. */
typedef struct tpos {
  int64_t b[2], r0, c0, nr, nc;
} tpos;

/* The window of v matching pos, with broadcasting: an axis of extent 1 maps
 * every coordinate to 0 and every extent to 1. */
static inline pto_gref window(const view4 *v, const tpos *p) {
  pto_gref g;
  g.storage = v->storage;
  g.dtype = v->dtype;
  g.offset = v->off;
  for (int d = 0; d < 2; d++)
    g.offset += (v->shape[d] == 1 ? 0 : p->b[d]) * v->stride[d];
  int64_t r0 = v->shape[2] == 1 ? 0 : p->r0, c0 = v->shape[3] == 1 ? 0 : p->c0;
  g.offset += r0 * v->stride[2] + c0 * v->stride[3];
  g.rows = v->shape[2] == 1 ? 1 : p->nr;
  g.cols = v->shape[3] == 1 ? 1 : p->nc;
  g.rs = v->stride[2];
  g.cs = v->stride[3];
  g.cb[0] = axis_clip(v, 0, v->shape[0] == 1 ? 0 : p->b[0]);
  g.cb[1] = axis_clip(v, 1, v->shape[1] == 1 ? 0 : p->b[1]);
  g.cr = axis_clip(v, 2, r0);
  g.cc = axis_clip(v, 3, c0);
  return g;
}

static inline pto_dtype compute_dtype(pto_dtype dt) {
  return dt == PTO_I32 ? PTO_I32 : PTO_F32;
}

static inline uint32_t clamp_tile(uint32_t t, int64_t extent) {
  return t == 0 || t > extent ? (uint32_t)extent : t;
}

/* ---- emission ----------------------------------------------------------- */

typedef struct tiler {
  pto_tgraph *tg;
  const pto_program *p;
  int failed;
} tiler;

/* A new tile value of capacity rows x cols, valid vr x vc at the maxima
 * and clipped at run time by cr and cc (new_val: not at all). */
static inline uint32_t new_val_clipped(tiler *t, pto_dtype dt, uint32_t rows,
                                       uint32_t cols, int64_t vr, int64_t vc,
                                       pto_clip cr, pto_clip cc) {
  pto_tgraph *tg = t->tg;
  if (pto__grow((void **)&tg->vals, sizeof *tg->vals, &tg->cap_vals,
                tg->n_vals + 1)) {
    t->failed = 1;
    return 0;
  }
  pto_tval *v = &tg->vals[tg->n_vals];
  memset(v, 0, sizeof *v); /* padding too: values are compared bytewise */
  v->dtype = dt;
  v->rows = rows;
  v->cols = cols;
  v->vrows = (uint32_t)vr;
  v->vcols = (uint32_t)vc;
  v->cr = cr;
  v->cc = cc;
  return tg->n_vals++;
}

static inline uint32_t new_val(tiler *t, pto_dtype dt, uint32_t rows,
                               uint32_t cols, int64_t vr, int64_t vc) {
  return new_val_clipped(t, dt, rows, cols, vr, vc, PTO_CLIP_NONE,
                         PTO_CLIP_NONE);
}

static inline pto_tinst *emit(tiler *t, int op) {
  pto_tgraph *tg = t->tg;
  if (pto__grow((void **)&tg->insts, sizeof *tg->insts, &tg->cap_insts,
                tg->n_insts + 1)) {
    t->failed = 1;
    static pto_tinst sink;
    return &sink;
  }
  pto_tinst *in = &tg->insts[tg->n_insts++];
  memset(in, 0, sizeof *in);
  in->op = op;
  const pto_insn_info *info = pto__insn_info(op);
  in->n_src = info->n_src;
  in->n_dst = info->n_dst;
  return in;
}

static inline void unit_begin(tiler *t, uint32_t node, pto_core_type core) {
  pto_tgraph *tg = t->tg;
  if (pto__grow((void **)&tg->units, sizeof *tg->units, &tg->cap_units,
                tg->n_units + 1)) {
    t->failed = 1;
    return;
  }
  pto_unit *u = &tg->units[tg->n_units++];
  u->node = node;
  u->first = tg->n_insts;
  u->core = core;
}

static inline void unit_end(tiler *t) {
  if (!t->failed) {
    pto_unit *u = &t->tg->units[t->tg->n_units - 1];
    u->count = t->tg->n_insts - u->first;
  }
}

/* A new scratch storage of elems elements for node's units (core/
 * tilegraph.h): its storage id, or PTO_NONE when out of memory. */
static inline uint32_t scratch(tiler *t, pto_dtype dt, int64_t elems,
                               uint32_t node, const char *name) {
  pto_tgraph *tg = t->tg;
  if (pto__grow((void **)&tg->scratch, sizeof *tg->scratch, &tg->cap_scratch,
                tg->n_scratch + 1)) {
    t->failed = 1;
    return PTO_NONE;
  }
  pto_tscratch *x = &tg->scratch[tg->n_scratch++];
  x->dtype = dt;
  x->elems = elems;
  x->node = node;
  x->name = name;
  return tg->n_storages++;
}

/* TLOAD a window into a new tile of capacity rows x cols. */
static inline uint32_t load(tiler *t, const pto_gref *g, uint32_t rows,
                     uint32_t cols) {
  uint32_t v = new_val_clipped(t, compute_dtype(g->dtype), rows, cols,
                               g->rows, g->cols, g->cr, g->cc);
  pto_tinst *in = emit(t, PTO_OP_TLOAD);
  in->dst[0] = v;
  in->g = *g;
  return v;
}

static inline void store(tiler *t, uint32_t v, const pto_gref *g) {
  pto_tinst *in = emit(t, PTO_OP_TSTORE);
  in->src[0] = v;
  in->g = *g;
}

/* dst = op(srcs) with dst shaped like the tile value `like`. */
static inline uint32_t compute(tiler *t, int op, pto_dtype dt, uint32_t like, int n,
                        const uint32_t *src) {
  const pto_tval *l = &t->tg->vals[like];
  uint32_t v =
      new_val_clipped(t, dt, l->rows, l->cols, l->vrows, l->vcols, l->cr, l->cc);
  pto_tinst *in = emit(t, op);
  for (int i = 0; i < n; i++)
    in->src[i] = src[i];
  in->dst[0] = v;
  return v;
}

static inline uint32_t compute1(tiler *t, int op, pto_dtype dt, uint32_t a) {
  return compute(t, op, dt, a, 1, &a);
}

/* One step of an online softmax (TSOFTMAXONLINE) over a block of scores S
 * of `rows` rows and `slots` slots (vr x vc valid), the slots' indices I
 * valid in [0, limit), scaled by scale: P (rows x slots, packed by the
 * planner for the matmul that reads it, else in 1-row panels: row-major)
 * and the state (rows x 3: alpha, max, sum), continuing *state when it is
 * set; *state becomes the new one. *step: the instruction, for flags and
 * terms of the caller's (valid until the next emit). */
static inline uint32_t smonline_step(tiler *t, uint32_t S, uint32_t I,
                                     uint32_t rows, uint32_t slots, int64_t vr,
                                     int64_t vc, double scale, int32_t limit,
                                     uint32_t *state, pto_tinst **step) {
  const uint32_t P = new_val(t, PTO_F32, rows, slots, vr, vc),
                 st = new_val(t, PTO_F32, rows, 3, vr, 3);
  pto_tinst *in = emit(t, PTO_OP_TSOFTMAXONLINE);
  in->src[0] = S;
  in->src[1] = I;
  in->dst[0] = P;
  in->dst[1] = st;
  in->s = scale;
  in->imm[0] = 1;
  in->imm[1] = limit;
  if (*state != PTO_NONE) { /* continue the running max and sum */
    in->n_src = 3;
    in->src[2] = *state;
    in->flags |= PTO_TF_ACC;
  }
  *state = st;
  *step = in;
  return P;
}

/* The end of an online softmax (TSOFTMAXFINAL): the weighted sums O (rows x
 * cols, vr x vc valid) over the final state's sums, and the log-sum-exp
 * into *L (rows x 1). */
static inline uint32_t smonline_final(tiler *t, uint32_t O, uint32_t state,
                                      uint32_t rows, uint32_t cols, int64_t vr,
                                      int64_t vc, uint32_t *L) {
  const uint32_t Y = new_val(t, PTO_F32, rows, cols, vr, vc);
  *L = new_val(t, PTO_F32, rows, 1, vr, 1);
  pto_tinst *in = emit(t, PTO_OP_TSOFTMAXFINAL);
  in->src[0] = O;
  in->src[1] = state;
  in->dst[0] = Y;
  in->dst[1] = *L;
  return Y;
}

/* Visits every tile of a 4-D output space under tile rows x cols. */
#define FOR_TILES(shape, tr, tc, pos)                                          \
  for (int64_t b0_ = 0; b0_ < (shape)[0]; b0_++)                               \
    for (int64_t b1_ = 0; b1_ < (shape)[1]; b1_++)                             \
      for (int64_t r_ = 0; r_ < (shape)[2]; r_ += (tr))                        \
        for (int64_t c_ = 0; c_ < (shape)[3]; c_ += (tc))                      \
          for (tpos pos = {{b0_, b1_},                                         \
                           r_,                                                 \
                           c_,                                                 \
                           (shape)[2] - r_ < (tr) ? (shape)[2] - r_ : (tr),    \
                           (shape)[3] - c_ < (tc) ? (shape)[3] - c_ : (tc)},   \
                    *once_ = &pos;                                             \
               once_; once_ = NULL)

/* The cube's ops (core/tiling_cube.c): matmul, matmul_relu_wsum and
 * sparse_attention, each under its cube tile. */
void pto__tile_cube(tiler *t, const pto_node *n, const pto_tile_shape *ts);
void pto__tile_matmul(tiler *t, const pto_node *n, const pto_tile_shape *ts);

/* An attention chain ending at a matmul (core/tiling_flash.c): scores
 * q x k (k transposed when k_trans), scaled by scale > 0 and, when causal,
 * -inf where key j > query i + diag (diag >= 0: every row sees a key),
 * a row softmax, and its product by v (transposed when v_trans). scores is
 * the scores' matmul. pto__flash_match fills f and returns 1 when node n
 * ends such a chain of static f32 tensors, D and Dv <= FLASH_MAX_D; it
 * looks through pto_softmax and a division by the row sum, pto_muls and
 * pto_divs, pto_matmul_masked or PTO_MATMUL_CAUSAL, and selects of -inf
 * under compares of iotas along the rows and the columns.
 * pto__tile_flash tiles n so, under ts (cube_m query rows a unit, cube_k
 * keys a block: pto__flash_tile). */
#define FLASH_MAX_D 512
typedef struct pto_flash {
  const pto_tensor *q, *k, *v;
  int k_trans, v_trans, causal;
  double scale;
  int64_t diag;
  const pto_node *scores;
} pto_flash;
int pto__flash_match(const pto_node *n, pto_flash *f);
void pto__tile_flash(tiler *t, const pto_node *n, const pto_flash *f,
                     const pto_tile_shape *ts);

/* Top-k (core/tiling_topk.c): node n under tile shape ts. */
void pto__tile_topk(tiler *t, const pto_node *n, const pto_tile_shape *ts);

/* Iota along any axis, and an assemble chain (core/tiling_move.c), under
 * vector tile tr x tc; the assemble returns 0 or a status (PTO_ENOTSUP:
 * its blocks overlap in too many pieces). */
void pto__tile_iota(tiler *t, const pto_node *n, uint32_t tr, uint32_t tc);
pto_status pto__tile_assemble(tiler *t, const pto_node *n, uint32_t tr,
                              uint32_t tc);

struct pto_tprog_def;
/* Tile program d of node n (its own, or one rebuilt for the config's
 * tile: core/tprog.h) (core/tiling_tprog.c): one unit per block; 0, or
 * PTO_ECAPACITY with tg->err set when its declared tiles do not fit the
 * levels of machine m (NULL: not checked). */
pto_status pto__tile_tprog(tiler *t, const pto_node *n,
                           const struct pto_tprog_def *d,
                           const pto_machine *m);

#endif /* PTO_CORE_TILER_H */
