/* core/config.h (internal): config lookups for the compiler and the tests. */
#ifndef PTO_CORE_CONFIG_H
#define PTO_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "pto/config.h"

/* Knob k for ops labelled `label` (NULL: the global value): the longest
 * override label that is `label` or a '.'-separated prefix of it and sets k,
 * else the global value. A NULL config gives the knob's default. Costs one
 * binary search per '.'-component of label; no allocation. */
int64_t pto__config_knob(const pto_config *c, const char *label, pto_knob k);

/* Whether an override label matching `label` sets knob k (the longest
 * wins): then *value gets it. The global value is not consulted. */
int pto__config_label_knob(const pto_config *c, const char *label, pto_knob k,
                           int64_t *value);

/* Knob k's range; 0, or PTO_EINVAL (with a message naming the knob, the
 * value and the range in msg) when value is outside it or k is unknown. */
pto_status pto__knob_check(pto_knob k, int64_t value, char *msg, size_t size);

/* All knobs for `label` at once (same rules as pto__config_knob). */
void pto__config_knobs(const pto_config *c, const char *label,
                       int64_t out[PTO_KNOB_COUNT]);

/* Tile overrides for `label`: the vector part {vec_rows, vec_cols} and the
 * cube part {cube_m, cube_n, k} are resolved separately, each from the
 * longest matching label that sets it; parts no label sets keep the values
 * *shape holds on entry. Returns 1 when any part was overridden, else 0. */
int pto__config_tile(const pto_config *c, const char *label,
                     pto_tile_shape *shape);

/* What a label override may set: knob k (bit k), the vector part of the
 * tile shape and the cube part. */
enum {
  PTO__SET_VEC_TILE = PTO_KNOB_COUNT,
  PTO__SET_CUBE_TILE,
  PTO__SET_COUNT
};
/* "nbuffer", ... "vec_tile", "cube_tile" (as the JSON spells them). */
const char *pto__config_setting_name(int setting);

/* The label overrides, sorted by name: how many, entry i's name and what it
 * sets (bit s for setting s). */
uint32_t pto__config_n_labels(const pto_config *c);
const char *pto__config_label_name(const pto_config *c, uint32_t i);
uint32_t pto__config_label_sets(const pto_config *c, uint32_t i);
/* The entry that gives ops labelled `label` setting s (the longest matching
 * label that sets it), or -1 when none does. */
long pto__config_source(const pto_config *c, const char *label, int setting);

/* Lines (joined by '\n', malloc'ed; NULL with PTO_OK when there are none)
 * naming every setting of c's label overrides that no op of p reads: a
 * label no op is under (a typo), a setting for ops the label has none of
 * (cube_tile where it has no matmul), one every op under the label takes
 * from a longer label. PTO_ENOMEM. */
struct pto_program;
pto_status pto__config_unused(const pto_config *c, const struct pto_program *p,
                              char **lines);

/* The stage barrier index of ops labelled `label`: the longest stage prefix
 * that is label or a '.'-separated prefix of it; -1 when none is (or c is
 * NULL). */
long pto__config_stage(const pto_config *c, const char *label);

/* The machine (the host's for a NULL config). */
const pto_machine *pto__config_machine(const pto_config *c);

/* The default, min and max of knob k (k must be valid). */
int64_t pto__knob_default(pto_knob k);
int64_t pto__knob_min(pto_knob k);
int64_t pto__knob_max(pto_knob k);

/* Checks a machine description: a name of 1..31 characters, at least one
 * worker per core type (equal counts when shared), and a non-zero capacity
 * for every level of a core type that has workers. On failure records a
 * PTO_ECONFIG message prefixed with `where` (e.g. "machine") in *err. */
pto_status pto__machine_check(const pto_machine *m, pto_error *err,
                              const char *where);

/* The CPUs the calling thread may run on: its binding (taskset) within the
 * allowed cpuset (cgroup cpusets), or the allowed cpuset when hwloc cannot
 * read the binding or they do not meet. -1 when set cannot be filled. The
 * host machine counts the cores of this set, and the runtime pins its
 * workers within it. (hwloc_topology_t and hwloc_cpuset_t, spelled so this
 * header needs no hwloc.h.) */
struct hwloc_topology;
struct hwloc_bitmap_s;
int pto__thread_cpuset(struct hwloc_topology *topo, struct hwloc_bitmap_s *set);

/* Why pto_machine_host fails ("" when it does not), e.g. a bad
 * PTO_THREADS. */
const char *pto__host_error(void);

/* ---- environment (core/env.c) --------------------------------------------- */

/* PTO_THREADS: 0 when unset, the worker count N (1..PTO_THREADS_MAX) of the
 * default host machine, or -1 with msg saying what is wrong. */
#define PTO_THREADS_MAX 1024
int pto__env_threads(char *msg, size_t size);

/* The config of a compile given none: the defaults, with the JSON file
 * PTO_CONFIG names merged in when it is set. NULL with err set when
 * PTO_CONFIG or PTO_THREADS is bad ("PTO_CONFIG=tune.json: knobs.nbuffer:
 * ..."), or on ENOMEM. */
pto_config *pto__config_from_env(pto_error *err);

/* 1 when a and b hold the same machine, knobs and label overrides (the
 * recorded error is not compared). */
int pto__config_equal(const pto_config *a, const pto_config *b);

#endif /* PTO_CORE_CONFIG_H */
