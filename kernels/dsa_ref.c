/* The DSA chain in plain C (pto/dsa.h): the prologs in double, then per
 * sequence pto_indexer_ref and pto_attention_ref over its keys gathered
 * through the block table; and the checker, which judges each part on the
 * reference's own inputs to it, so that a near-tie of the top-k may
 * resolve either way. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsa_internal.h"
#include "pto/pto.h"

#define NORM_EPS 1e-6

/* y[N] = x[K] . w[K,N] in double. */
static void vecmat_d(const double *x, const float *w, int64_t K, int64_t N,
                     double *y) {
  for (int64_t n = 0; n < N; n++)
    y[n] = 0;
  for (int64_t k = 0; k < K; k++) {
    const double xk = x[k];
    const float *wk = w + k * N;
    for (int64_t n = 0; n < N; n++)
      y[n] += xk * (double)wk[n];
  }
}

static void rms_norm(double *v, int64_t n, const float *g) {
  double ss = 0;
  for (int64_t i = 0; i < n; i++)
    ss += v[i] * v[i];
  const double r = 1.0 / sqrt(ss / (double)n + NORM_EPS);
  for (int64_t i = 0; i < n; i++)
    v[i] = v[i] * r * (double)g[i];
}

static void layer_norm(double *v, int64_t n, const float *g,
                       const float *beta) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; i++)
    mean += v[i];
  mean /= (double)n;
  for (int64_t i = 0; i < n; i++)
    var += (v[i] - mean) * (v[i] - mean);
  const double r = 1.0 / sqrt(var / (double)n + NORM_EPS);
  for (int64_t i = 0; i < n; i++)
    v[i] = (v[i] - mean) * r * (double)g[i] + (double)beta[i];
}

/* Rotate-half RoPE of u[R] in place, a pair (i, i + R/2) at a time. */
static void rope(double *u, int64_t R, const float *c, const float *s) {
  const int64_t h = R / 2;
  for (int64_t i = 0; i < h; i++) {
    const double a = u[i], b = u[i + h];
    u[i] = a * c[i] - b * s[i];
    u[i + h] = b * c[i + h] + a * s[i + h];
  }
}

static double dmax(double a, double b) {
  return a > b ? a : b;
}

pto_status pto__dsa_prologs_ref(const pto_dsa_dims *d, int64_t t0, int64_t t1,
                                const void *const *in, float *q, float *kv_new,
                                float *q_idx, float *k_new, float *weights) {
  const int64_t D = d->d, Q = d->q_lora, H = d->h, N = d->nope, R = d->rope,
                L = d->latent, HI = d->hi, DI = d->di;
#define F(i) ((const float *)in[i])
  int64_t wide = H * (N + R) > HI * DI ? H * (N + R) : HI * DI;
  wide = (wide > L + R ? wide : L + R) + DI + L;
  double *a = malloc((size_t)wide * sizeof *a);
  double *b = malloc((size_t)wide * sizeof *b);
  double *cq = malloc((size_t)Q * sizeof *cq);
  double *x = malloc((size_t)D * sizeof *x); /* a token's x, in double */
  pto_status st = PTO_OK;
  if (!a || !b || !cq || !x) {
    st = PTO_ENOMEM;
    goto done;
  }
  for (int64_t t = t0; t < t1; t++) {
    const float *c = F(PTO_DSA_COS) + t * R, *s = F(PTO_DSA_SIN) + t * R;
    for (int64_t i = 0; i < D; i++)
      x[i] = F(PTO_DSA_X)[t * D + i];
    /* the keys: kv_new (MLA prolog), k_new (indexer prolog) */
    vecmat_d(x, F(PTO_DSA_W_DKV_KR), D, L + R, a);
    rms_norm(a, L, F(PTO_DSA_GAMMA_CKV));
    rope(a + L, R, c, s);
    for (int64_t i = 0; i < L + R; i++)
      kv_new[t * (L + R) + i] = (float)a[i];
    vecmat_d(x, F(PTO_DSA_W_K), D, DI, a);
    layer_norm(a, DI, F(PTO_DSA_LN_GAMMA_K), F(PTO_DSA_LN_BETA_K));
    rope(a, R, c, s);
    vecmat_d(a, F(PTO_DSA_HADAMARD), DI, DI, b);
    for (int64_t i = 0; i < DI; i++)
      k_new[t * DI + i] = (float)b[i];
    if (!q)
      continue;
    /* the queries: MLA prolog */
    vecmat_d(x, F(PTO_DSA_W_DQ), D, Q, cq);
    rms_norm(cq, Q, F(PTO_DSA_GAMMA_CQ));
    vecmat_d(cq, F(PTO_DSA_W_UQ_QR), Q, H * (N + R), a);
    for (int64_t h = 0; h < H; h++) {
      float *qh = q + (t * H + h) * (L + R);
      vecmat_d(a + h * (N + R), F(PTO_DSA_W_UK) + h * N * L, N, L, b);
      for (int64_t l = 0; l < L; l++)
        qh[l] = (float)b[l];
      rope(a + h * (N + R) + N, R, c, s);
      for (int64_t r = 0; r < R; r++)
        qh[L + r] = (float)a[h * (N + R) + N + r];
    }
    /* indexer prolog */
    vecmat_d(cq, F(PTO_DSA_W_QB), Q, HI * DI, a);
    for (int64_t h = 0; h < HI; h++) {
      rope(a + h * DI, R, c, s);
      vecmat_d(a + h * DI, F(PTO_DSA_HADAMARD), DI, DI, b);
      for (int64_t i = 0; i < DI; i++)
        q_idx[(t * HI + h) * DI + i] = (float)b[i];
    }
    vecmat_d(x, F(PTO_DSA_W_PROJ), D, HI, a);
    for (int64_t h = 0; h < HI; h++)
      weights[t * HI + h] = (float)(a[h] / sqrt((double)HI * (double)DI));
  }
#undef F
done:
  free(a);
  free(b);
  free(cq);
  free(x);
  return st;
}

/* The reference's intermediates for one step. */
typedef struct refbuf {
  float *q, *kv_new, *q_idx, *k_new, *w;
  float *keys, *kv; /* one sequence's, len rows */
  float *val;       /* one sequence's indexer values or scores */
  int32_t *idx;     /* one sequence's indices */
} refbuf;

static void refbuf_free(refbuf *r) {
  free(r->q);
  free(r->kv_new);
  free(r->q_idx);
  free(r->k_new);
  free(r->w);
  free(r->keys);
  free(r->kv);
  free(r->val);
  free(r->idx);
}

static pto_status refbuf_new(refbuf *r, const pto_dsa_dims *d,
                             const pto_dsa_step *s, const pto_dsa_params *prm,
                             int64_t T) {
  int64_t lmax = 0, nmax = 0;
  for (int64_t b = 0; b < s->b; b++) {
    lmax = s->len[b] > lmax ? s->len[b] : lmax;
    nmax = s->n[b] > nmax ? s->n[b] : nmax;
  }
  const int64_t LR = d->latent + d->rope;
  r->q = malloc((size_t)(T * d->h * LR) * sizeof *r->q);
  r->kv_new = malloc((size_t)(T * LR) * sizeof *r->kv_new);
  r->q_idx = malloc((size_t)(T * d->hi * d->di) * sizeof *r->q_idx);
  r->k_new = malloc((size_t)(T * d->di) * sizeof *r->k_new);
  r->w = malloc((size_t)(T * d->hi) * sizeof *r->w);
  r->keys = malloc((size_t)(lmax * d->di) * sizeof *r->keys);
  r->kv = malloc((size_t)(lmax * LR) * sizeof *r->kv);
  r->val = malloc((size_t)(nmax * prm->topk) * sizeof *r->val);
  r->idx = malloc((size_t)(nmax * prm->topk) * sizeof *r->idx);
  if (!r->q || !r->kv_new || !r->q_idx || !r->k_new || !r->w || !r->keys ||
      !r->kv || !r->val || !r->idx) {
    refbuf_free(r);
    return PTO_ENOMEM;
  }
  return PTO_OK;
}

/* Sequence b's block table entries in range; 0 or -1 with msg. */
static int table_ok(const pto_dsa_dims *d, const pto_dsa_step *s,
                    const int32_t *table, int64_t b, char *msg, size_t size) {
  const int64_t lc = s->len[b] - s->n[b];
  for (int64_t j = 0; j < (lc + d->block - 1) / d->block; j++) {
    const int32_t v = table[b * s->max_blocks + j];
    if (v < 0 || v >= s->blocks) {
      snprintf(msg, size,
               "block_table[%" PRId64 "][%" PRId64 "] is %" PRId32
               ", outside the %" PRId64 " blocks of the caches",
               b, j, v, s->blocks);
      return -1;
    }
  }
  return 0;
}

/* Sequence b's rows of a cache [blocks,BS,w] (through the table) followed
 * by its n new rows, into dst [len,w]. */
static void seq_rows(const pto_dsa_dims *d, const pto_dsa_step *s,
                     const int32_t *table, int64_t b, const float *cache,
                     const float *fresh, int64_t w, float *dst) {
  const int64_t lc = s->len[b] - s->n[b], BS = d->block;
  for (int64_t j = 0; j < lc; j++) {
    const int64_t row =
        (int64_t)table[b * s->max_blocks + j / BS] * BS + j % BS;
    memcpy(dst + j * w, cache + row * w, (size_t)w * sizeof *dst);
  }
  memcpy(dst + lc * w, fresh, (size_t)(s->n[b] * w) * sizeof *dst);
}

static pto_status begin(const pto_dsa_dims *d, const pto_dsa_step *s,
                        const pto_dsa_params *prm, const void *const *in,
                        char *msg, size_t size) {
  if (!pto__dsa_valid(d, s, prm, msg, size))
    return PTO_EINVAL;
  if (!in) {
    snprintf(msg, size, "the input array is NULL");
    return PTO_EINVAL;
  }
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++)
    if (!in[i]) {
      snprintf(msg, size, "input %s is NULL", pto_dsa_input_name(i));
      return PTO_EINVAL;
    }
  for (int64_t b = 0; b < s->b; b++)
    if (table_ok(d, s, in[PTO_DSA_BLOCK_TABLE], b, msg, size))
      return PTO_EINVAL;
  return PTO_OK;
}

pto_status pto_dsa_ref(const pto_dsa_dims *d, const pto_dsa_step *s,
                       const pto_dsa_params *prm, const void *const *in,
                       void *const *out) {
  char msg[256];
  pto_status st = begin(d, s, prm, in, msg, sizeof msg);
  if (st)
    return st;
  if (!out)
    return PTO_EINVAL;
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    if (!out[i])
      return PTO_EINVAL;
  const int64_t T = pto_dsa_tokens(s), H = d->h, L = d->latent,
                LR = L + d->rope, HI = d->hi, DI = d->di, K = prm->topk;
  refbuf r;
  if (refbuf_new(&r, d, s, prm, T))
    return PTO_ENOMEM;
  st = pto__dsa_prologs_ref(d, 0, T, in, r.q, r.kv_new, r.q_idx, r.k_new, r.w);
  if (st) {
    refbuf_free(&r);
    return st;
  }
  memcpy(out[PTO_DSA_KV_NEW], r.kv_new, (size_t)(T * LR) * sizeof(float));
  memcpy(out[PTO_DSA_K_NEW], r.k_new, (size_t)(T * DI) * sizeof(float));
  const int32_t *table = in[PTO_DSA_BLOCK_TABLE];
  int32_t *idx = out[PTO_DSA_INDICES];
  float *o = out[PTO_DSA_OUT], *lse = out[PTO_DSA_LSE];
  for (int64_t b = 0, t0 = 0; b < s->b && !st; t0 += s->n[b], b++) {
    const int64_t n = s->n[b], len = s->len[b];
    seq_rows(d, s, table, b, in[PTO_DSA_K_CACHE], r.k_new + t0 * DI, DI,
             r.keys);
    seq_rows(d, s, table, b, in[PTO_DSA_KV_CACHE], r.kv_new + t0 * LR, LR,
             r.kv);
    const pto_indexer_dims id = {1, n, len, HI, DI};
    pto_indexer_params ip = pto_indexer_params_default();
    ip.topk = K;
    ip.mask = PTO_MASK_CAUSAL;
    st = pto_indexer_ref(&id, &ip, r.q_idx + t0 * HI * DI, r.keys,
                         r.w + t0 * HI, 0, n, idx + t0 * K, r.val);
    const pto_attention_dims ad = {1, n, len, H, LR, L, K};
    pto_attention_params ap = pto_attention_params_default();
    ap.scale = prm->scale;
    if (!st)
      st = pto_attention_ref(&ad, &ap, r.q + t0 * H * LR, r.kv, idx + t0 * K, 0,
                             n, o + t0 * H * L, lse + t0 * H);
  }
  refbuf_free(&r);
  return st;
}

/* ---- checker ------------------------------------------------------------ */

static int failf(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failf(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (msg && size)
    vsnprintf(msg, size, fmt, ap);
  va_end(ap);
  return -1;
}

/* Rows [t0, t1) of got [T,w] against ref within 1e-4 (1 + the row's max
 * |ref|). */
static int check_rows(const char *what, const float *got, const float *ref,
                      int64_t t0, int64_t t1, int64_t w, char *msg,
                      size_t size) {
  for (int64_t t = t0; t < t1; t++) {
    double big = 0;
    for (int64_t i = 0; i < w; i++)
      big = dmax(big, fabs((double)ref[t * w + i]));
    const double tol = 1e-4 * (1 + big);
    for (int64_t i = 0; i < w; i++) {
      const double g = got[t * w + i], e = ref[t * w + i];
      if (!(fabs(g - e) <= tol))
        return failf(msg, size,
                     "%s: row %" PRId64 " col %" PRId64
                     ": %.9g, reference %.9g (tolerance %.3g)",
                     what, t, i, g, e, tol);
    }
  }
  return 0;
}

/* The indexer's score of key j for token row i of a sequence, in double. */
static double score(const pto_dsa_dims *d, const float *q, const float *w,
                    const float *keys, int64_t j) {
  double s = 0;
  for (int64_t h = 0; h < d->hi; h++) {
    double dot = 0;
    for (int64_t c = 0; c < d->di; c++)
      dot += (double)q[h * d->di + c] * (double)keys[j * d->di + c];
    s += (double)w[h] * (dot > 0 ? dot : 0);
  }
  return s;
}

typedef struct ranked {
  double s;
  int32_t j;
} ranked;

static int by_score(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->s != y->s)
    return x->s > y->s ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

/* Sequence b's indices (got, n rows of topk) as sets: each row's leading
 * run of indices is re-ranked by the reference scores (the order of a
 * near-tie is the implementation's to choose; attention does not depend
 * on it) and handed with those scores to pto_indexer_check. */
static int check_indices(const pto_dsa_dims *d, const pto_dsa_params *prm,
                         refbuf *r, int64_t b, int64_t t0, int64_t n,
                         int64_t len, int64_t i0, int64_t i1,
                         const int32_t *got, char *msg, size_t size) {
  const int64_t K = prm->topk, HI = d->hi, DI = d->di;
  ranked *rk = malloc((size_t)K * sizeof *rk);
  if (!rk)
    return failf(msg, size, "dsa check: out of memory");
  for (int64_t i = i0; i < i1; i++) {
    const int32_t *g = got + (t0 + i) * K;
    const int64_t vis = len - n + i + 1;
    int64_t m = 0;
    while (m < K && g[m] >= 0)
      m++;
    for (int64_t t = m; t < K; t++)
      if (g[t] != -1) {
        free(rk);
        return failf(msg, size,
                     "indices: sequence %" PRId64 " token %" PRId64
                     ": slot %" PRId64 " holds %" PRId32
                     " after the padding began at slot %" PRId64,
                     b, i, t, g[t], m);
      }
    for (int64_t t = 0; t < m; t++) {
      rk[t].j = g[t];
      rk[t].s = g[t] < vis ? score(d, r->q_idx + (t0 + i) * HI * DI,
                                   r->w + (t0 + i) * HI, r->keys, g[t])
                           : -INFINITY; /* the check names it */
    }
    qsort(rk, (size_t)m, sizeof *rk, by_score);
    for (int64_t t = 0; t < K; t++) {
      r->idx[i * K + t] = t < m ? rk[t].j : -1;
      r->val[i * K + t] = t < m ? (float)rk[t].s : -INFINITY;
    }
  }
  free(rk);
  const pto_indexer_dims id = {1, n, len, HI, DI};
  pto_indexer_params ip = pto_indexer_params_default();
  ip.topk = K;
  ip.mask = PTO_MASK_CAUSAL;
  char m2[200];
  if (pto_indexer_check(&id, &ip, r->q_idx + t0 * HI * DI, r->keys,
                        r->w + t0 * HI, r->idx, r->val, i0, i1, 1e-4, m2,
                        sizeof m2))
    return failf(msg, size, "indices: sequence %" PRId64 ": %s", b, m2);
  return 0;
}

/* Sequence b's out and lse against pto_attention_ref on the reference's q
 * and keys with the implementation's indices. The prologs' f32 rounding
 * moves each logit by up to about dx = 1e-5 * the row's logit scale
 * (scale * sum |q| |kv| of its largest selected key), so lse gets dx on
 * top of the fp32 tolerance, and out 2 dx times its largest |value|. */
static int check_attention(const pto_dsa_dims *d, const pto_dsa_params *prm,
                           refbuf *r, int64_t b, int64_t t0, int64_t n,
                           int64_t len, int64_t i0, int64_t i1,
                           const int32_t *idx, const float *out,
                           const float *lse, char *msg, size_t size) {
  const int64_t H = d->h, L = d->latent, LR = L + d->rope, K = prm->topk;
  float *ro = malloc((size_t)(n * H * L) * sizeof *ro);
  float *rl = malloc((size_t)(n * H) * sizeof *rl);
  int rc = 0;
  if (!ro || !rl) {
    rc = failf(msg, size, "dsa check: out of memory");
    goto done;
  }
  const pto_attention_dims ad = {1, n, len, H, LR, L, K};
  pto_attention_params ap = pto_attention_params_default();
  ap.scale = prm->scale;
  if (pto_attention_ref(&ad, &ap, r->q + t0 * H * LR, r->kv, idx + t0 * K, i0,
                        i1, ro, rl)) {
    rc = failf(msg, size, "dsa check: the attention reference failed");
    goto done;
  }
  for (int64_t i = i0; i < i1 && !rc; i++) {
    /* the row's largest key norm, |value| and |q| of any head */
    double kmax = 0, vmax = 0;
    for (int64_t t = 0; t < K; t++) {
      const int32_t j = idx[(t0 + i) * K + t];
      if (j < 0 || j >= len)
        continue;
      double k1 = 0;
      for (int64_t c = 0; c < LR; c++) {
        k1 = dmax(k1, fabs((double)r->kv[j * LR + c]));
        if (c < L)
          vmax = dmax(vmax, fabs((double)r->kv[j * LR + c]));
      }
      kmax = dmax(kmax, k1);
    }
    for (int64_t h = 0; h < H && !rc; h++) {
      const float *qh = r->q + ((t0 + i) * H + h) * LR;
      double qs = 0;
      for (int64_t c = 0; c < LR; c++)
        qs += fabs((double)qh[c]);
      const double dx = 1e-5 * prm->scale * qs * kmax;
      const int64_t o = (i * H + h);
      const double gl = lse[(t0 + i) * H + h], el = rl[o];
      if (isinf(el) ? gl != el
                    : !(fabs(gl - el) <= 1e-5 + 1e-5 * fabs(el) + dx))
        rc = failf(msg, size,
                   "lse: sequence %" PRId64 " token %" PRId64 " head %" PRId64
                   ": %.9g, reference %.9g",
                   b, i, h, gl, el);
      for (int64_t c = 0; c < L && !rc; c++) {
        const double g = out[((t0 + i) * H + h) * L + c], e = ro[o * L + c];
        if (!(fabs(g - e) <= 1e-5 + 1e-4 * fabs(e) + 2 * dx * vmax))
          rc = failf(msg, size,
                     "out: sequence %" PRId64 " token %" PRId64 " head %" PRId64
                     " col %" PRId64 ": %.9g, reference %.9g",
                     b, i, h, c, g, e);
      }
    }
  }
done:
  free(ro);
  free(rl);
  return rc;
}

int pto_dsa_check(const pto_dsa_dims *d, const pto_dsa_step *s,
                  const pto_dsa_params *prm, const void *const *in,
                  const void *const *out, char *msg, size_t msg_size) {
  const int64_t T = s ? pto_dsa_tokens(s) : -1;
  return pto_dsa_check_tokens(d, s, prm, in, out, 0, T > 0 ? T : 0, msg,
                              msg_size);
}

int pto_dsa_check_tokens(const pto_dsa_dims *d, const pto_dsa_step *s,
                         const pto_dsa_params *prm, const void *const *in,
                         const void *const *out, int64_t t0, int64_t t1,
                         char *msg, size_t msg_size) {
  char m[256];
  pto_status st = begin(d, s, prm, in, m, sizeof m);
  if (!st && (t0 < 0 || t0 > t1 || t1 > pto_dsa_tokens(s))) {
    snprintf(m, sizeof m,
             "tokens [%" PRId64 ", %" PRId64
             ") are not within the step's %" PRId64,
             t0, t1, pto_dsa_tokens(s));
    st = PTO_EINVAL;
  }
  if (!st && !out) {
    snprintf(m, sizeof m, "the output array is NULL");
    st = PTO_EINVAL;
  }
  for (int i = 0; !st && i < PTO_DSA_OUTPUT_COUNT; i++)
    if (!out[i]) {
      snprintf(m, sizeof m, "output %s is NULL", pto_dsa_output_name(i));
      st = PTO_EINVAL;
    }
  if (st) {
    failf(msg, msg_size, "dsa check: %s", m);
    return st;
  }
  const int64_t T = pto_dsa_tokens(s), LR = d->latent + d->rope, DI = d->di;
  refbuf r;
  if (refbuf_new(&r, d, s, prm, T)) {
    failf(msg, msg_size, "dsa check: out of memory");
    return PTO_ENOMEM;
  }
  /* the range's tokens, and the keys of the new tokens before them in the
   * sequence of the first (a token sees its sequence's earlier new tokens,
   * never later ones); the keys of later tokens stay 0 */
  int64_t k0 = 0;
  for (int64_t b = 0, sb = 0; b < s->b; sb += s->n[b], b++)
    if (sb <= t0)
      k0 = sb;
  memset(r.kv_new, 0, (size_t)(T * LR) * sizeof *r.kv_new);
  memset(r.k_new, 0, (size_t)(T * DI) * sizeof *r.k_new);
  if (pto__dsa_prologs_ref(d, k0, t0, in, NULL, r.kv_new, NULL, r.k_new,
                           NULL) ||
      pto__dsa_prologs_ref(d, t0, t1, in, r.q, r.kv_new, r.q_idx, r.k_new,
                           r.w)) {
    refbuf_free(&r);
    failf(msg, msg_size, "dsa check: out of memory");
    return PTO_ENOMEM;
  }
  int rc = check_rows("kv_new", out[PTO_DSA_KV_NEW], r.kv_new, t0, t1, LR, msg,
                      msg_size);
  if (!rc)
    rc = check_rows("k_new", out[PTO_DSA_K_NEW], r.k_new, t0, t1, DI, msg,
                    msg_size);
  const int32_t *table = in[PTO_DSA_BLOCK_TABLE];
  for (int64_t b = 0, sb = 0; b < s->b && !rc; sb += s->n[b], b++) {
    const int64_t n = s->n[b], len = s->len[b];
    const int64_t i0 = t0 > sb ? t0 - sb : 0,
                  i1 = t1 < sb + n ? t1 - sb : n; /* the sequence's rows */
    if (i0 >= i1)
      continue;
    seq_rows(d, s, table, b, in[PTO_DSA_K_CACHE], r.k_new + sb * DI, DI,
             r.keys);
    seq_rows(d, s, table, b, in[PTO_DSA_KV_CACHE], r.kv_new + sb * LR, LR,
             r.kv);
    rc = check_indices(d, prm, &r, b, sb, n, len, i0, i1, out[PTO_DSA_INDICES],
                       msg, msg_size);
    if (!rc)
      rc = check_attention(d, prm, &r, b, sb, n, len, i0, i1,
                           out[PTO_DSA_INDICES], out[PTO_DSA_OUT],
                           out[PTO_DSA_LSE], msg, msg_size);
  }
  refbuf_free(&r);
  return rc;
}
