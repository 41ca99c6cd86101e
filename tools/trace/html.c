/* `pto-trace html`: one self-contained HTML file, the viewer (viewer.html,
 * compiled in) with the trace's data in a JSON script element: columns of
 * numbers per task, names interned once. No network, no external script
 * or font. */
#include <stdlib.h>
#include <string.h>

#include "trace/tool.h"

#define DATA_MARK "/*PTO_TRACE_DATA*/"

static json_t *u64s(const uint64_t *v, uint32_t n, uint64_t base) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < n; i++)
    json_array_append_new(a, json_integer((json_int_t)(v[i] - base)));
  return a;
}

static json_t *u32s(const uint32_t *v, uint32_t n) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < n; i++)
    json_array_append_new(a, json_integer(v[i]));
  return a;
}

static json_t *strs(const char *const *v, uint32_t n) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < n; i++)
    json_array_append_new(a, json_string(v[i]));
  return a;
}

static json_t *viewer_data(const tr_trace *t, const tr_analysis *a) {
  json_t *d = json_object();
  char wl[512];
  uint32_t n = t->n_tasks;
  json_object_set_new(d, "title", json_string(t->path));
  json_object_set_new(d, "workload",
                      json_string(tr_workload_desc(t, wl, sizeof wl)));
  json_object_set(d, "machine", json_object_get(t->pto, "machine"));
  json_object_set_new(d, "makespan", json_integer((json_int_t)t->makespan));
  json_t *ws = json_array();
  for (uint32_t w = 0; w < t->n_workers; w++)
    json_array_append_new(ws, json_pack("{s:s, s:i}", "serves",
                                        t->workers[w].serves, "pu",
                                        t->workers[w].pu));
  json_object_set_new(d, "workers", ws);
  json_object_set_new(d, "labels", strs(t->labels, t->n_labels));
  json_object_set_new(d, "programs", strs(t->progs, t->n_progs));
  json_object_set_new(d, "ops", strs(t->ops, t->n_ops));
  json_object_set_new(d, "start", u64s(t->start, n, 0));
  uint64_t *dur = malloc((n + 1) * sizeof *dur);
  for (uint32_t k = 0; dur && k < n; k++)
    dur[k] = t->end[k] - t->start[k];
  json_object_set_new(d, "dur", dur ? u64s(dur, n, 0) : NULL);
  free(dur);
  json_object_set_new(d, "worker", u32s(t->worker, n));
  json_object_set_new(d, "label", u32s(t->label, n));
  json_object_set_new(d, "prog", u32s(t->prog, n));
  json_object_set_new(d, "pred_off", u32s(t->pred_off, n + 1));
  json_object_set_new(d, "pred", u32s(t->pred, t->pred_off[n]));
  json_object_set_new(d, "op_off", u32s(t->op_off, n + 1));
  json_object_set_new(d, "op_id", u32s(t->op_id, t->op_off[n]));
  json_object_set_new(d, "op_ns", u64s(t->op_ns, t->op_off[n], 0));
  json_object_set_new(d, "op_flops", u64s(t->op_flops, t->op_off[n], 0));
  json_object_set_new(d, "op_ref", u64s(t->op_ref_ns, t->op_off[n], 0));
  json_t *inst = json_array(), *win = json_array();
  for (uint32_t k = 0; k < n; k++) {
    json_t *i = json_object_get(t->args[k], "instances");
    json_array_append_new(inst, json_integer(i ? json_integer_value(i) : 1));
    json_t *w = json_object_get(t->args[k], "windows");
    json_array_append(win, w ? w : json_null());
  }
  json_object_set_new(d, "instances", inst);
  json_object_set_new(d, "windows", win);
  json_object_set_new(d, "critical", u32s(a->path, a->n_path));
  json_object_set(d, "config", json_object_get(t->pto, "config"));
  json_object_set(d, "tiles", json_object_get(t->pto, "tiles"));
  return d;
}

int tr_html(const tr_trace *t, FILE *f) {
  const char *tpl = pto_trace_viewer;
  const char *mark = strstr(tpl, DATA_MARK);
  if (!mark) {
    fprintf(stderr, "pto-trace: the compiled-in viewer has no data mark\n");
    return -1;
  }
  tr_analysis a;
  if (tr_analyse(t, &a, 0))
    return -1;
  json_t *d = viewer_data(t, &a);
  tr_analysis_free(&a);
  if (!d)
    return -1;
  fwrite(tpl, 1, (size_t)(mark - tpl), f);
  /* "/" escaped, so no "</script>" can end the data element early */
  int rc = json_dumpf(d, f, JSON_COMPACT | JSON_ESCAPE_SLASH);
  json_decref(d);
  const char *rest = mark + strlen(DATA_MARK);
  fwrite(rest, 1, pto_trace_viewer_len - (unsigned long)(rest - tpl), f);
  return rc || ferror(f) ? -1 : 0;
}
