/* Which settings of a config's label overrides a program reads: the ones it
 * does not are reported (pto_executable_warnings), so that a typo in a
 * label or a setting for ops the label has none of does not pass for
 * tuning. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/custom.h"
#include "core/program.h"
#include "core/tprog.h"

/* Whether op n reads setting s: fuse every op; a tile part and the knob of
 * the subgraphs the op's units go to (nbuffer: vector, l1_reuse: matmul)
 * the ops of that kind; policy no op (it is per run). */
static int reads(const pto_node *n, int s) {
  const int matmul = pto__top_class(n->op) == PTO_TC_MATMUL;
  int vector = !matmul;
  if (pto__top_class(n->op) == PTO_TC_CUSTOM) {
    const pto_custom_op *op = pto__custom_get((int)n->ival);
    vector = !op || op->desc.core == PTO_CORE_VECTOR;
  }
  if (n->op == PTO_TOP_TILE_PROGRAM) { /* its tiles, when it is tuned */
    vector = n->tprog->core == PTO_CORE_VECTOR;
    if (s == PTO__SET_CUBE_TILE || s == PTO__SET_VEC_TILE)
      return n->tprog->build != NULL;
  }
  switch (s) {
  case PTO_KNOB_FUSE:
    return 1;
  case PTO_KNOB_NBUFFER:
    return vector;
  case PTO_KNOB_L1_REUSE:
  case PTO__SET_CUBE_TILE:
    return matmul;
  case PTO__SET_VEC_TILE:
    return !matmul;
  default:
    return 0;
  }
}

static const char *kind_of(int s) {
  switch (s) {
  case PTO_KNOB_NBUFFER:
    return "vector ops";
  case PTO_KNOB_L1_REUSE:
  case PTO__SET_CUBE_TILE:
    return "matmuls";
  case PTO__SET_VEC_TILE:
    return "ops other than matmul";
  default:
    return "no op (it applies to a whole run)";
  }
}

/* 1 when label is entry or under it (entry + '.' + ...). */
static int under(const char *label, const char *entry) {
  size_t n = strlen(entry);
  return !strncmp(label, entry, n) && (label[n] == '\0' || label[n] == '.');
}

typedef struct lines {
  char *buf;
  size_t len, cap;
  int oom;
} lines;

__attribute__((format(printf, 2, 3))) static void add(lines *l, const char *fmt,
                                                      ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0 || l->oom)
    return;
  size_t len = strlen(line), need = l->len + len + 2;
  if (need > l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    while (cap < need)
      cap *= 2;
    char *grown = realloc(l->buf, cap);
    if (!grown) {
      l->oom = 1;
      return;
    }
    l->buf = grown;
    l->cap = cap;
  }
  if (l->len)
    l->buf[l->len++] = '\n';
  memcpy(l->buf + l->len, line, len + 1);
  l->len += len;
}

/* "l1_reuse, cube_tile" for the settings in mask. */
static void names_of(uint32_t mask, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int s = 0; s < PTO__SET_COUNT && len < size; s++)
    if (mask & (UINT32_C(1) << s))
      len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                              pto__config_setting_name(s));
}

pto_status pto__config_unused(const pto_config *c, const pto_program *p,
                              char **out) {
  *out = NULL;
  const uint32_t n = pto__config_n_labels(c);
  if (!n)
    return PTO_OK;
  /* per entry: settings some op reads from it, and settings some op under
   * it reads (from it or a longer label) */
  uint32_t *used = calloc(n, sizeof *used), *wanted = calloc(n, sizeof *wanted);
  uint8_t *matched = calloc(n, 1);
  if (!used || !wanted || !matched) {
    free(used);
    free(wanted);
    free(matched);
    return PTO_ENOMEM;
  }
  for (uint32_t k = 0; k < p->n_nodes; k++) {
    const pto_node *nd = p->nodes[k];
    if (!nd->label[0])
      continue;
    uint32_t reads_mask = 0;
    for (int s = 0; s < PTO__SET_COUNT; s++)
      if (reads(nd, s)) {
        reads_mask |= UINT32_C(1) << s;
        long src = pto__config_source(c, nd->label, s);
        if (src >= 0)
          used[src] |= UINT32_C(1) << s;
      }
    for (uint32_t i = 0; i < n; i++)
      if (under(nd->label, pto__config_label_name(c, i))) {
        matched[i] = 1;
        wanted[i] |= reads_mask;
      }
  }
  lines l = {NULL, 0, 0, 0};
  for (uint32_t i = 0; i < n; i++) {
    const char *name = pto__config_label_name(c, i);
    const uint32_t unused = pto__config_label_sets(c, i) & ~used[i];
    char sets[160];
    if (!unused)
      continue;
    if (!matched[i]) {
      names_of(unused, sets, sizeof sets);
      add(&l,
          "config: label '%s' (%s) matches no op of program '%s': none is "
          "labelled '%s' or '%s.*'",
          name, sets, p->name, name, name);
      continue;
    }
    for (int s = 0; s < PTO__SET_COUNT; s++) {
      if (!(unused & (UINT32_C(1) << s)))
        continue;
      if (wanted[i] & (UINT32_C(1) << s))
        add(&l,
            "config: label '%s': %s is unused: every op under it that reads "
            "%s takes it from a longer label",
            name, pto__config_setting_name(s), pto__config_setting_name(s));
      else
        add(&l,
            "config: label '%s': %s is unused: it applies to %s, and the "
            "label has none",
            name, pto__config_setting_name(s), kind_of(s));
    }
  }
  free(used);
  free(wanted);
  free(matched);
  if (l.oom) {
    free(l.buf);
    return PTO_ENOMEM;
  }
  *out = l.buf;
  return PTO_OK;
}
