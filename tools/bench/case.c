/* One case of an operator benchmark: peer, checks, --save, report
 * (bench/case.h). */
#include <stdlib.h>
#include <string.h>

#include "bench/case.h"

void bench_case_result_free(bench_case_result *r) {
  json_decref(r->variants);
  r->variants = NULL;
}

int bench_case_repeats(const bench_opts *o, double gflop) {
  return o->repeats ? o->repeats : o->quick ? 3 : gflop > 20 ? 5 : 10;
}

const bench_peer *bench_case_peer(const bench_opts *o, const bench_harness *h,
                                  bench_peer *p) {
  if (h->no_peer)
    return NULL;
  char why[2048];
  bench_progress(o, "%s: looking for the Python peer", h->cmd);
  if (!bench_peer_find(h->python, h->peer_script, p, why, sizeof why))
    return p;
  fprintf(stderr,
          "pto-bench %s: no PyTorch peer (%s; tools/install-deps.sh "
          "installs python3-torch): reporting PTO alone\n",
          h->cmd, why);
  return NULL;
}

int bench_case_check(const bench_opts *o, const char *cmd, const char *preset,
                     const char *who, int threads, int64_t rows,
                     bench_rows_fn fn, void *ctx) {
  char label[128], msg[1024];
  snprintf(label, sizeof label, "%s: %s: checking %s's result", cmd, preset,
           who);
  bench_progress(o, "%s on %d threads", label, threads);
  if (!bench_parallel_rows(threads, rows, 0, fn, ctx,
                           o->progress ? label : NULL, msg, sizeof msg))
    return 0;
  fprintf(stderr, "pto-bench %s: %s: WRONG RESULT from %s: %s\n", cmd, preset,
          who, msg);
  return -1;
}

int bench_case_save(const bench_opts *o, const bench_harness *h,
                    const char *preset, int several, const bench_array *a,
                    size_t n, const json_t *meta) {
  if (!h->save_dir)
    return 0;
  char dir[4096], err[1024];
  int bad = bench_case_path(dir, sizeof dir, h->save_dir, preset, several, 1);
  if (bad)
    snprintf(err, sizeof err, "path too long");
  else
    bad = bench_write_arrays(dir, a, n, meta, err, sizeof err);
  if (bad) {
    fprintf(stderr, "pto-bench %s: --save: %s\n", h->cmd, err);
    return -1;
  }
  bench_progress(o, "%s: %s: inputs and PTO's outputs in %s", h->cmd, preset,
                 dir);
  return 0;
}

/* The best variant's times and every variant's median from the peer's
 * result.json into r; 0, or -1 (printed). */
static int peer_times(const char *cmd, const json_t *out,
                      bench_case_result *r) {
  snprintf(r->best, sizeof r->best, "%s",
           json_string_value(json_object_get(out, "best")));
  json_t *vs = json_object_get(out, "variants"), *best = NULL, *v;
  const char *name;
  r->variants = json_object();
  json_object_foreach(vs, name, v) {
    json_t *m = json_object_get(v, "median_ms");
    json_object_set_new(r->variants, name,
                        json_is_number(m) ? json_real(json_number_value(m))
                                          : json_null());
    if (!strcmp(name, r->best))
      best = json_object_get(v, "times_ms");
  }
  size_t n = json_array_size(best);
  double *t = n ? calloc(n, sizeof *t) : NULL;
  if (!t) {
    fprintf(stderr,
            "pto-bench %s: the peer's result has no times for its best "
            "variant '%s'\n",
            cmd, r->best);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    t[i] = json_number_value(json_array_get(best, i));
  r->torch = bench_stats_of(t, (int)n);
  free(t);
  return 0;
}

int bench_case_peer_run(const bench_opts *o, const bench_harness *h,
                        const char *preset, const bench_peer *peer,
                        const bench_array *inputs, size_t n_in,
                        const json_t *meta, const bench_array *outputs,
                        size_t n_out, int threads, int repeats,
                        bench_case_result *r) {
  char err[1024], path[4096], file[256];
  int rc = -1;
  json_t *out = NULL;
  char *dir = bench_tmpdir_new(h->cmd);
  if (!dir)
    return -1;
  bench_progress(o, "%s: %s: PyTorch peer (%s)", h->cmd, preset, peer->python);
  if (bench_write_arrays(dir, inputs, n_in, meta, err, sizeof err)) {
    fprintf(stderr, "pto-bench %s: peer inputs: %s\n", h->cmd, err);
    goto done;
  }
  out = bench_peer_run(h->cmd, peer, h->cmd, dir, threads, repeats, 1,
                       !o->progress);
  if (!out || peer_times(h->cmd, out, r))
    goto done;
  r->torch_ran = 1;
  for (size_t i = 0; i < n_out; i++) {
    const bench_array *a = &outputs[i];
    snprintf(file, sizeof file, "%s.npy", a->name);
    if (bench_path(path, sizeof path, dir, file) ||
        bench_npy_load_into(path, a->dtype, a->ndim, a->shape, (void *)a->data,
                            err, sizeof err)) {
      fprintf(stderr, "pto-bench %s: the peer's output: %s\n", h->cmd, err);
      goto done;
    }
  }
  rc = 0;
done:
  json_decref(out);
  bench_tmpdir_free(dir);
  return rc;
}

/* ---- the outcome in a table row and in JSON ------------------------------ */

/* ms with 3-4 significant digits: 0.412, 12.35, 123.5, 2606 */
static int ms_digits(double ms) {
  return ms < 1 ? 3 : ms < 100 ? 2 : ms < 1000 ? 1 : 0;
}

static void ms_cell(char *buf, size_t n, const bench_stats *s, int have) {
  if (!have)
    snprintf(buf, n, "-");
  else
    snprintf(buf, n, "%.*f [%.*f-%.*f]", ms_digits(s->median), s->median,
             ms_digits(s->min), s->min, ms_digits(s->max), s->max);
}

/* What the case has to report: the PTO side, and the peer's beside it. */
static int pto_ok(const bench_case_result *r) {
  return r->pto_checked && r->pto.n > 0;
}

static int torch_ok(const bench_case_result *r) {
  return pto_ok(r) && r->torch_checked && r->torch.n > 0;
}

void bench_case_print_head(FILE *f) {
  fprintf(f, "%3s %2s %24s %24s %-7s %6s %8s %6s %8s  %s\n", "thr", "R",
          "PTO ms [min-max]", "PyTorch ms [min-max]", "torch", "ratio",
          "PTO GF/s", "%pk", "compile", "check");
}

void bench_case_print(FILE *f, const bench_case_result *r, int threads,
                      double gflop, double peak, int have_peer) {
  const int po = pto_ok(r), to = torch_ok(r);
  const double pg = po ? gflop / r->pto.median * 1e3 : 0;
  char pcell[48], tcell[48], rcell[16], pk[16], gf[16], cm[16];
  ms_cell(pcell, sizeof pcell, &r->pto, po);
  ms_cell(tcell, sizeof tcell, &r->torch, to);
  snprintf(rcell, sizeof rcell, to ? "%.2fx" : "-",
           to ? r->torch.median / r->pto.median : 0);
  snprintf(pk, sizeof pk, po && peak > 0 ? "%.1f%%" : "-",
           peak > 0 ? 100 * pg / peak : 0);
  snprintf(gf, sizeof gf, po ? "%.1f" : "-", pg);
  snprintf(cm, sizeof cm, r->tasks ? "%.1f" : "-", r->compile_ms);
  const char *chk = r->pto_wrong       ? "WRONG"
                    : !po              ? "failed"
                    : !have_peer       ? "ok"
                    : r->torch_checked ? "ok"
                    : r->torch_ran     ? "ok, torch WRONG"
                                       : "ok, torch failed";
  fprintf(f, "%3d %2d %24s %24s %-7s %6s %8s %6s %8s  %s\n", threads, r->pto.n,
          pcell, tcell, to ? r->best : "-", rcell, gf, pk, cm, chk);
}

void bench_case_json(json_t *j, const bench_case_result *r, double gflop,
                     double peak, const char *peak_isa,
                     const bench_peer *peer) {
  const int po = pto_ok(r), to = torch_ok(r);
  const double pg = po ? gflop / r->pto.median * 1e3 : 0,
               tg = to ? gflop / r->torch.median * 1e3 : 0;
  json_object_set_new(j, "repeats", json_integer(r->pto.n));
  json_object_set_new(j, "tasks", json_integer((json_int_t)r->tasks));
  json_object_set_new(j, "compile_ms", json_real(r->compile_ms));
  json_object_set_new(j, "gflop", json_real(gflop));
  json_object_set_new(j, "peak_gflops", json_real(peak));
  json_object_set_new(j, "peak_isa", json_string(peak_isa));
  json_object_set_new(j, "torch_version",
                      peer ? json_string(peer->torch) : json_null());
#define NUM_OR_NULL(key, ok, val)                                              \
  json_object_set_new(j, key, (ok) ? json_real(val) : json_null())
  NUM_OR_NULL("pto_ms", po, r->pto.median);
  NUM_OR_NULL("pto_ms_min", po, r->pto.min);
  NUM_OR_NULL("pto_ms_max", po, r->pto.max);
  NUM_OR_NULL("pto_gflops", po, pg);
  NUM_OR_NULL("pto_peak_fraction", po && peak > 0, peak > 0 ? pg / peak : 0);
  NUM_OR_NULL("torch_ms", to, r->torch.median);
  NUM_OR_NULL("torch_ms_min", to, r->torch.min);
  NUM_OR_NULL("torch_ms_max", to, r->torch.max);
  NUM_OR_NULL("torch_gflops", to, tg);
  NUM_OR_NULL("ratio", to, to ? r->torch.median / r->pto.median : 0);
#undef NUM_OR_NULL
  json_object_set_new(j, "torch_variant",
                      to ? json_string(r->best) : json_null());
  json_object_set_new(j, "torch_variants",
                      r->variants ? json_incref(r->variants) : json_null());
  json_object_set_new(j, "check",
                      json_string(r->pto_wrong     ? "wrong"
                                  : r->pto_checked ? "ok"
                                                   : "failed"));
  json_object_set_new(j, "torch_check",
                      !peer || !r->torch_ran
                          ? json_null()
                          : json_string(r->torch_checked ? "ok" : "wrong"));
}
