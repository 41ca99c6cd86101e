/* Internal to kernels/: reading operator inputs in the plain-C references,
 * which take f32 or bf16 data. */
#ifndef PTO_KERNELS_REF_VALUES_H
#define PTO_KERNELS_REF_VALUES_H

#include <stdint.h>
#include <string.h>

#include "pto/types.h"

/* Element i of an f32 or bf16 array, exactly (a bf16 is the top half of an
 * f32; decoded here by definition, not with the library's converters). */
static inline double pto__ref_val(const void *a, pto_dtype dt, int64_t i) {
  if (dt == PTO_F32)
    return ((const float *)a)[i];
  const uint32_t u = (uint32_t)((const uint16_t *)a)[i] << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#endif /* PTO_KERNELS_REF_VALUES_H */
