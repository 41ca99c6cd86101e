// core: the public API used from C++ (extern "C", no C-only constructs).
#include <criterion/criterion.h>

#include <cmath>
#include <vector>

#include "pto/pto.h"

Test(core, api_from_cpp) {
  pto_program *p = pto_program_new("cpp");
  const int64_t shape[2] = {4, 8};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, shape);
  pto_tensor *s = pto_rowsum(p, pto_muls(p, a, 3.0));
  cr_assert_eq(pto_output(p, s, "s"), PTO_OK);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));

  std::vector<float> in(32), out(4);
  for (int i = 0; i < 32; i++)
    in[i] = static_cast<float>(i);
  const void *ins[] = {in.data()};
  void *outs[] = {out.data()};
  cr_assert_eq(pto_program_eval(p, ins, outs), PTO_OK, "%s",
               pto_program_error(p));
  for (int r = 0; r < 4; r++) {
    double want = 0;
    for (int c = 0; c < 8; c++)
      want += 3.0 * (r * 8 + c);
    cr_expect(std::fabs(out[r] - want) <= 1e-5 * want, "row %d: %g vs %g", r,
              out[r], want);
  }
  pto_program_free(p);
}
