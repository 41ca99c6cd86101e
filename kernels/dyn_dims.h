/* Internal to kernels/: the batch, query and key extents of an operator's
 * whole-program builder (pto_indexer_program, pto_attention_program),
 * static or dynamic on request. */
#ifndef PTO_KERNELS_DYN_DIMS_H
#define PTO_KERNELS_DYN_DIMS_H

#include <inttypes.h>
#include <stdint.h>

#include "pto/pto.h"

/* v = {B, S1, S2} (dims b, s1, s2): each stays its static extent, or where
 * dyn has its bit (1, 2, 4: <prefix>_B, _S1, _S2) becomes dynamic dim "B",
 * "S1" or "S2" of p with it as the maximum. 0 after failing p (PTO_EINVAL,
 * named op) on a bit outside those or a maximum outside [1, 2^40). */
static inline int pto__dyn_bs1s2(pto_program *p, const char *op,
                                 const char *prefix, unsigned dyn,
                                 int64_t v[3]) {
  if (dyn & ~7u) {
    pto_program_fail(p, PTO_EINVAL, op,
                     "dynamic is 0x%x; it takes %s_B, _S1 and _S2 (0x%x) only",
                     dyn, prefix, 7u);
    return 0;
  }
  static const char *const name[3] = {"B", "S1", "S2"},
                           *const field[3] = {"b", "s1", "s2"};
  for (int i = 0; i < 3; i++) {
    if (!(dyn & 1u << i))
      continue;
    if (v[i] < 1 || v[i] >= -PTO_DIM_CODE_BASE) {
      pto_program_fail(p, PTO_EINVAL, op,
                       "dynamic dim %s needs a maximum in [1, 2^40); dims "
                       "%s is %" PRId64,
                       name[i], field[i], v[i]);
      return 0;
    }
    v[i] = pto_dim_dynamic(p, name[i], v[i]);
  }
  return 1;
}

#endif /* PTO_KERNELS_DYN_DIMS_H */
