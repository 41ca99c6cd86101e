/* The config: a machine description, global knobs and per-label overrides,
 * set in code or merged from JSON. Machines themselves (the host's
 * detection, the memory levels, the checks) are core/machine.c. */
#include "core/config_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- knobs --------------------------------------------------------------- */

static const struct {
  const char *name;
  int64_t def, min, max;
} knobs[PTO_KNOB_COUNT] = {
#define PTO__KNOB_ROW(name, str, def, lo, hi) {str, def, lo, hi},
    PTO_KNOB_MAP(PTO__KNOB_ROW)
#undef PTO__KNOB_ROW
};

_Static_assert(PTO_KNOB_COUNT <= 32, "knob_set is a 32-bit mask");

/* Names a knob accepts in JSON besides integers; the index is the value. */
static const char *const policy_names[] = {"fifo", "critical-path", "locality",
                                           NULL};
static const char *const *const knob_value_names[PTO_KNOB_COUNT] = {
    [PTO_KNOB_POLICY] = policy_names,
};

const char *const *pto__knob_value_names(pto_knob k) {
  return (unsigned)k < PTO_KNOB_COUNT ? knob_value_names[k] : NULL;
}

/* A knob whose range is [0, 1] is a flag: JSON may give it as a boolean. */
int pto__knob_is_flag(pto_knob k) {
  return knobs[k].min == 0 && knobs[k].max == 1;
}

/* policy orders the ready queues every task of a run shares, so one run
 * has one policy: it is a run-wide setting, not a per-label one. */
int pto__knob_per_label(pto_knob k) {
  return k != PTO_KNOB_POLICY;
}

const char *pto__knob_not_per_label(pto_knob k) {
  (void)k; /* policy is the only one */
  return "policy is chosen per run (the ready queues every task of a run "
         "shares follow one policy), not per label: set it globally "
         "(knobs.policy, which pto_runtime_params_from_config reads)";
}

const char *pto_knob_name(pto_knob k) {
  return (unsigned)k < PTO_KNOB_COUNT ? knobs[k].name : "?";
}

int64_t pto__knob_default(pto_knob k) {
  return knobs[k].def;
}
int64_t pto__knob_min(pto_knob k) {
  return knobs[k].min;
}
int64_t pto__knob_max(pto_knob k) {
  return knobs[k].max;
}

/* ---- machines (described and detected in core/machine.c) ----------------- */

static int machine_equal(const pto_machine *a, const pto_machine *b) {
  if (strncmp(a->name, b->name, sizeof a->name) || !a->shared != !b->shared)
    return 0;
  if (a->workers[0] != b->workers[0] || a->workers[1] != b->workers[1])
    return 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    if (a->mem[l] != b->mem[l])
      return 0;
  return 1;
}

/* ---- the config object --------------------------------------------------- */

static void stages_free(char **stages, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    free(stages[i]);
  free(stages);
}

pto_config *pto_config_new(void) {
  pto_config *c = calloc(1, sizeof *c);
  if (!c) {
    pto__last_error(PTO_ENOMEM, "pto_config_new: out of memory");
    return NULL;
  }
  pto__host_or_fallback(&c->machine);
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    c->knob[k] = knobs[k].def;
  return c;
}

void pto_config_free(pto_config *c) {
  if (!c)
    return;
  for (uint32_t i = 0; i < c->n_labels; i++)
    free(c->labels[i].name);
  free(c->labels);
  stages_free(c->stages, c->n_stages);
  free(c);
}

static char *dup_bytes(const char *s, size_t len) {
  char *d = malloc(len + 1);
  if (d) {
    memcpy(d, s, len);
    d[len] = '\0';
  }
  return d;
}

pto_config *pto_config_clone(const pto_config *c) {
  pto_config *d;
  if (!c)
    return NULL;
  d = malloc(sizeof *d);
  if (!d)
    return NULL;
  *d = *c;
  d->labels = NULL;
  d->n_labels = d->cap_labels = 0;
  d->stages = NULL;
  d->n_stages = 0;
  pto__error_clear(&d->err);
  if (c->n_stages) {
    d->stages = calloc(c->n_stages, sizeof *d->stages);
    if (!d->stages)
      goto fail;
    for (uint32_t i = 0; i < c->n_stages; i++) {
      d->stages[i] = dup_bytes(c->stages[i], strlen(c->stages[i]));
      if (!d->stages[i])
        goto fail;
      d->n_stages++;
    }
  }
  if (c->n_labels) {
    d->labels = calloc(c->n_labels, sizeof *d->labels);
    if (!d->labels)
      goto fail;
    d->cap_labels = c->n_labels;
    for (uint32_t i = 0; i < c->n_labels; i++) {
      d->labels[i] = c->labels[i];
      d->labels[i].name = dup_bytes(c->labels[i].name, c->labels[i].len);
      if (!d->labels[i].name)
        goto fail;
      d->n_labels++;
    }
  }
  return d;
fail:
  pto_config_free(d);
  return NULL;
}

/* Moves src's settings into dst (keeping dst's error record); frees src. */
void pto__config_commit(pto_config *dst, pto_config *src) {
  for (uint32_t i = 0; i < dst->n_labels; i++)
    free(dst->labels[i].name);
  free(dst->labels);
  dst->machine = src->machine;
  memcpy(dst->knob, src->knob, sizeof dst->knob);
  dst->labels = src->labels;
  dst->n_labels = src->n_labels;
  dst->cap_labels = src->cap_labels;
  src->labels = NULL;
  src->n_labels = src->cap_labels = 0;
  stages_free(dst->stages, dst->n_stages);
  dst->stages = src->stages;
  dst->n_stages = src->n_stages;
  src->stages = NULL;
  src->n_stages = 0;
  pto_config_free(src);
}

const char *pto_config_error(const pto_config *c) {
  return c ? c->err.msg : "no config (NULL)";
}

pto_status pto_config_set_machine(pto_config *c, const pto_machine *m) {
  pto_status st;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (!m)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_set_machine: machine is NULL");
  st = pto__machine_check(m, &c->err, "machine");
  if (st != PTO_OK)
    return st;
  c->machine = *m;
  /* normalize: zero the name's tail, shared as 0/1 */
  memset(c->machine.name, 0, sizeof c->machine.name);
  memcpy(c->machine.name, m->name, strlen(m->name));
  c->machine.shared = !!m->shared;
  return PTO_OK;
}

const pto_machine *pto_config_machine(const pto_config *c) {
  return pto__config_machine(c);
}

/* ---- label overrides ----------------------------------------------------- */

/* strcmp order over (pointer, length) strings. */
static int label_cmp(const char *a, size_t alen, const char *b, size_t blen) {
  int r = memcmp(a, b, alen < blen ? alen : blen);
  if (r)
    return r;
  return alen < blen ? -1 : alen > blen;
}

/* Binary search: the index of name[0..len), or -1 with *at = where it would
 * be inserted. */
static long label_find(const pto_config *c, const char *name, size_t len,
                       uint32_t *at) {
  uint32_t lo = 0, hi = c->n_labels;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int r = label_cmp(name, len, c->labels[mid].name, c->labels[mid].len);
    if (!r)
      return (long)mid;
    if (r < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (at)
    *at = lo;
  return -1;
}

/* The override entry for name, created empty when missing; NULL on ENOMEM. */
config_label *pto__config_label_get(pto_config *c, const char *name) {
  size_t len = strlen(name);
  uint32_t at = 0;
  long i = label_find(c, name, len, &at);
  config_label *l;
  char *copy;
  if (i >= 0)
    return &c->labels[i];
  if (c->n_labels == c->cap_labels) {
    uint32_t cap = c->cap_labels ? c->cap_labels * 2 : 8;
    config_label *grown = realloc(c->labels, cap * sizeof *grown);
    if (!grown)
      return NULL;
    c->labels = grown;
    c->cap_labels = cap;
  }
  copy = dup_bytes(name, len);
  if (!copy)
    return NULL;
  l = &c->labels[at];
  memmove(l + 1, l, (c->n_labels - at) * sizeof *l);
  memset(l, 0, sizeof *l);
  l->name = copy;
  l->len = len;
  c->n_labels++;
  return l;
}

/* The next shorter candidate for a label: the part before its last '.'
 * within label[0..len), or 0 when there is none. */
static size_t label_parent(const char *label, size_t len) {
  while (len > 0)
    if (label[--len] == '.')
      return len;
  return 0;
}

int pto__config_label_knob(const pto_config *c, const char *label, pto_knob k,
                           int64_t *value) {
  if (!c || !label || !c->n_labels || (unsigned)k >= PTO_KNOB_COUNT)
    return 0;
  for (size_t len = strlen(label); len; len = label_parent(label, len)) {
    long i = label_find(c, label, len, NULL);
    if (i >= 0 && (c->labels[i].knob_set & (UINT32_C(1) << k))) {
      *value = c->labels[i].knob[k];
      return 1;
    }
  }
  return 0;
}

int64_t pto__config_knob(const pto_config *c, const char *label, pto_knob k) {
  if ((unsigned)k >= PTO_KNOB_COUNT)
    return 0;
  if (!c)
    return knobs[k].def;
  int64_t v;
  return pto__config_label_knob(c, label, k, &v) ? v : c->knob[k];
}

pto_status pto__knob_check(pto_knob k, int64_t value, char *msg, size_t size) {
  if ((unsigned)k >= PTO_KNOB_COUNT) {
    snprintf(msg, size, "knob %d is unknown", (int)k);
    return PTO_EINVAL;
  }
  if (value < knobs[k].min || value > knobs[k].max) {
    snprintf(msg, size,
             "knob '%s' = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]",
             knobs[k].name, value, knobs[k].min, knobs[k].max);
    return PTO_EINVAL;
  }
  return PTO_OK;
}

void pto__config_knobs(const pto_config *c, const char *label,
                       int64_t out[PTO_KNOB_COUNT]) {
  uint32_t done = 0;
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    out[k] = c ? c->knob[k] : knobs[k].def;
  if (!c || !label || !c->n_labels)
    return;
  for (size_t len = strlen(label); len; len = label_parent(label, len)) {
    long i = label_find(c, label, len, NULL);
    uint32_t fresh;
    if (i < 0)
      continue;
    fresh = c->labels[i].knob_set & ~done;
    for (int k = 0; k < PTO_KNOB_COUNT; k++)
      if (fresh & (UINT32_C(1) << k))
        out[k] = c->labels[i].knob[k];
    done |= fresh;
  }
}

int64_t pto_config_knob(const pto_config *c, const char *label, pto_knob k) {
  return pto__config_knob(c, label, k);
}

int pto__config_tile(const pto_config *c, const char *label,
                     pto_tile_shape *shape) {
  unsigned done = 0;
  if (!c || !label || !shape || !c->n_labels)
    return 0;
  for (size_t len = strlen(label); len && done != (TILE_VEC | TILE_CUBE);
       len = label_parent(label, len)) {
    long i = label_find(c, label, len, NULL);
    const config_label *l;
    unsigned fresh;
    if (i < 0)
      continue;
    l = &c->labels[i];
    fresh = l->tile_set & ~done;
    if (fresh & TILE_VEC) {
      shape->vec_rows = l->tile.vec_rows;
      shape->vec_cols = l->tile.vec_cols;
    }
    if (fresh & TILE_CUBE) {
      shape->cube_m = l->tile.cube_m;
      shape->cube_n = l->tile.cube_n;
      shape->cube_k = l->tile.cube_k;
    }
    done |= fresh;
  }
  return done != 0;
}

int pto_config_tile(const pto_config *c, const char *label,
                    pto_tile_shape *shape) {
  return pto__config_tile(c, label, shape);
}

/* ---- label overrides, for reports (core/config_use.c) ---------------------
 */

_Static_assert(PTO__SET_COUNT <= 32, "a label's settings are a 32-bit mask");

uint32_t pto__config_n_labels(const pto_config *c) {
  return c ? c->n_labels : 0;
}

const char *pto__config_label_name(const pto_config *c, uint32_t i) {
  return c->labels[i].name;
}

static uint32_t label_sets(const config_label *l) {
  return l->knob_set |
         (l->tile_set & TILE_VEC ? UINT32_C(1) << PTO__SET_VEC_TILE : 0) |
         (l->tile_set & TILE_CUBE ? UINT32_C(1) << PTO__SET_CUBE_TILE : 0);
}

uint32_t pto__config_label_sets(const pto_config *c, uint32_t i) {
  return label_sets(&c->labels[i]);
}

long pto__config_source(const pto_config *c, const char *label, int setting) {
  if (!c || !label)
    return -1;
  for (size_t len = strlen(label); len; len = label_parent(label, len)) {
    long i = label_find(c, label, len, NULL);
    if (i >= 0 && (label_sets(&c->labels[i]) & (UINT32_C(1) << setting)))
      return i;
  }
  return -1;
}

pto_status pto_config_set_knob(pto_config *c, const char *label, pto_knob k,
                               int64_t value) {
  config_label *l;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if ((unsigned)k >= PTO_KNOB_COUNT)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_set_knob: no knob number %d", (int)k);
  if (label && !label[0])
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_set_knob: empty label");
  if (label && !pto__knob_per_label(k))
    return pto__error_set(&c->err, PTO_ECONFIG,
                          "pto_config_set_knob: label '%s': %s", label,
                          pto__knob_not_per_label(k));
  if (value < knobs[k].min || value > knobs[k].max)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "%s%s%s = %" PRId64 " is out of range [%" PRId64
                          ", %" PRId64 "]",
                          label ? label : "", label ? ": " : "", knobs[k].name,
                          value, knobs[k].min, knobs[k].max);
  if (!label) {
    c->knob[k] = value;
    return PTO_OK;
  }
  l = pto__config_label_get(c, label);
  if (!l)
    return pto__error_set(&c->err, PTO_ENOMEM, "out of memory");
  l->knob[k] = value;
  l->knob_set |= UINT32_C(1) << k;
  return PTO_OK;
}

pto_status pto_config_set_tile(pto_config *c, const char *label,
                               const pto_tile_shape *shape) {
  config_label *l;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (!label || !label[0])
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_set_tile: a non-empty label is required");
  if (!shape)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_set_tile: shape is NULL");
  l = pto__config_label_get(c, label);
  if (!l)
    return pto__error_set(&c->err, PTO_ENOMEM, "out of memory");
  l->tile = *shape;
  l->tile_set = TILE_VEC | TILE_CUBE;
  return PTO_OK;
}

/* ---- stage barriers ------------------------------------------------------ */

/* The first entry of prefixes that cannot be a stage (NULL, empty, ending
 * in '.', or a repeat of an earlier one), with why in msg; -1 when all can.
 * Quadratic in n, which is a handful. */
long pto__stages_bad(const char *const *prefixes, uint32_t n, char *msg,
                     size_t size) {
  for (uint32_t i = 0; i < n; i++) {
    const char *p = prefixes[i];
    if (!p || !p[0]) {
      snprintf(msg, size, "empty label prefix");
      return (long)i;
    }
    if (p[strlen(p) - 1] == '.') {
      snprintf(msg, size, "label prefix \"%.64s\" ends in '.'", p);
      return (long)i;
    }
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(prefixes[j], p)) {
        snprintf(msg, size, "label prefix \"%.64s\" is already stage %u", p, j);
        return (long)i;
      }
  }
  return -1;
}

/* Replaces c's stages with copies of prefixes; ENOMEM leaves c unchanged. */
pto_status pto__stages_set(pto_config *c, const char *const *prefixes,
                           uint32_t n) {
  char **copy = n ? calloc(n, sizeof *copy) : NULL;
  if (n && !copy)
    return PTO_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    copy[i] = dup_bytes(prefixes[i], strlen(prefixes[i]));
    if (!copy[i]) {
      stages_free(copy, i);
      return PTO_ENOMEM;
    }
  }
  stages_free(c->stages, c->n_stages);
  c->stages = copy;
  c->n_stages = n;
  return PTO_OK;
}

pto_status pto_config_set_stage_barriers(pto_config *c,
                                         const char *const *prefixes,
                                         uint32_t n) {
  char msg[128];
  long bad;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (n && !prefixes)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_set_stage_barriers: %u prefixes but "
                          "the list is NULL",
                          n);
  bad = pto__stages_bad(prefixes, n, msg, sizeof msg);
  if (bad >= 0)
    return pto__error_set(&c->err, PTO_ECONFIG,
                          "pto_config_set_stage_barriers: stage %ld: %s", bad,
                          msg);
  if (pto__stages_set(c, prefixes, n))
    return pto__error_set(&c->err, PTO_ENOMEM,
                          "pto_config_set_stage_barriers: out of memory");
  return PTO_OK;
}

uint32_t pto_config_n_stage_barriers(const pto_config *c) {
  return c ? c->n_stages : 0;
}

const char *pto_config_stage_barrier(const pto_config *c, uint32_t i) {
  return c && i < c->n_stages ? c->stages[i] : NULL;
}

long pto__config_stage(const pto_config *c, const char *label) {
  long best = -1;
  size_t best_len = 0;
  if (!c || !label)
    return -1;
  for (uint32_t i = 0; i < c->n_stages; i++) {
    size_t n = strlen(c->stages[i]);
    if (n > best_len && !strncmp(label, c->stages[i], n) &&
        (label[n] == '\0' || label[n] == '.')) {
      best = (long)i;
      best_len = n;
    }
  }
  return best;
}

int pto__config_equal(const pto_config *a, const pto_config *b) {
  if (!a || !b)
    return a == b;
  if (!machine_equal(&a->machine, &b->machine))
    return 0;
  if (memcmp(a->knob, b->knob, sizeof a->knob) || a->n_labels != b->n_labels)
    return 0;
  if (a->n_stages != b->n_stages)
    return 0;
  for (uint32_t i = 0; i < a->n_stages; i++)
    if (strcmp(a->stages[i], b->stages[i]))
      return 0;
  for (uint32_t i = 0; i < a->n_labels; i++) {
    const config_label *x = &a->labels[i], *y = &b->labels[i];
    if (label_cmp(x->name, x->len, y->name, y->len) ||
        x->knob_set != y->knob_set || x->tile_set != y->tile_set)
      return 0;
    for (int k = 0; k < PTO_KNOB_COUNT; k++)
      if ((x->knob_set & (UINT32_C(1) << k)) && x->knob[k] != y->knob[k])
        return 0;
    if ((x->tile_set & TILE_VEC) && (x->tile.vec_rows != y->tile.vec_rows ||
                                     x->tile.vec_cols != y->tile.vec_cols))
      return 0;
    if ((x->tile_set & TILE_CUBE) &&
        (x->tile.cube_m != y->tile.cube_m || x->tile.cube_n != y->tile.cube_n ||
         x->tile.cube_k != y->tile.cube_k))
      return 0;
  }
  return 1;
}
