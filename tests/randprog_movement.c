/* Random programs (randprog.h): the generator's composites (softmax,
 * topk) and data movement (gather, concat, full and iota), and the views
 * (slice, transpose, reshape). */
#include "tests/randprog_impl.h"

#include <math.h>
#include <string.h>

/* ---- composites and data movement
 * ------------------------------------------------ */

int gen_softmax(gen *g) {
  if (g->c->special)
    return 0;
  int a = pick_val(g, pred_float, NULL);
  if (a < 0)
    return 0;
  rp_val av = *V(g, a);
  int out = new_val(g, PTO_F32, av.nd, av.shape);
  if (g->failed)
    return 0;
  op_step(g, O_SOFTMAX, 1, &a, out);
  rp_val *r = V(g, out);
  double n = (double)av.shape[av.nd - 1];
  r->lo = 0;
  r->hi = 1;
  r->lvl = L_APPROX;
  r->err = expm1(4 * av.err) + (n + 8) * 0x1p-21;
  return 1;
}

int gen_topk(gen *g) {
  int a = pick_val(g, pred_float, NULL);
  if (a < 0)
    return 0;
  rp_val av = *V(g, a);
  int64_t last = av.shape[av.nd - 1];
  int64_t k = chance(g->r, 20)
                  ? last
                  : 1 + (int64_t)pick(g->r, (uint32_t)(last < 40 ? last : 40));
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  shape[av.nd - 1] = k;
  int out = new_val(g, PTO_F32, av.nd, shape);
  int idx = new_val(g, PTO_I32, av.nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_TOPK, 1, &a, out);
  s->out2 = idx;
  s->ival = k;
  holds_values_of(V(g, out), &av);
  rp_val *ri = V(g, idx);
  ri->lo = 0;
  ri->hi = (double)(last - 1);
  ri->lvl = av.lvl == L_APPROX ? L_NOUSE : L_EXACT; /* ties may swap */
  return 1;
}

static int pred_table(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return v->nd == 2;
}
static int pred_index(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const int64_t *D = ctx;
  return v->dt == PTO_I32 && v->nd <= 3 &&
         numel_of(v->nd, v->shape) * *D <= NUMEL_MAX;
}

/* A value of exactly this dtype and shape (pto_gather_else's other). */
typedef struct like_ctx {
  pto_dtype dt;
  int nd;
  const int64_t *shape;
} like_ctx;
static int pred_like(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const like_ctx *l = ctx;
  return v->dt == l->dt && v->nd == l->nd &&
         !memcmp(v->shape, l->shape, (size_t)l->nd * sizeof *l->shape);
}

int gen_gather(gen *g) {
  int t = pick_val(g, pred_table, NULL);
  if (t < 0) {
    int64_t shape[2] = {g->dims[pick(g->r, (uint32_t)g->n_dims)],
                        g->dims[pick(g->r, (uint32_t)g->n_dims)]};
    t = new_input(g, rand_dtype(g), 2, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  rp_val tv = *V(g, t);
  int64_t N = tv.shape[0], D = tv.shape[1];
  unsigned flags = chance(g->r, 30) ? PTO_GATHER_STRICT : 0;
  if (chance(g->r, 25)) /* -1 is padding, strict or not */
    flags |= PTO_GATHER_PAD;
  const double lo_ok = flags & PTO_GATHER_PAD ? -1 : 0;
  int idx = -1;
  if (chance(g->r, 50))
    idx = pick_val(g, pred_index, &D);
  if (idx >= 0 && (flags & PTO_GATHER_STRICT) &&
      (V(g, idx)->lo < lo_ok || V(g, idx)->hi >= (double)N) &&
      chance(g->r, 80))
    flags &= ~(unsigned)PTO_GATHER_STRICT; /* mostly: strict only when
                                              every index is in range */
  if (idx < 0) {
    int nd = 1 + (int)pick(g->r, 3);
    int64_t shape[3];
    for (int d = 0; d < nd; d++)
      shape[d] = d == nd - 1 ? 1 + (int64_t)pick(g->r, 40)
                             : 1 + (int64_t)pick(g->r, 4);
    while (numel_of(nd, shape) * D > NUMEL_MAX && shape[nd - 1] > 1)
      shape[nd - 1] /= 2;
    if (numel_of(nd, shape) * D > NUMEL_MAX)
      return 0;
    const int strict = (flags & PTO_GATHER_STRICT) != 0;
    double lo = strict ? lo_ok : -2, hi = strict ? (double)N - 1 : (double)N + 1;
    idx = new_input(g, PTO_I32, nd, shape, 1, lo, hi);
    if (g->failed)
      return 0;
  }
  rp_val iv = *V(g, idx);
  int64_t shape[4];
  memcpy(shape, iv.shape, (size_t)iv.nd * sizeof *shape);
  shape[iv.nd] = D;
  /* pto_gather_else: the rows of -1 from a value of the result's shape
   * (one computed before, so that it may be fused, or a new input) */
  int other = -1;
  if (chance(g->r, 20)) {
    const like_ctx like = {tv.dt, iv.nd + 1, shape};
    other = pick_val(g, pred_like, &like);
    if (other < 0)
      other = new_input(g, tv.dt, iv.nd + 1, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  int out = new_val(g, tv.dt, iv.nd + 1, shape);
  if (g->failed)
    return 0;
  int in[3] = {t, idx, other};
  rp_step *s = op_step(g, O_GATHER, other < 0 ? 2 : 3, in, out);
  s->flags = flags;
  rp_val *r = V(g, out);
  r->special = tv.special;
  r->lo = fmin(tv.lo, 0);
  r->hi = fmax(tv.hi, 0);
  r->q = tv.q;
  r->lvl = tv.lvl;
  r->err = tv.err;
  if (other >= 0) { /* rows of either, copied */
    const rp_val ov = *V(g, other);
    r->special |= ov.special;
    r->lo = fmin(r->lo, ov.lo);
    r->hi = fmax(r->hi, ov.hi);
    r->q = r->q > ov.q ? r->q : ov.q;
    r->lvl = worst2(&tv, &ov);
    r->err = fmax(r->err, ov.err);
    r->zsign |= ov.zsign;
  }
  return 1;
}

typedef struct cat_ctx {
  const rp_val *a;
  int ax;
} cat_ctx;

static int pred_cat(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const cat_ctx *c = ctx;
  if (v->dt != c->a->dt || v->nd != c->a->nd)
    return 0;
  for (int d = 0; d < v->nd; d++)
    if (d != c->ax && v->shape[d] != c->a->shape[d])
      return 0;
  return 1;
}

int gen_concat(gen *g) {
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  rp_val av = *V(g, a);
  int ax = (int)pick(g->r, (uint32_t)av.nd);
  int n = 1 + (int)pick(g->r, 4);
  int in[MAX_IN] = {a};
  for (int i = 1; i < n; i++) {
    int k = (int)pick(g->r, 4);
    int b = -1;
    if (k == 0)
      b = a;
    else if (k == 1) {
      cat_ctx cc = {&av, ax};
      b = pick_val(g, pred_cat, &cc);
    } else if (k == 2 && av.shape[ax] > 1) {
      int64_t b0 = (int64_t)pick(g->r, (uint32_t)av.shape[ax]);
      b = view_slice(g, a, ax, b0,
                     b0 + 1 +
                         (int64_t)pick(g->r, (uint32_t)(av.shape[ax] - b0)));
    }
    if (b < 0) {
      int64_t shape[4];
      memcpy(shape, av.shape, sizeof shape);
      shape[ax] = 1 + (int64_t)pick(g->r, 9);
      b = new_input(g, av.dt, av.nd, shape, 0, 0, 0);
    }
    if (g->failed)
      return 0;
    in[i] = b;
  }
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  shape[ax] = 0;
  rp_val rv = {0};
  rv.lo = INFINITY;
  rv.hi = -INFINITY;
  for (int i = 0; i < n; i++) {
    const rp_val *v = V(g, in[i]);
    shape[ax] += v->shape[ax];
    rv.lo = fmin(rv.lo, v->lo);
    rv.hi = fmax(rv.hi, v->hi);
    rv.q = v->q > rv.q ? v->q : rv.q;
    rv.lvl = v->lvl > rv.lvl ? v->lvl : rv.lvl;
    rv.err = fmax(rv.err, v->err);
    rv.special |= v->special;
  }
  if (numel_of(av.nd, shape) > NUMEL_MAX)
    return 0;
  int out = new_val(g, av.dt, av.nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_CONCAT, n, in, out);
  s->a0 = chance(g->r, 20) ? ax - av.nd : ax;
  holds_values_of(V(g, out), &rv);
  return 1;
}

int gen_fill(gen *g) {
  int nd;
  int64_t shape[4];
  rand_shape(g, &nd, shape);
  if (chance(g->r, 50)) {
    static const pto_dtype dts[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};
    pto_dtype dt = PICK_OF(g->r, dts);
    static const double vals[] = {0, 1, -2.5, 0.75, 3, -1, 0.5};
    double v = PICK_OF(g->r, vals);
    if (dt == PTO_I32)
      v = nearbyint(v);
    int out = new_val(g, dt, nd, shape);
    if (g->failed)
      return 0;
    rp_step *s = op_step(g, O_FULL, 0, NULL, out);
    s->dt = dt;
    s->nd = nd;
    memcpy(s->shape, shape, sizeof shape);
    s->scalar = v;
    rp_val *r = V(g, out);
    r->lo = r->hi = v;
    r->q = 2;
    r->lvl = L_GRID;
    return 1;
  }
  pto_dtype dt = chance(g->r, 50) ? PTO_I32 : PTO_F32;
  int64_t start = (int64_t)pick(g->r, 40) - 10;
  int out = new_val(g, dt, nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_IOTA, 0, NULL, out);
  s->dt = dt;
  s->nd = nd;
  memcpy(s->shape, shape, sizeof shape);
  s->ival = start;
  rp_val *r = V(g, out);
  r->lo = (double)start;
  r->hi = (double)(start + shape[nd - 1] - 1);
  r->q = 0;
  r->lvl = L_GRID;
  return 1;
}

/* ---- views
 * ---------------------------------------------------------------------- */

/* A view of t made by op: its id, and its step in *step; -1 when the case
 * is full (then no step was added, and the last one must not be touched). */
static int view_of(gen *g, int t, int op, rp_step **step) {
  rp_val tv = *V(g, t);
  int out = new_val(g, tv.dt, tv.nd, tv.shape);
  if (g->failed)
    return -1;
  rp_val *r = V(g, out);
  int keep_id_root = tv.root;
  *r = tv;
  r->root = keep_id_root;
  r->mm = 0;
  r->live = 0;
  r->hidden = g->nn_mode; /* a view the nn stream makes is its own */
  rp_step *s = op_step(g, op, 1, &t, out);
  if (g->failed)
    return -1;
  s->n_in = 1;
  g->c->n_ops--; /* views are not ops */
  *step = s;
  return out;
}

int view_slice(gen *g, int t, int axis, int64_t b0, int64_t e0) {
  rp_val tv = *V(g, t);
  rp_step *s;
  int out = view_of(g, t, O_SLICE, &s);
  if (out < 0)
    return -1;
  rp_val *r = V(g, out);
  for (int d = 0; d < tv.nd; d++) {
    int64_t b = 0, e = tv.shape[d];
    if (d == axis) {
      b = b0;
      e = e0;
    } else if (axis < 0 && chance(g->r, 60) && e > 1) {
      b = (int64_t)pick(g->r, (uint32_t)e);
      e = b + 1 + (int64_t)pick(g->r, (uint32_t)(e - b));
    }
    s->shape[d] = b;
    s->end[d] = e;
    r->off += b * tv.stride[d];
    r->shape[d] = e - b;
  }
  s->nd = tv.nd;
  return out;
}

int view_transpose(gen *g, int t, int a0, int a1) {
  rp_val tv = *V(g, t);
  rp_step *s;
  int out = view_of(g, t, O_TRANSPOSE, &s);
  if (out < 0)
    return -1;
  int x0 = a0 < 0 ? a0 + tv.nd : a0, x1 = a1 < 0 ? a1 + tv.nd : a1;
  s->a0 = a0;
  s->a1 = a1;
  rp_val *r = V(g, out);
  r->shape[x0] = tv.shape[x1];
  r->shape[x1] = tv.shape[x0];
  r->stride[x0] = tv.stride[x1];
  r->stride[x1] = tv.stride[x0];
  return out;
}

static int contiguous(const rp_val *v) {
  int64_t s = 1;
  for (int i = v->nd - 1; i >= 0; i--) {
    if (v->shape[i] != 1 && v->stride[i] != s)
      return 0;
    s *= v->shape[i];
  }
  return 1;
}

static int pred_contig(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return contiguous(v);
}

int gen_view(gen *g) {
  int k = (int)pick(g->r, 3);
  if (k == 0) {
    int t = pick_val(g, NULL, NULL);
    return t >= 0 && view_slice(g, t, -1, 0, 0) >= 0;
  }
  if (k == 1) {
    int t = pick_val(g, NULL, NULL);
    if (t < 0)
      return 0;
    int nd = V(g, t)->nd;
    int a0 = (int)pick(g->r, (uint32_t)nd), a1 = (int)pick(g->r, (uint32_t)nd);
    if (chance(g->r, 20))
      a0 -= nd;
    if (nd >= 2 && a0 == a1 && chance(g->r, 80))
      a1 = (a1 + 1) % nd;
    return view_transpose(g, t, a0, a1) >= 0;
  }
  int t = pick_val(g, pred_contig, NULL);
  if (t < 0)
    return 0;
  rp_val tv = *V(g, t);
  int64_t n = numel_of(tv.nd, tv.shape), rem = n;
  int nd = 1 + (int)pick(g->r, 4);
  int64_t shape[4];
  for (int d = 0; d < nd - 1; d++) {
    int64_t divs[64];
    int nv = 0;
    for (int64_t x = 1; x * x <= rem && nv < 62; x++)
      if (rem % x == 0) {
        divs[nv++] = x;
        if (x != rem / x)
          divs[nv++] = rem / x;
      }
    shape[d] = divs[pick(g->r, (uint32_t)nv)];
    rem /= shape[d];
  }
  shape[nd - 1] = rem;
  rp_step *s;
  int out = view_of(g, t, O_RESHAPE, &s);
  if (out < 0)
    return 0;
  s->nd = nd;
  memcpy(s->shape, shape, sizeof shape);
  rp_val *r = V(g, out);
  r->nd = nd;
  memcpy(r->shape, shape, sizeof shape);
  int64_t st = 1;
  for (int i = nd - 1; i >= 0; i--) {
    r->stride[i] = st;
    st *= shape[i];
  }
  r->off = tv.off;
  return 1;
}
