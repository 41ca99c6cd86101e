/* Preset tables and their flags (bench/preset.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/preset.h"

int bench_parse_i64(const char *cmd, const char *opt, const char *v,
                    int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long x = v ? strtoll(v, &end, 10) : 0;
  if (!v || !*v || *end || errno || x < lo || x > hi) {
    fprintf(stderr, "pto-bench %s: %s needs an integer in [%lld, %lld], "
                    "got '%s'\n",
            cmd, opt, (long long)lo, (long long)hi, v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

int bench_parse_f64(const char *cmd, const char *opt, const char *v,
                    double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || !*v || *end || errno || !isfinite(x) || x < lo || x > hi) {
    fprintf(stderr, "pto-bench %s: %s needs a number in [%g, %g], got '%s'\n",
            cmd, opt, lo, hi, v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

static int find_preset(const bench_preset_table *t, const char *name,
                       size_t len) {
  for (int p = 0; p < t->n_presets; p++)
    if (strlen(t->presets[p].name) == len &&
        !strncmp(t->presets[p].name, name, len))
      return p;
  return -1;
}

static void add_case(bench_preset_sel *s, int p) {
  for (int k = 0; k < s->n; k++)
    if (s->idx[k] == p)
      return; /* each preset once */
  if (s->n < BENCH_PRESET_MAX_CASES)
    s->idx[s->n++] = p;
}

static void known(const bench_preset_table *t) {
  fprintf(stderr, "pto-bench %s: presets:", t->cmd);
  for (int p = 0; p < t->n_presets; p++)
    fprintf(stderr, " %s", t->presets[p].name);
  fprintf(stderr, " all (or a comma-separated list)\n");
}

static int parse_presets(const bench_preset_table *t, bench_preset_sel *s,
                         const char *v) {
  if (!v || !*v) {
    fprintf(stderr, "pto-bench %s: --preset needs a name\n", t->cmd);
    known(t);
    return -1;
  }
  for (const char *p = v;;) {
    size_t len = strcspn(p, ",");
    if (len == 3 && !strncmp(p, "all", 3)) {
      for (int k = 0; k < t->n_presets; k++)
        add_case(s, k);
    } else {
      int k = find_preset(t, p, len);
      if (k < 0) {
        fprintf(stderr, "pto-bench %s: unknown preset '%.*s'\n", t->cmd,
                (int)len, p);
        known(t);
        return -1;
      }
      add_case(s, k);
    }
    if (!p[len])
      return 0;
    p += len + 1;
  }
}

int bench_preset_arg(const bench_preset_table *t, bench_preset_sel *s,
                     int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (strncmp(a, "--", 2))
    return 0;
  if (!strcmp(a, "--preset")) {
    ++*i;
    return parse_presets(t, s, v) ? -1 : 1;
  }
  for (int p = 0; p < t->n_params; p++) {
    const bench_param *prm = &t->params[p];
    if (strcmp(a + 2, prm->name))
      continue;
    ++*i;
    if (bench_parse_i64(t->cmd, a, v, prm->lo, prm->hi, &s->set[p]))
      return -1;
    s->given[p] = 1;
    return 1;
  }
  return 0;
}

void bench_preset_finish(const bench_preset_table *t, bench_preset_sel *s,
                         int quick) {
  if (s->n)
    return;
  int k = find_preset(t, quick ? t->quick : t->dflt,
                      strlen(quick ? t->quick : t->dflt));
  add_case(s, k < 0 ? 0 : k);
}

const char *bench_preset_name(const bench_preset_table *t,
                              const bench_preset_sel *s, int k) {
  return t->presets[s->idx[k]].name;
}

void bench_preset_values(const bench_preset_table *t,
                         const bench_preset_sel *s, int k, int64_t *v) {
  const bench_preset *p = &t->presets[s->idx[k]];
  for (int i = 0; i < t->n_params; i++)
    v[i] = s->given[i] ? s->set[i] : p->v[i];
}

int bench_preset_changed(const bench_preset_table *t,
                         const bench_preset_sel *s, int k) {
  const bench_preset *p = &t->presets[s->idx[k]];
  for (int i = 0; i < t->n_params; i++)
    if (s->given[i] && s->set[i] != p->v[i])
      return 1;
  return 0;
}

void bench_preset_usage(const bench_preset_table *t, FILE *f) {
  for (int p = 0; p < t->n_presets; p++) {
    const bench_preset *pr = &t->presets[p];
    fprintf(f, "  %-10s", pr->name);
    for (int i = 0; i < t->n_params; i++) {
      fprintf(f, " %s=%lld", t->params[i].label, (long long)pr->v[i]);
    }
    const char *tag = !strcmp(pr->name, t->dflt)    ? " (default)"
                      : !strcmp(pr->name, t->quick) ? " (--quick)"
                                                    : "";
    fprintf(f, "%s\n", tag);
  }
}
