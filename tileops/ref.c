/* The scalar reference of the tile instructions of core/isa.def, one
 * function per instruction, written to be obviously right, not fast, and
 * pto__isa_scalar, the table of them all: the oracle the SIMD tables are
 * checked against. This file holds the element-wise, tile-scalar, axis,
 * matmul and move instructions; tileops/ref_mem.c the memory and complex
 * ones, tileops/topk_ref.c TTOPK and TMRGTOPK, tileops/ref_attn.c
 * attention's; tileops/ref.h what ref.c and ref_mem.c share. Semantics:
 * core/isa.def, plus the details fixed in tileops/tileops.h. Operands have
 * passed pto__tileop_check. Compiled with -ffp-contract=off (no FMA
 * contraction).
 *
 * In-place use: where tileops.h allows dst to be a source, every element is
 * read before the element at the same position is written, and copies use
 * memmove. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/convert.h"
#include "tileops/ref.h"
#include "tileops/tileops.h"

/* ---- element-wise ------------------------------------------------------- */

static int binary(const pto_targs *a, f_binop f, i_binop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0], *y = a->src[1];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (d->dtype == PTO_I32)
        sti(d, r, c, i(ldi(x, r, c), ldi(y, r, c)));
      else
        stf(d, r, c, f(ldf(x, r, c), ldf(y, r, c)));
  return PTO_OK;
}

/* i is NULL for f32-only instructions. */
static int unary(const pto_targs *a, f_unop f, i_unop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (d->dtype == PTO_I32)
        sti(d, r, c, i(ldi(x, r, c)));
      else
        stf(d, r, c, f(ldf(x, r, c)));
  return PTO_OK;
}

static int ref_TADD(int op, const pto_targs *a) {
  (void)op;
  return binary(a, f_add, i_add);
}
static int ref_TSUB(int op, const pto_targs *a) {
  (void)op;
  return binary(a, f_sub, i_sub);
}
static int ref_TMUL(int op, const pto_targs *a) {
  (void)op;
  return binary(a, f_mul, i_mul);
}
static int ref_TDIV(int op, const pto_targs *a) {
  (void)op;
  return binary(a, f_div, i_div);
}
static int ref_TMAX(int op, const pto_targs *a) {
  (void)op;
  return binary(a, f_max, i_max);
}
static int ref_TMIN(int op, const pto_targs *a) {
  (void)op;
  return binary(a, f_min, i_min);
}
static int ref_TEXP(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_exp, NULL);
}
static int ref_TLOG(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_log, NULL);
}
static int ref_TSQRT(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_sqrt, NULL);
}
static int ref_TRSQRT(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_rsqrt, NULL);
}
static int ref_TRECIP(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_recip, NULL);
}
static int ref_TRELU(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_relu, i_relu);
}
static int ref_TABS(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_abs, i_abs);
}
static int ref_TNEG(int op, const pto_targs *a) {
  (void)op;
  return unary(a, f_neg, i_neg);
}

/* C comparisons: false when either side is NaN, except != . */
static int compare_f(pto_cmp_mode m, float x, float y) {
  switch (m) {
  case PTO_CMP_EQ:
    return x == y;
  case PTO_CMP_NE:
    return x != y;
  case PTO_CMP_LT:
    return x < y;
  case PTO_CMP_LE:
    return x <= y;
  case PTO_CMP_GT:
    return x > y;
  default:
    return x >= y;
  }
}
static int compare_i(pto_cmp_mode m, int32_t x, int32_t y) {
  switch (m) {
  case PTO_CMP_EQ:
    return x == y;
  case PTO_CMP_NE:
    return x != y;
  case PTO_CMP_LT:
    return x < y;
  case PTO_CMP_LE:
    return x <= y;
  case PTO_CMP_GT:
    return x > y;
  default:
    return x >= y;
  }
}

static int ref_TCMP(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0], *y = a->src[1];
  pto_cmp_mode m = (pto_cmp_mode)a->imm[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (x->dtype == PTO_I32)
        sti(d, r, c, compare_i(m, ldi(x, r, c), ldi(y, r, c)));
      else
        sti(d, r, c, compare_f(m, ldf(x, r, c), ldf(y, r, c)));
  return PTO_OK;
}

static int ref_TSEL(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *mask = a->src[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      copy_elem(d, r, c, ldi(mask, r, c) != 0 ? a->src[1] : a->src[2], r, c);
  return PTO_OK;
}

/* dst = src converted to dst's dtype, with an optional ReLU on the value
 * first (in i32 for an i32 source, else in f32). */
static int convert_tile(const pto_targs *a, int relu) {
  pto_tile *d = a->dst[0];
  const pto_tile *s = a->src[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++) {
      if (!relu) {
        pto__convert(d->dtype, elem(d, r, c), s->dtype, elem(s, r, c));
      } else if (s->dtype == PTO_I32) {
        int32_t v = i_relu(ldi(s, r, c));
        pto__convert(d->dtype, elem(d, r, c), PTO_I32, &v);
      } else {
        float v = f_relu(pto__to_f32(s->dtype, elem(s, r, c)));
        pto__from_f32(d->dtype, elem(d, r, c), v);
      }
    }
  return PTO_OK;
}

static int ref_TCVT(int op, const pto_targs *a) {
  (void)op;
  return convert_tile(a, 0);
}

/* ---- tile-scalar -------------------------------------------------------- */

static int scalar(const pto_targs *a, f_binop f, i_binop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  float sf = (float)a->s;
  int32_t si = pto__f64_to_i32_sat(a->s);
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (d->dtype == PTO_I32)
        sti(d, r, c, i(ldi(x, r, c), si));
      else
        stf(d, r, c, f(ldf(x, r, c), sf));
  return PTO_OK;
}

static int ref_TADDS(int op, const pto_targs *a) {
  (void)op;
  return scalar(a, f_add, i_add);
}
static int ref_TSUBS(int op, const pto_targs *a) {
  (void)op;
  return scalar(a, f_sub, i_sub);
}
static int ref_TMULS(int op, const pto_targs *a) {
  (void)op;
  return scalar(a, f_mul, i_mul);
}
static int ref_TDIVS(int op, const pto_targs *a) {
  (void)op;
  return scalar(a, f_div, i_div);
}
static int ref_TMAXS(int op, const pto_targs *a) {
  (void)op;
  return scalar(a, f_max, i_max);
}
static int ref_TMINS(int op, const pto_targs *a) {
  (void)op;
  return scalar(a, f_min, i_min);
}

/* The scalar operand as one element of dtype dt (i32: nearest even,
 * saturating; others via f32). */
static void scalar_as(pto_dtype dt, double s, unsigned char out[4]) {
  if (dt == PTO_I32) {
    int32_t v = pto__f64_to_i32_sat(s);
    memcpy(out, &v, sizeof v);
  } else {
    pto__from_f32(dt, out, (float)s);
  }
}

static int ref_TEXPANDS(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  unsigned char v[4];
  scalar_as(d->dtype, a->s, v);
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      memcpy(elem(d, r, c), v, pto__dtype_bytes(d->dtype));
  return PTO_OK;
}

/* ---- axis: reductions --------------------------------------------------- */

/* dst[r][0] = src[r][0] op src[r][1] op ... (left to right). */
static int row_reduce(const pto_targs *a, f_binop f, i_binop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  for (uint32_t r = 0; r < x->valid_rows; r++)
    if (d->dtype == PTO_I32) {
      int32_t acc = ldi(x, r, 0);
      for (uint32_t c = 1; c < x->valid_cols; c++)
        acc = i(acc, ldi(x, r, c));
      sti(d, r, 0, acc);
    } else {
      float acc = ldf(x, r, 0);
      for (uint32_t c = 1; c < x->valid_cols; c++)
        acc = f(acc, ldf(x, r, c));
      stf(d, r, 0, acc);
    }
  return PTO_OK;
}

/* dst[0][c] = src[0][c] op src[1][c] op ... (top to bottom). */
static int col_reduce(const pto_targs *a, f_binop f, i_binop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  for (uint32_t c = 0; c < x->valid_cols; c++)
    if (d->dtype == PTO_I32) {
      int32_t acc = ldi(x, 0, c);
      for (uint32_t r = 1; r < x->valid_rows; r++)
        acc = i(acc, ldi(x, r, c));
      sti(d, 0, c, acc);
    } else {
      float acc = ldf(x, 0, c);
      for (uint32_t r = 1; r < x->valid_rows; r++)
        acc = f(acc, ldf(x, r, c));
      stf(d, 0, c, acc);
    }
  return PTO_OK;
}

static int ref_TROWSUM(int op, const pto_targs *a) {
  (void)op;
  return row_reduce(a, f_add, i_add);
}
int pto__ref_TROWMAX(int op, const pto_targs *a) {
  (void)op;
  return row_reduce(a, f_max, i_max);
}
static int ref_TROWMIN(int op, const pto_targs *a) {
  (void)op;
  return row_reduce(a, f_min, i_min);
}
static int ref_TCOLSUM(int op, const pto_targs *a) {
  (void)op;
  return col_reduce(a, f_add, i_add);
}
static int ref_TCOLMAX(int op, const pto_targs *a) {
  (void)op;
  return col_reduce(a, f_max, i_max);
}
static int ref_TCOLMIN(int op, const pto_targs *a) {
  (void)op;
  return col_reduce(a, f_min, i_min);
}

/* ---- axis: broadcasts --------------------------------------------------- */

static int ref_TROWEXPAND(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      copy_elem(d, r, c, a->src[0], r, 0);
  return PTO_OK;
}

static int ref_TCOLEXPAND(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      copy_elem(d, r, c, a->src[0], 0, c);
  return PTO_OK;
}

/* dst[r][c] = src0[r][c] op src1[r][0]; i is NULL for f32-only ops. */
static int row_expand(const pto_targs *a, f_binop f, i_binop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0], *v = a->src[1];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (d->dtype == PTO_I32)
        sti(d, r, c, i(ldi(x, r, c), ldi(v, r, 0)));
      else
        stf(d, r, c, f(ldf(x, r, c), ldf(v, r, 0)));
  return PTO_OK;
}

/* dst[r][c] = src0[r][c] op src1[0][c]. */
static int col_expand(const pto_targs *a, f_binop f, i_binop i) {
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0], *v = a->src[1];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (d->dtype == PTO_I32)
        sti(d, r, c, i(ldi(x, r, c), ldi(v, 0, c)));
      else
        stf(d, r, c, f(ldf(x, r, c), ldf(v, 0, c)));
  return PTO_OK;
}

static int ref_TROWEXPANDADD(int op, const pto_targs *a) {
  (void)op;
  return row_expand(a, f_add, i_add);
}
static int ref_TROWEXPANDSUB(int op, const pto_targs *a) {
  (void)op;
  return row_expand(a, f_sub, i_sub);
}
static int ref_TROWEXPANDMUL(int op, const pto_targs *a) {
  (void)op;
  return row_expand(a, f_mul, i_mul);
}
static int ref_TROWEXPANDDIV(int op, const pto_targs *a) {
  (void)op;
  return row_expand(a, f_div, i_div);
}
static int ref_TROWEXPANDMAX(int op, const pto_targs *a) {
  (void)op;
  return row_expand(a, f_max, i_max);
}
static int ref_TROWEXPANDEXPDIF(int op, const pto_targs *a) {
  (void)op;
  return row_expand(a, f_expdif, NULL);
}
/* dst0 = exp(src0 - src1[r]) and dst1[r] = its row sum, folded left to
 * right as TROWSUM folds. src1[r] is read before row r is written, so dst1
 * may be src1's buffer. */
int pto__ref_TROWEXPANDEXPDIFSUM(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0], *s = a->dst[1];
  const pto_tile *x = a->src[0], *v = a->src[1];
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    const float m = ldf(v, r, 0);
    float acc = 0.0f;
    for (uint32_t c = 0; c < d->valid_cols; c++) {
      const float e = f_expdif(ldf(x, r, c), m);
      stf(d, r, c, e);
      acc = c ? acc + e : e;
    }
    stf(s, r, 0, acc);
  }
  return PTO_OK;
}
static int ref_TCOLEXPANDADD(int op, const pto_targs *a) {
  (void)op;
  return col_expand(a, f_add, i_add);
}
static int ref_TCOLEXPANDSUB(int op, const pto_targs *a) {
  (void)op;
  return col_expand(a, f_sub, i_sub);
}
static int ref_TCOLEXPANDMUL(int op, const pto_targs *a) {
  (void)op;
  return col_expand(a, f_mul, i_mul);
}
static int ref_TCOLEXPANDDIV(int op, const pto_targs *a) {
  (void)op;
  return col_expand(a, f_div, i_div);
}

/* ---- matmul ------------------------------------------------------------- */

/* Address of logical element (r, c) of matmul operand t: packed in panels
 * of w when packed (TLOAD's layout, core/isa.def), else stored transposed
 * ((c, r)) when trans, else at (r, c). */
static const void *operand(const pto_tile *t, int packed_a, int packed_b,
                           uint32_t w, int trans, uint32_t r, uint32_t c) {
  size_t i = packed_a   ? pto__pack_a_index(t, w, r, c)
             : packed_b ? pto__pack_b_index(t, w, r, c)
             : trans    ? at(t, c, r)
                        : at(t, r, c);
  return (const unsigned char *)t->data + i * pto__dtype_bytes(t->dtype);
}

/* (acc + sum_k A[m][k] * B[k][n]) in f32, k in order, each product
 * rounded to f32. */
static float dot(const pto_targs *a, uint32_t m, uint32_t n, float acc) {
  const pto_tile *A = a->src[0], *B = a->src[1];
  int ta = (a->flags & PTO_TF_TRANS_A) != 0,
      tb = (a->flags & PTO_TF_TRANS_B) != 0;
  int pa = (a->flags & PTO_TF_PACK_A) != 0,
      pb = (a->flags & PTO_TF_PACK_B) != 0;
  uint32_t mr = (uint32_t)a->imm[0], nr = (uint32_t)a->imm[1];
  uint32_t K = ta ? A->valid_rows : A->valid_cols;
  float sum = acc;
  for (uint32_t k = 0; k < K; k++) {
    float x = pto__to_f32(A->dtype, operand(A, pa, 0, mr, ta, m, k));
    float y = pto__to_f32(B->dtype, operand(B, 0, pb, nr, tb, k, n));
    float p = x * y;
    sum += p;
  }
  return sum;
}

/* dst[m][n] = (acc ? dst[m][n] : 0) + sum_k A[m][k] * B[k][n], dst[m][n]
 * first scaled by src2[m][0] under PTO_TF_ROWSCALE. */
static int matmul(const pto_targs *a, int acc) {
  pto_tile *d = a->dst[0];
  const int scaled = acc && (a->flags & PTO_TF_ROWSCALE);
  for (uint32_t m = 0; m < d->valid_rows; m++) {
    const float f = scaled ? ldf(a->src[2], m, 0) : 1.0f;
    for (uint32_t n = 0; n < d->valid_cols; n++) {
      const float c0 = acc ? ldf(d, m, n) : 0.0f;
      stf(d, m, n, dot(a, m, n, scaled ? c0 * f : c0));
    }
  }
  return PTO_OK;
}

static int ref_TMATMUL(int op, const pto_targs *a) {
  (void)op;
  return matmul(a, 0);
}
static int ref_TMATMUL_ACC(int op, const pto_targs *a) {
  (void)op;
  return matmul(a, 1);
}

/* dst[r][n] = sum over the G rows m of group r (m = r*G + g, in order) of
 * w[m] * ReLU(A x B)[m][n], in f32, each product rounded; -inf above the
 * causal diagonal. */
static int ref_TMATMUL_RELU_WSUM(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *w = a->src[2];
  const int ta = (a->flags & PTO_TF_TRANS_A) != 0;
  const uint32_t M = ta ? a->src[0]->valid_cols : a->src[0]->valid_rows;
  const uint32_t G = M / d->valid_rows;
  const int causal = (a->flags & PTO_TF_CAUSAL) != 0;
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t n = 0; n < d->valid_cols; n++) {
      float sum = 0.0f;
      if (causal && (double)n > (double)r + a->s) {
        sum = -INFINITY;
      } else {
        for (uint32_t g = 0; g < G; g++) {
          float p = ldf(w, r * G + g, 0) * f_relu(dot(a, r * G + g, n, 0.0f));
          sum += p;
        }
      }
      stf(d, r, n, sum);
    }
  return PTO_OK;
}

/* ---- move --------------------------------------------------------------- */

static int ref_TMOV(int op, const pto_targs *a) {
  (void)op;
  return convert_tile(a, (a->flags & PTO_TF_RELU) != 0);
}

static int ref_TEXTRACT(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  uint32_t r0 = (uint32_t)a->imm[0], c0 = (uint32_t)a->imm[1];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      copy_elem(d, r, c, a->src[0], r + r0, c + c0);
  return PTO_OK;
}

static int ref_TINSERT(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *s = a->src[0];
  uint32_t r0 = (uint32_t)a->imm[0], c0 = (uint32_t)a->imm[1];
  for (uint32_t r = 0; r < s->valid_rows; r++)
    for (uint32_t c = 0; c < s->valid_cols; c++)
      copy_elem(d, r + r0, c + c0, s, r, c);
  return PTO_OK;
}

static int ref_TTRANS(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      copy_elem(d, r, c, a->src[0], c, r);
  return PTO_OK;
}

/* dst may be src0: each element is read before it is written. */
static int ref_TTRIFILL(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  const float fill = (float)a->s;
  const int trans = (a->flags & PTO_TF_TRANS_A) != 0;
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++) {
      const int64_t i = trans ? c : r, j = trans ? r : c; /* row, col */
      stf(d, r, c, j <= i + a->imm[0] ? ldf(x, r, c) : fill);
    }
  return PTO_OK;
}

static int ref_TFILLPAD(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *s = a->src[0];
  /* s may be d itself: take its valid region before d's changes. */
  uint32_t vr = s->valid_rows, vc = s->valid_cols;
  unsigned char pad[4];
  scalar_as(d->dtype, a->s, pad);
  for (uint32_t r = 0; r < d->rows; r++)
    for (uint32_t c = 0; c < d->cols; c++)
      if (r < vr && c < vc)
        copy_elem(d, r, c, s, r, c);
      else
        memcpy(elem(d, r, c), pad, pto__dtype_bytes(d->dtype));
  d->valid_rows = d->rows;
  d->valid_cols = d->cols;
  return PTO_OK;
}

/* ---- the table ---------------------------------------------------------- */

/* TTOPK and TMRGTOPK: tileops/topk_ref.c. */
static int ref_TTOPK(int op, const pto_targs *a) {
  return pto__ref_ttopk(op, a);
}
static int ref_TMRGTOPK(int op, const pto_targs *a) {
  return pto__ref_tmrgtopk(op, a);
}

/* the instructions reading global rows in place, and attention's softmax,
 * live in tileops/ref_attn.c */
#define ref_TSOFTMAXONLINE pto__ref_TSOFTMAXONLINE
#define ref_TSOFTMAXFINAL pto__ref_TSOFTMAXFINAL
#define ref_TMATMUL_GA pto__ref_TMATMUL_GA
#define ref_TMATMUL_GB pto__ref_TMATMUL_GB
#define ref_TMATMUL_RELU_WSUM_G pto__ref_TMATMUL_RELU_WSUM_G
/* the memory instructions, the sorts, TCI, TTRI and the fused loads live in
 * tileops/ref_mem.c, under their ref_<NAME> names (tileops/ref.h) */

/* Generated from the instruction list: an instruction without a ref_<NAME>
 * function does not compile. */
/* clang-format off */
const pto_isa_table pto__isa_scalar = {
    .name = "scalar",
    .mm_mr = 4, /* any width runs; these keep padding small */
    .mm_nr = 16,
    /* f32 products and sums, bf16/f16 widened exactly first */
    .mm_engine = {[PTO_F32] = "scalar-f32", [PTO_BF16] = "scalar-f32",
                  [PTO_F16] = "scalar-f32"},
    .fn = {
#define PTO_INSN(name, fam, core, nsrc, ndst, cls, flags) [PTO_OP_##name] = ref_##name,
#include "core/isa.def"
#undef PTO_INSN
    },
};
/* clang-format on */
