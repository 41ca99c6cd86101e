/* Traces: taking them from runs; writing them. */
#include "scheduler/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void pto__trace_free(pto_trace *t) {
  free(t->start);
  free(t->end);
  free(t->worker);
  free(t->worker_serves);
  free(t->worker_pu);
  free(t->inst_ns);
  free(t->skip);
  memset(t, 0, sizeof *t);
}

static int skipped(const pto_trace *t, uint32_t i) {
  return t->skip && t->skip[i];
}

void pto__trace_take(pto_trace *t, pto_run *run, const void *owner,
                     const char *(*label_of)(const void *, uint32_t),
                     const char *(*program_of)(const void *, uint32_t)) {
  pto__trace_free(t);
  const pto_runtime *rt = run->rt;
  t->n_tasks = run->job.n_tasks;
  t->n_workers = rt->n_workers;
  t->makespan_ns = run->end_ns - run->start_ns;
  t->start = run->trace_start;
  t->end = run->trace_end;
  t->worker = run->trace_worker;
  run->trace_start = run->trace_end = NULL;
  run->trace_worker = NULL;
  t->worker_serves = malloc(rt->n_workers + 1);
  t->worker_pu = malloc((rt->n_workers + 1) * sizeof *t->worker_pu);
  for (uint32_t i = 0; t->worker_serves && i < rt->n_workers; i++)
    t->worker_serves[i] = (uint8_t)(rt->workers[i].serves[PTO_CORE_CUBE] |
                                    rt->workers[i].serves[PTO_CORE_VECTOR]
                                        << 1);
  for (uint32_t i = 0; t->worker_pu && i < rt->n_workers; i++)
    t->worker_pu[i] = rt->workers[i].pinned_pu;
  if (run->job.skip && (t->skip = malloc(run->job.n_tasks + 1)))
    memcpy(t->skip, run->job.skip, run->job.n_tasks);
  t->core = run->job.core;
  t->succ_off = run->job.succ_off;
  t->succ = run->job.succ;
  t->owner = owner;
  t->label_of = label_of;
  t->program_of = program_of;
  snprintf(t->machine, sizeof t->machine, "%s", rt->machine.name);
}

pto_status pto__trace_write_path(const pto_trace *t, const char *path,
                                 pto_error *err) {
  char eb[128];
  FILE *f = fopen(path, "w");
  if (!f)
    return pto__error_set(err, PTO_EIO, "write_trace: cannot open '%s': %s",
                          path, strerror_r(errno, eb, sizeof eb));
  errno = 0; /* what a failing write or close sets, and nothing before */
  pto_status st = pto__trace_write_json(t, f);
  if (fclose(f) && !st)
    st = PTO_EIO;
  if (st == PTO_EIO)
    return pto__error_set(err, st, "write_trace: cannot write '%s': %s", path,
                          errno ? strerror_r(errno, eb, sizeof eb)
                                : "stream error");
  if (st)
    return pto__error_set(err, st, "write_trace: '%s': %s", path,
                          pto_strerror(st));
  return st;
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

void pto__trace_str(FILE *f, const char *s) { json_str(f, s); }

static const char *serves_name(uint8_t bits) {
  return bits == 3 ? "cube+vector" : bits == 1 ? "cube" : "vector";
}

/* Predecessor lists: the successor CSR inverted. */
static int invert(const pto_trace *t, uint32_t **off, uint32_t **pred) {
  uint32_t n = t->n_tasks, m = t->succ_off[n];
  *off = calloc(n + 2, sizeof **off);
  *pred = malloc((m + 1) * sizeof **pred);
  if (!*off || !*pred) {
    free(*off);
    free(*pred);
    return -1;
  }
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t k = t->succ_off[u]; k < t->succ_off[u + 1]; k++)
      if (!skipped(t, u) && !skipped(t, t->succ[k]))
        (*off)[t->succ[k] + 2]++;
  for (uint32_t v = 0; v < n; v++)
    (*off)[v + 2] += (*off)[v + 1];
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t k = t->succ_off[u]; k < t->succ_off[u + 1]; k++)
      if (!skipped(t, u) && !skipped(t, t->succ[k]))
        (*pred)[(*off)[t->succ[k] + 1]++] = u;
  return 0;
}

/* The opcodes of task i's program with the ns spent in each, the part of
 * it on the scalar reference, and the floating-point operations they did
 * (summed over its instructions and instances), into names, ns, ref and
 * flops; how many (at most max). */
static uint32_t task_ops(const pto_trace *t, uint32_t i, const char **names,
                         uint64_t *ns, uint64_t *ref, uint64_t *flops,
                         uint32_t max) {
  if (!t->inst_ns || !t->detail || !t->detail->n_insts)
    return 0;
  uint32_t n = 0, m = t->detail->n_insts(t->owner, i);
  const uint64_t *in = t->inst_ns + t->inst_off[i];
  for (uint32_t k = 0; k < m; k++) {
    const char *op = t->detail->inst_name(t->owner, i, k);
    uint32_t j = 0;
    while (j < n && strcmp(names[j], op))
      j++;
    if (j == n) {
      if (n == max)
        continue;
      names[n] = op;
      ns[n] = ref[n] = flops[n] = 0;
      n++;
    }
    ns[j] += in[k];
    ref[j] += in[m + k];
    if (t->detail->inst_flops)
      flops[j] += t->detail->inst_flops(t->owner, i, k);
  }
  return n;
}

/* `,"key":{"OP":value,...}` over the opcodes whose value is not 0. */
static void ops_json(FILE *f, const char *key, const char *const *names,
                     const uint64_t *v, uint32_t n) {
  int any = 0;
  for (uint32_t k = 0; k < n; k++) {
    if (!v[k])
      continue;
    if (!any)
      fprintf(f, ",\"%s\":{", key);
    else
      fputc(',', f);
    json_str(f, names[k]);
    fprintf(f, ":%llu", (unsigned long long)v[k]);
    any = 1;
  }
  if (any)
    fputc('}', f);
}

#define OPS_MAX 64 /* distinct opcodes of one program */

pto_status pto__trace_write_json(const pto_trace *t, FILE *f) {
  uint32_t *off, *pred;
  if (invert(t, &off, &pred))
    return PTO_ENOMEM;
  /* the tasks it ran, numbered densely */
  uint32_t *id = malloc((t->n_tasks + 1) * sizeof *id), n_ran = 0;
  if (!id) {
    free(off);
    free(pred);
    return PTO_ENOMEM;
  }
  for (uint32_t i = 0; i < t->n_tasks; i++)
    id[i] = skipped(t, i) ? UINT32_MAX : n_ran++;
  /* PTO's own metadata first, so a reader knows what follows */
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\n\"pto\":{\"format\":"
             "\"pto-trace\",\"version\":2,\"machine\":");
  json_str(f, t->machine);
  fprintf(f, ",\"makespan_ns\":%llu,\"tasks\":%u,\"edges\":%u,",
          (unsigned long long)t->makespan_ns, n_ran, off[t->n_tasks]);
  if (t->sim)
    fprintf(f, "\"simulated\":true,\"sim\":%s,", t->sim);
  fprintf(f, "\"workers\":[");
  for (uint32_t w = 0; w < t->n_workers; w++)
    fprintf(f, "%s{\"id\":%u,\"serves\":\"%s\",\"pu\":%d}", w ? "," : "",
            w, serves_name(t->worker_serves ? t->worker_serves[w] : 2),
            t->worker_pu ? t->worker_pu[w] : -1);
  fprintf(f, "]");
  if (t->detail && t->detail->write_meta)
    t->detail->write_meta(t->owner, f);
  fprintf(f, "},\n\"traceEvents\":[\n");
  fprintf(f, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":"
             "{\"name\":");
  char pname[64];
  snprintf(pname, sizeof pname, "pto %s", t->machine);
  json_str(f, pname);
  fprintf(f, "}}");
  for (uint32_t w = 0; w < t->n_workers; w++)
    fprintf(f,
            ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\","
            "\"args\":{\"name\":\"worker %u (%s)\"}}",
            w, w, serves_name(t->worker_serves ? t->worker_serves[w] : 2));
  const char *names[OPS_MAX];
  uint64_t ns[OPS_MAX], ref[OPS_MAX], flops[OPS_MAX];
  for (uint32_t i = 0; i < t->n_tasks; i++) {
    if (skipped(t, i))
      continue;
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,"
               "\"dur\":%.3f,\"name\":",
            t->worker[i], t->start[i] / 1e3,
            (t->end[i] - t->start[i]) / 1e3);
    /* the box's name: its label, or its program when it has none (a
     * blank box says nothing) */
    const char *label = t->label_of(t->owner, i);
    const char *program = t->program_of(t->owner, i);
    json_str(f, label && label[0] ? label : program);
    fprintf(f, ",\"cat\":\"%s\",\"args\":{\"task\":%u,\"label\":",
            pto_core_type_name((pto_core_type)t->core[i]), id[i]);
    json_str(f, label);
    fprintf(f, ",\"program\":");
    json_str(f, program);
    fprintf(f, ",\"producers\":[");
    for (uint32_t k = off[i]; k < off[i + 1]; k++)
      fprintf(f, "%s%u", k > off[i] ? "," : "", id[pred[k]]);
    fprintf(f, "]");
    uint32_t n_ops = task_ops(t, i, names, ns, ref, flops, OPS_MAX);
    if (n_ops) {
      fprintf(f, ",\"ops\":{");
      for (uint32_t k = 0; k < n_ops; k++) {
        fprintf(f, k ? "," : "");
        json_str(f, names[k]);
        fprintf(f, ":%llu", (unsigned long long)ns[k]);
      }
      fprintf(f, "}");
    }
    ops_json(f, "ref", names, ref, n_ops);
    ops_json(f, "flops", names, flops, n_ops);
    if (t->detail && t->detail->write_task)
      t->detail->write_task(t->owner, i, f);
    fprintf(f, "}}");
  }
  fprintf(f, "\n]}\n");
  free(off);
  free(pred);
  free(id);
  return ferror(f) ? PTO_EIO : PTO_OK;
}

typedef struct label_time {
  const char *label;
  uint64_t ns;
  uint32_t n;
} label_time;

static int by_time(const void *a, const void *b) {
  const label_time *x = a, *y = b;
  return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

typedef struct label_op {
  const char *label, *op; /* op NULL: time between instructions */
  uint64_t ns, ref, flops; /* ref: the part of ns on the scalar reference */
} label_op;

static int by_label_then_time(const void *a, const void *b) {
  const label_op *x = a, *y = b;
  int c = strcmp(x->label, y->label);
  if (c)
    return c;
  if (!x->op != !y->op) /* the executor's own time last */
    return x->op ? -1 : 1;
  return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/* Under the table, when its reference column shows */
#define PTO_TRACE_REFERENCE_NOTE                                               \
  "reference: the share of the instruction's time in the scalar reference "    \
  "(tileops/ref.c):\n  its SIMD version cannot take these tiles, or the ISA "  \
  "has none; expect it 10-100x slower than SIMD"

/* Time per label and instruction opcode: where each label's time goes
 * (e.g. TLOAD packing against TMATMUL), and the time between instructions
 * (prefetch issue, argument setup, the task's dispatch) as "(executor)";
 * for the matmuls, their rate: floating-point operations per ns of worker
 * time, GFLOP/s per worker. */
static pto_status label_ops(const pto_trace *t, FILE *f) {
  if (!t->inst_ns || !t->detail || !t->detail->n_insts)
    return PTO_OK;
  uint32_t cap = 64, n = 0;
  label_op *rows = malloc(cap * sizeof *rows);
  if (!rows)
    return PTO_ENOMEM;
  const char *names[OPS_MAX];
  uint64_t ns[OPS_MAX], ref[OPS_MAX], flops[OPS_MAX];
  for (uint32_t i = 0; i < t->n_tasks; i++) {
    if (skipped(t, i))
      continue;
    const char *l = t->label_of(t->owner, i);
    uint32_t n_ops = task_ops(t, i, names, ns, ref, flops, OPS_MAX);
    uint64_t in_ops = 0;
    for (uint32_t k = 0; k <= n_ops; k++) {
      const char *op = k < n_ops ? names[k] : NULL;
      uint64_t d = k < n_ops ? ns[k] : 0;
      if (k < n_ops) {
        in_ops += d;
      } else {
        uint64_t dur = t->end[i] - t->start[i];
        d = dur > in_ops ? dur - in_ops : 0;
      }
      uint32_t j = 0;
      while (j < n && (strcmp(rows[j].label, l) ||
                       (rows[j].op != op &&
                        (!rows[j].op || !op || strcmp(rows[j].op, op)))))
        j++;
      if (j == n) {
        if (n == cap) {
          label_op *r = realloc(rows, 2 * cap * sizeof *rows);
          if (!r) {
            free(rows);
            return PTO_ENOMEM;
          }
          rows = r;
          cap *= 2;
        }
        rows[n++] = (label_op){l, op, 0, 0, 0};
      }
      rows[j].ns += d;
      rows[j].ref += k < n_ops ? ref[k] : 0;
      rows[j].flops += k < n_ops ? flops[k] : 0;
    }
  }
  qsort(rows, n, sizeof *rows, by_label_then_time);
  /* the reference's share: a column only when some instruction ran it */
  int any_ref = 0;
  for (uint32_t j = 0; j < n; j++)
    any_ref |= rows[j].ref > 0;
  fprintf(f, "\n%-28s %-22s %12s %6s %9s%s\n", "label", "instruction",
          "time us", "of label", "GFLOP/s", any_ref ? " reference" : "");
  for (uint32_t j = 0, first = 0; j < n; j++) {
    if (j == 0 || strcmp(rows[j].label, rows[j - 1].label))
      first = j;
    uint64_t total = 0;
    for (uint32_t k = first; k < n && !strcmp(rows[k].label, rows[first].label);
         k++)
      total += rows[k].ns;
    char rate[32] = "", on_ref[32] = "";
    if (rows[j].flops && rows[j].ns) {
      /* a slow rate (a sanitizer build, a preempted worker) keeps its
       * digits instead of rounding to 0.0 */
      double r = (double)rows[j].flops / rows[j].ns;
      snprintf(rate, sizeof rate, r >= 0.1 ? " %9.1f" : " %9.2g", r);
    }
    if (any_ref && rows[j].ref)
      snprintf(on_ref, sizeof on_ref, "%10s %8.1f%%", rate,
               100.0 * rows[j].ref / rows[j].ns);
    fprintf(f, "%-28s %-22s %12.1f %5.1f%%%s\n",
            j == first ? (rows[j].label[0] ? rows[j].label : "(none)") : "",
            rows[j].op ? rows[j].op : "(executor)", rows[j].ns / 1e3,
            total ? 100.0 * rows[j].ns / total : 0, on_ref[0] ? on_ref : rate);
  }
  if (any_ref)
    fprintf(f, "%s\n", PTO_TRACE_REFERENCE_NOTE);
  free(rows);
  return PTO_OK;
}

pto_status pto__trace_summary(const pto_trace *t, FILE *f) {
  uint32_t n = t->n_tasks;
  uint64_t *busy = calloc(t->n_workers + 1, sizeof *busy);
  uint32_t *count = calloc(t->n_workers + 1, sizeof *count);
  uint64_t *path = malloc((n + 1) * sizeof *path);
  label_time *labels = calloc(n + 1, sizeof *labels);
  uint32_t n_labels = 0;
  pto_status st = PTO_OK;
  if (!busy || !count || !path || !labels) {
    st = PTO_ENOMEM;
    goto out;
  }
  double span = t->makespan_ns ? (double)t->makespan_ns : 1.0;
  uint32_t n_ran = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (skipped(t, i))
      continue;
    n_ran++;
    uint64_t d = t->end[i] - t->start[i];
    busy[t->worker[i]] += d;
    count[t->worker[i]]++;
    const char *l = t->label_of(t->owner, i);
    uint32_t k = 0;
    while (k < n_labels && strcmp(labels[k].label, l))
      k++;
    if (k == n_labels)
      labels[n_labels++].label = l;
    labels[k].ns += d;
    labels[k].n++;
  }
  /* critical path by measured durations: the longest chain of task times
   * along the dependencies, over a Kahn order walked backwards */
  uint32_t *order = malloc((n + 1) * sizeof *order);
  uint32_t *pending = calloc(n + 1, sizeof *pending);
  uint32_t head = 0, tail = 0;
  if (!order || !pending) {
    free(order);
    free(pending);
    st = PTO_ENOMEM;
    goto out;
  }
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t k = t->succ_off[u]; k < t->succ_off[u + 1]; k++)
      pending[t->succ[k]]++;
  for (uint32_t u = 0; u < n; u++)
    if (!pending[u])
      order[tail++] = u;
  while (head < tail) {
    uint32_t u = order[head++];
    for (uint32_t k = t->succ_off[u]; k < t->succ_off[u + 1]; k++)
      if (--pending[t->succ[k]] == 0)
        order[tail++] = t->succ[k];
  }
  uint64_t crit = 0;
  for (uint32_t i = tail; i-- > 0;) {
    uint32_t u = order[i];
    uint64_t best = 0;
    for (uint32_t k = t->succ_off[u]; k < t->succ_off[u + 1]; k++)
      best = path[t->succ[k]] > best ? path[t->succ[k]] : best;
    path[u] = best + (t->end[u] - t->start[u]);
    crit = path[u] > crit ? path[u] : crit;
  }
  free(order);
  free(pending);
  fprintf(f, "trace: %u tasks on %u workers (machine %s)\n", n_ran,
          t->n_workers, t->machine);
  fprintf(f, "makespan        %10.1f us\n", t->makespan_ns / 1e3);
  fprintf(f, "critical path   %10.1f us  (%.2f of the makespan)\n",
          crit / 1e3, crit / span);
  fprintf(f, "\n%-28s %8s %12s %6s\n", "worker", "tasks", "busy us", "busy");
  double type_busy[2] = {0, 0};
  uint32_t type_workers[2] = {0, 0};
  for (uint32_t w = 0; w < t->n_workers; w++) {
    uint8_t sv = t->worker_serves ? t->worker_serves[w] : 2;
    char name[40];
    snprintf(name, sizeof name, "worker %u (%s)", w, serves_name(sv));
    fprintf(f, "%-28s %8u %12.1f %5.1f%%\n", name, count[w], busy[w] / 1e3,
            100.0 * busy[w] / span);
    for (int c = 0; c < 2; c++)
      if (sv & (1u << c)) {
        type_busy[c] += (double)busy[w];
        type_workers[c]++;
      }
  }
  for (int c = 0; c < 2; c++)
    if (type_workers[c])
      fprintf(f, "%-28s %8s %12.1f %5.1f%%\n",
              c == PTO_CORE_CUBE ? "cube workers" : "vector workers", "",
              type_busy[c] / 1e3,
              100.0 * type_busy[c] / (span * type_workers[c]));
  qsort(labels, n_labels, sizeof *labels, by_time);
  fprintf(f, "\n%-28s %8s %12s %6s\n", "label", "tasks", "time us", "share");
  uint64_t total = 0;
  for (uint32_t k = 0; k < n_labels; k++)
    total += labels[k].ns;
  for (uint32_t k = 0; k < n_labels; k++)
    fprintf(f, "%-28s %8u %12.1f %5.1f%%\n",
            labels[k].label[0] ? labels[k].label : "(none)", labels[k].n,
            labels[k].ns / 1e3, total ? 100.0 * labels[k].ns / total : 0);
  if ((st = label_ops(t, f)))
    goto out;
  if (ferror(f))
    st = PTO_EIO;
out:
  free(busy);
  free(count);
  free(path);
  free(labels);
  return st;
}
