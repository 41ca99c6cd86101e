/* Tiling iota along any axis and assemble chains (core/program.h: a chain
 * of assembles is one op writing every block of the chain over its base). */
#include <stdlib.h>
#include <string.h>

#include "core/tiler.h"

/* ---- iota --------------------------------------------------------------- */

void pto__tile_iota(tiler *t, const pto_node *n, uint32_t tr, uint32_t tc) {
  view4 out = view_of(n->out[0]);
  const pto_dtype dt = compute_dtype(n->out[0]->dtype);
  const int axis = 4 - n->out[0]->ndim + n->axis; /* in the 4-D space */
  tr = clamp_tile(tr, out.shape[2]);
  tc = clamp_tile(tc, out.shape[3]);
  FOR_TILES(out.shape, tr, tc, pos) {
    unit_begin(t, n->id, PTO_CORE_VECTOR);
    uint32_t v;
    pto_tinst *ins;
    const pto_clip cr = axis_clip(&out, 2, pos.r0),
                   cc = axis_clip(&out, 3, pos.c0);
    if (axis == 3) { /* along the columns: TCI counts them */
      v = new_val_clipped(t, dt, tr, tc, pos.nr, pos.nc, cr, cc);
      ins = emit(t, PTO_OP_TCI);
      ins->dst[0] = v;
      ins->imm[0] = (int32_t)(n->ival + pos.c0);
    } else if (axis == 2) { /* the rows: TCI's count turned into a rowvec */
      uint32_t row = new_val_clipped(t, dt, 1, tr, 1, pos.nr, PTO_CLIP_NONE, cr);
      ins = emit(t, PTO_OP_TCI);
      ins->dst[0] = row;
      ins->imm[0] = (int32_t)(n->ival + pos.r0);
      uint32_t col = new_val_clipped(t, dt, tr, 1, pos.nr, 1, cr, PTO_CLIP_NONE);
      ins = emit(t, PTO_OP_TTRANS);
      ins->src[0] = row;
      ins->dst[0] = col;
      v = new_val_clipped(t, dt, tr, tc, pos.nr, pos.nc, cr, cc);
      ins = emit(t, PTO_OP_TROWEXPAND);
      ins->src[0] = col;
      ins->dst[0] = v;
    } else { /* a batch axis: one value per tile */
      v = new_val_clipped(t, dt, tr, tc, pos.nr, pos.nc, cr, cc);
      ins = emit(t, PTO_OP_TEXPANDS);
      ins->dst[0] = v;
      ins->s = (double)(n->ival + pos.b[axis]);
    }
    pto_gref g = window(&out, &pos);
    store(t, v, &g);
    unit_end(t);
  }
}

/* ---- assemble ----------------------------------------------------------- */

/* Boxes [lo, hi) over the nd axes of the result: lo[0..nd), then hi. */
typedef struct boxes {
  int nd;
  int64_t *b; /* 2 nd per box */
  uint32_t n, cap;
} boxes;

/* The most pieces the visible parts of a chain's blocks may take: only
 * blocks overlapping in many ways come near it. */
#define ASSEMBLE_PIECES_MAX (1u << 20)

/* -1 out of memory, -2 past the cap. */
static int boxes_push(boxes *s, const int64_t *box) {
  if (s->n >= ASSEMBLE_PIECES_MAX)
    return -2;
  if (pto__grow((void **)&s->b, 2 * (size_t)s->nd * sizeof *s->b, &s->cap,
                s->n + 1))
    return -1;
  memcpy(s->b + (size_t)s->n * 2 * s->nd, box, 2 * (size_t)s->nd * sizeof *box);
  s->n++;
  return 0;
}

/* out = the parts of the boxes of in outside box c (slabs cut axis by
 * axis). As boxes_push fails. */
static int boxes_minus(const boxes *in, const int64_t *c, boxes *out) {
  const int nd = in->nd;
  out->n = 0;
  for (uint32_t i = 0; i < in->n; i++) {
    int64_t rest[2 * PTO_MAX_DIMS];
    memcpy(rest, in->b + (size_t)i * 2 * nd, 2 * (size_t)nd * sizeof *rest);
    int apart = 0;
    for (int d = 0; d < nd; d++)
      apart |= c[d] >= rest[nd + d] || c[nd + d] <= rest[d];
    int rc;
    if (apart) {
      if ((rc = boxes_push(out, rest)) != 0)
        return rc;
      continue;
    }
    for (int d = 0; d < nd; d++) {
      const int64_t lo = c[d] > rest[d] ? c[d] : rest[d];
      const int64_t hi = c[nd + d] < rest[nd + d] ? c[nd + d] : rest[nd + d];
      int64_t piece[2 * PTO_MAX_DIMS];
      if (rest[d] < lo) {
        memcpy(piece, rest, sizeof piece);
        piece[nd + d] = lo;
        if ((rc = boxes_push(out, piece)) != 0)
          return rc;
      }
      if (hi < rest[nd + d]) {
        memcpy(piece, rest, sizeof piece);
        piece[d] = hi;
        if ((rc = boxes_push(out, piece)) != 0)
          return rc;
      }
      rest[d] = lo;
      rest[nd + d] = hi;
    }
  }
  return 0;
}

/* Copies the part `box` (result coordinates) of the block src, whose
 * origin lies at begin in the result, into out, a tile at a time from
 * the box's corner: a whole block is tiled as its producer tiled it, so
 * each load can match the producer's store. */
static void copy_box(tiler *t, uint32_t node, const pto_tensor *src,
                     const int64_t *begin, const view4 *out,
                     const int64_t *box, uint32_t tr, uint32_t tc) {
  const int nd = src->ndim, pad = 4 - nd;
  view4 s = view_of(src), d = *out;
  for (int k = 0; k < nd; k++) {
    const int64_t lo = box[k], ext = box[nd + k] - box[k];
    s.off += (lo - begin[k]) * s.stride[pad + k];
    s.shape[pad + k] = ext;
    d.off += lo * d.stride[pad + k];
    d.shape[pad + k] = ext;
  }
  tr = clamp_tile(tr, s.shape[2]);
  tc = clamp_tile(tc, s.shape[3]);
  FOR_TILES(s.shape, tr, tc, pos) {
    unit_begin(t, node, PTO_CORE_VECTOR);
    pto_gref g = window(&s, &pos);
    uint32_t x = load(t, &g, tr, tc);
    pto_gref go = window(&d, &pos);
    store(t, x, &go);
    unit_end(t);
  }
}

/* Each block's part no later block covers, and the base's part no block
 * covers, copied into the result: every element is written once.
 * PTO_ENOTSUP when overlapping blocks cut those parts into more than
 * ASSEMBLE_PIECES_MAX boxes, PTO_ENOMEM. */
pto_status pto__tile_assemble(tiler *t, const pto_node *n, uint32_t tr,
                              uint32_t tc) {
  const view4 out = view_of(n->out[0]);
  const int nd = n->out[0]->ndim;
  uint32_t len = 1;
  const pto_node *c = n;
  for (const pto_node *q; (q = pto__assemble_prev(c)) != NULL; c = q)
    len++;
  const pto_node **chain = malloc(len * sizeof *chain);
  boxes seen = {nd, NULL, 0, 0}, vis = {nd, NULL, 0, 0},
        tmp = {nd, NULL, 0, 0};
  pto_status st = chain ? PTO_OK : PTO_ENOMEM;
  c = n;
  for (uint32_t i = len; chain && i-- > 0; c = pto__assemble_prev(c))
    chain[i] = c;
  /* from the last block back: what it shows is what no later one covers */
  for (uint32_t i = len + 1; st == PTO_OK && i-- > 0;) {
    int64_t box[2 * PTO_MAX_DIMS];
    const int base = i == 0;
    const pto_node *b = chain[base ? 0 : i - 1];
    const pto_tensor *src = base ? b->in[0] : b->in[1];
    const int64_t zero[PTO_MAX_DIMS] = {0}, *at = base ? zero : b->offs;
    if (base && (n->flags & PTO_ASSEMBLE_COVERED))
      break;
    for (int d = 0; d < nd; d++) {
      box[d] = at[d];
      box[nd + d] = at[d] + src->shape[d];
    }
    vis.n = 0;
    if (boxes_push(&vis, box)) {
      st = PTO_ENOMEM;
      break;
    }
    for (uint32_t k = 0; k < seen.n && vis.n; k++) {
      int rc = boxes_minus(&vis, seen.b + (size_t)k * 2 * nd, &tmp);
      if (rc) {
        st = rc == -2 ? PTO_ENOTSUP : PTO_ENOMEM;
        break;
      }
      boxes x = vis;
      vis = tmp;
      tmp = x;
    }
    for (uint32_t k = 0; st == PTO_OK && k < vis.n; k++)
      copy_box(t, n->id, src, at, &out, vis.b + (size_t)k * 2 * nd, tr, tc);
    if (st == PTO_OK && !base && boxes_push(&seen, box))
      st = PTO_ENOMEM;
    if (t->failed)
      st = PTO_ENOMEM;
  }
  free(chain);
  free(seen.b);
  free(vis.b);
  free(tmp.b);
  return st;
}
