/* core/custom.h (internal): the process-wide registry of custom tile
 * instructions. Ids are PTO_OP_COUNT + slot. */
#ifndef PTO_CORE_CUSTOM_H
#define PTO_CORE_CUSTOM_H

#include "core/isa.h"
#include "pto/tileop.h"

#define PTO_CUSTOM_MAX 256

typedef struct pto_custom_op {
  pto_custom_op_desc desc; /* desc.name points at name */
  pto_insn_info info;
  char name[64];
} pto_custom_op;

/* The registered op with that id, or NULL. Safe from any thread. */
const pto_custom_op *pto__custom_get(int id);

#endif /* PTO_CORE_CUSTOM_H */
