/* core: status codes, dtypes and tile geometry. */
#include <criterion/criterion.h>
#include <string.h>

#include "pto/pto.h"

Test(core, status_codes_are_dense_and_named) {
  for (int s = 0; s > -PTO_STATUS_COUNT; s--) {
    cr_expect(strncmp(pto_status_name(s), "PTO_", 4) == 0);
    cr_expect_str_neq(pto_status_name(s), "PTO_UNKNOWN", "code %d", s);
    cr_expect_str_neq(pto_strerror(s), "unknown status", "code %d", s);
  }
  cr_expect_str_eq(pto_status_name(PTO_OK), "PTO_OK");
  cr_expect_str_eq(pto_status_name(PTO_ESHAPE), "PTO_ESHAPE");
  cr_expect_str_eq(pto_status_name(-PTO_STATUS_COUNT), "PTO_UNKNOWN");
  cr_expect_str_eq(pto_status_name(1), "PTO_UNKNOWN");
  cr_expect_str_eq(pto_strerror(-1000), "unknown status");
}

Test(core, dtype_names_and_sizes) {
  cr_expect_str_eq(pto_dtype_name(PTO_F32), "f32");
  cr_expect_str_eq(pto_dtype_name(PTO_BF16), "bf16");
  cr_expect_eq(pto_dtype_size(PTO_I32), 4);
  cr_expect_eq(pto_dtype_size(PTO_F16), 2);
  cr_expect_eq(pto_dtype_size(PTO_DTYPE_COUNT), 0);
  cr_expect_str_eq(pto_dtype_name(PTO_DTYPE_COUNT), "?");
  cr_expect_str_eq(pto_core_type_name(PTO_CORE_CUBE), "cube");
  cr_expect_str_eq(pto_core_type_name(PTO_CORE_TYPE_COUNT), "?");
}

Test(core, tile_rows_are_64_byte_aligned) {
  cr_expect_eq(pto_tile_stride(PTO_F32, 1), 16);
  cr_expect_eq(pto_tile_stride(PTO_F32, 16), 16);
  cr_expect_eq(pto_tile_stride(PTO_F32, 17), 32);
  cr_expect_eq(pto_tile_stride(PTO_BF16, 33), 64);
  cr_expect_eq(pto_tile_bytes(PTO_F32, 32, 100), 32 * 112 * 4);
  cr_expect_eq(pto_tile_stride(PTO_DTYPE_COUNT, 8), 0);
}

Test(core, default_tile_shape) {
  pto_tile_shape s = pto_tile_shape_default();
  cr_expect_eq(s.vec_rows, 32);
  cr_expect_eq(s.vec_cols, 128);
  cr_expect_eq(s.cube_m, 0);
}

/* ---- messages of calls with no object of their own ------------------------ */

#define EXPECT_LAST(part)                                                      \
  cr_expect(strstr(pto_last_error(), (part)) != NULL,                          \
            "pto_last_error() \"%s\" lacks \"%s\"", pto_last_error(), (part))

static int noop_op(pto_tile *dst, const pto_tile *const *src, int n_src,
                   void *user) {
  (void)dst, (void)src, (void)n_src, (void)user;
  return 0;
}

Test(core, calls_without_an_object_leave_their_message_per_thread) {
  pto_custom_op_desc d = {"status.msg", PTO_CORE_VECTOR, 1, PTO_F32, 0,
                          noop_op, NULL};
  int id = -1, id2 = -1;
  cr_assert_eq(pto_custom_op_register(&d, &id), PTO_OK);
  cr_expect_eq(pto_custom_op_register(&d, &id2), PTO_EINVAL);
  EXPECT_LAST("pto_custom_op_register: 'status.msg' is already registered");
  char want[64];
  snprintf(want, sizeof want, "(id %d)", id);
  EXPECT_LAST(want);
  /* a success leaves the last failure's message */
  cr_expect_eq(pto_mask_from_name("causal", &(pto_mask_mode){0}), PTO_OK);
  EXPECT_LAST("already registered");
  d.name = "status.msg2";
  d.n_src = 9;
  cr_expect_eq(pto_custom_op_register(&d, &id2), PTO_EINVAL);
  EXPECT_LAST("'status.msg2' has n_src 9, not 1..");
  d.n_src = 1;
  d.core = PTO_CORE_MEMORY;
  cr_expect_eq(pto_custom_op_register(&d, &id2), PTO_EINVAL);
  EXPECT_LAST("not cube or vector");
  d.core = PTO_CORE_VECTOR;
  d.fn = NULL;
  cr_expect_eq(pto_custom_op_register(&d, &id2), PTO_EINVAL);
  EXPECT_LAST("'status.msg2' has no function");
  cr_expect_eq(pto_custom_op_register(NULL, &id2), PTO_EINVAL);
  EXPECT_LAST("desc is NULL");

  pto_mask_mode m = PTO_MASK_NONE;
  cr_expect_eq(pto_mask_from_name("casual", &m), PTO_EINVAL);
  EXPECT_LAST("unknown mask 'casual' (expected one of none, causal)");
  cr_expect_eq(m, PTO_MASK_NONE);
  cr_expect_eq(pto_machine_host(NULL), PTO_EINVAL);
  EXPECT_LAST("pto_machine_host: m is NULL");

  /* pto_program_fail misused: refused, and the program stays usable */
  pto_program *p = pto_program_new("status");
  cr_assert_not_null(p);
  cr_expect_eq(pto_program_fail(p, PTO_OK, "op", "fine"), PTO_EINVAL);
  EXPECT_LAST("pto_program_fail: status 0 is not an error");
  cr_expect_eq(pto_program_status(p), PTO_OK);
  cr_expect_eq(pto_program_fail(p, PTO_EINVAL, NULL, "x"), PTO_EINVAL);
  EXPECT_LAST("op is NULL");
  cr_expect_eq(pto_program_status(p), PTO_OK);
  pto_program_free(p);
}
