/* The execution graph: tasks (isomorphic subgraphs grouped by nbuffer),
 * their read-after-write dependencies from the windows they access, where
 * every storage lives, and the critical paths; an executable with a cycle
 * is refused. Step 5 of partitioner/partition.c. */
#include <stdio.h>
#include <string.h>

#include "partitioner/part.h"
#include "partitioner/partition.h"

static int access_cmp(const void *a, const void *b) {
  const access *x = a, *y = b;
  if (x->storage != y->storage)
    return x->storage < y->storage ? -1 : 1;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

access pto__graph_access(uint32_t task, const pto_gref *g, int64_t off,
                         int is_write) {
  access a;
  a.is_write = is_write;
  a.storage = g->storage;
  a.task = task;
  a.off = off;
  a.rows = g->rows;
  a.cols = g->cols;
  a.rs = g->rs;
  a.cs = g->cs;
  int64_t span = 0;
  span += (g->rows - 1) * (g->rs < 0 ? -g->rs : g->rs);
  span += (g->cols - 1) * (g->cs < 0 ? -g->cs : g->cs);
  a.lo = off;
  a.hi = off + span;
  return a;
}

/* Whether two windows of one storage share an element. Exact for windows
 * with the same row-major strides; conservative (interval overlap) else. */
static int overlap(const access *a, const access *b) {
  if (a->hi < b->lo || b->hi < a->lo)
    return 0;
  if (a->rs == b->rs && a->cs == 1 && b->cs == 1 && a->rs > 0 &&
      a->cols <= a->rs && b->cols <= b->rs) {
    int64_t ar = a->off / a->rs, ac = a->off % a->rs;
    int64_t br = b->off / b->rs, bc = b->off % b->rs;
    return ar < br + b->rows && br < ar + a->rows && ac < bc + b->cols &&
           bc < ac + a->cols;
  }
  return 1;
}

static int task_cmp(const void *a, const void *b) {
  const access *x = a, *y = b;
  return x->task < y->task ? -1 : x->task > y->task;
}

/* Fills e->succ (CSR) and the tasks' n_pred from the accesses. */
pto_status pto__graph_edges(pto_executable *e, access *acc, uint32_t n_acc) {
  uint32_t nt = e->n_tasks;
  /* writes sorted by (storage, lo); reads sorted by task */
  uint32_t n_w = 0, n_r = 0;
  for (uint32_t i = 0; i < n_acc; i++)
    n_w += acc[i].is_write;
  n_r = n_acc - n_w;
  access *w = malloc((n_w + 1) * sizeof *w), *r = malloc((n_r + 1) * sizeof *r);
  uint32_t *mark = malloc((nt + 1) * sizeof *mark);
  int64_t *span = calloc(e->tg.n_storages + 1, sizeof *span);
  uint32_t(*pairs)[2] = NULL;
  unsigned cap = 0;
  uint32_t n_pairs = 0;
  pto_status st = PTO_OK;
  if (!w || !r || !mark || !span) {
    st = PTO_ENOMEM;
    goto out;
  }
  n_w = n_r = 0;
  for (uint32_t i = 0; i < n_acc; i++) {
    if (acc[i].is_write) {
      w[n_w++] = acc[i];
      int64_t sp = acc[i].hi - acc[i].lo;
      if (sp > span[acc[i].storage])
        span[acc[i].storage] = sp;
    } else {
      r[n_r++] = acc[i];
    }
  }
  qsort(w, n_w, sizeof *w, access_cmp);
  qsort(r, n_r, sizeof *r, task_cmp);
  for (uint32_t t = 0; t < nt; t++)
    mark[t] = PTO_NONE;
  for (uint32_t i = 0; i < n_r; i++) {
    const access *rd = &r[i];
    /* first write of the storage with lo >= rd->lo - span */
    int64_t from = rd->lo - span[rd->storage];
    uint32_t lo = 0, hi = n_w;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      if (w[mid].storage < rd->storage ||
          (w[mid].storage == rd->storage && w[mid].lo < from))
        lo = mid + 1;
      else
        hi = mid;
    }
    for (uint32_t j = lo;
         j < n_w && w[j].storage == rd->storage && w[j].lo <= rd->hi; j++) {
      uint32_t pred = w[j].task;
      if (pred == rd->task || mark[pred] == rd->task || !overlap(&w[j], rd))
        continue;
      mark[pred] = rd->task;
      if (pto__grow((void **)&pairs, sizeof *pairs, &cap, n_pairs + 1)) {
        st = PTO_ENOMEM;
        goto out;
      }
      pairs[n_pairs][0] = pred;
      pairs[n_pairs][1] = rd->task;
      n_pairs++;
    }
  }
  /* CSR by predecessor */
  e->succ = malloc((n_pairs + 1) * sizeof *e->succ);
  if (!e->succ) {
    st = PTO_ENOMEM;
    goto out;
  }
  for (uint32_t k = 0; k < n_pairs; k++) {
    e->tasks[pairs[k][0]].n_succ++;
    e->tasks[pairs[k][1]].n_pred++;
  }
  uint32_t at = 0;
  for (uint32_t t = 0; t < nt; t++) {
    e->tasks[t].succ = at;
    at += e->tasks[t].n_succ;
    e->tasks[t].n_succ = 0;
  }
  for (uint32_t k = 0; k < n_pairs; k++) {
    pto_task *t = &e->tasks[pairs[k][0]];
    e->succ[t->succ + t->n_succ++] = pairs[k][1];
  }
  e->n_edges = n_pairs;
out:
  free(w);
  free(r);
  free(mark);
  free(span);
  free(pairs);
  return st;
}

/* Where every storage lives: inputs and outputs are the caller's buffers;
 * intermediates that some instance of some task stores get a slice of the
 * workspace. */
pto_status pto__graph_storages(pto_executable *e, const pto_tgraph *tg) {
  const pto_program *p = tg->prog;
  e->n_storages = tg->n_storages;
  e->storages = calloc(tg->n_storages + 1, sizeof *e->storages);
  if (!e->storages)
    return PTO_ENOMEM;
  for (uint32_t k = 0; k < tg->n_storages; k++) {
    pto_storage *s = &e->storages[k];
    s->bytes = (uint64_t)pto__storage_bytes(tg, k);
    s->dtype = pto__storage_dtype(tg, k);
    if (k < p->n_tensors && p->tensors[k]->input_index >= 0) {
      s->kind = PTO_STORAGE_INPUT;
      s->index = (uint32_t)p->tensors[k]->input_index;
    }
  }
  for (uint32_t j = 0; j < p->n_outputs; j++) {
    pto_storage *s = &e->storages[tg->out_storage[j]];
    s->kind = PTO_STORAGE_OUTPUT;
    s->index = j;
  }
  /* every storage any instance of any task writes, through any slot that
   * an instruction writes (a TSTORE's, a fused store's second view) */
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_task *task = &e->tasks[t];
    const pto_cprog *pr = &e->progs[task->prog];
    for (uint32_t inst = 0; inst < task->n_inst; inst++)
      for (uint32_t i = 0; i < pr->n_insts; i++)
        for (int v = 0; v < 2; v++) {
          const int32_t slot = pto__pinst_slot(&pr->insts[i], v);
          if (slot < 0 || !pto__pinst_stores(&pr->insts[i], v))
            continue;
          pto_storage *s =
              &e->storages[e->args[task->args + inst * pr->n_slots + slot]
                               .storage];
          if (s->kind == PTO_STORAGE_NONE) {
            s->kind = PTO_STORAGE_WORKSPACE;
            s->offset = e->workspace_bytes;
            e->workspace_bytes += (s->bytes + 63) & ~(uint64_t)63;
          }
        }
  }
  e->stats.workspace_bytes = e->workspace_bytes;
  return PTO_OK;
}

/* Bytes of global memory one instance of program pr moves. */
static uint64_t prog_bytes(const pto_cprog *pr) {
  uint64_t b = 0;
  for (uint32_t l = 0; l < pr->n_slots; l++)
    b += (uint64_t)(pr->slots[l].rows * pr->slots[l].cols) *
         pto_dtype_size(pr->slots[l].dtype);
  return b;
}

/* Vector instances this small are merged automatically (nbuffer = 0). */
#define NBUFFER_SMALL_BYTES (64u * 1024u)

/* Assigns each subgraph a task: vector subgraphs with the same program and
 * the same fusion cluster (hence independent) are grouped nbuffer at a time;
 * nbuffer 0 groups small ones into about one task per vector worker. */
pto_status pto__graph_group_tasks(part *s, const sgraph *sgs, uint32_t n_sg,
                                  const uint32_t *prog_of, uint32_t *task_of,
                                  uint32_t *n_tasks) {
  const pto_executable *e = s->e;
  uint32_t nn = s->p->n_nodes;
  hmap groups;
  uint32_t *count = calloc(n_sg + 1, sizeof *count);
  uint32_t *open = malloc((n_sg + 1) * sizeof *open);
  uint32_t *fill = calloc(n_sg + 1, sizeof *fill);
  uint32_t *gid = malloc((n_sg + 1) * sizeof *gid);
  if (!count || !open || !fill || !gid || hmap_init(&groups, n_sg)) {
    free(count);
    free(open);
    free(fill);
    free(gid);
    return PTO_ENOMEM;
  }
  uint32_t n_groups = 0;
  for (uint32_t k = 0; k < n_sg; k++) {
    uint32_t node = s->tg->units[sgs[k].units[0]].node;
    uint32_t c = node == PTO_NONE ? nn : uf_find(s->cluster, node);
    uint64_t key = ((uint64_t)(prog_of[k] + 1) << 32) | (uint64_t)(c + 1);
    uint32_t slot = hmap_slot(&groups, key);
    if (!groups.keys[slot]) {
      groups.keys[slot] = key;
      groups.vals[slot] = n_groups++;
    }
    gid[k] = groups.vals[slot];
    count[gid[k]]++;
  }
  uint32_t workers =
      s->m->workers[PTO_CORE_VECTOR] ? s->m->workers[PTO_CORE_VECTOR] : 1;
  uint32_t n = 0;
  for (uint32_t g = 0; g < n_groups; g++)
    open[g] = PTO_NONE;
  for (uint32_t k = 0; k < n_sg; k++) {
    uint32_t g = gid[k];
    const pto_cprog *pr = &e->progs[prog_of[k]];
    uint32_t node = s->tg->units[sgs[k].units[0]].node;
    int64_t per =
        pr->core == PTO_CORE_VECTOR ? knob(s, node, PTO_KNOB_NBUFFER) : 1;
    if (per == 0)
      per = prog_bytes(pr) < NBUFFER_SMALL_BYTES
                ? (count[g] + workers - 1) / workers
                : 1;
    if (open[g] == PTO_NONE || fill[g] >= per) {
      open[g] = n++;
      fill[g] = 0;
    }
    fill[g]++;
    task_of[k] = open[g];
  }
  *n_tasks = n;
  hmap_free(&groups);
  free(count);
  free(open);
  free(fill);
  free(gid);
  return PTO_OK;
}

/* What a task computes, for messages: "matmul 'label' -> 'y'". */
static void task_what(const pto_executable *e, uint32_t t, char *buf,
                      size_t size) {
  uint32_t node = e->tasks[t].node;
  if (node == PTO_NONE) {
    snprintf(buf, size, "%s",
             e->progs[e->tasks[t].prog].n_insts ? "output copy"
                                                : "stage barrier join");
    return;
  }
  const pto_node *pn = e->tg.prog->nodes[node];
  snprintf(buf, size, "%s%s%s%s -> '%s'", pto__top_name(pn->op),
           pn->label[0] ? " '" : "", pn->label, pn->label[0] ? "'" : "",
           pn->out[0]->name);
}

/* Kahn's algorithm over e's tasks: fills order (n_tasks entries) with the
 * tasks in a topological order and pending with how many producers each
 * still waits for; returns how many were ordered (n_tasks unless the graph
 * has a cycle). */
static uint32_t topo_order(const pto_executable *e, uint32_t *order,
                           uint32_t *pending) {
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    pending[t] = e->tasks[t].n_pred;
    if (!pending[t])
      order[tail++] = t;
  }
  while (head < tail) {
    const pto_task *t = &e->tasks[order[head++]];
    for (uint32_t k = 0; k < t->n_succ; k++)
      if (--pending[e->succ[t->succ + k]] == 0)
        order[tail++] = e->succ[t->succ + k];
  }
  return tail;
}

/* Fails naming the tasks of one cycle among those Kahn's algorithm left
 * waiting (pending > 0: each waits on another of them). */
static pto_status fail_cycle(pto_executable *e, const uint32_t *pending) {
  uint32_t n = e->n_tasks, left = 0;
  uint32_t *pred = malloc((n + 1) * sizeof *pred);
  uint32_t *step = malloc((n + 1) * sizeof *step);
  if (!pred || !step) {
    free(pred);
    free(step);
    return pto__error_set(&e->err, PTO_ENOMEM, "compile: out of memory");
  }
  uint32_t v = PTO_NONE;
  for (uint32_t t = 0; t < n; t++) {
    pred[t] = step[t] = PTO_NONE;
    left += pending[t] > 0;
  }
  for (uint32_t t = 0; t < n; t++)
    for (uint32_t k = 0; pending[t] && k < e->tasks[t].n_succ; k++) {
      uint32_t w = e->succ[e->tasks[t].succ + k];
      if (pending[w]) {
        pred[w] = t;
        v = w;
      }
    }
  /* walk back along waiting producers until a task repeats */
  uint32_t i = 0;
  while (v != PTO_NONE && step[v] == PTO_NONE) {
    step[v] = i++;
    v = pred[v];
  }
  /* v is on the cycle; pred[] runs against the edges: collect the cycle
   * backwards (into step[], no longer needed), then print it forwards */
  uint32_t n_cyc = v == PTO_NONE ? 0 : i - step[v];
  uint32_t *cyc = step;
  for (uint32_t k = 0, u = v; k < n_cyc; k++, u = pred[u])
    cyc[n_cyc - 1 - k] = u;
  char msg[PTO_ERROR_MSG - 64], what[160];
  size_t len = 0;
  msg[0] = '\0';
  for (uint32_t k = 0; k <= n_cyc && n_cyc && len < sizeof msg; k++) {
    uint32_t t = cyc[k % n_cyc];
    task_what(e, t, what, sizeof what);
    len += (size_t)snprintf(msg + len, sizeof msg - len, "%stask %u (%s)",
                            k ? " -> " : "", t, what);
  }
  free(pred);
  free(step);
  return pto__error_set(&e->err, PTO_ESTATE,
                        "compile: the task graph has a cycle (%u of %u "
                        "tasks wait on each other): %s",
                        left, n, msg);
}

pto_status pto__exe_check_acyclic(pto_executable *e) {
  uint32_t *order = malloc((e->n_tasks + 1) * sizeof *order);
  uint32_t *pending = malloc((e->n_tasks + 1) * sizeof *pending);
  pto_status st = PTO_OK;
  if (!order || !pending)
    st = pto__error_set(&e->err, PTO_ENOMEM, "compile: out of memory");
  else if (topo_order(e, order, pending) < e->n_tasks)
    st = fail_cycle(e, pending);
  free(order);
  free(pending);
  return st;
}

/* path[t]: the largest total cost from t to any exit, t included: the
 * critical-path scheduling priority. Kahn order, then backwards. The
 * executable is checked for a cycle here, as it is built: fusion must never
 * make one, and a run of a graph with one could never end. */
pto_status pto__graph_critical_paths(pto_executable *e) {
  uint32_t n = e->n_tasks;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  uint32_t *pending = malloc((n + 1) * sizeof *pending);
  pto_status st = PTO_OK;
  if (!order || !pending)
    st = pto__error_set(&e->err, PTO_ENOMEM, "compile: out of memory");
  else if (topo_order(e, order, pending) < n)
    st = fail_cycle(e, pending);
  for (uint32_t i = n; st == PTO_OK && i-- > 0;) {
    pto_task *t = &e->tasks[order[i]];
    uint64_t best = 0;
    for (uint32_t k = 0; k < t->n_succ; k++)
      if (e->tasks[e->succ[t->succ + k]].path > best)
        best = e->tasks[e->succ[t->succ + k]].path;
    t->path = best + t->cost + 1;
  }
  free(order);
  free(pending);
  return st;
}
