/* scheduler/trace.h (internal): what a traced run recorded, kept by its
 * executable or graph after the run, and written as Chrome trace-event JSON
 * or a text summary. */
#ifndef PTO_SCHEDULER_TRACE_H
#define PTO_SCHEDULER_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "scheduler/runtime.h"

typedef struct pto_trace {
  uint32_t n_tasks, n_workers;
  uint64_t makespan_ns;
  uint64_t *start, *end; /* ns from the run's start, per task */
  uint16_t *worker;      /* per task */
  uint8_t *worker_serves; /* per worker: bit 0 cube, bit 1 vector */
  /* the job: core type and successors of every task (owned by the
   * executable or graph, which owns the trace too) */
  const uint8_t *core;
  const uint32_t *succ_off, *succ;
  /* names: per-task label and program, through the owner */
  const void *owner;
  const char *(*label_of)(const void *owner, uint32_t task);
  const char *(*program_of)(const void *owner, uint32_t task);
  char machine[32];
} pto_trace;

/* Moves run's trace arrays into t (freeing what t held). */
void pto__trace_take(pto_trace *t, pto_run *run, const void *owner,
                     const char *(*label_of)(const void *, uint32_t),
                     const char *(*program_of)(const void *, uint32_t));
void pto__trace_free(pto_trace *t);

/* Chrome trace-event JSON (one lane per worker named by its core type, one
 * complete event per task with its label, program and producers in args),
 * loadable in Perfetto. */
pto_status pto__trace_write_json(const pto_trace *t, FILE *f);
/* pto__trace_write_json into a new file at path; on failure (PTO_EIO when
 * it cannot be written) a message naming the path and why goes to err. */
pto_status pto__trace_write_path(const pto_trace *t, const char *path,
                                 pto_error *err);
/* Makespan, busy fraction per worker and per core type, time per label,
 * critical path (by measured task times) versus the makespan. */
pto_status pto__trace_summary(const pto_trace *t, FILE *f);

#endif /* PTO_SCHEDULER_TRACE_H */
