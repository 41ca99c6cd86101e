/* placeholder: the reference evaluator is being written */
#include "core/program.h"
pto_status pto_program_eval(pto_program *p, const void *const *inputs,
                            void *const *outputs) {
  (void)inputs; (void)outputs;
  return p ? PTO_ENOTSUP : PTO_EINVAL;
}
