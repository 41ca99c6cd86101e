/* Building the per-ISA tables: the scalar reference, then each ISA's
 * overrides. Compiled without ISA flags: nothing here runs SIMD code. */
#include <uv.h>

#include "tileops/tileops.h"

static pto_isa_table avx2_table, avx512_table, avx512bf16_table;
static uv_once_t avx2_once = UV_ONCE_INIT, avx512_once = UV_ONCE_INIT,
                 avx512bf16_once = UV_ONCE_INIT;

static void build_avx2(void) {
  pto__isa_table_derive(&avx2_table, "avx2", &pto__isa_scalar);
  pto__vec_avx2(&avx2_table);
  pto__mm_avx2(&avx2_table);
}

static void build_avx512(void) {
  pto__isa_table_derive(&avx512_table, "avx512", &pto__isa_scalar);
  pto__vec_avx512(&avx512_table);
  pto__mm_avx512(&avx512_table);
}

static void build_avx512bf16(void) { /* avx512 with the bf16 engine */
  pto__isa_table_derive(&avx512bf16_table, "avx512bf16", &pto__isa_scalar);
  pto__vec_avx512(&avx512bf16_table);
  pto__mm_avx512bf16(&avx512bf16_table);
}

const pto_isa_table *pto__isa_avx2(void) {
  uv_once(&avx2_once, build_avx2);
  return &avx2_table;
}

const pto_isa_table *pto__isa_avx512(void) {
  uv_once(&avx512_once, build_avx512);
  return &avx512_table;
}

const pto_isa_table *pto__isa_avx512bf16(void) {
  uv_once(&avx512bf16_once, build_avx512bf16);
  return &avx512bf16_table;
}

int pto__mm_native(pto_dtype dt) {
  return (unsigned)dt < PTO_DTYPE_COUNT && pto__isa_active()->mm_native[dt];
}

void pto__mm_panel(uint32_t *mr, uint32_t *nr) {
  const pto_isa_table *t = pto__isa_active();
  *mr = t->mm_mr;
  *nr = t->mm_nr;
}

void pto_matmul_panel(uint32_t *mr, uint32_t *nr) {
  pto__mm_panel(mr, nr);
}

const char *pto_matmul_engine(pto_dtype dt) {
  if (pto__isa_check(NULL, 0) || (unsigned)dt >= PTO_DTYPE_COUNT)
    return NULL;
  return pto__isa_active()->mm_engine[dt];
}
