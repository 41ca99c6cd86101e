/* pto-bench dsa: time per part from a traced run's swimlane, and the lines
 * and JSON fields under a case's row (per step: compile and run on both
 * PTO settings; per part: busy time and span). */
#include <math.h>
#include <string.h>

#include "bench/dsa.h"
#include "bench/sim.h"

const char *const dsa_part_names[DSA_PARTS] = {"mla_prolog", "indexer_prolog",
                                               "indexer", "attention"};

/* The part of a task's label: the part whose name is the label or its
 * first '.'-component, else DSA_OTHER. */
static int part_of(const char *label) {
  for (int k = 0; k < DSA_PARTS; k++) {
    size_t n = strlen(dsa_part_names[k]);
    if (!strncmp(label, dsa_part_names[k], n) &&
        (label[n] == '\0' || label[n] == '.'))
      return k;
  }
  return DSA_OTHER;
}

int dsa_parts_add(dsa_parts *p, const char *path, char *err, size_t size) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root) {
    snprintf(err, size, "%s:%d: %s", path, je.line, je.text);
    return -1;
  }
  double first[DSA_PARTS + 1], last[DSA_PARTS + 1], t_min = INFINITY,
                                                    t_max = -INFINITY;
  int seen[DSA_PARTS + 1] = {0};
  size_t i, n_x = 0;
  json_t *ev;
  json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    if (!ph || strcmp(ph, "X"))
      continue;
    const char *label = json_string_value(
        json_object_get(json_object_get(ev, "args"), "label"));
    const double t0 = json_number_value(json_object_get(ev, "ts")),
                 dur = json_number_value(json_object_get(ev, "dur"));
    const int k = part_of(label ? label : "");
    p->busy[k] += dur * 1e-3;
    if (!seen[k] || t0 < first[k])
      first[k] = t0;
    if (!seen[k] || t0 + dur > last[k])
      last[k] = t0 + dur;
    seen[k] = 1;
    t_min = t0 < t_min ? t0 : t_min;
    t_max = t0 + dur > t_max ? t0 + dur : t_max;
    n_x++;
  }
  json_decref(root);
  if (!n_x) {
    snprintf(err, size, "%s: no task events", path);
    return -1;
  }
  for (int k = 0; k <= DSA_PARTS; k++)
    if (seen[k])
      p->span[k] += (last[k] - first[k]) * 1e-3;
  p->makespan += (t_max - t_min) * 1e-3;
  p->traced++;
  return 0;
}

/* ---- under the row --------------------------------------------------------
 */

static json_t *stats_json(const bench_stats *s) {
  return json_pack("{s:f, s:f, s:f}", "median", s->median, "min", s->min, "max",
                   s->max);
}

static json_t *parts_json(const dsa_parts *p) {
  json_t *o = json_object();
  for (int k = 0; k <= DSA_PARTS; k++)
    json_object_set_new(
        o, k < DSA_PARTS ? dsa_part_names[k] : "other",
        json_pack("{s:f, s:f}", "busy_ms", p->busy[k], "span_ms", p->span[k]));
  json_object_set_new(o, "makespan_ms", json_real(p->makespan));
  json_object_set_new(o, "traced_steps", json_integer(p->traced));
  return o;
}

void dsa_after(const bench_case_opts *x, const bench_case *bc,
               const bench_case_result *res, FILE *f, json_t *j) {
  const dsa_case *c = (const dsa_case *)bc;
  const int ok = c && c->ran_steps == c->steps && res->pto_checked;
  const int bar_ok = ok && c->bar_checked;
#define NUM_OR_NULL(key, have, val)                                            \
  json_object_set_new(j, key, (have) ? json_real(val) : json_null())
  NUM_OR_NULL("pto_barrier_ms", bar_ok, c->total[1].median);
  NUM_OR_NULL("pto_barrier_ms_min", bar_ok, c->total[1].min);
  NUM_OR_NULL("pto_barrier_ms_max", bar_ok, c->total[1].max);
  NUM_OR_NULL("barrier_ratio", bar_ok, c->total[1].median / c->total[0].median);
#undef NUM_OR_NULL
  json_object_set_new(j, "barrier_check",
                      json_string(!c || !c->ran_steps ? "failed"
                                  : c->bar_wrong      ? "wrong"
                                  : c->bar_checked    ? "ok"
                                                      : "failed"));
  json_object_set_new(j, "compile_counted",
                      json_boolean(c && c->compile_counted));
  if (c && c->dynamic) { /* --dynamic: the steps' medians, summed */
    double dyn = 0, st = 0;
    for (int s = 0; s < c->ran_steps; s++) {
      dyn += c->step[s].dyn.median;
      st += c->step[s].dyn_static.median;
    }
    const int dok = ok && c->dyn_checked;
#define NUM_OR_NULL(key, have, val)                                            \
  json_object_set_new(j, key, (have) ? json_real(val) : json_null())
    NUM_OR_NULL("dynamic_ms", dok, dyn);
    NUM_OR_NULL("dynamic_static_ms", dok, st);
    NUM_OR_NULL("dynamic_ratio", dok, dyn / st);
    NUM_OR_NULL("dynamic_compile_ms", dok, c->dyn_compile_ms);
#undef NUM_OR_NULL
    json_object_set_new(j, "dynamic_check",
                        json_string(c->dyn_wrong     ? "wrong"
                                    : c->dyn_checked ? "ok"
                                                     : "failed"));
    if (dok)
      fprintf(f,
              "  --dynamic: the serving program (one compile of %.0f ms, %u "
              "tasks, for every step) %.2f ms over the steps, the steps' own "
              "MPMD programs %.2f ms in the same turns: %.3fx (below 1: "
              "dynamic is faster)\n",
              c->dyn_compile_ms, c->dyn_tasks, dyn, st, dyn / st);
  }
  if (x->sim && c && c->ran_steps) { /* --simulate: both settings */
    double sim[2] = {0, 0}, meas[2] = {0, 0};
    for (int s = 0; s < c->ran_steps; s++)
      for (int v = 0; v < 2; v++) {
        sim[v] += c->step[s].sim_ms[v];
        meas[v] += c->step[s].run[v].median;
      }
    if (sim[0] > 0 && sim[1] > 0) {
      fprintf(f,
              "  simulated on %s: MPMD %.3f ms, stage barriers %.3f ms: "
              "bar/PTO %.2fx (measured, the steps' medians without their "
              "compiles, %.3f and %.3f ms: simulated / measured %.3f and "
              "%.3f)\n",
              x->sim->name, sim[0], sim[1], sim[1] / sim[0], meas[0], meas[1],
              meas[0] > 0 ? sim[0] / meas[0] : 0,
              meas[1] > 0 ? sim[1] / meas[1] : 0);
      json_object_set_new(j, "sim_ms", json_real(sim[0]));
      json_object_set_new(j, "sim_barrier_ms", json_real(sim[1]));
      json_object_set_new(j, "sim_machine", json_string(x->sim->name));
      json_object_set_new(j, "sim_barrier_ratio", json_real(sim[1] / sim[0]));
      json_object_set_new(j, "sim_ratio", meas[0] > 0
                                              ? json_real(sim[0] / meas[0])
                                              : json_null());
    }
  }
  if (!c || !c->ran_steps)
    return;
  json_t *steps = json_array();
  double compile_bar = 0;
  for (int s = 0; s < c->ran_steps; s++) {
    const dsa_step_result *r = &c->step[s];
    compile_bar += r->compile_ms[1];
    json_array_append_new(
        steps,
        json_pack("{s:I, s:I, s:f, s:f, s:o, s:o, s:i, s:i}", "len_min",
                  (json_int_t)r->len_min, "len_max", (json_int_t)r->len_max,
                  "compile_ms", r->compile_ms[0], "compile_barrier_ms",
                  r->compile_ms[1], "pto_run_ms", stats_json(&r->run[0]),
                  "pto_barrier_run_ms", stats_json(&r->run[1]), "tasks",
                  (int)r->tasks[0], "tasks_barrier", (int)r->tasks[1]));
  }
  json_object_set_new(j, "steps", steps);
  json_object_set_new(j, "compile_barrier_ms", json_real(compile_bar));
  json_object_set_new(j, "parts", parts_json(&c->parts[0]));
  json_object_set_new(j, "parts_barrier", parts_json(&c->parts[1]));

  fprintf(f, "  %-5s %13s %9s %9s %20s %20s %7s\n", "step", "len", "compile",
          "+barrier", "PTO run ms [min-max]", "barrier ms [min-max]",
          "bar/PTO");
  for (int s = 0; s < c->ran_steps; s++) {
    const dsa_step_result *r = &c->step[s];
    char len[32], a[48], b[48];
    snprintf(len, sizeof len, "%lld-%lld", (long long)r->len_min,
             (long long)r->len_max);
    snprintf(a, sizeof a, "%.2f [%.2f-%.2f]", r->run[0].median, r->run[0].min,
             r->run[0].max);
    snprintf(b, sizeof b, r->run[1].n ? "%.2f [%.2f-%.2f]" : "-",
             r->run[1].median, r->run[1].min, r->run[1].max);
    fprintf(f, "  %-5d %13s %9.1f %9.1f %20s %20s %6.2fx\n", s + 1, len,
            r->compile_ms[0], r->compile_ms[1], a, b,
            r->run[1].n ? r->run[1].median / r->run[0].median : 0);
  }
  if (c->compile_counted)
    fprintf(f, "  (each step is a new shape, so a new compile: PTO's ms "
               "above count it)\n");
  fprintf(f, "  %-15s %12s %12s %14s %14s  (one traced run per step, ms)\n",
          "part", "MPMD busy", "MPMD span", "barrier busy", "barrier span");
  for (int k = 0; k <= DSA_PARTS; k++)
    fprintf(f, "  %-15s %12.2f %12.2f %14.2f %14.2f\n",
            k < DSA_PARTS ? dsa_part_names[k] : "other", c->parts[0].busy[k],
            c->parts[0].span[k], c->parts[1].busy[k], c->parts[1].span[k]);
  fprintf(f, "  %-15s %12s %12.2f %14s %14.2f\n", "makespan", "",
          c->parts[0].makespan, "", c->parts[1].makespan);
}
