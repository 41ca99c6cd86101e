/* pto-bench indexer: DeepSeek-V3.2's lightning indexer with its top-k
 * (pto/indexer.h), built, compiled and run exactly as an application does
 * (pto_indexer_program, pto_compile, pto_runtime_run on a runtime of every
 * core), against PyTorch on the same inputs in the same invocation
 * (tools/pto_bench_torch.py), with the fp32 FMA peak measured in the same
 * run. Every result, PTO's and PyTorch's, is checked with pto_indexer_check
 * (scores recomputed in double, spread over the threads) before a time is
 * reported; a wrong one fails the command.
 *
 * This file holds what is the indexer's own: its presets and options, a
 * case's inputs (random from the seed), its program, check, meta.json and
 * table columns. The command and each case's flow (compile, run, check,
 * --save, timing, --trace, the peer) are bench/case.c's. */
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

typedef struct ix_case {
  bench_case base; /* first: the driver hands it back */
  pto_indexer_dims d;
  pto_indexer_params prm;
} ix_case;

/* ---- usage and options --------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "indexer\n"
        "                 [--preset NAME[,NAME...]|all] [--b N] [--s1 N] "
        "[--s2 N] [--h N]\n"
        "                 [--d N] [--topk N] [--mask none|causal] "
        "[common options]\n"
        "\n"
        "The lightning indexer with its top-k (pto/indexer.h), f32 or bf16\n"
        "q and k (--dtype; w, scores and top-k f32):\n"
        "  score[b,i,j] = sum_h w[b,i,h] * ReLU(q[b,i,h,:] . k[b,j,:])\n"
        "over the keys j query i sees (causal: j <= S2 - S1 + i), then per\n"
        "query the topk largest, as (indices, values). PTO on a runtime of\n"
        "every core (--threads N: N) against PyTorch on the same inputs and\n"
        "threads in the same run (tools/pto_bench_torch.py: its chunked and\n"
        "naive forms, the faster one counts). Both results are checked with\n"
        "pto_indexer_check (scores recomputed in double) before any time is\n"
        "reported (PyTorch's on bf16 within 2^-7 of a row's scale: its bf16\n"
        "matmul rounds each q.k to bf16); a wrong result fails the\n"
        "command. Without a Python that imports torch, one line says so and\n"
        "PTO is reported alone.\n"
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
        "same threads (the best of a probe before the cases and one after\n"
        "each); compile = pto_compile alone, ms.\n"
        "JSON fields (one object per case): workload, preset, b, s1, s2, h,\n"
        "d, topk, mask, dtype, engine (pto_matmul_engine), threads, seed,\n"
        "repeats, tasks, compile_ms, pto_ms, pto_ms_min, pto_ms_max,\n"
        "torch_ms, torch_ms_min, torch_ms_max, torch_variant,\n"
        "torch_variants, torch_version, ratio, gflop, pto_gflops,\n"
        "torch_gflops, peak_gflops, peak_isa, pto_peak_fraction,\n"
        "pto_peak_fraction_each, peak_each_gflops (null without\n"
        "--peak-each), check, torch_check (null: no peer).\n",
        f);
}

typedef struct ix_opts {
  bench_case_opts base; /* first: the driver hands it back */
  pto_mask_mode mask;
} ix_opts;

/* The options of its own (bench_workload.arg). */
static int arg(bench_case_opts *o, int argc, char **argv, int *i) {
  ix_opts *x = (ix_opts *)o;
  if (strcmp(argv[*i], "--mask"))
    return 0;
  const char *v = ++*i < argc ? argv[*i] : "";
  if (pto_mask_from_name(v, &x->mask)) {
    fprintf(stderr,
            "pto-bench indexer: --mask: unknown mask '%s' (none or "
            "causal)\n",
            v);
    return -1;
  }
  return 1;
}

/* ---- one case ------------------------------------------------------------ */

/* Case k's sizes and parameters, as the program gets them. */
static void case_dims(const ix_opts *x, int k, pto_indexer_dims *d,
                      pto_indexer_params *prm) {
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &x->base.sel, k, v);
  *d = (pto_indexer_dims){v[P_B], v[P_S1], v[P_S2], v[P_H], v[P_D]};
  *prm = pto_indexer_params_default();
  prm->topk = v[P_TOPK];
  prm->mask = x->mask;
  prm->dtype = x->base.h.dtype;
}

/* Case k's sizes and arrays (bench_workload.init). */
static int case_init(const bench_case_opts *o, int k, bench_case *bc) {
  ix_case *c = (ix_case *)bc;
  bc->preset = bench_preset_name(&table, &o->sel, k);
  case_dims((const ix_opts *)o, k, &c->d, &c->prm);
  const pto_indexer_dims *d = &c->d;
  const int64_t topk = c->prm.topk;
  bc->gflop = pto_indexer_gflop(d, &c->prm);
  bc->rows = d->b * d->s1;
  bc->n_in = 3;
  const bench_dtype qk = c->prm.dtype == PTO_BF16 ? BENCH_BF16 : BENCH_F32;
  bc->in[0] = (bench_array){"q", qk, 4, {d->b, d->s1, d->h, d->d}, NULL};
  bc->in[1] = (bench_array){"k", qk, 3, {d->b, d->s2, d->d}, NULL};
  bc->in[2] = (bench_array){"w", BENCH_F32, 3, {d->b, d->s1, d->h}, NULL};
  bc->n_out = 2;
  bc->out[0] =
      (bench_array){"indices", BENCH_I32, 3, {d->b, d->s1, topk}, NULL};
  bc->out[1] = (bench_array){"values", BENCH_F32, 3, {d->b, d->s1, topk}, NULL};
  return 0;
}

/* Random q, k and w (bench_workload.fill); bf16 q and k are the f32
 * draws rounded. */
static int case_fill(const bench_case_opts *o, bench_case *bc) {
  for (size_t i = 0; i < bc->n_in; i++) /* streams 1, 2, 3 */
    bench_case_fill_uniform(bc, i, o->h.seed, i + 1, -1.0f, 1.0f);
  return 0;
}

static pto_program *program(const bench_case *bc) {
  const ix_case *c = (const ix_case *)bc;
  return pto_indexer_program(&c->d, &c->prm);
}

/* --dynamic: B, S1 and S2 dynamic, the case's sizes their maxima. */
static pto_program *program_dynamic(const bench_case *bc) {
  const ix_case *c = (const ix_case *)bc;
  pto_indexer_params prm = c->prm;
  prm.dynamic = PTO_INDEXER_DYN_ALL;
  return pto_indexer_program(&c->d, &prm);
}

/* The program with the tiles chosen for machine m (--simulate): the score's
 * and the top-k's tiles pto_indexer_qk_tile and pto_indexer_topk_tile give
 * for m, and each query block's key tiles in runs enough for sixteen tasks
 * per cube worker of m (as pto_indexer chooses them for the host). */
static pto_program *program_for(const bench_case *bc, const pto_machine *m) {
  const ix_case *c = (const ix_case *)bc;
  pto_indexer_params prm = c->prm;
  const pto_tile_shape none = {0, 0, 0, 0, 0};
  if (!memcmp(&prm.qk_tile, &none, sizeof none))
    prm.qk_tile = pto_indexer_qk_tile(m, &c->d);
  if (!memcmp(&prm.topk_tile, &none, sizeof none))
    prm.topk_tile = pto_indexer_topk_tile(m, &c->d, prm.topk);
  if (!prm.qk_reuse && prm.qk_tile.cube_m && prm.qk_tile.cube_n) {
    const int64_t per = prm.qk_tile.cube_m / c->d.h > 0
                            ? prm.qk_tile.cube_m / c->d.h
                            : 1,
                  keys = (c->d.s2 + prm.qk_tile.cube_n - 1) / prm.qk_tile.cube_n,
                  blocks = c->d.b * ((c->d.s1 + per - 1) / per);
    int64_t runs = (16 * (int64_t)m->workers[PTO_CORE_CUBE] + blocks - 1) /
                   blocks;
    runs = runs < 1 ? 1 : runs > keys ? keys : runs;
    prm.qk_reuse = (keys + runs - 1) / runs;
  }
  return pto_indexer_program(&c->d, &prm);
}

/* The case as meta.json says it (for --save and the peer). */
static json_t *case_meta(const bench_case_opts *o, const bench_case *bc) {
  const ix_case *c = (const ix_case *)bc;
  const int bf = c->prm.dtype == PTO_BF16;
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:{s:s, "
      "s:s, s:s}, s:{s:s, s:s}}",
      "workload", "indexer", "preset", bc->preset, "b", (json_int_t)c->d.b,
      "s1", (json_int_t)c->d.s1, "s2", (json_int_t)c->d.s2, "h",
      (json_int_t)c->d.h, "d", (json_int_t)c->d.d, "topk",
      (json_int_t)c->prm.topk, "mask", pto_mask_name(c->prm.mask), "seed",
      (json_int_t)o->h.seed, "dtype", bf ? "bfloat16" : "float32", "score",
      "s[b,i,j] = sum_h w[b,i,h] * relu(q[b,i,h,:] . k[b,j,:]) for visible "
      "j (causal: j <= s2 - s1 + i), else -inf",
      "inputs", "q",
      bf ? "[b,s1,h,d] bfloat16 (as uint16 bits)" : "[b,s1,h,d] float32", "k",
      bf ? "[b,s2,d] bfloat16 (as uint16 bits)" : "[b,s2,d] float32", "w",
      "[b,s1,h] float32", "outputs", "indices",
      "[b,s1,topk] int32: the topk largest visible scores' keys, by (score "
      "descending, index ascending), then -1",
      "values", "[b,s1,topk] float32: their scores, then -inf");
}

/* The checker's tolerance (of a row's scale) for PyTorch's result on bf16
 * q and k: its bf16 matmul rounds each q.k to bf16 (2^-9 relative) before
 * the f32 head sum, so its scores are off by up to 2^-9 of the scale, and
 * by up to 4x that where torch sums in bf16; PTO's (exact products, f32
 * sums) are held to the f32 tolerance. */
#define BF16_PEER_RTOL (4 * 0x1p-9)

/* Rows [r0, r1) of (indices, values) (bench_workload.check). */
static int check(const bench_case *bc, int peer, void *const *out, int64_t r0,
                 int64_t r1, char *msg, size_t size) {
  const ix_case *c = (const ix_case *)bc;
  const double rtol = peer && c->prm.dtype == PTO_BF16 ? BF16_PEER_RTOL : 0;
  return pto_indexer_check(&c->d, &c->prm, bc->in_data[0], bc->in_data[1],
                           bc->in_data[2], out[0], out[1], r0, r1, rtol, msg,
                           size);
}

/* ---- the command --------------------------------------------------------- */

static void head(FILE *f) {
  fprintf(f, "%-10s %3s %4s %6s %3s %4s %5s %-6s ", "preset", "B", "S1", "S2",
          "H", "D", "topk", "mask");
}

/* Case k's columns and JSON object (bench_workload.report). */
static json_t *report(const bench_case_opts *o, int k, const bench_case *bc,
                      const char *nm, int threads, FILE *f, double *gflop) {
  pto_indexer_dims d;
  pto_indexer_params prm;
  (void)bc;
  case_dims((const ix_opts *)o, k, &d, &prm);
  fprintf(f, "%-10s %3lld %4lld %6lld %3lld %4lld %5lld %-6s ", nm,
          (long long)d.b, (long long)d.s1, (long long)d.s2, (long long)d.h,
          (long long)d.d, (long long)prm.topk, pto_mask_name(prm.mask));
  *gflop = pto_indexer_gflop(&d, &prm);
  return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:i, s:I}",
                   "workload", "indexer", "preset",
                   bench_preset_name(&table, &o->sel, k), "b", (json_int_t)d.b,
                   "s1", (json_int_t)d.s1, "s2", (json_int_t)d.s2, "h",
                   (json_int_t)d.h, "d", (json_int_t)d.d, "topk",
                   (json_int_t)prm.topk, "mask", pto_mask_name(prm.mask),
                   "threads", threads, "seed", (json_int_t)o->h.seed);
}

static const bench_workload workload = {
    .table = &table,
    .labels = "\"indexer.qk\", \"indexer.topk\"",
    /* TMATMUL_RELU_WSUM_G on bf16 q and k: the bf16 engine's kernel */
    .bf16_native = "q.k^T",
    .case_size = sizeof(ix_case),
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
  ix_opts x;
  memset(&x, 0, sizeof x);
  x.mask = PTO_MASK_CAUSAL;
  return bench_case_main(o, &workload, &x.base, argc, argv);
}

const bench_cmd bench_indexer = {
    "indexer", "lightning indexer + top-k against PyTorch, checked", run,
    usage};
