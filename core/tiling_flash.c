/* Attention chains as one op per block of queries (flash attention): a
 * matmul of scores, scaled and causally masked, a row softmax and a matmul
 * of the probabilities by values, written as tensor ops the natural way,
 * is recognised (pto__flash_match) and tiled as one cube unit per block of
 * query rows that walks the key blocks with an online softmax
 * (pto__tile_flash): the [M, N] scores never reach memory, and key blocks
 * the mask hides wholly are never computed. */
#include <math.h>
#include <stdint.h>

#include "core/tiler.h"

/* t is a root tensor computed by an op of kind op: that op, else NULL. */
static const pto_node *made_by(const pto_tensor *t, pto_top op) {
  return t && t->root == t && t->producer && t->producer->op == op ? t->producer
                                                                   : NULL;
}

static int is_static(const pto_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->dyn[d] >= 0)
      return 0;
  return 1;
}

/* A fill of -inf. */
static int minus_inf(const pto_tensor *t) {
  const pto_node *f = made_by(t, PTO_TOP_FULL);
  return f && f->scalar == -INFINITY;
}

/* An iota as a linear form of the score's column j and row i: value =
 * cj * j + ci * i + c0 (an iota counts along one axis; of extent 1 there,
 * it is its start). nd: the scores' rank, rows and cols their extents. */
typedef struct lin {
  int64_t cj, ci, c0;
} lin;
static int iota_form(const pto_tensor *t, int nd, int64_t rows, int64_t cols,
                     lin *l) {
  const pto_node *n = made_by(t, PTO_TOP_IOTA);
  if (!n || t->ndim > nd || !is_static(t))
    return 0;
  const int at = nd - t->ndim + n->axis; /* the counting axis, in the scores */
  *l = (lin){0, 0, n->ival};
  if (t->shape[n->axis] == 1)
    return 1;
  if (at == nd - 1 && t->shape[n->axis] == cols)
    l->cj = 1;
  else if (at == nd - 2 && t->shape[n->axis] == rows)
    l->ci = 1;
  else
    return 0;
  return 1;
}

/* A mask that hides score (i, j) where j > i + diag: a compare of iotas
 * counting the columns and the rows (as pto_cmp(iota_cols, iota_rows, GT)
 * writes it, in any of its equivalent forms), selected to -inf where it
 * holds (hidden_if 1) or where it does not (0). */
static int causal_mask(const pto_tensor *cond, int hidden_if, int nd,
                       int64_t rows, int64_t cols, int64_t *diag) {
  const pto_node *c = made_by(cond, PTO_TOP_CMP);
  lin a, b;
  if (!c || !iota_form(c->in[0], nd, rows, cols, &a) ||
      !iota_form(c->in[1], nd, rows, cols, &b))
    return 0;
  /* u = a - b; hidden where u > 0 or u >= 0 (strict), in those terms */
  lin u = {a.cj - b.cj, a.ci - b.ci, a.c0 - b.c0};
  int mode = (int)c->ival, strict;
  if (mode == PTO_CMP_GT || mode == PTO_CMP_GE) {
    strict = mode == PTO_CMP_GT;
  } else if (mode == PTO_CMP_LT || mode == PTO_CMP_LE) {
    u = (lin){-u.cj, -u.ci, -u.c0}; /* a < b: -u > 0 */
    strict = mode == PTO_CMP_LT;
  } else {
    return 0;
  }
  if (!hidden_if) { /* hidden where not (u > 0): -u >= 0 */
    u = (lin){-u.cj, -u.ci, -u.c0};
    strict = !strict;
  }
  /* u = j - i + c0: u > 0 is j > i - c0, u >= 0 is j > i - c0 - 1 */
  if (u.cj != 1 || u.ci != -1)
    return 0;
  *diag = strict ? -u.c0 : -u.c0 - 1;
  return 1;
}

/* The probabilities' tensor pr = softmax(s) over rows, as pto_softmax
 * writes it (e * recip(rowsum(e))) or as a division by the row sum, with
 * e = exp(s - rowmax(s)): s, else NULL. */
static const pto_tensor *softmax_of(const pto_tensor *pr) {
  const pto_tensor *e = NULL, *rs = NULL;
  const pto_node *d;
  if ((d = made_by(pr, PTO_TOP_DIV))) {
    e = d->in[0];
    rs = d->in[1];
  } else if ((d = made_by(pr, PTO_TOP_MUL))) {
    for (int k = 0; k < 2 && !rs; k++) {
      const pto_node *r = made_by(d->in[1 - k], PTO_TOP_RECIP);
      if (r) {
        e = d->in[k];
        rs = r->in[0];
      }
    }
  }
  const pto_node *sum = rs ? made_by(rs, PTO_TOP_ROWSUM) : NULL,
                 *ex = made_by(e, PTO_TOP_EXP);
  if (!sum || !ex || sum->in[0] != e)
    return NULL;
  const pto_node *sub = made_by(ex->in[0], PTO_TOP_SUB);
  const pto_node *mx = sub ? made_by(sub->in[1], PTO_TOP_ROWMAX) : NULL;
  if (!mx || mx->in[0] != sub->in[0])
    return NULL;
  return sub->in[0];
}

int pto__flash_match(const pto_node *n, pto_flash *f) {
  memset(f, 0, sizeof *f);
  if (n->op != PTO_TOP_MATMUL || n->n_in != 2 ||
      (n->flags & ~(unsigned)PTO_MATMUL_TRANS_B))
    return 0;
  const pto_tensor *s = softmax_of(n->in[0]);
  if (!s)
    return 0;
  const int nd = s->ndim;
  if (nd < 2)
    return 0;
  const int64_t rows = s->shape[nd - 2], cols = s->shape[nd - 1];
  double scale = 1;
  int64_t diag = INT64_MAX; /* nothing hidden yet */
  const pto_node *m;
  /* back from the softmax to the scores' matmul: positive scales and
   * causal masks, in any order */
  for (;;) {
    if ((m = made_by(s, PTO_TOP_MULS)) || (m = made_by(s, PTO_TOP_DIVS))) {
      if (!(m->scalar > 0 && isfinite(m->scalar)) || m->st[0].sign ||
          m->st[1].sign)
        return 0;
      scale = m->op == PTO_TOP_MULS ? scale * m->scalar : scale / m->scalar;
      s = m->in[0];
    } else if ((m = made_by(s, PTO_TOP_SELECT))) {
      const int hid_if = minus_inf(m->in[1]) ? 1 : minus_inf(m->in[2]) ? 0 : -1;
      int64_t d;
      if (hid_if < 0 || !causal_mask(m->in[0], hid_if, nd, rows, cols, &d))
        return 0;
      diag = d < diag ? d : diag;
      s = m->in[hid_if ? 2 : 1];
    } else {
      break;
    }
    if (s->ndim != nd || s->shape[nd - 2] != rows || s->shape[nd - 1] != cols)
      return 0;
  }
  if (!(m = made_by(s, PTO_TOP_MATMUL)) || m->n_in != 2 ||
      (m->flags & ~(unsigned)(PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL)))
    return 0;
  if (m->flags & PTO_MATMUL_CAUSAL) {
    if (m->st[0].sign || m->st[1].sign || !(fabs(m->scalar) < 0x1p52))
      return 0;
    const int64_t d = (int64_t)m->scalar;
    diag = d < diag ? d : diag;
  }
  f->q = m->in[0];
  f->k = m->in[1];
  f->v = n->in[1];
  f->k_trans = (m->flags & PTO_MATMUL_TRANS_B) != 0;
  f->v_trans = (n->flags & PTO_MATMUL_TRANS_B) != 0;
  f->scale = scale;
  f->causal = diag < cols - 1;
  f->diag = f->causal ? diag : 0;
  f->scores = m;
  /* f32 and static; every row sees a key (the softmax of a row hidden
   * whole is NaN, which the online softmax would not reproduce); a whole
   * query row of D values and a whole value row in a tile */
  const pto_tensor *const ts[4] = {f->q, f->k, f->v, n->out[0]};
  for (int i = 0; i < 4; i++)
    if (ts[i]->dtype != PTO_F32 || !is_static(ts[i]) || ts[i]->ndim > 4)
      return 0;
  const int64_t D = f->q->shape[f->q->ndim - 1],
                Dv = n->out[0]->shape[n->out[0]->ndim - 1];
  if ((f->causal && f->diag < 0) || D > FLASH_MAX_D || Dv > FLASH_MAX_D)
    return 0;
  return 1;
}

/* ---- tiling ------------------------------------------------------------- */

/* One cube unit per (batch, block of tq query rows), over all Dv output
 * columns: Q^T loaded once; per block of kb keys up to the last one a row
 * of the block sees, the scores transposed, S^T = K Q^T (masked on the
 * accumulator's way out where the diagonal crosses it), an online softmax
 * step (the running max and sum) and O = alpha O + P V; then O / l,
 * stored. Transposed, a key's scores of the block's rows are contiguous:
 * the softmax runs with the query rows as its vector lanes and writes P's
 * A panels with whole vector stores (row-major scores took a scalar store
 * per score into the panels: 29% of the time on a Xeon). */
void pto__tile_flash(tiler *t, const pto_node *n, const pto_flash *f,
                     const pto_tile_shape *ts) {
  const view4 out = view_of(n->out[0]), qt = swap_last(view_of(f->q));
  const view4 k = f->k_trans ? view_of(f->k) : swap_last(view_of(f->k));
  const view4 v = f->v_trans ? swap_last(view_of(f->v)) : view_of(f->v);
  const int64_t D = qt.shape[2], N = k.shape[2], Dv = out.shape[3];
  const uint32_t tq = clamp_tile(ts->cube_m, out.shape[2]),
                 kb = clamp_tile(ts->cube_k, N);
  FOR_TILES(out.shape, tq, (uint32_t)Dv, pos) {
    unit_begin(t, n->id, PTO_CORE_CUBE);
    tpos pq = pos; /* Q^T: D rows, the block's queries as columns */
    pq.r0 = 0;
    pq.nr = D;
    pq.c0 = pos.r0;
    pq.nc = pos.nr;
    pto_gref g = window(&qt, &pq);
    const uint32_t Qt = load(t, &g, (uint32_t)D, tq);
    const uint32_t I = new_val(t, PTO_I32, 1, kb, 1, kb);
    pto_tinst *in = emit(t, PTO_OP_TCI); /* every slot valid */
    in->dst[0] = I;
    /* the last key any row of the block sees */
    const int64_t last = f->causal ? pos.r0 + pos.nr - 1 + f->diag : N - 1;
    uint32_t state = PTO_NONE, O = PTO_NONE;
    for (int64_t j0 = 0; j0 < N && j0 <= last; j0 += kb) {
      const int64_t nb = N - j0 < kb ? N - j0 : kb;
      tpos pk = pos;
      pk.r0 = j0;
      pk.nr = nb;
      pk.c0 = 0;
      pk.nc = D;
      g = window(&k, &pk);
      const uint32_t K = load(t, &g, kb, (uint32_t)D);
      uint32_t S = new_val(t, PTO_F32, kb, tq, nb, pos.nr);
      in = emit(t, PTO_OP_TMATMUL);
      in->src[0] = K;
      in->src[1] = Qt;
      in->dst[0] = S;
      /* the diagonal crosses the block: query r0 + c hides keys j0 + r
       * past r0 + c + diag */
      if (f->causal && j0 + nb - 1 > pos.r0 + f->diag) {
        const uint32_t Sm = compute1(t, PTO_OP_TTRIFILL, PTO_F32, S);
        in = &t->tg->insts[t->tg->n_insts - 1];
        in->s = -INFINITY;
        in->imm[0] = (int32_t)(f->diag + pos.r0 - j0);
        in->flags |= PTO_TF_TRANS_A;
        S = Sm;
      }
      const uint32_t P = smonline_step(t, S, I, tq, kb, pos.nr, nb, f->scale,
                                       (int32_t)kb, &state, &in);
      in->flags |= PTO_TF_TRANS_A;
      tpos pv = pos;
      pv.r0 = j0;
      pv.nr = nb;
      pv.c0 = 0;
      pv.nc = Dv;
      g = window(&v, &pv);
      const uint32_t V = load(t, &g, kb, (uint32_t)Dv);
      const uint32_t O2 = new_val(t, PTO_F32, tq, (uint32_t)Dv, pos.nr, Dv);
      in = emit(t, O == PTO_NONE ? PTO_OP_TMATMUL : PTO_OP_TMATMUL_ACC);
      in->src[0] = P;
      in->src[1] = V;
      in->dst[0] = O2;
      if (O != PTO_NONE) { /* O2 = alpha O + P V, in O's buffer */
        in->n_src = 4;
        in->src[2] = O;
        in->src[3] = state;
        in->flags |= PTO_TF_ROWSCALE;
      }
      O = O2;
    }
    uint32_t L; /* the log-sum-exp: nothing reads it */
    const uint32_t Y =
        smonline_final(t, O, state, tq, (uint32_t)Dv, pos.nr, Dv, &L);
    g = window(&out, &pos);
    store(t, Y, &g);
    unit_end(t);
  }
}
