/* Top-k tiling (pto_topk, pto_topk_masked): incremental, so no unit holds a
 * whole row and merges start as soon as their blocks are done.
 *
 * Level 0: each vector tile {tr rows, tc cols} of the input is one unit,
 * TLOAD then TTOPK, keeping the min(k, block) best of its block of each
 * row, sorted, with their columns in the block as indices. A row's
 * candidates are laid out block after block in a scratch storage (values
 * f32, indices i32): runs of a = min(k, tc) columns, the last run possibly
 * shorter.
 *
 * Level L + 1: each unit loads 4 consecutive runs of level L (one window)
 * and TMRGTOPK keeps the first min(k, their entries): runs of min(k, 4a),
 * again laid out back to back in a scratch storage of that level; run j's
 * indices gain j times the columns a run of level L covers, so they count
 * from the first column of the 4 runs. The level with a single group
 * stores k columns (pto_topk_masked pads them) to the outputs, its indices
 * counting from column 0. Indices relative to the unit's own columns make
 * every unit of a level (but a short last one) the same program. A unit reads
 * only its own runs, so the task graph's read-after-write edges let it start
 * once its four producers are done, and the levels spread over the vector
 * workers; every level has its own scratch, so no unit overwrites what another
 * still reads.
 *
 * A merge unit takes as many rows as keep its tiles within the bytes per
 * row of a level-0 unit times tr (a level-0 unit that fits the UB makes
 * merges that fit). With tc 0 or >= the row, one unit per row block
 * selects whole rows (TTOPK straight to the outputs). */
#include <stdint.h>

#include "core/tiler.h"

/* Rows of the op's 4-D row space [b0, b1, r] as one flat index, so that a
 * scratch storage is [rows, width] dense. */
typedef struct topk_rows {
  int64_t b[2], r; /* extents */
} topk_rows;

/* A window of scratch storage st (width columns per row) for the tile at
 * pos: its rows, columns [c0, c0 + nc), clipped as the rows of the op's
 * input `in` are. */
static pto_gref scratch_window(uint32_t st, pto_dtype dt, int64_t width,
                               const topk_rows *rs, const tpos *pos, int64_t c0,
                               int64_t nc, const view4 *in) {
  pto_gref g = {0};
  g.storage = st;
  g.dtype = dt;
  g.offset =
      ((pos->b[0] * rs->b[1] + pos->b[1]) * rs->r + pos->r0) * width + c0;
  g.rows = pos->nr;
  g.cols = nc;
  g.rs = width;
  g.cs = 1;
  g.cb[0] = axis_clip(in, 0, pos->b[0]);
  g.cb[1] = axis_clip(in, 1, pos->b[1]);
  g.cr = axis_clip(in, 2, pos->r0);
  return g;
}

/* Where a level's units store (value, index) tiles: two scratch storages
 * of `width` columns per row, or (width 0) the op's outputs. */
typedef struct topk_dest {
  uint32_t sv, si;
  int64_t width;
} topk_dest;

static void store_pair(tiler *t, const view4 *in, const view4 *ov,
                       const view4 *oi, const topk_dest *d,
                       const topk_rows *rs, const tpos *pos, int64_t c0,
                       int64_t nc, uint32_t v, uint32_t x) {
  pto_gref gv, gx;
  if (d->width) {
    gv = scratch_window(d->sv, PTO_F32, d->width, rs, pos, c0, nc, in);
    gx = scratch_window(d->si, PTO_I32, d->width, rs, pos, c0, nc, in);
  } else { /* the outputs: all k columns */
    tpos p = *pos;
    p.c0 = 0;
    p.nc = nc;
    gv = window(ov, &p);
    gx = window(oi, &p);
  }
  store(t, v, &gv);
  store(t, x, &gx);
}

/* A TTOPK or TMRGTOPK with sources src (n of them) into new (value, index)
 * tiles of capacity rows x cap, valid nr x kk; imm[0] = imm0, mode masked,
 * scalar s. */
static void select_pair(tiler *t, int op, const uint32_t *src, int n,
                        uint32_t rows, uint32_t cap, int64_t nr, int64_t kk,
                        pto_clip cr, int32_t imm0, int masked, double s,
                        uint32_t *v, uint32_t *x) {
  *v = new_val_clipped(t, PTO_F32, rows, cap, nr, kk, cr, PTO_CLIP_NONE);
  *x = new_val_clipped(t, PTO_I32, rows, cap, nr, kk, cr, PTO_CLIP_NONE);
  pto_tinst *in = emit(t, op);
  for (int i = 0; i < n; i++)
    in->src[i] = src[i];
  in->dst[0] = *v;
  in->dst[1] = *x;
  in->imm[0] = imm0;
  in->imm[1] = masked;
  in->s = s;
}

/* New scratch storages for a level of `width` candidate columns per row. */
static topk_dest new_level(tiler *t, const pto_node *n, const topk_rows *rs,
                           int64_t width) {
  const int64_t rows = rs->b[0] * rs->b[1] * rs->r;
  topk_dest d = {scratch(t, PTO_F32, rows * width, n->id, "topk.values"),
                 scratch(t, PTO_I32, rows * width, n->id, "topk.indices"),
                 width};
  return d;
}

/* Visits every row tile of tr rows of the row space. */
#define FOR_ROW_TILES(rs, tr, pos)                                             \
  for (int64_t b0_ = 0; b0_ < (rs).b[0]; b0_++)                                \
    for (int64_t b1_ = 0; b1_ < (rs).b[1]; b1_++)                              \
      for (int64_t r_ = 0; r_ < (rs).r; r_ += (tr))                            \
        for (tpos pos = {{b0_, b1_},                                           \
                         r_,                                                   \
                         0,                                                    \
                         (rs).r - r_ < (tr) ? (rs).r - r_ : (tr),              \
                         0},                                                   \
                  *once_ = &pos;                                               \
             once_; once_ = NULL)

void pto__tile_topk(tiler *t, const pto_node *n, const pto_tile_shape *ts) {
  const view4 in = view_of(n->in[0]), ov = view_of(n->out[0]),
              oi = view_of(n->out[1]);
  const int64_t N = in.shape[3], k = n->ival;
  const int masked = (n->flags & PTO_TOPK_MASKED) != 0;
  const topk_rows rs = {{in.shape[0], in.shape[1]}, in.shape[2]};
  const uint32_t tr = clamp_tile(ts->vec_rows, rs.r);
  const uint32_t tc = clamp_tile(ts->vec_cols, N);
  const int64_t nb = (N + tc - 1) / tc;
  /* level 0: runs of a (the last of last), in `width` columns per row */
  int64_t a = k < tc ? k : tc, last = N - (nb - 1) * (int64_t)tc;
  last = k < last ? k : last;
  int64_t runs = nb, width = (nb - 1) * a + last, cover = tc;
  const topk_dest out = {0, 0, 0};
  topk_dest dst = nb == 1 ? out : new_level(t, n, &rs, width);
  const uint32_t cap0 = nb == 1 ? (uint32_t)k : (uint32_t)a;
  FOR_ROW_TILES(rs, tr, pos) {
    for (int64_t j = 0; j < nb && !t->failed; j++) {
      unit_begin(t, n->id, PTO_CORE_VECTOR);
      tpos ip = pos;
      ip.c0 = j * (int64_t)tc;
      ip.nc = N - ip.c0 < tc ? N - ip.c0 : tc;
      const pto_gref g = window(&in, &ip);
      const uint32_t x = load(t, &g, tr, tc);
      const int64_t kk = nb == 1 ? k : j + 1 < nb ? a : last;
      uint32_t v, ix;
      select_pair(t, PTO_OP_TTOPK, &x, 1, tr, cap0, pos.nr, kk,
                  axis_clip(&in, 2, pos.r0), 0, masked, 0, &v, &ix);
      store_pair(t, &in, &ov, &oi, &dst, &rs, &pos, j * a, kk, v, ix);
      unit_end(t);
    }
  }
  /* bytes per row of a level-0 unit: its input block and its candidates */
  const uint64_t row0 = (uint64_t)tc * 4 + (uint64_t)cap0 * 8;
  while (runs > 1 && !t->failed) {
    const topk_dest src = dst;
    const int64_t groups = (runs + 3) / 4, b = k < 4 * a ? k : 4 * a;
    /* the last group's window, and what it keeps */
    const int64_t wlast = width - (groups - 1) * 4 * a;
    int64_t blast = k < wlast ? k : wlast;
    if (groups == 1) /* the outputs: k columns (the masked op pads) */
      blast = k;
    const int64_t nwidth = (groups - 1) * b + blast;
    dst = groups == 1 ? out : new_level(t, n, &rs, nwidth);
    const uint64_t rowm = (uint64_t)(4 * a) * 8 + (uint64_t)b * 8;
    uint64_t fit = (uint64_t)tr * row0 / rowm;
    const uint32_t mr = fit < 1 ? 1 : fit > tr ? tr : (uint32_t)fit;
    const uint32_t capo = (uint32_t)(groups == 1 ? k : b);
    FOR_ROW_TILES(rs, mr, pos) {
      for (int64_t gi = 0; gi < groups && !t->failed; gi++) {
        unit_begin(t, n->id, PTO_CORE_VECTOR);
        const int64_t c0 = gi * 4 * a, w = gi + 1 < groups ? 4 * a : wlast;
        const pto_gref gv =
            scratch_window(src.sv, PTO_F32, src.width, &rs, &pos, c0, w, &in);
        const pto_gref gx =
            scratch_window(src.si, PTO_I32, src.width, &rs, &pos, c0, w, &in);
        const uint32_t ins[2] = {load(t, &gv, mr, (uint32_t)(4 * a)),
                                 load(t, &gx, mr, (uint32_t)(4 * a))};
        const int64_t kk = gi + 1 < groups ? b : blast;
        uint32_t v, ix;
        select_pair(t, PTO_OP_TMRGTOPK, ins, 2, mr, capo, pos.nr, kk,
                    axis_clip(&in, 2, pos.r0), (int32_t)a, masked,
                    (double)cover, &v, &ix);
        store_pair(t, &in, &ov, &oi, &dst, &rs, &pos, gi * b, kk, v, ix);
        unit_end(t);
      }
    }
    runs = groups;
    a = b;
    width = nwidth;
    cover *= 4;
  }
}
