/* Random programs (randprog.h): the generator's matmuls, with and without
 * an accumulator, and the cube and vector motif attention makes. */
#include "tests/randprog_impl.h"

#include <math.h>

/* ---- matmul
 * ---------------------------------------------------------------------- */

typedef struct mm_ctx {
  int64_t K;
  int tb, nd_batch;
  const int64_t *batch; /* a's batch dims */
  int a_root, acc_excl;
} mm_ctx;

static int batch_ok(int na, const int64_t *a, int nb, const int64_t *b) {
  int nr;
  int64_t r[4];
  return bcast(na, a, nb, b, &nr, r);
}

static int pred_mm_b(gen *g, const rp_val *v, const void *ctx) {
  const mm_ctx *m = ctx;
  if (!is_float(v->dt) || v->special || v->nd < 2)
    return 0;
  if (g->c->sw.matmul_acc_alias && (V(g, v->root)->mm & 2))
    return 0;
  if (v->shape[v->nd - 2 + m->tb] != m->K)
    return 0;
  return batch_ok(m->nd_batch, m->batch, v->nd - 2, v->shape);
}

static int pred_mm_a(gen *g, const rp_val *v, const void *ctx) {
  (void)ctx;
  if (!is_float(v->dt) || v->special || v->nd < 2)
    return 0;
  return !(g->c->sw.matmul_acc_alias && (V(g, v->root)->mm & 2));
}

typedef struct acc_ctx {
  int nd;
  const int64_t *shape;
  int ra, rb;
} acc_ctx;

static int pred_acc(gen *g, const rp_val *v, const void *ctx) {
  const acc_ctx *a = ctx;
  if (v->dt != PTO_F32 || v->special || v->nd != a->nd)
    return 0;
  for (int d = 0; d < a->nd; d++)
    if (v->shape[d] != a->shape[d])
      return 0;
  if (g->c->sw.matmul_acc_alias &&
      (V(g, v->root)->mm || v->root == a->ra || v->root == a->rb))
    return 0;
  return 1;
}

int matmul_step(gen *g, int op, int a, int b, int acc, unsigned flags, int nd,
                const int64_t *shape, int64_t K) {
  rp_val av = *V(g, a), bv = *V(g, b);
  int with_acc = acc >= 0;
  int out = new_val(g, PTO_F32, nd, shape);
  if (g->failed)
    return -1;
  int in[3] = {a, b, acc};
  rp_step *s = op_step(g, op, with_acc ? 3 : 2, in, out);
  if (g->failed)
    return -1;
  s->flags = flags;
  V(g, V(g, a)->root)->mm |= 1;
  V(g, V(g, b)->root)->mm |= 1;
  rp_val *r = V(g, out);
  r->zsign = 1;
  double p[4] = {av.lo * bv.lo, av.lo * bv.hi, av.hi * bv.lo, av.hi * bv.hi};
  double Kd = (double)K, ma = mag(&av), mb = mag(&bv);
  r->lo = Kd * fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
  r->hi = Kd * fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
  r->q = av.q + bv.q;
  int worst = worst2(&av, &bv);
  double S = Kd * ma * mb,
         err = Kd * (av.err * mb + bv.err * ma + av.err * bv.err);
  if (with_acc) {
    rp_val cv = *V(g, acc);
    V(g, cv.root)->mm |= 2;
    r->lo += cv.lo;
    r->hi += cv.hi;
    r->q = r->q > cv.q ? r->q : cv.q;
    worst = worst > cv.lvl ? worst : cv.lvl;
    S += mag(&cv);
    err += cv.err;
  }
  err += 2 * (Kd + 2) * 0x1p-24 * S;
  /* exact when every partial sum is on the grid: S 2^q <= 2^24 */
  int grid = worst == L_GRID && grid_fits(S, r->q, PTO_F32);
  settle(r, grid, 0, worst, err);
  return out;
}

/* The matmul node a x b (+ acc) of result shape nd/shape and depth K, and
 * what is known of its values; the result's id, or -1. */
static int make_matmul(gen *g, int a, int b, int acc, unsigned flags, int nd,
                       const int64_t *shape, int64_t K) {
  return matmul_step(g, acc >= 0 ? O_MATMUL_ACC : O_MATMUL, a, b, acc, flags,
                     nd, shape, K);
}

int gen_matmul(gen *g, int with_acc) {
  if (g->c->special)
    return 0;
  int a = pick_val(g, pred_mm_a, NULL);
  if (a < 0) {
    int64_t shape[2] = {g->dims[pick(g->r, (uint32_t)g->n_dims)],
                        g->dims[pick(g->r, (uint32_t)g->n_dims)]};
    a = new_input(g, chance(g->r, 70) ? PTO_F32 : PTO_BF16, 2, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  unsigned flags = (chance(g->r, 25) ? PTO_MATMUL_TRANS_A : 0) |
                   (chance(g->r, 25) ? PTO_MATMUL_TRANS_B : 0);
  int ta = (flags & PTO_MATMUL_TRANS_A) != 0,
      tb = (flags & PTO_MATMUL_TRANS_B) != 0;
  rp_val av = *V(g, a);
  int64_t M = av.shape[av.nd - 2 + ta], K = av.shape[av.nd - 1 - ta];
  int b = -1;
  int k = (int)pick(g->r, 10);
  int64_t kb_self = av.shape[av.nd - 2 + tb];
  if (k < 2 && kb_self == K)
    b = a; /* a x a^T, a^T x a or a square a x a */
  else if (k < 7) {
    mm_ctx ctx = {K, tb, av.nd - 2, av.shape, av.root, 0};
    b = pick_val(g, pred_mm_b, &ctx);
  }
  if (b < 0 && k == 7) { /* a transposed view of something with K last */
    for (int i = g->c->n_vals - 1; i >= 0 && b < 0; i--) {
      const rp_val *v = V(g, i);
      if (v->lvl != L_NOUSE && is_float(v->dt) && !v->special && v->nd == 2 &&
          v->shape[1 - tb] == K &&
          !(g->c->sw.matmul_acc_alias && (V(g, v->root)->mm & 2)))
        b = view_transpose(g, i, 0, 1);
    }
  }
  if (b < 0) {
    int64_t N = g->dims[pick(g->r, (uint32_t)g->n_dims)];
    int nd = 2;
    int64_t shape[4];
    if (av.nd > 2 && chance(g->r, 30)) { /* batch dims of its own */
      nd = av.nd;
      for (int d = 0; d < nd - 2; d++)
        shape[d] = chance(g->r, 30) ? 1 : av.shape[d];
    }
    shape[nd - 2] = tb ? N : K;
    shape[nd - 1] = tb ? K : N;
    static const pto_dtype dts[] = {PTO_F32, PTO_F32, PTO_F32, PTO_BF16,
                                    PTO_F16};
    b = new_input(g, PICK_OF(g->r, dts), nd, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  rp_val bv = *V(g, b);
  int64_t N = bv.shape[bv.nd - 1 - tb];
  int nd;
  int64_t shape[4];
  if (!bcast(av.nd - 2, av.shape, bv.nd - 2, bv.shape, &nd, shape))
    return 0;
  shape[nd] = M;
  shape[nd + 1] = N;
  nd += 2;
  int64_t batch = numel_of(nd - 2, shape);
  if (numel_of(nd, shape) > NUMEL_MAX || batch * M * N * K > MM_COST_MAX)
    return 0;
  /* keep sums small enough to stay exact often */
  if (mag(&av) * mag(&bv) * (double)K > 1e7) {
    a = guard_clamp(g, a, 4);
    b = a == b ? a : guard_clamp(g, b, 4);
    av = *V(g, a);
    bv = *V(g, b);
  }
  int acc = -1;
  if (with_acc) {
    acc_ctx ac = {nd, shape, av.root, bv.root};
    int kk = (int)pick(g->r, 10);
    if (kk < 5)
      acc = pick_val(g, pred_acc, &ac);
    if (acc < 0 && kk == 5 && nd == 2) { /* a transposed view */
      for (int i = g->c->n_vals - 1; i >= 0 && acc < 0; i--) {
        const rp_val *v = V(g, i);
        if (v->lvl != L_NOUSE && v->dt == PTO_F32 && !v->special &&
            v->nd == 2 && v->shape[0] == N && v->shape[1] == M &&
            !(g->c->sw.matmul_acc_alias &&
              (V(g, v->root)->mm || v->root == av.root || v->root == bv.root)))
          acc = view_transpose(g, i, 0, 1);
      }
    }
    if (acc < 0)
      acc = new_input(g, PTO_F32, nd, shape, 0, 0, 0);
    if (g->failed)
      return 0;
    if (mag(V(g, acc)) > 1e4)
      acc = guard_clamp(g, acc, 16);
  }
  return make_matmul(g, a, b, acc, flags, nd, shape, K) >= 0;
}

/* Cube and vector work interleaved, as attention is: A = X x X on the
 * cube, R = f(X) on the vector cores, then a cube op reading R and A
 * (R as its accumulator) and a vector op reading R and A. Fusion must not
 * join these into clusters waiting on each other (known bug 2). */
int gen_motif(gen *g) {
  if (g->c->special)
    return 0;
  int64_t n = g->dims[pick(g->r, (uint32_t)g->n_dims)];
  n = n > 64 ? 64 : n;
  int x = new_input(g, PTO_F32, 2, (const int64_t[]){n, n}, 0, 0, 0);
  if (g->failed)
    return 0;
  x = guard_clamp(g, x, 2);
  int64_t shape[2] = {n, n};
  int A = make_matmul(g, x, x, -1, 0, 2, shape, n);
  if (A < 0)
    return 0;
  static const int un[] = {O_EXP, O_ABS, O_NEG, O_RELU, O_SQRT};
  int R = do_unary(g, PICK_OF(g->r, un), x);
  if (chance(g->r, 50) || V(g, R)->mm) {
    if (make_matmul(g, R, A, -1, 0, 2, shape, n) < 0)
      return 0;
  } else if (make_matmul(g, A, x, R, 0, 2, shape, n) < 0) {
    return 0;
  }
  static const int bin[] = {O_ADD, O_SUB, O_MUL, O_MAX};
  return do_binary(g, PICK_OF(g->r, bin), R, A) >= 0;
}
