/* The scalar reference of the instructions that read global rows where
 * they lie, and of attention's softmax (core/isa.def): TMATMUL_GA,
 * TMATMUL_GB, TMATMUL_RELU_WSUM_G, TSOFTMAXONLINE and TSOFTMAXFINAL, written to be obviously right; tileops/ref.c puts them in
 * the scalar table. Compiled with -ffp-contract=off, as ref.c. */
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

/* Element (r, c) of a matmul operand as f32: packed as TLOAD packs A
 * (pack_a) or B (pack_b) in panels of w, or plain. */
static float operand_at(const pto_tile *t, int pack_a, int pack_b, uint32_t w,
                        uint32_t r, uint32_t c) {
  const size_t i = pack_a   ? pto__pack_a_index(t, w, r, c)
                   : pack_b ? pto__pack_b_index(t, w, r, c)
                            : (size_t)r * t->stride + c;
  return pto__to_f32(t->dtype, (const unsigned char *)t->data +
                                   i * pto__dtype_bytes(t->dtype));
}

/* Element c of the table's row i as f32, 0 when i is outside the table. */
static float table_at(const pto_gview *g, int32_t i, uint32_t c) {
  if (i < 0 || i >= g->rows)
    return 0.0f;
  const int64_t es = (int64_t)pto__dtype_bytes(g->dtype);
  return pto__to_f32(g->dtype, (const unsigned char *)g->base +
                                   ((int64_t)i * g->row_stride +
                                    (int64_t)c * g->col_stride) * es);
}

/* dst[t][n] = sum_k g[idx_t][k] * B[k][n] in f32, k in order, each
 * product rounded to f32. */
int pto__ref_TMATMUL_GA(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *idx = a->src[0], *B = a->src[1];
  const int pb = (a->flags & PTO_TF_PACK_B) != 0;
  const uint32_t w = (uint32_t)a->imm[1], K = B->valid_rows;
  for (uint32_t t = 0; t < d->valid_rows; t++) {
    const int32_t i = pto__index_at(idx, t);
    const int valid = i >= 0 && i < a->g.rows;
    for (uint32_t n = 0; n < d->valid_cols; n++) {
      float sum = 0.0f;
      for (uint32_t k = 0; valid && k < K; k++) {
        const float p = table_at(&a->g, i, k) * operand_at(B, 0, pb, w, k, n);
        sum += p;
      }
      *f32_at(d, (size_t)t * d->stride + n) = sum;
    }
  }
  return PTO_OK;
}

/* dst[m][c] = c0 + sum_t A[m][t] * g[idx_t][c] in f32 over the valid
 * slots t, in order, each product rounded; c0 = 0, dst[m][c] with
 * PTO_TF_ACC, times src2[m][0] with PTO_TF_ROWSCALE too. */
int pto__ref_TMATMUL_GB(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *A = a->src[0], *idx = a->src[1];
  const int pa = (a->flags & PTO_TF_PACK_A) != 0,
            acc = (a->flags & PTO_TF_ACC) != 0,
            scaled = acc && (a->flags & PTO_TF_ROWSCALE);
  const uint32_t w = (uint32_t)a->imm[0], n = A->valid_cols;
  for (uint32_t m = 0; m < d->valid_rows; m++) {
    const float f = scaled ? ldf(a->src[2], m, 0) : 1.0f;
    for (uint32_t c = 0; c < d->valid_cols; c++) {
      float *o = f32_at(d, (size_t)m * d->stride + c);
      float sum = acc ? (scaled ? *o * f : *o) : 0.0f;
      for (uint32_t t = 0; t < n; t++) {
        const int32_t i = pto__index_at(idx, t);
        if (i < 0 || i >= a->g.rows) /* an invalid slot: nothing */
          continue;
        const float p = operand_at(A, pa, 0, w, m, t) * table_at(&a->g, i, c);
        sum += p;
      }
      *o = sum;
    }
  }
  return PTO_OK;
}

/* dst[r][n] = sum over g of w[r*G + g] * ReLU(sum_k Q^T[k][r*G + g] *
 * key_n[k]) in f32, each product rounded, k then g in order; -inf past the
 * causal diagonal. */
int pto__ref_TMATMUL_RELU_WSUM_G(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *qt = a->src[0], *w = a->src[1];
  const int pb = (a->flags & PTO_TF_PACK_B) != 0,
            causal = (a->flags & PTO_TF_CAUSAL) != 0;
  const uint32_t nw = (uint32_t)a->imm[1], K = qt->valid_rows,
                 G = qt->valid_cols / d->valid_rows;
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t n = 0; n < d->valid_cols; n++) {
      float sum = 0.0f;
      if (causal && (double)n > (double)r + a->s) {
        sum = -INFINITY;
      } else {
        for (uint32_t g = 0; g < G; g++) {
          float dot = 0.0f;
          for (uint32_t k = 0; k < K; k++) {
            const float p = operand_at(qt, 0, pb, nw, k, r * G + g) *
                            table_at(&a->g, (int32_t)n, k);
            dot += p;
          }
          const float x = dot < 0.0f ? 0.0f : dot, p = ldf(w, r * G + g, 0) * x;
          sum += p;
        }
      }
      *f32_at(d, (size_t)r * d->stride + n) = sum;
    }
  return PTO_OK;
}

int pto__ref_TSOFTMAXONLINE(int op, const pto_targs *a) {
  (void)op;
  pto_tile *p = a->dst[0], *st = a->dst[1];
  const pto_tile *s = a->src[0], *idx = a->src[1], *prev = a->src[2];
  const int cont = (a->flags & PTO_TF_ACC) != 0;
  const int tr = (a->flags & PTO_TF_TRANS_A) != 0;
  const uint32_t w = (uint32_t)a->imm[0];
  const uint32_t M = tr ? s->valid_cols : s->valid_rows,
                 N = tr ? s->valid_rows : s->valid_cols;
  const float scale = (float)a->s;
#define SCORE(r, c) (tr ? ldf(s, c, r) : ldf(s, r, c))
  /* packed P: the padding rows of the last panel are zero */
  for (uint32_t r = M; r < (M + w - 1) / w * w; r++)
    for (uint32_t c = 0; c < N; c++)
      *f32_at(p, pto__pack_a_index(p, w, r, c)) = 0.0f;
  for (uint32_t r = 0; r < M; r++) {
    float m = cont ? ldf(prev, r, 1) : -INFINITY;
    float l = cont ? ldf(prev, r, 2) : 0.0f;
    float mx = m;
    for (uint32_t c = 0; c < N; c++) {
      int32_t i = pto__index_at(idx, c);
      if (i >= 0 && i < a->imm[1]) {
        float x = SCORE(r, c) * scale;
        mx = x > mx ? x : mx;
      }
    }
    float alpha = 1.0f, sum = 0.0f;
    if (mx != -INFINITY)
      alpha = expf(m - mx); /* 0 when m is -inf */
    for (uint32_t c = 0; c < N; c++) {
      int32_t i = pto__index_at(idx, c);
      float e = 0.0f;
      if (mx != -INFINITY && i >= 0 && i < a->imm[1])
        e = expf(SCORE(r, c) * scale - mx);
      *f32_at(p, pto__pack_a_index(p, w, r, c)) = e;
      sum += e;
    }
    float *o = f32_at(st, (size_t)r * st->stride);
    o[0] = alpha;
    o[1] = mx;
    o[2] = mx != -INFINITY ? l * alpha + sum : l;
  }
#undef SCORE
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
