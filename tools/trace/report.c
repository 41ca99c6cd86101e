/* `pto-trace report`: the analysis as tables, or as one JSON object. */
#include <stdlib.h>
#include <string.h>

#include "trace/model.h"

#define US(ns) ((double)(ns) / 1e3)

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const char *label_name(const tr_trace *t, uint32_t l) {
  return t->labels[l][0] ? t->labels[l] : "(none)";
}

/* "task 12 (softmax, worker 1)" */
static const char *task_desc(const tr_trace *t, uint32_t k, char *buf,
                             size_t size) {
  snprintf(buf, size, "task %u (%s, worker %u)", k, label_name(t, t->label[k]),
           t->worker[k]);
  return buf;
}

/* The critical path's time per label, in path order of first appearance. */
typedef struct path_label {
  uint32_t label, tasks;
  uint64_t ns;
} path_label;

static uint32_t path_labels(const tr_trace *t, const tr_analysis *a,
                            path_label *out) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < a->n_path; i++) {
    uint32_t k = a->path[i], j = 0;
    while (j < n && out[j].label != t->label[k])
      j++;
    if (j == n)
      out[n++] = (path_label){t->label[k], 0, 0};
    out[j].tasks++;
    out[j].ns += t->end[k] - t->start[k];
  }
  return n;
}

/* When task k became ready: its last producer's end (0 for a root). */
static uint64_t ready_at(const tr_trace *t, uint32_t k) {
  uint64_t r = 0;
  for (uint32_t j = t->pred_off[k]; j < t->pred_off[k + 1]; j++)
    r = t->end[t->pred[j]] > r ? t->end[t->pred[j]] : r;
  return r;
}

#define PATH_SHOWN 12 /* critical-path tasks listed one by one */

int tr_report(const tr_trace *t, const tr_analysis *a, int json, FILE *f) {
  if (json) {
    json_t *o = tr_report_json(t, a);
    if (!o)
      return -1;
    int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(o);
    return rc;
  }
  char wl[512], b1[128], b2[128];
  fprintf(f, "trace     %s\nworkload  %s on '%s'\n", t->path,
          tr_workload_desc(t, wl, sizeof wl),
          json_string_value(json_object_get(t->pto, "machine")));
  fprintf(f, "tasks     %u on %u workers, %u dependencies\n", t->n_tasks,
          t->n_workers, t->pred_off[t->n_tasks]);
  fprintf(f, "makespan  %10.1f us\n", US(a->makespan));
  fprintf(f, "critical  %10.1f us  %5.1f%% of the makespan, %u tasks\n",
          US(a->critical), pct(a->critical, a->makespan), a->n_path);
  fprintf(f,
          "tail      %10.1f us  %5.1f%% of the makespan: from %.1f us, "
          "when the first worker went idle for good; %u tasks started in "
          "it\n",
          US(a->makespan - a->tail_from),
          pct(a->makespan - a->tail_from, a->makespan), US(a->tail_from),
          a->tail_tasks);

  fprintf(f, "\n%-8s %-12s %5s %8s %12s %7s\n", "worker", "core type", "pu",
          "tasks", "busy us", "busy");
  for (uint32_t w = 0; w < t->n_workers; w++)
    fprintf(f, "%-8u %-12s %5d %8u %12.1f %6.1f%%\n", w, t->workers[w].serves,
            t->workers[w].pu, a->count[w], US(a->busy[w]),
            pct(a->busy[w], a->makespan));
  fprintf(f, "\n%-21s %5s %8s %12s %7s\n", "core type", "", "workers",
          "busy us", "busy");
  for (uint32_t g = 0; g < a->n_groups; g++)
    fprintf(f, "%-21s %5s %8u %12.1f %6.1f%%\n", a->group_name[g], "",
            a->group_workers[g], US(a->group_busy[g]),
            pct(a->group_busy[g], a->makespan * a->group_workers[g]));

  fprintf(f, "\n%-28s %8s %12s %7s %10s\n", "label", "tasks", "time us",
          "share", "mean us");
  for (uint32_t i = 0; i < t->n_labels; i++) {
    const tr_label_stat *s = &a->labels[i];
    fprintf(f, "%-28s %8u %12.1f %6.1f%% %10.2f\n", label_name(t, s->label),
            s->tasks, US(s->ns), pct(s->ns, a->busy_total),
            s->tasks ? US(s->ns) / s->tasks : 0.0);
  }
  if (a->n_label_ops) {
    /* the reference's share only when some instruction ran on it: the
     * usual report keeps its columns */
    fprintf(f, "\n%-28s %-22s %12s %9s %9s%s\n", "label", "instruction",
            "time us", "of label", "GFLOP/s", a->ref_total ? " reference" : "");
    for (uint32_t i = 0; i < a->n_label_ops; i++) {
      const tr_label_op *r = &a->label_ops[i];
      uint64_t total = 0;
      for (uint32_t j = 0; j < a->n_label_ops; j++)
        if (a->label_ops[j].label == r->label)
          total += a->label_ops[j].ns;
      int first = i == 0 || a->label_ops[i - 1].label != r->label;
      /* matmuls: GFLOP/s per worker; the share on the reference */
      char rate[32] = "", ref[32] = "";
      if (r->ref_ns)
        snprintf(ref, sizeof ref, " %8.1f%%", pct(r->ref_ns, r->ns));
      if (tr_rate(r) > 0)
        snprintf(rate, sizeof rate, " %9.1f", tr_rate(r));
      else if (r->ref_ns) /* keeps the reference in its column */
        snprintf(rate, sizeof rate, " %9s", "");
      fprintf(f, "%-28s %-22s %12.1f %8.1f%%%s%s\n",
              first ? label_name(t, r->label) : "",
              r->op < t->n_ops ? t->ops[r->op] : "(executor)", US(r->ns),
              pct(r->ns, total), rate, ref);
    }
    if (a->ref_total)
      fprintf(f, "reference: the share of the instruction's time in the "
                 "scalar reference (tileops/ref.c):\n  its SIMD version "
                 "cannot take these tiles, or the ISA has none; expect it "
                 "10-100x slower than SIMD\n");
  }

  path_label *pl = malloc((a->n_path + 1) * sizeof *pl);
  if (!pl)
    return -1;
  uint32_t n_pl = path_labels(t, a, pl);
  fprintf(f,
          "\ncritical path: %u tasks, %.1f us of task time (%.1f%% of "
          "the makespan)\n",
          a->n_path, US(a->critical), pct(a->critical, a->makespan));
  for (uint32_t i = 0; i < n_pl; i++)
    fprintf(f, "  %-28s %6u tasks %12.1f us\n", label_name(t, pl[i].label),
            pl[i].tasks, US(pl[i].ns));
  free(pl);
  for (uint32_t i = 0; i < a->n_path && i < PATH_SHOWN; i++) {
    uint32_t k = a->path[i];
    fprintf(f, "  %s%-40s %-28s %10.1f us  at %.1f us\n", i ? "-> " : "   ",
            task_desc(t, k, b1, sizeof b1), t->progs[t->prog[k]],
            US(t->end[k] - t->start[k]), US(t->start[k]));
  }
  if (a->n_path > PATH_SHOWN)
    fprintf(f, "   ... %u more\n", a->n_path - PATH_SHOWN);

  fprintf(f, "\nlargest idle gaps\n%-8s %10s %10s %10s  %s\n", "worker",
          "from us", "to us", "idle us", "then ran / waiting for");
  for (uint32_t i = 0; i < a->n_gaps; i++) {
    const tr_gap *g = &a->gaps[i];
    fprintf(f, "%-8u %10.1f %10.1f %10.1f  ", g->worker, US(g->from), US(g->to),
            US(g->to - g->from));
    if (g->next == UINT32_MAX)
      fprintf(f, "nothing: idle to the end (the tail)\n");
    else if (g->waited != UINT32_MAX)
      fprintf(f, "%s, waiting for its producer %s to end at %.1f us\n",
              task_desc(t, g->next, b1, sizeof b1),
              task_desc(t, g->waited, b2, sizeof b2), US(t->end[g->waited]));
    else
      fprintf(f,
              "%s, ready since %.1f us: no producer to wait for "
              "(wake-up or queue latency)\n",
              task_desc(t, g->next, b1, sizeof b1), US(ready_at(t, g->next)));
  }
  return ferror(f) ? -1 : 0;
}

static json_t *jtask(const tr_trace *t, uint32_t k) {
  return json_pack("{s:I, s:s, s:s, s:I, s:f, s:f}", "task", (json_int_t)k,
                   "label", t->labels[t->label[k]], "program",
                   t->progs[t->prog[k]], "worker", (json_int_t)t->worker[k],
                   "start_us", US(t->start[k]), "dur_us",
                   US(t->end[k] - t->start[k]));
}

json_t *tr_report_json(const tr_trace *t, const tr_analysis *a) {
  json_t *o = json_object(), *ws = json_array(), *gs = json_array(),
         *ls = json_array(), *lo = json_array(), *path = json_array(),
         *gaps = json_array();
  json_object_set_new(o, "trace", json_string(t->path));
  json_object_set(o, "workload", json_object_get(t->pto, "workload"));
  json_object_set(o, "machine", json_object_get(t->pto, "machine"));
  json_object_set_new(o, "tasks", json_integer(t->n_tasks));
  json_object_set_new(o, "workers", json_integer(t->n_workers));
  json_object_set_new(o, "makespan_us", json_real(US(a->makespan)));
  json_object_set_new(o, "critical_path_us", json_real(US(a->critical)));
  json_object_set_new(o, "critical_path_share",
                      json_real(pct(a->critical, a->makespan) / 100));
  json_object_set_new(o, "tail_us", json_real(US(a->makespan - a->tail_from)));
  json_object_set_new(o, "tail_from_us", json_real(US(a->tail_from)));
  json_object_set_new(o, "tail_tasks", json_integer(a->tail_tasks));
  for (uint32_t w = 0; w < t->n_workers; w++)
    json_array_append_new(
        ws,
        json_pack("{s:I, s:s, s:i, s:I, s:f, s:f}", "worker", (json_int_t)w,
                  "core", t->workers[w].serves, "pu", t->workers[w].pu, "tasks",
                  (json_int_t)a->count[w], "busy_us", US(a->busy[w]), "busy",
                  pct(a->busy[w], a->makespan) / 100));
  json_object_set_new(o, "per_worker", ws);
  for (uint32_t g = 0; g < a->n_groups; g++)
    json_array_append_new(
        gs, json_pack("{s:s, s:I, s:f, s:f}", "core", a->group_name[g],
                      "workers", (json_int_t)a->group_workers[g], "busy_us",
                      US(a->group_busy[g]), "busy",
                      pct(a->group_busy[g], a->makespan * a->group_workers[g]) /
                          100));
  json_object_set_new(o, "per_core_type", gs);
  for (uint32_t i = 0; i < t->n_labels; i++)
    json_array_append_new(ls,
                          json_pack("{s:s, s:I, s:f, s:f}", "label",
                                    t->labels[a->labels[i].label], "tasks",
                                    (json_int_t)a->labels[i].tasks, "time_us",
                                    US(a->labels[i].ns), "share",
                                    pct(a->labels[i].ns, a->busy_total) / 100));
  json_object_set_new(o, "per_label", ls);
  for (uint32_t i = 0; i < a->n_label_ops; i++) {
    const tr_label_op *r = &a->label_ops[i];
    json_t *row = json_pack(
        "{s:s, s:s, s:f}", "label", t->labels[r->label], "instruction",
        r->op < t->n_ops ? t->ops[r->op] : "(executor)", "time_us", US(r->ns));
    json_object_set_new(row, "gflops",
                        tr_rate(r) > 0 ? json_real(tr_rate(r)) : json_null());
    json_object_set_new(row, "reference_us", json_real(US(r->ref_ns)));
    json_array_append_new(lo, row);
  }
  json_object_set_new(o, "per_label_instruction", lo);
  for (uint32_t i = 0; i < a->n_path; i++)
    json_array_append_new(path, jtask(t, a->path[i]));
  json_object_set_new(o, "critical_path", path);
  for (uint32_t i = 0; i < a->n_gaps; i++) {
    const tr_gap *g = &a->gaps[i];
    json_t *x = json_pack("{s:I, s:f, s:f, s:f}", "worker",
                          (json_int_t)g->worker, "from_us", US(g->from),
                          "to_us", US(g->to), "idle_us", US(g->to - g->from));
    json_object_set_new(
        x, "then_ran", g->next == UINT32_MAX ? json_null() : jtask(t, g->next));
    json_object_set_new(x, "waiting_for",
                        g->waited == UINT32_MAX ? json_null()
                                                : jtask(t, g->waited));
    json_array_append_new(gaps, x);
  }
  json_object_set_new(o, "idle_gaps", gaps);
  return o;
}
