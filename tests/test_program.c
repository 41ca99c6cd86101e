/* core: the program builder. Inputs, outputs and operands are checked
 * (rank, dims, names, NULL, a tensor of another program) with the right
 * status and message; the first error is sticky; scopes (tile shapes,
 * labels) are recorded on every node, as is what each op means; the
 * queries and status codes. Each op's shape and dtype checks:
 * test_program_shapes.c. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/program.h"
#include "pto/pto.h"
#include "tests/program_test.h"

/* ---- inputs, outputs, operands ------------------------------------------ */

Test(core, program_input_rank_and_dims) {
  int64_t shape[5] = {2, 2, 2, 2, 2};
  pto_program *p = pto_program_new("rank0");
  cr_expect_null(pto_input(p, "x", PTO_F32, 0, shape));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "0 dims");
  pto_program_free(p);

  p = pto_program_new("rank5");
  cr_expect_null(pto_input(p, "x", PTO_F32, 5, shape));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "5 dims");
  pto_program_free(p);

  p = pto_program_new("zero_dim");
  cr_expect_null(pto_input(p, "x", PTO_F32, 3, (int64_t[]){4, 0, 2}));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "[4,0,2]");
  EXPECT_MSG_HAS(p, "dim 1");
  pto_program_free(p);

  p = pto_program_new("negative_dim");
  cr_expect_null(pto_input(p, "x", PTO_F32, 2, (int64_t[]){-3, 2}));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);

  p = pto_program_new("bad_dtype");
  cr_expect_null(pto_input(p, "x", PTO_DTYPE_COUNT, 1, shape));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  pto_program_free(p);

  p = pto_program_new("max_rank");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 4, shape);
  cr_expect_not_null(x, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_numel(x), 16);
  pto_program_free(p);

  p = pto_program_new("full_rank");
  cr_expect_null(pto_full(p, PTO_F32, 5, shape, 1.0));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "full");
  pto_program_free(p);
}

Test(core, program_duplicate_names) {
  pto_program *p = pto_program_new("dup_in");
  pto_tensor *a = in2(p, "x", PTO_F32, 2, 2);
  cr_expect_not_null(a);
  cr_expect_null(in2(p, "x", PTO_F32, 3, 3));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "'x'");
  EXPECT_MSG_HAS(p, "twice");
  cr_expect_eq(pto_program_num_inputs(p), 1);
  pto_program_free(p);

  p = pto_program_new("dup_out");
  a = in2(p, "x", PTO_F32, 2, 2);
  cr_expect_eq(pto_output(p, pto_neg(p, a), "y"), PTO_OK);
  cr_expect_eq(pto_output(p, a, "y"), PTO_EINVAL);
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "output 'y'");
  cr_expect_eq(pto_program_num_outputs(p), 1);
  pto_program_free(p);

  p = pto_program_new("unnamed");
  cr_expect_null(in2(p, "", PTO_F32, 2, 2));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
}

Test(core, program_null_operands) {
  pto_program *p = pto_program_new("null");
  pto_tensor *a = in2(p, "a", PTO_F32, 2, 2);
  cr_expect_null(pto_add(p, a, NULL));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "add");
  EXPECT_MSG_HAS(p, "operand 1 is NULL");
  pto_program_free(p);

  p = pto_program_new("null_out");
  cr_expect_eq(pto_output(p, NULL, "y"), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "output");
  pto_program_free(p);

  p = pto_program_new("null_acc");
  a = in2(p, "a", PTO_F32, 2, 2);
  cr_expect_null(pto_matmul_acc(p, NULL, a, a, 0));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "matmul");
  pto_program_free(p);

  /* a NULL program: NULL results, EINVAL, no crash */
  cr_expect_null(pto_add(NULL, NULL, NULL));
  cr_expect_null(pto_input(NULL, "x", PTO_F32, 1, (int64_t[]){1}));
  cr_expect_eq(pto_program_status(NULL), PTO_EINVAL);
  cr_expect_str_eq(pto_program_error(NULL), "program is NULL");
  cr_expect_eq(pto_output(NULL, NULL, "y"), PTO_EINVAL);
  cr_expect_eq(pto_program_push_label(NULL, "x"), PTO_EINVAL);
}

Test(core, program_tensor_from_another_program) {
  pto_program *p = pto_program_new("p"), *q = pto_program_new("q");
  pto_tensor *a = in2(p, "a", PTO_F32, 2, 2);
  pto_tensor *b = in2(q, "b", PTO_F32, 2, 2);
  /* b has id 0 in q, as a has in p: identity, not the id, must be checked */
  cr_expect_null(pto_mul(p, a, b));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "mul");
  EXPECT_MSG_HAS(p, "another program");
  cr_expect_eq(pto_output(q, a, "y"), PTO_EINVAL);
  cr_expect_eq(pto_program_status(q), PTO_EINVAL);
  pto_program_free(p);
  pto_program_free(q);
}

Test(core, program_custom_errors) {
  pto_program *p = pto_program_new("custom");
  pto_tensor *a = in2(p, "a", PTO_F32, 2, 2);
  cr_expect_null(pto_custom(p, 123456, 1, &a));
  cr_expect_eq(pto_program_status(p), PTO_ENOTFOUND);
  EXPECT_MSG_HAS(p, "123456");
  pto_program_free(p);
}

/* ---- scopes ------------------------------------------------------------- */

Test(core, program_pop_without_push) {
  pto_program *p = pto_program_new("pop");
  cr_expect_eq(pto_program_pop_tile(p), PTO_ESTATE);
  cr_expect_eq(pto_program_status(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "pop_tile");
  pto_program_free(p);

  p = pto_program_new("pop_label");
  cr_expect_eq(pto_program_push_label(p, "a"), PTO_OK);
  cr_expect_eq(pto_program_pop_label(p), PTO_OK);
  cr_expect_eq(pto_program_pop_label(p), PTO_ESTATE);
  cr_expect_eq(pto_program_status(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "pop_label");
  pto_program_free(p);

  p = pto_program_new("bad_label");
  cr_expect_eq(pto_program_push_label(p, ""), PTO_EINVAL);
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
}

Test(core, program_label_in_message) {
  pto_program *p = pto_program_new("label");
  pto_program_push_label(p, "indexer");
  pto_program_push_label(p, "qk");
  pto_tensor *q = in2(p, "q", PTO_F32, 64, 128),
             *k = in2(p, "k", PTO_F32, 64, 128);
  cr_expect_null(pto_matmul(p, q, k, 0));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  cr_expect(strncmp(pto_program_error(p), "matmul 'indexer.qk': ", 21) == 0,
            "message \"%s\"", pto_program_error(p));
  pto_program_free(p);

  p = pto_program_new("nolabel");
  q = in2(p, "q", PTO_F32, 64, 128);
  cr_expect_null(pto_matmul(p, q, q, 0));
  cr_expect(strncmp(pto_program_error(p), "matmul: ", 8) == 0, "message \"%s\"",
            pto_program_error(p));
  pto_program_free(p);
}

Test(core, program_first_error_is_sticky) {
  pto_program *p = pto_program_new("sticky");
  pto_tensor *ids = in2(p, "ids", PTO_I32, 2, 2),
             *x = in2(p, "x", PTO_F32, 2, 3);
  pto_tensor *e = pto_exp(p, ids); /* EDTYPE */
  cr_expect_null(e);
  char first[PTO_ERROR_MSG];
  strcpy(first, pto_program_error(p));
  /* the NULL propagates silently; a new, different error does not overwrite */
  cr_expect_null(pto_add(p, e, x));
  cr_expect_null(pto_matmul(p, x, x, 0)); /* a K mismatch of its own */
  cr_expect_eq(pto_output(p, e, "y"), PTO_EDTYPE);
  cr_expect_eq(pto_program_pop_tile(p), PTO_ESTATE); /* returned, not kept */
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  cr_expect_str_eq(pto_program_error(p), first);
  EXPECT_MSG_HAS(p, "exp");
  /* valid ops still return tensors, but the program stays failed */
  cr_expect_not_null(pto_neg(p, x));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  pto_program_free(p);
}

Test(core, program_tile_scopes_recorded_on_nodes) {
  pto_program *p = pto_program_new("tiles");
  pto_tensor *a = in2(p, "a", PTO_F32, 64, 64);
  pto_tile_shape def = pto_tile_shape_default();
  pto_tensor *n0 = pto_neg(p, a); /* default tile */
  cr_expect_eq(pto_program_set_vec_tile(p, 32, 32), PTO_OK);
  pto_tensor *n1 = pto_neg(p, a);
  pto_tile_shape big = {64, 256, 128, 128, 64};
  cr_expect_eq(pto_program_push_tile(p, &big), PTO_OK);
  pto_tensor *n2 = pto_matmul(p, a, a, 0);
  cr_expect_eq(pto_program_push_tile(p, NULL), PTO_OK); /* copy of big */
  cr_expect_eq(pto_program_set_cube_tile(p, 16, 16, 16), PTO_OK);
  pto_tensor *n3 = pto_matmul(p, a, a, 0);
  cr_expect_eq(pto_program_pop_tile(p), PTO_OK);
  pto_tensor *n4 = pto_matmul(p, a, a, 0);
  cr_expect_eq(pto_program_pop_tile(p), PTO_OK);
  pto_tensor *n5 = pto_neg(p, a);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(p->n_nodes, 6);
  pto_tensor *outs[6] = {n0, n1, n2, n3, n4, n5};
  for (int i = 0; i < 6; i++) {
    cr_expect_eq(p->nodes[i]->out[0], outs[i], "node %d", i);
    cr_expect_eq(outs[i]->producer, p->nodes[i], "node %d", i);
    cr_expect_eq(p->nodes[i]->id, (uint32_t)i);
  }
  cr_expect(memcmp(&p->nodes[0]->tile, &def, sizeof def) == 0);
  cr_expect(p->nodes[1]->tile.vec_rows == 32 &&
            p->nodes[1]->tile.vec_cols == 32 &&
            p->nodes[1]->tile.cube_m == def.cube_m);
  cr_expect(memcmp(&p->nodes[2]->tile, &big, sizeof big) == 0);
  cr_expect(p->nodes[3]->tile.vec_rows == 64 &&
            p->nodes[3]->tile.vec_cols == 256 &&
            p->nodes[3]->tile.cube_m == 16 && p->nodes[3]->tile.cube_n == 16 &&
            p->nodes[3]->tile.cube_k == 16);
  cr_expect(memcmp(&p->nodes[4]->tile, &big, sizeof big) == 0);
  cr_expect(p->nodes[5]->tile.vec_rows == 32 &&
            p->nodes[5]->tile.vec_cols == 32);
  pto_tile_shape now = pto_program_tile(p);
  cr_expect(now.vec_rows == 32 && now.vec_cols == 32);
  pto_program_free(p);
}

Test(core, program_nested_labels_joined_with_dots) {
  pto_program *p = pto_program_new("labels");
  pto_tensor *a = in2(p, "a", PTO_F32, 4, 4);
  pto_neg(p, a);
  pto_program_push_label(p, "sfa");
  pto_neg(p, a);
  pto_program_push_label(p, "softmax");
  pto_softmax(p, a); /* 6 nodes */
  pto_program_pop_label(p);
  pto_program_push_label(p, "pv");
  pto_matmul(p, a, a, 0);
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  pto_neg(p, a);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  const char *want[] = {"",
                        "sfa",
                        "sfa.softmax",
                        "sfa.softmax",
                        "sfa.softmax",
                        "sfa.softmax",
                        "sfa.softmax",
                        "sfa.softmax",
                        "sfa.pv",
                        ""};
  cr_assert_eq(p->n_nodes, 10);
  for (int i = 0; i < 10; i++)
    cr_expect_str_eq(p->nodes[i]->label, want[i], "node %d", i);
  pto_program_free(p);
}

/* ---- what ops record ---------------------------------------------------- */

Test(core, program_nodes_record_op_semantics) {
  pto_program *p = pto_program_new("record");
  pto_tensor *a = in2(p, "a", PTO_F32, 4, 8), *ia = in2(p, "ia", PTO_I32, 4, 8);
  pto_muls(p, a, 0.25);
  pto_adds(p, ia, 2.5); /* i32: rounded to even */
  pto_cmp(p, a, a, PTO_CMP_GE);
  pto_tensor *idx;
  pto_tensor *v = pto_topk(p, a, 3, &idx);
  pto_iota(p, PTO_I32, 1, (int64_t[]){5}, -7);
  pto_full(p, PTO_BF16, 1, (int64_t[]){5}, 1.5);
  pto_matmul(p, a, a, PTO_MATMUL_TRANS_B);
  pto_tensor *cast = pto_cast(p, a, PTO_F16);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_node *const *n = p->nodes;
  cr_expect(n[0]->op == PTO_TOP_MULS && n[0]->scalar == 0.25);
  cr_expect(n[1]->op == PTO_TOP_ADDS && n[1]->scalar == 2.0);
  cr_expect(n[2]->op == PTO_TOP_CMP && n[2]->ival == PTO_CMP_GE &&
            n[2]->out[0]->dtype == PTO_I32);
  cr_expect(n[3]->op == PTO_TOP_TOPK && n[3]->ival == 3 && n[3]->n_out == 2 &&
            n[3]->out[0] == v && n[3]->out[1] == idx && idx->producer == n[3]);
  cr_expect(n[4]->op == PTO_TOP_IOTA && n[4]->ival == -7 && n[4]->n_in == 0);
  cr_expect(n[5]->op == PTO_TOP_FULL && n[5]->scalar == 1.5 &&
            n[5]->out[0]->dtype == PTO_BF16);
  cr_expect(n[6]->op == PTO_TOP_MATMUL && n[6]->flags == PTO_MATMUL_TRANS_B &&
            n[6]->n_in == 2 && n[6]->out[0]->shape[1] == 4);
  cr_expect(n[7]->op == PTO_TOP_CAST && cast->dtype == PTO_F16);
  cr_expect_str_eq(pto__top_name(PTO_TOP_MATMUL), "matmul");
  cr_expect_eq(pto__top_class(PTO_TOP_ROWSUM), PTO_TC_REDUCE);
  cr_expect_eq(pto_program_num_ops(p), 8);
  pto_program_free(p);
}

Test(core, program_queries) {
  pto_program *p = pto_program_new("queries");
  cr_expect_str_eq(pto_program_name(p), "queries");
  pto_tensor *a = pto_input(p, "A", PTO_F32, 3, (int64_t[]){2, 3, 4});
  pto_tensor *b = in2(p, "B", PTO_I32, 5, 6);
  pto_output(p, pto_rowsum(p, a), "S");
  pto_output(p, b, "B_out");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_expect_eq(pto_program_num_inputs(p), 2);
  cr_expect_eq(pto_program_num_outputs(p), 2);
  cr_expect_eq(pto_program_input(p, 1), b);
  cr_expect_null(pto_program_input(p, 2));
  cr_expect_null(pto_program_output(p, -1));
  cr_expect_eq(pto_program_output(p, 1), b);
  cr_expect_eq(pto_program_find_input(p, "B"), 1);
  cr_expect_eq(pto_program_find_input(p, "C"), -1);
  cr_expect_eq(pto_program_find_output(p, "S"), 0);
  cr_expect_eq(pto_program_find_output(p, NULL), -1);
  cr_expect_str_eq(pto_tensor_name(a), "A");
  cr_expect_eq(pto_tensor_dim(a, -1), 4);
  cr_expect_eq(pto_tensor_dim(a, -3), 2);
  cr_expect_eq(pto_tensor_dim(a, 3), -1);
  cr_expect_eq(pto_tensor_numel(a), 24);
  cr_expect_eq(pto_tensor_dtype(NULL), PTO_DTYPE_COUNT);
  cr_expect_eq(pto_tensor_numel(NULL), 0);
  cr_expect_eq(pto_program_num_ops(p), 1);
  cr_expect_str_eq(pto_program_error(p), "");
  pto_program_free(p);

  p = pto_program_new(NULL);
  cr_expect_str_eq(pto_program_name(p), "program");
  pto_program_free(p);
}

Test(core, program_free_null_is_a_no_op) {
  pto_program_free(NULL);
  cr_expect(1, "returned");
  pto_program *p = pto_program_new("empty");
  cr_assert_not_null(p);
  cr_expect_eq(pto_program_status(p), PTO_OK);
  cr_expect_str_eq(pto_program_error(p), "");
  pto_program_free(p);
}

/* ---- status codes ------------------------------------------------------- */

Test(core, program_status_names_and_strings_for_every_code) {
  static const struct {
    int value;
    const char *name, *msg;
  } rows[] = {
#define ROW(name, value, msg) {value, "PTO_" #name, msg},
      PTO_STATUS_MAP(ROW)
#undef ROW
  };
  int n = (int)(sizeof rows / sizeof rows[0]);
  cr_expect_eq(n, PTO_STATUS_COUNT);
  for (int i = 0; i < n; i++) {
    cr_expect_eq(rows[i].value, -i, "codes are 0, -1, ...");
    cr_expect_str_eq(pto_status_name(rows[i].value), rows[i].name);
    cr_expect_str_eq(pto_strerror(rows[i].value), rows[i].msg);
  }
  cr_expect_str_eq(pto_status_name(-PTO_STATUS_COUNT), "PTO_UNKNOWN");
  cr_expect_str_eq(pto_strerror(42), "unknown status");
}
