/* partitioner: planning what fits and what is kept: a working set or a
 * matmul tile too large for local memory is a clear error, a fusion too
 * large is split, a program without outputs is refused, and ops no output
 * needs are not computed and get no storage. */
#include <criterion/criterion.h>

#include "core/exe.h"
#include "pto/pto.h"
#include "tests/partitioner_test.h"

Test(partitioner, working_set_too_large_is_a_clear_error) {
  pto_program *p = pto_program_new("big");
  const int64_t s[2] = {512, 512};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 512, 512); /* 1 MiB tiles; UB is 192 KiB */
  pto_program_push_label(p, "big.sum");
  pto_output(p, pto_rowsum(p, a), "y");
  pto_config *c = ascend_config();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_ECAPACITY);
  cr_expect_null(e);
  const char *msg = pto_program_error(p);
  cr_expect(strstr(msg, "rowsum") && strstr(msg, "big.sum") &&
                strstr(msg, "UB") && strstr(msg, "196608"),
            "message: %s", msg);
  pto_config_free(c);
  pto_program_free(p);
}

/* A matmul operand that cannot fit: the message names the level, the tile
 * and the panel widths its operands are padded to. */
Test(partitioner, matmul_tile_too_large_names_the_packed_panels) {
  pto_program *p = pto_program_new("bigmm");
  const int64_t as[2] = {256, 256}, bs[2] = {256, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, as);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, bs);
  pto_program_set_cube_tile(p, 256, 64, 256); /* A tile 256 KiB > 64 KiB */
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  pto_config *c = ascend_config();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_ECAPACITY);
  cr_expect_null(e);
  const char *msg = pto_program_error(p);
  cr_expect(strstr(msg, "matmul") && strstr(msg, "L0A") &&
                strstr(msg, "65536") && strstr(msg, "256x64x256") &&
                strstr(msg, "packed in panels of"),
            "message: %s", msg);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, oversized_fusion_is_split_not_refused) {
  /* each op alone fits in UB; fused they would not */
  pto_program *p = pto_program_new("split");
  const int64_t s[2] = {64, 256};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 64, 256); /* 64 KiB per tile, 3 fit in UB */
  pto_tensor *x = pto_adds(p, a, 1);
  pto_tensor *ex = pto_exp(p, x);
  pto_tensor *y = pto_mul(p, x, ex); /* x, ex, y and z live at once: 256 KiB */
  pto_tensor *z = pto_sub(p, x, ex);
  pto_output(p, pto_add(p, y, z), "y");
  pto_config *c = ascend_config();
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_leq(st.mem_peak[PTO_MEM_UB], 196608);
  cr_expect_gt(st.tasks, 1);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, compile_without_outputs_is_rejected) {
  pto_program *p = pto_program_new("empty");
  const int64_t s[1] = {4};
  pto_input(p, "a", PTO_F32, 1, s);
  pto_executable *e = (pto_executable *)1;
  cr_expect_eq(pto_compile(p, NULL, &e), PTO_EINVAL);
  cr_expect_null(e);
  cr_expect(strstr(pto_program_error(p), "no outputs"));
  pto_program_free(p);
}

/* An op no output depends on is not computed: a program with an unused
 * intermediate (here exp(a) and a chain hanging off it) compiles to the
 * tasks of the one without it, and the unused tensors get no storage. A
 * view of an intermediate that is an output keeps that intermediate. */
static pto_program *plus_one(int with_unused, pto_tensor **unused) {
  const int64_t s[2] = {64, 64};
  pto_program *p = pto_program_new("dead");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 64);
  if (with_unused)
    *unused = pto_muls(p, pto_exp(p, a), 2.0);
  pto_output(p, pto_adds(p, a, 1.0), "y");
  return p;
}

Test(partitioner, ops_no_output_needs_are_not_computed) {
  const int64_t s[2] = {64, 64};
  pto_tensor *unused = NULL;
  pto_program *p = plus_one(0, NULL);
  pto_executable *e = compile_ok(p, NULL);
  pto_exe_stats live;
  pto_executable_stats(e, &live);
  pto_executable_free(e);
  pto_program_free(p);
  p = plus_one(1, &unused);
  e = compile_ok(p, NULL);
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  cr_expect_eq(st.tasks, live.tasks, "%u tasks, %u without the unused ops",
               st.tasks, live.tasks);
  cr_expect_eq(st.tile_instructions, live.tile_instructions);
  cr_expect_eq(st.workspace_bytes, 0);
  cr_expect_eq(e->storages[unused->id].kind, PTO_STORAGE_NONE);
  cr_expect_str_eq(pto_executable_program_name(e, 0), "p0:TLOAD.TADDS.TSTORE");
  pto_executable_free(e);
  pto_program_free(p);
  /* an output that is a view of an intermediate keeps its producer */
  p = pto_program_new("view");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 64);
  const int64_t lo[2] = {0, 0}, hi[2] = {32, 64};
  pto_output(p, pto_slice(p, pto_exp(p, a), lo, hi), "y");
  e = compile_ok(p, NULL);
  float x[64 * 64], y[32 * 64];
  for (int i = 0; i < 64 * 64; i++)
    x[i] = (float)(i % 7) * 0.25f;
  const void *in[] = {x};
  void *out[] = {y};
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  for (int i = 0; i < 32 * 64; i++)
    cr_assert(fabs(y[i] - exp((double)x[i])) <= 1e-6 * exp((double)x[i]),
              "y[%d] = %.9g, exp gives %.9g", i, (double)y[i],
              exp((double)x[i]));
  pto_executable_free(e);
  pto_program_free(p);
}
