/* What a trace says: busy time per worker and core type, time per label
 * and per instruction, the critical path, the largest idle gaps and what
 * the idle worker waited for, and the tail. */
#include <stdlib.h>
#include <string.h>

#include "trace/model.h"

void tr_analysis_free(tr_analysis *a) {
  free(a->busy);
  free(a->count);
  free(a->group_name);
  free(a->group_workers);
  free(a->group_busy);
  free(a->labels);
  free(a->label_ops);
  free(a->path);
  free(a->gaps);
  memset(a, 0, sizeof *a);
}

static int by_ns_desc(const void *x, const void *y) {
  const tr_label_stat *a = x, *b = y;
  return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : (a->label > b->label);
}

static int gap_desc(const void *x, const void *y) {
  const tr_gap *a = x, *b = y;
  uint64_t la = a->to - a->from, lb = b->to - b->from;
  return la < lb ? 1 : la > lb ? -1 : (a->from > b->from);
}

/* Label ranks, for ordering the label x instruction rows like the labels. */
static const uint32_t *g_rank;
static int label_op_order(const void *x, const void *y) {
  const tr_label_op *a = x, *b = y;
  if (a->label != b->label)
    return g_rank[a->label] < g_rank[b->label] ? -1 : 1;
  return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

static int per_label(const tr_trace *t, tr_analysis *a) {
  a->labels = calloc(t->n_labels + 1, sizeof *a->labels);
  uint32_t *rank = calloc(t->n_labels + 1, sizeof *rank);
  /* label x (opcode or executor time): a dense table */
  uint32_t n_cols = t->n_ops + 1;
  uint64_t *cell = calloc((size_t)t->n_labels * n_cols + 1, sizeof *cell),
           *fl = calloc((size_t)t->n_labels * n_cols + 1, sizeof *fl),
           *ref = calloc((size_t)t->n_labels * n_cols + 1, sizeof *ref);
  if (!a->labels || !rank || !cell || !fl || !ref) {
    free(rank);
    free(cell);
    free(fl);
    free(ref);
    return -1;
  }
  for (uint32_t l = 0; l < t->n_labels; l++)
    a->labels[l].label = l;
  for (uint32_t k = 0; k < t->n_tasks; k++) {
    uint64_t d = t->end[k] - t->start[k], in_ops = 0;
    a->labels[t->label[k]].ns += d;
    a->labels[t->label[k]].tasks++;
    for (uint32_t j = t->op_off[k]; j < t->op_off[k + 1]; j++) {
      cell[(size_t)t->label[k] * n_cols + t->op_id[j]] += t->op_ns[j];
      fl[(size_t)t->label[k] * n_cols + t->op_id[j]] += t->op_flops[j];
      ref[(size_t)t->label[k] * n_cols + t->op_id[j]] += t->op_ref_ns[j];
      a->ref_total += t->op_ref_ns[j];
      in_ops += t->op_ns[j];
    }
    if (t->op_off[k + 1] > t->op_off[k])
      cell[(size_t)t->label[k] * n_cols + t->n_ops] +=
          d > in_ops ? d - in_ops : 0;
  }
  qsort(a->labels, t->n_labels, sizeof *a->labels, by_ns_desc);
  for (uint32_t r = 0; r < t->n_labels; r++)
    rank[a->labels[r].label] = r;
  uint32_t n = 0;
  for (size_t c = 0; c < (size_t)t->n_labels * n_cols; c++)
    n += cell[c] != 0;
  a->label_ops = calloc(n + 1, sizeof *a->label_ops);
  if (!a->label_ops) {
    free(rank);
    free(cell);
    free(fl);
    free(ref);
    return -1;
  }
  for (uint32_t l = 0; l < t->n_labels; l++)
    for (uint32_t o = 0; o < n_cols; o++)
      if (cell[(size_t)l * n_cols + o])
        a->label_ops[a->n_label_ops++] = (tr_label_op){
            l, o, cell[(size_t)l * n_cols + o], fl[(size_t)l * n_cols + o],
            ref[(size_t)l * n_cols + o]};
  g_rank = rank;
  qsort(a->label_ops, a->n_label_ops, sizeof *a->label_ops, label_op_order);
  g_rank = NULL;
  free(rank);
  free(cell);
  free(fl);
  free(ref);
  return 0;
}

/* The longest chain of task times along the dependencies (Kahn order). */
static int critical_path(const tr_trace *t, tr_analysis *a) {
  uint32_t n = t->n_tasks;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  uint32_t *pending = malloc((n + 1) * sizeof *pending);
  uint32_t *next = malloc((n + 1) * sizeof *next);
  uint64_t *len = malloc((n + 1) * sizeof *len);
  a->path = malloc((n + 1) * sizeof *a->path);
  int rc = -1;
  if (!order || !pending || !next || !len || !a->path)
    goto out;
  uint32_t head = 0, tail = 0;
  for (uint32_t k = 0; k < n; k++)
    if (!(pending[k] = t->pred_off[k + 1] - t->pred_off[k]))
      order[tail++] = k;
  while (head < tail) {
    uint32_t u = order[head++];
    for (uint32_t j = t->succ_off[u]; j < t->succ_off[u + 1]; j++)
      if (--pending[t->succ[j]] == 0)
        order[tail++] = t->succ[j];
  }
  uint32_t best = UINT32_MAX;
  for (uint32_t i = tail; i-- > 0;) {
    uint32_t u = order[i];
    len[u] = 0;
    next[u] = UINT32_MAX;
    for (uint32_t j = t->succ_off[u]; j < t->succ_off[u + 1]; j++)
      if (next[u] == UINT32_MAX || len[t->succ[j]] > len[next[u]])
        next[u] = t->succ[j];
    len[u] = next[u] == UINT32_MAX ? 0 : len[next[u]];
    len[u] += t->end[u] - t->start[u];
    if (best == UINT32_MAX || len[u] > len[best])
      best = u;
  }
  a->critical = best == UINT32_MAX ? 0 : len[best];
  for (uint32_t u = best; u != UINT32_MAX; u = next[u])
    a->path[a->n_path++] = u;
  rc = 0;
out:
  free(order);
  free(pending);
  free(next);
  free(len);
  return rc;
}

static const tr_trace *g_t;
static int by_worker_start(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  if (g_t->worker[a] != g_t->worker[b])
    return g_t->worker[a] < g_t->worker[b] ? -1 : 1;
  return g_t->start[a] < g_t->start[b] ? -1 : g_t->start[a] > g_t->start[b];
}

/* Idle gaps between a worker's tasks (and before its first), each with
 * the producer its next task waited for; and the tail. */
static int gaps_and_tail(const tr_trace *t, tr_analysis *a, uint32_t max) {
  uint32_t n = t->n_tasks;
  uint32_t *by = malloc((n + 1) * sizeof *by);
  tr_gap *all = malloc((n + t->n_workers + 1) * sizeof *all);
  if (!by || !all) {
    free(by);
    free(all);
    return -1;
  }
  for (uint32_t k = 0; k < n; k++)
    by[k] = k;
  g_t = t;
  qsort(by, n, sizeof *by, by_worker_start);
  g_t = NULL;
  uint32_t n_all = 0;
  a->tail_from = t->makespan;
  for (uint32_t i = 0; i <= n; i++) {
    int first = i == 0 || (i < n && t->worker[by[i]] != t->worker[by[i - 1]]);
    int last = i > 0 && (i == n || t->worker[by[i]] != t->worker[by[i - 1]]);
    if (last) { /* by[i - 1] is its worker's last task: idle for good after */
      uint64_t e = t->end[by[i - 1]];
      if (e < a->tail_from)
        a->tail_from = e;
      if (t->makespan > e)
        all[n_all++] = (tr_gap){t->worker[by[i - 1]], e, t->makespan,
                                UINT32_MAX, UINT32_MAX};
    }
    if (i == n)
      break;
    uint32_t k = by[i];
    uint64_t from = first ? 0 : t->end[by[i - 1]];
    if (t->start[k] <= from)
      continue;
    tr_gap g = {t->worker[k], from, t->start[k], k, UINT32_MAX};
    uint64_t ready = 0;
    for (uint32_t j = t->pred_off[k]; j < t->pred_off[k + 1]; j++)
      if (t->end[t->pred[j]] >= ready) {
        ready = t->end[t->pred[j]];
        g.waited = t->pred[j];
      }
    if (ready <= from) /* ready before the gap: not waiting for a producer */
      g.waited = UINT32_MAX;
    all[n_all++] = g;
  }
  /* workers that ran nothing are idle the whole run */
  for (uint32_t w = 0; w < t->n_workers; w++)
    if (!a->count[w]) {
      all[n_all++] = (tr_gap){w, 0, t->makespan, UINT32_MAX, UINT32_MAX};
      a->tail_from = 0;
    }
  qsort(all, n_all, sizeof *all, gap_desc);
  a->n_gaps = n_all < max ? n_all : max;
  a->gaps = all;
  for (uint32_t k = 0; k < n; k++)
    a->tail_tasks += t->start[k] >= a->tail_from;
  free(by);
  return 0;
}

int tr_analyse(const tr_trace *t, tr_analysis *a, uint32_t max_gaps) {
  memset(a, 0, sizeof *a);
  a->makespan = t->makespan;
  a->busy = calloc(t->n_workers, sizeof *a->busy);
  a->count = calloc(t->n_workers, sizeof *a->count);
  a->group_name = calloc(t->n_workers, sizeof *a->group_name);
  a->group_workers = calloc(t->n_workers, sizeof *a->group_workers);
  a->group_busy = calloc(t->n_workers, sizeof *a->group_busy);
  if (!a->busy || !a->count || !a->group_name || !a->group_workers ||
      !a->group_busy)
    goto fail;
  for (uint32_t k = 0; k < t->n_tasks; k++) {
    a->busy[t->worker[k]] += t->end[k] - t->start[k];
    a->count[t->worker[k]]++;
    a->busy_total += t->end[k] - t->start[k];
  }
  for (uint32_t w = 0; w < t->n_workers; w++) {
    uint32_t g = 0;
    while (g < a->n_groups && strcmp(a->group_name[g], t->workers[w].serves))
      g++;
    if (g == a->n_groups)
      a->group_name[a->n_groups++] = t->workers[w].serves;
    a->group_workers[g]++;
    a->group_busy[g] += a->busy[w];
  }
  if (per_label(t, a) || critical_path(t, a) || gaps_and_tail(t, a, max_gaps))
    goto fail;
  return 0;
fail:
  tr_analysis_free(a);
  return -1;
}
