/* tools/trace/model.h (internal to pto-trace): a PTO trace read back from
 * its JSON, and the analyses the report, the comparison and the viewer
 * share. */
#ifndef PTO_TOOLS_TRACE_MODEL_H
#define PTO_TOOLS_TRACE_MODEL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tr_worker {
  const char *serves; /* "cube", "vector" or "cube+vector" */
  int pu;             /* OS index of its processing unit, -1 unpinned */
} tr_worker;

typedef struct tr_trace {
  const char *path;
  json_t *root; /* owns every string below */
  json_t *pto;  /* the "pto" metadata object */
  uint32_t n_tasks, n_workers, n_labels, n_progs, n_ops;
  uint64_t makespan; /* ns */
  tr_worker *workers;
  /* per task, by task id */
  uint64_t *start, *end;
  uint32_t *worker, *label, *prog;
  json_t **args;      /* the event's args object */
  uint32_t *pred_off; /* producers, CSR: n_tasks + 1 */
  uint32_t *pred;
  uint32_t *succ_off; /* consumers, CSR */
  uint32_t *succ;
  /* ns per opcode per task, CSR over (op, ns) pairs, the floating-point
   * operations of each pair (0 but for the matmuls), and the part of its
   * ns spent in the scalar reference, tileops/ref.c (0 when SIMD ran it) */
  uint32_t *op_off, *op_id;
  uint64_t *op_ns, *op_flops, *op_ref_ns;
  const char **labels, **progs, **ops; /* names */
} tr_trace;

/* Reads a trace; on failure prints why to stderr ("FILE: not JSON ...",
 * "FILE: truncated ...", "FILE: not a PTO trace ...") and returns -1. */
int tr_load(tr_trace *t, const char *path);
void tr_free(tr_trace *t);

/* ---- analyses --------------------------------------------------------------
 */

typedef struct tr_gap {
  uint32_t worker;
  uint64_t from, to; /* ns */
  uint32_t next;     /* the task the worker ran after it, or UINT32_MAX */
  uint32_t waited;   /* the producer of next that ended last, inside the
                        gap (the worker waited for it), or UINT32_MAX */
} tr_gap;

typedef struct tr_label_stat {
  uint32_t label, tasks;
  uint64_t ns;
} tr_label_stat;

typedef struct tr_label_op {
  uint32_t label, op; /* op n_ops: time between instructions */
  uint64_t ns, flops;
  uint64_t ref_ns; /* of ns, in the scalar reference */
} tr_label_op;

/* A row's rate, GFLOP/s per worker (its flops over its ns), or 0 when it
 * has none (not a matmul). */
static inline double tr_rate(const tr_label_op *r) {
  return r->flops && r->ns ? (double)r->flops / (double)r->ns : 0;
}

typedef struct tr_analysis {
  uint64_t makespan, busy_total;
  uint64_t ref_total; /* instruction ns in the scalar reference */
  uint64_t *busy;  /* per worker */
  uint32_t *count; /* per worker */
  /* per core-type group: the distinct "serves" strings in worker order */
  uint32_t n_groups;
  const char **group_name;
  uint32_t *group_workers;
  uint64_t *group_busy;
  tr_label_stat *labels;  /* by time, largest first */
  tr_label_op *label_ops; /* by label (as in labels), then time */
  uint32_t n_label_ops;
  uint64_t critical; /* ns of task time along the longest chain */
  uint32_t *path;    /* its tasks, first to last */
  uint32_t n_path;
  tr_gap *gaps; /* the largest idle gaps, longest first */
  uint32_t n_gaps;
  uint64_t tail_from;  /* when the first worker went idle for good */
  uint32_t tail_tasks; /* tasks that started after tail_from */
} tr_analysis;

/* max_gaps: how many of the largest idle gaps to keep. -1 on ENOMEM. */
int tr_analyse(const tr_trace *t, tr_analysis *a, uint32_t max_gaps);
void tr_analysis_free(tr_analysis *a);

/* Tables (and JSON with --json) for `pto-trace report`. */
int tr_report(const tr_trace *t, const tr_analysis *a, int json, FILE *f);
json_t *tr_report_json(const tr_trace *t, const tr_analysis *a);

/* "f32[1024,4096]"-style description of the workload, into buf. */
const char *tr_workload_desc(const tr_trace *t, char *buf, size_t size);

#endif /* PTO_TOOLS_TRACE_MODEL_H */
