/* The composites of neural-network operators: sigmoid, SiLU, GELU (tanh
 * form), mean and variance along the rows, layer and RMS norm. Each is a
 * short chain of the primitive ops (core/program_ops.c), so it fuses like
 * any chain the user writes; its own checks come first, so a bad operand
 * is reported under the composite's name, never under a part's. The
 * numerics each chain gives are stated in include/pto/program.h. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/build.h"

/* x is a floating tensor of p; 1, or 0 with the error recorded. */
static int floating_operand(pto_program *p, const char *op, pto_tensor *x) {
  if (!pto__check_operands(p, op, 1, &x))
    return 0;
  if (!is_float(x->dtype)) {
    pto__fail(p, op, PTO_EDTYPE,
              "%s is i32; %s needs a floating tensor (cast it first)", D(x),
              op);
    return 0;
  }
  return 1;
}

/* ---- activations -------------------------------------------------------- */

/* 1 + exp(-x): what sigmoid and SiLU divide by. */
static pto_tensor *one_plus_exp_neg(pto_program *p, pto_tensor *x) {
  return pto_adds(p, pto_exp(p, pto_neg(p, x)), 1.0);
}

pto_tensor *pto_sigmoid(pto_program *p, pto_tensor *x) {
  if (!p || !floating_operand(p, "sigmoid", x))
    return NULL;
  return pto_recip(p, one_plus_exp_neg(p, x));
}

/* x / (1 + exp(-x)): one rounding fewer than x * sigmoid(x), and a
 * division pass instead of a reciprocal and a product. */
pto_tensor *pto_silu(pto_program *p, pto_tensor *x) {
  if (!p || !floating_operand(p, "silu", x))
    return NULL;
  return pto_div(p, x, one_plus_exp_neg(p, x));
}

/* 0.5 x (1 + tanh(z)) = x sigmoid(2 z), z = sqrt(2/pi) (x + 0.044715 x^3):
 * x / (1 + exp(x (A + B x^2))) with A = -2 sqrt(2/pi) and B = 0.044715 A. */
pto_tensor *pto_gelu(pto_program *p, pto_tensor *x) {
  if (!p || !floating_operand(p, "gelu", x))
    return NULL;
  const double A = -2.0 * 0.79788456080286535588 /* sqrt(2/pi) */,
               B = 0.044715 * A;
  pto_tensor *t = pto_adds(p, pto_muls(p, pto_mul(p, x, x), B), A);
  return pto_div(p, x, pto_adds(p, pto_exp(p, pto_mul(p, x, t)), 1.0));
}

/* ---- statistics along the rows ------------------------------------------ */

/* The row sums of x times 1/N, N its last dim: what kernels/dsa_prolog.c
 * wrote by hand, bit for bit. On a dynamic last axis N is its valid
 * length at the run's extents: the scale is a term the run applies. */
static pto_tensor *row_mean(pto_program *p, pto_tensor *x) {
  const int last = x->ndim - 1;
  const double n = (double)x->shape[last];
  pto_tensor *m = pto_muls(p, pto_rowsum(p, x), 1.0 / n);
  if (m && x->dyn[last] >= 0) {
    pto_sterm *t = &m->producer->st[0];
    t->r = pto__axis(x, last);
    t->len = x->shape[last];
    t->sign = 1;
    t->recip = 1;
  }
  return m;
}

pto_tensor *pto_mean(pto_program *p, pto_tensor *x) {
  if (!p || !floating_operand(p, "mean", x))
    return NULL;
  return row_mean(p, x);
}

/* Two passes: the mean, then the mean of the squared deviations from it
 * (*centered receives x - mean, which layer norm reuses). */
static pto_tensor *row_var(pto_program *p, pto_tensor *x,
                           pto_tensor **centered) {
  pto_tensor *c = pto_sub(p, x, row_mean(p, x));
  if (centered)
    *centered = c;
  return row_mean(p, pto_mul(p, c, c));
}

pto_tensor *pto_var(pto_program *p, pto_tensor *x) {
  if (!p || !floating_operand(p, "var", x))
    return NULL;
  return row_var(p, x, NULL);
}

/* ---- norms -------------------------------------------------------------- */

/* A norm's scale or shift (what names it): NULL, or a floating tensor
 * with x's last dim N along its last axis and 1 along every other, of at
 * most x's rank ([N], [1,N], ...), so that it broadcasts over x's rows.
 * 1, or 0 with the error recorded. */
static int row_param(pto_program *p, const char *op, const char *what,
                     pto_tensor *x, pto_tensor *w) {
  if (!w)
    return 1;
  if (!pto__check_operands(p, op, 1, &w))
    return 0;
  const int64_t N = x->shape[x->ndim - 1];
  int ok = is_float(w->dtype) && w->ndim <= x->ndim &&
           w->shape[w->ndim - 1] == N;
  for (int d = 0; ok && d < w->ndim - 1; d++)
    ok = w->shape[d] == 1;
  if (!ok)
    pto__fail(p, op, is_float(w->dtype) ? PTO_ESHAPE : PTO_EDTYPE,
              "%s %s must be floating with the %" PRId64
              " entries of the last axis of %s along its last axis and 1 "
              "along the others ([%" PRId64 "] or [1,%" PRId64 "])",
              what, D(w), N, D(x), N, N);
  return ok;
}

static int norm_eps(pto_program *p, const char *op, pto_tensor *x,
                    double eps) {
  if (eps >= 0 && eps <= FLT_MAX)
    return 1;
  pto__fail(p, op, PTO_EINVAL,
            "eps %g for %s must be >= 0 and finite in f32 (it is added as an "
            "f32)",
            eps, D(x));
  return 0;
}

pto_tensor *pto_rms_norm(pto_program *p, pto_tensor *x, pto_tensor *gamma,
                         double eps) {
  static const char op[] = "rms_norm";
  if (!p || !floating_operand(p, op, x) || !row_param(p, op, "gamma", x, gamma) ||
      !norm_eps(p, op, x, eps))
    return NULL;
  pto_tensor *r = pto_rsqrt(p, pto_adds(p, row_mean(p, pto_mul(p, x, x)), eps));
  pto_tensor *y = pto_mul(p, x, r);
  return gamma ? pto_mul(p, y, gamma) : y;
}

pto_tensor *pto_layer_norm(pto_program *p, pto_tensor *x, pto_tensor *gamma,
                           pto_tensor *beta, double eps) {
  static const char op[] = "layer_norm";
  if (!p || !floating_operand(p, op, x) ||
      !row_param(p, op, "gamma", x, gamma) ||
      !row_param(p, op, "beta", x, beta) || !norm_eps(p, op, x, eps))
    return NULL;
  pto_tensor *c = NULL;
  pto_tensor *r = pto_rsqrt(p, pto_adds(p, row_var(p, x, &c), eps));
  pto_tensor *y = pto_mul(p, c, r);
  if (gamma)
    y = pto_mul(p, y, gamma);
  return beta ? pto_add(p, y, beta) : y;
}
