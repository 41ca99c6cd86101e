/* pto-bench attention: DeepSeek-V3.2's sparse MLA attention over the top-k
 * keys the lightning indexer picked (pto/attention.h), built, compiled and
 * run exactly as an application does (pto_attention_program, pto_compile,
 * pto_runtime_run on a runtime of every core), against PyTorch on the same
 * inputs in the same invocation (tools/pto_bench_torch.py), with the fp32
 * FMA peak measured in the same run. Every result, PTO's and PyTorch's, is
 * checked with pto_attention_check (the reference in double, spread over
 * the threads) before a time is reported; a wrong one fails the command.
 *
 * This file holds what is the attention's own: its presets and options,
 * a case's inputs (random q and kv from the seed, indices as the indexer
 * hands them over: bench/indices.c, distinct visible keys, --invalid's
 * share of invalid slots scattered through the rows), its program, check,
 * meta.json and table columns. The command and each case's flow (compile,
 * run, check, --save, timing, --trace, the peer) are bench/case.c's. */
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

typedef struct at_opts {
  bench_case_opts base; /* first: the driver hands it back */
  double scale;         /* --scale (0: 1 / sqrt(D)) */
  int causal;           /* --causal */
  double invalid;       /* --invalid PCT */
} at_opts;

typedef struct at_case {
  bench_case base; /* first: the driver hands it back */
  pto_attention_dims d;
  pto_attention_params prm;
  double scale; /* the one applied */
  bench_indices_count slots;
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
        "DeepSeek's sparse MLA attention (pto/attention.h), f32 or bf16 q\n"
        "and kv (--dtype; scores, softmax, out and lse f32): for query i\n"
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
        "1e-4, lse 1e-6; PyTorch's on bf16: out 2e-2 + 2e-2 |ref|, lse\n"
        "1e-2 + 4e-3 |ref|, as its bf16 matmuls round to bf16) before any\n"
        "time is reported; a wrong result fails the command. Without a\n"
        "Python that imports torch, one line says so and PTO is reported\n"
        "alone.\n"
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
        "faster); GF/s = 2 x H x (D + dv) x the valid slots (invalid ones\n"
        "are left out, not computed; with none, pto_attention_gflop's\n"
        "2 x B x S1 x H x topk x (D + dv)) / PTO's median; %pk = that over\n"
        "the FMA peak measured in this run on the same threads (the best\n"
        "of a probe before the cases and one after each); compile =\n"
        "pto_compile alone, ms.\n"
        "JSON fields (one object per case): workload, preset, b, s1, s2, h,\n"
        "d, dv, topk, scale, causal, invalid_pct, valid_slots,\n"
        "invalid_slots, dtype, engine (pto_matmul_engine), threads, seed,\n"
        "repeats, tasks, compile_ms, pto_ms, pto_ms_min, pto_ms_max,\n"
        "torch_ms, torch_ms_min, torch_ms_max,\n"
        "torch_variant, torch_variants, torch_version, ratio, gflop,\n"
        "pto_gflops, torch_gflops, peak_gflops, peak_isa,\n"
        "pto_peak_fraction, pto_peak_fraction_each, peak_each_gflops\n"
        "(null without --peak-each), check, torch_check (null: no peer).\n",
        f);
}

/* The options of its own (bench_workload.arg). */
static int arg(bench_case_opts *o, int argc, char **argv, int *i) {
  at_opts *x = (at_opts *)o;
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (!strcmp(a, "--causal")) {
    x->causal = 1;
    return 1;
  }
  if (!strcmp(a, "--scale")) {
    ++*i;
    return bench_parse_f64("attention", a, v, -1e30, 1e30, &x->scale) ? -1 : 1;
  }
  if (!strcmp(a, "--invalid")) {
    ++*i;
    return bench_parse_f64("attention", a, v, 0, 100, &x->invalid) ? -1 : 1;
  }
  return 0;
}

/* ---- one case ---------------------------------------------------------- */

/* Case k's sizes and parameters, as the program gets them. */
static void case_dims(const at_opts *x, int k, pto_attention_dims *d,
                      pto_attention_params *prm) {
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &x->base.sel, k, v);
  *d = (pto_attention_dims){v[P_B], v[P_S1], v[P_S2],  v[P_H],
                            v[P_D], v[P_DV], v[P_TOPK]};
  *prm = pto_attention_params_default();
  prm->scale = x->scale;
  prm->causal = x->causal;
  prm->dtype = x->base.h.dtype;
}

/* Case k's sizes and arrays (bench_workload.init). */
static int case_init(const bench_case_opts *o, int k, bench_case *bc) {
  const at_opts *x = (const at_opts *)o;
  at_case *c = (at_case *)bc;
  bc->preset = bench_preset_name(&table, &o->sel, k);
  case_dims(x, k, &c->d, &c->prm);
  const pto_attention_dims *d = &c->d;
  c->scale = x->scale != 0 ? x->scale : 1.0 / sqrt((double)d->d);
  if (d->dv > d->d) {
    fprintf(stderr,
            "pto-bench attention: %s: dv=%lld is more than D=%lld (V is "
            "the first dv columns of kv's rows)\n",
            bc->preset, (long long)d->dv, (long long)d->d);
    return -1;
  }
  bc->gflop = pto_attention_gflop(d);
  bc->rows = d->b * d->s1;
  bc->n_in = 3;
  const bench_dtype qk = c->prm.dtype == PTO_BF16 ? BENCH_BF16 : BENCH_F32;
  bc->in[0] = (bench_array){"q", qk, 4, {d->b, d->s1, d->h, d->d}, NULL};
  bc->in[1] = (bench_array){"kv", qk, 3, {d->b, d->s2, d->d}, NULL};
  bc->in[2] =
      (bench_array){"indices", BENCH_I32, 3, {d->b, d->s1, d->topk}, NULL};
  bc->n_out = 2;
  bc->out[0] =
      (bench_array){"out", BENCH_F32, 4, {d->b, d->s1, d->h, d->dv}, NULL};
  bc->out[1] = (bench_array){"lse", BENCH_F32, 3, {d->b, d->s1, d->h}, NULL};
  return 0;
}

/* The work of the valid slots, GFLOP: a slot whose index is invalid (or
 * -1 padding) is left out by PTO, so it is no work done. Every slot when
 * slots holds no count. */
static double work_gflop(const pto_attention_dims *d,
                         const bench_indices_count *slots) {
  const int64_t all = slots->valid + slots->padding + slots->invalid;
  return pto_attention_gflop(d) * (all ? (double)slots->valid / all : 1.0);
}

/* Random q and kv, the indices as the indexer hands them over
 * (bench_workload.fill). */
static int case_fill(const bench_case_opts *o, bench_case *bc) {
  const at_opts *x = (const at_opts *)o;
  at_case *c = (at_case *)bc;
  const pto_attention_dims *d = &c->d;
  if (bench_sparse_indices(bc->in_data[2], d->b, d->s1, d->s2, d->topk,
                           c->prm.causal, x->invalid, o->h.seed, 3, &c->slots))
    return -1;
  bc->gflop = work_gflop(d, &c->slots);
  for (size_t i = 0; i < 2; i++) /* q, kv: streams 1, 2 */
    bench_case_fill_uniform(bc, i, o->h.seed, i + 1, -1.0f, 1.0f);
  return 0;
}

static pto_program *program(const bench_case *bc) {
  const at_case *c = (const at_case *)bc;
  return pto_attention_program(&c->d, &c->prm);
}

/* --dynamic: B, S1 and S2 dynamic, the case's sizes their maxima. */
static pto_program *program_dynamic(const bench_case *bc) {
  const at_case *c = (const at_case *)bc;
  pto_attention_params prm = c->prm;
  prm.dynamic = PTO_ATTENTION_DYN_ALL;
  return pto_attention_program(&c->d, &prm);
}

/* The program with the tile pto_attention_tile chooses for machine m
 * (--simulate). */
static pto_program *program_for(const bench_case *bc, const pto_machine *m) {
  const at_case *c = (const at_case *)bc;
  pto_attention_params prm = c->prm;
  if (!prm.tile.cube_m && !prm.tile.cube_n)
    prm.tile = pto_attention_tile(m, &c->d);
  return pto_attention_program(&c->d, &prm);
}

/* The case as meta.json says it (for --save and the peer). */
static json_t *case_meta(const bench_case_opts *o, const bench_case *bc) {
  const at_opts *x = (const at_opts *)o;
  const at_case *c = (const at_case *)bc;
  const pto_attention_dims *d = &c->d;
  const int bf = c->prm.dtype == PTO_BF16;
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:f, s:I, "
      "s:I, s:I, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s}}",
      "workload", "attention", "preset", bc->preset, "b", (json_int_t)d->b,
      "s1", (json_int_t)d->s1, "s2", (json_int_t)d->s2, "h", (json_int_t)d->h,
      "d", (json_int_t)d->d, "dv", (json_int_t)d->dv, "topk",
      (json_int_t)d->topk, "scale", c->scale, "causal", c->prm.causal,
      "invalid_pct", x->invalid, "valid_slots", (json_int_t)c->slots.valid,
      "invalid_slots", (json_int_t)(c->slots.invalid + c->slots.padding),
      "seed", (json_int_t)o->h.seed, "dtype", bf ? "bfloat16" : "float32",
      "attention",
      "for each slot t of query (b,i) with a valid key j = indices[b,i,t] "
      "(0 <= j < s2; causal: also j <= s2 - s1 + i): x[h,t] = scale * "
      "q[b,i,h,:] . kv[b,j,:]; lse = ln sum_t exp(x); out = sum_t exp(x - "
      "lse) * kv[b,j,:dv]; no valid slot: out 0, lse +inf",
      "inputs", "q",
      bf ? "[b,s1,h,d] bfloat16 (as uint16 bits)" : "[b,s1,h,d] float32", "kv",
      bf ? "[b,s2,d] bfloat16 (as uint16 bits)" : "[b,s2,d] float32", "indices",
      "[b,s1,topk] int32", "outputs", "out", "[b,s1,h,dv] float32", "lse",
      "[b,s1,h] float32 (natural log)");
}

/* PyTorch's result on bf16 q and kv, against the reference: its bf16
 * matmuls round the scores and the outputs to bf16 (2^-9 relative) and,
 * on CPUs without a bf16 matmul unit, sum in bf16 too, so it is held to
 * bf16's tolerances, stated here: |out - ref| <= OUT_ATOL + OUT_RTOL |ref|
 * and |lse - ref| <= LSE_ATOL + LSE_RTOL |ref|. PTO (exact products, f32
 * sums) is held to pto_attention_check's f32 ones. 0, or -1 with the first
 * failure in msg. */
#define BF16_OUT_ATOL 2e-2
#define BF16_OUT_RTOL 2e-2
#define BF16_LSE_ATOL 1e-2
#define BF16_LSE_RTOL 4e-3
static int check_bf16_peer(const at_case *c, const void *q, const void *kv,
                           const int32_t *ix, const float *out,
                           const float *lse, int64_t r0, int64_t r1, char *msg,
                           size_t size) {
  const pto_attention_dims *d = &c->d;
  const int64_t per_row = d->h * d->dv;
  /* the reference writes rows [r0, r1) at their places from row 0: only
   * those pages of these buffers are touched */
  float *ro = malloc((size_t)(r1 * per_row) * sizeof *ro),
        *rl = malloc((size_t)(r1 * d->h) * sizeof *rl);
  int bad = !ro || !rl;
  if (bad)
    snprintf(msg, size, "out of memory");
  else if (pto_attention_ref(d, &c->prm, q, kv, ix, r0, r1, ro, rl)) {
    snprintf(msg, size, "rows %lld..%lld: the reference failed", (long long)r0,
             (long long)r1);
    bad = 1;
  }
  for (int64_t r = r0; r < r1 && !bad; r++) {
    for (int64_t h = 0; h < d->h && !bad; h++) {
      const double w = rl[r * d->h + h], g = lse[r * d->h + h];
      if (isinf(w)
              ? g != w
              : !(fabs(g - w) <= BF16_LSE_ATOL + BF16_LSE_RTOL * fabs(w))) {
        snprintf(msg, size, "row %lld head %lld: lse %.6g, expected %.6g",
                 (long long)r, (long long)h, g, w);
        bad = 1;
      }
      for (int64_t j = 0; j < d->dv && !bad; j++) {
        const double wo = ro[r * per_row + h * d->dv + j],
                     go = out[r * per_row + h * d->dv + j];
        if (!(fabs(go - wo) <= BF16_OUT_ATOL + BF16_OUT_RTOL * fabs(wo))) {
          snprintf(msg, size,
                   "row %lld head %lld column %lld: out %.6g, expected %.6g "
                   "(bf16 tolerance)",
                   (long long)r, (long long)h, (long long)j, go, wo);
          bad = 1;
        }
      }
    }
  }
  free(ro);
  free(rl);
  return bad ? -1 : 0;
}

/* Rows [r0, r1) of (out, lse) (bench_workload.check). */
static int check(const bench_case *bc, int peer, void *const *out, int64_t r0,
                 int64_t r1, char *msg, size_t size) {
  const at_case *c = (const at_case *)bc;
  if (peer && c->prm.dtype == PTO_BF16)
    return check_bf16_peer(c, bc->in_data[0], bc->in_data[1], bc->in_data[2],
                           out[0], out[1], r0, r1, msg, size);
  return pto_attention_check(&c->d, &c->prm, bc->in_data[0], bc->in_data[1],
                             bc->in_data[2], out[0], out[1], r0, r1, msg, size);
}

/* ---- the command ------------------------------------------------------- */

static void head(FILE *f) {
  fprintf(f, "%-10s %3s %4s %6s %4s %4s %4s %5s %8s %-6s %5s ", "preset", "B",
          "S1", "S2", "H", "D", "dv", "topk", "scale", "causal", "inv%");
}

/* Case k's columns and JSON object (bench_workload.report). */
static json_t *report(const bench_case_opts *o, int k, const bench_case *bc,
                      const char *nm, int threads, FILE *f, double *gflop) {
  const at_opts *x = (const at_opts *)o;
  static const bench_indices_count none;
  const bench_indices_count *slots = bc ? &((const at_case *)bc)->slots : &none;
  pto_attention_dims d;
  pto_attention_params prm;
  case_dims(x, k, &d, &prm);
  const double scale = x->scale != 0 ? x->scale : 1.0 / sqrt((double)d.d);
  const int64_t all = slots->valid + slots->padding + slots->invalid;
  char inv[16];
  snprintf(inv, sizeof inv, all ? "%.1f" : "-",
           all ? 100.0 * (double)(all - slots->valid) / (double)all : 0);
  fprintf(f, "%-10s %3lld %4lld %6lld %4lld %4lld %4lld %5lld %8.4g %-6s %5s ",
          nm, (long long)d.b, (long long)d.s1, (long long)d.s2, (long long)d.h,
          (long long)d.d, (long long)d.dv, (long long)d.topk, scale,
          prm.causal ? "yes" : "no", inv);
  *gflop = work_gflop(&d, slots);
  json_t *j = json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:f, s:i, "
      "s:I}",
      "workload", "attention", "preset", bench_preset_name(&table, &o->sel, k),
      "b", (json_int_t)d.b, "s1", (json_int_t)d.s1, "s2", (json_int_t)d.s2, "h",
      (json_int_t)d.h, "d", (json_int_t)d.d, "dv", (json_int_t)d.dv, "topk",
      (json_int_t)d.topk, "scale", scale, "causal", prm.causal, "invalid_pct",
      x->invalid, "threads", threads, "seed", (json_int_t)o->h.seed);
  json_object_set_new(j, "valid_slots",
                      all ? json_integer(slots->valid) : json_null());
  json_object_set_new(j, "invalid_slots",
                      all ? json_integer(slots->padding + slots->invalid)
                          : json_null());
  return j;
}

static const bench_workload workload = {
    .table = &table,
    .labels = "\"attention\"",
    /* TMATMUL_GA on bf16 q and kv on the bf16 engine; TMATMUL_GB's P is
     * f32 (the softmax's), so V is widened for it */
    .bf16_native = "q.kv^T; P.V on the f32 engine, V widened",
    .case_size = sizeof(at_case),
    .arg = arg,
    .init = case_init,
    .fill = case_fill,
    .program = program,
    .program_dynamic = program_dynamic,
    .program_for = program_for,
    .check = check,
    .meta = case_meta,
    .head = head,
    .report = report,
};

static int run(const bench_opts *o, int argc, char **argv) {
  at_opts x;
  memset(&x, 0, sizeof x);
  return bench_case_main(o, &workload, &x.base, argc, argv);
}

const bench_cmd bench_attention = {
    "attention",
    "sparse MLA attention over top-k keys against PyTorch, "
    "checked",
    run, usage};
