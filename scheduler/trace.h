/* scheduler/trace.h (internal): what a traced run recorded, kept by its
 * executable or graph after the run, and written as Chrome trace-event JSON
 * or a text summary. */
#ifndef PTO_SCHEDULER_TRACE_H
#define PTO_SCHEDULER_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "scheduler/runtime.h"

/* What only an executable's trace has, through its owner (a task graph's
 * trace has none): every member may be NULL. */
typedef struct pto_trace_detail {
  /* the instructions of task's program, and the opcode name of the i-th */
  uint32_t (*n_insts)(const void *owner, uint32_t task);
  const char *(*inst_name)(const void *owner, uint32_t task, uint32_t i);
  /* the floating-point operations of the i-th over the task's instances
   * (pto__insn_flops: matmuls only, 0 for the rest) */
  uint64_t (*inst_flops)(const void *owner, uint32_t task, uint32_t i);
  /* writes `,"key":value` members into the trace's "pto" object (workload,
   * configuration, tile shapes, programs, storages) */
  void (*write_meta)(const void *owner, FILE *f);
  /* writes `,"key":value` members into task's args (instances and the
   * windows of its tiles) */
  void (*write_task)(const void *owner, uint32_t task, FILE *f);
} pto_trace_detail;

typedef struct pto_trace {
  uint32_t n_tasks, n_workers;
  uint64_t makespan_ns;
  uint64_t *start, *end; /* ns from the run's start, per task */
  uint16_t *worker;      /* per task */
  uint8_t *worker_serves; /* per worker: bit 0 cube, bit 1 vector */
  int32_t *worker_pu;     /* per worker: OS index of its PU, -1 unpinned */
  /* the job: core type and successors of every task (owned by the
   * executable or graph, which owns the trace too) */
  const uint8_t *core;
  const uint32_t *succ_off, *succ;
  /* the tasks the run did not dispatch (its dynamic extents left them
   * nothing to do; owned; NULL: none): a trace shows only the others,
   * numbered densely in their order */
  uint8_t *skip;
  /* names: per-task label and program, through the owner */
  const void *owner;
  const char *(*label_of)(const void *owner, uint32_t task);
  const char *(*program_of)(const void *owner, uint32_t task);
  char machine[32];
  /* executables only (NULL otherwise): ns spent in each instruction of
   * each task's program, summed over its instances, then the part of it
   * that ran the scalar reference (pto__task_exec's two counters per
   * instruction); task t's start at inst_ns[inst_off[t]] (inst_off owned
   * by the owner) */
  const pto_trace_detail *detail;
  uint64_t *inst_ns;
  const uint32_t *inst_off;
  /* a simulated run's (scheduler/sim.c): a JSON object describing the
   * simulation, written as "simulated": true and "sim": it; NULL for a
   * measured run */
  const char *sim;
} pto_trace;

/* Moves run's trace arrays into t (freeing what t held). */
void pto__trace_take(pto_trace *t, pto_run *run, const void *owner,
                     const char *(*label_of)(const void *, uint32_t),
                     const char *(*program_of)(const void *, uint32_t));
void pto__trace_free(pto_trace *t);

/* Chrome trace-event JSON, loadable in Perfetto: one lane per worker named
 * by its core type, one complete event per task with its label, program,
 * producers and (executables) ns per instruction opcode in args; PTO's own
 * metadata under the top-level key "pto" (README.md, "What a trace
 * records"; read back by tools/trace/load.c). */
pto_status pto__trace_write_json(const pto_trace *t, FILE *f);
/* pto__trace_write_json into a new file at path; on failure (PTO_EIO when
 * it cannot be written) a message naming the path and why goes to err. */
pto_status pto__trace_write_path(const pto_trace *t, const char *path,
                                 pto_error *err);
/* Makespan, busy fraction per worker and per core type, time per label,
 * time per label and instruction, critical path (by measured task times)
 * versus the makespan. */
pto_status pto__trace_summary(const pto_trace *t, FILE *f);

/* s as a JSON string (quoted, escaped). */
void pto__trace_str(FILE *f, const char *s);

/* ---- PTO_TRACE ------------------------------------------------------------ */

/* Checks PTO_TRACE when a runtime starts: 0 when unset (*pattern NULL), or
 * the pattern (malloc'ed) with %p (process id), %n (run number in this
 * process) and %% in it; PTO_ECONFIG with msg when it is empty, has another
 * % escape, or its directory cannot be written. */
pto_status pto__trace_env(char **pattern, char *msg, size_t size);
/* Writes t to the pattern's next path (each call takes a new %n); a failure
 * is reported on stderr once per process (the run itself succeeded). */
void pto__trace_write_env(const pto_trace *t, const char *pattern);

#endif /* PTO_SCHEDULER_TRACE_H */
