/* An operator benchmark's command and the flow of each case: peer, checks,
 * --save, --trace, report (bench/case.h). */
#include <stdlib.h>
#include <string.h>

#include "bench/case.h"
#include "bench/sim.h"
#include "bench/parallel.h"

void bench_case_result_free(bench_case_result *r) {
  json_decref(r->variants);
  r->variants = NULL;
}

/* ---- the pieces of a case's flow ----------------------------------------- */

/* Timed runs per case: --repeats, else 3 under --quick, else 5 above 20
 * GFLOP, else 10. */
int bench_case_repeats(const bench_opts *o, double gflop) {
  return o->repeats ? o->repeats : o->quick ? 3 : gflop > 20 ? 5 : 10;
}

/* The peer unless --no-peer: on success *p and p; when none is found, one
 * line on stderr saying why and how to install it, and NULL (the command
 * then reports PTO alone). */
static const bench_peer *find_peer(const bench_opts *o, const bench_harness *h,
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

typedef struct check_ctx {
  const bench_workload *w;
  const bench_case *c;
  int peer;
  void *const *out;
} check_ctx;

static int check_rows(void *ctx, int64_t r0, int64_t r1, char *msg,
                      size_t size) {
  const check_ctx *x = ctx;
  return x->w->check(x->c, x->peer, x->out, r0, r1, msg, size);
}

/* Checks `who`'s outputs out of case c with w->check over its rows spread
 * on `threads` threads, with progress on stderr. 0, or -1 after printing
 * "pto-bench CMD: PRESET: WRONG RESULT from WHO: <check's message>". */
int bench_case_check(const bench_opts *o, const bench_workload *w,
                     const bench_case *c, int threads, const char *who,
                     void *const *out) {
  const char *cmd = w->table->cmd;
  check_ctx x = {w, c, strcmp(who, "PTO") != 0, out};
  char label[128], msg[1024];
  snprintf(label, sizeof label, "%s: %s: checking %s's result", cmd, c->preset,
           who);
  bench_progress(o, "%s on %d threads", label, threads);
  if (!bench_parallel_rows(threads, c->rows, 0, check_rows, &x,
                           o->progress ? label : NULL, msg, sizeof msg))
    return 0;
  fprintf(stderr, "pto-bench %s: %s: WRONG RESULT from %s: %s\n", cmd,
          c->preset, who, msg);
  return -1;
}

/* c's inputs, then its outputs with their data at out[i], into a; how
 * many. */
static size_t case_arrays(const bench_case *c, void *const *out,
                          bench_array *a) {
  size_t n = 0;
  for (size_t i = 0; i < c->n_in; i++) {
    a[n] = c->in[i];
    a[n++].data = c->in_data[i];
  }
  for (size_t i = 0; i < c->n_out; i++) {
    a[n] = c->out[i];
    a[n++].data = out[i];
  }
  return n;
}

/* --save: c's inputs, PTO's outputs and meta into h->save_dir (its PRESET
 * subdirectory when several presets run). 0, or -1 (printed). */
int bench_case_save(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, const bench_case *c) {
  const bench_harness *h = &x->h;
  bench_array a[BENCH_CASE_MAX_IN + BENCH_CASE_MAX_OUT];
  char dir[4096], err[1024];
  json_t *meta = w->meta(x, c);
  const size_t n = case_arrays(c, c->pto_out, a);
  if (!meta)
    return -1;
  int bad =
      bench_case_path(dir, sizeof dir, h->save_dir, c->preset, x->sel.n > 1, 1);
  if (bad)
    snprintf(err, sizeof err, "path too long");
  else
    bad = bench_write_arrays(dir, a, n, meta, err, sizeof err);
  json_decref(meta);
  if (bad) {
    fprintf(stderr, "pto-bench %s: --save: %s\n", h->cmd, err);
    return -1;
  }
  bench_progress(o, "%s: %s: inputs and PTO's outputs in %s", h->cmd, c->preset,
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

/* The peer on c: its inputs and meta written into a private directory, the
 * peer's workload of the command's name run there on `threads` threads
 * (`repeats` timed runs after one warm-up), its fastest variant's times
 * into r->torch, r->best and r->variants (r->torch_ran set), then its
 * outputs read into c->peer_out, each exactly of its output's dtype and
 * shape (a file that is not: an error naming both). 0, or -1 after
 * printing why. */
int bench_case_peer(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, const bench_case *c,
                    const bench_peer *peer, int threads, int repeats,
                    bench_case_result *r) {
  const char *cmd = x->h.cmd;
  bench_array a[BENCH_CASE_MAX_IN + BENCH_CASE_MAX_OUT];
  char err[1024], path[4096], file[256];
  int rc = -1;
  json_t *out = NULL, *meta = w->meta(x, c);
  case_arrays(c, c->peer_out, a);
  char *dir = meta ? bench_tmpdir_new(cmd) : NULL;
  if (!dir)
    goto done;
  bench_progress(o, "%s: %s: PyTorch peer (%s)", cmd, c->preset, peer->python);
  if (bench_write_arrays(dir, a, c->n_in, meta, err, sizeof err)) {
    fprintf(stderr, "pto-bench %s: peer inputs: %s\n", cmd, err);
    goto done;
  }
  out = bench_peer_run(cmd, peer, cmd, dir, threads, repeats, 1, !o->progress);
  if (!out || peer_times(cmd, out, r))
    goto done;
  r->torch_ran = 1;
  for (size_t i = c->n_in; i < c->n_in + c->n_out; i++) {
    snprintf(file, sizeof file, "%s.npy", a[i].name);
    if (bench_path(path, sizeof path, dir, file) ||
        bench_npy_load_into(path, a[i].dtype, a[i].ndim, a[i].shape,
                            (void *)a[i].data, err, sizeof err)) {
      fprintf(stderr, "pto-bench %s: the peer's output: %s\n", cmd, err);
      goto done;
    }
  }
  rc = 0;
done:
  json_decref(out);
  bench_tmpdir_free(dir);
  json_decref(meta);
  return rc;
}

/* ---- a case's flow ------------------------------------------------------- */

/* Program p compiled into r under cfg (the flag that set it, for the hint
 * when a config is to blame), run once into c's PTO outputs and checked as
 * `who_checked`; res->pto_wrong set when the check fails. 0, or -1
 * (printed). */
static int compile_run_check(const bench_opts *o, const bench_workload *w,
                             bench_case *c, pto_program *p,
                             const pto_config *cfg, const char *flag,
                             const char *who, const char *who_checked,
                             bench_pto *r, const void *const *in, int threads,
                             bench_case_result *res) {
  bench_progress(o, "%s: compiling", who);
  if (bench_pto_compile(r, who, p, cfg)) {
    if (p && pto_program_status(p) == PTO_OK)
      fprintf(stderr, "pto-bench %s: a config (%s) sets tiles per label: %s\n",
              who, flag, w->labels);
    return -1;
  }
  bench_progress(o, "%s: first %s run (%u tasks)", who, who_checked, r->tasks);
  if (bench_pto_run(r, in, c->pto_out))
    return -1;
  if (bench_case_check(o, w, c, threads, who_checked, c->pto_out)) {
    res->pto_wrong = 1;
    return -1;
  }
  return 0;
}

/* --against: program p compiled under the second config, run and checked,
 * then timed in turn with r (PTO under --config): res->pto and
 * res->against. 0, or -1 (printed). */
static int time_against(const bench_opts *o, const bench_workload *w,
                        const bench_case_opts *x, bench_case *c, pto_program *p,
                        bench_pto *r, const void *const *in, int threads,
                        int repeats, bench_case_result *res) {
  char who[96];
  snprintf(who, sizeof who, "%s: %s: --against", w->table->cmd, c->preset);
  bench_pto b;
  memset(&b, 0, sizeof b);
  int rc = -1;
  bench_pto_stop(r); /* its workers stop before the compile */
  if (compile_run_check(o, w, c, p, x->against_cfg, "--against", who,
                        "PTO (--against)",
                        &b, in, threads, res))
    goto done;
  bench_progress(o,
                 "%s: timing PTO under --config and --against in turn, 1 "
                 "warm-up + %d runs each",
                 who, repeats);
  bench_pto *const both[2] = {r, &b};
  const void *const *const ins[2] = {in, in};
  void *const *const outs[2] = {c->pto_out, c->pto_out};
  bench_stats st[2];
  if (bench_pto_time_pair(both, ins, outs, 1, repeats, st))
    goto done;
  res->pto = st[0];
  res->against = st[1];
  rc = 0;
done:
  bench_pto_free(&b);
  return rc;
}

/* --dynamic: the dynamic program compiled under cfg, run and checked, then
 * timed in turn with r (the static one): res->pto and res->dynamic. 0, or
 * -1 (printed). */
static int time_dynamic(const bench_opts *o, const bench_workload *w,
                        bench_case *c, const pto_config *cfg, bench_pto *r,
                        const void *const *in, int threads, int repeats,
                        bench_case_result *res) {
  char who[96];
  snprintf(who, sizeof who, "%s: %s: --dynamic", w->table->cmd, c->preset);
  bench_pto b;
  memset(&b, 0, sizeof b);
  int rc = -1;
  pto_program *p = w->program_dynamic(c);
  bench_pto_stop(r); /* its workers stop before the compile */
  if (compile_run_check(o, w, c, p, cfg, "--config", who, "PTO (dynamic)", &b,
                        in, threads, res)) {
    res->dynamic_wrong = res->pto_wrong;
    res->pto_wrong = 0; /* the static result checked */
    goto done;
  }
  res->dynamic_checked = 1;
  res->dynamic_compile_ms = b.compile_ms;
  bench_progress(o,
                 "%s: timing the static and the dynamic program in turn, 1 "
                 "warm-up + %d runs each",
                 who, repeats);
  bench_pto *const both[2] = {r, &b};
  const void *const *const ins[2] = {in, in};
  void *const *const outs[2] = {c->pto_out, c->pto_out};
  bench_stats st[2];
  if (bench_pto_time_pair(both, ins, outs, 1, repeats, st))
    goto done;
  res->pto = st[0];
  res->dynamic = st[1];
  rc = 0;
done:
  bench_pto_free(&b);
  pto_program_free(p);
  return rc;
}

/* --peak-each: r timed with a probe before each run; res->pto, and the
 * runs' fractions of their probes (`gflop` of work each) and the probes
 * into res->peak_frac and res->peak_now. 0, or -1 (printed). */
static int time_probed(bench_pto *r, const void *const *in, void *const *out,
                       int threads, int repeats, double gflop,
                       bench_case_result *res) {
  double *t = calloc(3 * (size_t)repeats, sizeof *t);
  if (!t) {
    fprintf(stderr, "pto-bench %s: out of memory\n", r->cmd);
    return -1;
  }
  double *probe = t + repeats, *frac = probe + repeats;
  const int rc =
      bench_pto_time_probed(r, in, out, 1, repeats, threads, t, probe);
  if (!rc) {
    for (int k = 0; k < repeats; k++)
      frac[k] = probe[k] > 0 ? gflop / t[k] * 1e3 / probe[k] : 0;
    res->pto = bench_stats_of(t, repeats);
    res->peak_now = bench_stats_of(probe, repeats);
    res->peak_frac = bench_stats_of(frac, repeats);
  }
  free(t);
  return rc;
}

/* Runs case c: compile (timed apart); one run and its check; --save; a
 * warm-up and the timed runs (in turn with --against's, when given);
 * --trace's extra run; the runtime freed (its workers stop spinning before
 * the peer runs); the peer on the same inputs and its outputs checked. 0,
 * or -1 (printed; res says how far it got). */
static int case_run(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, bench_case *c,
                    const pto_config *cfg, const bench_peer *peer, int threads,
                    bench_case_result *res) {
  const char *cmd = w->table->cmd;
  const int repeats = bench_case_repeats(o, c->gflop), several = x->sel.n > 1;
  const void *in[BENCH_CASE_MAX_IN];
  for (size_t i = 0; i < c->n_in; i++)
    in[i] = c->in_data[i];
  void *const *out = c->pto_out;
  bench_pto r;
  memset(&r, 0, sizeof r);
  int rc = -1;
  char who[96];
  snprintf(who, sizeof who, "%s: %s", cmd, c->preset);
  pto_program *p = w->program(c);
  const int bad = compile_run_check(o, w, c, p, cfg, "--config", who, "PTO", &r,
                                    in, threads, res);
  if (r.e) { /* compiled */
    res->compile_ms = r.compile_ms;
    res->tasks = r.tasks;
  }
  if (bad)
    goto done;
  res->pto_checked = 1;
  if (x->h.save_dir && bench_case_save(o, w, x, c))
    goto done;
  if (x->h.against) {
    if (time_against(o, w, x, c, p, &r, in, threads, repeats, res))
      goto done;
  } else if (x->h.dynamic) {
    if (time_dynamic(o, w, c, cfg, &r, in, threads, repeats, res))
      goto done;
  } else if (x->h.peak_each) {
    bench_progress(o,
                   "%s: timing PTO, 1 warm-up + %d runs, an FMA probe "
                   "before each",
                   who, repeats);
    if (time_probed(&r, in, out, threads, repeats, c->gflop, res))
      goto done;
  } else {
    bench_progress(o, "%s: timing PTO, 1 warm-up + %d runs", who, repeats);
    if (bench_pto_time(&r, in, out, 1, repeats, &res->pto))
      goto done;
  }
  if (x->h.trace_path) {
    char path[4096];
    if (bench_case_path(path, sizeof path, x->h.trace_path, c->preset, several,
                        0) ||
        bench_pto_trace(&r, in, out, path))
      goto done;
  }
  bench_pto_stop(&r); /* PTO's workers stop before the peer runs */
  if (x->sim) { /* a failure is printed; the measured case stands */
    pto_program *ps = !x->sim->same && w->program_for
                          ? w->program_for(c, bench_sim_machine(x->sim))
                          : NULL;
    bench_sim_case_of(x->sim, cmd, x->h.trace_path, c->preset, several, r.e,
                      ps ? ps : p, cfg, &res->sim_ms);
    pto_program_free(ps);
  }
  if (peer) {
    /* the peer on the same inputs, its outputs under the same check */
    if (bench_case_peer(o, w, x, c, peer, threads, repeats, res) ||
        bench_case_check(o, w, c, threads, "PyTorch", c->peer_out))
      goto done;
    res->torch_checked = 1;
  }
  rc = 0;
done:
  bench_pto_free(&r);
  pto_program_free(p);
  return rc;
}

/* ---- the command --------------------------------------------------------- */

static int parse(const bench_workload *w, bench_case_opts *x, int argc,
                 char **argv) {
  for (int i = 1; i < argc; i++) {
    int r = bench_preset_arg(w->table, &x->sel, argc, argv, &i);
    if (!r)
      r = bench_harness_arg(&x->h, argc, argv, &i);
    if (!r && w->arg)
      r = w->arg(x, argc, argv, &i);
    if (!r) {
      fprintf(stderr, "pto-bench %s: unknown option '%s'\n", w->table->cmd,
              argv[i]);
      r = -1;
    }
    if (r < 0)
      return -1;
  }
  return 0;
}

/* a's size in bytes, in double so that no size overflows before it is
 * refused. */
static double array_bytes(const bench_array *a) {
  double n = (double)bench_dtype_size(a->dtype);
  for (int d = 0; d < a->ndim; d++)
    n *= (double)a->shape[d];
  return n;
}

/* A buffer for a (within BENCH_CASE_MAX_BYTES, its size fits a size_t). */
static void *array_alloc(const bench_array *a) {
  return pto_buffer_alloc(bench_array_count(a) * bench_dtype_size(a->dtype));
}

/* Case k made: described (w->init), its buffers allocated and its inputs
 * filled (w->fill). 0, or -1 (printed). */
static int case_make(const bench_workload *w, const bench_case_opts *x, int k,
                     bench_case *c) {
  const bench_preset_table *t = w->table;
  if (w->init(x, k, c))
    return -1;
  double bytes = 0;
  for (size_t i = 0; i < c->n_in; i++)
    bytes += array_bytes(&c->in[i]);
  for (size_t i = 0; i < c->n_out; i++)
    bytes += 2 * array_bytes(&c->out[i]); /* PTO's and the peer's */
  if (bytes > BENCH_CASE_MAX_BYTES) {
    int64_t v[BENCH_PRESET_MAX_PARAMS];
    char sizes[512] = "";
    size_t len = 0;
    bench_preset_values(t, &x->sel, k, v);
    for (int p = 0; p < t->n_params && len < sizeof sizes; p++)
      len +=
          (size_t)snprintf(sizes + len, sizeof sizes - len, "%s%s=%lld",
                           p ? " " : "", t->params[p].label, (long long)v[p]);
    fprintf(stderr,
            "pto-bench %s: %s: %s needs %.1f GiB of buffers, more than "
            "%.0f\n",
            t->cmd, c->preset, sizes, bytes / (1 << 30),
            BENCH_CASE_MAX_BYTES / (1 << 30));
    return -1;
  }
  int ok = 1;
  for (size_t i = 0; i < c->n_in; i++)
    ok &= !!(c->in_data[i] = array_alloc(&c->in[i]));
  for (size_t i = 0; i < c->n_out; i++) {
    ok &= !!(c->pto_out[i] = array_alloc(&c->out[i]));
    ok &= !!(c->peer_out[i] = array_alloc(&c->out[i]));
  }
  if (!ok || w->fill(x, c)) {
    fprintf(stderr, "pto-bench %s: %s: out of memory for %.1f GiB\n", t->cmd,
            c->preset, bytes / (1 << 30));
    return -1;
  }
  return 0;
}

/* Frees what case_make allocated (NULL: nothing). */
static void case_free(bench_case *c) {
  if (!c)
    return;
  for (size_t i = 0; i < BENCH_CASE_MAX_IN; i++)
    free(c->in_data[i]);
  for (size_t i = 0; i < BENCH_CASE_MAX_OUT; i++) {
    free(c->pto_out[i]);
    free(c->peer_out[i]);
  }
  free(c);
}

static void ms_cell(char *buf, size_t n, const bench_stats *s, int have);

/* The machine the cases run on, and what the table is read against. */
typedef struct case_env {
  const pto_config *cfg;
  const bench_peer *peer; /* NULL: PTO alone */
  int threads;
  const char *engine; /* the matmul engine its matmuls run on */
  double peak;        /* GFLOP/s of that engine's instruction, 0: unknown */
  const char *peak_isa;
} case_env;

/* Case k made, run, reported (a table row and a JSON object) and freed. 0,
 * or 1 (a failure, printed). */
static int case_one(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, int k, case_env *e) {
  const char *name = bench_preset_name(w->table, &x->sel, k);
  bench_case_result res;
  memset(&res, 0, sizeof res);
  bench_progress(o, "%s: preset %s (%d of %d)", w->table->cmd, name, k + 1,
                 x->sel.n);
  bench_case *c = calloc(1, w->case_size);
  int made = 0, rc = 1;
  if (!c)
    fprintf(stderr, "pto-bench %s: out of memory\n", w->table->cmd);
  else if (!case_make(w, x, k, c))
    made = 1;
  if (made && !(w->run_case ? w->run_case : case_run)(
                  o, w, x, c, e->cfg, e->peer, e->threads, &res))
    rc = 0;
  if (made)
    bench_peak_refresh(&e->peak, e->engine, e->threads, o->quick ? 1 : 3);

  char nm[32];
  double gflop = 0;
  snprintf(nm, sizeof nm, "%s%s", name,
           bench_preset_changed(w->table, &x->sel, k) ? "*" : "");
  FILE *f = bench_out(o);
  json_t *j = w->report(x, k, made ? c : NULL, nm, e->threads, f, &gflop);
  bench_case_print(f, &res, e->threads, gflop, e->peak, e->peer != NULL);
  if (res.against.n > 0 && res.pto.n > 0) {
    char a[64], b[64];
    ms_cell(a, sizeof a, &res.against, 1);
    ms_cell(b, sizeof b, &res.pto, 1);
    fprintf(f,
            "  --against %s: PTO %s ms, --config's %s ms in the same turns: "
            "%.3fx (above 1: --against is faster)\n",
            x->h.against, a, b, res.pto.median / res.against.median);
  }
  if (res.dynamic.n > 0 && res.pto.n > 0) {
    char a[64], b[64];
    ms_cell(a, sizeof a, &res.dynamic, 1);
    ms_cell(b, sizeof b, &res.pto, 1);
    fprintf(f,
            "  --dynamic: the dynamic program (compiled in %.1f ms) %s ms, the "
            "static one %s ms in the same turns: %.3fx (below 1: dynamic is "
            "faster)\n",
            res.dynamic_compile_ms, a, b,
            res.dynamic.median / res.pto.median);
  }
  if (res.peak_frac.n > 0 && res.peak_now.median > 0)
    fprintf(f,
            "  --peak-each: PTO at %.1f%% [%.1f-%.1f] of the FMA rate probed "
            "before each run (probes %.1f GFLOP/s [%.1f-%.1f]; median "
            "[quartiles])\n",
            100 * res.peak_frac.median, 100 * res.peak_frac.q1,
            100 * res.peak_frac.q3, res.peak_now.median, res.peak_now.q1,
            res.peak_now.q3);
  fflush(f);
  bench_case_json(j, &res, gflop, e->peak, e->peak_isa, e->peer);
  if (res.against.n > 0 && res.pto.n > 0) {
    json_object_set_new(j, "against_config", json_string(x->h.against));
    json_object_set_new(j, "against_ms", json_real(res.against.median));
    json_object_set_new(j, "against_ms_min", json_real(res.against.min));
    json_object_set_new(j, "against_ms_max", json_real(res.against.max));
    json_object_set_new(j, "against_ratio",
                        json_real(res.pto.median / res.against.median));
  }
  if (x->h.dynamic && !w->run_case) { /* a run_case reports its own */
    const int d = res.dynamic.n > 0 && res.pto.n > 0;
    json_object_set_new(j, "dynamic_ms",
                        d ? json_real(res.dynamic.median) : json_null());
    json_object_set_new(j, "dynamic_static_ms",
                        d ? json_real(res.pto.median) : json_null());
    json_object_set_new(j, "dynamic_ratio",
                        d ? json_real(res.dynamic.median / res.pto.median)
                          : json_null());
    json_object_set_new(j, "dynamic_compile_ms",
                        res.dynamic_checked
                            ? json_real(res.dynamic_compile_ms)
                            : json_null());
    json_object_set_new(j, "dynamic_check",
                        json_string(res.dynamic_wrong     ? "wrong"
                                    : res.dynamic_checked ? "ok"
                                                          : "failed"));
  }
  json_object_set_new(j, "dtype", json_string(bench_dtype_flag(x->h.dtype)));
  json_object_set_new(j, "engine",
                      e->engine ? json_string(e->engine) : json_null());
  if (w->after)
    w->after(x, made ? c : NULL, &res, f, j);
  if (x->sim && res.sim_ms > 0)
    bench_sim_report(f, j, x->sim, res.sim_ms, res.pto.n ? res.pto.median : 0);
  fflush(f);
  json_array_append_new(bench_results(), j);
  bench_case_result_free(&res);
  case_free(c);
  return rc;
}

void bench_case_fill_uniform(bench_case *c, size_t i, uint64_t seed,
                             uint64_t stream, float lo, float hi) {
  const size_t n = bench_array_count(&c->in[i]);
  if (c->in[i].dtype == BENCH_BF16)
    bench_fill_uniform_bf16(c->in_data[i], n, seed, stream, lo, hi);
  else
    bench_fill_uniform(c->in_data[i], n, seed, stream, lo, hi);
}

int bench_case_main(const bench_opts *o, const bench_workload *w,
                    bench_case_opts *x, int argc, char **argv) {
  const char *cmd = w->table->cmd;
  x->h = bench_harness_default(cmd);
  if (parse(w, x, argc, argv)) {
    fprintf(stderr, "(pto-bench %s --help for usage)\n", cmd);
    return 2;
  }
  if (x->h.against && w->run_case) { /* a runner of its own: dsa */
    fprintf(stderr,
            "pto-bench %s: --against is not for this command (it compares "
            "settings of its own); run it once per --config\n",
            cmd);
    return 2;
  }
  if (x->h.dynamic && !w->program_dynamic && !w->run_case) {
    fprintf(stderr, "pto-bench %s: --dynamic is not for this command\n", cmd);
    return 2;
  }
  if (x->h.dynamic && (x->h.against || x->h.peak_each)) {
    fprintf(stderr,
            "pto-bench %s: --dynamic does not combine with --against or "
            "--peak-each (each times a second setting in turn)\n",
            cmd);
    return 2;
  }
  if (x->h.peak_each && (x->h.against || w->run_case)) {
    fprintf(stderr, "pto-bench %s: --peak-each %s\n", cmd,
            w->run_case ? "is not for this command"
                        : "does not combine with --against (each run of the "
                          "pair would wait on a probe)");
    return 2;
  }
  bench_preset_finish(w->table, &x->sel, o->quick);
  case_env e;
  e.threads = bench_cores(o);
  bench_sim sim;
  if (x->h.simulate) {
    if (bench_sim_open(o, cmd, x->h.simulate, e.threads, &sim))
      return 1;
    x->sim = &sim;
  }
  pto_config *cfg = bench_harness_config(&x->h, e.threads);
  if (!cfg)
    return 1;
  if (x->h.against) { /* a bad file fails now, not after a case's runs */
    int failed;
    x->against_cfg = bench_harness_against(&x->h, e.threads, &failed);
    if (failed) {
      pto_config_free(cfg);
      return 1;
    }
  }
  bench_peer peer;
  e.cfg = cfg;
  bench_openblas_coretype(cmd); /* PyTorch's f32 matmuls run on it */
  e.peer = find_peer(o, &x->h, &peer);
  /* bf16: the bf16 engine where the operator's matmuls run on it, else
   * the f32 one, which widens bf16 as it packs */
  e.engine = pto_matmul_engine(
      x->h.dtype == PTO_BF16 && w->bf16_native != NULL ? PTO_BF16 : PTO_F32);
  const int native = bench_engine_bf16(e.engine);
  e.peak_isa = "none";
  bench_progress(o, "%s: %s peak on %d threads", cmd,
                 e.engine ? e.engine : "FMA", e.threads);
  e.peak =
      bench_peak_engine(e.engine, e.threads, o->quick ? 2 : 5, &e.peak_isa);

  FILE *f = bench_out(o);
  const bench_peer *pp = e.peer;
  fprintf(f,
          "%s %s: PTO (%s tile instructions, matmul engine %s%s%s%s) against "
          "%s%s%s%s; %s%s peak on %d threads %.1f GFLOP/s\n",
          cmd, bench_dtype_flag(x->h.dtype), pto_isa_name(),
          e.engine ? e.engine : "?",
          x->h.dtype == PTO_F32 ? ""
          : native              ? " (bf16 multiplied as bf16: "
                                : ", bf16 widened to f32 while packing",
          native ? w->bf16_native : "", native ? ")" : "",
          pp ? "PyTorch " : "no peer", pp ? pp->torch : "", pp ? " in " : "",
          pp ? pp->python : "", e.peak_isa, native ? "" : " FMA", e.threads,
          e.peak);
  w->head(f);
  bench_case_print_head(f);
  fflush(f);
  int rc = 0;
  for (int k = 0; k < x->sel.n; k++)
    if (case_one(o, w, x, k, &e))
      rc = 1;
  pto_config_free(cfg);
  pto_config_free(x->against_cfg);
  x->against_cfg = NULL;
  bench_sim_close(x->sim);
  x->sim = NULL;
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
  NUM_OR_NULL("pto_peak_fraction_each", po && r->peak_frac.n > 0,
              r->peak_frac.median);
  NUM_OR_NULL("peak_each_gflops", po && r->peak_now.n > 0, r->peak_now.median);
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
