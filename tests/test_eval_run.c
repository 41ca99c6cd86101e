/* core: the reference evaluator (pto_program_eval) as a run rather than
 * an op's arithmetic: the custom ops it calls (once, on whole tensors;
 * their errors name the op) and the run's own errors (null buffers, the
 * sticky build error returned without running). */
#include "tests/eval_test.h"

/* ---- custom ops --------------------------------------------------------- */

typedef struct custom_probe {
  int calls;
  int aligned, strided, shaped;
} custom_probe;

/* dst = 2 * src0 + src1, and records what it was given. */
static int axpb(pto_tile *dst, const pto_tile *const *src, int n_src,
                void *user) {
  custom_probe *pr = user;
  pr->calls++;
  pr->aligned = 1;
  pr->strided = 1;
  pr->shaped = n_src == 2 && dst->dtype == PTO_F32 &&
               src[0]->dtype == PTO_F32 && src[1]->dtype == PTO_F32 &&
               dst->rows == src[0]->rows && dst->cols == src[0]->cols &&
               dst->valid_rows == dst->rows && dst->valid_cols == dst->cols;
  for (int i = 0; i < n_src; i++) {
    pr->aligned &= (uintptr_t)src[i]->data % PTO_TILE_ALIGN == 0;
    pr->strided &=
        src[i]->stride == pto_tile_stride(src[i]->dtype, src[i]->cols);
  }
  pr->aligned &= (uintptr_t)dst->data % PTO_TILE_ALIGN == 0;
  pr->strided &= dst->stride == pto_tile_stride(dst->dtype, dst->cols);
  const float *a = src[0]->data, *b = src[1]->data;
  float *d = dst->data;
  for (uint32_t r = 0; r < dst->valid_rows; r++)
    for (uint32_t c = 0; c < dst->valid_cols; c++)
      d[r * dst->stride + c] =
          2.0f * a[r * src[0]->stride + c] + b[r * src[1]->stride + c];
  return 0;
}

static int fails(pto_tile *dst, const pto_tile *const *src, int n_src,
                 void *user) {
  (void)dst, (void)src, (void)n_src, (void)user;
  return PTO_ERANGE;
}

static int register_op(const char *name, int n_src, pto_custom_fn fn,
                       void *user) {
  pto_custom_op_desc d = {name, PTO_CORE_VECTOR, n_src, PTO_F32, 0, fn, user};
  int id = pto_custom_op_find(name); /* already there without --no-fork */
  if (id >= 0)
    return id;
  cr_assert_eq(pto_custom_op_register(&d, &id), PTO_OK, "register %s", name);
  return id;
}

Test(core, eval_custom_op_runs_once_on_whole_tensor) {
  static custom_probe probe;
  int id = register_op("eval_test_axpb", 2, axpb, &probe);
  float a[2 * 3 * 20], b[2 * 3 * 20], o[2 * 3 * 20];
  fill(a, 120, 41, -1, 1);
  fill(b, 120, 42, -1, 1);
  pto_program *p = pto_program_new("custom");
  int64_t sh[3] = {2, 3, 20};
  pto_tensor *ins_t[2];
  ins_t[0] = pto_input(p, "a", PTO_F32, 3, sh); /* declaration order */
  ins_t[1] = pto_input(p, "b", PTO_F32, 3, sh);
  pto_output(p, pto_custom(p, id, 2, ins_t), "o");
  const void *ins[] = {a, b};
  void *outs[] = {o};
  EVAL_OK(p, ins, outs);
  cr_expect_eq(probe.calls, 1);
  cr_expect(probe.aligned, "64-byte aligned tiles");
  cr_expect(probe.strided, "padded tile strides");
  cr_expect(probe.shaped, "whole-tensor 2-D tiles");
  for (int i = 0; i < 120; i++)
    EXPECT_F32(o[i], 2.0f * a[i] + b[i], "%d", i);
  pto_program_free(p);
}

Test(core, eval_custom_op_error_names_the_op) {
  int id = register_op("eval_test_fails", 1, fails, NULL);
  float a[4] = {1, 2, 3, 4}, o[4];
  pto_program *p = pto_program_new("custom_fail");
  pto_program_push_label(p, "stage");
  int64_t sh[1] = {4};
  pto_tensor *t = pto_input(p, "a", PTO_F32, 1, sh);
  pto_output(p, pto_custom(p, id, 1, &t), "o");
  BUILD_OK(p);
  const void *ins[] = {a};
  void *outs[] = {o};
  cr_expect_eq(pto_program_eval(p, ins, outs), PTO_ERANGE);
  EXPECT_MSG_HAS(p, "eval_test_fails");
  EXPECT_MSG_HAS(p, "'stage'");
  cr_expect_eq(pto_program_status(p), PTO_OK);
  pto_program_free(p);
}

/* ---- the run's own errors ----------------------------------------------- */

Test(core, eval_rejects_null_buffers) {
  float a[4] = {0}, o[4];
  pto_program *p = pto_program_new("nulls");
  int64_t sh[1] = {4};
  pto_output(p, pto_neg(p, pto_input(p, "a", PTO_F32, 1, sh)), "o");
  BUILD_OK(p);
  const void *ins[] = {a}, *null_in[] = {NULL};
  void *outs[] = {o}, *null_out[] = {NULL};
  cr_expect_eq(pto_program_eval(NULL, ins, outs), PTO_EINVAL);
  cr_expect_eq(pto_program_eval(p, NULL, outs), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "inputs");
  cr_expect_eq(pto_program_eval(p, ins, NULL), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "outputs");
  cr_expect_eq(pto_program_eval(p, null_in, outs), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "'a'");
  cr_expect_eq(pto_program_eval(p, ins, null_out), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "'o'");
  cr_expect_eq(pto_program_status(p), PTO_OK);
  EVAL_OK(p, ins, outs);
  pto_program_free(p);
}

Test(core, eval_returns_the_sticky_build_error_without_running) {
  float a[4] = {1, 2, 3, 4}, o[4] = {9, 9, 9, 9};
  pto_program *p = pto_program_new("sticky");
  int64_t sh[1] = {4};
  pto_tensor *t = pto_input(p, "a", PTO_F32, 1, sh);
  pto_output(p, pto_neg(p, t), "o");
  cr_expect_null(pto_exp(p, pto_cast(p, t, PTO_I32))); /* EDTYPE */
  const void *ins[] = {a};
  void *outs[] = {o};
  cr_expect_eq(pto_program_eval(p, ins, outs), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "exp");
  for (int i = 0; i < 4; i++)
    EXPECT_F32(o[i], 9.0f, "untouched %d", i);
  pto_program_free(p);
}
