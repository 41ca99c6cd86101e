/* core: dynamic dims in programs. Declaring them, shapes that name them,
 * ops that join or refuse them, and the evaluator at a binding
 * (pto_program_eval_dims) against the same program built statically at
 * those extents. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

Test(core, dims_are_declared_with_a_name_and_a_maximum) {
  pto_program *p = pto_program_new("dims");
  int64_t s = pto_dim_dynamic(p, "S", 100);
  cr_assert_lt(s, 0);
  cr_expect_eq(pto_program_num_dims(p), 1);
  cr_expect_str_eq(pto_program_dim_name(p, 0), "S");
  cr_expect_eq(pto_program_dim_max(p, 0), 100);
  cr_expect_eq(pto_program_find_dim(p, "S"), 0);
  cr_expect_eq(pto_program_find_dim(p, "T"), -1);
  const int64_t shape[2] = {s, 8};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape);
  cr_assert_not_null(x, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim(x, 0), 100, "the maximum");
  cr_expect_eq(pto_tensor_dim_dynamic(x, 0), 0);
  cr_expect_eq(pto_tensor_dim_dynamic(x, 1), -1);
  cr_expect_eq(pto_tensor_dim_code(x, 0), s);
  cr_expect_eq(pto_tensor_dim_code(x, 1), 8);
  cr_expect_eq(pto_tensor_numel(x), 800);
  pto_program_free(p);
}

static void expect_build_error(pto_program *p, pto_status st,
                               const char *text) {
  cr_expect_eq(pto_program_status(p), st, "%s", pto_program_error(p));
  cr_expect(strstr(pto_program_error(p), text), "'%s' lacks '%s'",
            pto_program_error(p), text);
}

Test(core, bad_dims_are_refused) {
  pto_program *p = pto_program_new("bad");
  cr_expect_eq(pto_dim_dynamic(p, "", 4), 0);
  expect_build_error(p, PTO_EINVAL, "a name of 1 to 31 characters");
  pto_program_free(p);
  p = pto_program_new("bad");
  pto_dim_dynamic(p, "S", 4);
  cr_expect_eq(pto_dim_dynamic(p, "S", 4), 0);
  expect_build_error(p, PTO_EINVAL, "dim 'S' is declared twice");
  pto_program_free(p);
  p = pto_program_new("bad");
  cr_expect_eq(pto_dim_dynamic(p, "S", 0), 0);
  expect_build_error(p, PTO_ERANGE, "maximum 0");
  pto_program_free(p);
  p = pto_program_new("bad");
  char name[8];
  for (int i = 0; i < PTO_DIMS_MAX; i++) {
    snprintf(name, sizeof name, "d%d", i);
    cr_assert_lt(pto_dim_dynamic(p, name, 2), 0);
  }
  cr_expect_eq(pto_dim_dynamic(p, "one_more", 2), 0);
  expect_build_error(p, PTO_ECAPACITY, "at most 64 dynamic dims");
  pto_program_free(p);
  /* a code no dim has */
  p = pto_program_new("bad");
  const int64_t shape[2] = {PTO_DIM_CODE_BASE - 3, 4};
  cr_expect_null(pto_input(p, "x", PTO_F32, 2, shape));
  expect_build_error(p, PTO_EINVAL, "the code of no dynamic dim");
  pto_program_free(p);
}

/* An op on x [S, 16] with S dynamic that must be refused with text. */
typedef pto_tensor *(*bad_op)(pto_program *p, pto_tensor *x);
static pto_tensor *broadcast_row(pto_program *p, pto_tensor *x) {
  const int64_t b[2] = {3, 0}, e[2] = {4, 16};
  return pto_add(p, x, pto_slice(p, x, b, e));
}
static pto_tensor *reshape_merge(pto_program *p, pto_tensor *x) {
  /* rows of 32 would cut the valid prefix of 16-element rows in halves */
  const int64_t s[2] = {16, 32};
  return pto_reshape(p, x, 2, s);
}
static pto_tensor *topk_plain(pto_program *p, pto_tensor *x) {
  pto_tensor *i;
  return pto_topk(p, pto_transpose(p, x, 0, 1), 4, &i);
}
static pto_tensor *concat_dyn(pto_program *p, pto_tensor *x) {
  pto_tensor *two[2] = {x, x};
  return pto_concat(p, 2, two, 0);
}

Test(core, ops_refuse_what_they_cannot_follow) {
  const struct {
    bad_op op;
    const char *text;
  } cases[] = {
      {broadcast_row, "so it is not broadcast"},
      {reshape_merge, "a reshape keeps each dynamic dim whole"},
      {topk_plain, "pto_topk_masked selects among the valid ones"},
      {concat_dyn, "only the last tensor of a concat may be dynamic"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_program *p = pto_program_new("refuse");
    const int64_t shape[2] = {pto_dim_dynamic(p, "S", 32), 16};
    pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape);
    cr_expect_null(cases[i].op(p, x), "case %zu", i);
    expect_build_error(p, PTO_ENOTSUP, cases[i].text);
    cr_expect(strstr(pto_program_error(p), "dynamic dim") &&
                  (strstr(pto_program_error(p), "S<=32") ||
                   strstr(pto_program_error(p), "S[3:4]")),
              "%s", pto_program_error(p));
    pto_program_free(p);
  }
}

/* y = rowsum(relu(x w + b)) + colsum-free chain, with x [B, S, K], w [K, N]:
 * B and S dynamic when dyn, else static at (b, s). */
static pto_program *chain(int dyn, int64_t b, int64_t s) {
  pto_program *p = pto_program_new("chain");
  const int64_t B = dyn ? pto_dim_dynamic(p, "B", 3) : b,
                S = dyn ? pto_dim_dynamic(p, "S", 40) : s;
  const int64_t xs[3] = {B, S, 24}, ws[2] = {24, 20}, bs[2] = {1, 20};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, xs);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, ws);
  pto_tensor *bias = pto_input(p, "bias", PTO_F32, 2, bs);
  pto_tensor *h = pto_relu(p, pto_add(p, pto_matmul(p, x, w, 0), bias));
  pto_output(p, pto_rowsum(p, h), "y");
  pto_output(p, pto_softmax(p, pto_transpose(p, h, 1, 2)), "z");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

static float val(int64_t i, int salt) {
  return (float)((i * 31 + salt * 7) % 13) / 8.0f - 0.75f;
}

Test(core, eval_at_a_binding_equals_the_static_program) {
  pto_program *p = chain(1, 0, 0);
  cr_expect_eq(pto_tensor_dim_dynamic(pto_program_output(p, 0), 0), 0);
  cr_expect_eq(pto_tensor_dim_dynamic(pto_program_output(p, 0), 1), 1);
  cr_expect_eq(pto_tensor_dim_dynamic(pto_program_output(p, 1), 2), 1,
               "the transpose moved S");
  const int64_t bind[][2] = {{1, 1}, {3, 40}, {2, 17}, {1, 16}};
  enum { BM = 3, SM = 40, K = 24, N = 20 };
  static float x[BM * SM * K], w[K * N], bias[N], y[BM * SM], z[BM * N * SM];
  for (int i = 0; i < BM * SM * K; i++)
    x[i] = val(i, 1);
  for (int i = 0; i < K * N; i++)
    w[i] = val(i, 2);
  for (int i = 0; i < N; i++)
    bias[i] = val(i, 3);
  for (size_t c = 0; c < sizeof bind / sizeof bind[0]; c++) {
    const int64_t b = bind[c][0], s = bind[c][1];
    for (int i = 0; i < BM * SM; i++)
      y[i] = -999;
    for (int i = 0; i < BM * N * SM; i++)
      z[i] = -999;
    const void *in[] = {x, w, bias};
    void *out[] = {y, z};
    cr_assert_eq(pto_program_eval_dims(p, bind[c], in, out), PTO_OK, "%s",
                 pto_program_error(p));
    /* the static program, on the same values packed densely */
    pto_program *q = chain(0, b, s);
    float *xd = malloc(sizeof(float) * (size_t)(b * s * K)),
          *yd = malloc(sizeof(float) * (size_t)(b * s)),
          *zd = malloc(sizeof(float) * (size_t)(b * N * s));
    for (int64_t i = 0; i < b; i++)
      for (int64_t r = 0; r < s; r++)
        memcpy(xd + (i * s + r) * K, x + (i * SM + r) * K, K * sizeof(float));
    const void *qin[] = {xd, w, bias};
    void *qout[] = {yd, zd};
    cr_assert_eq(pto_program_eval(q, qin, qout), PTO_OK, "%s",
                 pto_program_error(q));
    for (int64_t i = 0; i < BM; i++)
      for (int64_t r = 0; r < SM; r++) {
        const float got = y[i * SM + r];
        if (i < b && r < s)
          cr_expect_eq(got, yd[i * s + r], "y[%ld,%ld]", (long)i, (long)r);
        else
          cr_expect_eq(got, -999, "y past the extents is left alone");
      }
    for (int64_t i = 0; i < BM; i++)
      for (int64_t n = 0; n < N; n++)
        for (int64_t r = 0; r < SM; r++) {
          const float got = z[(i * N + n) * SM + r];
          if (i < b && r < s)
            cr_expect_eq(got, zd[(i * N + n) * s + r]);
          else
            cr_expect_eq(got, -999);
        }
    free(xd), free(yd), free(zd);
    pto_program_free(q);
  }
  pto_program_free(p);
}

Test(core, bindings_are_checked) {
  pto_program *p = chain(1, 0, 0);
  static float x[3 * 40 * 24], w[24 * 20], bias[20], y[3 * 40], z[3 * 20 * 40];
  const void *in[] = {x, w, bias};
  void *out[] = {y, z};
  const int64_t over[2] = {4, 10}, neg[2] = {1, -1}, zero[2] = {0, 5};
  cr_expect_eq(pto_program_eval_dims(p, over, in, out), PTO_ERANGE);
  cr_expect(strstr(pto_program_error(p),
                   "dim 'B' is bound to 4; it takes 0 to its maximum 3"),
            "%s", pto_program_error(p));
  cr_expect_eq(pto_program_eval_dims(p, neg, in, out), PTO_ERANGE);
  cr_expect(strstr(pto_program_error(p), "dim 'S' is bound to -1"), "%s",
            pto_program_error(p));
  /* an empty batch is a binding: nothing to compute, nothing written */
  for (int i = 0; i < 3 * 40; i++)
    y[i] = 7;
  cr_expect_eq(pto_program_eval_dims(p, zero, in, out), PTO_OK, "%s",
               pto_program_error(p));
  cr_expect_eq(y[0], 7);
  cr_expect_eq(pto_program_eval_dims(p, NULL, in, out), PTO_EINVAL);
  pto_program_free(p);
  /* two dims an op matches must be bound equal */
  p = pto_program_new("eq");
  const int64_t a = pto_dim_dynamic(p, "A", 8), b = pto_dim_dynamic(p, "B", 8);
  const int64_t sa[2] = {a, 4}, sb[2] = {b, 4}, sc[2] = {8, 4};
  pto_tensor *u = pto_input(p, "u", PTO_F32, 2, sa);
  pto_tensor *v = pto_input(p, "v", PTO_F32, 2, sb);
  pto_tensor *c = pto_input(p, "c", PTO_F32, 2, sc);
  pto_program_push_label(p, "sum");
  pto_output(p, pto_add(p, pto_add(p, u, v), c), "w");
  pto_program_pop_label(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  static float bu[32], bv[32], bc[32], bw[32];
  const void *in2[] = {bu, bv, bc};
  void *out2[] = {bw};
  const int64_t differ[2] = {5, 6}, short_[2] = {5, 5}, ok[2] = {8, 8};
  cr_expect_eq(pto_program_eval_dims(p, differ, in2, out2), PTO_ESHAPE);
  cr_expect(strstr(pto_program_error(p),
                   "add 'sum': dim 'A' = 5 must equal dim 'B' = 6"),
            "%s", pto_program_error(p));
  /* against a static axis of the maximum: equal to it */
  cr_expect_eq(pto_program_eval_dims(p, short_, in2, out2), PTO_ESHAPE);
  cr_expect(strstr(pto_program_error(p), "must equal the static extent 8"),
            "%s", pto_program_error(p));
  cr_expect_eq(pto_program_eval_dims(p, ok, in2, out2), PTO_OK, "%s",
               pto_program_error(p));
  pto_program_free(p);
}

/* Rows [2, 10) of x [S, 6] with S dynamic: at extent S the slice holds
 * rows 2 .. S-1 (none when S <= 2). */
Test(core, a_slice_of_a_dynamic_axis_is_valid_as_far_as_the_dim_reaches) {
  pto_program *p = pto_program_new("slice");
  const int64_t xs[2] = {pto_dim_dynamic(p, "S", 12), 6};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  const int64_t b[2] = {2, 0}, e[2] = {10, 6};
  pto_tensor *v = pto_slice(p, x, b, e);
  cr_assert_not_null(v, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim_dynamic(v, 0), 0);
  pto_output(p, pto_rowsum(p, pto_muls(p, v, 2)), "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  float xb[12 * 6], y[8];
  for (int i = 0; i < 12 * 6; i++)
    xb[i] = (float)i;
  const void *in[] = {xb};
  void *out[] = {y};
  for (int64_t S = 0; S <= 12; S++) {
    for (int i = 0; i < 8; i++)
      y[i] = -1;
    cr_assert_eq(pto_program_eval_dims(p, &S, in, out), PTO_OK, "%s",
                 pto_program_error(p));
    for (int64_t r = 0; r < 8; r++) {
      double want = 0;
      for (int c = 0; c < 6; c++)
        want += 2.0 * xb[(r + 2) * 6 + c];
      if (r + 2 < S)
        cr_expect_eq(y[r], (float)want, "S=%ld row %ld", (long)S, (long)r);
      else
        cr_expect_eq(y[r], -1, "S=%ld row %ld is past the extent", (long)S,
                     (long)r);
    }
  }
  pto_program_free(p);
}

/* [S, 4, 8] merged into [S*4, 8] rows and split back: the merged axis
 * counts 4 rows per unit of S, valid as far as S reaches. */
Test(core, a_dynamic_axis_merges_with_the_static_axes_inside_it) {
  pto_program *p = pto_program_new("merge");
  const int64_t S = pto_dim_dynamic(p, "S", 6);
  const int64_t xs[3] = {S, 4, 8}, flat[2] = {6 * 4, 8}, back[2] = {S, 4};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, xs);
  pto_tensor *r = pto_reshape(p, x, 2, flat);
  cr_assert_not_null(r, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim_dynamic(r, 0), 0);
  pto_tensor *sums = pto_rowsum(p, r); /* [S*4, 1] */
  pto_tensor *y = pto_reshape(p, sums, 2, back);
  cr_assert_not_null(y, "%s", pto_program_error(p));
  pto_output(p, y, "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  float xb[6 * 4 * 8], yb[6 * 4];
  for (int i = 0; i < 6 * 32; i++)
    xb[i] = (float)(i % 11);
  const void *in[] = {xb};
  void *out[] = {yb};
  for (int64_t e = 0; e <= 6; e++) {
    for (int i = 0; i < 24; i++)
      yb[i] = -1;
    cr_assert_eq(pto_program_eval_dims(p, &e, in, out), PTO_OK, "%s",
                 pto_program_error(p));
    for (int i = 0; i < 24; i++) {
      float want = 0;
      for (int c = 0; c < 8; c++)
        want += xb[i * 8 + c];
      cr_expect_eq(yb[i], i / 4 < e ? want : -1, "S=%ld y[%d]", (long)e, i);
    }
  }
  pto_program_free(p);
}

/* A dim of at most 1 sits among axes of 1: a static 1 still broadcasts
 * against it, a reshape keeps it where the shape names it (its code) or
 * else on the axis that is not a 1, and the results at n = 0 and 1 are the
 * static program's. */
Test(core, a_dim_of_at_most_one_is_not_confused_with_the_axes_of_one) {
  pto_program *p = pto_program_new("one");
  const int64_t n = pto_dim_dynamic(p, "n", 1);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, (const int64_t[]){n, 4, 2});
  pto_tensor *b = pto_input(p, "b", PTO_F32, 3, (const int64_t[]){1, 4, 2});
  pto_tensor *s = pto_add(p, x, b); /* b's 1 broadcasts */
  cr_assert_not_null(s, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim_dynamic(s, 0), 0);
  /* [n, 4, 2] to [1, n * 4, 2]: beside the 4, not on the leading 1 */
  pto_tensor *m = pto_reshape(p, s, 3, (const int64_t[]){1, 4, 2});
  cr_assert_not_null(m, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim_dynamic(m, 0), -1);
  cr_expect_eq(pto_tensor_dim_dynamic(m, 1), 0);
  /* [n, 4, 2] to [1, n, 8] with n's code: where the code says */
  pto_tensor *c = pto_reshape(p, s, 3, (const int64_t[]){1, n, 8});
  cr_assert_not_null(c, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim_dynamic(c, 0), -1);
  cr_expect_eq(pto_tensor_dim_dynamic(c, 1), 0);
  /* a dim of at most 1 never takes in another dim: [B<=1, S<=4, 2] to
   * [1, S*2, 1] keeps B on the leading 1 and S beside the 2 */
  const int64_t B1 = pto_dim_dynamic(p, "B", 1), S4 = pto_dim_dynamic(p, "S", 4);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 3, (const int64_t[]){B1, S4, 2});
  pto_tensor *wr = pto_reshape(p, w, 3, (const int64_t[]){1, 8, 1});
  cr_assert_not_null(wr, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim_dynamic(wr, 0), 1);
  cr_expect_eq(pto_tensor_dim_dynamic(wr, 1), 2);
  pto_output(p, pto_rowsum(p, m), "m");
  pto_output(p, c, "c");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  float xv[8], bv[8], mo[4], co[8];
  for (int i = 0; i < 8; i++)
    xv[i] = (float)i, bv[i] = 0.5f * (float)i;
  float wv[8] = {0};
  const void *in[] = {xv, bv, wv};
  void *out[] = {mo, co};
  for (int64_t e = 0; e <= 1; e++) {
    for (int i = 0; i < 8; i++)
      co[i] = -1.0f, mo[i % 4] = -1.0f;
    const int64_t ext[3] = {e, 1, 4};
    cr_assert_eq(pto_program_eval_dims(p, ext, in, out), PTO_OK, "%s",
                 pto_program_error(p));
    for (int r = 0; r < 4; r++)
      cr_expect_eq(mo[r], e ? 1.5f * (float)(4 * r + 1) : -1.0f, "n=%ld row %d",
                   (long)e, r);
    for (int i = 0; i < 8; i++)
      cr_expect_eq(co[i], e ? 1.5f * (float)i : -1.0f, "n=%ld [%d]", (long)e,
                   i);
  }
  pto_program_free(p);
}
