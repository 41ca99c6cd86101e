/* core/exe.h (internal): the executable, a plain data structure. The
 * partitioner produces it and the scheduler runs it; neither includes the
 * other. Programs are flat instruction lists over local tiles (fixed offsets
 * in per-level scratchpads) and global slots (base + per-task offset). */
#ifndef PTO_CORE_EXE_H
#define PTO_CORE_EXE_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/isa.h"
#include "core/tilegraph.h"
#include "pto/config.h"
#include "pto/executable.h"

typedef struct pto_ptile { /* a local tile of a program */
  pto_dtype dtype;
  uint8_t level; /* pto_mem_level */
  /* the dynamic dims (index + 1; 0: static) clipping its valid rows and
   * cols at run time; the offsets are each task instance's (pto_task.clip) */
  uint8_t cr, cc;
  uint32_t rows, cols, stride, vrows, vcols;
  uint64_t offset; /* bytes into the level's scratchpad */
} pto_ptile;

typedef struct pto_pslot { /* a global operand window of a program */
  pto_dtype dtype;
  uint8_t cr, cc, cb[2]; /* as pto_ptile's, and its two batch coordinates */
  uint8_t written;       /* a store's (pto__pinst_stores): what it writes */
  int64_t rows, cols, rs, cs;
} pto_pslot;

typedef struct pto_pinst {
  int32_t op;
  pto_tileop_fn fn; /* resolved entry point */
  uint8_t n_src, n_dst;
  uint16_t src[PTO_MAX_SRC], dst[PTO_MAX_DST]; /* program tile indices */
  int32_t slot;                                /* global slot, or -1 */
  int32_t slot2; /* the slot a PTO_IF_STORE2 instruction writes, or -1 */
  double s;
  pto_sterm st[2]; /* s moves by these with the run's extents */
  pto_sterm it;    /* and imm[1] by this one */
  int32_t imm[2];
  uint32_t flags;
} pto_pinst;

/* The global slots of pi, i = 0 (its window) and 1 (the second view of a
 * PTO_IF_STORE2 instruction), or -1; and whether pi writes slot i. */
static inline int32_t pto__pinst_slot(const pto_pinst *pi, int i) {
  return i ? pi->slot2 : pi->slot;
}
static inline int pto__pinst_stores(const pto_pinst *pi, int i) {
  return i || pto__insn_stores(pi->op);
}

typedef struct pto_cprog {
  pto_core_type core;
  uint32_t n_insts, n_tiles, n_slots;
  pto_pinst *insts;
  pto_ptile *tiles;
  pto_pslot *slots;
  uint64_t mem[PTO_MEM_LEVEL_COUNT]; /* bytes used per level */
  uint64_t hash;
  const char *name; /* e.g. "p1:TLOAD.TMULS.TLOAD.TADD.TSTORE" */
  uint32_t n_tasks; /* tasks that run it */
  /* some tile or slot is clipped by a dynamic dim: each instance of a task
   * running it has PTO_CLIP_WORDS(prog) offsets in pto_executable.clip */
  uint8_t clipped;
} pto_cprog;

/* Clip words per task instance of a clipped program: (offset, mul) of the
 * rows and cols of every tile, then of the rows, cols and the two batch
 * coordinates of every slot (tilegraph.h, pto_clip). */
#define PTO_CLIP_WORDS(pr) (4 * (pr)->n_tiles + 8 * (pr)->n_slots)

typedef struct pto_targ { /* one slot binding of one task instance */
  uint32_t storage;
  int64_t offset; /* elements */
} pto_targ;

typedef struct pto_task {
  uint32_t prog;
  uint32_t n_inst;    /* instances (isomorphic subgraphs merged by nbuffer) */
  uint32_t args;      /* index of the first pto_targ: n_inst * n_slots */
  uint32_t succ;      /* index into exe->succ of the first successor */
  uint32_t n_succ;
  uint32_t n_pred;
  uint32_t node;      /* tensor op of its first unit (PTO_NONE: output copy) */
  const char *label;
  pto_core_type core;
  uint64_t cost;      /* estimate: bytes moved + flops/8 */
  uint64_t path;      /* longest cost path from this task to an exit */
  uint64_t clip;      /* its first instance's clip offsets (clipped programs) */
} pto_task;

typedef enum pto_storage_kind {
  PTO_STORAGE_NONE, /* never materialised (fused away) */
  PTO_STORAGE_INPUT,
  PTO_STORAGE_OUTPUT,
  PTO_STORAGE_WORKSPACE,
} pto_storage_kind;

typedef struct pto_storage {
  pto_storage_kind kind;
  uint32_t index;  /* input or output index */
  uint64_t offset; /* workspace byte offset */
  uint64_t bytes;
  pto_dtype dtype;
} pto_storage;

typedef struct pto_compile_stats {
  uint32_t tensor_ops, tile_instructions, units, subgraphs, programs, tasks,
      edges;
  uint64_t boundary_bytes; /* global bytes loaded and stored by all tasks */
  uint64_t mem_peak[PTO_MEM_LEVEL_COUNT];
  uint64_t workspace_bytes;
  double ms_tile, ms_partition, ms_plan, ms_graph, ms_total;
} pto_compile_stats;

struct pto_executable {
  pto_arena arena;
  pto_error err;
  pto_machine machine;
  uint32_t n_inputs, n_outputs;
  pto_cprog *progs;
  uint32_t n_progs;
  pto_task *tasks;
  uint32_t n_tasks;
  uint32_t *succ; /* successor lists, CSR */
  uint32_t n_edges;
  pto_targ *args;
  int64_t *clip; /* clip offsets of the clipped programs' task instances */
  uint64_t n_clip;
  pto_storage *storages;
  uint32_t n_storages;
  uint64_t workspace_bytes; /* each run takes its own (core/buffer.h) */
  pto_compile_stats stats;
  const char *config_json; /* the config it was compiled with (arena) */
  /* the scheduler's per-executable state (job arrays, the last trace of
   * the executable-level calls), built by the first run and published
   * atomically (runs of one executable may start on several threads at
   * once), owned by the scheduler and freed through sched_free */
  _Atomic(void *) sched;
  void (*sched_free)(void *sched);
  /* the program as compiled (pto__program_snapshot, owned): what dumps,
   * traces and task labels read */
  pto_program *prog;
  /* for dumps: the tile graph and subgraph of every unit */
  pto_tgraph tg;
  uint32_t *unit_subgraph;
  uint32_t *subgraph_task;
  uint32_t n_subgraphs;
  /* what the compile noticed but did not refuse (arena-owned lines), or
   * NULL: pto_executable_warnings */
  const char *warnings;
  /* from the partitioner: the fusions it gave up (warning lines, arena, or
   * NULL), and whether an op of one, or of a unit that did not fit, had a
   * vector tile the compiler chose (pto_compile then tries smaller ones) */
  const char *fusion_notes;
  int try_smaller;
};

/* The error record of an executable a const call fails on: like a cache,
 * the record is not part of the executable's value, and every executable
 * is heap-allocated, never a const object. */
static inline pto_error *pto__exe_err(const pto_executable *e) {
  return (pto_error *)(uintptr_t)&e->err;
}

#endif /* PTO_CORE_EXE_H */
