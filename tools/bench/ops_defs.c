/* The operators of `pto-bench ops` (bench/ops.h): each as the tensor ops a
 * user would write for it with include/pto/program.h alone, no tile shape
 * and no label tile set (the compiler chooses every tile), and a plain-C
 * reference of one row in double, written from the formula rather than
 * from the program, so a composition that is wrong fails too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/ops.h"
#include "examples.h"

#define D2(a, b) ((const int64_t[]){(a), (b)})
#define D3(a, b, c) ((const int64_t[]){(a), (b), (c)})

void ops_fill_uniform(float *buf, size_t n, uint64_t seed, double scale) {
  for (size_t i = 0; i < n; i++) {
    uint64_t h = (i + 1 + seed * 0x632be59bd9b4e019ull) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    buf[i] = (float)(((double)(h >> 11) * 0x1p-53 * 2.0 - 1.0) * scale);
  }
}

double ops_rel_err(const float *got, const double *ref, int64_t n) {
  double ss = 0, worst = 0;
  for (int64_t j = 0; j < n; j++)
    ss += ref[j] * ref[j];
  const double floor = sqrt(ss / (double)n);
  for (int64_t j = 0; j < n; j++) {
    const double den = fmax(fabs(ref[j]), floor),
                 e = fabs((double)got[j] - ref[j]);
    if (!isfinite((double)got[j]) && got[j] != ref[j])
      return INFINITY;
    if (e > 0)
      worst = fmax(worst, den > 0 ? e / den : INFINITY);
  }
  return worst;
}

static pto_program *finish(pto_program *p) {
  pto_program_pop_label(p);
  return p;
}

static void shape2(const int64_t *d, char *buf, size_t size) {
  snprintf(buf, size, "%lldx%lld", (long long)d[0], (long long)d[1]);
}
static int64_t rows0(const int64_t *d) {
  return d[0];
}
static double no_flops(const int64_t *d) {
  (void)d;
  return 0;
}
static size_t scratch_d1(const int64_t *d) {
  return (size_t)d[1];
}

/* ---- RMS norm: x [R,N], gamma [1,N] -------------------------------------- */

#define RMS_EPS 1e-6
static pto_program *rms_build(const int64_t *d) {
  pto_program *p = pto_program_new("ops.rms-norm");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(d[0], d[1])),
             *g = pto_input(p, "gamma", PTO_F32, 2, D2(1, d[1]));
  pto_program_push_label(p, "rms_norm");
  pto_output(p, pto_rms_norm(p, x, g, RMS_EPS), "y");
  return finish(p);
}
static double rms_check(const int64_t *d, const void *const *in,
                        const void *const *out, int64_t r, double *y) {
  const int64_t n = d[1];
  const float *x = (const float *)in[0] + r * n, *g = in[1];
  double ss = 0;
  for (int64_t j = 0; j < n; j++)
    ss += (double)x[j] * x[j];
  const double inv = 1 / sqrt(ss / (double)n + (double)(float)RMS_EPS);
  for (int64_t j = 0; j < n; j++)
    y[j] = x[j] * inv * g[j];
  return ops_rel_err((const float *)out[0] + r * n, y, n);
}

/* ---- layer norm: x [R,N], gamma, beta [1,N] -------------------------------
 */

#define LN_EPS 1e-5
static pto_program *ln_build(const int64_t *d) {
  pto_program *p = pto_program_new("ops.layer-norm");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(d[0], d[1])),
             *g = pto_input(p, "gamma", PTO_F32, 2, D2(1, d[1])),
             *b = pto_input(p, "beta", PTO_F32, 2, D2(1, d[1]));
  pto_program_push_label(p, "layer_norm");
  pto_output(p, pto_layer_norm(p, x, g, b, LN_EPS), "y");
  return finish(p);
}
static double ln_check(const int64_t *d, const void *const *in,
                       const void *const *out, int64_t r, double *y) {
  const int64_t n = d[1];
  const float *x = (const float *)in[0] + r * n, *g = in[1], *b = in[2];
  double s = 0, v = 0;
  for (int64_t j = 0; j < n; j++)
    s += x[j];
  const double mean = s / (double)n;
  for (int64_t j = 0; j < n; j++)
    v += (x[j] - mean) * (x[j] - mean);
  const double inv = 1 / sqrt(v / (double)n + (double)(float)LN_EPS);
  for (int64_t j = 0; j < n; j++)
    y[j] = (x[j] - mean) * inv * g[j] + b[j];
  return ops_rel_err((const float *)out[0] + r * n, y, n);
}

/* ---- softmax as rowmax, sub, exp, rowsum, div: x [R,N] ---------------------
 */

static pto_program *sm_build(const int64_t *d) {
  pto_program *p = pto_program_new("ops.softmax");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(d[0], d[1]));
  pto_program_push_label(p, "softmax");
  pto_tensor *e = pto_exp(p, pto_sub(p, x, pto_rowmax(p, x)));
  pto_output(p, pto_div(p, e, pto_rowsum(p, e)), "y");
  return finish(p);
}
static void sm_fill(const int64_t *d, int i, void *buf, size_t n,
                    uint64_t seed) {
  (void)d, (void)i;
  ops_fill_uniform(buf, n, seed, 4.0); /* probabilities over e^8 */
}
static double sm_check(const int64_t *d, const void *const *in,
                       const void *const *out, int64_t r, double *y) {
  const int64_t n = d[1];
  const float *x = (const float *)in[0] + r * n;
  double m = -INFINITY, s = 0;
  for (int64_t j = 0; j < n; j++)
    m = fmax(m, x[j]);
  for (int64_t j = 0; j < n; j++)
    s += y[j] = exp((double)x[j] - m);
  for (int64_t j = 0; j < n; j++)
    y[j] /= s;
  return ops_rel_err((const float *)out[0] + r * n, y, n);
}

/* ---- RoPE, rotate-half: x [S,H,D], cos, sin [S,1,D/2] ----------------------
 */

static pto_program *rope_build(const int64_t *d) {
  const int64_t S = d[0], H = d[1], D = d[2], h = D / 2;
  pto_program *p = pto_program_new("ops.rope");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, D3(S, H, D)),
             *c = pto_input(p, "cos", PTO_F32, 3, D3(S, 1, h)),
             *s = pto_input(p, "sin", PTO_F32, 3, D3(S, 1, h));
  pto_program_push_label(p, "rope");
  pto_tensor *x1 = pto_slice(p, x, D3(0, 0, 0), D3(S, H, h)),
             *x2 = pto_slice(p, x, D3(0, 0, h), D3(S, H, D));
  pto_tensor *halves[2] = {pto_sub(p, pto_mul(p, x1, c), pto_mul(p, x2, s)),
                           pto_add(p, pto_mul(p, x2, c), pto_mul(p, x1, s))};
  pto_output(p, pto_concat(p, 2, halves, -1), "y");
  return finish(p);
}
static void rope_shape(const int64_t *d, char *buf, size_t size) {
  snprintf(buf, size, "%lldx%lldx%lld", (long long)d[0], (long long)d[1],
           (long long)d[2]);
}
/* cos and sin of position s times frequency 10000^(-2j/D), as a model's */
static void rope_fill(const int64_t *d, int i, void *buf, size_t n,
                      uint64_t seed) {
  if (i == 0) {
    ops_fill_uniform(buf, n, seed, 1.0);
    return;
  }
  const int64_t h = d[2] / 2;
  float *v = buf;
  for (size_t k = 0; k < n; k++) {
    const double a =
        (double)(k / (size_t)h) *
        pow(10000.0, -2.0 * (double)(k % (size_t)h) / (double)d[2]);
    v[k] = (float)(i == 1 ? cos(a) : sin(a));
  }
}
static int64_t rope_rows(const int64_t *d) {
  return d[0] * d[1];
}
static size_t rope_scratch(const int64_t *d) {
  return (size_t)d[2];
}
static double rope_check(const int64_t *d, const void *const *in,
                         const void *const *out, int64_t r, double *y) {
  const int64_t D = d[2], h = D / 2, s = r / d[1];
  const float *x = (const float *)in[0] + r * D,
              *c = (const float *)in[1] + s * h,
              *sn = (const float *)in[2] + s * h;
  for (int64_t j = 0; j < h; j++) {
    y[j] = (double)x[j] * c[j] - (double)x[j + h] * sn[j];
    y[j + h] = (double)x[j + h] * c[j] + (double)x[j] * sn[j];
  }
  return ops_rel_err((const float *)out[0] + r * D, y, D);
}

/* ---- MLPs: x [T,M]; SiLU-gated (w1, w3 [M,F], w2 [F,M]) and GELU ----------
 */

static pto_program *silu_mlp_build(const int64_t *d) {
  const int64_t T = d[0], M = d[1], F = d[2];
  pto_program *p = pto_program_new("ops.silu-mlp");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(T, M)),
             *w1 = pto_input(p, "w1", PTO_F32, 2, D2(M, F)),
             *w3 = pto_input(p, "w3", PTO_F32, 2, D2(M, F)),
             *w2 = pto_input(p, "w2", PTO_F32, 2, D2(F, M));
  pto_program_push_label(p, "silu_mlp");
  pto_tensor *h =
      pto_mul(p, pto_silu(p, pto_matmul(p, x, w1, 0)), pto_matmul(p, x, w3, 0));
  pto_output(p, pto_matmul(p, h, w2, 0), "y");
  return finish(p);
}
static pto_program *gelu_mlp_build(const int64_t *d) {
  const int64_t T = d[0], M = d[1], F = d[2];
  pto_program *p = pto_program_new("ops.gelu-mlp");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(T, M)),
             *w1 = pto_input(p, "w1", PTO_F32, 2, D2(M, F)),
             *w2 = pto_input(p, "w2", PTO_F32, 2, D2(F, M));
  pto_program_push_label(p, "gelu_mlp");
  pto_tensor *h = pto_gelu(p, pto_matmul(p, x, w1, 0));
  pto_output(p, pto_matmul(p, h, w2, 0), "y");
  return finish(p);
}
static void mlp_shape(const int64_t *d, char *buf, size_t size) {
  snprintf(buf, size, "%lldx%lld F=%lld", (long long)d[0], (long long)d[1],
           (long long)d[2]);
}
static double silu_mlp_flops(const int64_t *d) {
  return 6.0 * (double)d[0] * (double)d[1] * (double)d[2];
}
static double gelu_mlp_flops(const int64_t *d) {
  return 4.0 * (double)d[0] * (double)d[1] * (double)d[2];
}
/* weights of a layer with fan-in K uniform in +-1/sqrt(K), as initialised */
static void mlp_fill(const int64_t *d, int i, void *buf, size_t n,
                     uint64_t seed) {
  const int last = d[3] ? 3 : 2; /* the index of w2: 3 gated, 2 GELU */
  ops_fill_uniform(buf, n, seed,
                   i == 0 ? 1.0 : 1 / sqrt((double)d[i == last ? 2 : 1]));
}
static size_t mlp_scratch(const int64_t *d) {
  return (size_t)(2 * d[2] + d[1]);
}
/* row t of x w for w [K,N]: a[N] */
static void row_matmul(const float *x, const float *w, int64_t K, int64_t N,
                       double *a) {
  for (int64_t n = 0; n < N; n++)
    a[n] = 0;
  for (int64_t k = 0; k < K; k++) {
    const double xk = x[k];
    const float *wk = w + k * N;
    for (int64_t n = 0; n < N; n++)
      a[n] += xk * wk[n];
  }
}
static double mlp_check(const int64_t *d, const void *const *in,
                        const void *const *out, int64_t r, double *s) {
  const int64_t M = d[1], F = d[2];
  const int gated = d[3] != 0;
  const float *x = (const float *)in[0] + r * M;
  double *a = s, *b = s + F, *y = s + 2 * F;
  row_matmul(x, in[1], M, F, a);
  if (gated) {
    row_matmul(x, in[2], M, F, b);
    for (int64_t f = 0; f < F; f++)
      a[f] = a[f] / (1 + exp(-a[f])) * b[f];
  } else {
    const double c = sqrt(2 / 3.14159265358979323846);
    for (int64_t f = 0; f < F; f++)
      a[f] =
          0.5 * a[f] * (1 + tanh(c * (a[f] + 0.044715 * a[f] * a[f] * a[f])));
  }
  /* y = h w2, h in double */
  const float *w2 = in[gated ? 3 : 2];
  for (int64_t m = 0; m < M; m++)
    y[m] = 0;
  for (int64_t f = 0; f < F; f++)
    for (int64_t m = 0; m < M; m++)
      y[m] += a[f] * w2[f * M + m];
  return ops_rel_err((const float *)out[0] + r * M, y, M);
}

/* ---- causal attention: q, k, v [H,S,D], mask from iotas --------------------
 */

static pto_program *attn_build(const int64_t *d) {
  const int64_t H = d[0], S = d[1], D = d[2];
  pto_program *p = pto_program_new("ops.attention");
  pto_tensor *q = pto_input(p, "q", PTO_F32, 3, D3(H, S, D)),
             *k = pto_input(p, "k", PTO_F32, 3, D3(H, S, D)),
             *v = pto_input(p, "v", PTO_F32, 3, D3(H, S, D));
  pto_program_push_label(p, "attention");
  pto_tensor *s =
      pto_muls(p, pto_matmul(p, q, k, PTO_MATMUL_TRANS_B), 1 / sqrt((double)D));
  /* key j is hidden from query i where j > i */
  pto_tensor *hidden =
      pto_cmp(p, pto_iota_axis(p, PTO_I32, 2, D2(1, S), 1, 0),
              pto_iota_axis(p, PTO_I32, 2, D2(S, 1), 0, 0), PTO_CMP_GT);
  s = pto_select(p, hidden, pto_full(p, PTO_F32, 2, D2(1, 1), -INFINITY), s);
  pto_tensor *e = pto_exp(p, pto_sub(p, s, pto_rowmax(p, s)));
  pto_tensor *pr = pto_div(p, e, pto_rowsum(p, e));
  pto_output(p, pto_matmul(p, pr, v, 0), "out");
  return finish(p);
}
/* The same as a tile program (kernels/examples_flash.c, expert mode). */
static pto_program *flash_expert_build(const int64_t *d) {
  const int64_t H = d[0], S = d[1], D = d[2];
  pto_program *p = pto_program_new("ops.flash-expert");
  pto_tensor *q = pto_input(p, "q", PTO_F32, 3, D3(H, S, D)),
             *k = pto_input(p, "k", PTO_F32, 3, D3(H, S, D)),
             *v = pto_input(p, "v", PTO_F32, 3, D3(H, S, D));
  pto_program_push_label(p, "attention");
  pto_output(p, pto_example_flash_expert(p, q, k, v, 0, 0), "out");
  return finish(p);
}
static void attn_shape(const int64_t *d, char *buf, size_t size) {
  snprintf(buf, size, "H=%lld S=%lld D=%lld", (long long)d[0], (long long)d[1],
           (long long)d[2]);
}
/* the visible pairs only: S(S+1)/2 per head, 2D flops each for q k^T and
 * as many for p v */
static double attn_flops(const int64_t *d) {
  const double S = (double)d[1];
  return (double)d[0] * S * (S + 1) / 2 * 4 * (double)d[2];
}
static int64_t attn_rows(const int64_t *d) {
  return d[0] * d[1];
}
static size_t attn_scratch(const int64_t *d) {
  return (size_t)(d[1] + d[2]);
}
static double attn_check(const int64_t *d, const void *const *in,
                         const void *const *out, int64_t r, double *s) {
  const int64_t S = d[1], D = d[2], h = r / S, i = r % S;
  const float *q = (const float *)in[0] + r * D,
              *k = (const float *)in[1] + h * S * D,
              *v = (const float *)in[2] + h * S * D;
  double *y = s + S, m = -INFINITY, sum = 0;
  const double scale = 1 / sqrt((double)D);
  for (int64_t j = 0; j <= i; j++) {
    double dot = 0;
    for (int64_t c = 0; c < D; c++)
      dot += (double)q[c] * k[j * D + c];
    s[j] = dot * scale;
    m = fmax(m, s[j]);
  }
  for (int64_t c = 0; c < D; c++)
    y[c] = 0;
  for (int64_t j = 0; j <= i; j++) {
    const double e = exp(s[j] - m);
    sum += e;
    for (int64_t c = 0; c < D; c++)
      y[c] += e * v[j * D + c];
  }
  for (int64_t c = 0; c < D; c++)
    y[c] /= sum;
  return ops_rel_err((const float *)out[0] + r * D, y, D);
}

/* ---- MoE router: x [T,M] wr [M,E] -> softmax -> top-k ------------------- */

static pto_program *router_build(const int64_t *d) {
  pto_program *p = pto_program_new("ops.moe-router");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, D2(d[0], d[1])),
             *w = pto_input(p, "wr", PTO_F32, 2, D2(d[1], d[2])), *idx;
  pto_program_push_label(p, "moe_router");
  pto_tensor *pr = pto_softmax(p, pto_matmul(p, x, w, 0));
  pto_output(p, pto_topk(p, pr, d[3], &idx), "weights");
  pto_output(p, idx, "experts");
  return finish(p);
}
static void router_shape(const int64_t *d, char *buf, size_t size) {
  snprintf(buf, size, "%lldx%lld E=%lld k=%lld", (long long)d[0],
           (long long)d[1], (long long)d[2], (long long)d[3]);
}
static double router_flops(const int64_t *d) {
  return 2.0 * (double)d[0] * (double)d[1] * (double)d[2];
}
/* logits of a few units, so the experts' weights differ */
static void router_fill(const int64_t *d, int i, void *buf, size_t n,
                        uint64_t seed) {
  ops_fill_uniform(buf, n, seed, i == 0 ? 1.0 : 4 / sqrt((double)d[1]));
}
static size_t router_scratch(const int64_t *d) {
  return (size_t)(2 * d[2] + d[3]);
}
static int desc(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}
/* The weights as any row's; the experts by their weight: where two of
 * them are within the tolerance of each other either order is right, so
 * an expert is wrong only when its reference weight is not the slot's. */
static double router_check(const int64_t *d, const void *const *in,
                           const void *const *out, int64_t r, double *s) {
  const int64_t M = d[1], E = d[2], K = d[3];
  double *pr = s, *sorted = s + E, *got = s + 2 * E, m = -INFINITY, sum = 0;
  row_matmul((const float *)in[0] + r * M, in[1], M, E, pr);
  for (int64_t e = 0; e < E; e++)
    m = fmax(m, pr[e]);
  for (int64_t e = 0; e < E; e++)
    sum += pr[e] = exp(pr[e] - m);
  for (int64_t e = 0; e < E; e++)
    sorted[e] = pr[e] /= sum;
  qsort(sorted, (size_t)E, sizeof *sorted, desc);
  const int32_t *ix = (const int32_t *)out[1] + r * K;
  double worst = ops_rel_err((const float *)out[0] + r * K, sorted, K);
  for (int64_t k = 0; k < K; k++) {
    if (ix[k] < 0 || ix[k] >= E)
      return INFINITY;
    for (int64_t j = 0; j < k; j++)
      if (ix[j] == ix[k])
        return INFINITY; /* an expert chosen twice */
    got[k] = pr[ix[k]];
  }
  for (int64_t k = 0; k < K; k++)
    worst = fmax(worst, fabs(got[k] - sorted[k]) / sorted[k]);
  return worst;
}

/* ---- cross-entropy: logits [R,V], target i32 [R,1] -> loss [R,1] -------- */

static pto_program *xent_build(const int64_t *d) {
  const int64_t R = d[0], V = d[1];
  pto_program *p = pto_program_new("ops.cross-entropy");
  pto_tensor *x = pto_input(p, "logits", PTO_F32, 2, D2(R, V)),
             *t = pto_input(p, "target", PTO_I32, 2, D2(R, 1));
  pto_program_push_label(p, "cross_entropy");
  /* loss = logsumexp(x) - x[target], the target's logit picked by a mask */
  pto_tensor *m = pto_rowmax(p, x);
  pto_tensor *lse =
      pto_add(p, pto_log(p, pto_rowsum(p, pto_exp(p, pto_sub(p, x, m)))), m);
  pto_tensor *hit =
      pto_cmp(p, pto_iota_axis(p, PTO_I32, 2, D2(1, V), 1, 0), t, PTO_CMP_EQ);
  pto_tensor *xt = pto_rowsum(
      p, pto_select(p, hit, x, pto_full(p, PTO_F32, 2, D2(1, 1), 0)));
  pto_output(p, pto_sub(p, lse, xt), "loss");
  return finish(p);
}
static void xent_fill(const int64_t *d, int i, void *buf, size_t n,
                      uint64_t seed) {
  if (i == 0) {
    ops_fill_uniform(buf, n, seed, 8.0);
    return;
  }
  int32_t *t = buf;
  for (size_t k = 0; k < n; k++)
    t[k] = (int32_t)(((k + 1) * 0x9e3779b97f4a7c15ull ^ seed) % (uint64_t)d[1]);
}
static double xent_check(const int64_t *d, const void *const *in,
                         const void *const *out, int64_t r, double *s) {
  const int64_t V = d[1];
  const float *x = (const float *)in[0] + r * V;
  const int32_t t = ((const int32_t *)in[1])[r];
  double m = -INFINITY, sum = 0;
  for (int64_t j = 0; j < V; j++)
    m = fmax(m, x[j]);
  for (int64_t j = 0; j < V; j++)
    sum += exp((double)x[j] - m);
  s[0] = m + log(sum) - x[t];
  return ops_rel_err((const float *)out[0] + r, s, 1);
}
static size_t one(const int64_t *d) {
  (void)d;
  return 1;
}

/* ---- the table ------------------------------------------------------------
 */

/* one operator a row group; clang-format would put each field on a line */
/* clang-format off */
const ops_def bench_ops_defs[] = {
    {.name = "rms-norm", .what = "pto_rms_norm(x, gamma, 1e-6) over rows",
     .d = {8192, 4096}, .dq = {512, 1024}, .tol = 1e-5, .outputs = {"y"},
     .build = rms_build, .shape = shape2, .flops = no_flops, .rows = rows0,
     .scratch_size = scratch_d1, .check_row = rms_check},
    {.name = "layer-norm",
     .what = "pto_layer_norm(x, gamma, beta, 1e-5) over rows",
     .d = {8192, 4096}, .dq = {512, 1024}, .tol = 1e-5, .outputs = {"y"},
     .build = ln_build, .shape = shape2, .flops = no_flops, .rows = rows0,
     .scratch_size = scratch_d1, .check_row = ln_check},
    {.name = "softmax", .what = "row softmax as rowmax, sub, exp, rowsum, div",
     .d = {4096, 8192}, .dq = {256, 2048}, .tol = 1e-5, .outputs = {"y"},
     .build = sm_build, .shape = shape2, .flops = no_flops, .fill = sm_fill,
     .rows = rows0, .scratch_size = scratch_d1, .check_row = sm_check},
    {.name = "rope",
     .what = "rotate-half RoPE: slices, mul by cos/sin, sub/add, concat",
     .d = {4096, 32, 128}, .dq = {256, 8, 128}, .tol = 1e-5,
     .outputs = {"y"}, .build = rope_build, .shape = rope_shape,
     .flops = no_flops, .fill = rope_fill, .rows = rope_rows,
     .scratch_size = rope_scratch, .check_row = rope_check},
    /* d[3]: 1 gated (SiLU), 0 not (GELU) */
    {.name = "silu-mlp", .what = "(silu(x w1) * (x w3)) w2",
     .d = {2048, 1024, 2816, 1}, .dq = {128, 256, 704, 1}, .tol = 1e-4,
     .check_rows = 64, .outputs = {"y"}, .build = silu_mlp_build,
     .shape = mlp_shape, .flops = silu_mlp_flops, .fill = mlp_fill,
     .rows = rows0, .scratch_size = mlp_scratch, .check_row = mlp_check},
    {.name = "gelu-mlp", .what = "gelu_tanh(x w1) w2",
     .d = {2048, 1024, 4096, 0}, .dq = {128, 256, 1024, 0}, .tol = 1e-4,
     .check_rows = 64, .outputs = {"y"}, .build = gelu_mlp_build,
     .shape = mlp_shape, .flops = gelu_mlp_flops, .fill = mlp_fill,
     .rows = rows0, .scratch_size = mlp_scratch, .check_row = mlp_check},
    {.name = "attention",
     .what = "causal attention: q k^T, scale, iota/cmp/select mask, "
             "softmax, p v",
     .d = {8, 2048, 128}, .dq = {2, 256, 64}, .tol = 1e-4, .check_rows = 256,
     .outputs = {"out"}, .build = attn_build, .shape = attn_shape,
     .flops = attn_flops, .rows = attn_rows, .scratch_size = attn_scratch,
     .check_row = attn_check},
    /* the issue-40 shape, B = 1: written as tensor ops, and as a tile
     * program (bench/ops_expert.c) */
    {.name = "flash",
     .what = "causal flash attention as tensor ops (as attention)",
     .mode = "tensor",
     .d = {16, 4096, 128}, .dq = {2, 256, 64}, .tol = 1e-4, .check_rows = 256,
     .outputs = {"out"}, .build = attn_build, .shape = attn_shape,
     .flops = attn_flops, .rows = attn_rows, .scratch_size = attn_scratch,
     .check_row = attn_check},
    {.name = "flash-expert",
     .what = "causal flash attention as a tile program (expert mode)",
     .mode = "expert",
     .d = {16, 4096, 128}, .dq = {2, 256, 64}, .tol = 1e-4, .check_rows = 256,
     .outputs = {"out"}, .build = flash_expert_build,
     .shape = attn_shape, .flops = attn_flops, .rows = attn_rows,
     .scratch_size = attn_scratch, .check_row = attn_check},
    {.name = "moe-router", .what = "softmax(x wr) then pto_topk",
     .d = {4096, 1024, 64, 8}, .dq = {256, 256, 64, 8}, .tol = 1e-4,
     .outputs = {"weights", "experts"}, .build = router_build,
     .shape = router_shape, .flops = router_flops, .fill = router_fill,
     .rows = rows0, .scratch_size = router_scratch,
     .check_row = router_check},
    {.name = "cross-entropy",
     .what = "logsumexp(logits) - logits[target] per row",
     .d = {1024, 32000}, .dq = {128, 4096}, .tol = 1e-5,
     .outputs = {"loss"}, .build = xent_build, .shape = shape2,
     .flops = no_flops, .fill = xent_fill, .rows = rows0,
     .scratch_size = one, .check_row = xent_check},
};
/* clang-format on */
const size_t bench_ops_count = sizeof bench_ops_defs / sizeof *bench_ops_defs;
