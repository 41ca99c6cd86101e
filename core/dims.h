/* core/dims.h (internal): binding dynamic dims (core/dims.c): the checks
 * a binding passes, shared by runs and the evaluator. */
#ifndef PTO_CORE_DIMS_H
#define PTO_CORE_DIMS_H

#include <stdint.h>

#include "core/error.h"
#include "core/program.h"

/* Whether extents ext[i] for each of p's dims bind it: each in [1, its
 * maximum], and every equality the ops recorded holds. 0, or PTO_ERANGE /
 * PTO_ESHAPE with err naming the dim, its maximum and the value, or the op
 * and both sides. */
pto_status pto__dims_check(const pto_program *p, const int64_t *ext,
                           pto_error *err);

#endif /* PTO_CORE_DIMS_H */
