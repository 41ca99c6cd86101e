/* The scalar reference of attention's instructions (core/isa.def):
 * TGATHERPACK, TSOFTMAXONLINE and TSOFTMAXFINAL, written to be obviously
 * right; tileops/ref.c puts them in the scalar table. Compiled with
 * -ffp-contract=off, as ref.c. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/convert.h"
#include "tileops/tileops.h"

static float *f32_at(const pto_tile *t, size_t i) {
  return (float *)t->data + i;
}

static float ldf(const pto_tile *t, uint32_t r, uint32_t c) {
  return *f32_at(t, (size_t)r * t->stride + c);
}

/* The i-th index of an index tile, row-major over its valid region. */
static int32_t index_at(const pto_tile *t, uint32_t i) {
  uint32_t r = i / t->valid_cols, c = i % t->valid_cols;
  return ((const int32_t *)t->data)[(size_t)r * t->stride + c];
}

/* Zeroes a packed B operand (K x N valid) whole panels deep: the padding
 * columns of its last panel stay zero, everything else is written after. */
static void zero_panels_b(pto_tile *t, uint32_t w) {
  uint32_t panels = (t->valid_cols + w - 1) / w;
  for (uint32_t p = 0; p < panels; p++)
    for (uint32_t k = 0; k < t->valid_rows; k++)
      memset(f32_at(t, pto__pack_b_index(t, w, k, p * w)), 0,
             w * sizeof(float));
}

int pto__ref_TGATHERPACK(int op, const pto_targs *a) {
  (void)op;
  pto_tile *gt = a->dst[0], *v = a->dst[1];
  const pto_tile *idx = a->src[0];
  const pto_gview *g = &a->g;
  const uint32_t w = (uint32_t)a->imm[0], n = gt->valid_cols;
  const size_t es = pto_dtype_size(g->dtype);
  zero_panels_b(gt, w);
  zero_panels_b(v, w);
  for (uint32_t t = 0; t < n; t++) {
    int32_t i = index_at(idx, t);
    if (i < 0 || i >= g->rows)
      continue; /* a zero row */
    const unsigned char *row =
        (const unsigned char *)g->base + (int64_t)i * g->row_stride * (int64_t)es;
    for (uint32_t d = 0; d < gt->valid_rows; d++)
      *f32_at(gt, pto__pack_b_index(gt, w, d, t)) =
          pto__to_f32(g->dtype, row + (int64_t)d * g->col_stride * (int64_t)es);
    for (uint32_t c = 0; c < v->valid_cols; c++)
      *f32_at(v, pto__pack_b_index(v, w, t, c)) =
          pto__to_f32(g->dtype, row + (int64_t)c * g->col_stride * (int64_t)es);
  }
  return PTO_OK;
}

int pto__ref_TSOFTMAXONLINE(int op, const pto_targs *a) {
  (void)op;
  pto_tile *p = a->dst[0], *st = a->dst[1];
  const pto_tile *s = a->src[0], *idx = a->src[1], *prev = a->src[2];
  const int cont = (a->flags & PTO_TF_ACC) != 0;
  const uint32_t w = (uint32_t)a->imm[0], M = s->valid_rows, N = s->valid_cols;
  const float scale = (float)a->s;
  /* packed P: the padding rows of the last panel are zero */
  for (uint32_t r = M; r < (M + w - 1) / w * w; r++)
    for (uint32_t c = 0; c < N; c++)
      *f32_at(p, pto__pack_a_index(p, w, r, c)) = 0.0f;
  for (uint32_t r = 0; r < M; r++) {
    float m = cont ? ldf(prev, r, 1) : -INFINITY;
    float l = cont ? ldf(prev, r, 2) : 0.0f;
    float mx = m;
    for (uint32_t c = 0; c < N; c++) {
      int32_t i = index_at(idx, c);
      if (i >= 0 && i < a->imm[1]) {
        float x = ldf(s, r, c) * scale;
        mx = x > mx ? x : mx;
      }
    }
    float alpha = 1.0f, sum = 0.0f;
    if (mx != -INFINITY)
      alpha = expf(m - mx); /* 0 when m is -inf */
    for (uint32_t c = 0; c < N; c++) {
      int32_t i = index_at(idx, c);
      float e = 0.0f;
      if (mx != -INFINITY && i >= 0 && i < a->imm[1])
        e = expf(ldf(s, r, c) * scale - mx);
      *f32_at(p, pto__pack_a_index(p, w, r, c)) = e;
      sum += e;
    }
    float *o = f32_at(st, (size_t)r * st->stride);
    o[0] = alpha;
    o[1] = mx;
    o[2] = mx != -INFINITY ? l * alpha + sum : l;
  }
  return PTO_OK;
}

int pto__ref_TSOFTMAXFINAL(int op, const pto_targs *a) {
  (void)op;
  pto_tile *out = a->dst[0], *lse = a->dst[1];
  const pto_tile *o = a->src[0], *st = a->src[1];
  for (uint32_t r = 0; r < o->valid_rows; r++) {
    const float m = ldf(st, r, 1), l = ldf(st, r, 2);
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    for (uint32_t c = 0; c < o->valid_cols; c++)
      *f32_at(out, (size_t)r * out->stride + c) = l > 0 ? ldf(o, r, c) * inv
                                                        : 0.0f;
    *f32_at(lse, (size_t)r * lse->stride) = l > 0 ? m + logf(l) : INFINITY;
  }
  return PTO_OK;
}
