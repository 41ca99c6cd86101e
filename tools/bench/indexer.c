/* pto-bench indexer: DeepSeek-V3.2's lightning indexer with its top-k
 * (pto/indexer.h), built, compiled and run exactly as an application does
 * (pto_indexer_program, pto_compile, pto_runtime_run on a runtime of every
 * core), against PyTorch on the same inputs in the same invocation
 * (tools/pto_bench_torch.py, run through bench/peer.c), with the fp32 FMA
 * peak measured in the same run. Every result, PTO's and PyTorch's, is
 * checked with pto_indexer_check (scores recomputed in double, spread over
 * the threads) before a time is reported; a wrong one fails the command.
 *
 * Per case: random inputs from the seed; compile (timed apart); one run and
 * its check; --save; a warm-up and the timed runs; --trace's extra run; the
 * runtime freed (its workers stop spinning); the peer on the inputs written
 * as .npy into a private directory; its outputs read back and checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/case.h"
#include "bench/preset.h"
#include "pto/indexer.h"
#include "pto/pto.h"

enum { P_B, P_S1, P_S2, P_H, P_D, P_TOPK, N_PARAMS };

static const bench_param params[N_PARAMS] = {
    {"b", "B", 1, 4096},          {"s1", "S1", 1, 1 << 20},
    {"s2", "S2", 1, 1 << 28},     {"h", "H", 1, 4096},
    {"d", "D", 1, 1 << 16},       {"topk", "topk", 1, 1 << 24},
};

static const bench_preset presets[] = {
    {"smoke", {1, 16, 1024, 64, 128, 128}},
    {"small", {1, 64, 4096, 64, 128, 512}},
    {"medium", {1, 128, 8192, 64, 128, 512}},
    {"real-topk", {1, 32, 8192, 64, 128, 2048}},
    {"large", {1, 128, 32768, 64, 128, 2048}},
    {"decode", {16, 1, 32768, 64, 128, 2048}},
};

static const bench_preset_table table = {
    "indexer", params,   N_PARAMS, presets, sizeof presets / sizeof presets[0],
    "medium",  "smoke"};

#define MAX_BYTES (16.0 * (1 << 30)) /* inputs and outputs, both sides */

typedef struct ix_case {
  const char *preset;
  pto_indexer_dims d;
  pto_indexer_params prm;
  size_t nq, nk, nw, no;
  float *q, *k, *w, *val, *tval;
  int32_t *idx, *tidx;
} ix_case;

/* ---- usage and options ------------------------------------------------------------ */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "indexer\n"
        "                 [--preset NAME[,NAME...]|all] [--b N] [--s1 N] "
        "[--s2 N] [--h N]\n"
        "                 [--d N] [--topk N] [--mask none|causal] "
        "[common options]\n"
        "\n"
        "The lightning indexer with its top-k (pto/indexer.h), f32:\n"
        "  score[b,i,j] = sum_h w[b,i,h] * ReLU(q[b,i,h,:] . k[b,j,:])\n"
        "over the keys j query i sees (causal: j <= S2 - S1 + i), then per\n"
        "query the topk largest, as (indices, values). PTO on a runtime of\n"
        "every core (--threads N: N) against PyTorch on the same inputs and\n"
        "threads in the same run (tools/pto_bench_torch.py: its chunked and\n"
        "naive forms, the faster one counts). Both results are checked with\n"
        "pto_indexer_check (scores recomputed in double) before any time is\n"
        "reported; a wrong result fails the command. Without a Python that\n"
        "imports torch, one line says so and PTO is reported alone.\n"
        "\n"
        "presets (--quick: smoke; every value also settable by its flag,\n"
        "which then applies to every chosen preset):\n",
        f);
  bench_preset_usage(&table, f);
  fputs("\noptions:\n"
        "  --preset NAMES   presets to run, comma-separated, or all\n"
        "  --mask MODE      none or causal (default causal)\n",
        f);
  bench_harness_usage(f);
  fputs("\nTable: median ms of R timed runs after a warm-up, [min-max]\n"
        "beside it; ratio = PyTorch / PTO (above 1: PTO is faster); GF/s =\n"
        "2 x H x D per visible (query, key) pair / PTO's median (top-k not\n"
        "counted); %pk = that over the FMA peak measured in this run on the\n"
        "same threads; compile = pto_compile alone, ms.\n"
        "JSON fields (one object per case): workload, preset, b, s1, s2, h,\n"
        "d, topk, mask, threads, seed, repeats, tasks, compile_ms, pto_ms,\n"
        "pto_ms_min, pto_ms_max, torch_ms, torch_ms_min, torch_ms_max,\n"
        "torch_variant, torch_variants, torch_version, ratio, gflop,\n"
        "pto_gflops, torch_gflops, peak_gflops, peak_isa,\n"
        "pto_peak_fraction, check, torch_check (null: no peer).\n",
        f);
}

typedef struct ix_opts {
  bench_harness h;
  bench_preset_sel sel;
  pto_mask_mode mask;
} ix_opts;

static int parse(int argc, char **argv, ix_opts *x) {
  for (int i = 1; i < argc; i++) {
    int r = bench_preset_arg(&table, &x->sel, argc, argv, &i);
    if (!r)
      r = bench_harness_arg(&x->h, argc, argv, &i);
    if (!r && !strcmp(argv[i], "--mask")) {
      const char *v = ++i < argc ? argv[i] : "";
      r = 1;
      if (pto_mask_from_name(v, &x->mask)) {
        fprintf(stderr,
                "pto-bench indexer: --mask: unknown mask '%s' (none or "
                "causal)\n",
                v);
        r = -1;
      }
    }
    if (!r) {
      fprintf(stderr, "pto-bench indexer: unknown option '%s'\n", argv[i]);
      r = -1;
    }
    if (r < 0)
      return -1;
  }
  return 0;
}

/* ---- one case ---------------------------------------------------------------------- */

static void case_free(ix_case *c) {
  free(c->q);
  free(c->k);
  free(c->w);
  free(c->idx);
  free(c->val);
  free(c->tidx);
  free(c->tval);
}

/* Sizes and buffers for case k; 0 or -1 (printed). */
static int case_new(const ix_opts *x, int k, ix_case *c) {
  int64_t v[N_PARAMS];
  memset(c, 0, sizeof *c);
  bench_preset_values(&table, &x->sel, k, v);
  c->preset = bench_preset_name(&table, &x->sel, k);
  c->d = (pto_indexer_dims){v[P_B], v[P_S1], v[P_S2], v[P_H], v[P_D]};
  c->prm = pto_indexer_params_default();
  c->prm.topk = v[P_TOPK];
  c->prm.mask = x->mask;
  const double b = (double)v[P_B], s1 = (double)v[P_S1],
               s2 = (double)v[P_S2], h = (double)v[P_H], d = (double)v[P_D],
               t = (double)v[P_TOPK];
  const double bytes = 4 * (b * s1 * h * d + b * s2 * d + b * s1 * h +
                            4 * b * s1 * t);
  if (bytes > MAX_BYTES) {
    fprintf(stderr,
            "pto-bench indexer: %s: B=%lld S1=%lld S2=%lld H=%lld D=%lld "
            "topk=%lld needs %.1f GiB of buffers, more than %.0f\n",
            c->preset, (long long)v[P_B], (long long)v[P_S1],
            (long long)v[P_S2], (long long)v[P_H], (long long)v[P_D],
            (long long)v[P_TOPK], bytes / (1 << 30), MAX_BYTES / (1 << 30));
    return -1;
  }
  c->nq = (size_t)(b * s1 * h * d);
  c->nk = (size_t)(b * s2 * d);
  c->nw = (size_t)(b * s1 * h);
  c->no = (size_t)(b * s1 * t);
  c->q = pto_buffer_alloc(c->nq * sizeof(float));
  c->k = pto_buffer_alloc(c->nk * sizeof(float));
  c->w = pto_buffer_alloc(c->nw * sizeof(float));
  c->idx = pto_buffer_alloc(c->no * sizeof(int32_t));
  c->val = pto_buffer_alloc(c->no * sizeof(float));
  c->tidx = pto_buffer_alloc(c->no * sizeof(int32_t));
  c->tval = pto_buffer_alloc(c->no * sizeof(float));
  if (!c->q || !c->k || !c->w || !c->idx || !c->val || !c->tidx ||
      !c->tval) {
    fprintf(stderr, "pto-bench indexer: %s: out of memory for %.1f GiB\n",
            c->preset, bytes / (1 << 30));
    case_free(c);
    return -1;
  }
  return 0;
}

/* The case as meta.json says it (for --save and the peer). */
static json_t *case_meta(const ix_case *c, uint64_t seed) {
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:{s:s, "
      "s:s, s:s}, s:{s:s, s:s}}",
      "workload", "indexer", "preset", c->preset, "b", (json_int_t)c->d.b,
      "s1", (json_int_t)c->d.s1, "s2", (json_int_t)c->d.s2, "h",
      (json_int_t)c->d.h, "d", (json_int_t)c->d.d, "topk",
      (json_int_t)c->prm.topk, "mask", pto_mask_name(c->prm.mask), "seed",
      (json_int_t)seed, "dtype", "float32", "score",
      "s[b,i,j] = sum_h w[b,i,h] * relu(q[b,i,h,:] . k[b,j,:]) for visible "
      "j (causal: j <= s2 - s1 + i), else -inf",
      "inputs", "q", "[b,s1,h,d] float32", "k", "[b,s2,d] float32", "w",
      "[b,s1,h] float32", "outputs", "indices",
      "[b,s1,topk] int32: the topk largest visible scores' keys, by (score "
      "descending, index ascending), then -1",
      "values", "[b,s1,topk] float32: their scores, then -inf");
}

static void case_arrays(const ix_case *c, const int32_t *idx,
                        const float *val, bench_array *a) {
  const pto_indexer_dims *d = &c->d;
  a[0] = (bench_array){"q", BENCH_F32, 4, {d->b, d->s1, d->h, d->d}, c->q};
  a[1] = (bench_array){"k", BENCH_F32, 3, {d->b, d->s2, d->d}, c->k};
  a[2] = (bench_array){"w", BENCH_F32, 3, {d->b, d->s1, d->h}, c->w};
  a[3] = (bench_array){"indices", BENCH_I32, 3, {d->b, d->s1, c->prm.topk},
                       idx};
  a[4] = (bench_array){"values", BENCH_F32, 3, {d->b, d->s1, c->prm.topk},
                       val};
}

typedef struct check_ctx {
  const ix_case *c;
  const int32_t *idx;
  const float *val;
} check_ctx;

static int check_rows(void *ctx, int64_t r0, int64_t r1, char *msg,
                      size_t size) {
  const check_ctx *x = ctx;
  const ix_case *c = x->c;
  return pto_indexer_check(&c->d, &c->prm, c->q, c->k, c->w, x->idx, x->val,
                           r0, r1, 0, msg, size);
}

/* Checks (idx, val) from `who`; 0, or -1 (printed). */
static int check(const bench_opts *o, const ix_case *c, int threads,
                 const char *who, const int32_t *idx, const float *val) {
  check_ctx x = {c, idx, val};
  return bench_case_check(o, "indexer", c->preset, who, threads,
                          c->d.b * c->d.s1, check_rows, &x);
}

/* The peer on c's inputs, its outputs checked; fills res->torch*, 0, or
 * -1 (printed). */
static int run_peer(const bench_opts *o, const ix_opts *x, const ix_case *c,
                    const bench_peer *peer, int threads, int repeats,
                    bench_case_result *res) {
  bench_array a[5];
  json_t *meta = case_meta(c, x->h.seed);
  case_arrays(c, c->tidx, c->tval, a);
  int rc = !meta || bench_case_peer_run(o, &x->h, c->preset, peer, a, 3, meta,
                                        a + 3, 2, threads, repeats, res);
  json_decref(meta);
  if (rc || check(o, c, threads, "PyTorch", c->tidx, c->tval))
    return -1;
  res->torch_checked = 1;
  return 0;
}

/* Runs case k. 0, or 1 (a failure, printed; res says how far it got). */
static int run_case(const bench_opts *o, const ix_opts *x, int k,
                    const pto_config *cfg, const bench_peer *peer,
                    int threads, bench_case_result *res) {
  ix_case c;
  bench_pto r;
  pto_program *p = NULL;
  memset(&r, 0, sizeof r);
  if (case_new(x, k, &c))
    return 1;
  int rc = 1, several = x->sel.n > 1;
  const uint64_t seed = x->h.seed;
  bench_fill_uniform(c.q, c.nq, seed, 1, -1.0f, 1.0f);
  bench_fill_uniform(c.k, c.nk, seed, 2, -1.0f, 1.0f);
  bench_fill_uniform(c.w, c.nw, seed, 3, -1.0f, 1.0f);
  const double gflop = pto_indexer_gflop(&c.d, &c.prm);
  const int repeats = bench_case_repeats(o, gflop);
  bench_progress(o, "indexer: %s: compiling", c.preset);
  p = pto_indexer_program(&c.d, &c.prm);
  char who[96];
  snprintf(who, sizeof who, "indexer: %s", c.preset);
  if (bench_pto_compile(&r, who, p, cfg)) {
    if (p && pto_program_status(p) == PTO_OK)
      fprintf(stderr, "pto-bench %s: a config (--config) sets tiles per "
                      "label: \"indexer.qk\", \"indexer.topk\"\n",
              who);
    goto done;
  }
  res->compile_ms = r.compile_ms;
  res->tasks = r.tasks;
  const void *in[3] = {c.q, c.k, c.w};
  void *out[2] = {c.idx, c.val};
  bench_progress(o, "indexer: %s: first PTO run (%u tasks)", c.preset,
                 r.tasks);
  if (bench_pto_run(&r, in, out))
    goto done;
  if (check(o, &c, threads, "PTO", c.idx, c.val)) {
    res->pto_wrong = 1;
    goto done;
  }
  res->pto_checked = 1;
  if (x->h.save_dir) {
    bench_array a[5];
    json_t *meta = case_meta(&c, seed);
    case_arrays(&c, c.idx, c.val, a);
    int bad =
        !meta || bench_case_save(o, &x->h, c.preset, several, a, 5, meta);
    json_decref(meta);
    if (bad)
      goto done;
  }
  bench_progress(o, "indexer: %s: timing PTO, 1 warm-up + %d runs", c.preset,
                 repeats);
  if (bench_pto_time(&r, in, out, 1, repeats, &res->pto))
    goto done;
  if (x->h.trace_path) {
    char path[4096];
    if (bench_case_path(path, sizeof path, x->h.trace_path, c.preset,
                        several, 0) ||
        bench_pto_trace(&r, in, out, path))
      goto done;
  }
  bench_pto_stop(&r); /* PTO's workers stop before the peer runs */
  if (peer && run_peer(o, x, &c, peer, threads, repeats, res))
    goto done;
  rc = 0;
done:
  bench_pto_free(&r);
  pto_program_free(p);
  case_free(&c);
  return rc;
}

/* ---- the command --------------------------------------------------------------------- */

static void report(const bench_opts *o, const ix_opts *x, int k, int threads,
                   double peak, const char *peak_isa, const bench_peer *peer,
                   const bench_case_result *res) {
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &x->sel, k, v);
  const char *name = bench_preset_name(&table, &x->sel, k);
  pto_indexer_dims d = {v[P_B], v[P_S1], v[P_S2], v[P_H], v[P_D]};
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = v[P_TOPK];
  prm.mask = x->mask;
  const double gflop = pto_indexer_gflop(&d, &prm);
  char nm[32];
  snprintf(nm, sizeof nm, "%s%s", name,
           bench_preset_changed(&table, &x->sel, k) ? "*" : "");
  FILE *f = bench_out(o);
  fprintf(f, "%-10s %3lld %4lld %6lld %3lld %4lld %5lld %-6s ", nm,
          (long long)d.b, (long long)d.s1, (long long)d.s2, (long long)d.h,
          (long long)d.d, (long long)prm.topk, pto_mask_name(prm.mask));
  bench_case_print(f, res, threads, gflop, peak, peer != NULL);
  fflush(f);
  json_t *j = json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:i, s:I}", "workload",
      "indexer", "preset", name, "b", (json_int_t)d.b, "s1", (json_int_t)d.s1,
      "s2", (json_int_t)d.s2, "h", (json_int_t)d.h, "d", (json_int_t)d.d,
      "topk", (json_int_t)prm.topk, "mask", pto_mask_name(prm.mask),
      "threads", threads, "seed", (json_int_t)x->h.seed);
  bench_case_json(j, res, gflop, peak, peak_isa, peer);
  json_array_append_new(bench_results(), j);
}

static int run(const bench_opts *o, int argc, char **argv) {
  ix_opts x;
  memset(&x, 0, sizeof x);
  x.h = bench_harness_default("indexer");
  x.mask = PTO_MASK_CAUSAL;
  if (parse(argc, argv, &x)) {
    fprintf(stderr, "(pto-bench indexer --help for usage)\n");
    return 2;
  }
  bench_preset_finish(&table, &x.sel, o->quick);
  const int threads = bench_cores(o);
  pto_config *cfg = bench_harness_config(&x.h, threads);
  if (!cfg)
    return 1;

  bench_peer peer;
  const bench_peer *pp = bench_case_peer(o, &x.h, &peer);
  const char *peak_isa = "none";
  bench_progress(o, "indexer: FMA peak on %d threads", threads);
  const double peak = bench_peak_fma(threads, o->quick ? 2 : 5, &peak_isa);

  FILE *f = bench_out(o);
  fprintf(f,
          "indexer f32: PTO (%s tile instructions) against %s%s%s%s; "
          "%s FMA peak on %d threads %.1f GFLOP/s\n",
          pto_isa_name(), pp ? "PyTorch " : "no peer", pp ? pp->torch : "",
          pp ? " in " : "", pp ? pp->python : "", peak_isa, threads, peak);
  fprintf(f, "%-10s %3s %4s %6s %3s %4s %5s %-6s ", "preset", "B", "S1",
          "S2", "H", "D", "topk", "mask");
  bench_case_print_head(f);
  fflush(f);
  int rc = 0;
  for (int k = 0; k < x.sel.n; k++) {
    bench_case_result res;
    memset(&res, 0, sizeof res);
    bench_progress(o, "indexer: preset %s (%d of %d)",
                   bench_preset_name(&table, &x.sel, k), k + 1, x.sel.n);
    if (run_case(o, &x, k, cfg, pp, threads, &res))
      rc = 1;
    report(o, &x, k, threads, peak, peak_isa, pp, &res);
    bench_case_result_free(&res);
  }
  pto_config_free(cfg);
  return rc;
}

const bench_cmd bench_indexer = {
    "indexer", "lightning indexer + top-k against PyTorch, checked", run,
    usage};
