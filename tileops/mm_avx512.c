/* avx512 overrides of the TMATMUL and TMATMUL_ACC. The only file of its
 * kind compiled with the avx512 flags (tileops/CMakeLists.txt). */
#include "tileops/tileops.h"

void pto__mm_avx512(pto_isa_table *t) {
  (void)t; /* nothing overridden yet: the scalar reference runs */
}
