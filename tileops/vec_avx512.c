/* avx512 overrides of the element, scalar, axis, memory, move and sort instructions. The only file of its
 * kind compiled with the avx512 flags (tileops/CMakeLists.txt). */
#include "tileops/tileops.h"

void pto__vec_avx512(pto_isa_table *t) {
  (void)t; /* nothing overridden yet: the scalar reference runs */
}
