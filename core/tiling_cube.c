/* Tiling the cube's ops: matmul (split into accumulating k slices; a
 * masked one skips the tiles past its diagonal and masks those it crosses),
 * matmul_relu_wsum (the indexer's score, one instruction per tile) and
 * sparse_attention (a program per query: scores, online softmax and the
 * weighted values per block of selected rows). */
#include <math.h>

#include "core/tiler.h"

/* Views of a matmul's operands as stored untransposed: A [.., M, K] and
 * B [.., K, N] (a transposed operand is read through swapped strides). */
static void matmul_views(const pto_node *n, view4 *a, view4 *b) {
  *a = view_of(n->in[0]);
  *b = view_of(n->in[1]);
  if (n->flags & PTO_MATMUL_TRANS_A)
    *a = swap_last(*a);
  if (n->flags & PTO_MATMUL_TRANS_B)
    *b = swap_last(*b);
}

/* pto_matmul_relu_wsum: one cube unit per output tile of tr rows (tr * G
 * rows of A) by tn cols over all of K. B stored transposed (the indexer's
 * keys as rows): TMATMUL_RELU_WSUM_G reads the keys' rows where they lie,
 * with A^T (Q^T) loaded; k is never packed or transposed (that copy took
 * 4-16% of the indexer's time, most at decode where each key meets one
 * query). Else TMATMUL_RELU_WSUM on loaded A and B. With the causal mask,
 * a tile the diagonal crosses passes it to the instruction (in the tile's
 * coordinates), one wholly past it is filled with -inf on the vector
 * core, and one wholly before it has no mask. */
static void tile_matmul_wsum(tiler *t, const pto_node *n,
                             const pto_tile_shape *ts) {
  view4 a, b, w = view_of(n->in[2]), out = view_of(n->out[0]);
  matmul_views(n, &a, &b);
  const int64_t G = n->ival, K = a.shape[3];
  const int causal = (n->flags & PTO_MATMUL_CAUSAL) != 0;
  /* a diagonal that moves with the extents: no tile is known wholly past
   * it or before it, so every tile takes the mask */
  const int moves = n->st[0].sign || n->st[1].sign;
  const int in_place = (n->flags & PTO_MATMUL_TRANS_B) != 0;
  const view4 at = swap_last(a), keys = swap_last(b); /* Q^T; k as stored */
  uint32_t tm = clamp_tile(ts->cube_m, a.shape[2]);
  uint32_t tr = tm / G ? (uint32_t)(tm / G) : 1; /* whole groups */
  uint32_t tn = clamp_tile(ts->cube_n, out.shape[3]);
  FOR_TILES(out.shape, tr, tn, pos) {
    const double first_hidden = (double)pos.r0 + n->scalar + 1; /* row r0 */
    if (causal && !moves &&
        (double)pos.c0 > (double)(pos.r0 + pos.nr - 1) + n->scalar) {
      unit_begin(t, n->id, PTO_CORE_VECTOR); /* nothing visible */
      uint32_t v = new_val_clipped(t, PTO_F32, tr, tn, pos.nr, pos.nc,
                                   axis_clip(&out, 2, pos.r0),
                                   axis_clip(&out, 3, pos.c0));
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
    pto_gref gw = window(&w, &pw);
    uint32_t d = new_val_clipped(t, PTO_F32, tr, tn, pos.nr, pos.nc,
                                 axis_clip(&out, 2, pos.r0),
                                 axis_clip(&out, 3, pos.c0));
    pto_tinst *ins;
    if (in_place) {
      tpos pq = pa, pk = pb;
      pq.r0 = 0; /* Q^T: K x tr * G */
      pq.nr = K;
      pq.c0 = pa.r0;
      pq.nc = pa.nr;
      pk.r0 = pos.c0; /* the keys: tn x K */
      pk.nr = pos.nc;
      pk.c0 = 0;
      pk.nc = K;
      pto_gref gq = window(&at, &pq);
      uint32_t vq = load(t, &gq, (uint32_t)K, tr * (uint32_t)G);
      uint32_t vw = load(t, &gw, tr * (uint32_t)G, 1);
      ins = emit(t, PTO_OP_TMATMUL_RELU_WSUM_G);
      ins->src[0] = vq;
      ins->src[1] = vw;
      ins->g = window(&keys, &pk);
    } else {
      pto_gref ga = window(&a, &pa), gb = window(&b, &pb);
      uint32_t va = load(t, &ga, tr * (uint32_t)G, (uint32_t)K);
      uint32_t vb = load(t, &gb, (uint32_t)K, tn);
      uint32_t vw = load(t, &gw, tr * (uint32_t)G, 1);
      ins = emit(t, PTO_OP_TMATMUL_RELU_WSUM);
      ins->src[0] = va;
      ins->src[1] = vb;
      ins->src[2] = vw;
    }
    ins->dst[0] = d;
    /* the mask only where the diagonal crosses the tile: row r0 hides
     * cols from first_hidden on */
    if (causal && (moves || (double)(pos.c0 + pos.nc) > first_hidden)) {
      ins->flags |= PTO_TF_CAUSAL;
      ins->s = n->scalar + (double)(pos.r0 - pos.c0);
      ins->st[0] = n->st[0];
      ins->st[1] = n->st[1];
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
  const int masked = (n->flags & PTO_MATMUL_CAUSAL) != 0;
  FOR_TILES(out.shape, tm, tn, pos) {
    if (masked && (double)pos.c0 > (double)(pos.r0 + pos.nr - 1) + n->scalar) {
      unit_begin(t, n->id, PTO_CORE_VECTOR); /* wholly past the diagonal */
      uint32_t v = new_val_clipped(t, PTO_F32, tm, tn, pos.nr, pos.nc,
                                   axis_clip(&out, 2, pos.r0),
                                   axis_clip(&out, 3, pos.c0));
      pto_tinst *ins = emit(t, PTO_OP_TEXPANDS);
      ins->dst[0] = v;
      ins->s = -INFINITY;
      pto_gref g = window(&out, &pos);
      store(t, v, &g);
      unit_end(t);
      continue;
    }
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
      uint32_t d = new_val_clipped(t, PTO_F32, tm, tn, pos.nr, pos.nc,
                                   axis_clip(&out, 2, pos.r0),
                                   axis_clip(&out, 3, pos.c0));
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
    /* the diagonal crosses the tile: row r0 hides cols from r0 + diag + 1
     * on, masked on the accumulator's way out */
    if (masked && (double)(pos.c0 + pos.nc - 1) > (double)pos.r0 + n->scalar) {
      uint32_t d = compute1(t, PTO_OP_TTRIFILL, PTO_F32, c);
      if (!t->failed) {
        pto_tinst *ins = &t->tg->insts[t->tg->n_insts - 1];
        ins->s = -INFINITY;
        ins->imm[0] = (int32_t)(n->scalar + (double)(pos.r0 - pos.c0));
      }
      c = d;
    }
    pto_gref g = window(&out, &pos);
    store(t, c, &g);
    unit_end(t);
  }
}


/* t as a 4-D view with a unit axis inserted before its dim `at` (0..ndim):
 * [B,S1,T] at 2 is [B,S1,1,T], [B,S2,D] at 1 is [B,1,S2,D]. */
static view4 view_with_unit_axis(const pto_tensor *t, int at) {
  view4 v;
  v.storage = t->root->id;
  v.dtype = t->root->dtype;
  v.off = t->offset;
  for (int d = 0, s = 0; d < 4; d++) {
    const int unit = d == at;
    v.shape[d] = unit ? 1 : t->shape[s];
    v.stride[d] = unit ? 0 : t->stride[s];
    v.dyn[d] = unit ? -1 : t->dyn[s];
    v.dyn_off[d] = unit ? 0 : t->dyn_off[s];
    v.dyn_mul[d] = unit ? 1 : t->dyn_mul[s];
    s += !unit;
  }
  return v;
}

/* sparse_attention: one cube unit per (batch, query, tile of th heads),
 * over all dv output columns; per block of kb slots, S^T = G Q^T with the
 * selected rows G read where they lie in kv (TMATMUL_GA; Q^T packed once
 * per unit), an online softmax step on the transposed scores (the running
 * max and sum) and O = alpha O + P V with V read in place too
 * (TMATMUL_GB); then O / l and the log-sum-exp, stored. No copy of a
 * selected row exists, in global or local memory. */
static void tile_attention(tiler *t, const pto_node *n,
                           const pto_tile_shape *ts) {
  const pto_tensor *q = n->in[0], *kv = n->in[1], *ix = n->in[2];
  const int64_t H = q->shape[2], D = q->shape[3], S2 = kv->shape[1],
                T = ix->shape[2], dv = n->ival;
  const view4 out = view_of(n->out[0]), vqt = swap_last(view_of(q));
  /* indices [B,S1,1,T], kv [B,1,S2,D], lse [B,S1,H,1] */
  const view4 vi = view_with_unit_axis(ix, 2), vk = view_with_unit_axis(kv, 1),
              vl = view_with_unit_axis(n->out[1], 3);
  const uint32_t th = clamp_tile(ts->cube_m, H), kb = clamp_tile(ts->cube_n, T);
  FOR_TILES(out.shape, th, (uint32_t)dv, pos) {
    unit_begin(t, n->id, PTO_CORE_CUBE);
    tpos pq = pos, pk = pos, pl = pos;
    pq.r0 = 0; /* Q^T: D x th */
    pq.nr = D;
    pq.c0 = pos.r0;
    pq.nc = pos.nr;
    pto_gref gq = window(&vqt, &pq);
    const uint32_t Q = load(t, &gq, (uint32_t)D, th);
    pk.r0 = 0;
    pk.nr = S2;
    pk.c0 = 0;
    pk.nc = D;
    const pto_gref table = window(&vk, &pk);
    uint32_t state = PTO_NONE, O = PTO_NONE;
    for (int64_t j0 = 0; j0 < T; j0 += kb) {
      const int64_t nb = T - j0 < kb ? T - j0 : kb;
      tpos pi = pos;
      pi.r0 = 0;
      pi.nr = 1;
      pi.c0 = j0;
      pi.nc = nb;
      pto_gref gi = window(&vi, &pi);
      const uint32_t I = load(t, &gi, 1, kb);
      const uint32_t S = new_val(t, PTO_F32, kb, th, nb, pos.nr);
      pto_tinst *in = emit(t, PTO_OP_TMATMUL_GA);
      in->src[0] = I;
      in->src[1] = Q;
      in->dst[0] = S;
      in->g = table;
      const uint32_t P = smonline_step(t, S, I, th, kb, pos.nr, nb, n->scalar,
                                       (int32_t)S2, &state, &in);
      if (kv->dyn[1] >= 0) { /* the valid rows move with the extents */
        in->it.r = (pto_dref){kv->dyn[1], kv->dyn_off[1], kv->dyn_mul[1]};
        in->it.len = S2;
        in->it.base = S2 < t->p->dims[kv->dyn[1]].max * kv->dyn_mul[1] -
                                  kv->dyn_off[1]
                          ? S2
                          : t->p->dims[kv->dyn[1]].max * kv->dyn_mul[1] -
                                kv->dyn_off[1];
        in->it.sign = 1;
      }
      in->flags |= PTO_TF_TRANS_A;
      const uint32_t O2 = new_val(t, PTO_F32, th, (uint32_t)dv, pos.nr, dv);
      in = emit(t, PTO_OP_TMATMUL_GB);
      in->src[0] = P;
      in->src[1] = I;
      in->dst[0] = O2;
      in->g = table;
      if (O != PTO_NONE) { /* O2 = alpha O + P V, in O's buffer */
        in->n_src = 4;
        in->src[2] = O;
        in->src[3] = state;
        in->flags |= PTO_TF_ACC | PTO_TF_ROWSCALE;
      }
      O = O2;
    }
    uint32_t L;
    const uint32_t Y =
        smonline_final(t, O, state, th, (uint32_t)dv, pos.nr, dv, &L);
    pto_gref go = window(&out, &pos);
    store(t, Y, &go);
    pl.c0 = 0;
    pl.nc = 1;
    pto_gref gl = window(&vl, &pl);
    store(t, L, &gl);
    unit_end(t);
  }
}

void pto__tile_cube(tiler *t, const pto_node *n, const pto_tile_shape *ts) {
  if (n->op == PTO_TOP_SPARSE_ATTENTION)
    tile_attention(t, n, ts);
  else
    pto__tile_matmul(t, n, ts);
}
