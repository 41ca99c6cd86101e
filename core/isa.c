/* Instruction metadata, generated from core/isa.def. */
#include "core/isa.h"

#include "core/custom.h"

static const pto_insn_info infos[PTO_OP_COUNT] = {
#define PTO_INSN(name, fam, core, nsrc, ndst, flags)                           \
  {#name, PTO_FAMILY_##fam, PTO_CORE_##core, nsrc, ndst, flags},
#include "core/isa.def"
#undef PTO_INSN
};

const pto_insn_info *pto__insn_info(int op) {
  if (op >= 0 && op < PTO_OP_COUNT)
    return &infos[op];
  const pto_custom_op *c = pto__custom_get(op);
  return c ? &c->info : NULL;
}

const char *pto__insn_name(int op) {
  const pto_insn_info *i = pto__insn_info(op);
  return i ? i->name : "?";
}

const char *pto__family_name(pto_insn_family f) {
  static const char *const names[PTO_FAMILY_COUNT] = {
      "memory", "element", "scalar", "axis",
      "matmul", "move",    "complex", "custom"};
  return (unsigned)f < PTO_FAMILY_COUNT ? names[f] : "?";
}
