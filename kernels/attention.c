/* DeepSeek's sparse attention as a PTO program, and its plain-C reference
 * and checker (pto/attention.h). */
#include "pto/attention.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "dyn_dims.h"
#include "ref_values.h"

#define OP "attention"

pto_attention_params pto_attention_params_default(void) {
  pto_attention_params prm;
  memset(&prm, 0, sizeof prm);
  return prm;
}

double pto_attention_gflop(const pto_attention_dims *d) {
  return 2.0 * (double)d->b * (double)d->s1 * (double)d->h *
         (double)d->topk * (double)(d->d + d->dv) * 1e-9;
}

static double scale_of(const pto_attention_params *prm, int64_t D) {
  return prm->scale != 0 ? prm->scale : 1.0 / sqrt((double)D);
}

pto_tile_shape pto_attention_tile(const pto_machine *m,
                                  const pto_attention_dims *d) {
  pto_tile_shape t = {0, 0, 0, 0, 0};
  pto_machine host;
  if (!m && pto_machine_host(&host) == PTO_OK)
    m = &host;
  if (m && d) /* leaves t zeros for bad dims */
    pto_sparse_attention_tile(m, d->h, d->d, d->dv, d->topk, &t);
  return t;
}

pto_tensor *pto_attention(pto_program *p, pto_tensor *q, pto_tensor *kv,
                          pto_tensor *indices, int64_t dv,
                          const pto_attention_params *prm, pto_tensor **lse) {
  if (lse)
    *lse = NULL;
  if (!p)
    return NULL;
  if (!prm || !lse) {
    pto_program_fail(p, PTO_EINVAL, OP, "%s is NULL", prm ? "lse" : "params");
    return NULL;
  }
  if (!q || !kv || !indices) {
    if (!pto_program_status(p))
      pto_program_fail(p, PTO_EINVAL, OP, "q, kv or indices is NULL");
    return NULL;
  }
  char bq[96], bi[96];
  if (pto_tensor_ndim(q) != 4 || pto_tensor_ndim(indices) != 3) {
    pto_program_fail(p, PTO_ESHAPE, OP,
                     "q %s must be [B,S1,H,D] and indices %s [B,S1,topk]",
                     pto_tensor_describe(q, bq, sizeof bq),
                     pto_tensor_describe(indices, bi, sizeof bi));
    return NULL;
  }
  const pto_attention_dims d = {pto_tensor_dim(q, 0),
                                pto_tensor_dim(q, 1),
                                pto_tensor_ndim(kv) > 1 ? pto_tensor_dim(kv, 1)
                                                        : 0,
                                pto_tensor_dim(q, 2),
                                pto_tensor_dim(q, 3),
                                dv,
                                pto_tensor_dim(indices, 2)};
  if (prm->dynamic & ~PTO_ATTENTION_DYN_ALL) {
    pto_program_fail(p, PTO_EINVAL, OP,
                     "dynamic is 0x%x; it takes PTO_ATTENTION_DYN_B, _S1 and "
                     "_S2 (0x%x) only",
                     prm->dynamic, PTO_ATTENTION_DYN_ALL);
    return NULL;
  }
  /* a flag asserts the axis is dynamic: here the inputs decide, and a
   * static axis under a flag means the caller expected another program */
  pto_tensor *const on[3] = {q, q, kv}; /* PTO_ATTENTION_DYN_B << f */
  const char *const dim[3] = {"B", "S1", "S2"};
  for (int f = 0; f < 3; f++)
    if ((prm->dynamic & (1u << f)) &&
        (pto_tensor_ndim(on[f]) < 2 ||
         pto_tensor_dim_dynamic(on[f], f ? 1 : 0) < 0)) {
      pto_program_fail(p, PTO_EINVAL, OP,
                       "params flag %s dynamic, but axis %d of %s %s is "
                       "static (pto_attention follows its inputs' dims: "
                       "declare it with pto_dim_dynamic, or build with "
                       "pto_attention_program)",
                       dim[f], f ? 1 : 0, f == 2 ? "kv" : "q",
                       pto_tensor_describe(on[f], bq, sizeof bq));
      return NULL;
    }
  const int dyn_s1 = pto_tensor_dim_dynamic(q, 1) >= 0,
            dyn_s2 =
                pto_tensor_ndim(kv) > 1 && pto_tensor_dim_dynamic(kv, 1) >= 0;
  /* the mask reads S1 and S2 as dims (below): not as slices or merges */
  if (prm->causal && ((dyn_s1 && pto_tensor_dim_code(q, 1) >= 0) ||
                      (dyn_s2 && pto_tensor_dim_code(kv, 1) >= 0))) {
    pto_tensor *t = dyn_s1 && pto_tensor_dim_code(q, 1) >= 0 ? q : kv;
    pto_program_fail(p, PTO_ENOTSUP, OP,
                     "axis 1 of %s %s is part of dynamic dim '%s' (a slice "
                     "or a merge); the causal mask needs S1 and S2 as dims "
                     "of their own",
                     t == q ? "q" : "kv", pto_tensor_describe(t, bq, sizeof bq),
                     pto_program_dim_name(p, pto_tensor_dim_dynamic(t, 1)));
    return NULL;
  }
  pto_program_push_label(p, OP);
  if (prm->causal) { /* key j is visible to query i when j <= S2 - S1 + i */
    pto_program_push_label(p, "mask");
    pto_tensor *lim;
    if (!dyn_s1 && !dyn_s2) {
      const int64_t col[2] = {1, d.s1};
      lim = pto_reshape(p, pto_iota(p, PTO_I32, 2, col, d.s2 - d.s1), 2,
                        (const int64_t[]){d.s1, 1});
    } else {
      /* S2 - S1 + i at the extents a run binds: a dynamic dim's extent is
       * the sum of a row of ones along it (a reduction covers the valid
       * part of a dynamic axis, 0 for an empty one) */
      const int64_t S1 = pto_tensor_dim_code(q, 1),
                    S2 = dyn_s2 ? pto_tensor_dim_code(kv, 1) : d.s2;
      lim = pto_iota_axis(p, PTO_I32, 2, (const int64_t[]){S1, 1}, 0,
                          (dyn_s2 ? 0 : d.s2) - (dyn_s1 ? 0 : d.s1));
      if (dyn_s2)
        lim = pto_add(p, lim,
                      pto_rowsum(p, pto_full(p, PTO_I32, 2,
                                             (const int64_t[]){1, S2}, 1)));
      if (dyn_s1)
        lim = pto_sub(p, lim,
                      pto_rowsum(p, pto_full(p, PTO_I32, 2,
                                             (const int64_t[]){1, S1}, 1)));
    }
    pto_tensor *none = pto_full(p, PTO_I32, 1, (const int64_t[]){1}, -1);
    indices = pto_select(p, pto_cmp(p, indices, lim, PTO_CMP_LE), indices,
                         none);
    pto_program_pop_label(p);
  }
  /* a tile of zeros: the compiler's for the machine it compiles for */
  pto_tile_shape tile = prm->tile;
  pto_program_push_tile(p, &tile);
  pto_tensor *out =
      pto_sparse_attention(p, q, kv, indices, dv, scale_of(prm, d.d), lse);
  pto_program_pop_tile(p);
  pto_program_pop_label(p);
  if (pto_program_status(p)) {
    *lse = NULL;
    return NULL;
  }
  return out;
}

pto_program *pto_attention_program(const pto_attention_dims *d,
                                   const pto_attention_params *prm) {
  pto_program *p = pto_program_new("attention");
  if (!p)
    return NULL;
  if (!d) {
    pto_program_fail(p, PTO_EINVAL, OP, "dims are NULL");
    return p;
  }
  /* B, S1 and S2: static extents, or dynamic dims with those maxima */
  int64_t ext[3] = {d->b, d->s1, d->s2};
  if (!pto__dyn_bs1s2(p, OP, "PTO_ATTENTION_DYN", prm ? prm->dynamic : 0u, ext))
    return p;
  const int64_t B = ext[0], S1 = ext[1], S2 = ext[2];
  const int64_t qs[4] = {B, S1, d->h, d->d}, ks[3] = {B, S2, d->d},
                is[3] = {B, S1, d->topk};
  const pto_dtype dt = prm ? prm->dtype : PTO_F32;
  pto_tensor *q = pto_input(p, "q", dt, 4, qs);
  pto_tensor *kv = pto_input(p, "kv", dt, 3, ks);
  pto_tensor *ix = pto_input(p, "indices", PTO_I32, 3, is);
  pto_tensor *lse = NULL;
  pto_tensor *out = pto_attention(p, q, kv, ix, d->dv, prm, &lse);
  pto_output(p, out, "out");
  pto_output(p, lse, "lse");
  return p;
}

/* ---- plain-C reference ------------------------------------------------------ */

static int dims_ok(const pto_attention_dims *d,
                   const pto_attention_params *prm) {
  return d && prm && d->b >= 1 && d->s1 >= 1 && d->s2 >= 1 && d->h >= 1 &&
         d->d >= 1 && d->dv >= 1 && d->dv <= d->d && d->topk >= 1 &&
         (prm->dtype == PTO_F32 || prm->dtype == PTO_BF16);
}

/* Sizes d inside buffers laid out for m: m valid, d's b, s1, s2 in [0,
 * m's], the rest equal. 1, or 0 with why ("bad arguments: ..."). */
static int bound_ok(const pto_attention_dims *d, const pto_attention_dims *m,
                    const pto_attention_params *prm, char *why, size_t n) {
  if (!d || !m || !dims_ok(m, prm)) {
    snprintf(why, n, "bad arguments: %s",
             !d ? "dims are NULL"
                : "the layout's dims or the params are not valid sizes");
    return 0;
  }
  if (d->b < 0 || d->b > m->b || d->s1 < 0 || d->s1 > m->s1 || d->s2 < 0 ||
      d->s2 > m->s2 || d->h != m->h || d->d != m->d || d->dv != m->dv ||
      d->topk != m->topk) {
    snprintf(why, n,
             "bad arguments: dims {b %" PRId64 ", s1 %" PRId64 ", s2 %" PRId64
             ", h %" PRId64 ", d %" PRId64 ", dv %" PRId64 ", topk %" PRId64
             "} do not fit buffers laid out for {%" PRId64 ", %" PRId64
             ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
             "} (b, s1, s2 at most those, the rest equal)",
             d->b, d->s1, d->s2, d->h, d->d, d->dv, d->topk, m->b, m->s1, m->s2,
             m->h, m->d, m->dv, m->topk);
    return 0;
  }
  return 1;
}

/* Row r of d's B*S1 rows in buffers laid out for m: batch, query, buffer
 * row of q, indices, out and lse, and the first row of kv of its batch.
 * With m = d, buf = r. */
typedef struct at_row {
  int64_t b, i, buf, kv;
} at_row;

static at_row row_at(const pto_attention_dims *d, const pto_attention_dims *m,
                     int64_t r) {
  const at_row a = {r / d->s1, r % d->s1, r / d->s1 * m->s1 + r % d->s1,
                    r / d->s1 * m->s2};
  return a;
}

/* Row a's valid keys (in slot order) into sel; their count. */
static int64_t valid_keys(const pto_attention_dims *d,
                          const pto_attention_params *prm,
                          const int32_t *indices, at_row a, int64_t *sel) {
  const int64_t i = a.i, last = prm->causal ? d->s2 - d->s1 + i : d->s2;
  int64_t n = 0;
  for (int64_t t = 0; t < d->topk; t++) {
    const int64_t j = indices[a.buf * d->topk + t];
    if (j >= 0 && j < d->s2 && j <= last)
      sel[n++] = j;
  }
  return n;
}

/* out (dv values) and lse of row a, head h, in double, from q and kv of
 * dtype dt. */
static void ref_head(const pto_attention_dims *d, pto_dtype dt, double scale,
                     const void *q, const void *kv, const int64_t *sel,
                     int64_t n, at_row a, int64_t h, double *x, double *out,
                     double *lse) {
  const int64_t qh = (a.buf * d->h + h) * d->d;
  const int64_t kb = a.kv * d->d;
  double mx = -INFINITY;
  for (int64_t t = 0; t < n; t++) {
    const int64_t k = kb + sel[t] * d->d;
    double dot = 0;
    for (int64_t c = 0; c < d->d; c++)
      dot += pto__ref_val(q, dt, qh + c) * pto__ref_val(kv, dt, k + c);
    x[t] = scale * dot;
    mx = x[t] > mx ? x[t] : mx;
  }
  double sum = 0;
  for (int64_t t = 0; t < n; t++)
    sum += exp(x[t] - mx);
  *lse = n ? mx + log(sum) : INFINITY;
  for (int64_t c = 0; c < d->dv; c++)
    out[c] = 0;
  for (int64_t t = 0; t < n; t++) {
    const double p = exp(x[t] - *lse);
    const int64_t v = kb + sel[t] * d->d;
    for (int64_t c = 0; c < d->dv; c++)
      out[c] += p * pto__ref_val(kv, dt, v + c);
  }
}

typedef struct scratch {
  int64_t *sel;
  double *x, *o;
} scratch;

static int scratch_new(const pto_attention_dims *d, scratch *s) {
  s->sel = malloc((size_t)d->topk * sizeof *s->sel);
  s->x = malloc((size_t)d->topk * sizeof *s->x);
  s->o = malloc((size_t)d->dv * sizeof *s->o);
  return s->sel && s->x && s->o ? 0 : -1;
}

static void scratch_free(scratch *s) {
  free(s->sel);
  free(s->x);
  free(s->o);
}

/* pto_attention_ref_bound's work, its arguments checked. */
static pto_status ref_rows(const pto_attention_dims *d,
                           const pto_attention_dims *m,
                           const pto_attention_params *prm, const void *q,
                           const void *kv, const int32_t *indices, int64_t r0,
                           int64_t r1, float *out, float *lse) {
  scratch s;
  if (scratch_new(d, &s)) {
    scratch_free(&s);
    return PTO_ENOMEM;
  }
  const double scale = scale_of(prm, d->d);
  for (int64_t r = r0; r < r1; r++) {
    const at_row a = row_at(d, m, r);
    const int64_t n = valid_keys(d, prm, indices, a, s.sel);
    for (int64_t h = 0; h < d->h; h++) {
      double l;
      ref_head(d, prm->dtype, scale, q, kv, s.sel, n, a, h, s.x, s.o, &l);
      lse[a.buf * d->h + h] = (float)l;
      for (int64_t c = 0; c < d->dv; c++)
        out[(a.buf * d->h + h) * d->dv + c] = (float)s.o[c];
    }
  }
  scratch_free(&s);
  return PTO_OK;
}

pto_status pto_attention_ref(const pto_attention_dims *d,
                             const pto_attention_params *prm, const void *q,
                             const void *kv, const int32_t *indices, int64_t r0,
                             int64_t r1, float *out, float *lse) {
  if (!dims_ok(d, prm) || !q || !kv || !indices || !out || !lse || r0 < 0 ||
      r0 > r1 || r1 > d->b * d->s1)
    return PTO_EINVAL;
  return ref_rows(d, d, prm, q, kv, indices, r0, r1, out, lse);
}

pto_status pto_attention_ref_bound(const pto_attention_dims *d,
                                   const pto_attention_dims *m,
                                   const pto_attention_params *prm,
                                   const void *q, const void *kv,
                                   const int32_t *indices, int64_t r0,
                                   int64_t r1, float *out, float *lse) {
  char why[512];
  if (!m)
    m = d;
  if (!bound_ok(d, m, prm, why, sizeof why) || !q || !kv || !indices || !out ||
      !lse || r0 < 0 || r0 > r1 || r1 > d->b * d->s1)
    return PTO_EINVAL;
  return ref_rows(d, m, prm, q, kv, indices, r0, r1, out, lse);
}

/* pto_attention_check_bound's work, its arguments checked (msg not
 * NULL). */
static int check_rows(const pto_attention_dims *d, const pto_attention_dims *m,
                      const pto_attention_params *prm, const void *q,
                      const void *kv, const int32_t *indices, const float *out,
                      const float *lse, int64_t r0, int64_t r1, char *msg,
                      size_t msg_size) {
  scratch s;
  if (scratch_new(d, &s)) {
    scratch_free(&s);
    snprintf(msg, msg_size, "out of memory");
    return -1;
  }
  const double scale = scale_of(prm, d->d);
  int bad = 0;
  for (int64_t r = r0; r < r1 && !bad; r++) {
    const at_row a = row_at(d, m, r);
    const int64_t n = valid_keys(d, prm, indices, a, s.sel);
    for (int64_t h = 0; h < d->h && !bad; h++) {
      double l;
      ref_head(d, prm->dtype, scale, q, kv, s.sel, n, a, h, s.x, s.o, &l);
      const double got = lse[a.buf * d->h + h];
      if (isinf(l) ? got != l : !(fabs(got - l) <= 1e-6 + 1e-6 * fabs(l))) {
        snprintf(msg, msg_size,
                 "row %" PRId64 " (b %" PRId64 ", i %" PRId64 "), head %" PRId64
                 ": lse %.9g, expected %.9g (%" PRId64 " valid keys)",
                 r, r / d->s1, r % d->s1, h, got, l, n);
        bad = 1;
      }
      for (int64_t c = 0; c < d->dv && !bad; c++) {
        const double g = out[(a.buf * d->h + h) * d->dv + c], w = s.o[c];
        if (!(fabs(g - w) <= 1e-5 + 1e-4 * fabs(w))) {
          snprintf(msg, msg_size,
                   "row %" PRId64 " (b %" PRId64 ", i %" PRId64
                   "), head %" PRId64 ", column %" PRId64
                   ": out %.9g, expected %.9g",
                   r, r / d->s1, r % d->s1, h, c, g, w);
          bad = 1;
        }
      }
    }
  }
  scratch_free(&s);
  return bad ? -1 : 0;
}

int pto_attention_check(const pto_attention_dims *d,
                        const pto_attention_params *prm, const void *q,
                        const void *kv, const int32_t *indices,
                        const float *out, const float *lse, int64_t r0,
                        int64_t r1, char *msg, size_t msg_size) {
  char dummy[1];
  if (!msg || !msg_size) {
    msg = dummy;
    msg_size = sizeof dummy;
  }
  msg[0] = 0;
  if (!dims_ok(d, prm) || !q || !kv || !indices || !out || !lse || r0 < 0 ||
      r0 > r1 || r1 > d->b * d->s1) {
    snprintf(msg, msg_size, "bad arguments");
    return -1;
  }
  return check_rows(d, d, prm, q, kv, indices, out, lse, r0, r1, msg, msg_size);
}

int pto_attention_check_bound(const pto_attention_dims *d,
                              const pto_attention_dims *m,
                              const pto_attention_params *prm, const void *q,
                              const void *kv, const int32_t *indices,
                              const float *out, const float *lse, int64_t r0,
                              int64_t r1, char *msg, size_t msg_size) {
  char dummy[1];
  if (!msg || !msg_size) {
    msg = dummy;
    msg_size = sizeof dummy;
  }
  msg[0] = 0;
  if (!m)
    m = d;
  if (!bound_ok(d, m, prm, msg, msg_size))
    return -1;
  if (!q || !kv || !indices || !out || !lse || r0 < 0 || r0 > r1 ||
      r1 > d->b * d->s1) {
    snprintf(msg, msg_size,
             "bad arguments: a NULL buffer, or rows [%" PRId64 ", %" PRId64
             ") not inside the %" PRId64 " of B*S1",
             r0, r1, d->b * d->s1);
    return -1;
  }
  return check_rows(d, m, prm, q, kv, indices, out, lse, r0, r1, msg, msg_size);
}
