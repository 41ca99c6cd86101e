/* Stage barriers (pto_config_set_stage_barriers): extra edges that make
 * every task of stage k wait for every task of the stage before, so the
 * same tasks run as phases, as an SPMD framework would run them, and a
 * harness can measure what MPMD overlap buys. Runs after the data edges
 * (partitioner/graph.c) and before the critical paths, which then check
 * the graph for cycles. */
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "partitioner/part.h"
#include "partitioner/partition.h"

enum { HAS_PRED = 1, HAS_SUCC = 2 }; /* within the task's own stage */

/* A join is a task of no instructions; its program is shared by all. */
static pto_status add_join_program(pto_executable *e, uint32_t *prog) {
  pto_cprog *grown = realloc(e->progs, (e->n_progs + 2) * sizeof *grown);
  if (!grown)
    return PTO_ENOMEM;
  e->progs = grown;
  memset(&e->progs[e->n_progs], 0, sizeof *e->progs);
  e->progs[e->n_progs].core = PTO_CORE_VECTOR;
  e->progs[e->n_progs].hash = UINT64_C(0x5354414745424152) | 1; /* "STAGEBAR" */
  *prog = e->n_progs++;
  return PTO_OK;
}

typedef struct edges {
  uint32_t (*pair)[2];
  unsigned n, cap;
} edges;

static int edge_add(edges *x, uint32_t from, uint32_t to) {
  if (pto__grow((void **)&x->pair, sizeof *x->pair, &x->cap, x->n + 1))
    return -1;
  x->pair[x->n][0] = from;
  x->pair[x->n][1] = to;
  x->n++;
  return 0;
}

/* Rebuilds e's CSR with the extra edges and n_join join tasks appended. */
static pto_status merge_edges(pto_executable *e, const edges *x,
                              uint32_t n_join, uint32_t join_prog) {
  uint32_t nt = e->n_tasks, n = nt + n_join;
  pto_task *tasks = realloc(e->tasks, (n + 1) * sizeof *tasks);
  if (!tasks)
    return PTO_ENOMEM;
  e->tasks = tasks;
  memset(&tasks[nt], 0, (n_join + 1) * sizeof *tasks);
  for (uint32_t j = nt; j < n; j++) {
    tasks[j].prog = join_prog;
    tasks[j].n_inst = 1; /* one instance of nothing: no slots, no args */
    tasks[j].node = PTO_NONE;
    tasks[j].label = "stage_barrier";
    tasks[j].core = PTO_CORE_VECTOR;
    e->progs[join_prog].n_tasks++;
  }
  uint32_t *add = calloc(n + 1, sizeof *add);
  uint32_t *succ = malloc((e->n_edges + x->n + 1) * sizeof *succ);
  if (!add || !succ) {
    free(add);
    free(succ);
    return PTO_ENOMEM;
  }
  for (unsigned k = 0; k < x->n; k++) {
    add[x->pair[k][0]]++;
    tasks[x->pair[k][1]].n_pred++;
  }
  uint32_t at = 0;
  for (uint32_t t = 0; t < n; t++) {
    uint32_t old = tasks[t].n_succ;
    memcpy(succ + at, e->succ + tasks[t].succ, old * sizeof *succ);
    tasks[t].succ = at;
    at += old + add[t];
  }
  for (unsigned k = 0; k < x->n; k++) {
    pto_task *t = &tasks[x->pair[k][0]];
    succ[t->succ + t->n_succ++] = x->pair[k][1];
  }
  free(add);
  free(e->succ);
  e->succ = succ;
  e->n_edges += x->n;
  e->n_tasks = n;
  return PTO_OK;
}

pto_status pto__graph_stage_barriers(pto_executable *e, const pto_config *cfg) {
  const uint32_t n_stages = pto_config_n_stage_barriers(cfg), nt = e->n_tasks;
  if (!n_stages || !nt)
    return PTO_OK;
  int32_t *stage = malloc(nt * sizeof *stage);
  uint8_t *flags = calloc(nt, 1);
  uint32_t *mark = malloc(nt * sizeof *mark);
  uint32_t *count = calloc(n_stages, sizeof *count);
  uint32_t *sinks = calloc(n_stages, sizeof *sinks);
  uint32_t *sources = calloc(n_stages, sizeof *sources);
  edges x = {NULL, 0, 0};
  uint32_t n_join = 0, join_prog = 0;
  pto_status st = PTO_OK;
  if (!stage || !flags || !mark || !count || !sinks || !sources) {
    st = pto__error_set(&e->err, PTO_ENOMEM, "compile: out of memory");
    goto out;
  }
  for (uint32_t t = 0; t < nt; t++) {
    stage[t] = (int32_t)pto__config_stage(cfg, e->tasks[t].label);
    mark[t] = PTO_NONE;
  }
  /* which tasks have a producer or a consumer in their own stage; a stage
   * feeding an earlier one would make a cycle: say which tasks do */
  for (uint32_t u = 0; u < nt; u++) {
    const pto_task *tu = &e->tasks[u];
    for (uint32_t k = 0; stage[u] >= 0 && k < tu->n_succ; k++) {
      uint32_t v = e->succ[tu->succ + k];
      if (stage[v] == stage[u]) {
        flags[u] |= HAS_SUCC;
        flags[v] |= HAS_PRED;
      } else if (stage[v] >= 0 && stage[v] < stage[u]) {
        st = pto__error_set(
            &e->err, PTO_ECONFIG,
            "compile: stage_barriers: task %u (label '%s') of stage %d "
            "('%s') feeds task %u (label '%s') of the earlier stage %d "
            "('%s'): list the stages in the order the data flows",
            u, tu->label, stage[u], pto_config_stage_barrier(cfg, stage[u]), v,
            e->tasks[v].label, stage[v],
            pto_config_stage_barrier(cfg, stage[v]));
        goto out;
      }
    }
  }
  for (uint32_t t = 0; t < nt; t++)
    if (stage[t] >= 0) {
      count[stage[t]]++;
      sinks[stage[t]] += !(flags[t] & HAS_SUCC);
      sources[stage[t]] += !(flags[t] & HAS_PRED);
    }
  /* each stage with tasks waits for the closest earlier stage with tasks:
   * directly when sinks * sources edges are no more than a join's
   * sinks + sources, else through a join task */
  for (int32_t k = 0, prev = -1; k < (int32_t)n_stages; k++) {
    if (!count[k])
      continue;
    if (prev >= 0) {
      const uint64_t ns = sinks[prev], nr = sources[k];
      const int direct = ns * nr <= ns + nr;
      uint32_t join = nt + n_join;
      if (!direct && !n_join && (st = add_join_program(e, &join_prog))) {
        pto__error_set(&e->err, st, "compile: out of memory");
        goto out;
      }
      n_join += !direct;
      for (uint32_t u = 0; u < nt; u++) {
        if (stage[u] != prev || (flags[u] & HAS_SUCC))
          continue;
        if (!direct) {
          if (edge_add(&x, u, join))
            goto oom;
          continue;
        }
        /* skip pairs a data edge already joins */
        for (uint32_t j = 0; j < e->tasks[u].n_succ; j++)
          mark[e->succ[e->tasks[u].succ + j]] = u;
        for (uint32_t v = 0; v < nt; v++)
          if (stage[v] == k && !(flags[v] & HAS_PRED) && mark[v] != u &&
              edge_add(&x, u, v))
            goto oom;
      }
      for (uint32_t v = 0; !direct && v < nt; v++)
        if (stage[v] == k && !(flags[v] & HAS_PRED) && edge_add(&x, join, v))
          goto oom;
    }
    prev = k;
  }
  if (x.n && (st = merge_edges(e, &x, n_join, join_prog)))
    goto oom;
  goto out;
oom:
  st = pto__error_set(&e->err, PTO_ENOMEM, "compile: out of memory");
out:
  free(stage);
  free(flags);
  free(mark);
  free(count);
  free(sinks);
  free(sources);
  free(x.pair);
  return st;
}
