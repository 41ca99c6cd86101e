/* Names of status codes, dtypes and core types. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "pto/status.h"
#include "pto/types.h"

const char *pto_status_name(int status) {
  switch (status) {
#define PTO__STATUS_NAME(name, value, msg)                                     \
  case value:                                                                  \
    return "PTO_" #name;
    PTO_STATUS_MAP(PTO__STATUS_NAME)
#undef PTO__STATUS_NAME
  default:
    return "PTO_UNKNOWN";
  }
}

const char *pto_strerror(int status) {
  switch (status) {
#define PTO__STATUS_MSG(name, value, msg)                                      \
  case value:                                                                  \
    return msg;
    PTO_STATUS_MAP(PTO__STATUS_MSG)
#undef PTO__STATUS_MSG
  default:
    return "unknown status";
  }
}

static const struct {
  const char *name;
  size_t size;
} dtypes[PTO_DTYPE_COUNT] = {
#define PTO__DTYPE_ROW(name, str, size) {str, size},
    PTO_DTYPE_MAP(PTO__DTYPE_ROW)
#undef PTO__DTYPE_ROW
};

const char *pto_dtype_name(pto_dtype dt) {
  return (unsigned)dt < PTO_DTYPE_COUNT ? dtypes[dt].name : "?";
}

size_t pto_dtype_size(pto_dtype dt) {
  return (unsigned)dt < PTO_DTYPE_COUNT ? dtypes[dt].size : 0;
}

const char *pto_core_type_name(pto_core_type c) {
  static const char *const names[PTO_CORE_TYPE_COUNT] = {"cube", "vector",
                                                         "memory"};
  return (unsigned)c < PTO_CORE_TYPE_COUNT ? names[c] : "?";
}

static const char *const mask_names[PTO_MASK_MODE_COUNT] = {"none",
                                                            "causal"};

const char *pto_mask_name(pto_mask_mode m) {
  return (unsigned)m < PTO_MASK_MODE_COUNT ? mask_names[m] : "?";
}

int pto_mask_from_name(const char *name, pto_mask_mode *m) {
  for (int i = 0; name && m && i < PTO_MASK_MODE_COUNT; i++)
    if (!strcmp(name, mask_names[i])) {
      *m = (pto_mask_mode)i;
      return PTO_OK;
    }
  if (!name || !m)
    return pto__last_error(PTO_EINVAL, "pto_mask_from_name: %s is NULL",
                           name ? "m" : "name");
  char known[64] = "";
  for (int i = 0, len = 0; i < PTO_MASK_MODE_COUNT && len < (int)sizeof known;
       i++)
    len += snprintf(known + len, sizeof known - (size_t)len, "%s%s",
                    i ? ", " : "", mask_names[i]);
  return pto__last_error(PTO_EINVAL,
                         "pto_mask_from_name: unknown mask '%.64s' (expected "
                         "one of %s)",
                         name, known);
}

pto_tile_shape pto_tile_shape_default(void) {
  pto_tile_shape s = {32, 128, 0, 0, 0};
  return s;
}
