/* core/config_impl.h (internal to core/config*.c and core/machine.c): the
 * config object's layout and the helpers its JSON loader and writer
 * (core/config_json.c) share with the object's own functions
 * (core/config.c) and with the machines (core/machine.c). */
#ifndef PTO_CORE_CONFIG_IMPL_H
#define PTO_CORE_CONFIG_IMPL_H

#include "core/config.h"

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

enum { TILE_VEC = 1, TILE_CUBE = 2 };

typedef struct config_label {
  char *name;
  size_t len;
  uint32_t knob_set; /* bit k: knob[k] is set */
  int64_t knob[PTO_KNOB_COUNT];
  unsigned tile_set; /* TILE_VEC | TILE_CUBE: which parts of tile are set */
  pto_tile_shape tile;
} config_label;

struct pto_config {
  pto_machine machine;
  int64_t knob[PTO_KNOB_COUNT];
  config_label *labels; /* sorted by name, in strcmp order */
  uint32_t n_labels, cap_labels;
  char **stages; /* stage barrier label prefixes, in stage order */
  uint32_t n_stages;
  pto_error err;
};

/* Knobs: on/off ones (0..1), which may be set per label (and why not),
 * and the names a knob accepts in JSON besides integers (NULL: none; the
 * index is the value). */
int pto__knob_is_flag(pto_knob k);
int pto__knob_per_label(pto_knob k);
const char *pto__knob_not_per_label(pto_knob k);
const char *const *pto__knob_value_names(pto_knob k);

/* The detected host machine, or a one-worker fallback when detection
 * failed (its reason in pto__host_error); core/machine.c. */
void pto__host_or_fallback(pto_machine *m);

/* Moves src's contents into dst (freeing dst's), leaving src empty. */
void pto__config_commit(pto_config *dst, pto_config *src);
/* The label override called name, added when missing; NULL on ENOMEM. */
config_label *pto__config_label_get(pto_config *c, const char *name);

/* The first prefix that cannot be a stage, with why in msg, or -1; and
 * c's stages replaced by copies of prefixes (ENOMEM leaves c as it was). */
long pto__stages_bad(const char *const *prefixes, uint32_t n, char *msg,
                     size_t size);
pto_status pto__stages_set(pto_config *c, const char *const *prefixes,
                           uint32_t n);

#endif /* PTO_CORE_CONFIG_IMPL_H */
