/* pto/config.h: the machine description and the tuning knobs a compile uses,
 * set in code or loaded from a JSON file. */
#ifndef PTO_CONFIG_H
#define PTO_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "pto/export.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* Local-memory levels. Cube cores own L1, L0A (left operand), L0B (right
 * operand) and L0C (accumulator); vector cores own UB. On a CPU they are
 * per-worker scratchpads sized to the caches. */
typedef enum pto_mem_level {
  PTO_MEM_L1,
  PTO_MEM_L0A,
  PTO_MEM_L0B,
  PTO_MEM_L0C,
  PTO_MEM_UB,
  PTO_MEM_LEVEL_COUNT
} pto_mem_level;

/* "L1", ... "UB"; "?" when out of range. */
PTO_API const char *pto_mem_level_name(pto_mem_level l);
/* The core type owning a level; PTO_CORE_TYPE_COUNT when out of range. */
PTO_API pto_core_type pto_mem_level_core(pto_mem_level l);

typedef struct pto_machine {
  char name[32];
  /* Workers serving each core type (index PTO_CORE_CUBE, PTO_CORE_VECTOR).
   * When shared, the same workers serve both types and both counts equal the
   * number of workers. */
  uint32_t workers[2];
  int shared;
  size_t mem[PTO_MEM_LEVEL_COUNT]; /* capacity in bytes per level */
  /* The panels its cube packs matmul operands in: rows of A, columns of B
   * (an Ascend cube's fractal is 16 x 16). {0, 0}: the host's instruction
   * table's (pto_matmul_panel). A compile plans local memory with these;
   * an executable planned with other panels than this host's table packs
   * is refused when run (it exists to be simulated). */
  uint32_t panel[2];
} pto_machine;

/* The machine this process runs on, from hwloc: one worker per core this
 * process may run on (the calling thread's CPU binding, e.g. taskset, within
 * the allowed cpuset, e.g. a cgroup's), serving both core types,
 * scratchpads sized from the per-core L2 (L1 = UB = L0A = L0B = L2/2,
 * L0C = L2: the C tile streams through L2 and L3 a register block at a
 * time; an L2 under 1 MiB, or none found, counts as 1 MiB). Read once per
 * process, on the first call, and cached. PTO_THREADS=N in the environment
 * gives it N workers instead (1..1024); a bad value makes this
 * PTO_ECONFIG. PTO_EIO when hwloc fails. */
PTO_API pto_status pto_machine_host(pto_machine *m);
/* An Ascend-like NPU: 24 cube + 48 vector cores, L1 512 KiB, L0A/L0B
 * 64 KiB, L0C 128 KiB, UB 192 KiB. For planning hardware that is not here.
 * Its panels are this host's ({0, 0}), so its executables also run here,
 * where tests check them; the Ascend profile that pto-bench --simulate
 * ascend reads (tools/configs/ascend-profile.json) plans with the cube's
 * 16 x 16 instead. */
PTO_API pto_machine pto_machine_ascend(void);

/* Tuning knobs: X(NAME, "json_name", default, min, max). Grows at the end.
 *   nbuffer   merge k isomorphic vector subgraphs into one task; 0 = auto
 *             (about one task per vector worker when tasks are small)
 *   l1_reuse  merge up to k cube tasks that load the same operand, so one
 *             local copy serves several matmuls
 *   policy    scheduling policy: 0 fifo, 1 critical-path, 2 locality
 *   fuse      1: fuse producer tiles into consumers whose tiles match */
#define PTO_KNOB_MAP(X)                                                        \
  X(NBUFFER, "nbuffer", 0, 0, 65536)                                           \
  X(L1_REUSE, "l1_reuse", 1, 1, 65536)                                         \
  X(POLICY, "policy", 1, 0, 2)                                                 \
  X(FUSE, "fuse", 1, 0, 1)

typedef enum pto_knob {
#define PTO__KNOB_ENUM(name, str, def, lo, hi) PTO_KNOB_##name,
  PTO_KNOB_MAP(PTO__KNOB_ENUM)
#undef PTO__KNOB_ENUM
  PTO_KNOB_COUNT
} pto_knob;

PTO_API const char *pto_knob_name(pto_knob k); /* "?" when out of range */

typedef struct pto_config pto_config;

/* A config with the host machine (one worker with 1 MiB of L2 when hwloc
 * fails) and default knobs; NULL on ENOMEM. */
PTO_API pto_config *pto_config_new(void);
PTO_API void pto_config_free(pto_config *c); /* NULL is a no-op */
PTO_API pto_config *pto_config_clone(const pto_config *c);

/* Merge settings from JSON. The schema (every key optional, unknown or
 * duplicate keys are errors):
 *   {"machine": "host" | "ascend" | {"name": "...", "cube_workers": N,
 *                "vector_workers": N, "shared": bool,
 *                "memory": {"L1": size, "L0A": size, "L0B": size,
 *                           "L0C": size, "UB": size}},
 *    "knobs": {"nbuffer": N, "l1_reuse": N,
 *              "policy": "fifo" | "critical-path" | "locality" | 0..2,
 *              "fuse": bool | 0 | 1},
 *    "labels": {"<label>": {<any knob but policy>,
 *                           "vec_tile": [rows, cols],
 *                           "cube_tile": [m, n, k]}},
 *    "stage_barriers": ["<label prefix>", ...]}
 * A size is a non-negative integer of bytes or a string like "192KiB",
 * "1MiB", "512K" (K, KB, KiB = 1024; likewise M and G). A machine object with
 * a "name" describes a new machine whose omitted fields are the host's; one
 * without a name amends the config's current machine. When shared, giving
 * one worker count sets both. Labels merge into the existing overrides;
 * stage_barriers replaces the list (see pto_config_set_stage_barriers).
 * On error the config is unchanged and pto_config_error() names the file,
 * line and column (syntax) or the key path (meaning), e.g. "tune.json:
 * machine.memory.UB: expected a size, got \"abc\"". Status: PTO_EIO when the
 * file cannot be read, PTO_EINVAL for a knob value out of range, PTO_ECONFIG
 * for everything else. */
PTO_API pto_status pto_config_load_file(pto_config *c, const char *path);
PTO_API pto_status pto_config_load_string(pto_config *c, const char *json);
/* The message of the last failed call on c ("" after a success). */
PTO_API const char *pto_config_error(const pto_config *c);

/* PTO_ECONFIG unless the name has 1..31 characters, every core type has a
 * worker (equal counts when shared) and every level has a capacity. */
PTO_API pto_status pto_config_set_machine(pto_config *c, const pto_machine *m);
PTO_API const pto_machine *pto_config_machine(const pto_config *c);

/* label NULL sets the global value; otherwise the value for ops whose label
 * is label or starts with label + "." (the longest matching label that sets
 * the knob wins, else the global value). PTO_EINVAL for a value outside the
 * knob's range; PTO_ECONFIG for policy with a label (one run has one
 * policy: it is global only). A label setting no op of a compiled program
 * reads is reported by pto_executable_warnings. The getter gives the
 * default for a NULL config and 0 for an unknown knob. */
PTO_API pto_status pto_config_set_knob(pto_config *c, const char *label,
                                       pto_knob k, int64_t value);
PTO_API int64_t pto_config_knob(const pto_config *c, const char *label,
                                pto_knob k);
/* Tile shape override for ops under label (same matching); set overrides
 * both the vector and the cube part. JSON may set one part only, so get
 * resolves the parts separately: each part an override applies to is written
 * to *shape, other parts keep their value (pass the shape in force). Returns
 * 1 when an override applied, else 0. */
PTO_API pto_status pto_config_set_tile(pto_config *c, const char *label,
                                       const pto_tile_shape *shape);
PTO_API int pto_config_tile(const pto_config *c, const char *label,
                            pto_tile_shape *shape);

/* Stage barriers: an ordered list of label prefixes, each naming a stage
 * of the program (a prefix covers its label and every label under it, as
 * label settings do: "indexer" covers "indexer.qk", not "indexer_prolog";
 * the longest matching prefix wins). A compile makes every task of stage k
 * wait for every task of the closest earlier stage that has tasks: each
 * task of stage k with no producer in stage k waits for each task of that
 * stage with no consumer in it, directly when that is a handful of edges,
 * else through one empty join task (label "stage_barrier", program
 * "barrier"), so the edges grow with the tasks, never with their product.
 * Tasks whose label matches no prefix are unaffected. Ops of two stages
 * (or of a stage and none) never fuse into one subgraph, so each task is
 * in one stage, as each kernel of an SPMD framework is. This runs the same
 * tasks as SPMD-style phases, to measure what MPMD overlap buys. n = 0
 * clears the list. PTO_ECONFIG for a NULL or empty prefix, one ending in
 * '.', or a repeated one; a stage that feeds an earlier one fails the
 * compile (PTO_ECONFIG, naming both tasks). */
PTO_API pto_status pto_config_set_stage_barriers(pto_config *c,
                                                 const char *const *prefixes,
                                                 uint32_t n);
/* The number of stages (0 for NULL) and stage i's prefix (NULL when out of
 * range). */
PTO_API uint32_t pto_config_n_stage_barriers(const pto_config *c);
PTO_API const char *pto_config_stage_barrier(const pto_config *c, uint32_t i);

/* The config as JSON (the same schema the loaders read); free() the result.
 * NULL on ENOMEM or when a name or label is not valid UTF-8. */
PTO_API char *pto_config_to_json(const pto_config *c);

PTO_EXTERN_C_END

#endif /* PTO_CONFIG_H */
