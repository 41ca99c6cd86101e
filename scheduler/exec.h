/* scheduler/exec.h (internal): running one task of an executable on one
 * worker's scratchpads. Shared by the serial runner and the workers. */
#ifndef PTO_SCHEDULER_EXEC_H
#define PTO_SCHEDULER_EXEC_H

#include "core/exe.h"

typedef struct pto_scratch {
  unsigned char *level[PTO_MEM_LEVEL_COUNT]; /* 64-byte aligned, in region */
  unsigned char *region; /* one allocation for every level */
  uint64_t size[PTO_MEM_LEVEL_COUNT];
  pto_tile *tiles; /* per-program tile descriptors, rebuilt per task */
  uint32_t cap_tiles;
  uint64_t prefetched; /* cache lines prefetched for next instances */
} pto_scratch;

/* Maps s's levels at size[l] bytes each (the memory of a machine's core
 * types, when a worker starts) and faults every page in from the calling
 * thread, so the first tasks find them mapped, on this thread's NUMA node;
 * a later, larger program still grows them (pto__scratch_reserve). 0 or
 * PTO_ENOMEM. */
pto_status pto__scratch_prepare(pto_scratch *s,
                                const uint64_t size[PTO_MEM_LEVEL_COUNT]);
/* Sized for the largest program of e. */
pto_status pto__scratch_init(pto_scratch *s, const pto_executable *e);
void pto__scratch_free(pto_scratch *s);

/* base[k]: the address of storage k for a run with this workspace (of at
 * least e->workspace_bytes) and these buffers. */
pto_status pto__bind(const pto_executable *e, void *workspace,
                     const void *const *inputs, void *const *outputs,
                     unsigned char **base);

/* Runs every instance of task t; on failure fills err naming the task, its
 * program, label and instruction. next: the task this worker runs after t
 * if known (its loads are prefetched during t's last instance), or
 * PTO_NO_TASK. inst_ns: NULL, or (traced runs) two counters per instruction
 * of t's program, n_insts of each: inst_ns[i], to which the ns each call of
 * instruction i takes is added (a monotonic clock read before and after each
 * call; none at all when NULL), then inst_ns[n_insts + i], to which the ns
 * of the calls that ran the scalar reference are added (the table's entry
 * is the reference's, or the SIMD kernel handed the call to pto__isa_ref).
 * ext: the run's extents of the executable's dynamic dims, or NULL (a
 * static executable): tiles and windows of clipped programs are clipped
 * to them, and an instruction left with nothing to write is skipped. */
#define PTO_NO_TASK UINT32_MAX
pto_status pto__task_exec(const pto_executable *e, uint32_t t, uint32_t next,
                          pto_scratch *s, unsigned char *const *base,
                          const int64_t *ext, uint64_t *inst_ns,
                          pto_error *err);
/* Whether a run at extents ext (one per dynamic dim; NULL: the maxima)
 * leaves instance inst of task t nothing to write: then it need not run. */
int pto__task_instance_empty(const pto_executable *e, uint32_t t,
                             uint32_t inst, const int64_t *ext);

/* What the skip pass of a binding reads of a task, compact and built once
 * per executable (pto__skip_facts): its instance count, whether some
 * window it writes is never clipped (then it always runs), and n clips
 * of the windows it writes. */
typedef struct pto_skip_task {
  uint32_t n_inst, n;
  uint8_t always;
} pto_skip_task;

/* One clip of a window a task writes: its dim (index + 1), the offset and
 * multiplier of the task's first instance, the least offset over its
 * instances and their common multiplier (0 where they differ: no bound);
 * slot numbers the windows, a window's clips next to each other. */
typedef struct pto_skip_clip {
  int64_t off0, mul0, min_off, mul;
  uint16_t slot;
  uint8_t d1;
} pto_skip_clip;

/* Task t's facts into *st and its clips into c (NULL: only counted); the
 * number of clips. */
uint32_t pto__skip_facts(const pto_executable *e, uint32_t t,
                         pto_skip_task *st, pto_skip_clip *c);

/* Whether the extents ext leave every instance of task t empty, from its
 * facts (pto__skip_facts) and, where they cannot tell, its instances'. */
int pto__task_skip(const pto_executable *e, uint32_t t,
                   const pto_skip_task *st, const pto_skip_clip *c,
                   const int64_t *ext);

/* The detail of instruction i of pr failing with status rc (tiles and args
 * as the task ran it), for its message: for a strict TGATHER the index out
 * of range, its position in the index tensor and the table, worded as the
 * evaluator words it; otherwise the status's text. */
void pto__insn_failure(const pto_executable *e, const pto_cprog *pr,
                       uint32_t i, const pto_tile *tiles,
                       const pto_targ *args, int rc, char *buf, size_t size);

/* Fills ahead (PTO_AHEAD_MAX entries) with the windows of the TLOADs that
 * directly follow instruction i of a cube program, when i computes (the
 * operands of the next matmul, which the current one may prefetch: its
 * pto_targs.ahead); when none follow and i is the instance's last
 * computation, the loads the next instance starts with (program nx_pr with
 * arguments nx_args; none when nx_pr is NULL), so the last slice's matmul
 * prefetches the next instance's first. Returns how many, 0 for loads,
 * stores and vector programs. args and base as for pto__task_exec. */
uint32_t pto__loads_ahead(const pto_cprog *pr, uint32_t i,
                          const pto_targ *args, const pto_cprog *nx_pr,
                          const pto_targ *nx_args, unsigned char *const *base,
                          pto_gview *ahead);

/* Grows s (levels and tile descriptors) for program pr; 0 or PTO_ENOMEM.
 * Each worker grows only its own scratch, once per larger program. */
pto_status pto__scratch_reserve(pto_scratch *s, const pto_cprog *pr);

#endif /* PTO_SCHEDULER_EXEC_H */
