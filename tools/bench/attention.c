/* pto-bench attention: DeepSeek-V3.2's sparse MLA attention over the top-k
 * keys the lightning indexer picked (pto/attention.h), built, compiled and
 * run exactly as an application does (pto_attention_program, pto_compile,
 * pto_runtime_run on a runtime of every core), against PyTorch on the same
 * inputs in the same invocation (tools/pto_bench_torch.py, run through
 * bench/case.c), with the fp32 FMA peak measured in the same run. Every
 * result, PTO's and PyTorch's, is checked with pto_attention_check (the
 * reference in double, spread over the threads) before a time is
 * reported; a wrong one fails the command.
 *
 * Per case: random q and kv from the seed, indices as the indexer hands
 * them over (bench/indices.c: distinct visible keys, --invalid's share of
 * invalid slots scattered through the rows); compile (timed apart); one
 * run and its check; --save; a warm-up and the timed runs; --trace's extra
 * run; the runtime freed (its workers stop spinning); the peer on the same
 * inputs; its outputs read back and checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/case.h"
#include "bench/indices.h"
#include "bench/preset.h"
#include "pto/attention.h"
#include "pto/pto.h"

enum { P_B, P_S1, P_S2, P_H, P_D, P_DV, P_TOPK, N_PARAMS };

static const bench_param params[N_PARAMS] = {
    {"b", "B", 1, 4096},          {"s1", "S1", 1, 1 << 20},
    {"s2", "S2", 1, 1 << 28},     {"h", "H", 1, 4096},
    {"d", "D", 1, 1 << 16},       {"dv", "dv", 1, 1 << 16},
    {"topk", "topk", 1, 1 << 24},
};

/* D = 576: 512 latent + 64 rope; V = the first 512 columns of each row */
static const bench_preset presets[] = {
    {"smoke", {1, 16, 1024, 128, 576, 512, 128}},
    {"small", {1, 64, 4096, 128, 576, 512, 512}},
    {"medium", {1, 128, 8192, 128, 576, 512, 512}},
    {"real-topk", {1, 32, 8192, 128, 576, 512, 2048}},
    {"large", {1, 128, 8192, 128, 576, 512, 2048}},
    {"decode", {16, 1, 32768, 128, 576, 512, 2048}},
};

static const bench_preset_table table = {
    "attention", params, N_PARAMS, presets, sizeof presets / sizeof presets[0],
    "medium",    "smoke"};

#define MAX_BYTES (16.0 * (1 << 30)) /* inputs and outputs, both sides */

typedef struct at_opts {
  bench_harness h;
  bench_preset_sel sel;
  double scale;   /* --scale (0: 1 / sqrt(D)) */
  int causal;     /* --causal */
  double invalid; /* --invalid PCT */
} at_opts;

typedef struct at_case {
  const char *preset;
  pto_attention_dims d;
  pto_attention_params prm;
  double scale; /* the one applied */
  bench_indices_count slots;
  size_t nq, nkv, ni, no, nl;
  float *q, *kv, *out, *lse, *tout, *tlse;
  int32_t *idx;
} at_case;

/* ---- usage and options ------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "attention\n"
        "                 [--preset NAME[,NAME...]|all] [--b N] [--s1 N] "
        "[--s2 N] [--h N]\n"
        "                 [--d N] [--dv N] [--topk N] [--scale X] [--causal]\n"
        "                 [--invalid PCT] [common options]\n"
        "\n"
        "DeepSeek's sparse MLA attention (pto/attention.h), f32: for query i\n"
        "of batch b and each of its topk slots holding a valid key j (0 <= j\n"
        "< S2; causal: also j <= S2 - S1 + i),\n"
        "  x[h,t] = scale * q[b,i,h,:] . kv[b,j,:]     (one KV head)\n"
        "  lse[b,i,h] = ln sum_t exp(x[h,t])\n"
        "  out[b,i,h,:] = sum_t exp(x[h,t] - lse) * kv[b,j,:dv]\n"
        "(a query with no valid slot: out 0, lse +inf). The indices are\n"
        "drawn uniformly without repetition from the keys each query sees,\n"
        "-1 after them when it sees fewer than topk. PTO on a runtime of\n"
        "every core (--threads N: N) against PyTorch on the same inputs and\n"
        "threads in the same run (tools/pto_bench_torch.py: gather, bmm,\n"
        "masked softmax, bmm, over all queries at once and in blocks of\n"
        "queries; the faster counts). Both results are checked with\n"
        "pto_attention_check (the reference in double; out abs 1e-5 / rel\n"
        "1e-4, lse 1e-6) before any time is reported; a wrong result fails\n"
        "the command. Without a Python that imports torch, one line says so\n"
        "and PTO is reported alone.\n"
        "\n"
        "presets (--quick: smoke; every value also settable by its flag,\n"
        "which then applies to every chosen preset):\n",
        f);
  bench_preset_usage(&table, f);
  fputs("\noptions:\n"
        "  --preset NAMES   presets to run, comma-separated, or all\n"
        "  --scale X        the softmax scale (default 0: 1/sqrt(D); the\n"
        "                   model uses 0.135234)\n"
        "  --causal         query i also sees only keys j <= S2 - S1 + i\n"
        "  --invalid PCT    make PCT % of all slots invalid (default 0),\n"
        "                   chosen at random through the rows and anywhere\n"
        "                   in a row: -1, INT32_MIN, S2, past S2, INT32_MAX,\n"
        "                   other negatives, and with --causal hidden keys\n",
        f);
  bench_harness_usage(f);
  fputs("\nTable: scale = the one applied; inv% = share of slots invalid\n"
        "(--invalid, and the -1 padding of causal queries that see fewer\n"
        "than topk keys); median ms of R timed runs after a warm-up,\n"
        "[min-max] beside it; ratio = PyTorch / PTO (above 1: PTO is\n"
        "faster); GF/s = 2 x B x S1 x H x topk x (D + dv) (every slot,\n"
        "pto_attention_gflop) / PTO's median; %pk = that over the FMA peak\n"
        "measured in this run on the same threads; compile = pto_compile\n"
        "alone, ms.\n"
        "JSON fields (one object per case): workload, preset, b, s1, s2, h,\n"
        "d, dv, topk, scale, causal, invalid_pct, valid_slots,\n"
        "invalid_slots, threads, seed, repeats, tasks, compile_ms, pto_ms,\n"
        "pto_ms_min, pto_ms_max, torch_ms, torch_ms_min, torch_ms_max,\n"
        "torch_variant, torch_variants, torch_version, ratio, gflop,\n"
        "pto_gflops, torch_gflops, peak_gflops, peak_isa,\n"
        "pto_peak_fraction, check, torch_check (null: no peer).\n",
        f);
}

static int parse(int argc, char **argv, at_opts *x) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int r = bench_preset_arg(&table, &x->sel, argc, argv, &i);
    if (!r)
      r = bench_harness_arg(&x->h, argc, argv, &i);
    if (!r && !strcmp(a, "--causal")) {
      x->causal = 1;
      r = 1;
    }
    if (!r && !strcmp(a, "--scale")) {
      i++;
      r = bench_parse_f64("attention", a, v, -1e30, 1e30, &x->scale) ? -1 : 1;
    }
    if (!r && !strcmp(a, "--invalid")) {
      i++;
      r = bench_parse_f64("attention", a, v, 0, 100, &x->invalid) ? -1 : 1;
    }
    if (!r) {
      fprintf(stderr, "pto-bench attention: unknown option '%s'\n", a);
      r = -1;
    }
    if (r < 0)
      return -1;
  }
  return 0;
}

/* ---- one case ---------------------------------------------------------- */

/* Case k's sizes and parameters, as the program gets them. */
static void case_dims(const at_opts *x, int k, pto_attention_dims *d,
                      pto_attention_params *prm) {
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &x->sel, k, v);
  *d = (pto_attention_dims){v[P_B], v[P_S1], v[P_S2],  v[P_H],
                            v[P_D], v[P_DV], v[P_TOPK]};
  *prm = pto_attention_params_default();
  prm->scale = x->scale;
  prm->causal = x->causal;
}

static void case_free(at_case *c) {
  free(c->q);
  free(c->kv);
  free(c->idx);
  free(c->out);
  free(c->lse);
  free(c->tout);
  free(c->tlse);
}

/* Sizes, buffers and inputs for case k; 0 or -1 (printed). */
static int case_new(const at_opts *x, int k, at_case *c) {
  memset(c, 0, sizeof *c);
  c->preset = bench_preset_name(&table, &x->sel, k);
  case_dims(x, k, &c->d, &c->prm);
  const pto_attention_dims *d = &c->d;
  c->scale = x->scale != 0 ? x->scale : 1.0 / sqrt((double)d->d);
  if (d->dv > d->d) {
    fprintf(stderr,
            "pto-bench attention: %s: dv=%lld is more than D=%lld (V is "
            "the first dv columns of kv's rows)\n",
            c->preset, (long long)d->dv, (long long)d->d);
    return -1;
  }
  const double b = (double)d->b, s1 = (double)d->s1, s2 = (double)d->s2,
               h = (double)d->h, dd = (double)d->d, dv = (double)d->dv,
               t = (double)d->topk;
  const double bytes = 4 * (b * s1 * h * dd + b * s2 * dd + b * s1 * t +
                            2 * b * s1 * h * dv + 2 * b * s1 * h);
  if (bytes > MAX_BYTES) {
    fprintf(stderr,
            "pto-bench attention: %s: B=%lld S1=%lld S2=%lld H=%lld D=%lld "
            "dv=%lld topk=%lld needs %.1f GiB of buffers, more than %.0f\n",
            c->preset, (long long)d->b, (long long)d->s1, (long long)d->s2,
            (long long)d->h, (long long)d->d, (long long)d->dv,
            (long long)d->topk, bytes / (1 << 30), MAX_BYTES / (1 << 30));
    return -1;
  }
  c->nq = (size_t)(b * s1 * h * dd);
  c->nkv = (size_t)(b * s2 * dd);
  c->ni = (size_t)(b * s1 * t);
  c->no = (size_t)(b * s1 * h * dv);
  c->nl = (size_t)(b * s1 * h);
  c->q = pto_buffer_alloc(c->nq * sizeof(float));
  c->kv = pto_buffer_alloc(c->nkv * sizeof(float));
  c->idx = pto_buffer_alloc(c->ni * sizeof(int32_t));
  c->out = pto_buffer_alloc(c->no * sizeof(float));
  c->lse = pto_buffer_alloc(c->nl * sizeof(float));
  c->tout = pto_buffer_alloc(c->no * sizeof(float));
  c->tlse = pto_buffer_alloc(c->nl * sizeof(float));
  if (!c->q || !c->kv || !c->idx || !c->out || !c->lse || !c->tout ||
      !c->tlse ||
      bench_sparse_indices(c->idx, d->b, d->s1, d->s2, d->topk, c->prm.causal,
                           x->invalid, x->h.seed, 3, &c->slots)) {
    fprintf(stderr, "pto-bench attention: %s: out of memory for %.1f GiB\n",
            c->preset, bytes / (1 << 30));
    case_free(c);
    return -1;
  }
  bench_fill_uniform(c->q, c->nq, x->h.seed, 1, -1.0f, 1.0f);
  bench_fill_uniform(c->kv, c->nkv, x->h.seed, 2, -1.0f, 1.0f);
  return 0;
}

/* The case as meta.json says it (for --save and the peer). */
static json_t *case_meta(const at_case *c, const at_opts *x) {
  const pto_attention_dims *d = &c->d;
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:f, s:I, "
      "s:I, s:I, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s}}",
      "workload", "attention", "preset", c->preset, "b", (json_int_t)d->b, "s1",
      (json_int_t)d->s1, "s2", (json_int_t)d->s2, "h", (json_int_t)d->h, "d",
      (json_int_t)d->d, "dv", (json_int_t)d->dv, "topk", (json_int_t)d->topk,
      "scale", c->scale, "causal", c->prm.causal, "invalid_pct", x->invalid,
      "valid_slots", (json_int_t)c->slots.valid, "invalid_slots",
      (json_int_t)(c->slots.invalid + c->slots.padding), "seed",
      (json_int_t)x->h.seed, "dtype", "float32", "attention",
      "for each slot t of query (b,i) with a valid key j = indices[b,i,t] "
      "(0 <= j < s2; causal: also j <= s2 - s1 + i): x[h,t] = scale * "
      "q[b,i,h,:] . kv[b,j,:]; lse = ln sum_t exp(x); out = sum_t exp(x - "
      "lse) * kv[b,j,:dv]; no valid slot: out 0, lse +inf",
      "inputs", "q", "[b,s1,h,d] float32", "kv", "[b,s2,d] float32", "indices",
      "[b,s1,topk] int32", "outputs", "out", "[b,s1,h,dv] float32", "lse",
      "[b,s1,h] float32 (natural log)");
}

static void case_arrays(const at_case *c, const float *out, const float *lse,
                        bench_array *a) {
  const pto_attention_dims *d = &c->d;
  a[0] = (bench_array){"q", BENCH_F32, 4, {d->b, d->s1, d->h, d->d}, c->q};
  a[1] = (bench_array){"kv", BENCH_F32, 3, {d->b, d->s2, d->d}, c->kv};
  a[2] = (bench_array){"indices", BENCH_I32, 3, {d->b, d->s1, d->topk}, c->idx};
  a[3] = (bench_array){"out", BENCH_F32, 4, {d->b, d->s1, d->h, d->dv}, out};
  a[4] = (bench_array){"lse", BENCH_F32, 3, {d->b, d->s1, d->h}, lse};
}

typedef struct check_ctx {
  const at_case *c;
  const float *out, *lse;
} check_ctx;

static int check_rows(void *ctx, int64_t r0, int64_t r1, char *msg,
                      size_t size) {
  const check_ctx *x = ctx;
  const at_case *c = x->c;
  return pto_attention_check(&c->d, &c->prm, c->q, c->kv, c->idx, x->out,
                             x->lse, r0, r1, msg, size);
}

/* Checks (out, lse) from `who`; 0, or -1 (printed). */
static int check(const bench_opts *o, const at_case *c, int threads,
                 const char *who, const float *out, const float *lse) {
  check_ctx x = {c, out, lse};
  return bench_case_check(o, "attention", c->preset, who, threads,
                          c->d.b * c->d.s1, check_rows, &x);
}

/* The peer on c's inputs, its outputs checked; fills res->torch*, 0, or
 * -1 (printed). */
static int run_peer(const bench_opts *o, const at_opts *x, const at_case *c,
                    const bench_peer *peer, int threads, int repeats,
                    bench_case_result *res) {
  bench_array a[5];
  json_t *meta = case_meta(c, x);
  case_arrays(c, c->tout, c->tlse, a);
  int rc = !meta || bench_case_peer_run(o, &x->h, c->preset, peer, a, 3, meta,
                                        a + 3, 2, threads, repeats, res);
  json_decref(meta);
  if (rc || check(o, c, threads, "PyTorch", c->tout, c->tlse))
    return -1;
  res->torch_checked = 1;
  return 0;
}

/* Runs case k (its slot counts into *slots). 0, or 1 (a failure, printed;
 * res says how far it got). */
static int run_case(const bench_opts *o, const at_opts *x, int k,
                    const pto_config *cfg, const bench_peer *peer, int threads,
                    bench_case_result *res, bench_indices_count *slots) {
  at_case c;
  bench_pto r;
  pto_program *p = NULL;
  memset(&r, 0, sizeof r);
  if (case_new(x, k, &c))
    return 1;
  *slots = c.slots;
  const int several = x->sel.n > 1;
  int rc = 1;
  const int repeats = bench_case_repeats(o, pto_attention_gflop(&c.d));
  bench_progress(o, "attention: %s: compiling", c.preset);
  p = pto_attention_program(&c.d, &c.prm);
  char who[96];
  snprintf(who, sizeof who, "attention: %s", c.preset);
  if (bench_pto_compile(&r, who, p, cfg)) {
    if (p && pto_program_status(p) == PTO_OK)
      fprintf(stderr,
              "pto-bench %s: a config (--config) sets tiles per label: "
              "\"attention\"\n",
              who);
    goto done;
  }
  res->compile_ms = r.compile_ms;
  res->tasks = r.tasks;
  const void *in[3] = {c.q, c.kv, c.idx};
  void *out[2] = {c.out, c.lse};
  bench_progress(o, "attention: %s: first PTO run (%u tasks)", c.preset,
                 r.tasks);
  if (bench_pto_run(&r, in, out))
    goto done;
  if (check(o, &c, threads, "PTO", c.out, c.lse)) {
    res->pto_wrong = 1;
    goto done;
  }
  res->pto_checked = 1;
  if (x->h.save_dir) {
    bench_array a[5];
    json_t *meta = case_meta(&c, x);
    case_arrays(&c, c.out, c.lse, a);
    int bad = !meta || bench_case_save(o, &x->h, c.preset, several, a, 5, meta);
    json_decref(meta);
    if (bad)
      goto done;
  }
  bench_progress(o, "attention: %s: timing PTO, 1 warm-up + %d runs", c.preset,
                 repeats);
  if (bench_pto_time(&r, in, out, 1, repeats, &res->pto))
    goto done;
  if (x->h.trace_path) {
    char path[4096];
    if (bench_case_path(path, sizeof path, x->h.trace_path, c.preset, several,
                        0) ||
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

/* ---- the command ------------------------------------------------------- */

static void report(const bench_opts *o, const at_opts *x, int k, int threads,
                   double peak, const char *peak_isa, const bench_peer *peer,
                   const bench_case_result *res,
                   const bench_indices_count *slots) {
  pto_attention_dims d;
  pto_attention_params prm;
  case_dims(x, k, &d, &prm);
  const char *name = bench_preset_name(&table, &x->sel, k);
  const double gflop = pto_attention_gflop(&d),
               scale = x->scale != 0 ? x->scale : 1.0 / sqrt((double)d.d);
  const int64_t all = slots->valid + slots->padding + slots->invalid;
  char nm[32], inv[16];
  snprintf(nm, sizeof nm, "%s%s", name,
           bench_preset_changed(&table, &x->sel, k) ? "*" : "");
  snprintf(inv, sizeof inv, all ? "%.1f" : "-",
           all ? 100.0 * (double)(all - slots->valid) / (double)all : 0);
  FILE *f = bench_out(o);
  fprintf(f, "%-10s %3lld %4lld %6lld %4lld %4lld %4lld %5lld %8.4g %-6s %5s ",
          nm, (long long)d.b, (long long)d.s1, (long long)d.s2, (long long)d.h,
          (long long)d.d, (long long)d.dv, (long long)d.topk, scale,
          prm.causal ? "yes" : "no", inv);
  bench_case_print(f, res, threads, gflop, peak, peer != NULL);
  fflush(f);
  json_t *j = json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:f, s:i, "
      "s:I}",
      "workload", "attention", "preset", name, "b", (json_int_t)d.b, "s1",
      (json_int_t)d.s1, "s2", (json_int_t)d.s2, "h", (json_int_t)d.h, "d",
      (json_int_t)d.d, "dv", (json_int_t)d.dv, "topk", (json_int_t)d.topk,
      "scale", scale, "causal", prm.causal, "invalid_pct", x->invalid,
      "threads", threads, "seed", (json_int_t)x->h.seed);
  json_object_set_new(j, "valid_slots",
                      all ? json_integer(slots->valid) : json_null());
  json_object_set_new(j, "invalid_slots",
                      all ? json_integer(slots->padding + slots->invalid)
                          : json_null());
  bench_case_json(j, res, gflop, peak, peak_isa, peer);
  json_array_append_new(bench_results(), j);
}

static int run(const bench_opts *o, int argc, char **argv) {
  at_opts x;
  memset(&x, 0, sizeof x);
  x.h = bench_harness_default("attention");
  if (parse(argc, argv, &x)) {
    fprintf(stderr, "(pto-bench attention --help for usage)\n");
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
  bench_progress(o, "attention: FMA peak on %d threads", threads);
  const double peak = bench_peak_fma(threads, o->quick ? 2 : 5, &peak_isa);

  FILE *f = bench_out(o);
  fprintf(f,
          "attention f32: PTO (%s tile instructions) against %s%s%s%s; "
          "%s FMA peak on %d threads %.1f GFLOP/s\n",
          pto_isa_name(), pp ? "PyTorch " : "no peer", pp ? pp->torch : "",
          pp ? " in " : "", pp ? pp->python : "", peak_isa, threads, peak);
  fprintf(f, "%-10s %3s %4s %6s %4s %4s %4s %5s %8s %-6s %5s ", "preset", "B",
          "S1", "S2", "H", "D", "dv", "topk", "scale", "causal", "inv%");
  bench_case_print_head(f);
  fflush(f);
  int rc = 0;
  for (int k = 0; k < x.sel.n; k++) {
    bench_case_result res;
    bench_indices_count slots;
    memset(&res, 0, sizeof res);
    memset(&slots, 0, sizeof slots);
    bench_progress(o, "attention: preset %s (%d of %d)",
                   bench_preset_name(&table, &x.sel, k), k + 1, x.sel.n);
    if (run_case(o, &x, k, cfg, pp, threads, &res, &slots))
      rc = 1;
    report(o, &x, k, threads, peak, peak_isa, pp, &res, &slots);
    bench_case_result_free(&res);
  }
  pto_config_free(cfg);
  return rc;
}

const bench_cmd bench_attention = {
    "attention",
    "sparse MLA attention over top-k keys against PyTorch, "
    "checked",
    run, usage};
