/* core: the program builder's shape and dtype checks. Each op refuses
 * operands of the wrong shape or dtype, and any shape past 2^40 elements it
 * would derive from them, with the right status and a message naming the
 * op, the tensors and their sizes; views (slice, transpose, reshape) get the
 * right geometry or are refused. Inputs, outputs, scopes and what nodes
 * record: test_program.c. */
#include <criterion/criterion.h>
#include <math.h>

#include "core/program.h"
#include "pto/pto.h"
#include "tests/program_test.h"

/* ---- shape and dtype errors --------------------------------------------- */

Test(core, program_matmul_k_mismatch) {
  pto_program *p = pto_program_new("mm");
  pto_tensor *a = in2(p, "q", PTO_F32, 64, 576),
             *b = in2(p, "k", PTO_F32, 512, 32);
  cr_expect_null(pto_matmul(p, a, b, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "matmul");
  EXPECT_MSG_HAS(p, "576");
  EXPECT_MSG_HAS(p, "512");
  EXPECT_MSG_HAS(p, "'q' f32[64,576]");
  EXPECT_MSG_HAS(p, "'k' f32[512,32]");
  pto_program_free(p);
}

Test(core, program_matmul_k_mismatch_with_transpose_flags) {
  pto_program *p = pto_program_new("mm");
  pto_tensor *a = in2(p, "a", PTO_F32, 8, 4), *b = in2(p, "b", PTO_F32, 8, 3);
  /* a^T is [4,8], b is [8,3]: fine; a is [8,4] against b^T [3,8]: K 4 vs 8 */
  cr_expect_not_null(pto_matmul(p, a, b, PTO_MATMUL_TRANS_A));
  cr_expect_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_expect_null(pto_matmul(p, a, b, PTO_MATMUL_TRANS_B));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "transposed");
  pto_program_free(p);
}

Test(core, program_matmul_other_errors) {
  pto_program *p = pto_program_new("mm_i32");
  pto_tensor *a = in2(p, "a", PTO_I32, 4, 4), *b = in2(p, "b", PTO_F32, 4, 4);
  cr_expect_null(pto_matmul(p, a, b, 0));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "'a' i32[4,4]");
  pto_program_free(p);

  p = pto_program_new("mm_batch");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, (int64_t[]){2, 4, 4});
  pto_tensor *y = pto_input(p, "y", PTO_F32, 3, (int64_t[]){3, 4, 4});
  cr_expect_null(pto_matmul(p, x, y, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "batch");
  pto_program_free(p);

  p = pto_program_new("mm_acc");
  x = in2(p, "x", PTO_F32, 4, 5);
  y = in2(p, "y", PTO_F32, 5, 6);
  pto_tensor *acc = in2(p, "acc", PTO_F32, 4, 5);
  cr_expect_null(pto_matmul_acc(p, acc, x, y, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "accumulator 'acc' f32[4,5]");
  EXPECT_MSG_HAS(p, "[4,6]");
  pto_program_free(p);

  p = pto_program_new("mm_flags");
  x = in2(p, "x", PTO_F32, 4, 4);
  cr_expect_null(pto_matmul(p, x, x, 1u << 5));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
}

Test(core, program_matmul_relu_wsum_errors) {
  pto_program *p = pto_program_new("wsum");
  pto_tensor *q = in2(p, "q", PTO_F32, 12, 8), *k = in2(p, "k", PTO_F32, 20, 8),
             *w = in2(p, "w", PTO_F32, 12, 1);
  pto_tensor *s = pto_matmul_relu_wsum(p, q, k, w, 4, PTO_MATMUL_TRANS_B, 0);
  cr_assert_not_null(s, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim(s, 0), 3);
  cr_expect_eq(pto_tensor_dim(s, 1), 20);
  cr_expect_eq(pto_tensor_dtype(s), PTO_F32);
  /* a plain matmul takes the causal flag (its mask); an accumulating one
   * does not */
  cr_expect_not_null(
      pto_matmul(p, q, k, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL));
  cr_expect_null(pto_matmul_acc(p, pto_matmul(p, q, k, PTO_MATMUL_TRANS_B), q,
                                k, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "accumulating");
  pto_program_free(p);

  struct {
    int64_t group, wr, wc;
    pto_dtype wdt, qdt;
    unsigned flags;
    pto_status st;
    const char *needle;
  } bad[] = {
      {5, 12, 1, PTO_F32, PTO_F32, PTO_MATMUL_TRANS_B, PTO_ESHAPE, "group 5"},
      {0, 12, 1, PTO_F32, PTO_F32, PTO_MATMUL_TRANS_B, PTO_ESHAPE, "group 0"},
      {4, 11, 1, PTO_F32, PTO_F32, PTO_MATMUL_TRANS_B, PTO_ESHAPE,
       "'w' f32[11,1]"},
      {4, 12, 2, PTO_F32, PTO_F32, PTO_MATMUL_TRANS_B, PTO_ESHAPE,
       "'w' f32[12,2]"},
      {4, 12, 1, PTO_I32, PTO_F32, PTO_MATMUL_TRANS_B, PTO_ESHAPE,
       "'w' i32[12,1]"},
      {4, 12, 1, PTO_F32, PTO_I32, PTO_MATMUL_TRANS_B, PTO_EDTYPE,
       "'q' i32[12,8]"},
      {4, 12, 1, PTO_F32, PTO_F32, 0, PTO_ESHAPE, "K of a"},
      {4, 12, 1, PTO_F32, PTO_F32, PTO_MATMUL_TRANS_B | (1u << 7), PTO_EINVAL,
       "flags"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = pto_program_new("wsum_bad");
    q = in2(p, "q", bad[i].qdt, 12, 8);
    k = in2(p, "k", PTO_F32, 20, 8);
    w = in2(p, "w", bad[i].wdt, bad[i].wr, bad[i].wc);
    cr_expect_null(pto_matmul_relu_wsum(p, q, k, w, bad[i].group,
                                        bad[i].flags, 0),
                   "case %zu", i);
    cr_expect_eq(pto_program_status(p), bad[i].st, "case %zu: %s", i,
                 pto_program_error(p));
    EXPECT_MSG_HAS(p, "matmul_relu_wsum");
    EXPECT_MSG_HAS(p, bad[i].needle);
    pto_program_free(p);
  }
}

Test(core, program_add_broadcast_mismatch) {
  pto_program *p = pto_program_new("bc");
  pto_tensor *a = in2(p, "a", PTO_F32, 4, 5), *b = in2(p, "b", PTO_F32, 4, 6);
  cr_expect_null(pto_add(p, a, b));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "add");
  EXPECT_MSG_HAS(p, "'a' f32[4,5]");
  EXPECT_MSG_HAS(p, "'b' f32[4,6]");
  EXPECT_MSG_HAS(p, "5 vs 6");
  pto_program_free(p);
}

Test(core, program_broadcast_shapes) {
  pto_program *p = pto_program_new("bc_ok");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 3, (int64_t[]){3, 1, 7});
  pto_tensor *b = in2(p, "b", PTO_F32, 5, 1);
  pto_tensor *c = pto_mul(p, a, b);
  cr_assert_not_null(c, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_ndim(c), 3);
  cr_expect(pto_tensor_dim(c, 0) == 3 && pto_tensor_dim(c, 1) == 5 &&
            pto_tensor_dim(c, 2) == 7);
  pto_program_free(p);
}

Test(core, program_exp_of_i32_is_a_dtype_error) {
  pto_program *p = pto_program_new("exp");
  pto_tensor *a = in2(p, "ids", PTO_I32, 2, 3);
  cr_expect_null(pto_exp(p, a));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "exp");
  EXPECT_MSG_HAS(p, "'ids' i32[2,3]");
  pto_program_free(p);
}

Test(core, program_mixed_i32_and_float_operands) {
  pto_program *p = pto_program_new("mix");
  pto_tensor *a = in2(p, "a", PTO_I32, 2, 3), *b = in2(p, "b", PTO_F32, 2, 3);
  cr_expect_null(pto_sub(p, a, b));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "sub");
  pto_program_free(p);

  p = pto_program_new("cmp");
  a = in2(p, "a", PTO_I32, 2, 3);
  b = in2(p, "b", PTO_F32, 2, 3);
  cr_expect_null(pto_cmp(p, a, b, PTO_CMP_LT));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "cmp");
  pto_program_free(p);

  p = pto_program_new("select");
  b = in2(p, "b", PTO_F32, 2, 3);
  cr_expect_null(pto_select(p, b, b, b)); /* mask must be i32 */
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "mask 'b'");
  pto_program_free(p);

  p = pto_program_new("bf16_ok"); /* bf16 + f16 promote to f32 */
  a = in2(p, "a", PTO_BF16, 2, 3);
  b = in2(p, "b", PTO_F16, 2, 3);
  pto_tensor *c = pto_add(p, a, b);
  cr_expect_eq(pto_tensor_dtype(c), PTO_F32, "%s", pto_program_error(p));
  pto_program_free(p);
}

Test(core, program_scalar_range_for_i32) {
  pto_program *p = pto_program_new("adds");
  pto_tensor *a = in2(p, "a", PTO_I32, 2, 3);
  cr_expect_null(pto_adds(p, a, 3e9));
  cr_expect_eq(pto_program_status(p), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "adds");
  pto_program_free(p);

  p = pto_program_new("muls_nan");
  a = in2(p, "a", PTO_I32, 2, 3);
  cr_expect_null(pto_muls(p, a, NAN));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "muls");
  pto_program_free(p);
}

Test(core, program_topk_bad_k) {
  int64_t ks[3] = {0, -1, 9};
  for (int i = 0; i < 3; i++) {
    pto_program *p = pto_program_new("topk");
    pto_tensor *a = in2(p, "scores", PTO_F32, 4, 8), *idx = a;
    cr_expect_null(pto_topk(p, a, ks[i], &idx));
    cr_expect_null(idx, "indices are cleared on failure");
    cr_expect_eq(pto_program_status(p), PTO_ERANGE, "k = %ld", (long)ks[i]);
    EXPECT_MSG_HAS(p, "topk");
    EXPECT_MSG_HAS(p, "[1, 8]");
    EXPECT_MSG_HAS(p, "'scores' f32[4,8]");
    pto_program_free(p);
  }
  pto_program *p = pto_program_new("topk_null");
  cr_expect_null(pto_topk(p, in2(p, "a", PTO_F32, 4, 8), 2, NULL));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
}

Test(core, program_topk_masked_bad_input) {
  /* k below 1; k past the row is fine (padding) */
  int64_t ks[2] = {0, -3};
  for (int i = 0; i < 2; i++) {
    pto_program *p = pto_program_new("topk_masked");
    pto_tensor *a = in2(p, "scores", PTO_F32, 4, 8), *idx = a;
    cr_expect_null(pto_topk_masked(p, a, ks[i], &idx));
    cr_expect_null(idx, "indices are cleared on failure");
    cr_expect_eq(pto_program_status(p), PTO_ERANGE, "k = %ld", (long)ks[i]);
    EXPECT_MSG_HAS(p, "topk_masked");
    EXPECT_MSG_HAS(p, "'scores' f32[4,8]");
    pto_program_free(p);
  }
  pto_program *p = pto_program_new("topk_masked");
  pto_tensor *a = in2(p, "scores", PTO_F32, 4, 8), *idx = NULL;
  pto_tensor *v = pto_topk_masked(p, a, 20, &idx);
  cr_expect_not_null(v, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim(v, 1), 20);
  cr_expect_eq(pto_tensor_dim(idx, 1), 20);
  cr_expect_eq(pto_tensor_dtype(idx), PTO_I32);
  cr_expect(p->nodes[0]->flags == PTO_TOPK_MASKED && p->nodes[0]->ival == 20);
  /* i32 scores are refused by name */
  pto_tensor *ia = in2(p, "iscores", PTO_I32, 4, 8);
  cr_expect_null(pto_topk_masked(p, ia, 2, &idx));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "topk_masked");
  EXPECT_MSG_HAS(p, "'iscores' i32[4,8]");
  pto_program_free(p);
  /* indices NULL */
  p = pto_program_new("topk_masked_null");
  cr_expect_null(pto_topk_masked(p, in2(p, "a", PTO_F32, 4, 8), 2, NULL));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "topk_masked");
  EXPECT_MSG_HAS(p, "indices");
  pto_program_free(p);
}

Test(core, program_gather_errors) {
  pto_program *p = pto_program_new("gather");
  pto_tensor *t = in2(p, "table", PTO_F32, 10, 4);
  pto_tensor *fi = in2(p, "fidx", PTO_F32, 2, 3);
  cr_expect_null(pto_gather(p, t, fi, 0));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "gather");
  EXPECT_MSG_HAS(p, "'fidx' f32[2,3]");
  pto_program_free(p);

  p = pto_program_new("gather_table");
  pto_tensor *t3 = pto_input(p, "t3", PTO_F32, 3, (int64_t[]){2, 3, 4});
  int64_t s1[1] = {5};
  pto_tensor *ix = pto_input(p, "ix", PTO_I32, 1, s1);
  cr_expect_null(pto_gather(p, t3, ix, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "'t3' f32[2,3,4]");
  pto_program_free(p);

  p = pto_program_new("gather_rank");
  t = in2(p, "table", PTO_F32, 10, 4);
  ix = pto_input(p, "ix4", PTO_I32, 4, (int64_t[]){1, 2, 3, 4});
  cr_expect_null(pto_gather(p, t, ix, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  pto_program_free(p);

  /* pto_gather_else: other must have the result's shape and the table's
   * dtype */
  p = pto_program_new("gather_else");
  t = in2(p, "table", PTO_F32, 10, 4);
  ix = in2(p, "ix", PTO_I32, 2, 3);
  cr_expect_null(pto_gather_else(p, t, ix, in2(p, "o6", PTO_F32, 6, 4), 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "gather_else");
  EXPECT_MSG_HAS(p, "'o6' f32[6,4]");
  EXPECT_MSG_HAS(p, "'table' f32[10,4]");
  pto_program_free(p);
  p = pto_program_new("gather_else_dtype");
  t = in2(p, "table", PTO_F32, 10, 4);
  ix = in2(p, "ix", PTO_I32, 2, 3);
  cr_expect_null(pto_gather_else(
      p, t, ix, pto_input(p, "oi", PTO_I32, 3, (int64_t[]){2, 3, 4}), 0));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "'oi' i32[2,3,4]");
  pto_program_free(p);
  p = pto_program_new("gather_else_null");
  t = in2(p, "table", PTO_F32, 10, 4);
  ix = in2(p, "ix", PTO_I32, 2, 3);
  cr_expect_null(pto_gather_else(p, t, ix, NULL, 0));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "other is NULL");
  pto_program_free(p);

  p = pto_program_new("gather_ok");
  t = in2(p, "table", PTO_BF16, 10, 4);
  ix = in2(p, "ix", PTO_I32, 2, 3);
  pto_tensor *g = pto_gather(p, t, ix, PTO_GATHER_STRICT);
  cr_assert_not_null(g, "%s", pto_program_error(p));
  cr_expect(pto_tensor_ndim(g) == 3 && pto_tensor_dim(g, 0) == 2 &&
            pto_tensor_dim(g, 1) == 3 && pto_tensor_dim(g, 2) == 4);
  cr_expect_eq(pto_tensor_dtype(g), PTO_BF16);
  cr_expect_eq(p->nodes[p->n_nodes - 1]->flags, PTO_GATHER_STRICT);
  pto_program_free(p);
}

Test(core, program_concat_mismatch) {
  pto_program *p = pto_program_new("concat");
  pto_tensor *a = in2(p, "a", PTO_F32, 2, 3), *b = in2(p, "b", PTO_F32, 4, 5);
  cr_expect_null(pto_concat(p, 2, (pto_tensor *[]){a, b}, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "concat");
  EXPECT_MSG_HAS(p, "'a' f32[2,3]");
  EXPECT_MSG_HAS(p, "'b' f32[4,5]");
  pto_program_free(p);

  p = pto_program_new("concat_dtype");
  a = in2(p, "a", PTO_F32, 2, 3);
  b = in2(p, "b", PTO_BF16, 2, 3);
  cr_expect_null(pto_concat(p, 2, (pto_tensor *[]){a, b}, 1));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  pto_program_free(p);

  p = pto_program_new("concat_axis");
  a = in2(p, "a", PTO_F32, 2, 3);
  cr_expect_null(pto_concat(p, 2, (pto_tensor *[]){a, a}, 2));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);

  p = pto_program_new("concat_count");
  a = in2(p, "a", PTO_F32, 2, 3);
  cr_expect_null(pto_concat(p, 0, (pto_tensor *[]){a}, 0));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);

  p = pto_program_new("concat_ok");
  a = in2(p, "a", PTO_F32, 2, 3);
  b = in2(p, "b", PTO_F32, 2, 5);
  pto_tensor *c = pto_concat(p, 3, (pto_tensor *[]){a, b, a}, -1);
  cr_assert_not_null(c, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim(c, 1), 11);
  cr_expect_eq(p->nodes[p->n_nodes - 1]->ival, 1, "axis normalised");
  pto_program_free(p);
}

/* An input holds fewer than 2^40 elements, and so does every shape an op
 * derives from its operands: broadcasting, matmul (batch broadcast too),
 * gather and concat of acceptable inputs could exceed it, and the dense
 * strides of the result then overflowed int64. Each is refused with
 * PTO_ESHAPE naming the op and the sizes. */
Test(core, program_derived_shapes_past_2_40_elements_are_refused) {
  const int64_t big = INT64_C(1) << 39, two40 = INT64_C(1) << 40;
  pto_program *p = pto_program_new("input_2_40");
  cr_expect_null(pto_input(p, "x", PTO_F32, 2, (int64_t[]){two40, 1}));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "numel < 2^40");
  pto_program_free(p);
  p = pto_program_new("input_2_40_minus_1");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 1, (int64_t[]){two40 - 1});
  cr_expect_not_null(x, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_numel(x), two40 - 1);
  pto_program_free(p);

  p = pto_program_new("add");
  pto_tensor *col = in2(p, "col", PTO_F32, big, 1),
             *row = in2(p, "row", PTO_F32, 1, big);
  cr_expect_null(pto_add(p, col, row));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "add: ");
  EXPECT_MSG_HAS(p, "[549755813888,549755813888]");
  EXPECT_MSG_HAS(p, "'col' f32[549755813888,1]");
  EXPECT_MSG_HAS(p, "'row' f32[1,549755813888]");
  pto_program_free(p);

  p = pto_program_new("cmp_select");
  col = in2(p, "col", PTO_F32, big, 1);
  row = in2(p, "row", PTO_F32, 1, big);
  cr_expect_null(pto_cmp(p, col, row, PTO_CMP_LT));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "cmp");
  pto_program_free(p);

  p = pto_program_new("matmul");
  col = in2(p, "col", PTO_F32, big, 1);
  row = in2(p, "row", PTO_F32, 1, big);
  cr_expect_null(pto_matmul(p, col, row, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "matmul");
  EXPECT_MSG_HAS(p, "[549755813888,549755813888]");
  pto_program_free(p);

  p = pto_program_new("matmul_batch");
  int64_t sa[3] = {big, 1, 1}, sb[3] = {1, 1, big};
  cr_expect_null(pto_matmul(p, pto_input(p, "a", PTO_F32, 3, sa),
                            pto_input(p, "b", PTO_F32, 3, sb), 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "[549755813888,1,549755813888]");
  pto_program_free(p);

  p = pto_program_new("gather");
  pto_tensor *table = in2(p, "table", PTO_F32, 1, big);
  pto_tensor *index = in2(p, "index", PTO_I32, 1, big);
  cr_expect_null(pto_gather(p, table, index, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "gather");
  EXPECT_MSG_HAS(p, "[1,549755813888,549755813888]");
  pto_program_free(p);

  p = pto_program_new("concat");
  pto_tensor *h = in2(p, "h", PTO_F32, big, 1);
  cr_expect_null(pto_concat(p, 2, (pto_tensor *[]){h, h}, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "concat");
  EXPECT_MSG_HAS(p, "[1099511627776,1]");
  pto_program_free(p);

  p = pto_program_new("fine"); /* just below the limit is accepted */
  col = in2(p, "col", PTO_F32, 1 << 20, 1);
  row = in2(p, "row", PTO_F32, 1, (1 << 20) - 1);
  pto_tensor *y = pto_add(p, col, row);
  cr_expect_not_null(y, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_numel(y), (INT64_C(1) << 40) - (1 << 20));
  pto_program_free(p);
}

/* ---- views -------------------------------------------------------------- */

Test(core, program_slice_out_of_range) {
  int64_t bad[3][2][2] = {{{0, 0}, {5, 4}}, /* end beyond the dim */
                          {{2, 1}, {2, 3}}, /* empty */
                          {{-1, 0}, {2, 2}}};
  for (int i = 0; i < 3; i++) {
    pto_program *p = pto_program_new("slice");
    pto_tensor *a = in2(p, "a", PTO_F32, 4, 4);
    cr_expect_null(pto_slice(p, a, bad[i][0], bad[i][1]));
    cr_expect_eq(pto_program_status(p), PTO_ERANGE, "case %d", i);
    EXPECT_MSG_HAS(p, "slice");
    EXPECT_MSG_HAS(p, "'a' f32[4,4]");
    pto_program_free(p);
  }
}

Test(core, program_views_have_the_right_geometry) {
  pto_program *p = pto_program_new("views");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 3, (int64_t[]){2, 6, 8});
  pto_tensor *s = pto_slice(p, a, (int64_t[]){1, 2, 3}, (int64_t[]){2, 5, 8});
  cr_assert_not_null(s, "%s", pto_program_error(p));
  cr_expect(s->shape[0] == 1 && s->shape[1] == 3 && s->shape[2] == 5);
  cr_expect_eq(s->offset, 1 * 48 + 2 * 8 + 3);
  cr_expect_eq(s->root, a);
  pto_tensor *t = pto_transpose(p, a, -1, 1);
  cr_expect(t->shape[1] == 8 && t->shape[2] == 6 && t->stride[1] == 1 &&
            t->stride[2] == 8);
  cr_expect(!pto__tensor_is_contiguous(t));
  cr_expect(pto__tensor_is_contiguous(a));
  pto_tensor *r = pto_reshape(p, a, 2, (int64_t[]){12, 8});
  cr_expect(r && r->root == a && r->stride[0] == 8);
  /* a slice of whole rows is still contiguous, so it reshapes */
  pto_tensor *rows =
      pto_slice(p, a, (int64_t[]){1, 0, 0}, (int64_t[]){2, 6, 8});
  cr_expect_not_null(pto_reshape(p, rows, 1, (int64_t[]){48}));
  cr_expect_eq(pto_program_num_ops(p), 0, "views are not ops");
  cr_expect_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_expect_null(pto_transpose(p, a, 0, 3));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
}

Test(core, program_reshape_of_transposed_view_is_not_supported) {
  pto_program *p = pto_program_new("reshape");
  pto_tensor *a = in2(p, "a", PTO_F32, 4, 6);
  pto_tensor *t = pto_transpose(p, a, 0, 1);
  cr_expect_null(pto_reshape(p, t, 1, (int64_t[]){24}));
  cr_expect_eq(pto_program_status(p), PTO_ENOTSUP);
  EXPECT_MSG_HAS(p, "reshape");
  EXPECT_MSG_HAS(p, "f32[6,4]");
  pto_program_free(p);

  p = pto_program_new("reshape_numel");
  a = in2(p, "a", PTO_F32, 4, 6);
  cr_expect_null(pto_reshape(p, a, 2, (int64_t[]){5, 5}));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "24");
  EXPECT_MSG_HAS(p, "25");
  pto_program_free(p);
}
