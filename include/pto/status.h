/* pto/status.h: status codes. 0 is success, errors are negative. */
#ifndef PTO_STATUS_H
#define PTO_STATUS_H

#include "pto/export.h"

PTO_EXTERN_C_BEGIN

/* The one list of status codes: X(name, value, message). Grows at the end. */
#define PTO_STATUS_MAP(X)                                                      \
  X(OK, 0, "success")                                                          \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ESHAPE, -2, "shape mismatch")                                              \
  X(EDTYPE, -3, "unsupported or mismatched dtype")                             \
  X(ENOMEM, -4, "out of memory")                                               \
  X(ENOTSUP, -5, "operation not supported")                                    \
  X(ERANGE, -6, "index out of range")                                          \
  X(ECAPACITY, -7, "local memory capacity exceeded")                           \
  X(ECONFIG, -8, "invalid configuration")                                      \
  X(EIO, -9, "input/output error")                                             \
  X(ECANCELED, -10, "canceled")                                                \
  X(ETASK, -11, "task failed")                                                 \
  X(ESTATE, -12, "object is in the wrong state for this call")                 \
  X(EISA, -13, "instruction set not supported by this CPU")                    \
  X(ENOTFOUND, -14, "not found")                                               \
  X(ETIMEDOUT, -15, "timed out")                                               \
  X(ECOMM, -16, "communication between ranks failed")

typedef enum pto_status {
#define PTO__STATUS_ENUM(name, value, msg) PTO_##name = (value),
  PTO_STATUS_MAP(PTO__STATUS_ENUM)
#undef PTO__STATUS_ENUM
  PTO_STATUS_COUNT = 17 /* number of codes; codes are 0, -1, ... -(COUNT-1) */
} pto_status;

/* "PTO_ESHAPE" for PTO_ESHAPE; "PTO_UNKNOWN" for a value outside the list. */
PTO_API const char *pto_status_name(int status);
/* "shape mismatch" for PTO_ESHAPE. Never NULL. */
PTO_API const char *pto_strerror(int status);

/* Every failing call leaves a message about itself. A call on an object
 * keeps it there: pto_program_error, pto_config_error,
 * pto_executable_error, pto_runtime_error and pto_graph_error return it
 * (given NULL, each says the object is NULL). A call with no object of its
 * own (pto_machine_host, pto_custom_op_register, pto_mask_from_name,
 * pto_graph_new, pto_runtime_new, which pto_runtime_error(NULL) also
 * reports), and a compile, run, dump or trace call whose objects are all
 * NULL, leaves it here instead: the message of the calling thread's last
 * such failure, e.g. "pto_custom_op_register: 'my.op' is already
 * registered (id 61)"; "" when there has been none. A later success does
 * not clear it. */
PTO_API const char *pto_last_error(void);

PTO_EXTERN_C_END

#endif /* PTO_STATUS_H */
