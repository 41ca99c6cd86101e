/* Task graphs of user callbacks: the scheduler without the compiler, for
 * measuring it and for work that is not a tensor program. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "scheduler/runtime.h"
#include "scheduler/trace.h"

typedef struct gtask {
  pto_task_fn fn;
  void *arg;
} gtask;

struct pto_graph {
  gtask *tasks;
  uint8_t *core;
  unsigned n, cap, cap_core;
  uint32_t (*edges)[2];
  unsigned n_edges, cap_edges;
  /* CSR built when the graph changed since the last run */
  int dirty;
  uint32_t *succ_off, *succ, *n_pred;
  uint64_t *prio;
  pto_error err;
  pto_trace trace;
};

pto_graph *pto_graph_new(void) {
  pto_graph *g = calloc(1, sizeof *g);
  if (g)
    g->dirty = 1;
  else
    pto__last_error(PTO_ENOMEM, "pto_graph_new: out of memory");
  return g;
}

/* The error record of a graph a const call fails on (graphs are
 * heap-allocated, never const objects; the record is not their value). */
static pto_error *graph_err(const pto_graph *g) {
  return (pto_error *)(uintptr_t)&g->err;
}

static void csr_free(pto_graph *g) {
  free(g->succ_off);
  free(g->succ);
  free(g->n_pred);
  free(g->prio);
  g->succ_off = g->succ = g->n_pred = NULL;
  g->prio = NULL;
}

void pto_graph_free(pto_graph *g) {
  if (!g)
    return;
  csr_free(g);
  free(g->tasks);
  free(g->core);
  free(g->edges);
  pto__trace_free(&g->trace);
  free(g);
}

const char *pto_graph_error(const pto_graph *g) {
  return g ? g->err.msg : "graph is NULL";
}

int64_t pto_graph_add(pto_graph *g, pto_core_type core, pto_task_fn fn,
                      void *arg) {
  if (!g)
    return pto__last_error(PTO_EINVAL, "pto_graph_add: the graph is NULL");
  if (!fn || (core != PTO_CORE_CUBE && core != PTO_CORE_VECTOR))
    return pto__error_set(&g->err, PTO_EINVAL,
                          "graph_add: a task needs a function and the core "
                          "type cube or vector");
  if (g->n == UINT32_MAX - 1 ||
      pto__grow((void **)&g->tasks, sizeof *g->tasks, &g->cap, g->n + 1) ||
      pto__grow((void **)&g->core, 1, &g->cap_core, g->n + 1))
    return pto__error_set(&g->err, PTO_ENOMEM, "graph_add: out of memory");
  g->tasks[g->n].fn = fn;
  g->tasks[g->n].arg = arg;
  g->core[g->n] = (uint8_t)core;
  g->dirty = 1;
  return g->n++;
}

pto_status pto_graph_depend(pto_graph *g, int64_t before, int64_t after) {
  if (!g)
    return pto__last_error(PTO_EINVAL, "pto_graph_depend: the graph is NULL");
  if (before < 0 || after < 0 || before >= g->n || after >= g->n ||
      before == after)
    return pto__error_set(&g->err, PTO_EINVAL,
                          "graph_depend: %lld -> %lld: ids must be distinct "
                          "tasks of the graph (it has %u)",
                          (long long)before, (long long)after, g->n);
  if (pto__grow((void **)&g->edges, sizeof *g->edges, &g->cap_edges,
                g->n_edges + 1))
    return pto__error_set(&g->err, PTO_ENOMEM, "graph_depend: out of memory");
  g->edges[g->n_edges][0] = (uint32_t)before;
  g->edges[g->n_edges][1] = (uint32_t)after;
  g->n_edges++;
  g->dirty = 1;
  return PTO_OK;
}

/* CSR successor lists, predecessor counts and longest-path priorities;
 * ESTATE when the dependencies have a cycle. */
static pto_status build(pto_graph *g) {
  csr_free(g);
  uint32_t n = g->n;
  g->succ_off = calloc(n + 2, sizeof *g->succ_off);
  g->succ = malloc((g->n_edges + 1) * sizeof *g->succ);
  g->n_pred = calloc(n + 1, sizeof *g->n_pred);
  g->prio = calloc(n + 1, sizeof *g->prio);
  uint32_t *order = malloc((n + 1) * sizeof *order);
  uint32_t *pending = malloc((n + 1) * sizeof *pending);
  pto_status st = PTO_OK;
  if (!g->succ_off || !g->succ || !g->n_pred || !g->prio || !order ||
      !pending) {
    st = pto__error_set(&g->err, PTO_ENOMEM, "graph: out of memory");
    goto out;
  }
  for (uint32_t k = 0; k < g->n_edges; k++) {
    g->succ_off[g->edges[k][0] + 2]++;
    g->n_pred[g->edges[k][1]]++;
  }
  for (uint32_t t = 0; t < n; t++)
    g->succ_off[t + 2] += g->succ_off[t + 1];
  for (uint32_t k = 0; k < g->n_edges; k++)
    g->succ[g->succ_off[g->edges[k][0] + 1]++] = g->edges[k][1];
  /* Kahn's order proves there is no cycle, then paths backwards */
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < n; t++) {
    pending[t] = g->n_pred[t];
    if (!pending[t])
      order[tail++] = t;
  }
  while (head < tail) {
    uint32_t t = order[head++];
    for (uint32_t k = g->succ_off[t]; k < g->succ_off[t + 1]; k++)
      if (--pending[g->succ[k]] == 0)
        order[tail++] = g->succ[k];
  }
  if (tail != n) {
    st = pto__error_set(&g->err, PTO_ESTATE,
                        "graph: %u of %u tasks are on or behind a dependency "
                        "cycle",
                        n - tail, n);
    goto out;
  }
  for (uint32_t i = n; i-- > 0;) {
    uint32_t t = order[i];
    uint64_t best = 0;
    for (uint32_t k = g->succ_off[t]; k < g->succ_off[t + 1]; k++)
      best = g->prio[g->succ[k]] > best ? g->prio[g->succ[k]] : best;
    g->prio[t] = best + 1;
  }
  g->dirty = 0;
out:
  free(order);
  free(pending);
  return st;
}

typedef struct graph_run {
  pto_run run;
  pto_graph *g;
} graph_run;

static int graph_exec(pto_run *run, uint32_t t, pto_worker *w,
                      pto_error *err) {
  (void)w;
  const pto_graph *g = ((graph_run *)run)->g;
  int rc = g->tasks[t].fn(g->tasks[t].arg);
  if (rc < 0)
    pto__error_set(err, rc < 0 && rc > -PTO_STATUS_COUNT ? rc : PTO_ETASK,
                   "task %u (%s) returned %d (%s)", t,
                   pto_core_type_name((pto_core_type)g->core[t]), rc,
                   pto_strerror(rc));
  return rc < 0 ? (rc > -PTO_STATUS_COUNT ? rc : PTO_ETASK) : 0;
}

static const char *graph_label(const void *owner, uint32_t t) {
  (void)owner;
  (void)t;
  return "task";
}

static const char *graph_program(const void *owner, uint32_t t) {
  (void)owner;
  (void)t;
  return "";
}

static void graph_finish(pto_run *run) {
  graph_run *r = (graph_run *)run;
  if (run->trace_start) {
    pto__trace_take(&r->g->trace, run, r->g, graph_label, graph_program);
    if (run->rt->trace_pattern) /* PTO_TRACE */
      pto__trace_write_env(&r->g->trace, run->rt->trace_pattern);
  }
}

pto_status pto_runtime_run_graph(pto_runtime *rt, pto_graph *g) {
  if (!g)
    return rt ? pto__error_set(&rt->err, PTO_EINVAL,
                               "run_graph: the graph is NULL")
              : pto__last_error(PTO_EINVAL,
                                "run_graph: the runtime and the graph are "
                                "NULL");
  pto__error_clear(&g->err);
  if (!rt)
    return pto__error_set(&g->err, PTO_EINVAL, "run_graph: the runtime is NULL");
  pto_status st;
  if (g->dirty && (st = build(g)))
    return st;
  graph_run r;
  memset(&r, 0, sizeof r);
  r.g = g;
  r.run.owner = g;
  r.run.finish = graph_finish;
  pto_job *j = &r.run.job;
  j->n_tasks = j->n_active = g->n;
  j->core = g->core;
  j->succ_off = g->succ_off;
  j->succ = g->succ;
  j->n_pred = g->n_pred;
  j->prio = g->prio;
  j->exec = graph_exec;
  for (uint32_t t = 0; t < g->n; t++)
    j->reserve[g->core[t]]++;
  r.run.pending = malloc((g->n + 1) * sizeof *r.run.pending);
  if (rt->trace) {
    r.run.trace_start = calloc(g->n + 1, sizeof *r.run.trace_start);
    r.run.trace_end = calloc(g->n + 1, sizeof *r.run.trace_end);
    r.run.trace_worker = calloc(g->n + 1, sizeof *r.run.trace_worker);
  }
  if (!r.run.pending || uv_sem_init(&r.run.done, 0) ||
      (rt->trace && (!r.run.trace_start || !r.run.trace_end ||
                     !r.run.trace_worker))) {
    st = pto__error_set(&g->err, PTO_ENOMEM, "graph: out of memory");
    goto out;
  }
  st = pto__run_start(rt, &r.run);
  if (st) {
    pto__error_set(&g->err, st, "%s", rt->err.msg);
  } else {
    uv_sem_wait(&r.run.done);
    st = (pto_status)atomic_load_explicit(&r.run.status, memory_order_acquire);
    if (st)
      g->err = r.run.err;
  }
  uv_sem_destroy(&r.run.done);
out:
  free(r.run.pending);
  free(r.run.trace_start);
  free(r.run.trace_end);
  free(r.run.trace_worker);
  return st;
}

static pto_status no_trace(const pto_graph *g, const char *call) {
  return pto__error_set(graph_err(g), PTO_ENOTFOUND,
                        "%s: no traced run has finished (runs record a "
                        "trace when the runtime is made with params.trace "
                        "set)",
                        call);
}

pto_status pto_graph_write_trace(const pto_graph *g, const char *path) {
  if (!g)
    return pto__last_error(PTO_EINVAL,
                           "pto_graph_write_trace: the graph is NULL");
  if (!path)
    return pto__error_set(graph_err(g), PTO_EINVAL,
                          "write_trace: path is NULL");
  return g->trace.start ? pto__trace_write_path(&g->trace, path, graph_err(g))
                        : no_trace(g, "write_trace");
}

pto_status pto_graph_trace_summary(const pto_graph *g, FILE *out) {
  if (!g)
    return pto__last_error(PTO_EINVAL,
                           "pto_graph_trace_summary: the graph is NULL");
  if (!out)
    return pto__error_set(graph_err(g), PTO_EINVAL,
                          "trace_summary: out is NULL");
  if (!g->trace.start)
    return no_trace(g, "trace_summary");
  pto_status st = pto__trace_summary(&g->trace, out);
  return st ? pto__error_set(graph_err(g), st, "trace_summary: %s",
                             pto_strerror(st))
            : st;
}
