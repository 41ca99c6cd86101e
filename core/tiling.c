/* Tiling: every tensor op becomes units of tile instructions under its tile
 * shape. Each unit loads the input windows it needs, computes one output
 * tile and stores it; the partitioner later forwards stores to loads inside
 * a subgraph and drops the boundary traffic it no longer needs. */
#include "core/tilegraph.h"
#include "core/tiler.h"
#include "core/tprog.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/custom.h"

/* Loads operand v for an output tile at pos and expands a broadcast axis to
 * the tile, unless fused_row/fused_col say the caller consumes the narrow
 * tile directly (set to 1 when it stays narrow). */
static uint32_t load_operand(tiler *t, const view4 *v, const view4 *out,
                             const tpos *pos, uint32_t tr, uint32_t tc,
                             int allow_narrow, int *narrow_rows,
                             int *narrow_cols) {
  pto_gref g = window(v, pos);
  /* an expanded tile is clipped as the output tile is */
  const pto_clip ocr = axis_clip(out, 2, pos->r0),
                 occ = axis_clip(out, 3, pos->c0);
  int bc_cols = g.cols == 1 && pos->nc > 1; /* [.., M, 1]: row vector */
  int bc_rows = g.rows == 1 && pos->nr > 1; /* [.., 1, N]: column vector */
  uint32_t x = load(t, &g, bc_rows ? 1 : tr, bc_cols ? 1 : tc);
  *narrow_rows = *narrow_cols = 0;
  if (allow_narrow && bc_cols && !bc_rows) {
    *narrow_cols = 1;
    return x;
  }
  if (allow_narrow && bc_rows && !bc_cols) {
    *narrow_rows = 1;
    return x;
  }
  pto_dtype dt = t->tg->vals[x].dtype;
  if (bc_cols) { /* TROWEXPAND: dst[r][c] = src[r][0] */
    uint32_t w = new_val_clipped(t, dt, bc_rows ? 1 : tr, tc, g.rows,
                                 pos->nc, g.cr, occ);
    pto_tinst *in = emit(t, PTO_OP_TROWEXPAND);
    in->src[0] = x;
    in->dst[0] = w;
    x = w;
  }
  if (bc_rows) { /* TCOLEXPAND: dst[r][c] = src[0][c] */
    uint32_t w = new_val_clipped(t, dt, tr, tc, pos->nr, pos->nc, ocr, occ);
    pto_tinst *in = emit(t, PTO_OP_TCOLEXPAND);
    in->src[0] = x;
    in->dst[0] = w;
    x = w;
  }
  return x;
}

static int binary_insn(pto_top op) {
  switch (op) {
  case PTO_TOP_ADD: return PTO_OP_TADD;
  case PTO_TOP_SUB: return PTO_OP_TSUB;
  case PTO_TOP_MUL: return PTO_OP_TMUL;
  case PTO_TOP_DIV: return PTO_OP_TDIV;
  case PTO_TOP_MAX: return PTO_OP_TMAX;
  case PTO_TOP_MIN: return PTO_OP_TMIN;
  case PTO_TOP_ADDS: return PTO_OP_TADDS;
  case PTO_TOP_SUBS: return PTO_OP_TSUBS;
  case PTO_TOP_MULS: return PTO_OP_TMULS;
  case PTO_TOP_DIVS: return PTO_OP_TDIVS;
  case PTO_TOP_MAXS: return PTO_OP_TMAXS;
  case PTO_TOP_MINS: return PTO_OP_TMINS;
  case PTO_TOP_EXP: return PTO_OP_TEXP;
  case PTO_TOP_LOG: return PTO_OP_TLOG;
  case PTO_TOP_SQRT: return PTO_OP_TSQRT;
  case PTO_TOP_RSQRT: return PTO_OP_TRSQRT;
  case PTO_TOP_RECIP: return PTO_OP_TRECIP;
  case PTO_TOP_RELU: return PTO_OP_TRELU;
  case PTO_TOP_ABS: return PTO_OP_TABS;
  case PTO_TOP_NEG: return PTO_OP_TNEG;
  case PTO_TOP_ROWSUM: return PTO_OP_TROWSUM;
  case PTO_TOP_ROWMAX: return PTO_OP_TROWMAX;
  case PTO_TOP_ROWMIN: return PTO_OP_TROWMIN;
  case PTO_TOP_COLSUM: return PTO_OP_TCOLSUM;
  case PTO_TOP_COLMAX: return PTO_OP_TCOLMAX;
  default: return -1;
  }
}

/* The fused row-/column-broadcast form of a binary op, or -1. */
static int fused_bcast_insn(pto_top op, int row_vector) {
  switch (op) {
  case PTO_TOP_ADD: return row_vector ? PTO_OP_TROWEXPANDADD : PTO_OP_TCOLEXPANDADD;
  case PTO_TOP_SUB: return row_vector ? PTO_OP_TROWEXPANDSUB : PTO_OP_TCOLEXPANDSUB;
  case PTO_TOP_MUL: return row_vector ? PTO_OP_TROWEXPANDMUL : PTO_OP_TCOLEXPANDMUL;
  case PTO_TOP_DIV: return row_vector ? PTO_OP_TROWEXPANDDIV : PTO_OP_TCOLEXPANDDIV;
  case PTO_TOP_MAX: return row_vector ? PTO_OP_TROWEXPANDMAX : -1;
  default: return -1;
  }
}

/* ---- per op class ------------------------------------------------------- */

/* Element-wise (binary, scalar, unary, cast, cmp, select, custom). */
static void tile_elementwise(tiler *t, const pto_node *n, uint32_t tr,
                             uint32_t tc) {
  view4 out = view_of(n->out[0]);
  view4 in[PTO_NODE_MAX_IN];
  for (int i = 0; i < n->n_in; i++)
    in[i] = view_of(n->in[i]);
  pto_top_class cls = pto__top_class(n->op);
  pto_core_type core = PTO_CORE_VECTOR;
  int custom_op = -1;
  if (cls == PTO_TC_CUSTOM) {
    custom_op = (int)n->ival;
    core = pto__custom_get(custom_op)->desc.core;
  }
  pto_dtype odt = compute_dtype(n->out[0]->dtype);
  if (cls == PTO_TC_CUSTOM)
    odt = n->out[0]->dtype;
  tr = clamp_tile(tr, out.shape[2]);
  tc = clamp_tile(tc, out.shape[3]);
  FOR_TILES(out.shape, tr, tc, pos) {
    unit_begin(t, n->id, core);
    uint32_t src[PTO_NODE_MAX_IN] = {0};
    int nrow[PTO_NODE_MAX_IN] = {0}, ncol[PTO_NODE_MAX_IN] = {0};
    /* only operand b of a binary op may stay narrow (fused broadcast) */
    for (int i = 0; i < n->n_in; i++)
      src[i] = load_operand(t, &in[i], &out, &pos, tr, tc,
                            cls == PTO_TC_BINARY && i == 1 &&
                                fused_bcast_insn(n->op, 1) >= 0,
                            &nrow[i], &ncol[i]);
    uint32_t like = t->failed ? 0 : src[0];
    uint32_t r;
    pto_tinst *ins;
    switch (cls) {
    case PTO_TC_BINARY:
      if (ncol[1] || nrow[1]) {
        int fop = fused_bcast_insn(n->op, ncol[1]);
        if (fop < 0) { /* no fused column form: expand, then the plain op */
          uint32_t w = new_val_clipped(t, t->tg->vals[src[1]].dtype, tr, tc,
                                       pos.nr, pos.nc,
                                       axis_clip(&out, 2, pos.r0),
                                       axis_clip(&out, 3, pos.c0));
          ins = emit(t, PTO_OP_TCOLEXPAND);
          ins->src[0] = src[1];
          ins->dst[0] = w;
          src[1] = w;
          r = compute(t, binary_insn(n->op), odt, like, 2, src);
        } else {
          r = compute(t, fop, odt, like, 2, src);
        }
      } else {
        r = compute(t, binary_insn(n->op), odt, like, 2, src);
      }
      break;
    case PTO_TC_SCALAR:
      r = compute1(t, binary_insn(n->op), odt, src[0]);
      if (!t->failed) {
        pto_tinst *last = &t->tg->insts[t->tg->n_insts - 1];
        last->s = n->scalar;
        last->st[0] = n->st[0];
        last->st[1] = n->st[1];
      }
      break;
    case PTO_TC_UNARY:
      r = compute1(t, binary_insn(n->op), odt, src[0]);
      break;
    case PTO_TC_CAST:
      r = src[0];
      if (!t->failed && t->tg->vals[r].dtype != odt)
        r = compute1(t, PTO_OP_TCVT, odt, r);
      break;
    case PTO_TC_CMP:
      r = compute(t, PTO_OP_TCMP, PTO_I32, like, 2, src);
      if (!t->failed)
        t->tg->insts[t->tg->n_insts - 1].imm[0] = (int32_t)n->ival;
      break;
    case PTO_TC_SELECT:
      r = compute(t, PTO_OP_TSEL, odt, like, 3, src);
      break;
    default: /* PTO_TC_CUSTOM */
      r = compute(t, custom_op, odt, like, n->n_in, src);
      break;
    }
    /* the result is clipped as the output tile is, whichever operand it
     * was shaped like: a static operand as wide as the tile (a [M, 1]
     * under a tile of one column) would keep a tile past a dynamic
     * extent valid, and what reads the result would take it in */
    if (!t->failed) {
      t->tg->vals[r].cr = axis_clip(&out, 2, pos.r0);
      t->tg->vals[r].cc = axis_clip(&out, 3, pos.c0);
    }
    pto_gref g = window(&out, &pos);
    store(t, r, &g);
    unit_end(t);
  }
}

static int combine_insn(pto_top op) {
  switch (op) {
  case PTO_TOP_ROWMAX:
  case PTO_TOP_COLMAX: return PTO_OP_TMAX;
  case PTO_TOP_ROWMIN: return PTO_OP_TMIN;
  default: return PTO_OP_TADD;
  }
}

/* Row reductions: one unit per row block, combining per-tile partials. Column
 * reductions: one unit per column block. */
static void tile_reduce(tiler *t, const pto_node *n, uint32_t tr,
                        uint32_t tc) {
  view4 in = view_of(n->in[0]), out = view_of(n->out[0]);
  int col = n->op == PTO_TOP_COLSUM || n->op == PTO_TOP_COLMAX;
  tr = clamp_tile(tr, in.shape[2]);
  tc = clamp_tile(tc, in.shape[3]);
  pto_dtype dt = compute_dtype(n->out[0]->dtype);
  uint32_t otr = col ? 1 : tr, otc = col ? tc : 1;
  FOR_TILES(out.shape, otr, otc, opos) {
    unit_begin(t, n->id, PTO_CORE_VECTOR);
    uint32_t acc = PTO_NONE;
    int64_t steps = col ? in.shape[2] : in.shape[3];
    int64_t step = col ? tr : tc;
    for (int64_t s0 = 0; s0 < steps; s0 += step) {
      tpos ip = opos;
      int64_t len = steps - s0 < step ? steps - s0 : step;
      if (col) {
        ip.r0 = s0;
        ip.nr = len;
      } else {
        ip.c0 = s0;
        ip.nc = len;
      }
      pto_gref g = window(&in, &ip);
      uint32_t x = load(t, &g, tr, tc);
      /* the partial keeps the unreduced axis's clip */
      uint32_t part = new_val_clipped(
          t, dt, otr, otc, col ? 1 : ip.nr, col ? ip.nc : 1,
          col ? PTO_CLIP_NONE : axis_clip(&in, 2, ip.r0),
          col ? axis_clip(&in, 3, ip.c0) : PTO_CLIP_NONE);
      pto_tinst *ins = emit(t, binary_insn(n->op));
      ins->src[0] = x;
      ins->dst[0] = part;
      if (acc != PTO_NONE) {
        uint32_t two[2] = {acc, part};
        part = compute(t, combine_insn(n->op), dt, part, 2, two);
      }
      acc = part;
    }
    pto_gref g = window(&out, &opos);
    store(t, acc, &g);
    unit_end(t);
  }
}

/* Gather: out [S..., L, D] tiles over (index rows, D columns); with a
 * third input (pto_gather_else), the rows of index -1 come from its tile
 * at the same window (TGATHERELSE). */
static void tile_gather(tiler *t, const pto_node *n, uint32_t tr,
                        uint32_t tc) {
  const pto_tensor *table = n->in[0], *index = n->in[1];
  const int other = n->n_in > 2;
  view4 out = view_of(n->out[0]), tab = view_of(table),
        oth = other ? view_of(n->in[2]) : out;
  /* the index as [.., 1, L] so that out row block r0.. matches its columns */
  view4 idx = view_of(index);
  int64_t L = idx.shape[3];
  tr = clamp_tile(tr, L);
  tc = clamp_tile(tc, out.shape[3]);
  /* out is right-aligned [.., L, D]: its batch dims are index dims 0..2 */
  int64_t shape[4] = {idx.shape[1], idx.shape[2], L, out.shape[3]};
  FOR_TILES(shape, tr, tc, pos) {
    unit_begin(t, n->id, PTO_CORE_VECTOR);
    pto_gref gi = {0};
    gi.storage = idx.storage;
    gi.dtype = idx.dtype;
    gi.offset = idx.off + pos.b[0] * idx.stride[1] + pos.b[1] * idx.stride[2] +
                pos.r0 * idx.stride[3];
    gi.rows = 1;
    gi.cols = pos.nr;
    gi.rs = 0;
    gi.cs = idx.stride[3];
    gi.cc = axis_clip(&idx, 3, pos.r0);
    gi.cb[0] = axis_clip(&idx, 1, pos.b[0]);
    gi.cb[1] = axis_clip(&idx, 2, pos.b[1]);
    uint32_t iv = load(t, &gi, 1, tr);
    pto_gref gt = {0};
    gt.storage = tab.storage;
    gt.dtype = tab.dtype;
    gt.offset = tab.off + pos.c0 * tab.stride[3];
    gt.rows = tab.shape[2];
    gt.cols = pos.nc;
    gt.rs = tab.stride[2];
    gt.cs = tab.stride[3];
    gt.cr = axis_clip(&tab, 2, 0); /* the table's rows: a dynamic N */
    gt.cc = axis_clip(&tab, 3, pos.c0);
    uint32_t ov = PTO_NONE;
    if (other) {
      pto_gref go = window(&oth, &pos);
      ov = load(t, &go, tr, tc);
    }
    uint32_t d = new_val_clipped(t, compute_dtype(tab.dtype), tr, tc, pos.nr,
                                 pos.nc, gi.cc, gt.cc);
    pto_tinst *ins = emit(t, other ? PTO_OP_TGATHERELSE : PTO_OP_TGATHER);
    ins->src[0] = iv;
    if (other)
      ins->src[1] = ov;
    ins->dst[0] = d;
    ins->g = gt;
    if (n->flags & PTO_GATHER_STRICT)
      ins->flags |= PTO_TF_STRICT;
    if (n->flags & PTO_GATHER_PAD)
      ins->flags |= PTO_TF_PAD;
    pto_gref go = {0};
    go.storage = out.storage;
    go.dtype = out.dtype;
    go.offset = out.off + pos.b[0] * out.stride[0] + pos.b[1] * out.stride[1] +
                pos.r0 * out.stride[2] + pos.c0 * out.stride[3];
    go.rows = pos.nr;
    go.cols = pos.nc;
    go.rs = out.stride[2];
    go.cs = out.stride[3];
    go.cb[0] = axis_clip(&out, 0, pos.b[0]);
    go.cb[1] = axis_clip(&out, 1, pos.b[1]);
    go.cr = axis_clip(&out, 2, pos.r0);
    go.cc = axis_clip(&out, 3, pos.c0);
    store(t, d, &go);
    unit_end(t);
  }
}

/* Copies src (any view) into dst of the same 4-D shape, tile by tile; dst's
 * window is shifted by `shift` along 4-D axis `axis`. */
static void copy_tiles(tiler *t, uint32_t node, const view4 *src,
                       const view4 *dst, int axis, int64_t shift, uint32_t tr,
                       uint32_t tc) {
  tr = clamp_tile(tr, src->shape[2]);
  tc = clamp_tile(tc, src->shape[3]);
  FOR_TILES(src->shape, tr, tc, pos) {
    unit_begin(t, node, PTO_CORE_VECTOR);
    pto_gref g = window(src, &pos);
    uint32_t x = load(t, &g, tr, tc);
    tpos dp = pos;
    if (axis < 2)
      dp.b[axis] += shift;
    else if (axis == 2)
      dp.r0 += shift;
    else
      dp.c0 += shift;
    pto_gref go = window(dst, &dp);
    store(t, x, &go);
    unit_end(t);
  }
}

static void tile_concat(tiler *t, const pto_node *n, uint32_t tr,
                        uint32_t tc) {
  view4 out = view_of(n->out[0]);
  int axis = 4 - n->out[0]->ndim + (int)n->ival;
  int64_t shift = 0;
  for (int i = 0; i < n->n_in; i++) {
    view4 in = view_of(n->in[i]);
    copy_tiles(t, n->id, &in, &out, axis, shift, tr, tc);
    shift += in.shape[axis];
  }
}

static void tile_fill(tiler *t, const pto_node *n, uint32_t tr, uint32_t tc) {
  view4 out = view_of(n->out[0]);
  pto_dtype dt = compute_dtype(n->out[0]->dtype);
  tr = clamp_tile(tr, out.shape[2]);
  tc = clamp_tile(tc, out.shape[3]);
  FOR_TILES(out.shape, tr, tc, pos) {
    unit_begin(t, n->id, PTO_CORE_VECTOR);
    uint32_t v = new_val_clipped(t, dt, tr, tc, pos.nr, pos.nc,
                                 axis_clip(&out, 2, pos.r0),
                                 axis_clip(&out, 3, pos.c0));
    pto_tinst *ins = emit(t, PTO_OP_TEXPANDS);
    ins->dst[0] = v;
    ins->s = n->scalar;
    pto_gref g = window(&out, &pos);
    store(t, v, &g);
    unit_end(t);
  }
}

/* ---- driver ------------------------------------------------------------- */

/* The parts of n's tile shape that cfg sets (PTO_TILE_SET_*). */
static unsigned config_sets(const pto_node *n, const pto_config *cfg) {
  unsigned set = 0;
  if (cfg && n->label[0]) {
    if (pto__config_source(cfg, n->label, PTO__SET_CUBE_TILE) >= 0)
      set |= PTO_TILE_SET_CUBE;
    if (pto__config_source(cfg, n->label, PTO__SET_VEC_TILE) >= 0)
      set |= PTO_TILE_SET_VEC;
  }
  return set;
}

/* The parts the program or cfg sets. */
static unsigned tile_set_of(const pto_node *n, const pto_config *cfg) {
  return n->tile_set | config_sets(n, cfg);
}

/* The matrices of a batch t is: the product of its leading axes. */
static int64_t batch_of(const pto_tensor *t) {
  int64_t batch = 1;
  for (int d = 0; d + 2 < t->ndim; d++)
    batch *= t->shape[d];
  return batch;
}

/* The tile shape n is tiled with: the program's, a config's label
 * override over it, and the compiler's choice for the machine for a plain
 * matmul whose cube part neither set and for a sparse attention whose
 * cube part is unset or zeros (the indexer's score reads 0 as "whole",
 * its builder's own choice). */
static pto_tile_shape node_tile(const pto_node *n, const pto_config *cfg,
                                const pto_tile_ctx *ctx) {
  pto_tile_shape s = n->tile;
  const unsigned set = tile_set_of(n, cfg);
  if (cfg && n->label[0])
    pto_config_tile(cfg, n->label, &s);
  if (!(set & PTO_TILE_SET_CUBE) && n->op == PTO_TOP_MATMUL && ctx &&
      ctx->machine) {
    const pto_tensor *o = n->out[0], *a = n->in[0];
    const int nd = o->ndim;
    const int64_t batch = batch_of(o);
    const int64_t M = nd >= 2 ? o->shape[nd - 2] : 1, N = o->shape[nd - 1],
                  K = (n->flags & PTO_MATMUL_TRANS_A) ? a->shape[a->ndim - 2]
                                                      : a->shape[a->ndim - 1];
    pto_tile_shape c;
    if (pto__matmul_tile(ctx->machine, batch, M, N, K,
                         ctx->machine->workers[PTO_CORE_CUBE], ctx->mr,
                         ctx->nr, &c) == PTO_OK) {
      s.cube_m = c.cube_m;
      s.cube_n = c.cube_n;
      s.cube_k = c.cube_k;
    }
  }
  /* a relu-weighted-sum score (the lightning indexer's) whose cube tile
   * nobody set: the chooser's for the machine compiled for (zeros stay
   * "whole", as the op reads them) */
  if (!(set & PTO_TILE_SET_CUBE) && n->op == PTO_TOP_MATMUL_RELU_WSUM && ctx &&
      ctx->machine) {
    const pto_tensor *o = n->out[0], *a = n->in[0];
    const int nd = o->ndim;
    const int64_t rows = o->shape[nd - 2] * n->ival, N = o->shape[nd - 1],
                  K = (n->flags & PTO_MATMUL_TRANS_A) ? a->shape[a->ndim - 2]
                                                      : a->shape[a->ndim - 1];
    pto_tile_shape c;
    if (pto__relu_wsum_tile(ctx->machine, batch_of(o), rows, n->ival, K, N,
                            ctx->mr, ctx->nr, &c) == PTO_OK) {
      s.cube_m = c.cube_m;
      s.cube_n = c.cube_n;
    }
  }
  /* a sparse attention whose cube tile is unset, or zeros (its kernels'
   * "choose for me"): the chooser's for the machine compiled for */
  if (n->op == PTO_TOP_SPARSE_ATTENTION && ctx && ctx->machine &&
      (!(set & PTO_TILE_SET_CUBE) || (!s.cube_m && !s.cube_n))) {
    const pto_tensor *q = n->in[0], *ix = n->in[2];
    pto_tile_shape c;
    if (pto__attention_tile(ctx->machine, q->shape[q->ndim - 2],
                            q->shape[q->ndim - 1], n->ival,
                            ix->shape[ix->ndim - 1], ctx->mr, ctx->nr,
                            &c) == PTO_OK) {
      s.cube_m = c.cube_m;
      s.cube_n = c.cube_n;
    }
  }
  return s;
}

/* The attention chains of p tiled as one op each (core/tiling_flash.c):
 * *flash (NULL: none) gets the match of every live matmul that ends one,
 * its tile the chooser's unless the program or the config set its cube
 * tile, and *live is remade with each such matmul reading q, k and v
 * instead of the chain's results (ops only the chain needed are not
 * tiled), as tg->reads records for the partitioner. -1 on ENOMEM. */
static int find_flash(pto_tgraph *tg, const pto_program *p,
                      const pto_config *cfg, const pto_tile_ctx *ctx,
                      pto_tile_shape *tile, uint8_t **live,
                      pto_flash **flash) {
  const pto_tensor *(*reads)[4] = NULL;
  const pto_tensor *const **use = NULL;
  pto_flash f;
  for (uint32_t i = 0; i < p->n_nodes; i++) {
    const pto_node *n = p->nodes[i];
    if (!(*live)[i] || !pto__flash_match(n, &f))
      continue;
    if (!*flash) {
      *flash = calloc(p->n_nodes, sizeof **flash);
      reads = calloc(p->n_nodes, sizeof *reads);
      use = calloc(p->n_nodes, sizeof *use);
      tg->reads = reads;
      if (!*flash || !reads || !use) {
        free(use);
        return -1;
      }
    }
    (*flash)[i] = f;
    reads[i][0] = f.q;
    reads[i][1] = f.k;
    reads[i][2] = f.v;
    use[i] = reads[i];
    if (!(tile_set_of(n, cfg) & PTO_TILE_SET_CUBE) && ctx && ctx->machine) {
      const pto_tensor *o = n->out[0];
      const int nd = o->ndim;
      const pto_tensor *k = f.k;
      const int64_t N = k->shape[k->ndim - (f.k_trans ? 2 : 1)],
                    D = f.q->shape[f.q->ndim - 1];
      pto_tile_shape c;
      if (pto__flash_tile(ctx->machine, batch_of(o), o->shape[nd - 2], N, D,
                          o->shape[nd - 1], ctx->machine->workers[PTO_CORE_CUBE],
                          ctx->mr, ctx->nr, &c) == PTO_OK)
        tile[i] = c;
    }
  }
  if (!*flash)
    return 0;
  uint8_t *again = pto__live_nodes_using(p, use);
  free(use);
  if (!again)
    return -1;
  free(*live);
  *live = again;
  return 0;
}

pto_status pto__tile(pto_tgraph *tg, const pto_program *p,
                     const pto_config *cfg, const pto_tile_ctx *ctx) {
  memset(tg, 0, sizeof *tg);
  tg->prog = p;
  tg->n_storages = p->n_tensors + p->n_outputs;
  tiler t = {tg, p, 0};
  tg->node_tile = calloc(p->n_nodes + 1, sizeof *tg->node_tile);
  tg->out_storage = calloc(p->n_outputs + 1, sizeof *tg->out_storage);
  tg->vec_chosen = calloc(p->n_nodes + 1, 1);
  uint8_t *live = pto__live_nodes(p);
  uint8_t *vec_set = calloc(p->n_nodes + 1, 1);
  if (!tg->node_tile || !tg->out_storage || !tg->vec_chosen || !live ||
      !vec_set) {
    free(live);
    free(vec_set);
    return pto__error_set(&tg->err, PTO_ENOMEM, "tiling: out of memory");
  }
  for (uint32_t i = 0; i < p->n_nodes; i++) {
    tg->node_tile[i] = node_tile(p->nodes[i], cfg, ctx);
    vec_set[i] = (tile_set_of(p->nodes[i], cfg) & PTO_TILE_SET_VEC) != 0;
  }
  pto_flash *flash = NULL;
  if (find_flash(tg, p, cfg, ctx, tg->node_tile, &live, &flash)) {
    free(live);
    free(vec_set);
    return pto__error_set(&tg->err, PTO_ENOMEM, "tiling: out of memory");
  }
  pto_status cst = pto__choose_vector_tiles(p, live, vec_set, ctx,
                                            tg->node_tile, tg->vec_chosen);
  free(vec_set);
  if (cst) {
    free(live);
    free(flash);
    return pto__error_set(&tg->err, cst, "tiling: out of memory");
  }
  for (uint32_t i = 0; i < p->n_nodes; i++) {
    const pto_node *n = p->nodes[i];
    pto_tile_shape ts = tg->node_tile[i];
    if (!live[i])
      continue;
    switch (pto__top_class(n->op)) {
    case PTO_TC_REDUCE:
      tile_reduce(&t, n, ts.vec_rows, ts.vec_cols);
      break;
    case PTO_TC_MATMUL:
    case PTO_TC_ATTENTION:
      if (flash && flash[i].q)
        pto__tile_flash(&t, n, &flash[i], &ts);
      else
        pto__tile_cube(&t, n, &ts);
      break;
    case PTO_TC_TOPK:
      pto__tile_topk(&t, n, &ts);
      break;
    case PTO_TC_GATHER:
      tile_gather(&t, n, ts.vec_rows, ts.vec_cols);
      break;
    case PTO_TC_CONCAT:
      tile_concat(&t, n, ts.vec_rows, ts.vec_cols);
      break;
    case PTO_TC_FILL:
      tile_fill(&t, n, ts.vec_rows, ts.vec_cols);
      break;
    case PTO_TC_IOTA:
      pto__tile_iota(&t, n, ts.vec_rows, ts.vec_cols);
      break;
    case PTO_TC_ASSEMBLE: {
      pto_status st = pto__tile_assemble(&t, n, ts.vec_rows, ts.vec_cols);
      if (st == PTO_ENOTSUP) {
        free(live);
        free(flash);
        return pto__error_set(
            &tg->err, st,
            "assemble%s%s%s -> '%s': the blocks of its chain overlap in more "
            "than 2^20 pieces; assemble the overlapping blocks onto a copy",
            n->label[0] ? " '" : "", n->label, n->label[0] ? "'" : "",
            n->out[0]->name);
      }
      t.failed |= st != PTO_OK;
      break;
    }
    case PTO_TC_TPROG: {
      /* a tuned program whose tile a config sets: built again for it */
      const pto_tprog_def *d = n->tprog;
      pto_arena a;
      pto__arena_init(&a);
      pto_status st = PTO_OK;
      if (d->rebuild && config_sets(n, cfg)) {
        char msg[400];
        st = d->rebuild(d, &ts, n->n_in, n->in, &a, &d, msg, sizeof msg);
        if (st)
          pto__error_set(&tg->err, st, "tile_program%s%s%s: %s",
                         n->label[0] ? " '" : "", n->label,
                         n->label[0] ? "'" : "", msg);
      }
      if (!st)
        st = pto__tile_tprog(&t, n, d, ctx ? ctx->machine : NULL);
      pto__arena_free(&a);
      if (st) {
        free(live);
        free(flash);
        return st;
      }
      break;
    }
    default:
      tile_elementwise(&t, n, ts.vec_rows, ts.vec_cols);
      break;
    }
    if (t.failed) {
      free(live);
      free(flash);
      return pto__error_set(&tg->err, PTO_ENOMEM, "tiling: out of memory");
    }
  }
  free(live);
  free(flash);
  /* Outputs: a root computed by an op is written in place; anything else (an
   * input, a view, a tensor marked twice) is copied into its own buffer. */
  for (uint32_t j = 0; j < p->n_outputs; j++) {
    const pto_tensor *o = p->outputs[j];
    int direct = o->root == o && o->producer != NULL;
    for (uint32_t i = 0; direct && i < j; i++)
      direct = tg->out_storage[i] != o->id;
    if (direct) {
      tg->out_storage[j] = o->id;
      continue;
    }
    tg->out_storage[j] = p->n_tensors + j;
    view4 src = view_of(o), dst = src;
    dst.storage = p->n_tensors + j;
    dst.dtype = o->dtype;
    dst.off = 0;
    int64_t s = 1;
    for (int d = 3; d >= 0; d--) {
      dst.stride[d] = s;
      s *= dst.shape[d];
    }
    pto_tile_shape ts = pto_tile_shape_default();
    copy_tiles(&t, PTO_NONE, &src, &dst, 3, 0, ts.vec_rows, ts.vec_cols);
    if (t.failed)
      return pto__error_set(&tg->err, PTO_ENOMEM, "tiling: out of memory");
  }
  return PTO_OK;
}

void pto__tgraph_free(pto_tgraph *tg) {
  free(tg->insts);
  free(tg->vals);
  free(tg->units);
  free(tg->node_tile);
  free(tg->vec_chosen);
  free(tg->reads);
  free(tg->out_storage);
  free(tg->scratch);
  memset(tg, 0, sizeof *tg);
}

/* The scratch storage s is, or NULL. */
static const pto_tscratch *scratch_of(const pto_tgraph *tg, uint32_t s) {
  const uint32_t first = tg->prog->n_tensors + tg->prog->n_outputs;
  return s >= first && s - first < tg->n_scratch ? &tg->scratch[s - first]
                                                 : NULL;
}

/* The tensor storage s holds (a root, or an output copied), or NULL. */
static const pto_tensor *tensor_of(const pto_tgraph *tg, uint32_t s) {
  const pto_program *p = tg->prog;
  if (s < p->n_tensors)
    return p->tensors[s];
  return s - p->n_tensors < p->n_outputs ? p->outputs[s - p->n_tensors] : NULL;
}

int64_t pto__storage_bytes(const pto_tgraph *tg, uint32_t s) {
  const pto_tscratch *x = scratch_of(tg, s);
  const pto_tensor *t = tensor_of(tg, s);
  if (x)
    return x->elems * (int64_t)pto_dtype_size(x->dtype);
  return t ? pto_tensor_numel(t) * (int64_t)pto_dtype_size(t->dtype) : 0;
}

pto_dtype pto__storage_dtype(const pto_tgraph *tg, uint32_t s) {
  const pto_tscratch *x = scratch_of(tg, s);
  const pto_tensor *t = tensor_of(tg, s);
  return x ? x->dtype : t ? t->dtype : PTO_DTYPE_COUNT;
}

const char *pto__storage_name(const pto_tgraph *tg, uint32_t s) {
  const pto_program *p = tg->prog;
  const pto_tscratch *x = scratch_of(tg, s);
  if (x)
    return x->name;
  if (s < p->n_tensors)
    return p->tensors[s]->name;
  return s - p->n_tensors < p->n_outputs ? p->output_names[s - p->n_tensors]
                                         : "?";
}
