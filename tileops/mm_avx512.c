/* The avx512 table's matmul engine (tileops/mm_avx512.h). */
#include "tileops/mm_avx512.h"

void pto__mm_avx512(pto_isa_table *t) {
  mm_install(t);
}
