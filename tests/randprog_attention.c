/* Random programs (randprog.h): the generator's sparse attention
 * (pto_sparse_attention): small shapes, f32 or bf16 q and kv (fresh,
 * existing, or strided views of wider tensors), index rows of distinct
 * valid keys among invalid ones in every pattern (or the top T keys of a
 * score row, as the indexer picks them), a causal mask built from ops as
 * pto_attention builds it, cube tiles that split the heads and the slots
 * unevenly, and what is known of out and lse. */
#include "tests/randprog_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct att_ctx {
  int64_t B, D;
  pto_dtype dt;
} att_ctx;

/* An existing tensor as q or kv: f32 or bf16 of moderate values. */
static int att_operand(const rp_val *v) {
  return (v->dt == PTO_F32 || v->dt == PTO_BF16) && !v->special && mag(v) <= 64;
}

static int pred_att_q(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return v->nd == 4 && att_operand(v) && v->shape[0] <= 2 &&
         v->shape[1] <= 16 && v->shape[2] <= 32 && v->shape[3] <= 128;
}

static int pred_att_kv(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const att_ctx *a = ctx;
  return v->nd == 3 && att_operand(v) && v->dt == a->dt &&
         v->shape[0] == a->B && v->shape[2] == a->D && v->shape[1] <= 128;
}

/* The step that made input id (the last one added). */
static rp_step *input_step(gen *g) {
  return &g->c->steps[g->c->n_steps - 1];
}

/* Indices [B,S1,T] from the top T keys of each row of a fresh score input
 * [B,S1,N], N >= T (keys N > S2 are invalid), as the indexer selects them;
 * their values into ix (topk's order: value descending, then index
 * ascending). The indices' id, or -1. */
static int topk_indices(gen *g, int64_t B, int64_t S1, int64_t T, int64_t S2,
                        int32_t *ix) {
  const int64_t N = T + (int64_t)pick(g->r, (uint32_t)S2 + 4);
  const int64_t sshape[3] = {B, S1, N}, ishape[3] = {B, S1, T};
  int sc = new_input(g, PTO_F32, 3, sshape, 0, 0, 0);
  if (g->failed)
    return -1;
  const rp_step *in = input_step(g);
  float *v = malloc((size_t)(B * S1 * N) * sizeof *v);
  if (!v)
    abort();
  rp_fill(v, PTO_F32, B * S1 * N, in->fill_seed, in->fill_kind, in->fill_q,
          in->fill_lo, in->fill_hi);
  for (int64_t row = 0; row < B * S1; row++) {
    const float *x = v + row * N;
    for (int64_t j = 0; j < N; j++) {
      int64_t rank = 0;
      for (int64_t k = 0; k < N; k++)
        rank += x[k] > x[j] || (x[k] == x[j] && k < j);
      if (rank < T)
        ix[row * T + rank] = (int32_t)j;
    }
  }
  free(v);
  int vals = new_val(g, PTO_F32, 3, ishape);
  int idx = new_val(g, PTO_I32, 3, ishape);
  if (g->failed)
    return -1;
  rp_step *s = op_step(g, O_TOPK, 1, &sc, vals);
  s->out2 = idx;
  s->ival = T;
  holds_values_of(V(g, vals), V(g, sc));
  V(g, idx)->lo = 0;
  V(g, idx)->hi = (double)(N - 1);
  return idx;
}

/* idx with every key j > S2 - S1 + i of query i replaced by -1, as
 * pto_attention's causal mask does: select(cmp(idx, lim), idx, -1) with
 * lim[i] = S2 - S1 + i an iota [1,S1] transposed to [S1,1]. The masked
 * indices' id, or -1. */
static int causal_mask(gen *g, int idx, int64_t S1, int64_t S2) {
  const rp_val iv = *V(g, idx);
  const int64_t row[2] = {1, S1}, one[1] = {1};
  int lim = new_val(g, PTO_I32, 2, row);
  if (g->failed)
    return -1;
  rp_step *s = op_step(g, O_IOTA, 0, NULL, lim);
  s->dt = PTO_I32;
  s->nd = 2;
  memcpy(s->shape, row, sizeof row);
  s->ival = S2 - S1;
  V(g, lim)->lo = (double)(S2 - S1);
  V(g, lim)->hi = (double)(S2 - 1);
  lim = view_transpose(g, lim, chance(g->r, 50) ? 0 : -2, 1);
  int none = new_val(g, PTO_I32, 1, one);
  if (lim < 0 || g->failed)
    return -1;
  s = op_step(g, O_FULL, 0, NULL, none);
  s->dt = PTO_I32;
  s->nd = 1;
  s->shape[0] = 1;
  s->scalar = -1;
  V(g, none)->lo = V(g, none)->hi = -1;
  int m = new_val(g, PTO_I32, 3, iv.shape);
  int out = new_val(g, PTO_I32, 3, iv.shape);
  if (g->failed)
    return -1;
  int flip = chance(g->r, 30); /* lim >= idx */
  int in[3] = {flip ? lim : idx, flip ? idx : lim, 0};
  s = op_step(g, O_CMP, 2, in, m);
  s->a0 = flip ? PTO_CMP_GE : PTO_CMP_LE;
  V(g, m)->lo = 0;
  V(g, m)->hi = 1;
  in[0] = m;
  in[1] = idx;
  in[2] = none;
  op_step(g, O_SELECT, 3, in, out);
  V(g, out)->lo = fmin(iv.lo, -1);
  V(g, out)->hi = iv.hi;
  return out;
}

/* A head tile (cube m) and a slot block (cube n) for H heads and T slots:
 * small ones, ones not dividing them, all of them and more. */
static void attention_tile(gen *g, int64_t H, int64_t T, uint32_t *t) {
  static const uint32_t heads[] = {0, 1, 2, 3, 5, 6, 7, 16};
  static const uint32_t slots[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 32};
  static const uint32_t ks[] = {0, 1, 8};
  uint32_t k = pick(g->r, 10);
  t[0] = k < 8    ? heads[k]
         : k == 8 ? (uint32_t)H
                  : (uint32_t)(H > 1 ? H - 1 : 1);
  k = pick(g->r, 13);
  t[1] = k < 10    ? slots[k]
         : k == 10 ? (uint32_t)T
         : k == 11 ? (uint32_t)(T > 1 ? T - 1 : 1)
                   : (uint32_t)T + 3;
  t[2] = PICK_OF(g->r, ks); /* not used by the op */
}

int gen_attention(gen *g) {
  if (g->c->special)
    return 0;
  rp_src *r = g->r;
  int lab = chance(r, 25) && push_label(g, "attention");
  /* q [B,S1,H,D]: an existing tensor, or fresh, or a transposed view of a
   * fresh [B,H,S1,D] */
  int q = chance(r, 15) ? pick_val(g, pred_att_q, NULL) : -1;
  int64_t B, S1, H, D;
  pto_dtype dt;
  if (q >= 0) {
    const rp_val *v = V(g, q);
    dt = v->dt;
    B = v->shape[0];
    S1 = v->shape[1];
    H = v->shape[2];
    D = v->shape[3];
  } else {
    static const int64_t hs[] = {1, 2,  3,  4,  5,  6,  7,
                                 8, 11, 12, 13, 16, 17, 20};
    dt = chance(r, 65) ? PTO_F32 : PTO_BF16;
    B = 1 + (int64_t)pick(r, 2);
    S1 = 1 + (int64_t)pick(r, 9);
    H = chance(r, 30) ? 1 + (int64_t)pick(r, 20) : PICK_OF(r, hs);
    D = chance(r, 30) ? 1 + (int64_t)pick(r, 8) : 1 + (int64_t)pick(r, 80);
    while (B * S1 * H * D > NUMEL_MAX)
      S1 = (S1 + 1) / 2;
    const int k = (int)pick(r, 8);
    if (k < 2) {
      const int64_t ts[4] = {B, H, S1, D};
      q = new_input(g, dt, 4, ts, 0, 0, 0);
      if (!g->failed)
        q = view_transpose(g, q, 1, chance(r, 50) ? 2 : -2);
    } else if (k == 2) { /* D strided */
      const int64_t ts[4] = {B, S1, D, H};
      q = new_input(g, dt, 4, ts, 0, 0, 0);
      if (!g->failed)
        q = view_transpose(g, q, 2, 3);
    } else {
      const int64_t qs[4] = {B, S1, H, D};
      q = new_input(g, dt, 4, qs, 0, 0, 0);
    }
  }
  if (q < 0 || g->failed)
    return 0;
  /* kv [B,S2,D]: an existing tensor, fresh, a window of a wider one or a
   * transposed [B,D,S2] */
  int64_t S2 =
      chance(r, 35) ? 1 + (int64_t)pick(r, 8) : 1 + (int64_t)pick(r, 70);
  att_ctx ac = {B, D, dt};
  int kv = chance(r, 15) ? pick_val(g, pred_att_kv, &ac) : -1;
  if (kv >= 0) {
    S2 = V(g, kv)->shape[1];
  } else if (chance(r, 25) && B * (S2 + 3) * (D + 4) <= NUMEL_MAX) {
    const int64_t e1 = (int64_t)pick(r, 4), e2 = (int64_t)pick(r, 5),
                  o1 = (int64_t)pick(r, (uint32_t)e1 + 1),
                  o2 = (int64_t)pick(r, (uint32_t)e2 + 1);
    const int64_t ws[3] = {B, S2 + e1, D + e2};
    kv = new_input(g, dt, 3, ws, 0, 0, 0);
    if (!g->failed && e1)
      kv = view_slice(g, kv, 1, o1, o1 + S2);
    if (!g->failed && kv >= 0 && e2)
      kv = view_slice(g, kv, 2, o2, o2 + D);
  } else if (chance(r, 12)) {
    const int64_t ts[3] = {B, D, S2};
    kv = new_input(g, dt, 3, ts, 0, 0, 0);
    if (!g->failed)
      kv = view_transpose(g, kv, 1, 2);
  } else {
    const int64_t ks[3] = {B, S2, D};
    kv = new_input(g, dt, 3, ks, 0, 0, 0);
  }
  if (kv < 0 || g->failed)
    return 0;
  /* T slots per query, more than S2 at times */
  const int64_t T = chance(r, 20) && S2 < 40
                        ? S2 + 1 + (int64_t)pick(r, (uint32_t)(40 - S2))
                        : 1 + (int64_t)pick(r, 40);
  const int64_t dv = chance(r, 30) ? D : 1 + (int64_t)pick(r, (uint32_t)D);
  const double scales[] = {
      1 / sqrt((double)D), 1, 0.5, 0.125, 0.0625, 0, -0.25, 0.135234, 2};
  const double scale = PICK_OF(r, scales);
  int32_t *ix = malloc((size_t)(B * S1 * T) * sizeof *ix);
  if (!ix)
    abort();
  int idx;
  if (chance(r, 15)) {
    idx = topk_indices(g, B, S1, T, S2, ix);
  } else {
    /* rows of Tw >= T slots, at times a window of T of them (strided) */
    const int64_t e = chance(r, 15) ? 1 + (int64_t)pick(r, 5) : 0,
                  o = (int64_t)pick(r, (uint32_t)e + 1), Tw = T + e;
    const int64_t is[3] = {B, S1, Tw};
    idx = new_input(g, PTO_I32, 3, is, 1, -1, (double)S2 - 1);
    if (!g->failed) {
      rp_step *s = input_step(g);
      const int pat = (int)pick(r, 5);
      s->fill_kind = RP_FILL_INDEX;
      s->fill_q = pat;
      s->fill_lo = (double)Tw;
      s->fill_hi = (double)S2;
      if (pat != 0 && pat != 2) {
        V(g, idx)->lo = INT32_MIN;
        V(g, idx)->hi = INT32_MAX;
      }
      int32_t *w = malloc((size_t)(B * S1 * Tw) * sizeof *w);
      if (!w)
        abort();
      rp_fill(w, PTO_I32, B * S1 * Tw, s->fill_seed, RP_FILL_INDEX, pat,
              (double)Tw, (double)S2);
      for (int64_t row = 0; row < B * S1; row++)
        memcpy(ix + row * T, w + row * Tw + o, (size_t)T * sizeof *ix);
      free(w);
      if (e)
        idx = view_slice(g, idx, 2, o, o + T);
    }
  }
  const int causal = chance(r, 30);
  if (!g->failed && idx >= 0 && causal) {
    int mask = chance(r, 50) && push_label(g, "mask");
    idx = causal_mask(g, idx, S1, S2);
    if (mask)
      pop_label(g);
  }
  if (idx < 0 || g->failed) {
    free(ix);
    return 0;
  }
  /* which queries have no valid key: their lse is +inf */
  int any_empty = 0;
  for (int64_t row = 0; row < B * S1; row++) {
    const int64_t last = causal ? S2 - S1 + row % S1 : S2 - 1;
    int64_t nv = 0;
    for (int64_t t = 0; t < T; t++) {
      const int64_t j = ix[row * T + t];
      nv += j >= 0 && j < S2 && j <= last;
    }
    any_empty |= nv == 0;
  }
  free(ix);
  int tiled = chance(r, 60) && g->n_tiles < 4 && !g->c->untiled;
  if (tiled) {
    rp_step *s = add_step(g, S_PUSH_TILE);
    s->has_tile = 1;
    attention_tile(g, H, T, s->tile + 2);
    g->n_tiles++;
  }
  const int64_t os[4] = {B, S1, H, dv};
  int out = new_val(g, PTO_F32, 4, os);
  int lse = new_val(g, PTO_F32, 3, os);
  if (g->failed)
    return 0;
  int in[3] = {q, kv, idx};
  rp_step *s = op_step(g, O_ATTENTION, 3, in, out);
  s->out2 = lse;
  s->ival = dv;
  s->scalar = scale;
  if (tiled) {
    add_step(g, S_POP_TILE);
    g->n_tiles--;
  }
  if (lab)
    pop_label(g);
  /* Scores x = scale q.k: |x| <= |scale| S, S = D max|q| max|kv|, and the
   * runs' scores differ by ex at most: the inputs' errors, the f32 dot
   * product (exact when every partial sum is on the inputs' grid), scale
   * rounded to f32 and the product. Moving every score by ex at most moves
   * each softmax weight by a factor within e^(+-2 ex); f32 exp, sums and
   * the online softmax's rescaling add a relative error within a few ulp
   * per slot. out is a weighted average of value rows (0 for a query
   * without keys): within max|kv| (expm1(2 ex) + rel) + the values' error;
   * lse = max x + ln(sum), within ex + rel. */
  const rp_val qv = *V(g, q), kvv = *V(g, kv);
  const double sc = fabs(scale), mq = mag(&qv), mk = mag(&kvv), Dd = (double)D,
               S = Dd * mq * mk;
  const int dot_exact = qv.lvl == L_GRID && kvv.lvl == L_GRID &&
                        grid_fits(S, qv.q + kvv.q, PTO_F32);
  int scale_exp;
  const int scale_exact = scale == 0 || fabs(frexp(scale, &scale_exp)) == 0.5;
  double ex = sc * Dd * (qv.err * mk + kvv.err * mq + qv.err * kvv.err);
  if (!dot_exact)
    ex += 2 * (Dd + 2) * 0x1p-24 * S * sc;
  if (!dot_exact || !scale_exact)
    ex += 2 * 0x1p-24 * S * sc;
  const double rel = (4 * (double)T + 16) * 0x1p-22, w = expm1(2 * ex);
  rp_val *ro = V(g, out);
  double err = mk * (w + rel) + kvv.err * (1 + w);
  ro->lo = (any_empty ? fmin(kvv.lo, 0) : kvv.lo) - err;
  ro->hi = (any_empty ? fmax(kvv.hi, 0) : kvv.hi) + err;
  ro->zsign = 1;
  settle(ro, 0, 0, L_APPROX, err);
  rp_val *rl = V(g, lse);
  err = ex + rel + 8 * 0x1p-24 * log((double)T + 1);
  rl->lo = -sc * S - err;
  rl->hi = sc * S + log((double)T) + err;
  rl->zsign = 1;
  settle(rl, 0, 0, L_APPROX, err);
  rl->posinf = any_empty;
  if (any_empty && rl->lvl != L_NOUSE && chance(r, 35)) {
    /* lse clamped to C above every finite value: +inf becomes C exactly in
     * both runs, and the result can be an operand */
    const double C = rl->hi < 1 ? 1 : ldexp(1, ilogb(rl->hi) + 1);
    const rp_val lv = *rl;
    int cl = new_val(g, PTO_F32, 3, os);
    if (g->failed)
      return 1;
    op_step(g, O_MINS, 1, &lse, cl)->scalar = C;
    rp_val *rc = V(g, cl);
    rc->lo = lv.lo;
    rc->hi = C;
    rc->lvl = L_APPROX;
    rc->err = lv.err;
    rc->zsign = 1;
  }
  return 1;
}
