/* core: the public headers, as used from C. Their self-containment is checked
 * at build time by tests/CMakeLists.txt (one generated C and C++ translation
 * unit per header); this file checks what a build cannot. */
#include <criterion/criterion.h>

#include "pto/pto.h"

Test(core, headers_version_and_enums_have_sentinels) {
  cr_expect_eq(PTO_VERSION_MAJOR, 0);
  cr_expect_eq(PTO_DTYPE_COUNT, 4);
  cr_expect_eq(PTO_CORE_TYPE_COUNT, 3);
  cr_expect_eq(PTO_CMP_MODE_COUNT, 6);
}
