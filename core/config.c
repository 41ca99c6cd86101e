/* The config: a machine description, global knobs and per-label overrides,
 * set in code or merged from JSON. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

/* ---- knobs and memory levels --------------------------------------------- */

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

/* A knob whose range is [0, 1] is a flag: JSON may give it as a boolean. */
static int knob_is_flag(pto_knob k) {
  return knobs[k].min == 0 && knobs[k].max == 1;
}

/* policy orders the ready queues every task of a run shares, so one run
 * has one policy: it is a run-wide setting, not a per-label one. */
static int knob_per_label(pto_knob k) {
  return k != PTO_KNOB_POLICY;
}

static const char *knob_not_per_label(pto_knob k) {
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

static const struct {
  const char *name;
  pto_core_type core;
} levels[PTO_MEM_LEVEL_COUNT] = {
    [PTO_MEM_L1] = {"L1", PTO_CORE_CUBE},
    [PTO_MEM_L0A] = {"L0A", PTO_CORE_CUBE},
    [PTO_MEM_L0B] = {"L0B", PTO_CORE_CUBE},
    [PTO_MEM_L0C] = {"L0C", PTO_CORE_CUBE},
    [PTO_MEM_UB] = {"UB", PTO_CORE_VECTOR},
};

const char *pto_mem_level_name(pto_mem_level l) {
  return (unsigned)l < PTO_MEM_LEVEL_COUNT ? levels[l].name : "?";
}

pto_core_type pto_mem_level_core(pto_mem_level l) {
  return (unsigned)l < PTO_MEM_LEVEL_COUNT ? levels[l].core
                                           : PTO_CORE_TYPE_COUNT;
}

/* ---- machines ------------------------------------------------------------ */

/* A shared machine whose scratchpads are carved from a per-core L2. L0C
 * gets all of it: on a CPU the accumulator proper is the micro-kernel's
 * register block, and the C tile only has to be where each block's rows
 * can be fetched ahead (the kernel touches the next block's into L1), L2
 * or L3; the larger C tile halves the operand packing per flop (GEMM
 * 1024-2048: +3-5%, tiles 348-420 x 512 instead of 216-228 x 256). L0A
 * and L0B get half each, as BLIS sizes its A block for L2 and lets B
 * stream from L3 one L1-sized panel at a time: room for 256-deep k
 * slices of such tiles, which go through the registers' C block half as
 * often as 128-deep ones (GEMM +2%). */
static void machine_from_l2(pto_machine *m, const char *name, uint32_t workers,
                            size_t l2) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  m->workers[PTO_CORE_CUBE] = m->workers[PTO_CORE_VECTOR] = workers;
  m->shared = 1;
  m->mem[PTO_MEM_L1] = l2 / 2;
  m->mem[PTO_MEM_L0A] = l2 / 2;
  m->mem[PTO_MEM_L0B] = l2 / 2;
  m->mem[PTO_MEM_L0C] = l2;
  m->mem[PTO_MEM_UB] = l2 / 2;
}

pto_machine pto_machine_ascend(void) {
  pto_machine m;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "ascend");
  m.workers[PTO_CORE_CUBE] = 24;
  m.workers[PTO_CORE_VECTOR] = 48;
  m.shared = 0;
  m.mem[PTO_MEM_L1] = 512 * KIB;
  m.mem[PTO_MEM_L0A] = 64 * KIB;
  m.mem[PTO_MEM_L0B] = 64 * KIB;
  m.mem[PTO_MEM_L0C] = 128 * KIB;
  m.mem[PTO_MEM_UB] = 192 * KIB;
  return m;
}

/* The host topology is read once per process (hwloc takes milliseconds),
 * with the CPU set of the thread that first asks for it. */
static uv_once_t host_once = UV_ONCE_INIT;
static pto_status host_status = PTO_EIO;
static pto_machine host_machine;
static char host_msg[192] = "host machine not detected";

static void host_fail(const char *what) {
  char eb[128];
  const char *es = strerror_r(errno, eb, sizeof eb);
  host_status = PTO_EIO;
  snprintf(host_msg, sizeof host_msg, "host machine: %s: %s", what, es);
}

int pto__thread_cpuset(hwloc_topology_t topo, hwloc_cpuset_t set) {
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0 &&
      hwloc_bitmap_and(set, set, allowed) == 0 && !hwloc_bitmap_iszero(set))
    return 0;
  return hwloc_bitmap_copy(set, allowed);
}

/* Objects of a type with at least one PU in set. */
static int count_covering(hwloc_topology_t topo, hwloc_const_cpuset_t set,
                          hwloc_obj_type_t type) {
  hwloc_obj_t o = NULL;
  int n = 0;
  while ((o = hwloc_get_next_obj_covering_cpuset_by_type(topo, set, type, o)))
    n++;
  return n;
}

static void host_detect_hwloc(void) {
  hwloc_topology_t topo;
  hwloc_bitmap_t mine = NULL;
  hwloc_const_cpuset_t set;
  int workers, n_l2;
  size_t l2 = 0;

  if (hwloc_topology_init(&topo) < 0) {
    host_fail("hwloc_topology_init failed");
    return;
  }
  if (hwloc_topology_load(topo) < 0) {
    host_fail("hwloc_topology_load failed");
    goto done;
  }
  /* One worker per core this process may run on (a core counts when any of
   * its PUs is in the calling thread's CPU set; all allowed cores when that
   * set cannot be read), or per PU when hwloc finds no cores. */
  mine = hwloc_bitmap_alloc();
  set = mine && !pto__thread_cpuset(topo, mine)
            ? mine
            : hwloc_topology_get_allowed_cpuset(topo);
  workers = count_covering(topo, set, HWLOC_OBJ_CORE);
  if (workers <= 0)
    workers = count_covering(topo, set, HWLOC_OBJ_PU);
  if (workers <= 0) {
    host_status = PTO_EIO;
    snprintf(host_msg, sizeof host_msg,
             "host machine: hwloc found no cores or processing units");
    goto done;
  }
  /* Per-core L2: each data L2 divided among the cores under it; the
   * smallest share wins so every worker's scratchpads fit. */
  n_l2 = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L2CACHE);
  for (int i = 0; i < n_l2; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L2CACHE, i);
    int sharing;
    size_t share;
    if (!o || !o->attr || !o->attr->cache.size ||
        o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
      continue;
    sharing = o->cpuset ? hwloc_get_nbobjs_inside_cpuset_by_type(
                              topo, o->cpuset, HWLOC_OBJ_CORE)
                        : 1;
    if (sharing <= 0)
      sharing = 1;
    share = (size_t)(o->attr->cache.size / (unsigned)sharing);
    if (share && (!l2 || share < l2))
      l2 = share;
  }
  if (!l2)
    l2 = MIB;
  machine_from_l2(&host_machine, "host", (uint32_t)workers, l2);
  host_status = PTO_OK;
  host_msg[0] = '\0';
done:
  hwloc_bitmap_free(mine);
  hwloc_topology_destroy(topo);
}

/* What a config gets when it is not told otherwise: the host machine, or one
 * worker with 1 MiB of L2 when hwloc fails. */
static pto_machine host_effective;

static void host_detect(void) {
  host_detect_hwloc();
  if (host_status == PTO_OK)
    host_effective = host_machine;
  else
    machine_from_l2(&host_effective, "host", 1, MIB);
  /* PTO_THREADS=N: N workers instead of one per core; a bad value fails
   * pto_machine_host (so runtimes on the default machine and compiles
   * without a config refuse to start) and is otherwise ignored */
  char msg[160];
  int n = pto__env_threads(msg, sizeof msg);
  if (n < 0) {
    host_status = PTO_ECONFIG;
    snprintf(host_msg, sizeof host_msg, "%s", msg);
  } else if (n > 0) {
    host_machine.workers[PTO_CORE_CUBE] = (uint32_t)n;
    host_machine.workers[PTO_CORE_VECTOR] = (uint32_t)n;
    host_effective.workers[PTO_CORE_CUBE] = (uint32_t)n;
    host_effective.workers[PTO_CORE_VECTOR] = (uint32_t)n;
  }
}

const char *pto__host_error(void) {
  uv_once(&host_once, host_detect);
  return host_msg;
}

pto_status pto_machine_host(pto_machine *m) {
  if (!m)
    return pto__last_error(PTO_EINVAL, "pto_machine_host: m is NULL");
  uv_once(&host_once, host_detect);
  if (host_status != PTO_OK)
    return pto__last_error(host_status, "%s", host_msg);
  *m = host_machine;
  return PTO_OK;
}

static void host_or_fallback(pto_machine *m) {
  uv_once(&host_once, host_detect);
  *m = host_effective;
}

pto_status pto__machine_check(const pto_machine *m, pto_error *err,
                              const char *where) {
  static const char *const wname[2] = {"cube", "vector"};
  if (!memchr(m->name, '\0', sizeof m->name))
    return pto__error_set(err, PTO_ECONFIG,
                          "%s: name is too long (at most %zu characters)",
                          where, sizeof m->name - 1);
  if (!m->name[0])
    return pto__error_set(err, PTO_ECONFIG, "%s: name is empty", where);
  for (int t = 0; t < 2; t++)
    if (!m->workers[t])
      return pto__error_set(err, PTO_ECONFIG,
                            "%s: 0 %s workers (each core type needs at least "
                            "one worker)",
                            where, wname[t]);
  if (m->shared && m->workers[0] != m->workers[1])
    return pto__error_set(err, PTO_ECONFIG,
                          "%s: shared workers serve both core types, so "
                          "cube_workers (%" PRIu32 ") must equal "
                          "vector_workers (%" PRIu32 ")",
                          where, m->workers[0], m->workers[1]);
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    pto_core_type t = levels[l].core;
    if (!m->mem[l] && m->workers[t])
      return pto__error_set(err, PTO_ECONFIG,
                            "%s: %s capacity is 0, but %" PRIu32
                            " %s workers need it",
                            where, levels[l].name, m->workers[t], wname[t]);
  }
  return PTO_OK;
}

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
  host_or_fallback(&c->machine);
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
static void config_commit(pto_config *dst, pto_config *src) {
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

const pto_machine *pto__config_machine(const pto_config *c) {
  if (c)
    return &c->machine;
  uv_once(&host_once, host_detect);
  return &host_effective;
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
static config_label *label_get(pto_config *c, const char *name) {
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

/* ---- label overrides, for reports (core/config_use.c) --------------------- */

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
  if (label && !knob_per_label(k))
    return pto__error_set(&c->err, PTO_ECONFIG,
                          "pto_config_set_knob: label '%s': %s", label,
                          knob_not_per_label(k));
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
  l = label_get(c, label);
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
  l = label_get(c, label);
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
static long stages_bad(const char *const *prefixes, uint32_t n, char *msg,
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
static pto_status stages_set(pto_config *c, const char *const *prefixes,
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
  bad = stages_bad(prefixes, n, msg, sizeof msg);
  if (bad >= 0)
    return pto__error_set(&c->err, PTO_ECONFIG,
                          "pto_config_set_stage_barriers: stage %ld: %s", bad,
                          msg);
  if (stages_set(c, prefixes, n))
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

/* ---- JSON in ------------------------------------------------------------- */

typedef struct load_ctx {
  pto_error *err;
  const char *src; /* the file name, NULL for a string */
} load_ctx;

/* Records "src: path: message" and returns st. */
__attribute__((format(printf, 4, 5))) static pto_status
load_fail(const load_ctx *x, pto_status st, const char *path, const char *fmt,
          ...) {
  char msg[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->src)
    return pto__error_set(x->err, st, "%s: %s: %s", x->src, path, msg);
  return pto__error_set(x->err, st, "%s: %s", path, msg);
}

/* A short rendering of a JSON value for messages. */
static const char *describe(const json_t *v, char *buf, size_t n) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    snprintf(buf, n, "\"%.40s%s\"", json_string_value(v),
             json_string_length(v) > 40 ? "..." : "");
    return buf;
  case JSON_INTEGER:
    snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return buf;
  case JSON_REAL:
    snprintf(buf, n, "%g", json_real_value(v));
    return buf;
  case JSON_TRUE:
    return "true";
  case JSON_FALSE:
    return "false";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

/* "a, b, c" from the first n entries of list. */
static const char *join(char *buf, size_t size, const char *const *list,
                        size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < size; i++) {
    int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", list[i]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  return buf;
}

static int key_index(const char *key, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(key, list[i]))
      return (int)i;
  return -1;
}

static pto_status unknown_key(const load_ctx *x, const char *path,
                              const char *const *list, size_t n) {
  char expected[256];
  return load_fail(x, PTO_ECONFIG, path, "unknown key (expected %s)",
                   join(expected, sizeof expected, list, n));
}

static void path_join(char *buf, size_t size, const char *parent,
                      const char *key) {
  if (parent[0])
    snprintf(buf, size, "%s.%s", parent, key);
  else
    snprintf(buf, size, "%s", key);
}

/* Sizes: non-negative integers of bytes, or "<digits>[ ][unit]" with unit
 * B, K/KB/KiB, M/MB/MiB, G/GB/GiB (any case, all powers of 1024). */
static int parse_size_string(const char *s, size_t *out) {
  static const struct {
    const char *unit;
    size_t mult;
  } units[] = {{"", 1},      {"B", 1},    {"K", KIB},  {"KB", KIB},
               {"KiB", KIB}, {"M", MIB},  {"MB", MIB}, {"MiB", MIB},
               {"G", GIB},   {"GB", GIB}, {"GiB", GIB}};
  size_t n = 0;
  if (!isdigit((unsigned char)*s))
    return -1;
  for (; isdigit((unsigned char)*s); s++) {
    size_t d = (size_t)(*s - '0');
    if (n > (SIZE_MAX - d) / 10)
      return -1;
    n = n * 10 + d;
  }
  while (*s == ' ')
    s++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(s, units[i].unit))
      continue;
    if (n > SIZE_MAX / units[i].mult)
      return -1;
    *out = n * units[i].mult;
    return 0;
  }
  return -1;
}

static pto_status parse_size(const load_ctx *x, const char *path, json_t *v,
                             size_t *out) {
  char vb[64];
  if (json_is_integer(v) && json_integer_value(v) >= 0 &&
      (unsigned long long)json_integer_value(v) <= SIZE_MAX) {
    *out = (size_t)json_integer_value(v);
    return PTO_OK;
  }
  if (json_is_string(v) && !parse_size_string(json_string_value(v), out))
    return PTO_OK;
  return load_fail(x, PTO_ECONFIG, path,
                   "expected a size (bytes, or a string like \"192KiB\"), "
                   "got %s",
                   describe(v, vb, sizeof vb));
}

static pto_status parse_workers(const load_ctx *x, const char *path, json_t *v,
                                uint32_t *out) {
  char vb[64];
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return load_fail(x, PTO_ECONFIG, path,
                     "expected a non-negative integer, got %s",
                     describe(v, vb, sizeof vb));
  if (json_integer_value(v) > (json_int_t)UINT32_MAX)
    return load_fail(x, PTO_ECONFIG, path, "%s workers is too many",
                     describe(v, vb, sizeof vb));
  *out = (uint32_t)json_integer_value(v);
  return PTO_OK;
}

static const char *const machine_keys[] = {
    "name", "cube_workers", "vector_workers", "shared", "memory"};
enum { MK_NAME, MK_CUBE, MK_VECTOR, MK_SHARED, MK_MEMORY, MK_COUNT };

static pto_status parse_memory(const load_ctx *x, json_t *v, pto_machine *m) {
  const char *key;
  json_t *val;
  char vb[64], path[128];
  const char *names[PTO_MEM_LEVEL_COUNT];
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    names[l] = levels[l].name;
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, "machine.memory",
                     "expected an object of sizes, got %s",
                     describe(v, vb, sizeof vb));
  json_object_foreach(v, key, val) {
    int l = key_index(key, names, PTO_MEM_LEVEL_COUNT);
    pto_status st;
    path_join(path, sizeof path, "machine.memory", key);
    if (l < 0)
      return unknown_key(x, path, names, PTO_MEM_LEVEL_COUNT);
    st = parse_size(x, path, val, &m->mem[l]);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

/* "host", "ascend", or an object. An object with a name describes a new
 * machine (omitted fields are the host's); one without a name amends cur. */
static pto_status parse_machine(const load_ctx *x, json_t *v,
                                const pto_machine *cur, pto_machine *out) {
  char vb[64], path[128], where[PTO_ERROR_MSG];
  const char *key;
  json_t *val;
  int given_cube = 0, given_vector = 0;

  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "host")) {
      if (pto_machine_host(out) != PTO_OK)
        return load_fail(x, PTO_EIO, "machine", "%s", host_msg);
      return PTO_OK;
    }
    if (!strcmp(s, "ascend")) {
      *out = pto_machine_ascend();
      return PTO_OK;
    }
    return load_fail(x, PTO_ECONFIG, "machine",
                     "unknown machine %s (expected \"host\", \"ascend\" or an "
                     "object)",
                     describe(v, vb, sizeof vb));
  }
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, "machine",
                     "expected \"host\", \"ascend\" or an object, got %s",
                     describe(v, vb, sizeof vb));

  if (json_object_get(v, "name"))
    host_or_fallback(out);
  else
    *out = *cur;
  json_object_foreach(v, key, val) {
    pto_status st = PTO_OK;
    path_join(path, sizeof path, "machine", key);
    switch (key_index(key, machine_keys, MK_COUNT)) {
    case MK_NAME: {
      const char *s = json_string_value(val);
      if (!s || !s[0])
        return load_fail(x, PTO_ECONFIG, path,
                         "expected a non-empty string, got %s",
                         describe(val, vb, sizeof vb));
      if (strlen(s) >= sizeof out->name)
        return load_fail(x, PTO_ECONFIG, path,
                         "%s is too long (at most %zu characters)",
                         describe(val, vb, sizeof vb), sizeof out->name - 1);
      memset(out->name, 0, sizeof out->name);
      memcpy(out->name, s, strlen(s));
      break;
    }
    case MK_CUBE:
      st = parse_workers(x, path, val, &out->workers[PTO_CORE_CUBE]);
      given_cube = 1;
      break;
    case MK_VECTOR:
      st = parse_workers(x, path, val, &out->workers[PTO_CORE_VECTOR]);
      given_vector = 1;
      break;
    case MK_SHARED:
      if (!json_is_boolean(val))
        return load_fail(x, PTO_ECONFIG, path, "expected a boolean, got %s",
                         describe(val, vb, sizeof vb));
      out->shared = json_is_true(val);
      break;
    case MK_MEMORY:
      st = parse_memory(x, val, out);
      break;
    default:
      return unknown_key(x, path, machine_keys, MK_COUNT);
    }
    if (st != PTO_OK)
      return st;
  }
  /* Shared workers serve both types: one count given sets both. */
  if (out->shared && given_cube != given_vector) {
    if (given_cube)
      out->workers[PTO_CORE_VECTOR] = out->workers[PTO_CORE_CUBE];
    else
      out->workers[PTO_CORE_CUBE] = out->workers[PTO_CORE_VECTOR];
  }
  if (x->src)
    snprintf(where, sizeof where, "%s: machine", x->src);
  else
    snprintf(where, sizeof where, "machine");
  return pto__machine_check(out, x->err, where);
}

static pto_status parse_knob(const load_ctx *x, const char *path, pto_knob k,
                             json_t *v, int64_t *out) {
  const char *const *names = knob_value_names[k];
  char vb[64], expected[192];
  int64_t value;

  if (names) {
    size_t n = 0;
    int w;
    while (names[n])
      n++;
    join(expected, sizeof expected, names, n);
    w = (int)strlen(expected);
    snprintf(expected + w, sizeof expected - (size_t)w,
             " or %" PRId64 "..%" PRId64, knobs[k].min, knobs[k].max);
  } else if (knob_is_flag(k)) {
    snprintf(expected, sizeof expected, "a boolean or 0/1");
  } else {
    snprintf(expected, sizeof expected,
             "an integer in [%" PRId64 ", %" PRId64 "]", knobs[k].min,
             knobs[k].max);
  }

  if (json_is_integer(v)) {
    value = json_integer_value(v);
  } else if (json_is_boolean(v) && knob_is_flag(k)) {
    value = json_is_true(v);
  } else if (json_is_string(v) && names) {
    int i = 0;
    while (names[i] && strcmp(names[i], json_string_value(v)))
      i++;
    if (!names[i])
      return load_fail(x, PTO_ECONFIG, path, "unknown value %s (expected %s)",
                       describe(v, vb, sizeof vb), expected);
    value = i;
  } else {
    return load_fail(x, PTO_ECONFIG, path, "expected %s, got %s", expected,
                     describe(v, vb, sizeof vb));
  }
  if (value < knobs[k].min || value > knobs[k].max)
    return load_fail(x, PTO_EINVAL, path,
                     "%s = %" PRId64 " is out of range [%" PRId64 ", %" PRId64
                     "]",
                     knobs[k].name, value, knobs[k].min, knobs[k].max);
  *out = value;
  return PTO_OK;
}

static pto_status parse_knobs(const load_ctx *x, json_t *v, pto_config *c) {
  const char *key;
  json_t *val;
  char vb[64], path[128];
  const char *names[PTO_KNOB_COUNT];
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    names[k] = knobs[k].name;
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, "knobs", "expected an object, got %s",
                     describe(v, vb, sizeof vb));
  json_object_foreach(v, key, val) {
    int k = key_index(key, names, PTO_KNOB_COUNT);
    pto_status st;
    path_join(path, sizeof path, "knobs", key);
    if (k < 0)
      return unknown_key(x, path, names, PTO_KNOB_COUNT);
    st = parse_knob(x, path, (pto_knob)k, val, &c->knob[k]);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

/* [a, b] or [a, b, c] of uint32 into out[0..n). */
static pto_status parse_tile(const load_ctx *x, const char *path, json_t *v,
                             size_t n, const char *form, uint32_t *out) {
  char vb[64];
  if (!json_is_array(v) || json_array_size(v) != n)
    return load_fail(x, PTO_ECONFIG, path, "expected %s, got %s", form,
                     describe(v, vb, sizeof vb));
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_integer(e) || json_integer_value(e) < 0 ||
        json_integer_value(e) > (json_int_t)UINT32_MAX)
      return load_fail(x, PTO_ECONFIG, path,
                       "expected %s of non-negative integers, element %zu is "
                       "%s",
                       form, i, describe(e, vb, sizeof vb));
    out[i] = (uint32_t)json_integer_value(e);
  }
  return PTO_OK;
}

static const char *const label_keys[] = {
#define PTO__KNOB_KEY(name, str, def, lo, hi) str,
    PTO_KNOB_MAP(PTO__KNOB_KEY)
#undef PTO__KNOB_KEY
        "vec_tile",
    "cube_tile"};
enum {
  LK_VEC = PTO__SET_VEC_TILE,
  LK_CUBE = PTO__SET_CUBE_TILE,
  LK_COUNT = PTO__SET_COUNT
};
_Static_assert(sizeof label_keys / sizeof label_keys[0] == LK_COUNT,
               "label_keys lists a label's settings in PTO__SET_* order");

const char *pto__config_setting_name(int setting) {
  return setting >= 0 && setting < LK_COUNT ? label_keys[setting] : "?";
}

static pto_status parse_label(const load_ctx *x, pto_config *c,
                              const char *label, json_t *v) {
  const char *key;
  json_t *val;
  char vb[64], lpath[160], path[192];
  path_join(lpath, sizeof lpath, "labels", label);
  if (!label[0])
    return load_fail(x, PTO_ECONFIG, "labels", "empty label");
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, lpath, "expected an object, got %s",
                     describe(v, vb, sizeof vb));
  json_object_foreach(v, key, val) {
    int i = key_index(key, label_keys, LK_COUNT);
    pto_status st;
    config_label *l;
    int64_t value = 0;
    uint32_t t[3] = {0, 0, 0};
    path_join(path, sizeof path, lpath, key);
    if (i < 0) { /* list what a label may set */
      const char *allowed[LK_COUNT];
      size_t n = 0;
      for (int j = 0; j < LK_COUNT; j++)
        if (j >= PTO_KNOB_COUNT || knob_per_label((pto_knob)j))
          allowed[n++] = label_keys[j];
      return unknown_key(x, path, allowed, n);
    }
    if (i < PTO_KNOB_COUNT && !knob_per_label((pto_knob)i))
      return load_fail(x, PTO_ECONFIG, path, "%s",
                       knob_not_per_label((pto_knob)i));
    if (i < PTO_KNOB_COUNT)
      st = parse_knob(x, path, (pto_knob)i, val, &value);
    else if (i == LK_VEC)
      st = parse_tile(x, path, val, 2, "[rows, cols]", t);
    else
      st = parse_tile(x, path, val, 3, "[m, n, k]", t);
    if (st != PTO_OK)
      return st;
    l = label_get(c, label);
    if (!l)
      return load_fail(x, PTO_ENOMEM, path, "out of memory");
    if (i < PTO_KNOB_COUNT) {
      l->knob[i] = value;
      l->knob_set |= UINT32_C(1) << i;
    } else if (i == LK_VEC) {
      l->tile.vec_rows = t[0];
      l->tile.vec_cols = t[1];
      l->tile_set |= TILE_VEC;
    } else {
      l->tile.cube_m = t[0];
      l->tile.cube_n = t[1];
      l->tile.cube_k = t[2];
      l->tile_set |= TILE_CUBE;
    }
  }
  return PTO_OK;
}

/* "stage_barriers": an array of label prefixes; it replaces the list. */
static pto_status parse_stages(const load_ctx *x, pto_config *c, json_t *v) {
  char vb[64], path[48], msg[128];
  size_t n = json_is_array(v) ? json_array_size(v) : 0;
  const char **list;
  pto_status st = PTO_OK;
  long bad;
  if (!json_is_array(v))
    return load_fail(x, PTO_ECONFIG, "stage_barriers",
                     "expected an array of label prefixes, got %s",
                     describe(v, vb, sizeof vb));
  if (n > UINT32_MAX / 2)
    return load_fail(x, PTO_ECONFIG, "stage_barriers", "too many stages");
  list = calloc(n + 1, sizeof *list);
  if (!list)
    return load_fail(x, PTO_ENOMEM, "stage_barriers", "out of memory");
  for (size_t i = 0; i < n && st == PTO_OK; i++) {
    json_t *e = json_array_get(v, i);
    snprintf(path, sizeof path, "stage_barriers[%zu]", i);
    if (!json_is_string(e))
      st = load_fail(x, PTO_ECONFIG, path,
                     "expected a label prefix (a string), got %s",
                     describe(e, vb, sizeof vb));
    else
      list[i] = json_string_value(e);
  }
  if (st == PTO_OK &&
      (bad = stages_bad(list, (uint32_t)n, msg, sizeof msg)) >= 0) {
    snprintf(path, sizeof path, "stage_barriers[%ld]", bad);
    st = load_fail(x, PTO_ECONFIG, path, "%s", msg);
  }
  if (st == PTO_OK && stages_set(c, list, (uint32_t)n))
    st = load_fail(x, PTO_ENOMEM, "stage_barriers", "out of memory");
  free(list);
  return st;
}

static const char *const root_keys[] = {"machine", "knobs", "labels",
                                        "stage_barriers"};

static pto_status apply_json(const load_ctx *x, pto_config *c, json_t *root) {
  const char *key, *lkey;
  json_t *val, *lval;
  char vb[64];
  if (!json_is_object(root))
    return load_fail(x, PTO_ECONFIG, "top level", "expected an object, got %s",
                     describe(root, vb, sizeof vb));
  json_object_foreach(root, key, val) {
    pto_status st = PTO_OK;
    switch (key_index(key, root_keys, 4)) {
    case 0: {
      pto_machine m;
      st = parse_machine(x, val, &c->machine, &m);
      if (st == PTO_OK)
        c->machine = m;
      break;
    }
    case 1:
      st = parse_knobs(x, val, c);
      break;
    case 2:
      if (!json_is_object(val))
        return load_fail(x, PTO_ECONFIG, "labels",
                         "expected an object of labels, got %s",
                         describe(val, vb, sizeof vb));
      json_object_foreach(val, lkey, lval) {
        st = parse_label(x, c, lkey, lval);
        if (st != PTO_OK)
          break;
      }
      break;
    case 3:
      st = parse_stages(x, c, val);
      break;
    default:
      return unknown_key(x, key, root_keys, 4);
    }
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

/* Applies root to a copy of c, then commits: c is unchanged on error. */
static pto_status config_apply(pto_config *c, json_t *root, const char *src) {
  load_ctx x = {&c->err, src};
  pto_config *tmp = pto_config_clone(c);
  pto_status st;
  if (!tmp)
    return pto__error_set(&c->err, PTO_ENOMEM, "out of memory");
  st = apply_json(&x, tmp, root);
  if (st != PTO_OK) {
    pto_config_free(tmp);
    return st;
  }
  config_commit(c, tmp);
  return PTO_OK;
}

/* Duplicate keys are errors too: a repeated knob is most likely a typo. */
#define LOAD_FLAGS JSON_REJECT_DUPLICATES

pto_status pto_config_load_string(pto_config *c, const char *json) {
  json_error_t je;
  json_t *root;
  pto_status st;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (!json)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_load_string: json is NULL");
  root = json_loads(json, LOAD_FLAGS, &je);
  if (!root)
    return pto__error_set(&c->err, PTO_ECONFIG,
                          "<string>:%d:%d: syntax error: %s", je.line,
                          je.column, je.text);
  st = config_apply(c, root, NULL);
  json_decref(root);
  return st;
}

pto_status pto_config_load_file(pto_config *c, const char *path) {
  json_error_t je;
  json_t *root;
  FILE *f;
  pto_status st;
  char eb[128];
  int read_err;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (!path)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_load_file: path is NULL");
  f = fopen(path, "rb");
  if (!f)
    return pto__error_set(&c->err, PTO_EIO, "%s: cannot open: %s", path,
                          strerror_r(errno, eb, sizeof eb));
  errno = 0;
  root = json_loadf(f, LOAD_FLAGS, &je);
  read_err = ferror(f) ? (errno ? errno : EIO) : 0;
  fclose(f);
  if (read_err) {
    json_decref(root);
    return pto__error_set(&c->err, PTO_EIO, "%s: cannot read: %s", path,
                          strerror_r(read_err, eb, sizeof eb));
  }
  if (!root)
    return pto__error_set(&c->err, PTO_ECONFIG, "%s:%d:%d: syntax error: %s",
                          path, je.line, je.column, je.text);
  st = config_apply(c, root, path);
  json_decref(root);
  return st;
}

/* ---- JSON out ------------------------------------------------------------ */

/* Bytes as "512KiB" when a whole number of KiB/MiB/GiB, else an integer. */
static json_t *size_json(size_t n) {
  static const struct {
    size_t mult;
    const char *unit;
  } units[] = {{GIB, "GiB"}, {MIB, "MiB"}, {KIB, "KiB"}};
  char buf[48];
  for (size_t i = 0; n && i < sizeof units / sizeof units[0]; i++)
    if (n % units[i].mult == 0) {
      snprintf(buf, sizeof buf, "%zu%s", n / units[i].mult, units[i].unit);
      return json_string(buf);
    }
  if (n > (size_t)LLONG_MAX) { /* beyond json_int_t */
    snprintf(buf, sizeof buf, "%zu", n);
    return json_string(buf);
  }
  return json_integer((json_int_t)n);
}

static json_t *knob_json(pto_knob k, int64_t v) {
  const char *const *names = knob_value_names[k];
  if (names) {
    for (int64_t i = 0; names[i]; i++)
      if (i == v)
        return json_string(names[i]);
  }
  if (knob_is_flag(k))
    return json_boolean(v);
  return json_integer((json_int_t)v);
}

static json_t *machine_json(const pto_machine *m) {
  json_t *o = json_object(), *mem = json_object();
  int bad = !o || !mem;
  bad |= json_object_set_new(o, "name", json_string(m->name));
  bad |= json_object_set_new(o, "cube_workers",
                             json_integer(m->workers[PTO_CORE_CUBE]));
  bad |= json_object_set_new(o, "vector_workers",
                             json_integer(m->workers[PTO_CORE_VECTOR]));
  bad |= json_object_set_new(o, "shared", json_boolean(m->shared));
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    bad |= json_object_set_new(mem, levels[l].name, size_json(m->mem[l]));
  bad |= json_object_set_new(o, "memory", mem);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *tile_json(const uint32_t *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_integer(v[i]))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

static json_t *label_json(const config_label *l) {
  json_t *o = json_object();
  int bad = !o;
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    if (l->knob_set & (UINT32_C(1) << k))
      bad |= json_object_set_new(o, knobs[k].name,
                                 knob_json((pto_knob)k, l->knob[k]));
  if (l->tile_set & TILE_VEC) {
    uint32_t v[2] = {l->tile.vec_rows, l->tile.vec_cols};
    bad |= json_object_set_new(o, "vec_tile", tile_json(v, 2));
  }
  if (l->tile_set & TILE_CUBE) {
    uint32_t v[3] = {l->tile.cube_m, l->tile.cube_n, l->tile.cube_k};
    bad |= json_object_set_new(o, "cube_tile", tile_json(v, 3));
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

char *pto_config_to_json(const pto_config *c) {
  json_t *root, *kn, *labels;
  char *out = NULL;
  size_t n;
  int bad;
  if (!c)
    return NULL;
  root = json_object();
  kn = json_object();
  labels = json_object();
  bad = !root || !kn || !labels;
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    bad |= json_object_set_new(kn, knobs[k].name,
                               knob_json((pto_knob)k, c->knob[k]));
  for (uint32_t i = 0; i < c->n_labels; i++)
    bad |= json_object_set_new(labels, c->labels[i].name,
                               label_json(&c->labels[i]));
  bad |= json_object_set_new(root, "machine", machine_json(&c->machine));
  bad |= json_object_set_new(root, "knobs", kn);
  bad |= json_object_set_new(root, "labels", labels);
  if (c->n_stages) { /* only when set: configs without stages read as before */
    json_t *st = json_array();
    bad |= !st;
    for (uint32_t i = 0; st && i < c->n_stages; i++)
      bad |= json_array_append_new(st, json_string(c->stages[i]));
    bad |= json_object_set_new(root, "stage_barriers", st);
  }
  if (bad)
    goto done;
  n = json_dumpb(root, NULL, 0, JSON_INDENT(2));
  if (!n)
    goto done;
  out = malloc(n + 1);
  if (!out)
    goto done;
  if (json_dumpb(root, out, n, JSON_INDENT(2)) != n) {
    free(out);
    out = NULL;
    goto done;
  }
  out[n] = '\0';
done:
  json_decref(root);
  return out;
}
