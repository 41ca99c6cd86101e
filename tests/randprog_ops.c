/* Random programs (randprog.h): the generator's element-wise ops, casts,
 * compare and select, and reductions, each with what is known of its
 * result's values. */
#include "tests/randprog_impl.h"

#include <math.h>
#include <string.h>

/* ---- ops
 * ---------------------------------------------------------------------- */

rp_step *op_step(gen *g, int op, int n_in, const int *in, int out) {
  rp_step *s = add_step(g, S_OP);
  s->op = op;
  s->n_in = n_in;
  for (int i = 0; i < n_in; i++) {
    s->in[i] = in[i];
    V(g, out)->zsign |= V(g, in[i])->zsign;
  }
  s->out = out;
  g->c->n_ops++;
  return s;
}

/* numpy broadcast of two shapes; 0 when they do not. */
int bcast(int na, const int64_t *a, int nb, const int64_t *b, int *nr,
          int64_t *r) {
  int n = na > nb ? na : nb;
  for (int d = 0; d < n; d++) {
    int ia = na - n + d, ib = nb - n + d;
    int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return 0;
    r[d] = x > y ? x : y;
  }
  *nr = n;
  return 1;
}

/* Unary value-preserving op on the tracker. */
static int make_unary_like(gen *g, int op, int a, pto_dtype dt) {
  rp_val av = *V(g, a);
  int out = new_val(g, dt, av.nd, av.shape);
  if (g->failed)
    return a;
  op_step(g, op, 1, &a, out);
  rp_val *r = V(g, out);
  r->special = av.special;
  r->q = av.q;
  return out;
}

static int do_scalar(gen *g, int op, int a, double s);
static void track_unary(gen *g, int op, int a, int out);

/* clamp a float tensor into [-C, C] (exact: keeps GRID and error bound) */
int guard_clamp(gen *g, int a, double C) {
  if (V(g, a)->special || mag(V(g, a)) <= C)
    return a;
  return do_scalar(g, O_MINS, do_scalar(g, O_MAXS, a, -C), C);
}

/* a tensor whose values (in both runs) are >= minv > 0 */
static int guard_pos(gen *g, int a, double minv) {
  if (V(g, a)->special || V(g, a)->lo >= minv)
    return a;
  static const double cs[] = {0.25, 0.5, 1, 2, 4};
  double c = minv;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    if (cs[i] >= minv) {
      c = cs[i];
      break;
    }
  if (chance(g->r, 50) || V(g, a)->err > 0.1)
    return do_scalar(g, O_MAXS, a, c);
  return do_scalar(g, O_ADDS, do_unary(g, O_ABS, a), c);
}

int do_unary(gen *g, int op, int a) {
  const rp_val *av = V(g, a);
  if (!av->special) {
    if (op == O_EXP)
      a = guard_clamp(g, a, chance(g->r, 50) ? 4 : 8);
    else if (op == O_LOG || op == O_RSQRT || op == O_RECIP)
      a = guard_pos(g, a, 0.25);
    else if (op == O_SQRT)
      a = guard_pos(g, a, chance(g->r, 70) ? 0.25 : 0);
  }
  pto_dtype dt = V(g, a)->dt == PTO_I32 ? PTO_I32 : PTO_F32;
  int out = make_unary_like(g, op, a, dt);
  if (out != a)
    track_unary(g, op, a, out);
  return out;
}

static void track_unary(gen *g, int op, int a, int out) {
  rp_val av = *V(g, a), *r = V(g, out);
  double lo = av.lo, hi = av.hi, e = av.err;
  int exact = 1, grid = 1;
  double err = e;
  switch (op) {
  case O_ABS:
    r->lo = lo >= 0 ? lo : hi <= 0 ? -hi : 0;
    r->hi = fmax(fabs(lo), fabs(hi));
    if (av.dt == PTO_I32 && lo <= INT32_MIN)
      r->lo = INT32_MIN; /* abs(INT32_MIN) wraps */
    break;
  case O_NEG:
    r->lo = -hi;
    r->hi = -lo;
    if (av.dt == PTO_I32)
      i32_clip(r);
    break;
  case O_RELU:
    r->lo = fmax(lo, 0);
    r->hi = fmax(hi, 0);
    break;
  case O_EXP:
    r->lo = exp(lo);
    r->hi = exp(hi);
    exact = grid = 0;
    err = r->hi * expm1(e) + 8 * U * r->hi;
    break;
  case O_LOG:
    r->lo = log(lo);
    r->hi = log(hi);
    exact = grid = 0;
    err = e / (lo - e > 0 ? lo - e : 1e-30) +
          8 * U * fmax(fabs(r->lo), fabs(r->hi));
    break;
  case O_SQRT:
    r->lo = sqrt(fmax(lo, 0));
    r->hi = sqrt(fmax(hi, 0));
    grid = 0;
    err = lo > 0 ? e / (2 * sqrt(lo)) : sqrt(e);
    break;
  case O_RSQRT:
    r->lo = 1 / sqrt(hi);
    r->hi = 1 / sqrt(lo);
    exact = grid = 0;
    err = 0.5 * e * pow(lo - e > 0 ? lo - e : 1e-30, -1.5) + 8 * U * r->hi;
    break;
  case O_RECIP:
    r->lo = 1 / hi;
    r->hi = 1 / lo;
    grid = 0;
    err = e / (lo * (lo - e > 0 ? lo - e : 1e-30));
    break;
  }
  settle(r, grid, exact, av.lvl, err);
}

/* tensor-scalar ops; the scalar is rounded to f32 (i32: to an integer) */
static int do_scalar(gen *g, int op, int a, double s) {
  rp_val av = *V(g, a);
  pto_dtype dt = av.dt == PTO_I32 ? PTO_I32 : PTO_F32;
  int out = new_val(g, dt, av.nd, av.shape);
  if (g->failed)
    return a;
  rp_step *st = op_step(g, op, 1, &a, out);
  st->scalar = s;
  rp_val *r = V(g, out);
  r->special = av.special;
  double sv = dt == PTO_I32 ? nearbyint(s) : (double)(float)s;
  /* grid of the scalar: fraction bits, if it is dyadic with few */
  int qs = -1;
  for (int k = 0; k <= 8 && qs < 0; k++)
    if (ldexp(sv, k) == nearbyint(ldexp(sv, k)) && fabs(ldexp(sv, k)) < 4096)
      qs = k;
  double lo = av.lo, hi = av.hi, e = av.err;
  int grid = qs >= 0, exact = 1;
  double err = e;
  switch (op) {
  case O_ADDS:
  case O_SUBS: {
    double t = op == O_ADDS ? sv : -sv;
    r->lo = lo + t;
    r->hi = hi + t;
    r->q = av.q > qs ? av.q : qs;
    break;
  }
  case O_MULS:
    r->lo = fmin(lo * sv, hi * sv);
    r->hi = fmax(lo * sv, hi * sv);
    r->q = av.q + qs;
    err = e * fabs(sv);
    break;
  case O_DIVS:
    if (dt == PTO_I32) {
      double m = fmax(fabs(lo), fabs(hi));
      r->lo = sv == 0 ? 0 : -m;
      r->hi = sv == 0 ? 0 : m;
      r->lo = fmin(r->lo, 0);
      if (lo <= INT32_MIN)
        r->hi = fmax(r->hi, -(double)INT32_MIN); /* wraps: clip below */
      break;
    }
    r->lo = fmin(lo / sv, hi / sv);
    r->hi = fmax(lo / sv, hi / sv);
    {
      int e2;
      double fr = frexp(fabs(sv), &e2);
      grid = fr == 0.5;
      r->q = av.q + (e2 - 1) > 0 ? av.q + (e2 - 1) : 0;
    }
    err = e / fabs(sv);
    break;
  case O_MAXS:
    r->lo = fmax(lo, sv);
    r->hi = fmax(hi, sv);
    r->q = av.q > qs ? av.q : qs;
    break;
  default: /* O_MINS */
    r->lo = fmin(lo, sv);
    r->hi = fmin(hi, sv);
    r->q = av.q > qs ? av.q : qs;
    break;
  }
  if (dt == PTO_I32) {
    if (op == O_MULS || op == O_ADDS || op == O_SUBS)
      i32_clip(r);
    if (op == O_DIVS && (r->lo < INT32_MIN || r->hi > INT32_MAX))
      i32_clip(r);
  }
  settle(r, grid, exact, av.lvl, err);
  return out;
}

static const double scalars[] = {-3,  -2,  -1.5, -1,  -0.5,        -0.25, 0.25,
                                 0.5, 1,   1.5,  2,   3,           4,     0.125,
                                 0,   0.1, -7,   1e3, 0.3333333333};

int gen_scalar_op(gen *g) {
  static const int ops[] = {O_ADDS, O_SUBS, O_MULS, O_DIVS, O_MAXS, O_MINS};
  int op = PICK_OF(g->r, ops);
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  double s = PICK_OF(g->r, scalars);
  const rp_val *av = V(g, a);
  if (op == O_DIVS && s == 0 && !av->special && av->dt != PTO_I32)
    s = 2;
  if (op == O_MULS && !av->special && mag(av) * fabs(s) > 1e6)
    s = 0.5;
  if (op == O_ADDS && !av->special && mag(av) > 1e8)
    op = O_MINS;
  do_scalar(g, op, a, s);
  return 1;
}

int gen_unary(gen *g) {
  static const int ops[] = {O_EXP,   O_LOG,  O_SQRT, O_RSQRT,
                            O_RECIP, O_RELU, O_ABS,  O_NEG};
  int op = PICK_OF(g->r, ops);
  int int_ok = op == O_RELU || op == O_ABS || op == O_NEG;
  int a = pick_val(g, int_ok ? NULL : pred_float, NULL);
  if (a < 0)
    return 0;
  if (g->c->special && (op == O_EXP || op == O_LOG || op == O_RSQRT))
    op = O_SQRT; /* inexact ops have no bit-exact answer at specials */
  do_unary(g, op, a);
  return 1;
}

/* binary element-wise ops and cmp/select: the second operand broadcasts */
typedef struct bin_ctx {
  const rp_val *a;
  int need_exact;
} bin_ctx;

static int pred_bin(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const bin_ctx *b = ctx;
  int nr;
  int64_t r[4];
  if (is_float(v->dt) != is_float(b->a->dt))
    return 0;
  if (b->need_exact && v->lvl == L_APPROX)
    return 0;
  if (!bcast(b->a->nd, b->a->shape, v->nd, v->shape, &nr, r))
    return 0;
  return numel_of(nr, r) <= NUMEL_MAX;
}

/* a second operand for a: itself, a broadcast-compatible tensor, a row or
 * column reduction of a, or a new input of a compatible shape */
static int second_operand(gen *g, int a, int need_exact) {
  const rp_val *av = V(g, a);
  int k = (int)pick(g->r, 10);
  if (k < 2)
    return a;
  if (k < 6) {
    bin_ctx ctx = {av, need_exact};
    int b = pick_val(g, pred_bin, &ctx);
    if (b >= 0)
      return b;
  }
  int nd = av->nd;
  int64_t shape[4];
  memcpy(shape, av->shape, sizeof shape);
  int kind = (int)pick(g->r, 5);
  if (kind == 0 && nd >= 1)
    shape[nd - 1] = 1; /* row vector [.., M, 1] */
  else if (kind == 1 && nd >= 2)
    shape[nd - 2] = 1;             /* column vector [.., 1, N] */
  else if (kind == 2 && nd >= 2) { /* fewer dims */
    int drop = 1 + (int)pick(g->r, (uint32_t)nd - 1);
    memmove(shape, shape + drop, (size_t)(nd - drop) * sizeof *shape);
    nd -= drop;
  } else if (kind == 3) {
    for (int d = 0; d < nd; d++)
      if (chance(g->r, 30))
        shape[d] = 1;
  }
  pto_dtype dt = is_float(av->dt) ? (chance(g->r, 80)   ? PTO_F32
                                     : chance(g->r, 50) ? PTO_BF16
                                                        : PTO_F16)
                                  : PTO_I32;
  return new_input(g, dt, nd, shape, 0, 0, 0);
}

int do_binary(gen *g, int op, int a, int b) {
  const rp_val *av0 = V(g, a), *bv0 = V(g, b);
  if (!av0->special && !bv0->special && is_float(av0->dt)) {
    if (op == O_DIV)
      b = guard_pos(g, b, 0.25);
    if (op == O_MUL && mag(V(g, a)) * mag(V(g, b)) > 1e6) {
      a = guard_clamp(g, a, 64);
      b = guard_clamp(g, b, 64);
    }
  }
  rp_val av = *V(g, a), bv = *V(g, b);
  int nd;
  int64_t shape[4];
  if (!bcast(av.nd, av.shape, bv.nd, bv.shape, &nd, shape))
    return -1;
  pto_dtype dt = is_float(av.dt) ? PTO_F32 : PTO_I32;
  int out = new_val(g, dt, nd, shape);
  if (g->failed)
    return -1;
  int in[2] = {a, b};
  op_step(g, op, 2, in, out);
  rp_val *r = V(g, out);
  r->special = av.special || bv.special;
  double ma = mag(&av), mb = mag(&bv), ea = av.err, eb = bv.err;
  double p[4] = {av.lo * bv.lo, av.lo * bv.hi, av.hi * bv.lo, av.hi * bv.hi};
  int grid = 1;
  double err = 0;
  r->q = av.q > bv.q ? av.q : bv.q;
  switch (op) {
  case O_ADD:
    r->lo = av.lo + bv.lo;
    r->hi = av.hi + bv.hi;
    err = ea + eb;
    break;
  case O_SUB:
    r->lo = av.lo - bv.hi;
    r->hi = av.hi - bv.lo;
    err = ea + eb;
    break;
  case O_MUL:
    r->lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
    r->hi = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
    r->q = av.q + bv.q;
    err = ea * mb + eb * ma + ea * eb;
    break;
  case O_DIV:
    if (dt == PTO_I32) {
      r->lo = -fmax(ma, 0);
      r->hi = fmax(ma, 0);
      if (av.lo <= INT32_MIN)
        i32_clip(r);
      break;
    }
    grid = 0;
    r->lo = fmin(fmin(av.lo / bv.lo, av.lo / bv.hi),
                 fmin(av.hi / bv.lo, av.hi / bv.hi));
    r->hi = fmax(fmax(av.lo / bv.lo, av.lo / bv.hi),
                 fmax(av.hi / bv.lo, av.hi / bv.hi));
    err = (ea + fmax(fabs(r->lo), fabs(r->hi)) * eb) /
          (bv.lo - eb > 0 ? bv.lo - eb : 1e-30);
    break;
  case O_MAX:
    r->lo = fmax(av.lo, bv.lo);
    r->hi = fmax(av.hi, bv.hi);
    err = fmax(ea, eb);
    break;
  default: /* O_MIN */
    r->lo = fmin(av.lo, bv.lo);
    r->hi = fmin(av.hi, bv.hi);
    err = fmax(ea, eb);
    break;
  }
  if (dt == PTO_I32)
    i32_clip(r);
  settle(r, grid, 1, worst2(&av, &bv), err);
  return out;
}

int gen_binary(gen *g) {
  static const int ops[] = {O_ADD, O_SUB, O_MUL, O_DIV, O_MAX, O_MIN};
  int op = PICK_OF(g->r, ops);
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  int b = second_operand(g, a, 0);
  if (g->failed)
    return 0;
  if (chance(g->r, 50)) {
    int t = a;
    a = b;
    b = t;
  }
  return do_binary(g, op, a, b) >= 0;
}

static int pred_exact(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return v->lvl != L_APPROX;
}

int gen_cmp_select(gen *g) {
  int a = pick_val(g, pred_exact, NULL);
  if (a < 0)
    return 0;
  int b = second_operand(g, a, 1);
  if (g->failed)
    return 0;
  rp_val av = *V(g, a), bv = *V(g, b);
  int nd;
  int64_t shape[4];
  if (!bcast(av.nd, av.shape, bv.nd, bv.shape, &nd, shape))
    return 0;
  int m = new_val(g, PTO_I32, nd, shape);
  if (g->failed)
    return 0;
  int in[3] = {a, b, 0};
  rp_step *s = op_step(g, O_CMP, 2, in, m);
  s->a0 = (int)pick(g->r, PTO_CMP_MODE_COUNT);
  V(g, m)->lo = 0;
  V(g, m)->hi = 1;
  if (chance(g->r, 25))
    return 1;
  /* select between two tensors of one class, broadcast with the mask */
  int x = pick_val(g, NULL, NULL);
  if (x < 0)
    return 1;
  int y = second_operand(g, x, 0);
  if (g->failed)
    return 0;
  rp_val xv = *V(g, x), yv = *V(g, y), mv = *V(g, m);
  int nd2, nd3;
  int64_t s2[4], s3[4];
  if (!bcast(xv.nd, xv.shape, yv.nd, yv.shape, &nd2, s2) ||
      !bcast(nd2, s2, mv.nd, mv.shape, &nd3, s3) ||
      numel_of(nd3, s3) > NUMEL_MAX) {
    /* the mask alone does not broadcast: select with the mask's shape */
    x = m;
    y = chance(g->r, 50) ? m : new_input(g, PTO_I32, mv.nd, mv.shape, 0, 0, 0);
    xv = *V(g, x);
    yv = *V(g, y);
    nd3 = mv.nd;
    memcpy(s3, mv.shape, sizeof s3);
  }
  pto_dtype dt = is_float(xv.dt) ? PTO_F32 : PTO_I32;
  int out = new_val(g, dt, nd3, s3);
  if (g->failed)
    return 0;
  in[0] = m;
  in[1] = x;
  in[2] = y;
  op_step(g, O_SELECT, 3, in, out);
  rp_val *r = V(g, out);
  r->special = xv.special || yv.special;
  r->lo = fmin(xv.lo, yv.lo);
  r->hi = fmax(xv.hi, yv.hi);
  r->q = xv.q > yv.q ? xv.q : yv.q;
  r->lvl = worst2(&xv, &yv);
  r->err = fmax(xv.err, yv.err);
  if (r->dt == PTO_I32 || r->special) {
    r->lvl = L_EXACT;
    r->err = 0;
  }
  return 1;
}

int gen_cast(gen *g) {
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  static const pto_dtype dts[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};
  pto_dtype to = PICK_OF(g->r, dts);
  const rp_val av = *V(g, a); /* a copy: guard_clamp may move the values */
  if (av.lvl == L_APPROX && to == PTO_I32)
    to = PTO_BF16; /* a rounding boundary may fall between the runs */
  if (to == PTO_F16 && !av.special && is_float(av.dt))
    a = guard_clamp(g, a, 60000);
  if (to == PTO_F16 && !is_float(av.dt) && mag(&av) > 60000) {
    a = do_scalar(g, O_MINS, do_scalar(g, O_MAXS, a, -60000), 60000);
  }
  rp_val src = *V(g, a);
  int out = new_val(g, to, src.nd, src.shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_CAST, 1, &a, out);
  s->dt = to;
  rp_val *r = V(g, out);
  r->special = src.special && to != PTO_I32;
  r->lo = src.lo;
  r->hi = src.hi;
  r->q = src.q;
  if (to == PTO_I32) {
    r->lo = src.special ? INT32_MIN : fmax(nearbyint(src.lo), INT32_MIN);
    r->hi = src.special ? INT32_MAX : fmin(nearbyint(src.hi), INT32_MAX);
    r->lvl = L_EXACT;
    return 1;
  }
  if (r->special) {
    r->lvl = L_EXACT;
    return 1;
  }
  if (src.dt == PTO_I32) {
    r->q = 0;
    settle(r, 1, 1, L_GRID, 0);
    if (r->lvl != L_GRID) { /* an f32 of a big i32: EXACT */
      r->lvl = L_EXACT;
      r->err = 0;
    }
    return 1;
  }
  double m = mag(&src);
  if (to == PTO_F32 || (src.lvl == L_GRID && grid_fits(m, src.q, to))) {
    /* the values are representable: unchanged */
    r->lvl = src.lvl;
    r->err = src.err;
    return 1;
  }
  double rel = to == PTO_BF16 ? 0x1p-8 : 0x1p-11;
  double step = to == PTO_F16 ? 0x1p-24 : 0;
  r->lo = src.lo - rel * m - step;
  r->hi = src.hi + rel * m + step;
  if (src.lvl == L_APPROX) {
    r->lvl = L_APPROX;
    r->err = src.err + 2 * rel * (m + src.err) + 2 * step;
  } else {
    r->lvl = L_EXACT;
    r->err = 0;
  }
  return 1;
}

int gen_reduce(gen *g) {
  static const int ops[] = {O_ROWSUM, O_ROWMAX, O_ROWMIN, O_COLSUM, O_COLMAX};
  int op = PICK_OF(g->r, ops);
  int col = op == O_COLSUM || op == O_COLMAX;
  int sum = op == O_ROWSUM || op == O_COLSUM;
  if (g->c->special && sum)
    op = col ? O_COLMAX : O_ROWMAX, sum = 0;
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  if (col && V(g, a)->nd < 2)
    return 0;
  rp_val av = *V(g, a);
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  int ax = av.nd - 1 - col;
  double n = (double)shape[ax];
  shape[ax] = 1;
  pto_dtype dt = is_float(av.dt) ? PTO_F32 : PTO_I32;
  int out = new_val(g, dt, av.nd, shape);
  if (g->failed)
    return 0;
  op_step(g, op, 1, &a, out);
  rp_val *r = V(g, out);
  if (!sum) {
    holds_values_of(r, &av);
    return 1;
  }
  r->special = av.special;
  r->q = av.q;
  r->lo = n * av.lo;
  r->hi = n * av.hi;
  r->zsign = 1; /* a sum of -0s: -0 or +0 by where it starts */
  if (dt == PTO_I32) {
    i32_clip(r);
    return 1;
  }
  double m = mag(&av);
  /* f32 sums in any order: (n + 1) u sum |x| each side, with margin */
  double err = n * av.err + 2 * (n + 2) * 0x1p-24 * n * (m + av.err);
  settle(r, 1, 0, av.lvl, err);
  return 1;
}
