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
