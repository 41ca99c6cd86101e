/* pto-bench dsa: DeepSeek-V3.2's indexer attention as one graph
 * (pto/dsa.h: MLA prolog, indexer prolog, lightning indexer with top-k,
 * sparse MLA attention, on a paged cache), over consecutive steps as
 * serving runs it, three ways on the same inputs in one invocation: PTO
 * MPMD, PTO with stage barriers between the four parts (the same tasks as
 * phases: what MPMD overlap buys), and PyTorch (tools/pto_bench_torch.py).
 * Every result of every step is checked with pto_dsa_check.
 *
 * A step's counts are build-time parameters of the graph, so each decode
 * step compiles anew; its compile time is shown beside its run time and
 * counts in PTO's time when there are several steps (the executable of one
 * step cannot serve the next). Between steps the new tokens' kv_new and
 * k_new rows (PTO's) are written into the caches at their slots, as the
 * application does; the peer then runs every step on the final caches,
 * which hold the same values at every position a step reads.
 *
 * The command, options, --save and the peer are bench/case.c's; this file
 * holds the presets, a case's inputs and the flow over steps; the lines
 * under a case's row are bench/dsa_parts.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/case.h"
#include "bench/dsa.h"
#include "bench/dsa_cp.h"
#include "bench/dsa_serve.h"
#include "bench/files.h"
#include "bench/preset.h"
#include "bench/sim.h"
#include "pto/pto.h"

enum { P_B, P_N, P_LEN, P_LEN_MAX, P_STEPS, P_TOPK, P_SMALL, N_PARAMS };

static const bench_param params[N_PARAMS] = {
    {"b", "B", 1, DSA_MAX_B},
    {"n", "n", 1, 1 << 16},
    {"len", "len", 1, 1 << 24},
    {"len-max", "len_max", 0, 1 << 24},
    {"steps", "steps", 1, DSA_MAX_STEPS},
    {"topk", "topk", 1, 1 << 16},
    {"small", "small", 0, 1},
};

/* len..len_max: the sequences' lengths at the first step, spread evenly
 * (0: all len); each step appends n tokens to every sequence. small: the
 * smoke dims (D 64, Q 32, H 4, N 16, R 8, L 32, HI 4, DI 16, BS 4), else
 * DeepSeek-V3.2's. */
static const bench_preset presets[] = {
    {"smoke", {3, 2, 9, 37, 2, 16, 1}},
    {"decode", {16, 1, 8192, 32760, 8, 2048, 0}},
    {"prefill", {1, 512, 8192, 0, 1, 2048, 0}},
};

static const bench_preset_table table = {
    "dsa",     params, N_PARAMS, presets, sizeof presets / sizeof presets[0],
    "prefill", "smoke"};

typedef struct dsa_opts {
  bench_case_opts base; /* first: the driver hands it back */
  double scale;         /* --scale */
} dsa_opts;

/* ---- usage and options ------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] dsa\n"
        "                 [--preset NAME[,NAME...]|all] [--b N] [--n N] "
        "[--len N]\n"
        "                 [--len-max N] [--steps N] [--topk N] [--small 0|1]\n"
        "                 [--scale X] [common options]\n"
        "\n"
        "DeepSeek-V3.2's indexer attention (pto/dsa.h), f32: per step, B\n"
        "sequences with n new tokens each: MLA prolog, indexer prolog,\n"
        "lightning indexer with top-k (causal, keys through the block table)\n"
        "and sparse MLA attention over a paged KV cache, as one graph. Three\n"
        "ways on the same inputs: PTO MPMD on a runtime of every core, PTO\n"
        "with stage barriers between the four parts (config stage_barriers:\n"
        "the same tasks as phases; a --config's own stage_barriers instead,\n"
        "when it sets some), and PyTorch (tools/pto_bench_torch.py: batched\n"
        "matmuls, index_select through the block table, gather -> bmm ->\n"
        "softmax -> bmm). Steps follow each other as in serving: each\n"
        "appends n tokens per sequence, and the new rows (kv_new, k_new) are\n"
        "written into the caches at their slots between steps. Random\n"
        "weights and caches from the seed; block tables are random\n"
        "permutations of the physical blocks. Every step's results of all\n"
        "three are checked with pto_dsa_check (the reference in double)\n"
        "before a time is reported; a wrong result fails the command.\n"
        "\n"
        "presets (--quick: smoke; every value also settable by its flag,\n"
        "which then applies to every chosen preset; len..len-max spread the\n"
        "first step's lengths over the batch, 0: all len):\n",
        f);
  bench_preset_usage(&table, f);
  fputs("\noptions:\n"
        "  --preset NAMES   presets to run, comma-separated, or all\n"
        "  --scale X        the attention's softmax scale (default 0.135234)\n"
        "  (--dynamic: pto_dsa_serve_program, compiled once with the case's\n"
        "   sizes as its maxima, bound to each step and timed in turn with\n"
        "   the step's MPMD program; at most 16 sequences)\n",
        f);
  bench_harness_usage(f);
  fputs("  (--trace FILE: the last step's MPMD swimlane in FILE, its stage\n"
        "   barrier run's in FILE-barrier.json, with --dynamic the serving\n"
        "   program's run of it in FILE-dynamic.json)\n"
        "\nTable: median ms of R timed runs per step after a warm-up, summed\n"
        "over the steps ([min-max] likewise; MPMD and barrier runs alternate,\n"
        "each started once the other's workers sleep, so a noisy machine\n"
        "weighs on both alike), plus every step's compile when\n"
        "there are several steps (each is a new shape); barrier = the same\n"
        "with stage barriers, bar/PTO their ratio (above 1: MPMD overlap\n"
        "gains); ratio = PyTorch / PTO; GF/s = pto_dsa_gflop / PTO's ms.\n"
        "Under the row: per step, compile and run ms of both settings; per\n"
        "part, busy time (summed over workers) and span (first start to last\n"
        "end) from one traced run per step of each setting.\n"
        "JSON fields (one object per case): workload, preset, b, n, len,\n"
        "len_max, steps, topk, small, scale, threads, seed, repeats, tasks,\n"
        "compile_ms, compile_barrier_ms, compile_counted, pto_ms,\n"
        "pto_ms_min, pto_ms_max, pto_barrier_ms (and _min, _max),\n"
        "barrier_ratio, torch_ms (and _min, _max), torch_variant,\n"
        "torch_variants, torch_version, ratio, gflop, pto_gflops,\n"
        "torch_gflops, peak_gflops, peak_isa, pto_peak_fraction, check,\n"
        "barrier_check, torch_check, steps (per step), parts and\n"
        "parts_barrier (per part: busy_ms, span_ms).\n",
        f);
  dsa_serve_usage(f);
  dsa_cp_usage(f);
}

static int arg(bench_case_opts *o, int argc, char **argv, int *i) {
  dsa_opts *x = (dsa_opts *)o;
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (!strcmp(a, "--scale")) {
    ++*i;
    return bench_parse_f64("dsa", a, v, -1e30, 1e30, &x->scale) ? -1 : 1;
  }
  return 0;
}

/* ---- one case ---------------------------------------------------------- */

pto_dsa_dims dsa_small_dims(void) {
  return (pto_dsa_dims){64, 32, 4, 16, 8, 32, 4, 16, 4};
}

pto_dsa_step dsa_step_of(const dsa_case *c, int64_t s, int64_t *len) {
  for (int64_t b = 0; b < c->b; b++)
    len[b] = c->len0[b] + s * c->n[b];
  return (pto_dsa_step){c->b, c->n, len, c->blocks, c->max_blocks};
}

static int64_t step_tokens(const dsa_case *c) {
  int64_t t = 0;
  for (int64_t b = 0; b < c->b; b++)
    t += c->n[b];
  return t;
}

/* The values of case k into c: sizes, lengths, blocks. 0, or -1 (printed). */
static int case_shape(const dsa_opts *x, int k, dsa_case *c) {
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &x->base.sel, k, v);
  const char *name = bench_preset_name(&table, &x->base.sel, k);
  c->small = (int)v[P_SMALL];
  c->d = c->small ? dsa_small_dims() : pto_dsa_dims_default();
  c->prm = pto_dsa_params_default();
  c->prm.topk = v[P_TOPK];
  if (x->scale != 0)
    c->prm.scale = x->scale;
  c->b = v[P_B];
  c->steps = v[P_STEPS];
  const int64_t lo = v[P_LEN], hi = v[P_LEN_MAX] ? v[P_LEN_MAX] : v[P_LEN];
  if (hi < lo || v[P_N] > lo) {
    fprintf(stderr,
            "pto-bench dsa: %s: needs n <= len <= len-max, got n=%lld "
            "len=%lld len-max=%lld\n",
            name, (long long)v[P_N], (long long)lo, (long long)hi);
    return -1;
  }
  const int64_t BS = c->d.block;
  c->blocks = c->max_blocks = 0;
  for (int64_t b = 0; b < c->b; b++) {
    c->n[b] = v[P_N];
    c->len0[b] = c->b > 1 ? lo + (hi - lo) * b / (c->b - 1) : lo;
    const int64_t last = c->len0[b] + (c->steps - 1) * c->n[b],
                  nb = (last + BS - 1) / BS;
    c->blocks += nb;
    c->max_blocks = nb > c->max_blocks ? nb : c->max_blocks;
  }
  c->tokens = step_tokens(c);
  if (c->d.di & (c->d.di - 1)) {
    fprintf(stderr,
            "pto-bench dsa: %s: the Hadamard matrix needs DI a power "
            "of two\n",
            name);
    return -1;
  }
  return 0;
}

static int case_init(const bench_case_opts *o, int k, bench_case *bc) {
  dsa_case *c = (dsa_case *)bc;
  if (o->h.dtype != PTO_F32) {
    fprintf(stderr, "pto-bench dsa: --dtype %s: the chain runs in f32 only\n",
            bench_dtype_flag(o->h.dtype));
    return -1;
  }
  if (case_shape((const dsa_opts *)o, k, c))
    return -1;
  bc->preset = bench_preset_name(&table, &o->sel, k);
  int64_t len[DSA_MAX_B];
  bc->gflop = 0;
  for (int64_t s = 0; s < c->steps; s++) {
    pto_dsa_step st = dsa_step_of(c, s, len);
    bc->gflop += pto_dsa_gflop(&c->d, &st, &c->prm);
  }
  /* the check spreads the steps' tokens over the threads */
  bc->rows = c->steps * c->tokens;
  pto_dsa_step st = dsa_step_of(c, 0, len);
  bc->n_in = PTO_DSA_INPUT_COUNT;
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    bench_array *a = &bc->in[i];
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(&c->d, &st, i, sh);
    const int per_step = i == PTO_DSA_X || i == PTO_DSA_COS || i == PTO_DSA_SIN;
    if (nd < 0) {
      fprintf(stderr, "pto-bench dsa: %s: bad sizes for input %s\n", bc->preset,
              pto_dsa_input_name(i));
      return -1;
    }
    a->name = pto_dsa_input_name(i);
    a->dtype = i == PTO_DSA_BLOCK_TABLE ? BENCH_I32 : BENCH_F32;
    a->ndim = nd + per_step;
    a->shape[0] = c->steps;
    memcpy(a->shape + per_step, sh, (size_t)nd * sizeof *sh);
  }
  bc->n_out = PTO_DSA_OUTPUT_COUNT;
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    bench_array *a = &bc->out[i];
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_output_shape(&c->d, &st, &c->prm, i, sh);
    if (nd < 0) {
      fprintf(stderr, "pto-bench dsa: %s: bad sizes for output %s\n",
              bc->preset, pto_dsa_output_name(i));
      return -1;
    }
    a->name = pto_dsa_output_name(i);
    a->dtype = i == PTO_DSA_INDICES ? BENCH_I32 : BENCH_F32;
    a->ndim = nd + 1; /* one per step */
    a->shape[0] = c->steps;
    memcpy(a->shape + 1, sh, (size_t)nd * sizeof *sh);
  }
  return 0;
}

/* Elements of one step of array a (its first dimension is the step). */
static size_t per_step(const bench_array *a) {
  return bench_array_count(a) / (size_t)a->shape[0];
}

/* Weights uniform in +-sqrt(3 / fan_in): unit-variance products. */
static void fill_weight(bench_case *bc, int i, int64_t fan_in, uint64_t seed) {
  const float a = (float)sqrt(3.0 / (double)fan_in);
  bench_case_fill_uniform(bc, (size_t)i, seed, (uint64_t)(10 + i), -a, a);
}

void dsa_rope_row(int64_t R, double pos, float *co, float *si) {
  for (int64_t r = 0; r < R / 2; r++) {
    const double ang = pos * pow(10000.0, -2.0 * (double)r / (double)R);
    co[r] = co[r + R / 2] = (float)cos(ang);
    si[r] = si[r + R / 2] = (float)sin(ang);
  }
}

/* The rotary table rows of every token of every step (dsa_rope_row). */
static void fill_rope(dsa_case *c) {
  const int64_t R = c->d.rope, T = c->tokens;
  float *cs = c->base.in_data[PTO_DSA_COS], *sn = c->base.in_data[PTO_DSA_SIN];
  int64_t len[DSA_MAX_B];
  for (int64_t s = 0; s < c->steps; s++) {
    dsa_step_of(c, s, len);
    for (int64_t b = 0, t = 0; b < c->b; b++)
      for (int64_t i = 0; i < c->n[b]; i++, t++)
        dsa_rope_row(R, (double)(len[b] - c->n[b] + i), cs + (s * T + t) * R,
                     sn + (s * T + t) * R);
  }
}

/* Each sequence's blocks: a random permutation of the physical blocks
 * dealt out in order, so a sequence's blocks are scattered; entries past
 * its last block -1. */
static int fill_block_table(dsa_case *c, uint64_t seed) {
  int32_t *perm = malloc((size_t)c->blocks * sizeof *perm);
  if (!perm)
    return -1;
  bench_rng r = bench_rng_new(seed, 30);
  for (int64_t i = 0; i < c->blocks; i++)
    perm[i] = (int32_t)i;
  for (int64_t i = c->blocks - 1; i > 0; i--) {
    int64_t j = (int64_t)bench_rng_below(&r, (uint64_t)i + 1);
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int32_t *bt = c->base.in_data[PTO_DSA_BLOCK_TABLE];
  int64_t at = 0;
  for (int64_t b = 0; b < c->b; b++) {
    const int64_t last = c->len0[b] + (c->steps - 1) * c->n[b],
                  nb = (last + c->d.block - 1) / c->d.block;
    for (int64_t j = 0; j < c->max_blocks; j++)
      bt[b * c->max_blocks + j] = j < nb ? perm[at + j] : -1;
    at += nb;
  }
  free(perm);
  return 0;
}

void dsa_fill_weights(bench_case *bc, const pto_dsa_dims *d, uint64_t seed) {
  void *const *in = bc->in_data;
  fill_weight(bc, PTO_DSA_W_DQ, d->d, seed);
  fill_weight(bc, PTO_DSA_W_UQ_QR, d->q_lora, seed);
  fill_weight(bc, PTO_DSA_W_UK, d->nope, seed);
  fill_weight(bc, PTO_DSA_W_DKV_KR, d->d, seed);
  fill_weight(bc, PTO_DSA_W_QB, d->q_lora, seed);
  fill_weight(bc, PTO_DSA_W_K, d->d, seed);
  fill_weight(bc, PTO_DSA_W_PROJ, d->d, seed);
  bench_fill_uniform(in[PTO_DSA_GAMMA_CQ], (size_t)d->q_lora, seed, 2, 0.5f,
                     1.5f);
  bench_fill_uniform(in[PTO_DSA_GAMMA_CKV], (size_t)d->latent, seed, 3, 0.5f,
                     1.5f);
  bench_fill_uniform(in[PTO_DSA_LN_GAMMA_K], (size_t)d->di, seed, 4, 0.5f,
                     1.5f);
  bench_fill_uniform(in[PTO_DSA_LN_BETA_K], (size_t)d->di, seed, 5, -0.1f,
                     0.1f);
  /* Sylvester's Hadamard matrix scaled by DI^-0.5 (orthonormal) */
  float *hd = in[PTO_DSA_HADAMARD];
  const float sc = (float)(1.0 / sqrt((double)d->di));
  for (int64_t i = 0; i < d->di; i++)
    for (int64_t j = 0; j < d->di; j++)
      hd[i * d->di + j] =
          __builtin_popcountll((uint64_t)(i & j)) & 1 ? -sc : sc;
}

static int case_fill(const bench_case_opts *o, bench_case *bc) {
  dsa_case *c = (dsa_case *)bc;
  const uint64_t seed = o->h.seed;
  void *const *in = bc->in_data;
  bench_fill_uniform(in[PTO_DSA_X], bench_array_count(&bc->in[PTO_DSA_X]), seed,
                     1, -1.0f, 1.0f);
  fill_rope(c);
  dsa_fill_weights(bc, &c->d, seed);
  /* the caches' old rows: the values earlier steps would have written */
  bench_fill_uniform(in[PTO_DSA_KV_CACHE],
                     bench_array_count(&bc->in[PTO_DSA_KV_CACHE]), seed, 6,
                     -1.0f, 1.0f);
  bench_fill_uniform(in[PTO_DSA_K_CACHE],
                     bench_array_count(&bc->in[PTO_DSA_K_CACHE]), seed, 7,
                     -1.0f, 1.0f);
  return fill_block_table(c, seed);
}

/* Step s's input and output pointers: x, cos, sin and the outputs at the
 * step's slice, the rest as they are. */
static void step_ptrs(const bench_case *bc, void *const *outs, int64_t s,
                      const void **in, void **out) {
  for (size_t i = 0; i < bc->n_in; i++) {
    const int stepped = i == PTO_DSA_X || i == PTO_DSA_COS || i == PTO_DSA_SIN;
    in[i] = (const char *)bc->in_data[i] +
            (stepped ? (size_t)s * per_step(&bc->in[i]) * 4 : 0);
  }
  for (size_t i = 0; outs && i < bc->n_out; i++)
    out[i] = (char *)outs[i] + (size_t)s * per_step(&bc->out[i]) * 4;
}

static pto_program *program(const bench_case *bc) {
  const dsa_case *c = (const dsa_case *)bc;
  int64_t len[DSA_MAX_B];
  pto_dsa_step st = dsa_step_of(c, 0, len);
  return pto_dsa_program(&c->d, &st, &c->prm);
}

/* Rows [r0, r1) of outputs out, row s * T + t being token t of step s
 * (bench_workload.check; f32 only, so the peer's outputs get the same
 * tolerance as PTO's). */
static int check(const bench_case *bc, int peer, void *const *out, int64_t r0,
                 int64_t r1, char *msg, size_t size) {
  (void)peer;
  const dsa_case *c = (const dsa_case *)bc;
  const int64_t T = c->tokens;
  for (int64_t s = r0 / T; s * T < r1; s++) {
    const void *in[PTO_DSA_INPUT_COUNT];
    void *o[PTO_DSA_OUTPUT_COUNT];
    int64_t len[DSA_MAX_B];
    char m[768];
    step_ptrs(bc, out, s, in, o);
    pto_dsa_step st = dsa_step_of(c, s, len);
    const int64_t t0 = r0 > s * T ? r0 - s * T : 0,
                  t1 = r1 < (s + 1) * T ? r1 - s * T : T;
    int rc = pto_dsa_check_tokens(&c->d, &st, &c->prm, in,
                                  (const void *const *)o, t0, t1, m, sizeof m);
    if (rc) {
      snprintf(msg, size, "step %lld: %s", (long long)s + 1, m);
      return rc;
    }
  }
  return 0;
}

static json_t *case_meta(const bench_case_opts *o, const bench_case *bc) {
  const dsa_case *c = (const dsa_case *)bc;
  const pto_dsa_dims *d = &c->d;
  json_t *steps = json_array();
  int64_t len[DSA_MAX_B];
  for (int64_t s = 0; s < c->steps; s++) {
    json_t *n = json_array(), *l = json_array();
    dsa_step_of(c, s, len);
    for (int64_t b = 0; b < c->b; b++) {
      json_array_append_new(n, json_integer(c->n[b]));
      json_array_append_new(l, json_integer(len[b]));
    }
    json_array_append_new(steps, json_pack("{s:o, s:o}", "n", n, "len", l));
  }
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
      "s:I, s:f, s:o, s:I, s:s, s:s}",
      "workload", "dsa", "preset", bc->preset, "d", (json_int_t)d->d, "q_lora",
      (json_int_t)d->q_lora, "h", (json_int_t)d->h, "nope", (json_int_t)d->nope,
      "rope", (json_int_t)d->rope, "latent", (json_int_t)d->latent, "hi",
      (json_int_t)d->hi, "di", (json_int_t)d->di, "block", (json_int_t)d->block,
      "b", (json_int_t)c->b, "topk", (json_int_t)c->prm.topk, "blocks",
      (json_int_t)c->blocks, "scale", c->prm.scale, "steps", steps, "seed",
      (json_int_t)o->h.seed, "dtype", "float32", "semantics",
      "include/pto/dsa.h; x, cos, sin and every output carry a leading step "
      "dimension; the caches hold every position any step reads (each "
      "step's new rows were written at their slots after it)");
}

/* ---- the flow over steps ------------------------------------------------- */

/* Writes step s's new rows (PTO's kv_new and k_new) into the caches at the
 * tokens' slots, as the application does after a step. */
static void append_rows(dsa_case *c, int64_t s) {
  bench_case *bc = &c->base;
  const int64_t KV = c->d.latent + c->d.rope, DI = c->d.di, BS = c->d.block;
  const float *kvn = (const float *)bc->pto_out[PTO_DSA_KV_NEW] +
                     (size_t)s * per_step(&bc->out[PTO_DSA_KV_NEW]);
  const float *kn = (const float *)bc->pto_out[PTO_DSA_K_NEW] +
                    (size_t)s * per_step(&bc->out[PTO_DSA_K_NEW]);
  float *kvc = bc->in_data[PTO_DSA_KV_CACHE],
        *kc = bc->in_data[PTO_DSA_K_CACHE];
  const int32_t *bt = bc->in_data[PTO_DSA_BLOCK_TABLE];
  int64_t len[DSA_MAX_B];
  dsa_step_of(c, s, len);
  for (int64_t b = 0, t = 0; b < c->b; b++)
    for (int64_t i = 0; i < c->n[b]; i++, t++) {
      const int64_t p = len[b] - c->n[b] + i,
                    row = (int64_t)bt[b * c->max_blocks + p / BS] * BS + p % BS;
      memcpy(kvc + row * KV, kvn + t * KV, (size_t)KV * sizeof *kvc);
      memcpy(kc + row * DI, kn + t * DI, (size_t)DI * sizeof *kc);
    }
}

/* One traced run of r into path, its swimlane added to parts. */
static int traced(bench_pto *r, const void *const *in, void *const *out,
                  const char *path, dsa_parts *parts) {
  char err[512];
  pto_runtime *rt = bench_pto_traced_runtime(r);
  if (!rt)
    return -1;
  pto_status st = bench_traced_run(rt, r->e, in, out);
  pto_runtime_free(rt);
  if (!st)
    st = pto_executable_write_trace(r->e, path);
  if (st) {
    fprintf(stderr, "pto-bench %s: traced run: %s: %s\n", r->cmd,
            pto_strerror(st), pto_executable_error(r->e));
    return -1;
  }
  if (dsa_parts_add(parts, path, err, sizeof err)) {
    fprintf(stderr, "pto-bench %s: the swimlane: %s\n", r->cmd, err);
    return -1;
  }
  return 0;
}

/* Where step s's traced run of setting v goes: --trace's file (FILE and
 * FILE-barrier.json, per preset when several run) for the last step, else
 * a file in tmp. */
static int trace_path(const bench_case_opts *x, const dsa_case *c, int64_t s,
                      int v, const char *tmp, char *buf, size_t size) {
  static const char *const kind[3] = {"", "barrier", "dynamic"},
                           *const file[3] = {"mpmd.json", "barrier.json",
                                             "dynamic.json"};
  char name[96];
  if (x->h.trace_path && s == c->steps - 1) {
    const int several = x->sel.n > 1;
    snprintf(name, sizeof name, "%s%s%s", several ? c->base.preset : "",
             several && v ? "-" : "", kind[v]);
    return bench_case_path(buf, size, x->h.trace_path, name, several || v, 0);
  }
  return bench_path(buf, size, tmp, file[v]);
}

/* --dynamic: the serving program of the case (its sizes the maxima),
 * compiled once, and the run every step binds. */
typedef struct dsa_dyn {
  pto_dsa_serve sv;
  pto_program *p;
  pto_executable *e;
  pto_run *run;
  int32_t seq[2 * PTO_DSA_SERVE_SLOTS_MAX];
} dsa_dyn;

static void dyn_close(dsa_dyn *y) {
  pto_run_free(y->run);
  pto_executable_free(y->e);
  pto_program_free(y->p);
  memset(y, 0, sizeof *y);
}

/* Compiles the serving program for case c under cfg (timed into c) and
 * makes its run and c->dyn_out. 0, or -1 (printed). */
static int dyn_open(const bench_opts *o, dsa_case *c, const pto_config *cfg,
                    dsa_dyn *y) {
  bench_case *bc = &c->base;
  if (c->b > PTO_DSA_SERVE_SLOTS_MAX) {
    fprintf(stderr,
            "pto-bench dsa: %s: --dynamic: the serving program takes at most "
            "%d sequences, the case has %lld\n",
            bc->preset, PTO_DSA_SERVE_SLOTS_MAX, (long long)c->b);
    return -1;
  }
  int64_t len[DSA_MAX_B], max_new = 0, max_len = 0;
  dsa_step_of(c, c->steps - 1, len); /* the longest */
  for (int64_t b = 0; b < c->b; b++) {
    max_new = c->n[b] > max_new ? c->n[b] : max_new;
    max_len = len[b] > max_len ? len[b] : max_len;
  }
  y->sv = (pto_dsa_serve){c->b,      c->tokens,     max_new, max_len,
                          c->blocks, c->max_blocks, 0};
  bench_progress(o, "dsa: %s: --dynamic: compiling the serving program once",
                 bc->preset);
  const uint64_t t0 = bench_now_ns();
  y->p = pto_dsa_serve_program(&c->d, &y->sv, &c->prm);
  pto_status st = y->p ? pto_compile(y->p, cfg, &y->e) : PTO_ENOMEM;
  c->dyn_compile_ms = (double)(bench_now_ns() - t0) * 1e-6;
  if (!st)
    st = pto_run_new(y->e, &y->run);
  if (st) {
    fprintf(stderr, "pto-bench dsa: %s: --dynamic: %s: %s\n", bc->preset,
            pto_strerror(st), y->p ? pto_program_error(y->p) : "out of memory");
    return -1;
  }
  c->dyn_tasks = pto_executable_num_tasks(y->e);
  for (size_t i = 0; i < bc->n_out; i++)
    if (!(c->dyn_out[i] = pto_buffer_alloc(bench_array_count(&bc->out[i]) * 4))) {
      fprintf(stderr, "pto-bench dsa: out of memory\n");
      return -1;
    }
  return 0;
}

/* One traced run of y's bound run (after a warm-up on its runtime) on a
 * runtime of r's settings: its swimlane in path. 0, or -1 (printed). */
static int dyn_trace(bench_pto *r, dsa_dyn *y, const void *const *in,
                     void *const *out, const char *path) {
  pto_runtime *rt = bench_pto_traced_runtime(r);
  if (!rt)
    return -1;
  pto_status st = pto_run_exec(rt, y->run, in, out);
  if (!st)
    st = pto_run_exec(rt, y->run, in, out);
  pto_runtime_free(rt);
  if (!st)
    st = pto_run_write_trace(y->run, path);
  if (st) {
    fprintf(stderr, "pto-bench %s: --dynamic: traced run: %s: %s\n", r->cmd,
            pto_strerror(st), pto_run_error(y->run));
    return -1;
  }
  return 0;
}

/* Step s on the serving program, bound to it, run once into c->dyn_out's
 * step slice, then timed in turn with r (the step's MPMD program, on its
 * runtime, with its buffers in, out): r->dyn and r->dyn_static; with
 * trace, one traced run of it after, its swimlane in that file. 0, or -1
 * (printed). */
static int dyn_step(const bench_opts *o, dsa_case *c, dsa_dyn *y,
                    bench_pto *r, const void *const *in, void *const *out,
                    int64_t s, int repeats, const char *trace) {
  bench_case *bc = &c->base;
  const void *din[PTO_DSA_INPUT_COUNT + 1];
  void *dout[PTO_DSA_OUTPUT_COUNT], *sout[2 + 3 * PTO_DSA_SERVE_SLOTS_MAX];
  step_ptrs(bc, c->dyn_out, s, din, dout);
  int64_t len[DSA_MAX_B];
  const pto_dsa_step st = dsa_step_of(c, s, len);
  char msg[512];
  pto_status rc =
      pto_dsa_serve_bind(y->run, &c->d, &y->sv, &st, y->seq, msg, sizeof msg);
  if (!rc && (rc = pto_run_prepare(y->run)))
    snprintf(msg, sizeof msg, "%s", pto_run_error(y->run));
  if (rc) {
    fprintf(stderr, "pto-bench dsa: %s: --dynamic: step %lld: %s\n",
            bc->preset, (long long)s + 1, msg);
    return -1;
  }
  din[PTO_DSA_INPUT_COUNT] = y->seq;
  /* the slots' outputs at their tokens' rows of the step */
  const int64_t H = c->d.h, L = c->d.latent, K = c->prm.topk;
  sout[0] = dout[PTO_DSA_KV_NEW];
  sout[1] = dout[PTO_DSA_K_NEW];
  for (int64_t k = 0, t = 0; k < c->b; t += c->n[k], k++) {
    sout[2 + 3 * k] = (float *)dout[PTO_DSA_OUT] + t * H * L;
    sout[3 + 3 * k] = (float *)dout[PTO_DSA_LSE] + t * H;
    sout[4 + 3 * k] = (int32_t *)dout[PTO_DSA_INDICES] + t * K;
  }
  if (bench_pto_start(r))
    return -1;
  double t[2][64];
  const int R = repeats < 64 ? repeats : 64;
  for (int k = -1; k < R; k++) { /* a warm-up round first */
    for (int v = 0; v < 2; v++) {
      const uint64_t a = bench_now_ns();
      if (v ? (rc = pto_run_exec(r->rt, y->run, din, sout)) != PTO_OK
            : bench_pto_run(r, in, out) != 0) {
        if (v)
          fprintf(stderr, "pto-bench dsa: %s: --dynamic: step %lld: %s: %s\n",
                  bc->preset, (long long)s + 1, pto_strerror(rc),
                  pto_run_error(y->run));
        return -1;
      }
      if (k >= 0)
        t[v][k] = (double)(bench_now_ns() - a) * 1e-6;
    }
  }
  if (trace && dyn_trace(r, y, din, sout, trace))
    return -1;
  c->step[s].dyn_static = bench_stats_of(t[0], R);
  c->step[s].dyn = bench_stats_of(t[1], R);
  bench_progress(o,
                 "dsa: %s: step %lld: dynamic %.2f ms, static MPMD %.2f ms in "
                 "the same turns",
                 bc->preset, (long long)s + 1, c->step[s].dyn.median,
                 c->step[s].dyn_static.median);
  return 0;
}

/* Step s on both settings: compile each (timed), run once, time, one traced
 * run; outputs of setting v into outs[v]'s step slice. With y (--dynamic),
 * the serving program bound to the step too (dyn_step). */
static int run_step(const bench_opts *o, const bench_case_opts *x, dsa_case *c,
                    const pto_config *const cfg[2], void *const *const outs[2],
                    int64_t s, const char *tmp, dsa_dyn *y) {
  static const char *const what[2] = {"MPMD", "stage barriers"};
  bench_case *bc = &c->base;
  dsa_step_result *r = &c->step[s];
  int64_t len[DSA_MAX_B];
  pto_dsa_step st = dsa_step_of(c, s, len);
  r->len_min = r->len_max = len[0];
  for (int64_t b = 1; b < c->b; b++) {
    r->len_min = len[b] < r->len_min ? len[b] : r->len_min;
    r->len_max = len[b] > r->len_max ? len[b] : r->len_max;
  }
  const int repeats = bench_case_repeats(o, pto_dsa_gflop(&c->d, &st, &c->prm));
  char who[128], path[4096];
  snprintf(who, sizeof who, "dsa: %s: step %lld of %lld", bc->preset,
           (long long)s + 1, (long long)c->steps);
  pto_program *p = pto_dsa_program(&c->d, &st, &c->prm);
  int rc = -1;
  const void *in[2][PTO_DSA_INPUT_COUNT];
  void *out[2][PTO_DSA_OUTPUT_COUNT];
  bench_pto pr[2];
  memset(pr, 0, sizeof pr);
  for (int v = 0; v < 2; v++) {
    step_ptrs(bc, outs[v], s, in[v], out[v]);
    bench_progress(o, "%s (lengths %lld-%lld): compiling, %s", who,
                   (long long)r->len_min, (long long)r->len_max, what[v]);
    if (bench_pto_compile(&pr[v], who, p, cfg[v]))
      goto fail;
    r->compile_ms[v] = pr[v].compile_ms;
    r->tasks[v] = pr[v].tasks;
    bench_progress(o, "%s: %s: %u tasks, compiled in %.1f ms; 1 run", who,
                   what[v], pr[v].tasks, pr[v].compile_ms);
    if (bench_pto_run(&pr[v], in[v], out[v]))
      goto fail;
    bench_pto_stop(&pr[v]); /* its workers stop before the next compile */
  }
  /* the two settings in turn, so the VM's neighbours and drift weigh on
   * both alike */
  bench_progress(o, "%s: MPMD and stage barriers in turn, 1 warm-up + %d timed",
                 who, repeats);
  bench_pto *const both[2] = {&pr[0], &pr[1]};
  const void *const *const ins[2] = {in[0], in[1]};
  void *const *const outs2[2] = {out[0], out[1]};
  if (bench_pto_time_pair(both, ins, outs2, 1, repeats, r->run))
    goto fail;
  if (y) {
    bench_pto_stop(&pr[1]); /* only the MPMD runtime spins */
    const int last = x->h.trace_path && s == c->steps - 1;
    if ((last && trace_path(x, c, s, 2, tmp, path, sizeof path)) ||
        dyn_step(o, c, y, &pr[0], in[0], out[0], s, repeats,
                 last ? path : NULL))
      goto fail;
    if (last)
      fprintf(stderr, "pto-bench dsa: %s: swimlane (dynamic) in %s\n",
              bc->preset, path);
  }
  for (int v = 0; v < 2; v++) {
    bench_pto_stop(&pr[v]);
    if (trace_path(x, c, s, v, tmp, path, sizeof path) ||
        traced(&pr[v], in[v], out[v], path, &c->parts[v]))
      goto fail;
    if (x->h.trace_path && s == c->steps - 1)
      fprintf(stderr, "pto-bench dsa: %s: swimlane (%s) in %s\n", bc->preset,
              what[v], path);
    if (x->sim) /* both settings simulated; the last step's swimlanes */
      bench_sim_case_of(x->sim, "dsa",
                        x->h.trace_path && s == c->steps - 1 ? path : NULL,
                        bc->preset, 0, pr[v].e, p, cfg[v], &r->sim_ms[v]);
  }
  rc = 0;
fail:
  for (int v = 0; v < 2; v++)
    bench_pto_free(&pr[v]);
  pto_program_free(p);
  return rc;
}

/* Sums of the steps' medians, minima and maxima, each step's compile
 * added when counted. */
static bench_stats total_of(const dsa_case *c, int v) {
  bench_stats t = {0, 0, 0, 0, 0, 0};
  t.n = c->step[0].run[v].n;
  for (int s = 0; s < c->ran_steps; s++) {
    const bench_stats *r = &c->step[s].run[v];
    const double cm = c->compile_counted ? c->step[s].compile_ms[v] : 0;
    t.median += r->median + cm;
    t.min += r->min + cm;
    t.max += r->max + cm;
    t.q1 += r->q1 + cm;
    t.q3 += r->q3 + cm;
  }
  return t;
}

/* 1 when outputs a and b of c are the same bytes. */
static int same_bits(const bench_case *c, void *const *a, void *const *b) {
  for (size_t i = 0; i < c->n_out; i++)
    if (memcmp(a[i], b[i], bench_array_count(&c->out[i]) * 4))
      return 0;
  return 1;
}

static int run_case(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, bench_case *bc,
                    const pto_config *cfg, const bench_peer *peer, int threads,
                    bench_case_result *res) {
  dsa_case *c = (dsa_case *)bc;
  void *bar_out[PTO_DSA_OUTPUT_COUNT] = {NULL};
  dsa_dyn dyn;
  memset(&dyn, 0, sizeof dyn);
  char *tmp = bench_tmpdir_new("dsa-trace");
  /* MPMD: the config without stages; barriers: the config's stages when
   * it sets some (--config), else the four parts */
  pto_config *mpmd = pto_config_clone(cfg), *bar = pto_config_clone(cfg);
  int rc = -1;
  if (!tmp || !mpmd || !bar || pto_config_set_stage_barriers(mpmd, NULL, 0) ||
      (!pto_config_n_stage_barriers(cfg) &&
       pto_config_set_stage_barriers(bar, dsa_part_names, DSA_PARTS))) {
    fprintf(stderr, "pto-bench dsa: out of memory\n");
    goto done;
  }
  for (size_t i = 0; i < bc->n_out; i++)
    if (!(bar_out[i] = pto_buffer_alloc(bench_array_count(&bc->out[i]) * 4))) {
      fprintf(stderr, "pto-bench dsa: out of memory\n");
      goto done;
    }
  const pto_config *cfgs[2] = {mpmd, bar};
  void *const *outs[2] = {bc->pto_out, bar_out};
  c->compile_counted = c->steps > 1;
  c->dynamic = x->h.dynamic;
  if (c->dynamic && dyn_open(o, c, mpmd, &dyn))
    goto done;
  for (int64_t s = 0; s < c->steps; s++) {
    if (run_step(o, x, c, cfgs, outs, s, tmp, c->dynamic ? &dyn : NULL))
      goto done;
    c->ran_steps = (int)s + 1;
    res->compile_ms += c->step[s].compile_ms[0];
    res->tasks = c->step[s].tasks[0];
    append_rows(c, s); /* the next step reads these slots from the caches */
  }
  c->total[0] = total_of(c, 0);
  c->total[1] = total_of(c, 1);
  if (bench_case_check(o, w, bc, threads, "PTO", bc->pto_out)) {
    res->pto_wrong = 1;
    goto done;
  }
  res->pto_checked = 1;
  res->pto = c->total[0];
  /* the same tasks on the same inputs: bit for bit the checked result,
   * which spares the reference's second pass; else the checker says */
  if (same_bits(bc, bc->pto_out, bar_out))
    bench_progress(o,
                   "dsa: %s: PTO (stage barriers): bit for bit PTO's "
                   "checked result",
                   bc->preset);
  else if (bench_case_check(o, w, bc, threads, "PTO (stage barriers)",
                            bar_out)) {
    c->bar_wrong = 1;
    goto done;
  }
  c->bar_checked = 1;
  if (c->dynamic) {
    if (bench_case_check(o, w, bc, threads, "PTO (dynamic)", c->dyn_out)) {
      c->dyn_wrong = 1;
      goto done;
    }
    c->dyn_checked = 1;
  }
  if (x->h.save_dir && bench_case_save(o, w, x, bc))
    goto done;
  if (peer) {
    if (bench_case_peer(o, w, x, bc, peer, threads,
                        bench_case_repeats(o, bc->gflop / (double)c->steps),
                        res) ||
        bench_case_check(o, w, bc, threads, "PyTorch", bc->peer_out))
      goto done;
    res->torch_checked = 1;
  }
  rc = 0;
done:
  dyn_close(&dyn);
  for (size_t i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    free(bar_out[i]);
    free(c->dyn_out[i]);
    c->dyn_out[i] = NULL;
  }
  pto_config_free(mpmd);
  pto_config_free(bar);
  bench_tmpdir_free(tmp);
  return rc;
}

/* ---- the command --------------------------------------------------------- */

static void head(FILE *f) {
  fprintf(f, "%-8s %3s %4s %11s %5s %5s %5s %22s %7s ", "preset", "B", "n",
          "len", "steps", "topk", "dims", "barrier ms [min-max]", "bar/PTO");
}

static json_t *report(const bench_case_opts *o, int k, const bench_case *bc,
                      const char *nm, int threads, FILE *f, double *gflop) {
  const dsa_opts *x = (const dsa_opts *)o;
  const dsa_case *c = (const dsa_case *)bc;
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &o->sel, k, v);
  /* one sequence: len alone (len-max spreads a batch) */
  const int64_t hi = v[P_LEN_MAX] && v[P_B] > 1 ? v[P_LEN_MAX] : v[P_LEN];
  char len[32], bar[48], ratio[16];
  snprintf(len, sizeof len, "%lld-%lld", (long long)v[P_LEN], (long long)hi);
  const int ok = c && c->bar_checked;
  snprintf(bar, sizeof bar, ok ? "%.2f [%.2f-%.2f]" : "-",
           ok ? c->total[1].median : 0, ok ? c->total[1].min : 0,
           ok ? c->total[1].max : 0);
  snprintf(ratio, sizeof ratio, ok ? "%.2fx" : "-",
           ok ? c->total[1].median / c->total[0].median : 0);
  fprintf(f, "%-8s %3lld %4lld %11s %5lld %5lld %5s %22s %7s ", nm,
          (long long)v[P_B], (long long)v[P_N], len, (long long)v[P_STEPS],
          (long long)v[P_TOPK], v[P_SMALL] ? "small" : "v3.2", bar, ratio);
  *gflop = bc ? bc->gflop : 0;
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:f, s:i, "
      "s:I}",
      "workload", "dsa", "preset", bench_preset_name(&table, &o->sel, k), "b",
      (json_int_t)v[P_B], "n", (json_int_t)v[P_N], "len", (json_int_t)v[P_LEN],
      "len_max", (json_int_t)hi, "steps", (json_int_t)v[P_STEPS], "topk",
      (json_int_t)v[P_TOPK], "small", (int)v[P_SMALL], "scale",
      x->scale != 0 ? x->scale : pto_dsa_params_default().scale, "threads",
      threads, "seed", (json_int_t)o->h.seed);
}

static const bench_workload workload = {
    .table = &table,
    .labels = "\"mla_prolog\", \"indexer_prolog\", \"indexer\", "
              "\"attention\"",
    .case_size = sizeof(dsa_case),
    .arg = arg,
    .init = case_init,
    .fill = case_fill,
    .program = program,
    .check = check,
    .meta = case_meta,
    .head = head,
    .report = report,
    .run_case = run_case,
    .after = dsa_after,
};

static int run(const bench_opts *o, int argc, char **argv) {
  const int cp = dsa_cp_wants(argc, argv);
  if (cp)
    return cp < 0 ? 2 : dsa_cp_run(o, argc, argv);
  const int serve = dsa_serve_wants(argc, argv);
  if (serve)
    return serve < 0 ? 2 : dsa_serve_run(o, argc, argv);
  dsa_opts x;
  memset(&x, 0, sizeof x);
  return bench_case_main(o, &workload, &x.base, argc, argv);
}

const bench_cmd bench_dsa = {
    "dsa",
    "DeepSeek indexer attention (both prologs, indexer, sparse MLA) on a "
    "paged cache: MPMD, stage barriers and PyTorch, checked",
    run, usage};
