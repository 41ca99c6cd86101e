/* Machines: the built-in Ascend description, the host machine detected
 * once per process through hwloc (with its one-worker fallback and
 * PTO_THREADS), the names and core types of the memory levels, and the
 * check every machine description passes. The config that holds one is
 * core/config.c. */
#include "core/config_impl.h"

#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

/* ---- memory levels ------------------------------------------------------- */

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
  /* at least 1 MiB (none found: 1 MiB too). With Zen 3's 512 KiB the
   * tiles were too small for what they pack: GEMM 1024 and 2048, PTO /
   * OpenBLAS in the same runs, 0.79-0.91 with 512 KiB of scratchpads,
   * 0.86-0.97 with 1 MiB, 0.89-0.99 with 2 MiB. A C tile, or an operand
   * panel read one block at a time, does not have to fit the L2. A 2 MiB
   * floor, tried again on Zen 3 with today's kernels (tiles in turns in one
   * process): at 2048 it picks 684 x 688 x 256, +3% on one thread but
   * 0.95-1.00 on two (the A panel spills the L2); 516 x 688 x 240, which
   * it does not pick, +2-4%; at 1024 within 1%; the indexer's Q^T grows to
   * 28 queries, no faster. Kept at 1 MiB */
  if (l2 < MIB)
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

void pto__host_or_fallback(pto_machine *m) {
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

/* A config's machine or, for a NULL config, the host's effective machine
 * itself (pto__host_or_fallback's copy source), so it lives with it. */
const pto_machine *pto__config_machine(const pto_config *c) {
  if (c)
    return &c->machine;
  uv_once(&host_once, host_detect);
  return &host_effective;
}
