/* Tiling the cube's ops: matmul (split into accumulating k slices),
 * matmul_relu_wsum (the indexer's score, one instruction per tile) and
 * sparse_attention (a program per query: gather, scores, online softmax
 * and the weighted values per block of slots). */
#include <math.h>

#include "core/tiler.h"

/* Views of a matmul's operands as stored untransposed: A [.., M, K] and
 * B [.., K, N] (a transposed operand is read through swapped strides). */
static void matmul_views(const pto_node *n, view4 *a, view4 *b) {
  *a = view_of(n->in[0]);
  *b = view_of(n->in[1]);
  if (n->flags & PTO_MATMUL_TRANS_A) {
    int64_t s = a->shape[2]; a->shape[2] = a->shape[3]; a->shape[3] = s;
    s = a->stride[2]; a->stride[2] = a->stride[3]; a->stride[3] = s;
  }
  if (n->flags & PTO_MATMUL_TRANS_B) {
    int64_t s = b->shape[2]; b->shape[2] = b->shape[3]; b->shape[3] = s;
    s = b->stride[2]; b->stride[2] = b->stride[3]; b->stride[3] = s;
  }
}

/* pto_matmul_relu_wsum: one cube unit per output tile of tr rows (tr * G
 * rows of A) by tn cols over all of K, computed by TMATMUL_RELU_WSUM. With
 * the causal mask, a tile the diagonal crosses passes it to the
 * instruction (in the tile's coordinates), one wholly past it is filled
 * with -inf on the vector core, and one wholly before it has no mask. */
static void tile_matmul_wsum(tiler *t, const pto_node *n,
                             const pto_tile_shape *ts) {
  view4 a, b, w = view_of(n->in[2]), out = view_of(n->out[0]);
  matmul_views(n, &a, &b);
  const int64_t G = n->ival, K = a.shape[3];
  const int causal = (n->flags & PTO_MATMUL_CAUSAL) != 0;
  uint32_t tm = clamp_tile(ts->cube_m, a.shape[2]);
  uint32_t tr = tm / G ? (uint32_t)(tm / G) : 1; /* whole groups */
  uint32_t tn = clamp_tile(ts->cube_n, out.shape[3]);
  FOR_TILES(out.shape, tr, tn, pos) {
    const double first_hidden = (double)pos.r0 + n->scalar + 1; /* row r0 */
    if (causal && (double)pos.c0 > (double)(pos.r0 + pos.nr - 1) + n->scalar) {
      unit_begin(t, n->id, PTO_CORE_VECTOR); /* nothing visible */
      uint32_t v = new_val(t, PTO_F32, tr, tn, pos.nr, pos.nc);
      pto_tinst *ins = emit(t, PTO_OP_TEXPANDS);
      ins->dst[0] = v;
      ins->s = -INFINITY;
      pto_gref g = window(&out, &pos);
      store(t, v, &g);
      unit_end(t);
      continue;
    }
    unit_begin(t, n->id, PTO_CORE_CUBE);
    tpos pa = pos, pb = pos, pw = pos;
    pa.r0 = pos.r0 * G;
    pa.nr = pos.nr * G;
    pa.c0 = 0;
    pa.nc = K;
    pb.r0 = 0;
    pb.nr = K;
    pw = pa;
    pw.nc = 1;
    pto_gref ga = window(&a, &pa), gb = window(&b, &pb), gw = window(&w, &pw);
    uint32_t va = load(t, &ga, tr * (uint32_t)G, (uint32_t)K);
    uint32_t vb = load(t, &gb, (uint32_t)K, tn);
    uint32_t vw = load(t, &gw, tr * (uint32_t)G, 1);
    uint32_t d = new_val(t, PTO_F32, tr, tn, pos.nr, pos.nc);
    pto_tinst *ins = emit(t, PTO_OP_TMATMUL_RELU_WSUM);
    ins->src[0] = va;
    ins->src[1] = vb;
    ins->src[2] = vw;
    ins->dst[0] = d;
    /* the mask only where the diagonal crosses the tile: row r0 hides
     * cols from first_hidden on */
    if (causal && (double)(pos.c0 + pos.nc) > first_hidden) {
      ins->flags |= PTO_TF_CAUSAL;
      ins->s = n->scalar + (double)(pos.r0 - pos.c0);
    }
    pto_gref g = window(&out, &pos);
    store(t, d, &g);
    unit_end(t);
  }
}

void pto__tile_matmul(tiler *t, const pto_node *n, const pto_tile_shape *ts) {
  if (n->op == PTO_TOP_MATMUL_RELU_WSUM) {
    tile_matmul_wsum(t, n, ts);
    return;
  }
  view4 a, b, out = view_of(n->out[0]);
  matmul_views(n, &a, &b);
  int64_t K = a.shape[3];
  uint32_t tm = clamp_tile(ts->cube_m, out.shape[2]);
  uint32_t tn = clamp_tile(ts->cube_n, out.shape[3]);
  uint32_t tk = clamp_tile(ts->cube_k, K);
  view4 acc_in = n->n_in > 2 ? view_of(n->in[2]) : out;
  FOR_TILES(out.shape, tm, tn, pos) {
    unit_begin(t, n->id, PTO_CORE_CUBE);
    uint32_t c = PTO_NONE;
    if (n->n_in > 2) {
      pto_gref g = window(&acc_in, &pos);
      c = load(t, &g, tm, tn);
    }
    for (int64_t k0 = 0; k0 < K; k0 += tk) {
      int64_t kl = K - k0 < tk ? K - k0 : tk;
      tpos pa = pos, pb = pos;
      pa.c0 = k0;
      pa.nc = kl;
      pb.r0 = k0;
      pb.nr = kl;
      pto_gref ga = window(&a, &pa), gb = window(&b, &pb);
      uint32_t ops[2] = {load(t, &ga, tm, tk), load(t, &gb, tk, tn)};
      uint32_t d = new_val(t, PTO_F32, tm, tn, pos.nr, pos.nc);
      pto_tinst *ins = emit(t, c == PTO_NONE ? PTO_OP_TMATMUL
                                             : PTO_OP_TMATMUL_ACC);
      ins->src[0] = ops[0];
      ins->src[1] = ops[1];
      ins->dst[0] = d;
      if (c != PTO_NONE) { /* accumulates: reads c, writes d in place */
        ins->n_src = 3;
        ins->src[2] = c;
      }
      c = d;
    }
    pto_gref g = window(&out, &pos);
    store(t, c, &g);
    unit_end(t);
  }
}

