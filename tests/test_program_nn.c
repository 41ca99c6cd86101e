/* core: the builder's composites (sigmoid, SiLU, GELU, mean, variance,
 * layer and RMS norm), the masked matmul, iota along any axis, concat of
 * any count, assemble chains, and push_scope / pop_scope: what each
 * records, and the errors bad operands get (sticky, naming the op, its
 * label, the tensors and their sizes). */
#include <criterion/criterion.h>
#include <math.h>

#include "core/program.h"
#include "pto/pto.h"
#include "tests/program_test.h"

/* The ops a composite adds, and its result's shape. */
static void expect_composite(pto_program *p, pto_tensor *(*fn)(pto_program *,
                                                               pto_tensor *),
                             pto_tensor *x, int ops, int64_t last) {
  int before = pto_program_num_ops(p);
  pto_tensor *y = fn(p, x);
  cr_assert_not_null(y, "%s", pto_program_error(p));
  cr_expect_eq(pto_program_num_ops(p) - before, ops);
  cr_expect_eq(pto_tensor_ndim(y), pto_tensor_ndim(x));
  for (int d = 0; d + 1 < pto_tensor_ndim(x); d++)
    cr_expect_eq(pto_tensor_dim(y, d), pto_tensor_dim(x, d));
  cr_expect_eq(pto_tensor_dim(y, -1), last);
  cr_expect_eq(pto_tensor_dtype(y), PTO_F32);
}

Test(core, program_composites_are_chains_of_ops) {
  pto_program *p = pto_program_new("nn");
  pto_tensor *x =
      pto_input(p, "x", PTO_BF16, 3, (const int64_t[]){2, 5, 12});
  expect_composite(p, pto_sigmoid, x, 4, 12);
  expect_composite(p, pto_silu, x, 4, 12);
  expect_composite(p, pto_gelu, x, 7, 12);
  expect_composite(p, pto_mean, x, 2, 1);
  expect_composite(p, pto_var, x, 6, 1);
  pto_tensor *g = pto_input(p, "g", PTO_F32, 1, (const int64_t[]){12});
  pto_tensor *b = pto_input(p, "b", PTO_F16, 2, (const int64_t[]){1, 12});
  int n0 = pto_program_num_ops(p);
  cr_assert_not_null(pto_rms_norm(p, x, NULL, 1e-6));
  cr_expect_eq(pto_program_num_ops(p) - n0, 6);
  n0 = pto_program_num_ops(p);
  cr_assert_not_null(pto_rms_norm(p, x, g, 1e-6));
  cr_expect_eq(pto_program_num_ops(p) - n0, 7);
  n0 = pto_program_num_ops(p);
  pto_tensor *y = pto_layer_norm(p, x, g, b, 1e-5);
  cr_assert_not_null(y, "%s", pto_program_error(p));
  cr_expect_eq(pto_program_num_ops(p) - n0, 11);
  cr_expect_eq(pto_tensor_dim(y, 0), 2);
  cr_expect_eq(pto_tensor_dim(y, 1), 5);
  cr_expect_eq(pto_tensor_dim(y, 2), 12);
  n0 = pto_program_num_ops(p);
  cr_assert_not_null(pto_layer_norm(p, x, NULL, NULL, 0));
  cr_expect_eq(pto_program_num_ops(p) - n0, 9);
  cr_expect_eq(pto_program_status(p), PTO_OK);
  pto_program_free(p);
}

/* Each bad operand: the composite's error, not one of its parts'. */
Test(core, program_composites_refuse_bad_operands) {
  static const struct {
    int kind; /* 0 i32 x, 1 gamma shape, 2 beta shape, 3 eps, 4 gamma i32 */
    pto_status st;
    const char *frag;
  } cases[] = {
      {0, PTO_EDTYPE, "layer_norm 'blk': 'xi' i32[4,8] is i32; layer_norm "
                      "needs a floating tensor"},
      {1, PTO_ESHAPE, "gamma 'g7' f32[7]"},
      {2, PTO_ESHAPE, "beta 'b2' f32[2,8]"},
      {3, PTO_EINVAL, "eps -1 for 'x' f32[4,8] must be >= 0"},
      {4, PTO_EDTYPE, "gamma 'gi' i32[8] must be floating"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_program *p = pto_program_new("bad");
    pto_tensor *x = in2(p, "x", PTO_F32, 4, 8);
    pto_tensor *g = pto_input(p, "g", PTO_F32, 1, (const int64_t[]){8});
    pto_tensor *xi = in2(p, "xi", PTO_I32, 4, 8);
    pto_tensor *g7 = pto_input(p, "g7", PTO_F32, 1, (const int64_t[]){7});
    pto_tensor *b2 = in2(p, "b2", PTO_F32, 2, 8);
    pto_tensor *gi = pto_input(p, "gi", PTO_I32, 1, (const int64_t[]){8});
    pto_program_push_label(p, "blk");
    int n0 = pto_program_num_ops(p);
    pto_tensor *y = NULL;
    switch (cases[i].kind) {
    case 0: y = pto_layer_norm(p, xi, g, NULL, 1e-5); break;
    case 1: y = pto_layer_norm(p, x, g7, NULL, 1e-5); break;
    case 2: y = pto_layer_norm(p, x, g, b2, 1e-5); break;
    case 3: y = pto_layer_norm(p, x, g, NULL, -1); break;
    default: y = pto_rms_norm(p, x, gi, 1e-5); break;
    }
    cr_expect_null(y);
    cr_expect_eq(pto_program_status(p), cases[i].st, "case %zu: %s", i,
                 pto_program_error(p));
    EXPECT_MSG_HAS(p, cases[i].frag);
    cr_expect_eq(pto_program_num_ops(p), n0, "nothing recorded");
    pto_program_free(p);
  }
  /* every composite refuses i32 and NaN eps, and propagates NULL */
  pto_tensor *(*fns[])(pto_program *, pto_tensor *) = {
      pto_sigmoid, pto_silu, pto_gelu, pto_mean, pto_var};
  const char *names[] = {"sigmoid", "silu", "gelu", "mean", "var"};
  for (int i = 0; i < 5; i++) {
    pto_program *p = pto_program_new("i32");
    pto_tensor *xi = in2(p, "xi", PTO_I32, 4, 8);
    cr_expect_null(fns[i](p, xi));
    cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
    EXPECT_MSG_HAS(p, names[i]);
    cr_expect_null(fns[i](p, NULL)); /* after an error: NULL, error kept */
    EXPECT_MSG_HAS(p, names[i]);
    cr_expect_null(fns[i](NULL, xi));
    pto_program_free(p);
  }
  pto_program *p = pto_program_new("nan");
  cr_expect_null(pto_rms_norm(p, in2(p, "x", PTO_F32, 2, 2), NULL, NAN));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "rms_norm: eps nan");
  pto_program_free(p);
}

/* ---- masked matmul ------------------------------------------------------ */

Test(core, program_masked_matmul_records_its_diagonal) {
  pto_program *p = pto_program_new("mm");
  pto_tensor *q = in2(p, "q", PTO_F32, 6, 16), *k = in2(p, "k", PTO_F32, 10, 16);
  pto_tensor *s = pto_matmul(p, q, k, PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL);
  cr_assert_not_null(s, "%s", pto_program_error(p));
  const pto_node *n = s->producer;
  cr_expect(n->flags & PTO_MATMUL_CAUSAL);
  cr_expect_eq(n->scalar, 4.0, "end-aligned: N - M = 10 - 6");
  s = pto_matmul_masked(p, q, k, PTO_MATMUL_TRANS_B, -3);
  cr_assert_not_null(s);
  cr_expect(s->producer->flags & PTO_MATMUL_CAUSAL);
  cr_expect_eq(s->producer->scalar, -3.0);
  s = pto_matmul(p, q, k, PTO_MATMUL_TRANS_B);
  cr_expect(!(s->producer->flags & PTO_MATMUL_CAUSAL));
  cr_expect_null(
      pto_matmul_masked(p, q, k, PTO_MATMUL_TRANS_B, INT64_C(1) << 53));
  cr_expect_eq(pto_program_status(p), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "matmul: diagonal 9007199254740992 is out of range");
  pto_program_free(p);
  p = pto_program_new("mm2");
  q = in2(p, "q", PTO_F32, 6, 16);
  cr_expect_null(pto_matmul_masked(p, q, q, 1u << 5, 0));
  EXPECT_MSG_HAS(p, "unknown flags 0x20");
  pto_program_free(p);
}

/* ---- iota, concat, assemble -------------------------------------------- */

Test(core, program_iota_axis_checks_its_range) {
  pto_program *p = pto_program_new("iota");
  const int64_t s[3] = {3, 4, 5};
  pto_tensor *t = pto_iota_axis(p, PTO_I32, 3, s, -2, 7);
  cr_assert_not_null(t, "%s", pto_program_error(p));
  cr_expect_eq(t->producer->axis, 1);
  cr_expect_eq(t->producer->ival, 7);
  cr_expect_eq(pto_iota(p, PTO_F32, 3, s, 0)->producer->axis, 2);
  cr_expect_null(pto_iota_axis(p, PTO_I32, 3, s, 3, 0));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "iota_axis: axis 3 is not an axis of [3,4,5]");
  pto_program_free(p);
  p = pto_program_new("iota2");
  cr_expect_null(pto_iota_axis(p, PTO_F32, 3, s, 0, INT32_MAX - 1));
  cr_expect_eq(pto_program_status(p), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "values from 2147483646 over the 3 entries of axis 0 are "
                    "outside i32");
  pto_program_free(p);
  p = pto_program_new("iota3");
  cr_expect_null(pto_iota_axis(p, PTO_BF16, 3, s, 0, 0));
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  pto_program_free(p);
}

Test(core, program_concat_takes_any_count) {
  pto_program *p = pto_program_new("cat");
  pto_tensor *ts[40];
  for (int i = 0; i < 40; i++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", i);
    ts[i] = in2(p, name, PTO_F32, 3, 1 + i % 3);
  }
  pto_tensor *c = pto_concat(p, 40, ts, -1);
  cr_assert_not_null(c, "%s", pto_program_error(p));
  cr_expect_eq(pto_tensor_dim(c, 1), 13 * 6 + 1);
  cr_expect_eq(c->producer->n_in, 40);
  for (int i = 0; i < 40; i++)
    cr_expect_eq(c->producer->in[i], ts[i]);
  ts[33] = in2(p, "odd", PTO_F32, 4, 1);
  cr_expect_null(pto_concat(p, 40, ts, 1));
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "'t0' f32[3,1] and 'odd' f32[4,1] (input 33) differ "
                    "outside axis 1");
  pto_program_free(p);
  p = pto_program_new("cat0");
  cr_expect_null(pto_concat(p, 0, ts, 0));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "concat: 0 tensors; it takes 1 or more");
  pto_program_free(p);
}

Test(core, program_assemble_chains_and_their_coverage) {
  pto_program *p = pto_program_new("asm");
  pto_tensor *base = pto_full(p, PTO_F32, 2, (const int64_t[]){8, 8}, 0);
  pto_tensor *blk = in2(p, "blk", PTO_F32, 4, 4);
  pto_tensor *y = base;
  for (int i = 0; i < 4; i++) {
    y = pto_assemble(p, y, blk, (const int64_t[]){4 * (i / 2), 4 * (i % 2)});
    cr_assert_not_null(y, "%s", pto_program_error(p));
    cr_expect_eq(pto_tensor_dim(y, 0), 8);
    const pto_node *n = y->producer;
    cr_expect_eq(n->op, PTO_TOP_ASSEMBLE);
    cr_expect_eq(n->in[1], blk);
    cr_expect_eq(pto__assemble_prev(n) != NULL, i > 0);
    /* the base's part no block covers yet: 3 blocks left it a 4x4 box */
    cr_expect_eq(!!(n->flags & PTO_ASSEMBLE_COVERED), i == 3, "block %d", i);
    if (i == 2) {
      cr_expect_eq(n->ival, 1);
      cr_expect_eq(n->offs[2 + 0], 4); /* lo */
      cr_expect_eq(n->offs[2 + 1], 4);
      cr_expect_eq(n->offs[2 + 2], 8); /* hi */
      cr_expect_eq(n->offs[2 + 3], 8);
    }
  }
  /* a view of a chain's result is a base of its own */
  pto_tensor *v = pto_slice(p, y, (const int64_t[]){0, 0}, (const int64_t[]){8, 8});
  pto_tensor *w = pto_assemble(p, v, blk, (const int64_t[]){0, 0});
  cr_assert_not_null(w);
  cr_expect_null(pto__assemble_prev(w->producer));
  pto_output(p, w, "w");
  /* the chain's intermediate results are not needed: only the last op and
   * what it reads (its blocks; not the covered base) */
  uint8_t *live = pto__live_nodes(p);
  cr_assert_not_null(live);
  cr_expect_eq(live[base->producer->id], 0, "the covered base is not needed");
  cr_expect_eq(live[y->producer->id], 1, "read through the view");
  cr_expect_eq(live[pto__assemble_prev(y->producer)->id], 0);
  free(live);
  pto_program_free(p);
}

Test(core, program_assemble_refuses_what_does_not_fit) {
  static const struct {
    int kind;
    pto_status st;
    const char *frag;
  } cases[] = {
      {0, PTO_ERANGE, "assemble 'out': block 'b' f32[4,8] at [2,60] does not "
                      "fit in 'd' f32[16,64]: axis 1 spans [60, 68) of [0, 64)"},
      {1, PTO_ERANGE, "axis 0 spans [-1, 3) of [0, 16)"},
      {2, PTO_EDTYPE, "block 'bi' i32[4,8] and 'd' f32[16,64] differ in dtype"},
      {3, PTO_ESHAPE, "block 'b3' f32[1,4,8] has 3 dims, 'd' f32[16,64] has 2"},
      {4, PTO_EINVAL, "begin is NULL"},
      {5, PTO_ERANGE, "axis 1 spans [9223372036854775807, "
                      "9223372036854775807) of [0, 64)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_program *p = pto_program_new("bad");
    pto_tensor *d = in2(p, "d", PTO_F32, 16, 64), *b = in2(p, "b", PTO_F32, 4, 8);
    pto_tensor *bi = in2(p, "bi", PTO_I32, 4, 8);
    pto_tensor *b3 = pto_input(p, "b3", PTO_F32, 3, (const int64_t[]){1, 4, 8});
    pto_program_push_label(p, "out");
    pto_tensor *y = NULL;
    switch (cases[i].kind) {
    case 0: y = pto_assemble(p, d, b, (const int64_t[]){2, 60}); break;
    case 1: y = pto_assemble(p, d, b, (const int64_t[]){-1, 0}); break;
    case 2: y = pto_assemble(p, d, bi, (const int64_t[]){0, 0}); break;
    case 3: y = pto_assemble(p, d, b3, (const int64_t[]){0, 0}); break;
    case 4: y = pto_assemble(p, d, b, NULL); break;
    default: y = pto_assemble(p, d, b, (const int64_t[]){0, INT64_MAX}); break;
    }
    cr_expect_null(y);
    cr_expect_eq(pto_program_status(p), cases[i].st, "case %zu: %s", i,
                 pto_program_error(p));
    EXPECT_MSG_HAS(p, cases[i].frag);
    pto_program_free(p);
  }
}

/* ---- scopes -------------------------------------------------------------- */

Test(core, program_push_scope_sets_label_and_tile_together) {
  pto_program *p = pto_program_new("scope");
  pto_tensor *x = in2(p, "x", PTO_F32, 8, 8);
  pto_program_push_label(p, "layer");
  const pto_tile_shape t = {4, 8, 16, 16, 32};
  cr_assert_eq(pto_program_push_scope(p, "ffn", &t), PTO_OK);
  pto_tensor *a = pto_exp(p, x);
  cr_assert_eq(pto_program_push_scope(p, NULL, NULL), PTO_OK);
  pto_program_set_vec_tile(p, 2, 2);
  pto_tensor *b = pto_exp(p, x);
  cr_assert_eq(pto_program_pop_scope(p), PTO_OK);
  pto_tensor *c = pto_exp(p, x);
  cr_assert_eq(pto_program_pop_scope(p), PTO_OK);
  pto_tensor *d = pto_exp(p, x);
  cr_expect_str_eq(a->producer->label, "layer.ffn");
  cr_expect_eq(a->producer->tile.vec_rows, 4);
  cr_expect_eq(a->producer->tile.cube_k, 32);
  cr_expect(a->producer->tile_set & PTO_TILE_SET_VEC);
  cr_expect_str_eq(b->producer->label, "layer.ffn");
  cr_expect_eq(b->producer->tile.vec_rows, 2);
  cr_expect_eq(c->producer->tile.vec_rows, 4, "the inner scope's tile is gone");
  cr_expect_str_eq(d->producer->label, "layer");
  cr_expect_eq(d->producer->tile.vec_rows, pto_tile_shape_default().vec_rows);
  cr_expect(!(d->producer->tile_set & PTO_TILE_SET_VEC));
  cr_expect_eq(pto_program_status(p), PTO_OK);
  cr_expect_eq(pto_program_pop_label(p), PTO_OK);
  pto_program_free(p);
}

Test(core, program_scope_pops_must_match) {
  /* pop_scope with nothing open */
  pto_program *p = pto_program_new("s1");
  cr_expect_eq(pto_program_pop_scope(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "pop_scope: no scope to pop");
  pto_program_free(p);
  /* a label pushed inside the scope is still open */
  p = pto_program_new("s2");
  pto_program_push_scope(p, "a", NULL);
  pto_program_push_label(p, "b");
  cr_expect_eq(pto_program_pop_scope(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "pop_scope 'a.b': 1 label(s) and 0 tile scope(s) pushed "
                    "inside the scope are still open");
  pto_program_free(p);
  /* pop_label and pop_tile may not undo a scope's parts */
  p = pto_program_new("s3");
  pto_program_push_scope(p, "a", NULL);
  cr_expect_eq(pto_program_pop_label(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "label 'a' was pushed by push_scope: pop_scope pops it");
  pto_program_free(p);
  p = pto_program_new("s4");
  pto_program_push_scope(p, "a", NULL);
  cr_expect_eq(pto_program_pop_tile(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "pushed by push_scope: pop_scope pops it");
  pto_program_free(p);
  /* nor a label pushed before a scope without one */
  p = pto_program_new("s5");
  pto_program_push_label(p, "outer");
  pto_program_push_scope(p, NULL, NULL);
  cr_expect_eq(pto_program_pop_label(p), PTO_ESTATE);
  EXPECT_MSG_HAS(p, "label 'outer' was pushed before the open scope");
  pto_program_free(p);
  /* a bad label leaves no scope (nor tile scope) behind */
  p = pto_program_new("s6");
  cr_expect_eq(pto_program_push_scope(p, "", NULL), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "push_scope: a label must be 1 to 128 characters");
  cr_expect_eq(p->n_tiles, 1);
  cr_expect_eq(p->n_scopes, 0);
  pto_program_free(p);
  /* nesting too deep */
  p = pto_program_new("s7");
  pto_status st = PTO_OK;
  for (int i = 0; i < 40 && st == PTO_OK; i++)
    st = pto_program_push_scope(p, "x", NULL);
  cr_expect_eq(st, PTO_ESTATE);
  EXPECT_MSG_HAS(p, "more than 31 nested scopes");
  cr_expect_eq(pto_program_push_scope(NULL, "x", NULL), PTO_EINVAL);
  cr_expect_eq(pto_program_pop_scope(NULL), PTO_EINVAL);
  pto_program_free(p);
}
