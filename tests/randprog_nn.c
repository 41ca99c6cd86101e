/* Random programs (randprog.h): the nn stream, the newer ops of the
 * builder: sigmoid, SiLU, GELU, mean, variance, layer and RMS norm, masked
 * matmuls (alone or before a softmax), iota along any axis, assemble
 * chains (overlapping blocks, and grids covering their base), concats of
 * many tensors, and push_scope / pop_scope around them.
 *
 * They come from a PRNG of their own and make values the main stream
 * never picks (rp_val.hidden), so that a seed's main program, config and
 * runs are what they were before these ops existed, and a regression
 * seed still makes the program it names; the nn ops read the main
 * stream's tensors, and their leaves become outputs of their own. The
 * error bounds come from the numerics include/pto/program.h states, for
 * each of the two runs (so twice over), with margin. */
#include "tests/randprog_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nn_init(gen *g, uint64_t seed) {
  memset(&g->nn_r, 0, sizeof g->nn_r);
  g->nn_r.s = seed * 0x9e3779b97f4a7c15ull ^ 0x5851f42d4c957f2dull;
  g->nn_seed = seed ^ 0xda942042e4dd58b5ull;
}

static const double E = 0x1p-24; /* one f32 rounding */

/* ---- picking ------------------------------------------------------------- */

static int pred_plain_float(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return is_float(v->dt) && !v->special && mag(v) <= 1e4;
}

static int pred_exact_float(gen *g, const rp_val *v, const void *ctx) {
  return pred_plain_float(g, v, ctx) && v->lvl != L_APPROX;
}

/* A float tensor to work on (a new input if none suits). */
static int float_operand(gen *g, val_pred ok) {
  int a = chance(g->r, 80) ? pick_val(g, ok, NULL) : -1;
  if (a >= 0)
    return a;
  int nd;
  int64_t shape[4];
  rand_shape(g, &nd, shape);
  return new_input(g, chance(g->r, 80) ? PTO_F32 : PTO_BF16, nd, shape, 0, 0,
                   0);
}

/* ---- activations ---------------------------------------------------------- */

static double silu_d(double x) {
  return x / (1 + exp(-x));
}
static double gelu_d(double x) {
  return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

static int gen_activation(gen *g) {
  static const int ops[] = {O_SIGMOID, O_SILU, O_GELU};
  const int op = PICK_OF(g->r, ops);
  int a = float_operand(g, pred_plain_float);
  if (g->failed)
    return 0;
  a = guard_clamp(g, a, chance(g->r, 50) ? 8 : 30);
  rp_val av = *V(g, a);
  int out = new_val(g, PTO_F32, av.nd, av.shape);
  if (g->failed)
    return 0;
  op_step(g, op, 1, &a, out);
  rp_val *r = V(g, out);
  const double e = av.err, lo = av.lo - e, hi = av.hi + e, m = mag(&av) + e;
  double ylo, yhi, err;
  if (op == O_SIGMOID) { /* monotone; slope <= 1/4; 6u each run */
    ylo = 1 / (1 + exp(-lo));
    yhi = 1 / (1 + exp(-hi));
    err = e / 4 + 16 * E;
  } else if (op == O_SILU) { /* its minimum -0.2785 at x = -1.2785 */
    ylo = fmin(silu_d(lo), silu_d(hi));
    if (lo < -1.2785 && hi > -1.2785)
      ylo = -0.27847;
    yhi = fmax(silu_d(lo), silu_d(hi));
    err = 1.1 * e + 16 * E * fmax(fabs(ylo), fabs(yhi)) + 0x1p-119;
  } else { /* its minimum -0.1700 at x = -0.7518; 2^-21 (1 + |x|) each */
    ylo = fmin(gelu_d(lo), gelu_d(hi));
    if (lo < -0.7518 && hi > -0.7518)
      ylo = -0.17004;
    yhi = fmax(gelu_d(lo), gelu_d(hi));
    err = 1.2 * e + 0x1p-19 * (1 + m);
  }
  r->lo = ylo - err - 1e-6 * fabs(ylo) - 1e-30;
  r->hi = yhi + err + 1e-6 * fabs(yhi) + 1e-30;
  r->lvl = L_APPROX;
  r->err = err;
  r->zsign = 1;
  return 1;
}

/* ---- row statistics and norms -------------------------------------------- */

static int is_pow2(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

static int gen_stat(gen *g) {
  const int op = chance(g->r, 50) ? O_MEAN : O_VAR;
  int a = float_operand(g, pred_plain_float);
  if (g->failed)
    return 0;
  rp_val av = *V(g, a);
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  const int64_t n = shape[av.nd - 1];
  const double nd_ = (double)n, e = av.err, m = mag(&av) + e;
  shape[av.nd - 1] = 1;
  int out = new_val(g, PTO_F32, av.nd, shape);
  if (g->failed)
    return 0;
  op_step(g, op, 1, &a, out);
  rp_val *r = V(g, out);
  r->zsign = 1;
  if (op == O_MEAN) {
    r->lo = av.lo;
    r->hi = av.hi;
    int k = 0;
    while (((int64_t)1 << k) < n)
      k++;
    r->q = av.q + k;
    /* exact when the row sums are on the grid and 1/n is a power of two */
    int grid = is_pow2(n) && grid_fits(nd_ * m, av.q, PTO_F32);
    settle(r, grid, 0, av.lvl, e + 2 * (nd_ + 2) * E * m);
    return 1;
  }
  /* population variance of values in [lo, hi]: at most (hi - lo)^2 / 4;
   * the inputs' error moves each squared deviation by 4 w e + 4 e^2; each
   * run rounds within (n + 5) u var + d^2, d = (n + 1) u m */
  const double w = av.hi - av.lo + 2 * e, vmax = w * w / 4;
  const double d = (nd_ + 1) * E * m;
  const double err = 4 * w * e + 4 * e * e + 2 * ((nd_ + 5) * E * vmax + d * d);
  r->lo = 0;
  r->hi = vmax + err + 1e-30;
  r->lvl = L_APPROX;
  r->err = err + 1e-38;
  return 1;
}

/* A norm's scale or shift for rows of n: [n], [1,n] or [1,1,n] (at most
 * rank nd), f32 or bf16, fresh. */
static int row_param(gen *g, int nd, int64_t n) {
  int rank = 1 + (int)pick(g->r, (uint32_t)(nd < 3 ? nd : 3));
  int64_t shape[3] = {1, 1, 1};
  shape[rank - 1] = n;
  return new_input(g, chance(g->r, 70) ? PTO_F32 : PTO_BF16, rank, shape, 0, 0,
                   0);
}

static int gen_norm(gen *g) {
  const int layer = chance(g->r, 50);
  int x = float_operand(g, pred_exact_float);
  if (g->failed || V(g, x)->lvl == L_APPROX || V(g, x)->special)
    return 0;
  rp_val xv = *V(g, x);
  const int64_t n = xv.shape[xv.nd - 1];
  static const double epss[] = {1e-5, 1e-3, 0.1, 1};
  const double eps = PICK_OF(g->r, epss), epsf = (float)eps;
  int in[3] = {x, -1, -1}, n_in = 1;
  unsigned has = 0;
  double gmax = 1, bmax = 0;
  if (chance(g->r, 70)) {
    in[n_in++] = row_param(g, xv.nd, n);
    gmax = mag(V(g, in[n_in - 1]));
    has |= 1;
  }
  if (layer && chance(g->r, 60)) {
    in[n_in++] = row_param(g, xv.nd, n);
    bmax = mag(V(g, in[n_in - 1]));
    has |= 2;
  }
  if (g->failed)
    return 0;
  int out = new_val(g, PTO_F32, xv.nd, xv.shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, layer ? O_LAYER_NORM : O_RMS_NORM, n_in, in, out);
  s->flags = has;
  s->scalar = eps;
  rp_val *r = V(g, out);
  /* |x_i| / rms <= sqrt(n) and |z| <= sqrt(n): the outputs' reach; the
   * inputs are the same in both runs, so only rounding differs: each run
   * within the header's bound (u = E), twice over for two runs */
  const double sn = sqrt((double)n), m = mag(&xv);
  const double ymax = gmax * sn + bmax;
  double err;
  if (layer)
    err = 2 * (gmax * ((n + 1) * E * m / sqrt(epsf) + (n / 2.0 + 9) * E * sn) +
               E * ymax);
  else
    err = 2 * (n / 2.0 + 8) * E * sn * gmax;
  r->lo = -ymax - err - 1e-30;
  r->hi = ymax + err + 1e-30;
  r->lvl = L_APPROX;
  r->err = err + 1e-38;
  r->zsign = 1;
  if (!(r->err < 1e30))
    r->lvl = L_NOUSE;
  return 1;
}

/* ---- masked matmul --------------------------------------------------------- */

static int gen_masked(gen *g) {
  const int64_t M = g->dims[pick(g->r, (uint32_t)g->n_dims)] % 64 + 1,
                N = g->dims[pick(g->r, (uint32_t)g->n_dims)] % 64 + 1,
                K = 1 + (int64_t)pick(g->r, 48);
  const int batch = chance(g->r, 30) ? 2 : 0;
  const int tb = chance(g->r, 60);
  int64_t as[3] = {2, M, K}, bs[2] = {tb ? N : K, tb ? K : N};
  int a = new_input(g, chance(g->r, 80) ? PTO_F32 : PTO_BF16, batch ? 3 : 2,
                    batch ? as : as + 1, 0, 0, 0);
  int b = new_input(g, chance(g->r, 80) ? PTO_F32 : PTO_BF16, 2, bs, 0, 0, 0);
  if (g->failed)
    return 0;
  a = guard_clamp(g, a, 4);
  b = guard_clamp(g, b, 4);
  const int softmax = chance(g->r, 50);
  /* a softmax needs a visible key in every row: diag >= 0 */
  const int causal = chance(g->r, 40) && (!softmax || N >= M);
  int64_t diag = causal ? N - M
                        : (softmax ? 0 : -(int64_t)M / 2) +
                              (int64_t)pick(g->r, (uint32_t)(N + M / 2 + 2));
  const int64_t shape[3] = {2, M, N};
  const int nd = batch ? 3 : 2;
  int out = matmul_step(g, causal ? O_MATMUL : O_MATMUL_MASKED, a, b, -1,
                        (tb ? PTO_MATMUL_TRANS_B : 0) |
                            (causal ? PTO_MATMUL_CAUSAL : 0),
                        nd, batch ? shape : shape + 1, K);
  if (out < 0)
    return 0;
  rp_step *s = &g->c->steps[g->c->n_steps - 1];
  s->ival = diag;
  rp_val *r = V(g, out);
  r->neginf = diag < N - 1;
  if (!softmax || r->lvl == L_NOUSE)
    return 1;
  rp_val sv = *r;
  int sm = new_val(g, PTO_F32, sv.nd, sv.shape);
  if (g->failed)
    return 0;
  op_step(g, O_SOFTMAX, 1, &out, sm);
  rp_val *y = V(g, sm);
  y->lo = 0;
  y->hi = 1;
  y->lvl = L_APPROX;
  y->err = expm1(4 * sv.err) + ((double)N + 8) * 0x1p-21;
  /* and its product by values: an attention chain, which the compiler
   * runs as one op with an online softmax (core/tiling_flash.c) */
  if (!chance(g->r, 50))
    return 1;
  const int64_t Dv = 1 + (int64_t)pick(g->r, 40);
  const int64_t vs[3] = {2, N, Dv}, os[3] = {2, M, Dv};
  int v = new_input(g, chance(g->r, 80) ? PTO_F32 : PTO_BF16, nd,
                    batch ? vs : vs + 1, 0, 0, 0);
  if (g->failed)
    return 0;
  v = guard_clamp(g, v, 4);
  return matmul_step(g, O_MATMUL, sm, v, -1, 0, nd, batch ? os : os + 1, N) >=
         0;
}

/* ---- iota, concat, assemble ------------------------------------------------ */

static int gen_iota_axis(gen *g) {
  int nd;
  int64_t shape[4];
  rand_shape(g, &nd, shape);
  const int axis = (int)pick(g->r, (uint32_t)nd);
  const pto_dtype dt = chance(g->r, 50) ? PTO_I32 : PTO_F32;
  const int64_t start = (int64_t)pick(g->r, 40) - 10;
  int out = new_val(g, dt, nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_IOTA_AXIS, 0, NULL, out);
  s->dt = dt;
  s->nd = nd;
  memcpy(s->shape, shape, sizeof shape);
  s->a0 = chance(g->r, 25) ? axis - nd : axis;
  s->ival = start;
  rp_val *r = V(g, out);
  r->lo = (double)start;
  r->hi = (double)(start + shape[axis] - 1);
  r->q = 0;
  r->lvl = L_GRID;
  return 1;
}

/* r also holds v's values. */
static void holds_too(rp_val *r, const rp_val *v) {
  r->lo = fmin(r->lo, v->lo);
  r->hi = fmax(r->hi, v->hi);
  r->q = v->q > r->q ? v->q : r->q;
  r->lvl = v->lvl > r->lvl ? v->lvl : r->lvl;
  r->err = fmax(r->err, v->err);
  r->special |= v->special;
  r->zsign |= v->zsign;
}

/* A block of dtype dt and shape s: fresh, a vector op's result (which
 * fuses with its copy), or a window of a fresh wider input. */
static int block_of(gen *g, pto_dtype dt, int nd, const int64_t *s) {
  const int k = (int)pick(g->r, 3);
  int64_t wide[4];
  memcpy(wide, s, sizeof wide);
  if (k == 2)
    wide[nd - 1] += 1 + (int64_t)pick(g->r, 3);
  int b = new_input(g, dt, nd, k == 2 ? wide : s, 0, 0, 0);
  if (g->failed)
    return -1;
  if (k == 1 && dt != PTO_I32 && !g->c->special) { /* exact: muls by 2 */
    rp_val bv = *V(g, b);
    if (dt != PTO_F32)
      return b; /* a vector op's result is f32: keep the block's dtype */
    int out = new_val(g, PTO_F32, nd, s);
    if (g->failed)
      return -1;
    rp_step *st = op_step(g, O_MULS, 1, &b, out);
    st->scalar = 2;
    rp_val *r = V(g, out);
    holds_values_of(r, &bv);
    r->lo *= 2, r->hi *= 2, r->err *= 2;
    if (r->lo > r->hi) {
      double t = r->lo;
      r->lo = r->hi, r->hi = t;
    }
    return out;
  }
  if (k == 2) {
    int64_t c0 = wide[nd - 1] - s[nd - 1];
    return view_slice(g, b, nd - 1, c0, wide[nd - 1]);
  }
  return b;
}

static int assemble_step(gen *g, int dst, int src, const int64_t *begin) {
  rp_val dv = *V(g, dst), sv = *V(g, src);
  int out = new_val(g, dv.dt, dv.nd, dv.shape);
  if (g->failed)
    return -1;
  int in[2] = {dst, src};
  rp_step *s = op_step(g, O_ASSEMBLE, 2, in, out);
  memcpy(s->end, begin, (size_t)dv.nd * sizeof *begin);
  s->nd = dv.nd;
  rp_val *r = V(g, out);
  holds_values_of(r, &dv);
  r->zsign = dv.zsign;
  holds_too(r, &sv);
  return out;
}

static int pred_any_small(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return numel_of(v->nd, v->shape) <= NUMEL_MAX;
}

static int gen_assemble(gen *g) {
  int dst = chance(g->r, 70) ? pick_val(g, pred_any_small, NULL) : -1;
  const int grid = chance(g->r, 35);
  if (dst < 0 || grid) {
    int nd;
    int64_t shape[4];
    rand_shape(g, &nd, shape);
    static const pto_dtype dts[] = {PTO_F32, PTO_F32, PTO_I32, PTO_BF16};
    const pto_dtype dt = PICK_OF(g->r, dts);
    if (grid) { /* a fill the blocks cover: it is never read */
      dst = new_val(g, dt, nd, shape);
      if (g->failed)
        return 0;
      rp_step *s = op_step(g, O_FULL, 0, NULL, dst);
      s->dt = dt;
      s->nd = nd;
      memcpy(s->shape, shape, sizeof shape);
      s->scalar = -1;
      V(g, dst)->lo = V(g, dst)->hi = -1;
      V(g, dst)->lvl = L_GRID;
    } else {
      dst = new_input(g, dt, nd, shape, 0, 0, 0);
    }
    if (g->failed)
      return 0;
  }
  const rp_val dv = *V(g, dst);
  const int nd = dv.nd;
  int y = dst;
  if (grid) { /* blocks tiling the last two axes (or the one) */
    const int a0 = nd >= 2 ? nd - 2 : nd - 1, a1 = nd - 1;
    const int64_t p0 = nd >= 2 ? 1 + (int64_t)pick(g->r, 3) : 1,
                  p1 = 1 + (int64_t)pick(g->r, 3);
    for (int64_t i = 0; i < p0 && y >= 0; i++)
      for (int64_t j = 0; j < p1 && y >= 0; j++) {
        int64_t s[4], begin[4] = {0, 0, 0, 0};
        memcpy(s, dv.shape, sizeof s);
        const int64_t e0 = dv.shape[a0], e1 = dv.shape[a1];
        begin[a0] = a0 == a1 ? 0 : e0 * i / p0;
        s[a0] = a0 == a1 ? s[a0] : e0 * (i + 1) / p0 - begin[a0];
        begin[a1] = e1 * j / p1;
        s[a1] = e1 * (j + 1) / p1 - begin[a1];
        if (s[a0] < 1 || s[a1] < 1)
          continue;
        int b = block_of(g, dv.dt, nd, s);
        if (b < 0)
          return 0;
        y = assemble_step(g, y, b, begin);
      }
    return y >= 0;
  }
  const int n = 1 + (int)pick(g->r, 5);
  for (int k = 0; k < n && y >= 0; k++) {
    int64_t s[4], begin[4];
    for (int d = 0; d < nd; d++) {
      s[d] = 1 + (int64_t)pick(g->r, (uint32_t)dv.shape[d]);
      begin[d] = (int64_t)pick(g->r, (uint32_t)(dv.shape[d] - s[d] + 1));
    }
    int b = block_of(g, dv.dt, nd, s);
    if (b < 0)
      return 0;
    y = assemble_step(g, y, b, begin);
  }
  return y >= 0;
}

/* 9 to 20 tensors along one axis. */
static int gen_concat_many(gen *g) {
  int nd;
  int64_t shape[4];
  rand_shape(g, &nd, shape);
  const int ax = (int)pick(g->r, (uint32_t)nd);
  const int n = 9 + (int)pick(g->r, 12);
  static const pto_dtype dts[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};
  const pto_dtype dt = PICK_OF(g->r, dts);
  shape[ax] = 1;
  for (;;) { /* room for n parts of up to 4 along ax */
    int big = -1;
    for (int d = 0; d < nd; d++)
      if (d != ax && (big < 0 || shape[d] > shape[big]))
        big = d;
    if (numel_of(nd, shape) * 4 * n <= NUMEL_MAX || big < 0 ||
        shape[big] == 1)
      break;
    shape[big] = (shape[big] + 1) / 2;
  }
  if (numel_of(nd, shape) * 4 * n > NUMEL_MAX)
    return 0;
  int in[MAX_IN];
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    int64_t s[4];
    memcpy(s, shape, sizeof s);
    s[ax] = 1 + (int64_t)pick(g->r, 4);
    in[i] = i && chance(g->r, 15) ? in[i - 1]
                                  : new_input(g, dt, nd, s, 0, 0, 0);
    if (g->failed)
      return 0;
    total += V(g, in[i])->shape[ax];
  }
  int64_t os[4];
  memcpy(os, shape, sizeof os);
  os[ax] = total;
  if (numel_of(nd, os) > NUMEL_MAX)
    return 0;
  int out = new_val(g, dt, nd, os);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_CONCAT, n, in, out);
  s->a0 = chance(g->r, 20) ? ax - nd : ax;
  rp_val *r = V(g, out);
  holds_values_of(r, V(g, in[0]));
  for (int i = 1; i < n; i++)
    holds_too(r, V(g, in[i]));
  return 1;
}

/* ---- the stream ------------------------------------------------------------ */

static void gen_one(gen *g) {
  const int special = g->c->special;
  int k = (int)pick(g->r, special ? 3 : 8);
  switch (special ? (int[]){3, 4, 5}[k] : k) {
  case 0: gen_activation(g); break;
  case 1: gen_stat(g); break;
  case 2: gen_norm(g); break;
  case 3: gen_iota_axis(g); break;
  case 4: gen_assemble(g); break;
  case 5: gen_concat_many(g); break;
  case 6: gen_masked(g); break;
  default: gen_tprog(g); break;
  }
}

static const char *const scope_words[] = {"nn", "norm", "act", "blk"};

void nn_step(gen *g) {
  g->main_r = g->r;
  g->r = &g->nn_r;
  g->nn_mode = 1;
  const int n_ops = g->c->n_ops, n_labels = g->n_labels, n_tiles = g->n_tiles;
  if (chance(g->r, 12)) {
    /* a scope around the op: opened and closed here, so the main stream
     * never sees it open */
    const int scoped = chance(g->r, 30) && g->n_tiles < 4;
    if (scoped) {
      rp_step *s = add_step(g, S_PUSH_SCOPE);
      if (g->n_labels < 3 && chance(g->r, 75)) {
        snprintf(s->name, sizeof s->name, "%s", PICK_OF(g->r, scope_words));
        snprintf(g->labels[g->n_labels], sizeof g->labels[0], "%.60s%s%s",
                 g->n_labels ? g->labels[g->n_labels - 1] : "",
                 g->n_labels ? "." : "", s->name);
        g->n_labels++;
      }
      s->has_tile = chance(g->r, 70) && !g->c->untiled;
      if (s->has_tile) {
        static const uint32_t rows[] = {0, 1, 3, 4, 8, 16, 32};
        static const uint32_t cols[] = {0, 1, 5, 8, 16, 32, 64, 128};
        static const uint32_t mn[] = {0, 8, 12, 16, 32, 64};
        s->tile[0] = PICK_OF(g->r, rows);
        s->tile[1] = PICK_OF(g->r, cols);
        s->tile[2] = PICK_OF(g->r, mn);
        s->tile[3] = PICK_OF(g->r, mn);
        s->tile[4] = PICK_OF(g->r, mn);
      }
      g->n_tiles++;
    }
    gen_one(g);
    if (scoped) {
      add_step(g, S_POP_SCOPE);
      g->n_labels = n_labels;
      g->n_tiles = n_tiles;
    }
  }
  g->c->n_ops = n_ops; /* the main stream counts its own ops */
  g->r = g->main_r;
  g->nn_mode = 0;
}

void nn_outputs(gen *g) {
  rp_case *c = g->c;
  g->main_r = g->r;
  g->r = &g->nn_r;
  g->nn_mode = 1;
  uint8_t *read = calloc((size_t)c->n_vals + 1, 1);
  if (!read)
    abort();
  for (int i = 0; i < c->n_steps; i++)
    for (int k = 0; k < c->steps[i].n_in; k++)
      read[c->steps[i].in[k]] = 1;
  int n = 0;
  for (int i = c->n_vals - 1; i >= 0 && n < 6; i--) {
    const rp_val *v = &c->vals[i];
    if (!v->hidden || read[i] || v->lvl == L_NOUSE || v->root != i ||
        !chance(g->r, 85))
      continue;
    rp_step *s = add_step(g, S_OUTPUT);
    s->in[0] = i;
    s->n_in = 1;
    snprintf(s->name, sizeof s->name, "nout%d", g->nn_outputs++);
    n++;
  }
  free(read);
  g->r = g->main_r;
  g->nn_mode = 0;
}
