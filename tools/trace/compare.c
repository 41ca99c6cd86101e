/* `pto-trace compare A B`: two traces of one workload, before and after a
 * change: makespan ratio, per-label time and task counts, busy fractions,
 * the matmul instructions' rates, the share of each instruction's time in
 * the scalar reference, and the configuration keys that differ. */
#include <stdlib.h>
#include <string.h>

#include "trace/model.h"
#include "trace/tool.h"

#define US(ns) ((double)(ns) / 1e3)

/* ---- configuration keys ----------------------------------------------------
 */

typedef struct kv {
  char *key, *val;
} kv;

typedef struct kvs {
  kv *v;
  size_t n, cap;
} kvs;

static void kvs_add(kvs *s, const char *key, char *val) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    kv *v = realloc(s->v, cap * sizeof *v);
    if (!v) {
      free(val);
      return;
    }
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n].key = strdup(key);
  s->v[s->n++].val = val;
}

static void kvs_free(kvs *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->v[i].key);
    free(s->v[i].val);
  }
  free(s->v);
}

/* Objects become dotted keys; anything else is a value, as compact JSON. */
static void flatten(kvs *s, const char *prefix, json_t *v) {
  if (json_is_object(v)) { /* an empty object adds no key */
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      char key[512];
      snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
      flatten(s, key, x);
    }
    return;
  }
  kvs_add(s, prefix, json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY));
}

static int kv_cmp(const void *x, const void *y) {
  return strcmp(((const kv *)x)->key, ((const kv *)y)->key);
}

/* What a run was configured with: the config, the tile shape of every
 * label and op, and the workers. */
static void config_keys(const tr_trace *t, kvs *s) {
  flatten(s, "config", json_object_get(t->pto, "config"));
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(t->pto, "tiles"), i, x) {
    char key[512];
    const char *l = json_string_value(json_object_get(x, "label"));
    snprintf(key, sizeof key, "tile.%s.%s", l && *l ? l : "(none)",
             json_string_value(json_object_get(x, "op")));
    kvs_add(
        s, key,
        json_dumps(json_object_get(x, "tile"), JSON_COMPACT | JSON_ENCODE_ANY));
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%u", t->n_workers);
  kvs_add(s, "workers", strdup(buf));
  qsort(s->v, s->n, sizeof *s->v, kv_cmp);
}

/* ---- comparison
 * --------------------------------------------------------------- */

static double ratio(double b, double a) {
  return a > 0 ? b / a : 0;
}

static uint32_t find_label(const tr_trace *t, const char *l) {
  for (uint32_t i = 0; i < t->n_labels; i++)
    if (!strcmp(t->labels[i], l))
      return i;
  return UINT32_MAX;
}

static const tr_label_stat *stat_of(const tr_analysis *a, uint32_t n,
                                    uint32_t label) {
  for (uint32_t i = 0; i < n; i++)
    if (a->labels[i].label == label)
      return &a->labels[i];
  return NULL;
}

static double busy_of(const tr_analysis *a, const char *group) {
  for (uint32_t g = 0; g < a->n_groups; g++)
    if (!strcmp(a->group_name[g], group))
      return a->makespan && a->group_workers[g]
                 ? (double)a->group_busy[g] /
                       ((double)a->makespan * a->group_workers[g])
                 : 0;
  return 0;
}

/* Label's instruction op in trace T, or NULL when T has none. */
static const tr_label_op *label_op_of(const tr_trace *T, const tr_analysis *x,
                                      const char *label, const char *op) {
  for (uint32_t i = 0; i < x->n_label_ops; i++) {
    const tr_label_op *r = &x->label_ops[i];
    if (r->op < T->n_ops && !strcmp(T->labels[r->label], label) &&
        !strcmp(T->ops[r->op], op))
      return r;
  }
  return NULL;
}

/* The rate of label's matmul instruction op in trace T (GFLOP/s per
 * worker: its flops over its ns), or 0 when T has none. */
static double rate_of(const tr_trace *T, const tr_analysis *x,
                      const char *label, const char *op) {
  const tr_label_op *r = label_op_of(T, x, label, op);
  return r ? tr_rate(r) : 0;
}

/* The share of label's instruction op's time in the scalar reference in
 * trace T, 0 to 1 (0 when T has none). */
static double ref_share_of(const tr_trace *T, const tr_analysis *x,
                           const char *label, const char *op) {
  const tr_label_op *r = label_op_of(T, x, label, op);
  return r && r->ns ? (double)r->ref_ns / (double)r->ns : 0;
}

static json_t *real_or_null(double v) {
  return v > 0 ? json_real(v) : json_null();
}

int tr_compare(const tr_trace *A, const tr_trace *B, int json, FILE *f) {
  tr_analysis a, b;
  if (tr_analyse(A, &a, 0))
    return -1;
  if (tr_analyse(B, &b, 0)) {
    tr_analysis_free(&a);
    return -1;
  }
  kvs ka = {0}, kb = {0};
  config_keys(A, &ka);
  config_keys(B, &kb);
  json_t *o = json_object(), *labels = json_array(), *cfg = json_array(),
         *busy = json_array(), *rates = json_array(), *refs = json_array();
  json_object_set_new(o, "a", json_string(A->path));
  json_object_set_new(o, "b", json_string(B->path));
  json_object_set(o, "workload", json_object_get(A->pto, "workload"));
  json_t *m = json_pack("{s:f, s:f, s:f}", "a_us", US(a.makespan), "b_us",
                        US(b.makespan), "ratio",
                        ratio((double)b.makespan, (double)a.makespan));
  json_object_set_new(o, "makespan", m);
  json_object_set_new(o, "critical_path",
                      json_pack("{s:f, s:f, s:f}", "a_us", US(a.critical),
                                "b_us", US(b.critical), "ratio",
                                ratio((double)b.critical, (double)a.critical)));
  json_object_set_new(o, "tail",
                      json_pack("{s:f, s:f}", "a_us",
                                US(a.makespan - a.tail_from), "b_us",
                                US(b.makespan - b.tail_from)));
  json_object_set_new(o, "tasks",
                      json_pack("{s:I, s:I}", "a", (json_int_t)A->n_tasks, "b",
                                (json_int_t)B->n_tasks));
  /* core types of either */
  for (int side = 0; side < 2; side++) {
    const tr_analysis *x = side ? &b : &a;
    for (uint32_t g = 0; g < x->n_groups; g++) {
      const char *name = x->group_name[g];
      if (side && busy_of(&a, name) > 0)
        continue; /* listed from A */
      json_array_append_new(busy, json_pack("{s:s, s:f, s:f}", "core", name,
                                            "a", busy_of(&a, name), "b",
                                            busy_of(&b, name)));
    }
  }
  json_object_set_new(o, "busy", busy);
  /* labels of A by time, then those only B has */
  for (int side = 0; side < 2; side++) {
    const tr_trace *T = side ? B : A;
    const tr_analysis *x = side ? &b : &a;
    for (uint32_t i = 0; i < T->n_labels; i++) {
      const char *l = T->labels[x->labels[i].label];
      uint32_t la = find_label(A, l), lb = find_label(B, l);
      if (side && la != UINT32_MAX)
        continue;
      const tr_label_stat *sa =
          la == UINT32_MAX ? NULL : stat_of(&a, A->n_labels, la);
      const tr_label_stat *sb =
          lb == UINT32_MAX ? NULL : stat_of(&b, B->n_labels, lb);
      json_array_append_new(
          labels,
          json_pack(
              "{s:s, s:I, s:I, s:f, s:f, s:f}", "label", l, "tasks_a",
              (json_int_t)(sa ? sa->tasks : 0), "tasks_b",
              (json_int_t)(sb ? sb->tasks : 0), "time_a_us",
              US(sa ? sa->ns : 0), "time_b_us", US(sb ? sb->ns : 0), "ratio",
              ratio((double)(sb ? sb->ns : 0), (double)(sa ? sa->ns : 0))));
    }
  }
  json_object_set_new(o, "labels", labels);
  /* the matmuls' rates per label and instruction: A's, then B's only */
  for (int side = 0; side < 2; side++) {
    const tr_trace *T = side ? B : A;
    const tr_analysis *x = side ? &b : &a;
    for (uint32_t k = 0; k < x->n_label_ops; k++) {
      const tr_label_op *r = &x->label_ops[k];
      if (r->op >= T->n_ops || tr_rate(r) == 0)
        continue;
      const char *l = T->labels[r->label], *op = T->ops[r->op];
      const double ga = rate_of(A, &a, l, op), gb = rate_of(B, &b, l, op);
      if (side && ga > 0)
        continue;
      json_t *row = json_pack("{s:s, s:s}", "label", l, "instruction", op);
      json_object_set_new(row, "gflops_a", real_or_null(ga));
      json_object_set_new(row, "gflops_b", real_or_null(gb));
      json_object_set_new(row, "ratio",
                          real_or_null(ga > 0 && gb > 0 ? gb / ga : 0));
      json_array_append_new(rates, row);
    }
  }
  json_object_set_new(o, "matmul_rates", rates);
  /* the instructions either side ran (in part) on the scalar reference */
  for (int side = 0; side < 2; side++) {
    const tr_trace *T = side ? B : A;
    const tr_analysis *x = side ? &b : &a;
    for (uint32_t k = 0; k < x->n_label_ops; k++) {
      const tr_label_op *r = &x->label_ops[k];
      if (r->op >= T->n_ops || !r->ref_ns)
        continue;
      const char *l = T->labels[r->label], *op = T->ops[r->op];
      const double ra = ref_share_of(A, &a, l, op),
                   rb = ref_share_of(B, &b, l, op);
      if (side && ra > 0)
        continue;
      json_array_append_new(refs,
                            json_pack("{s:s, s:s, s:f, s:f}", "label", l,
                                      "instruction", op, "a", ra, "b", rb));
    }
  }
  json_object_set_new(o, "reference_shares", refs);
  /* configuration keys that differ (or that one side lacks) */
  size_t i = 0, j = 0;
  while (i < ka.n || j < kb.n) {
    int c = i == ka.n ? 1 : j == kb.n ? -1 : strcmp(ka.v[i].key, kb.v[j].key);
    const char *key = c <= 0 ? ka.v[i].key : kb.v[j].key;
    const char *va = c <= 0 ? ka.v[i].val : NULL;
    const char *vb = c >= 0 ? kb.v[j].val : NULL;
    if (!va || !vb || strcmp(va, vb))
      json_array_append_new(cfg, json_pack("{s:s, s:s, s:s}", "key", key, "a",
                                           va ? va : "-", "b", vb ? vb : "-"));
    i += c <= 0;
    j += c >= 0;
  }
  json_object_set_new(o, "config_differences", cfg);

  int rc = 0;
  if (json) {
    rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
  } else {
    char wl[512];
    fprintf(f, "A  %s\nB  %s\nworkload %s\n\n", A->path, B->path,
            tr_workload_desc(A, wl, sizeof wl));
    fprintf(f, "%-24s %12s %12s %8s\n", "", "A", "B", "B/A");
    fprintf(f, "%-24s %12.1f %12.1f %8.3f", "makespan us", US(a.makespan),
            US(b.makespan), ratio((double)b.makespan, (double)a.makespan));
    double r = ratio((double)b.makespan, (double)a.makespan);
    if (b.makespan && a.makespan && (r < 0.995 || r > 1.005))
      fprintf(f, "  (B is %.2fx %s)",
              a.makespan >= b.makespan ? (double)a.makespan / b.makespan
                                       : (double)b.makespan / a.makespan,
              a.makespan >= b.makespan ? "faster" : "slower");
    fprintf(f, "\n%-24s %12.1f %12.1f %8.3f\n", "critical path us",
            US(a.critical), US(b.critical),
            ratio((double)b.critical, (double)a.critical));
    fprintf(f, "%-24s %12.1f %12.1f\n", "tail us", US(a.makespan - a.tail_from),
            US(b.makespan - b.tail_from));
    fprintf(f, "%-24s %12u %12u\n", "tasks", A->n_tasks, B->n_tasks);
    size_t k;
    json_t *x;
    json_array_foreach(busy, k, x) {
      char name[64];
      snprintf(name, sizeof name, "busy, %s",
               json_string_value(json_object_get(x, "core")));
      fprintf(f, "%-24s %11.1f%% %11.1f%% %+7.1f pt\n", name,
              100 * json_real_value(json_object_get(x, "a")),
              100 * json_real_value(json_object_get(x, "b")),
              100 * (json_real_value(json_object_get(x, "b")) -
                     json_real_value(json_object_get(x, "a"))));
    }
    fprintf(f, "\n%-28s %8s %8s %8s %12s %12s %8s\n", "label", "tasks A",
            "tasks B", "diff", "time A us", "time B us", "B/A");
    json_array_foreach(labels, k, x) {
      json_int_t ta = json_integer_value(json_object_get(x, "tasks_a")),
                 tb = json_integer_value(json_object_get(x, "tasks_b"));
      const char *l = json_string_value(json_object_get(x, "label"));
      fprintf(f, "%-28s %8lld %8lld %+8lld %12.1f %12.1f %8.3f\n",
              *l ? l : "(none)", (long long)ta, (long long)tb,
              (long long)(tb - ta),
              json_real_value(json_object_get(x, "time_a_us")),
              json_real_value(json_object_get(x, "time_b_us")),
              json_real_value(json_object_get(x, "ratio")));
    }
    if (json_array_size(rates))
      fprintf(f, "\n%-28s %-22s %10s %10s %8s\n", "label", "matmul",
              "GFLOP/s A", "GFLOP/s B", "B/A");
    json_array_foreach(rates, k, x) {
      char cell[3][32];
      const char *keys[3] = {"gflops_a", "gflops_b", "ratio"};
      for (int c = 0; c < 3; c++) {
        json_t *v = json_object_get(x, keys[c]);
        snprintf(cell[c], sizeof cell[c], c < 2 ? "%.1f" : "%.3f",
                 json_real_value(v));
        if (json_is_null(v))
          strcpy(cell[c], "-");
      }
      const char *l = json_string_value(json_object_get(x, "label"));
      fprintf(f, "%-28s %-22s %10s %10s %8s\n", *l ? l : "(none)",
              json_string_value(json_object_get(x, "instruction")), cell[0],
              cell[1], cell[2]);
    }
    if (json_array_size(refs))
      fprintf(f, "\n%-28s %-22s %11s %11s\n", "label", "instruction",
              "reference A", "reference B");
    json_array_foreach(refs, k, x) {
      const char *l = json_string_value(json_object_get(x, "label"));
      fprintf(f, "%-28s %-22s %10.1f%% %10.1f%%\n", *l ? l : "(none)",
              json_string_value(json_object_get(x, "instruction")),
              100 * json_real_value(json_object_get(x, "a")),
              100 * json_real_value(json_object_get(x, "b")));
    }
    fprintf(f, "\nconfiguration keys that differ");
    if (!json_array_size(cfg))
      fprintf(f, ": none\n");
    else
      fprintf(f, "\n%-40s %-20s %-20s\n", "key", "A", "B");
    json_array_foreach(cfg, k, x) {
      fprintf(f, "%-40s %-20s %-20s\n",
              json_string_value(json_object_get(x, "key")),
              json_string_value(json_object_get(x, "a")),
              json_string_value(json_object_get(x, "b")));
    }
  }
  json_decref(o);
  kvs_free(&ka);
  kvs_free(&kb);
  tr_analysis_free(&a);
  tr_analysis_free(&b);
  return rc || ferror(f) ? -1 : 0;
}

int tr_same_workload(const tr_trace *A, const tr_trace *B) {
  json_t *wa = json_object_get(A->pto, "workload"),
         *wb = json_object_get(B->pto, "workload");
  if (!wa || !wb)
    return !wa && !wb;
  return json_equal(wa, wb);
}
