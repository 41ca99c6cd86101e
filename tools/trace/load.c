/* Reading a PTO trace back from its JSON, with errors that say what is
 * wrong with the file: not JSON, truncated, not a trace, not PTO's. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace/model.h"

__attribute__((format(printf, 2, 3))) static int fail(const char *path,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "pto-trace: %s: ", path);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}

/* Index of name in names[0..*n), appended when absent. Linear: labels,
 * programs and opcodes are few. */
static uint32_t intern(const char **names, uint32_t *n, const char *name) {
  for (uint32_t i = 0; i < *n; i++)
    if (!strcmp(names[i], name))
      return i;
  names[*n] = name;
  return (*n)++;
}

static uint64_t us_to_ns(double us) {
  return (uint64_t)llround(us * 1e3);
}

void tr_free(tr_trace *t) {
  json_decref(t->root);
  free(t->workers);
  free(t->start);
  free(t->end);
  free(t->worker);
  free(t->label);
  free(t->prog);
  free(t->args);
  free(t->pred_off);
  free(t->pred);
  free(t->succ_off);
  free(t->succ);
  free(t->op_off);
  free(t->op_id);
  free(t->op_ns);
  free(t->op_flops);
  free(t->op_ref_ns);
  free(t->labels);
  free(t->progs);
  free(t->ops);
  memset(t, 0, sizeof *t);
}

static int load_json(tr_trace *t, const char *path) {
  struct stat sb;
  if (stat(path, &sb))
    return fail(path, "cannot read: %s", strerror(errno));
  json_error_t je;
  t->root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (t->root)
    return 0;
  char where[96];
  snprintf(where, sizeof where, "line %d, column %d", je.line, je.column);
  if (sb.st_size == 0)
    return fail(path, "not a trace: the file is empty");
  /* a file cut short (a run killed while writing, a partial copy) ends
   * inside a value */
  if (strstr(je.text, "premature end of input"))
    return fail(path,
                "truncated: the JSON ends before it is complete (%s: %s); "
                "was the run interrupted while writing it?",
                where, je.text);
  return fail(path, "not a trace: not JSON (%s: %s)", where, je.text);
}

/* The "pto" object and its version. */
static int load_meta(tr_trace *t, const char *path) {
  if (!json_is_object(t->root) ||
      !json_is_array(json_object_get(t->root, "traceEvents")))
    return fail(path,
                "not a trace: JSON without a \"traceEvents\" array (expected "
                "a trace written by a PTO run: PTO_TRACE=FILE or "
                "pto_executable_write_trace)");
  t->pto = json_object_get(t->root, "pto");
  const char *fmt = json_string_value(json_object_get(t->pto, "format"));
  if (!json_is_object(t->pto) || !fmt || strcmp(fmt, "pto-trace"))
    return fail(path,
                "a Chrome trace, but not one PTO wrote with this version "
                "(no \"pto\" metadata object); re-run the workload with this "
                "PTO");
  json_int_t v = json_integer_value(json_object_get(t->pto, "version"));
  if (v != 2) {
    char vb[32];
    snprintf(vb, sizeof vb, "%lld", (long long)v);
    return fail(path, "trace format version %s; this pto-trace reads version 2",
                vb);
  }
  json_t *ws = json_object_get(t->pto, "workers");
  json_t *n = json_object_get(t->pto, "tasks");
  if (!json_is_array(ws) || !json_array_size(ws) || !json_is_integer(n) ||
      json_integer_value(n) < 0 || json_integer_value(n) >= UINT32_MAX)
    return fail(path, "not a valid PTO trace: \"pto\" lacks workers or a "
                      "task count");
  t->n_tasks = (uint32_t)json_integer_value(n);
  t->n_workers = (uint32_t)json_array_size(ws);
  t->makespan =
      (uint64_t)json_integer_value(json_object_get(t->pto, "makespan_ns"));
  t->workers = calloc(t->n_workers, sizeof *t->workers);
  if (!t->workers)
    return fail(path, "out of memory");
  size_t i;
  json_t *w;
  json_array_foreach(ws, i, w) {
    const char *s = json_string_value(json_object_get(w, "serves"));
    t->workers[i].serves = s ? s : "vector";
    json_t *pu = json_object_get(w, "pu");
    t->workers[i].pu = json_is_integer(pu) ? (int)json_integer_value(pu) : -1;
  }
  return 0;
}

static int alloc_tasks(tr_trace *t) {
  uint32_t n = t->n_tasks + 1;
  t->start = calloc(n, sizeof *t->start);
  t->end = calloc(n, sizeof *t->end);
  t->worker = calloc(n, sizeof *t->worker);
  t->label = calloc(n, sizeof *t->label);
  t->prog = calloc(n, sizeof *t->prog);
  t->args = calloc(n, sizeof *t->args);
  t->pred_off = calloc(n + 1, sizeof *t->pred_off);
  t->succ_off = calloc(n + 1, sizeof *t->succ_off);
  t->op_off = calloc(n + 1, sizeof *t->op_off);
  t->labels = calloc(n, sizeof *t->labels);
  t->progs = calloc(n, sizeof *t->progs);
  return t->start && t->end && t->worker && t->label && t->prog && t->args &&
                 t->pred_off && t->succ_off && t->op_off && t->labels &&
                 t->progs
             ? 0
             : -1;
}

/* Task k's optional map from the instructions it has time for (its "ops")
 * to a non-negative integer, "flops" or "ref"; when bounded, at most the
 * instruction's ns (the reference's time is a part of it). */
static int check_op_map(const char *path, uint32_t k, json_t *args,
                        const char *key, int bounded, const char *what) {
  json_t *m = json_object_get(args, key), *ops = json_object_get(args, "ops"),
         *v, *ns;
  const char *op;
  if (m && !json_is_object(m))
    return fail(path,
                "not a valid PTO trace: task %u has \"%s\" that are not an "
                "object",
                k, key);
  json_object_foreach(m, op, v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        !(ns = json_object_get(ops, op)) ||
        (bounded && json_integer_value(v) > json_integer_value(ns)))
      return fail(path, "not a valid PTO trace: task %u has \"%s\" of %s %s", k,
                  key, op, what);
  }
  return 0;
}

/* The task events: one per task, each id once. */
static int load_events(tr_trace *t, const char *path) {
  json_t *evs = json_object_get(t->root, "traceEvents");
  uint32_t seen = 0;
  size_t i, n_pred = 0, n_ops = 0;
  json_t *ev;
  char num[32], num2[32];
  json_array_foreach(evs, i, ev) {
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    if (!ph || strcmp(ph, "X"))
      continue;
    json_t *args = json_object_get(ev, "args");
    json_t *id = json_object_get(args, "task");
    json_t *ts = json_object_get(ev, "ts"), *dur = json_object_get(ev, "dur");
    json_t *tid = json_object_get(ev, "tid");
    json_t *prods = json_object_get(args, "producers");
    snprintf(num, sizeof num, "%zu", i);
    if (!json_is_integer(id) || !json_is_number(ts) || !json_is_number(dur) ||
        !json_is_integer(tid) || !json_is_array(prods))
      return fail(path,
                  "not a valid PTO trace: event %s lacks a task id, ts, dur, "
                  "tid or producers",
                  num);
    json_int_t k = json_integer_value(id), w = json_integer_value(tid);
    if (k < 0 || k >= t->n_tasks || t->args[k]) {
      snprintf(num2, sizeof num2, "%lld", (long long)k);
      return fail(path,
                  "not a valid PTO trace: event %s has task id %s, out of "
                  "range or seen before",
                  num, num2);
    }
    if (w < 0 || w >= t->n_workers) {
      snprintf(num2, sizeof num2, "%lld", (long long)w);
      return fail(path, "not a valid PTO trace: event %s on unknown worker %s",
                  num, num2);
    }
    t->args[k] = args;
    t->start[k] = us_to_ns(json_number_value(ts));
    t->end[k] = t->start[k] + us_to_ns(json_number_value(dur));
    t->worker[k] = (uint32_t)w;
    const char *l = json_string_value(json_object_get(ev, "name"));
    const char *p = json_string_value(json_object_get(args, "program"));
    t->label[k] = intern(t->labels, &t->n_labels, l ? l : "");
    t->prog[k] = intern(t->progs, &t->n_progs, p ? p : "");
    t->pred_off[k + 1] = (uint32_t)json_array_size(prods);
    n_pred += json_array_size(prods);
    n_ops += json_object_size(json_object_get(args, "ops"));
    seen++;
  }
  if (seen != t->n_tasks) {
    snprintf(num, sizeof num, "%u", seen);
    snprintf(num2, sizeof num2, "%u", t->n_tasks);
    return fail(path,
                "truncated or edited: %s task events, but the run had %s "
                "tasks",
                num, num2);
  }
  for (uint32_t k = 0; k < t->n_tasks; k++) {
    t->pred_off[k + 1] += t->pred_off[k];
    if (t->end[k] > t->makespan)
      t->makespan = t->end[k];
  }
  t->pred = malloc((n_pred + 1) * sizeof *t->pred);
  t->succ = malloc((n_pred + 1) * sizeof *t->succ);
  t->op_id = malloc((n_ops + 1) * sizeof *t->op_id);
  t->op_ns = malloc((n_ops + 1) * sizeof *t->op_ns);
  t->op_flops = malloc((n_ops + 1) * sizeof *t->op_flops);
  t->op_ref_ns = malloc((n_ops + 1) * sizeof *t->op_ref_ns);
  t->ops = malloc((n_ops + 1) * sizeof *t->ops);
  if (!t->pred || !t->succ || !t->op_id || !t->op_ns || !t->op_flops ||
      !t->op_ref_ns || !t->ops)
    return fail(path, "out of memory");
  uint32_t o = 0;
  for (uint32_t k = 0; k < t->n_tasks; k++) {
    json_t *prods = json_object_get(t->args[k], "producers"), *v;
    size_t j;
    json_array_foreach(prods, j, v) {
      json_int_t q = json_integer_value(v);
      if (!json_is_integer(v) || q < 0 || q >= t->n_tasks || q == k) {
        snprintf(num, sizeof num, "%u", k);
        return fail(path,
                    "not a valid PTO trace: task %s has a producer that is "
                    "not a task",
                    num);
      }
      t->pred[t->pred_off[k] + j] = (uint32_t)q;
      t->succ_off[q + 1]++;
    }
    t->op_off[k] = o;
    const char *op;
    /* version 2: the matmuls' floating-point operations, a count for an
     * instruction the task has time for; and, absent from older traces,
     * the part of an instruction's time spent in the scalar reference
     * (tileops/ref.c) rather than a SIMD kernel */
    if (check_op_map(path, k, t->args[k], "flops", 0,
                     "that are not a count of an instruction it has time "
                     "for") ||
        check_op_map(path, k, t->args[k], "ref", 1,
                     "that are not ns within its time in \"ops\""))
      return -1;
    json_t *flops = json_object_get(t->args[k], "flops"),
           *ref = json_object_get(t->args[k], "ref"),
           *ops = json_object_get(t->args[k], "ops");
    json_object_foreach(ops, op, v) {
      t->op_id[o] = intern(t->ops, &t->n_ops, op);
      t->op_flops[o] = (uint64_t)json_integer_value(json_object_get(flops, op));
      t->op_ref_ns[o] = (uint64_t)json_integer_value(json_object_get(ref, op));
      t->op_ns[o++] = (uint64_t)json_integer_value(v);
    }
  }
  t->op_off[t->n_tasks] = o;
  for (uint32_t k = 0; k < t->n_tasks; k++)
    t->succ_off[k + 1] += t->succ_off[k];
  uint32_t *fill = calloc(t->n_tasks + 1, sizeof *fill);
  if (!fill)
    return fail(path, "out of memory");
  for (uint32_t k = 0; k < t->n_tasks; k++)
    for (uint32_t j = t->pred_off[k]; j < t->pred_off[k + 1]; j++) {
      uint32_t q = t->pred[j];
      t->succ[t->succ_off[q] + fill[q]++] = k;
    }
  free(fill);
  return 0;
}

int tr_load(tr_trace *t, const char *path) {
  memset(t, 0, sizeof *t);
  t->path = path;
  if (load_json(t, path) || load_meta(t, path))
    goto fail;
  if (alloc_tasks(t)) {
    fail(path, "out of memory");
    goto fail;
  }
  if (load_events(t, path))
    goto fail;
  return 0;
fail:
  tr_free(t);
  return -1;
}

static void tensors_desc(json_t *arr, char *buf, size_t size, size_t *n) {
  size_t i;
  json_t *x;
  json_array_foreach(arr, i, x) {
    if (*n >= size)
      return;
    *n += (size_t)snprintf(buf + *n, size - *n, "%s%s %s[", i ? ", " : "",
                           json_string_value(json_object_get(x, "name")),
                           json_string_value(json_object_get(x, "dtype")));
    size_t j;
    json_t *d;
    json_array_foreach(json_object_get(x, "shape"), j, d) {
      if (*n < size)
        *n += (size_t)snprintf(buf + *n, size - *n, "%s%lld", j ? "," : "",
                               (long long)json_integer_value(d));
    }
    if (*n < size)
      *n += (size_t)snprintf(buf + *n, size - *n, "]");
  }
}

const char *tr_workload_desc(const tr_trace *t, char *buf, size_t size) {
  json_t *w = json_object_get(t->pto, "workload");
  if (!w) {
    snprintf(buf, size, "a task graph of %u tasks", t->n_tasks);
    return buf;
  }
  size_t n = (size_t)snprintf(buf, size, "'%s' (",
                              json_string_value(json_object_get(w, "program")));
  tensors_desc(json_object_get(w, "inputs"), buf, size, &n);
  if (n < size)
    n += (size_t)snprintf(buf + n, size - n, " -> ");
  tensors_desc(json_object_get(w, "outputs"), buf, size, &n);
  if (n < size)
    snprintf(buf + n, size - n, ")");
  return buf;
}
