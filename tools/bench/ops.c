/* pto-bench ops: a suite of common operators (bench/ops_defs.c), each
 * written with the public tensor ops alone and compiled with no tile shape
 * and no config (pto_compile(p, NULL, &e)), so the compiler's own choices
 * are what is measured (--config FILE: a tuning tried against them). Each is
 * checked against a plain-C reference in double, timed on the parallel runtime
 * (a warm-up, then the median of the repeats), timed in PyTorch on the same
 * inputs and threads in the same invocation (one peer process for all of them:
 * tools/pto_bench_torch.py "ops"), and set against its roof measured in the
 * same run: the f32 FMA peak (bench/peak.h) or the DRAM bandwidth of a STREAM
 * triad, whichever bounds the operator's time (its flops over the peak, or the
 * bytes of its inputs and outputs over the bandwidth, the longer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/files.h"
#include "bench/harness.h"
#include "bench/ops.h"
#include "bench/parallel.h"
#include "bench/peer.h"

#define MAX_IN 6
#define PROBE_FLOATS (32u << 20) /* 128 MiB per triad array, as softmax's */
#define PROBE_RUNS 5

typedef struct ops_opts {
  int sel[32]; /* --op: indices into bench_ops_defs, in the order given */
  int n_sel;
  int list, no_peer;
  const char *python, *script;
  const char *trace;  /* --trace FILE: each operator's swimlane */
  const char *config; /* --config FILE: compiled and run with it */
} ops_opts;

typedef struct ops_case {
  const ops_def *def;
  const int64_t *d;
  char shape[64];
  pto_program *p;
  pto_executable *e;
  int n_in;
  void *in[MAX_IN], *out[OPS_MAX_OUTPUTS], *tout[OPS_MAX_OUTPUTS];
  bench_array in_a[MAX_IN], out_a[OPS_MAX_OUTPUTS];
  double bytes, flops, compile_ms, pto_ms, pto_min, pto_max;
  double err, torch_err, torch_ms;
  int64_t checked;
  int ok, torch_ok;   /* -1: not checked (no peer) */
  const char *failed; /* why the case has no time, or NULL */
  char torch_best[48];
  json_t *torch_variants;
  pto_exe_stats st;
} ops_case;

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "[--quiet] ops\n"
        "                 [--op NAME[,NAME...]]... [--list] [--no-peer]\n"
        "                 [--python PATH] [--peer-script FILE]\n"
        "                 [--trace FILE] [--config FILE]\n"
        "\n"
        "Common operators written as tensor ops with the public API only\n"
        "(include/pto/program.h), no tile shape set and no config: each is\n"
        "compiled with pto_compile(p, NULL, &e), so the compiler's choices\n"
        "are what is measured. Each operator is\n"
        "  - checked against a plain-C reference in double (every row, or\n"
        "    rows spread evenly from the first to the last for the matmul\n"
        "    ones): max relative error |got - ref| / max(|ref|, the row's\n"
        "    root-mean-square |ref|) within the operator's tolerance, else\n"
        "    the check fails and the command exits 1;\n"
        "  - timed on the parallel runtime (pto_runtime_run): a warm-up run,\n"
        "    then the median of the repeats (default 5, --quick 3);\n"
        "  - timed in PyTorch on the same inputs and threads, in the same\n"
        "    invocation (after PTO's runtime is stopped), the faster of its\n"
        "    natural forms, and its result checked the same way;\n"
        "  - set against its roof measured in this run: the f32 FMA peak\n"
        "    ('fma', the probe gemm uses) or the DRAM bandwidth of a\n"
        "    STREAM triad ('dram', softmax's probe), whichever bounds it:\n"
        "    flops / peak or bytes / bandwidth, the longer, the bytes being\n"
        "    its inputs and outputs once. 'of roof' is that bound over\n"
        "    PTO's median (1.0: at the roof).\n"
        "\n"
        "options:\n"
        "  --op NAME[,NAME]  run these operators only (repeatable; also\n"
        "                    flash and flash-expert, `pto-bench flash`'s)\n"
        "  --list            list the operators and their sizes, and exit\n"
        "  --no-peer         no PyTorch; --python PATH: its interpreter\n"
        "                    (default /usr/bin/python3, then python3);\n"
        "                    --peer-script FILE: another peer script\n"
        "  --trace FILE      one more run of each operator on a tracing\n"
        "                    runtime (after a warm-up run on it): its\n"
        "                    swimlane in FILE (FILE-OP.json when several\n"
        "                    operators run; pto-trace reads it), its\n"
        "                    summary on stderr\n"
        "  --config FILE     compile and run with this config (its tiles,\n"
        "                    knobs and label overrides win over the\n"
        "                    compiler's choices; docs/config.md), to try a\n"
        "                    tuning against the defaults\n"
        "\n"
        "operators (default sizes; --quick in brackets):\n",
        f);
  for (size_t i = 0; i < bench_ops_count; i++) {
    const ops_def *o = &bench_ops_defs[i];
    char a[64], b[64];
    if (o->mode) /* pto-bench flash's */
      continue;
    o->shape(o->d, a, sizeof a);
    o->shape(o->dq, b, sizeof b);
    fprintf(f, "  %-14s %s\n  %-14s %s [%s], tolerance %.0e\n", o->name,
            o->what, "", a, b, o->tol);
  }
  fputs("\n"
        "The table (on stderr with --json): op, shape, PTO ms (median), torch\n"
        "ms and its form, ratio (torch / PTO: above 1, PTO is faster), roof,\n"
        "PTO's rate (GF/s for fma, GB/s for dram), of roof, tasks/programs of\n"
        "the executable, max relative error, check (ok, or WRONG; 'torch\n"
        "WRONG' when PyTorch's result fails).\n"
        "JSON fields, one object per operator: workload (\"ops\"), op, shape,\n"
        "dims, threads, isa, pto_ms, pto_min_ms, pto_max_ms, compile_ms,\n"
        "torch_ms, torch_variant, torch_variants, torch_version, ratio, roof\n"
        "(\"fma\" or \"dram\"), roof_fraction, roof_gflops or roof_gbps (the\n"
        "roof's measured value), peak_gflops, dram_gbps, gflop, bytes,\n"
        "pto_gflops, pto_gbps, tasks, programs, max_rel_err, tolerance,\n"
        "checked_rows, check, torch_max_rel_err, torch_check (true, false,\n"
        "or null without a peer), config (--config's file, else PTO_CONFIG's,\n"
        "or null), error (when the operator did not run).\n"
        "An error of -1: a NaN or inf where the reference is finite.\n",
        f);
}

static int find_op(const char *name, size_t len) {
  for (size_t i = 0; i < bench_ops_count; i++)
    if (strlen(bench_ops_defs[i].name) == len &&
        !strncmp(bench_ops_defs[i].name, name, len))
      return (int)i;
  return -1;
}

static void op_names(FILE *f) {
  for (size_t i = 0; i < bench_ops_count; i++)
    fprintf(f, "%s%s", i ? " " : "", bench_ops_defs[i].name);
  fputc('\n', f);
}

static int parse(int argc, char **argv, ops_opts *s) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--list")) {
      s->list = 1;
    } else if (!strcmp(a, "--no-peer")) {
      s->no_peer = 1;
    } else if (!strcmp(a, "--trace") || !strcmp(a, "--config")) {
      if (!v || !v[0]) {
        fprintf(stderr, "pto-bench ops: %s needs a file\n", a);
        return -1;
      }
      *(a[2] == 't' ? &s->trace : &s->config) = v;
      i++;
    } else if (!strcmp(a, "--python") || !strcmp(a, "--peer-script") ||
               !strcmp(a, "--op")) {
      if (!v || !v[0]) {
        fprintf(stderr, "pto-bench ops: %s needs a %s\n", a,
                a[2] == 'o'                  ? "name"
                : a[2] == 'p' && a[3] == 'y' ? "path"
                                             : "file");
        return -1;
      }
      i++;
      if (a[2] == 'p') {
        *(a[3] == 'y' ? &s->python : &s->script) = v;
        continue;
      }
      for (const char *n = v; *n;) { /* a comma list */
        size_t len = strcspn(n, ",");
        int k = find_op(n, len);
        if (k < 0) {
          fprintf(stderr,
                  "pto-bench ops: unknown operator '%.*s'; "
                  "operators: ",
                  (int)len, n);
          op_names(stderr);
          return -1;
        }
        int dup = 0;
        for (int j = 0; j < s->n_sel; j++)
          dup |= s->sel[j] == k;
        if (!dup)
          s->sel[s->n_sel++] = k;
        n += len + (n[len] == ',');
      }
    } else {
      fprintf(stderr, "pto-bench ops: unknown option '%s'\n", a);
      return -1;
    }
  }
  return 0;
}

/* ---- the DRAM probe: STREAM's triad (bench_triad) ----------------------- */

/* GB/s of the best of PROBE_RUNS triads (12 bytes an element, no
 * write-allocate read), 0 when the arrays cannot be had */
static double dram_gbps(int threads) {
  float *a = pto_buffer_alloc(PROBE_FLOATS * sizeof *a),
        *b = pto_buffer_alloc(PROBE_FLOATS * sizeof *b),
        *c = pto_buffer_alloc(PROBE_FLOATS * sizeof *c);
  double best = 0;
  if (a && b && c) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < PROBE_FLOATS; i++) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
    bench_triad(a, b, c, PROBE_FLOATS, threads); /* warm: pages, threads */
    for (int r = 0; r < PROBE_RUNS; r++) {
      uint64_t t0 = bench_now_ns();
      bench_triad(a, b, c, PROBE_FLOATS, threads);
      double s = (double)(bench_now_ns() - t0) * 1e-9;
      best = fmax(best, 3.0 * PROBE_FLOATS * sizeof(float) / s * 1e-9);
    }
  }
  free(a);
  free(b);
  free(c);
  return best;
}

/* ---- one operator on PTO ------------------------------------------------- */

static size_t dtype_size(pto_dtype t) {
  return t == PTO_F32 || t == PTO_I32 ? 4 : 0; /* the suite's dtypes */
}

/* The buffers of a program's inputs (filled) and outputs, laid out as its
 * tensors are; -1 after setting c->failed. */
static int alloc_case(ops_case *c, uint64_t seed) {
  c->n_in = pto_program_num_inputs(c->p);
  if (c->n_in > MAX_IN) {
    c->failed = "too many inputs";
    return -1;
  }
  c->bytes = 0;
  for (int k = 0; k < c->n_in + OPS_MAX_OUTPUTS; k++) {
    const int is_in = k < c->n_in, i = is_in ? k : k - c->n_in;
    if (!is_in && !c->def->outputs[i])
      break;
    pto_tensor *t =
        is_in ? pto_program_input(c->p, i) : pto_program_output(c->p, i);
    bench_array *a = is_in ? &c->in_a[i] : &c->out_a[i];
    a->name = is_in ? pto_tensor_name(t) : c->def->outputs[i];
    a->dtype = pto_tensor_dtype(t) == PTO_I32 ? BENCH_I32 : BENCH_F32;
    a->ndim = pto_tensor_ndim(t);
    for (int j = 0; j < a->ndim; j++)
      a->shape[j] = pto_tensor_dim(t, j);
    const size_t n = (size_t)pto_tensor_numel(t),
                 bytes = n * dtype_size(pto_tensor_dtype(t));
    void *buf = pto_buffer_alloc(bytes);
    if (!buf || !bytes) {
      free(buf);
      c->failed = "out of memory";
      return -1;
    }
    a->data = buf;
    c->bytes += (double)bytes;
    if (is_in) {
      c->in[i] = buf;
      if (c->def->fill)
        c->def->fill(c->d, i, buf, n, seed + (uint64_t)i);
      else
        ops_fill_uniform(buf, n, seed + (uint64_t)i, 1.0);
    } else {
      c->out[i] = buf;
      memset(buf, 0xff, bytes); /* NaN: an entry never written fails */
    }
  }
  return 0;
}

typedef struct check_ctx {
  const ops_case *c;
  const void *const *out;
  int64_t rows, n;
  double *err;
} check_ctx;

static int64_t check_row_of(const check_ctx *x, int64_t k) {
  return x->n == x->rows ? k : k * (x->rows - 1) / (x->n - 1);
}

static int check_chunk(void *ctx, int64_t r0, int64_t r1, char *msg,
                       size_t msg_size) {
  const check_ctx *x = ctx;
  double *s = malloc(sizeof *s * x->c->def->scratch_size(x->c->d));
  if (!s) {
    snprintf(msg, msg_size, "out of memory");
    return -1;
  }
  for (int64_t k = r0; k < r1; k++)
    x->err[k] = x->c->def->check_row(x->c->d, (const void *const *)x->c->in,
                                     x->out, check_row_of(x, k), s);
  free(s);
  return 0;
}

/* The worst relative error of out over the checked rows (INFINITY on a
 * failure to check); its row into *worst_row. */
static double check(const bench_opts *o, ops_case *c, const void *const *out,
                    const char *who, int threads, int64_t *worst_row) {
  const ops_def *d = c->def;
  check_ctx x = {c, out, d->rows(c->d), 0, NULL};
  x.n = d->check_rows && d->check_rows < x.rows ? d->check_rows : x.rows;
  c->checked = x.n;
  x.err = calloc((size_t)x.n, sizeof *x.err);
  char msg[256], label[128];
  snprintf(label, sizeof label, "ops: %s: checking %s's result", d->name, who);
  bench_progress(o, "%s (%lld rows)", label, (long long)x.n);
  double worst = 0;
  *worst_row = 0;
  if (!x.err || bench_parallel_rows(threads, x.n, 0, check_chunk, &x, NULL, msg,
                                    sizeof msg)) {
    free(x.err);
    return INFINITY;
  }
  for (int64_t k = 0; k < x.n; k++)
    if (!(x.err[k] <= worst)) {
      worst = isnan(x.err[k]) ? INFINITY : x.err[k];
      *worst_row = check_row_of(&x, k);
    }
  free(x.err);
  return worst;
}

static void run_pto(const bench_opts *o, ops_case *c, pto_runtime *rt,
                    const pto_config *cfg, int repeats, int threads) {
  const ops_def *d = c->def;
  c->p = d->build(c->d);
  if (!c->p || pto_program_status(c->p) != PTO_OK) {
    fprintf(stderr, "pto-bench ops: %s %s: build: %s\n", d->name, c->shape,
            c->p ? pto_program_error(c->p) : "out of memory");
    c->failed = "build failed";
    return;
  }
  if (alloc_case(c, 1000 * (uint64_t)(d - bench_ops_defs)))
    return;
  uint64_t t0 = bench_now_ns();
  if (pto_compile(c->p, cfg, &c->e) != PTO_OK) {
    fprintf(stderr, "pto-bench ops: %s %s: compile: %s\n", d->name, c->shape,
            pto_program_error(c->p));
    c->failed = "compile failed";
    return;
  }
  c->compile_ms = (double)(bench_now_ns() - t0) * 1e-6;
  pto_executable_stats(c->e, &c->st);
  const void *const *in = (const void *const *)c->in;
  double *t = calloc((size_t)repeats, sizeof *t);
  if (!t) {
    c->failed = "out of memory";
    return;
  }
  bench_progress(o, "ops: %s %s: %u tasks, %u programs, %d + 1 runs", d->name,
                 c->shape, c->st.tasks, c->st.programs, repeats);
  for (int r = -1; r < repeats; r++) { /* r = -1: the warm-up */
    t0 = bench_now_ns();
    if (pto_runtime_run(rt, c->e, in, c->out) != PTO_OK) {
      fprintf(stderr, "pto-bench ops: %s %s: run: %s\n", d->name, c->shape,
              pto_executable_error(c->e));
      c->failed = "run failed";
      free(t);
      return;
    }
    if (r >= 0)
      t[r] = (double)(bench_now_ns() - t0) * 1e-6;
  }
  c->pto_min = c->pto_max = t[0];
  for (int r = 1; r < repeats; r++)
    c->pto_min = fmin(c->pto_min, t[r]), c->pto_max = fmax(c->pto_max, t[r]);
  c->pto_ms = bench_median(t, repeats);
  free(t);
  int64_t row;
  c->err = check(o, c, (const void *const *)c->out, "PTO", threads, &row);
  c->ok = c->err <= d->tol;
  if (!c->ok)
    fprintf(stderr,
            "pto-bench ops: %s %s: WRONG RESULT from PTO: row %lld: "
            "relative error %.3g > %.0e\n",
            d->name, c->shape, (long long)row, c->err, d->tol);
}

/* --trace: one more run of each operator that ran, on a tracing runtime of
 * prm's workers (bench_traced_run: its first run warms the new runtime),
 * its swimlane in FILE (FILE-OP.json for several) and its summary on
 * stderr. 1 when one could not be written. */
static int trace_cases(const char *cmd, const char *path, ops_case *cs, int n,
                       const pto_runtime_params *prm) {
  int rc = 0;
  for (int i = 0; i < n; i++) {
    ops_case *c = &cs[i];
    char file[4096];
    if (c->failed || !c->e)
      continue;
    if (bench_case_path(file, sizeof file, path, c->def->name, n > 1, 0)) {
      fprintf(stderr, "pto-bench %s: --trace %s: path too long\n", cmd, path);
      return 1;
    }
    pto_runtime_params p = *prm;
    p.trace = 1;
    pto_runtime *trt = NULL;
    pto_status st = pto_runtime_new(&p, &trt);
    const int started = st == PTO_OK; /* else the runtime's error says why */
    if (started) {
      st = bench_traced_run(trt, c->e, (const void *const *)c->in, c->out);
      pto_runtime_free(trt);
      if (st == PTO_OK)
        st = pto_executable_write_trace(c->e, file);
    }
    if (st != PTO_OK) {
      fprintf(stderr, "pto-bench %s: %s: --trace %s: %s: %s\n", cmd,
              c->def->name, file, pto_strerror(st),
              started ? pto_executable_error(c->e) : pto_runtime_error(NULL));
      rc = 1;
      continue;
    }
    fprintf(stderr, "pto-bench %s: %s: swimlane of one traced run in %s\n", cmd,
            c->def->name, file);
    pto_executable_trace_summary(c->e, stderr);
  }
  return rc;
}

/* ---- PyTorch: one process for every operator ----------------------------- */

static json_t *dims_json(const int64_t *d) {
  json_t *a = json_array();
  for (int i = 0; i < OPS_MAX_DIMS && d[i]; i++)
    json_array_append_new(a, json_integer((json_int_t)d[i]));
  return a;
}

/* Each case's inputs into dir/<op>/ with its meta.json, then the peer run
 * once over all of them; each case's time, form and outputs read back and
 * checked. -1 when the peer could not run (said on stderr). */
static int run_torch(const bench_opts *o, const bench_peer *peer, ops_case *cs,
                     int n, int repeats, int threads) {
  char *dir = bench_tmpdir_new("ops"), err[1024], sub[4096], path[4096];
  json_t *top = json_pack("{s:s, s:[]}", "workload", "ops", "ops"), *res = NULL;
  int rc = -1;
  if (!dir || !top)
    goto done;
  for (int i = 0; i < n; i++) {
    ops_case *c = &cs[i];
    if (c->failed)
      continue;
    json_t *names = json_array(), *meta;
    for (int k = 0; k < OPS_MAX_OUTPUTS && c->def->outputs[k]; k++)
      json_array_append_new(names, json_string(c->def->outputs[k]));
    meta = json_pack("{s:s, s:s, s:o, s:o}", "workload", "ops", "op",
                     c->def->name, "dims", dims_json(c->d), "outputs", names);
    if (bench_path(sub, sizeof sub, dir, c->def->name) ||
        bench_write_arrays(sub, c->in_a, (size_t)c->n_in, meta, err,
                           sizeof err)) {
      fprintf(stderr, "pto-bench ops: %s: peer inputs: %s\n", c->def->name,
              err);
      json_decref(meta);
      goto done;
    }
    json_decref(meta);
    json_array_append_new(json_object_get(top, "ops"),
                          json_string(c->def->name));
  }
  if (bench_path(path, sizeof path, dir, "meta.json") ||
      json_dump_file(top, path, 0)) {
    fprintf(stderr, "pto-bench ops: cannot write %s\n", path);
    goto done;
  }
  bench_progress(o, "ops: PyTorch %s in %s on %d threads, %d + 1 runs each",
                 peer->torch, peer->python, threads, repeats);
  if (!(res = bench_peer_run("ops", peer, "ops", dir, threads, repeats, 1,
                             !o->progress)))
    goto done;
  json_t *ops = json_object_get(res, "ops");
  for (int i = 0; i < n; i++) {
    ops_case *c = &cs[i];
    json_t *r = json_object_get(ops, c->def->name);
    if (c->failed)
      continue;
    const char *best = json_string_value(json_object_get(r, "best"));
    json_t *vs = json_object_get(r, "variants"), *v;
    const char *name;
    if (!best) {
      fprintf(stderr, "pto-bench ops: %s: the peer gave no result\n",
              c->def->name);
      c->torch_ok = 0;
      continue;
    }
    snprintf(c->torch_best, sizeof c->torch_best, "%s", best);
    c->torch_variants = json_object();
    json_object_foreach(vs, name, v) {
      json_t *med = json_object_get(v, "median_ms");
      json_object_set_new(c->torch_variants, name,
                          json_is_number(med)
                              ? json_real(json_number_value(med))
                              : json_null());
      if (!strcmp(name, best) && json_is_number(med))
        c->torch_ms = json_number_value(med);
    }
    c->torch_ok = 0;
    for (int k = 0; k < OPS_MAX_OUTPUTS && c->def->outputs[k]; k++) {
      const bench_array *a = &c->out_a[k];
      char file[256];
      snprintf(file, sizeof file, "%s/%s.npy", c->def->name, a->name);
      if (!(c->tout[k] = pto_buffer_alloc(bench_array_count(a) * 4)) ||
          bench_path(path, sizeof path, dir, file) ||
          bench_npy_load_into(path, a->dtype, a->ndim, a->shape, c->tout[k],
                              err, sizeof err)) {
        fprintf(stderr, "pto-bench ops: %s: the peer's output: %s\n",
                c->def->name, c->tout[k] ? err : "out of memory");
        goto next;
      }
    }
    int64_t row;
    c->torch_err =
        check(o, c, (const void *const *)c->tout, "PyTorch", threads, &row);
    c->torch_ok = c->torch_err <= c->def->tol;
    if (!c->torch_ok)
      fprintf(stderr,
              "pto-bench ops: %s %s: WRONG RESULT from PyTorch: row "
              "%lld: relative error %.3g > %.0e\n",
              c->def->name, c->shape, (long long)row, c->torch_err,
              c->def->tol);
  next:;
  }
  rc = 0;
done:
  json_decref(res);
  json_decref(top);
  bench_tmpdir_free(dir);
  return rc;
}

/* ---- the command ------------------------------------------------------------
 */

static void report(const bench_opts *o, const char *workload, ops_case *cs,
                   int n, int threads, double peak, double bw,
                   const bench_peer *peer, const char *config) {
  FILE *f = bench_out(o);
  /* what was compiled with: --config's file, or PTO_CONFIG's (merged into
   * every compile), or the compiler's choices alone */
  const char *env = getenv("PTO_CONFIG");
  char how[300] = "no tile set, no config";
  if (config)
    snprintf(how, sizeof how, "config %s", config);
  else if (env && env[0])
    snprintf(how, sizeof how, "PTO_CONFIG=%s", config = env);
  fprintf(f,
          "%s f32: PTO (%s tile instructions, %s) "
          "against %s%s; FMA peak %.1f GFLOP/s, DRAM (STREAM triad) "
          "%.1f GB/s on %d threads\n",
          workload, pto_isa_name(), how, peer ? "PyTorch " : "no PyTorch peer",
          peer ? peer->torch : "", peak, bw, threads);
  fprintf(f, "%-13s %-20s %9s %9s %-15s %7s %4s %10s %7s %11s %8s  %s\n", "op",
          "shape", "PTO ms", "torch ms", "torch form", "ratio", "roof", "rate",
          "of roof", "tasks/progs", "max err", "check");
  for (int i = 0; i < n; i++) {
    ops_case *c = &cs[i];
    const double t_fma = peak > 0 ? c->flops / (peak * 1e9) : 0,
                 t_dram = bw > 0 ? c->bytes / (bw * 1e9) : 0;
    const int fma = t_fma > t_dram;
    const double roof_s = fma ? t_fma : t_dram,
                 frac = c->failed ? 0 : roof_s / (c->pto_ms * 1e-3),
                 rate = c->failed ? 0
                        : fma     ? c->flops / c->pto_ms * 1e-6
                                  : c->bytes / c->pto_ms * 1e-6;
    char tm[24] = "-", ratio[16] = "-", rt[24], tp[24], chk[32];
    if (c->torch_ms > 0) {
      snprintf(tm, sizeof tm, "%.2f", c->torch_ms);
      snprintf(ratio, sizeof ratio, "%.2fx", c->torch_ms / c->pto_ms);
    }
    snprintf(rt, sizeof rt, "%.1f %s", rate, fma ? "GF/s" : "GB/s");
    snprintf(tp, sizeof tp, "%u/%u", c->st.tasks, c->st.programs);
    snprintf(chk, sizeof chk, "%s%s",
             c->failed ? c->failed
             : c->ok   ? "ok"
                       : "WRONG",
             c->torch_ok == 0 ? ", torch WRONG" : "");
    fprintf(f,
            "%-13s %-20s %9.2f %9s %-15s %7s %4s %10s %6.1f%% %11s %8.1e  %s\n",
            c->def->name, c->shape, c->pto_ms, tm,
            c->torch_best[0] ? c->torch_best : "-", ratio, fma ? "fma" : "dram",
            rt, 100 * frac, tp, c->err, chk);
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:o, s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, "
        "s:f, s:I, s:i, s:i, s:f, s:f, s:I, s:b}",
        "workload", workload, "op", c->def->name, "shape", c->shape, "dims",
        dims_json(c->d), "threads", threads, "isa", pto_isa_name(), "roof",
        fma ? "fma" : "dram", "roof_fraction", frac,
        fma ? "roof_gflops" : "roof_gbps", fma ? peak : bw, "peak_gflops", peak,
        "dram_gbps", bw, "gflop", c->flops * 1e-9, "pto_gflops",
        c->failed ? 0 : c->flops / c->pto_ms * 1e-6, "pto_gbps",
        c->failed ? 0 : c->bytes / c->pto_ms * 1e-6, "bytes",
        (json_int_t)c->bytes, "tasks", (int)c->st.tasks, "programs",
        (int)c->st.programs, "max_rel_err", isfinite(c->err) ? c->err : -1.0,
        "tolerance", c->def->tol, "checked_rows", (json_int_t)c->checked,
        "check", !c->failed && c->ok);
    json_object_set_new(j, "pto_ms",
                        c->failed ? json_null() : json_real(c->pto_ms));
    json_object_set_new(j, "pto_min_ms", json_real(c->pto_min));
    json_object_set_new(j, "pto_max_ms", json_real(c->pto_max));
    json_object_set_new(j, "compile_ms", json_real(c->compile_ms));
    json_object_set_new(j, "torch_ms",
                        c->torch_ms > 0 ? json_real(c->torch_ms) : json_null());
    json_object_set_new(j, "ratio",
                        c->torch_ms > 0 && !c->failed
                            ? json_real(c->torch_ms / c->pto_ms)
                            : json_null());
    json_object_set_new(j, "torch_variant",
                        c->torch_best[0] ? json_string(c->torch_best)
                                         : json_null());
    json_object_set_new(j, "torch_variants",
                        c->torch_variants ? json_incref(c->torch_variants)
                                          : json_null());
    json_object_set_new(j, "torch_version",
                        peer ? json_string(peer->torch) : json_null());
    json_object_set_new(j, "torch_check",
                        c->torch_ok < 0 ? json_null()
                                        : json_boolean(c->torch_ok));
    json_object_set_new(j, "torch_max_rel_err",
                        c->torch_ok < 0          ? json_null()
                        : isfinite(c->torch_err) ? json_real(c->torch_err)
                                                 : json_real(-1));
    if (c->def->mode)
      json_object_set_new(j, "mode", json_string(c->def->mode));
    json_object_set_new(j, "config",
                        config ? json_string(config) : json_null());
    if (c->failed)
      json_object_set_new(j, "error", json_string(c->failed));
    json_array_append_new(bench_results(), j);
  }
}

/* `ops`, or `flash` (flash set): the operators with a mode only. */
static int run_ops(const bench_opts *o, int argc, char **argv, int flash) {
  const char *workload = flash ? "flash" : "ops";
  ops_opts s = {0};
  if (parse(argc, argv, &s))
    return 2;
  if (s.list) {
    for (size_t i = 0; i < bench_ops_count; i++) {
      char a[64];
      if (!bench_ops_defs[i].mode != !flash)
        continue;
      bench_ops_defs[i].shape(
          o->quick ? bench_ops_defs[i].dq : bench_ops_defs[i].d, a, sizeof a);
      printf("%-14s %-22s %s\n", bench_ops_defs[i].name, a,
             bench_ops_defs[i].what);
    }
    return 0;
  }
  if (!s.n_sel)
    for (size_t i = 0; i < bench_ops_count; i++)
      if (!bench_ops_defs[i].mode == !flash)
        s.sel[s.n_sel++] = (int)i;
  const int threads = bench_cores(o), n = s.n_sel;
  const int repeats = o->repeats ? o->repeats : o->quick ? 3 : 5;
  /* --config: its machine, knobs and overrides over `threads` workers */
  pto_config *cfg = NULL;
  if (s.config) {
    bench_harness h = bench_harness_default(workload);
    h.config_path = s.config;
    if (!(cfg = bench_harness_config(&h, threads)))
      return 1;
  }
  int rc = 0;
  bench_peer peer_s, *peer = NULL;
  if (!s.no_peer) {
    char why[2048];
    bench_openblas_coretype("ops"); /* PyTorch's f32 matmuls run on it */
    bench_progress(o, "ops: looking for the Python peer");
    if (!bench_peer_find(s.python, s.script, &peer_s, why, sizeof why))
      peer = &peer_s;
    else
      fprintf(stderr,
              "pto-bench ops: no PyTorch peer (%s; "
              "tools/install-deps.sh installs python3-torch): "
              "reporting PTO alone\n",
              why);
  }
  const char *isa = "none";
  bench_progress(o, "ops: FMA peak and DRAM bandwidth on %d threads", threads);
  double peak = bench_peak_fma(threads, 3, &isa), bw = dram_gbps(threads);

  ops_case *cs = calloc((size_t)n, sizeof *cs);
  pto_runtime *rt = NULL;
  pto_machine m;
  /* the defaults, unless --threads asks for other workers */
  pto_runtime_params prm =
      cfg ? pto_runtime_params_from_config(cfg) : pto_runtime_params_default();
  if (!cs || (!cfg && o->threads && bench_machine(workload, threads, &m))) {
    if (!cs)
      fprintf(stderr, "pto-bench %s: out of memory\n", workload);
    free(cs);
    pto_config_free(cfg);
    return 1;
  }
  if (!cfg && o->threads)
    prm.machine = &m;
  if (pto_runtime_new(&prm, &rt) != PTO_OK) {
    fprintf(stderr, "pto-bench %s: runtime: %s\n", workload,
            pto_runtime_error(NULL));
    free(cs);
    pto_config_free(cfg);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    ops_case *c = &cs[i];
    c->def = &bench_ops_defs[s.sel[i]];
    c->d = o->quick ? c->def->dq : c->def->d;
    c->def->shape(c->d, c->shape, sizeof c->shape);
    c->flops = c->def->flops(c->d);
    c->torch_ok = -1;
    c->err = INFINITY;
    run_pto(o, c, rt, cfg, repeats, threads);
    if (c->failed || !c->ok)
      rc = 1;
  }
  pto_runtime_free(rt); /* its workers stopped while PyTorch runs */
  if (s.trace && trace_cases(workload, s.trace, cs, n, &prm))
    rc = 1;
  if (peer && run_torch(o, peer, cs, n, repeats, threads))
    rc = 1;
  for (int i = 0; i < n; i++)
    if (cs[i].torch_ok == 0)
      rc = 1;
  bench_peak_refresh(&peak, NULL, threads, 3); /* the best probe of the run */
  report(o, workload, cs, n, threads, peak, bw, peer, s.config);
  for (int i = 0; i < n; i++) {
    ops_case *c = &cs[i];
    for (int k = 0; k < MAX_IN; k++)
      free(c->in[k]);
    for (int k = 0; k < OPS_MAX_OUTPUTS; k++)
      free(c->out[k]), free(c->tout[k]);
    json_decref(c->torch_variants);
    pto_executable_free(c->e);
    pto_program_free(c->p);
  }
  free(cs);
  pto_config_free(cfg);
  return rc;
}

static int run(const bench_opts *o, int argc, char **argv) {
  return run_ops(o, argc, argv, 0);
}

const bench_cmd bench_ops = {
    "ops",
    "common operators as tensor ops, no tile set, against PyTorch "
    "and their roofs",
    run, usage};

static void flash_usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "[--quiet] flash\n"
        "                 [--list] [--no-peer] [--python PATH] [--peer-script "
        "FILE]\n"
        "                 [--trace FILE] [--config FILE]\n"
        "\n"
        "A dense causal flash attention, q, k, v [H, S, D] = [16, 4096, 128]\n"
        "f32 (--quick [2, 256, 64]; B = 1), which has no built-in, written\n"
        "twice with the public API: as tensor ops (mode \"tensor\": matmul,\n"
        "scale, iota/cmp/select mask, softmax, matmul; the compiler fuses\n"
        "it) and as a tile program (mode \"expert\", pto/tileprog.h:\n"
        "kernels/examples_flash.c, an online softmax of general\n"
        "instructions over the key blocks each query block sees, the\n"
        "blocks past the diagonal skipped). Both are run, checked and\n"
        "timed as `pto-bench ops` runs its operators (see its --help, as\n"
        "for --trace and --config), against PyTorch's\n"
        "scaled_dot_product_attention(is_causal=True) and its masked_fill\n"
        "form in the same run; GFLOP/s count the unmasked pairs only\n"
        "(4 S (S + 1) / 2 D H flops).\n"
        "JSON fields: those of `pto-bench ops`, with workload \"flash\" and\n"
        "mode (\"tensor\" or \"expert\").\n",
        f);
}

static int run_flash(const bench_opts *o, int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--op")) {
      fprintf(stderr, "pto-bench flash: unknown option '%s'\n", argv[i]);
      return 2;
    }
  return run_ops(o, argc, argv, 1);
}

const bench_cmd bench_flash = {
    "flash",
    "causal flash attention as tensor ops and as a tile program, against "
    "PyTorch",
    run_flash, flash_usage};
