/* Random programs (randprog.h): tile programs (pto/tileprog.h) on the nn
 * stream: rp_tprog (randprog_inc.h, which the printed C programs embed)
 * builds the program a spec chooses; here the spec is drawn and what is
 * known of the result's values follows from the same decoding. */
#include "tests/randprog_impl.h"

#include <math.h>
#include <string.h>

/* The most instructions a tile program's blocks may unroll to. */
#define TPROG_INSTS_MAX 16384.0

/* A static 2-D float tensor whose values both runs agree on exactly. */
static int pred_tprog(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return v->nd == 2 && (v->dt == PTO_F32 || v->dt == PTO_BF16) &&
         !v->special && v->lvl != L_APPROX && v->lvl != L_NOUSE &&
         mag(v) <= 1e3 && !v->dim[0] && !v->dim[1] &&
         numel_of(v->nd, v->shape) <= NUMEL_MAX;
}

int gen_tprog(gen *g) {
  int a = pick_val(g, pred_tprog, NULL);
  if (a < 0) {
    const int64_t shape[2] = {1 + (int64_t)pick(g->r, 96),
                              1 + (int64_t)pick(g->r, 96)};
    a = new_input(g, chance(g->r, 80) ? PTO_F32 : PTO_BF16, 2, shape, 0, 0, 0);
  }
  if (g->failed || a < 0)
    return 0;
  const rp_val av = *V(g, a);
  const int64_t R = av.shape[0], C = av.shape[1];
  const uint64_t spec =
      ((uint64_t)pick(g->r, 1u << 30) << 30 | pick(g->r, 1u << 30)) + 1;
  rp_tp t;
  rp_tp_decode(spec, R, C, &t);
  /* its blocks' instructions, loops unrolled, bounded as the other ops'
   * sizes are: a prefix over 127 one-column blocks of 127 rows would be
   * two million (a fuzz input ran out of memory compiling it) */
  const double rows = (double)(R / t.rb), cols = (double)(C / t.cb);
  const double insts = t.kind == 0   ? rows * cols * (2 + t.n_ops)
                       : t.kind == 1 ? rows * cols * (cols + 2)
                       : t.kind == 2 ? rows * cols * 2
                                     : rows * rows * (3 * cols + 1);
  if (insts > TPROG_INSTS_MAX)
    return 0;
  const int64_t shape[2] = {t.kind == 2 ? C : R,
                            t.kind == 2 ? R : t.kind == 3 ? R : C};
  const int out = new_val(g, PTO_F32, 2, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_TPROG, 1, &a, out);
  s->ival = (int64_t)spec;
  rp_val *r = V(g, out);
  double lo = av.lo, hi = av.hi;
  switch (t.kind) {
  case 0: /* exact in f32 on both runs; a scale leaves the grid */
    for (int i = 0; i < t.n_ops; i++) {
      const double v = t.s[i], l = lo, h = hi;
      switch (t.ops[i]) {
      case 0: lo = l + v; hi = h + v; break;
      case 1: lo = fmin(l * v, h * v); hi = fmax(l * v, h * v); break;
      case 2: lo = fmax(l, v); hi = fmax(h, v); break;
      case 3: lo = -h; hi = -l; break;
      default:
        lo = l >= 0 ? l : h <= 0 ? -h : 0;
        hi = fmax(fabs(l), fabs(h));
        break;
      }
      /* each op rounds once: widen by its ulp */
      lo -= fabs(lo) * U + 1e-38;
      hi += fabs(hi) * U + 1e-38;
    }
    r->lo = lo;
    r->hi = hi;
    r->zsign = 1;
    settle(r, 0, 1, av.lvl, 0);
    break;
  case 1: { /* sums of up to C / cb blocks, in the same order on both runs */
    const double n = (double)(C / t.cb);
    r->lo = lo < 0 ? lo * n : lo;
    r->hi = hi > 0 ? hi * n : hi;
    r->q = av.q;
    r->zsign = 1;
    settle(r, 1, 1, av.lvl, 0);
    break;
  }
  case 2: /* a copy */
    holds_values_of(r, &av);
    r->dt = PTO_F32;
    break;
  default: { /* x x^T: C products summed in either order */
    const double m = mag(&av), k = (double)C;
    r->lo = -k * m * m;
    r->hi = k * m * m;
    settle(r, 0, 0, L_APPROX, k * k * m * m * U);
    break;
  }
  }
  return 1;
}
