/* pto-bench dsa --preset serve: DeepSeek-V3.2's indexer attention in a
 * serving loop of continuous batching, three ways over the same steps in
 * one invocation:
 *   - PTO dynamic: pto_dsa_serve_program compiled once; each step binds its
 *     sizes (pto_dsa_serve_bind) and runs;
 *   - PTO recompiling: each step compiles pto_dsa_program for its sizes
 *     and runs the new executable (what a server without dynamic shapes
 *     does; its compile and its first run's fresh workspace count);
 *   - PyTorch (tools/pto_bench_torch.py) on the same steps.
 * The schedule comes from the seed: sequences arrive with a cached prefix
 * (earlier turns of a conversation) and a prefill of new tokens, decode
 * one token a step, and finish; at most one prefill a step (slot 0, the
 * program's one prefilling slot), up to `slots` sequences at once. The
 * caches are paged through each sequence's block table; no block is
 * reused, so the final caches hold every position any step reads, and the
 * peer runs every step on them. Every step's results of all three are
 * checked with pto_dsa_check_tokens before a time is reported.
 *
 * A step's tokens are rows t0 .. t0+T of flat arrays (x, cos, sin and the
 * outputs), its sequences in slot order, so the slots' outputs of the
 * dynamic executable land in token order with no copy; the arrays have
 * max_tokens rows of padding for the layout of the last step's maxima. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/case.h"
#include "bench/dsa.h"
#include "bench/dsa_serve.h"
#include "bench/files.h"
#include "bench/npy.h"
#include "bench/preset.h"
#include "pto/pto.h"

#define SLOTS PTO_DSA_SERVE_SLOTS_MAX
#define SERVE_MAX_STEPS 1024
#define SERVE_MAX_SEQ 4096

enum {
  P_SLOTS,
  P_STEPS,
  P_PREFILL,
  P_PREFILL_MAX,
  P_CACHED,
  P_CACHED_MAX,
  P_DECODE,
  P_DECODE_MAX,
  P_ARRIVE,
  P_HEADS,
  P_TOPK,
  P_SMALL,
  N_PARAMS
};

static const bench_param params[N_PARAMS] = {
    {"slots", "slots", 1, SLOTS},
    {"steps", "steps", 1, SERVE_MAX_STEPS},
    {"prefill", "P", 1, 1 << 14},
    {"prefill-max", "P_max", 1, 1 << 14},
    {"cached", "C", 0, 1 << 20},
    {"cached-max", "C_max", 0, 1 << 20},
    {"decode", "D", 1, 1 << 14},
    {"decode-max", "D_max", 1, 1 << 14},
    {"arrive", "arrive%", 0, 100},
    {"heads", "H", 1, 128},
    {"topk", "topk", 1, 1 << 16},
    {"small", "small", 0, 1},
};

/* serve: V3.2's dims with the 16 attention heads of one rank of 8-way
 * tensor parallelism; prefills of 64-256 tokens after cached prefixes of
 * 256-3072, 16-64 decode steps each, a new request in a step with
 * probability 15% while a slot is free. serve-smoke: the smoke dims. */
static const bench_preset presets[] = {
    {"serve", {16, 64, 64, 256, 256, 3072, 16, 64, 15, 16, 2048, 0}},
    {"serve-smoke", {4, 16, 3, 9, 0, 24, 2, 6, 30, 4, 16, 1}},
};

static const bench_preset_table table = {
    "dsa",   params, N_PARAMS, presets, sizeof presets / sizeof presets[0],
    "serve", "serve-smoke"};

int dsa_serve_wants(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--preset") || !strstr(argv[i + 1], "serve"))
      continue;
    if (strchr(argv[i + 1], ',')) {
      fprintf(stderr,
              "pto-bench dsa: --preset %s: a serving preset runs alone "
              "(its flow and columns are its own)\n",
              argv[i + 1]);
      return -1;
    }
    return 1;
  }
  return 0;
}

/* ---- the schedule ---------------------------------------------------------- */

typedef struct serve_step {
  int64_t b, t0, T;      /* sequences, first row, tokens */
  int32_t seq[SLOTS];    /* the sequences in slot order */
  int64_t n[SLOTS], len[SLOTS];
} serve_step;

typedef struct serve_seq {
  int64_t cached, prefill, decode; /* prefix, new tokens, decode steps */
  int64_t start, len;              /* its first step; its final length */
} serve_seq;

/* What one variant measured over the steps (ms per step). */
typedef struct serve_times {
  double *ms;      /* per step: the median of the repeats */
  double mean, p50, p99;
} serve_times;

typedef struct serve_case {
  bench_case base; /* first: the driver hands it back */
  pto_dsa_dims d;
  pto_dsa_params prm;
  pto_dsa_serve sv;
  int small;
  int64_t steps, n_seq, tokens; /* tokens: all steps' together */
  int64_t prefills, decodes;    /* tokens of each kind */
  serve_step *step;
  serve_seq *seq;
  int32_t *tables; /* per step [slots, max_blocks]: its slots' rows */
  /* what the run measured */
  serve_times dyn, rec, torch;
  double *bind_us, *rec_compile_ms; /* per step */
  double bind_us_mean, bind_us_max, rec_compile_mean;
  double compile_ms; /* the dynamic executable's one compile */
  uint32_t tasks;
  int rec_checked, rec_wrong, torch_steps;
  void *rec_out[BENCH_CASE_MAX_OUT];
} serve_case;

/* The per-step percentile q of v (n values; sorted copy). */
static double percentile(const double *v, int64_t n, double q) {
  double *s = malloc((size_t)n * sizeof *s);
  if (!s)
    return NAN;
  memcpy(s, v, (size_t)n * sizeof *s);
  bench_median(s, (int)n); /* sorts */
  const double at = q * (double)(n - 1);
  const int64_t i = (int64_t)at;
  const double f = at - (double)i,
               r = i + 1 < n ? s[i] + f * (s[i + 1] - s[i]) : s[i];
  free(s);
  return r;
}

static void times_finish(serve_times *t, int64_t n) {
  double sum = 0;
  for (int64_t s = 0; s < n; s++)
    sum += t->ms[s];
  t->mean = sum / (double)n;
  t->p50 = percentile(t->ms, n, 0.50);
  t->p99 = percentile(t->ms, n, 0.99);
}

static int64_t draw(bench_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)bench_rng_below(r, (uint64_t)(hi - lo + 1));
}

/* The steps of case c from its values v and the seed: arrivals, decodes,
 * finishes; the serving program's maxima. 0, or -1 (printed). */
static int plan(serve_case *c, const int64_t *v, uint64_t seed,
                const char *name) {
  const int64_t S = v[P_SLOTS];
  if (v[P_PREFILL] > v[P_PREFILL_MAX] || v[P_CACHED] > v[P_CACHED_MAX] ||
      v[P_DECODE] > v[P_DECODE_MAX]) {
    fprintf(stderr,
            "pto-bench dsa: %s: needs prefill <= prefill-max, cached <= "
            "cached-max and decode <= decode-max\n",
            name);
    return -1;
  }
  c->steps = v[P_STEPS];
  c->step = calloc((size_t)c->steps, sizeof *c->step);
  c->seq = calloc(SERVE_MAX_SEQ, sizeof *c->seq);
  if (!c->step || !c->seq)
    return -1;
  bench_rng r = bench_rng_new(seed, 40);
  int32_t active[SLOTS]; /* decoding sequences, in arrival order */
  int64_t n_active = 0, left[SERVE_MAX_SEQ];
  for (int64_t s = 0, t0 = 0; s < c->steps; s++) {
    serve_step *st = &c->step[s];
    /* those done decoding leave */
    int64_t keep = 0;
    for (int64_t k = 0; k < n_active; k++)
      if (left[active[k]] > 0)
        active[keep++] = active[k];
    n_active = keep;
    /* a new request while a slot is free (always when none is busy) */
    const int arrive =
        n_active < S && c->n_seq < SERVE_MAX_SEQ &&
        (!n_active || (int64_t)bench_rng_below(&r, 100) < v[P_ARRIVE]);
    if (arrive) {
      serve_seq *q = &c->seq[c->n_seq];
      q->cached = draw(&r, v[P_CACHED], v[P_CACHED_MAX]);
      q->prefill = draw(&r, v[P_PREFILL], v[P_PREFILL_MAX]);
      q->decode = draw(&r, v[P_DECODE], v[P_DECODE_MAX]);
      q->start = s;
      q->len = q->cached + q->prefill;
      left[c->n_seq] = q->decode;
      st->seq[st->b] = (int32_t)c->n_seq;
      st->n[st->b] = q->prefill;
      st->len[st->b] = q->len;
      st->b++;
      c->prefills += q->prefill;
    }
    for (int64_t k = 0; k < n_active; k++) { /* one token each */
      serve_seq *q = &c->seq[active[k]];
      q->len++;
      left[active[k]]--;
      st->seq[st->b] = active[k];
      st->n[st->b] = 1;
      st->len[st->b] = q->len;
      st->b++;
      c->decodes++;
    }
    if (arrive)
      active[n_active++] = (int32_t)c->n_seq++;
    st->t0 = t0;
    st->T = 0;
    for (int64_t k = 0; k < st->b; k++)
      st->T += st->n[k];
    t0 += st->T;
    c->tokens = t0;
  }
  /* the server's maxima: its request limits, not this run's */
  const int64_t BS = c->d.block,
                max_len = v[P_CACHED_MAX] + v[P_PREFILL_MAX] + v[P_DECODE_MAX];
  c->sv.slots = S;
  c->sv.max_new = v[P_PREFILL_MAX];
  c->sv.max_tokens = v[P_PREFILL_MAX] + S - 1;
  c->sv.max_len = max_len;
  c->sv.max_blocks = (max_len + BS - 1) / BS;
  c->sv.prefill_slots = 1;
  c->sv.blocks = 0;
  for (int64_t i = 0; i < c->n_seq; i++)
    c->sv.blocks += (c->seq[i].len + BS - 1) / BS;
  return 0;
}

/* ---- the case --------------------------------------------------------------- */

static int case_init(const bench_case_opts *o, int k, bench_case *bc) {
  serve_case *c = (serve_case *)bc;
  if (o->h.dtype != PTO_F32) {
    fprintf(stderr, "pto-bench dsa: --dtype %s: the chain runs in f32 only\n",
            bench_dtype_flag(o->h.dtype));
    return -1;
  }
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &o->sel, k, v);
  bc->preset = bench_preset_name(&table, &o->sel, k);
  c->small = (int)v[P_SMALL];
  c->d = c->small ? dsa_small_dims() : pto_dsa_dims_default();
  c->d.h = v[P_HEADS];
  c->prm = pto_dsa_params_default();
  c->prm.topk = v[P_TOPK];
  if (plan(c, v, o->h.seed, bc->preset))
    return -1;
  const pto_dsa_dims *d = &c->d;
  const int64_t rows = c->tokens + c->sv.max_tokens, MB = c->sv.max_blocks;
  bc->gflop = 0;
  for (int64_t s = 0; s < c->steps; s++) {
    const serve_step *st = &c->step[s];
    const pto_dsa_step ds = {st->b, st->n, st->len, c->sv.blocks, MB};
    bc->gflop += pto_dsa_gflop(d, &ds, &c->prm);
  }
  bc->rows = c->tokens;
  /* the arrays: pto_dsa's inputs, x, cos and sin with every step's rows,
   * the block table with every sequence's row */
  const int64_t one = 1;
  const pto_dsa_step st1 = {1, &one, &one, c->sv.blocks, MB};
  bc->n_in = PTO_DSA_INPUT_COUNT;
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    bench_array *a = &bc->in[i];
    int64_t sh[PTO_MAX_DIMS];
    a->ndim = pto_dsa_input_shape(d, &st1, i, sh);
    if (a->ndim < 0) {
      fprintf(stderr, "pto-bench dsa: %s: bad sizes for input %s\n", bc->preset,
              pto_dsa_input_name(i));
      return -1;
    }
    if (i == PTO_DSA_X || i == PTO_DSA_COS || i == PTO_DSA_SIN)
      sh[0] = rows;
    if (i == PTO_DSA_BLOCK_TABLE)
      sh[0] = c->n_seq;
    a->name = pto_dsa_input_name(i);
    a->dtype = i == PTO_DSA_BLOCK_TABLE ? BENCH_I32 : BENCH_F32;
    memcpy(a->shape, sh, (size_t)a->ndim * sizeof *sh);
  }
  bc->n_out = PTO_DSA_OUTPUT_COUNT;
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    bench_array *a = &bc->out[i];
    int64_t sh[PTO_MAX_DIMS];
    a->ndim = pto_dsa_output_shape(d, &st1, &c->prm, i, sh);
    if (a->ndim < 0) {
      fprintf(stderr, "pto-bench dsa: %s: bad sizes for output %s\n",
              bc->preset, pto_dsa_output_name(i));
      return -1;
    }
    sh[0] = rows;
    a->name = pto_dsa_output_name(i);
    a->dtype = i == PTO_DSA_INDICES ? BENCH_I32 : BENCH_F32;
    memcpy(a->shape, sh, (size_t)a->ndim * sizeof *sh);
  }
  return 0;
}

/* Step s's slot rows of the block table, each sequence's row of the
 * global one (rows past the step's sequences: -1). */
static void step_table(const serve_case *c, int64_t s, int32_t *t) {
  const int32_t *all = c->base.in_data[PTO_DSA_BLOCK_TABLE];
  const int64_t MB = c->sv.max_blocks;
  const serve_step *st = &c->step[s];
  for (int64_t k = 0; k < c->sv.slots; k++)
    for (int64_t j = 0; j < MB; j++)
      t[k * MB + j] = k < st->b ? all[st->seq[k] * MB + j] : -1;
}

static int case_fill(const bench_case_opts *o, bench_case *bc) {
  serve_case *c = (serve_case *)bc;
  const uint64_t seed = o->h.seed;
  void *const *in = bc->in_data;
  const int64_t R = c->d.rope, BS = c->d.block, MB = c->sv.max_blocks;
  bench_fill_uniform(in[PTO_DSA_X], bench_array_count(&bc->in[PTO_DSA_X]), seed,
                     1, -1.0f, 1.0f);
  dsa_fill_weights(bc, &c->d, seed);
  /* the cached prefixes: what earlier turns would have written */
  bench_fill_uniform(in[PTO_DSA_KV_CACHE],
                     bench_array_count(&bc->in[PTO_DSA_KV_CACHE]), seed, 6,
                     -1.0f, 1.0f);
  bench_fill_uniform(in[PTO_DSA_K_CACHE],
                     bench_array_count(&bc->in[PTO_DSA_K_CACHE]), seed, 7,
                     -1.0f, 1.0f);
  /* each sequence's blocks: a random permutation of the physical blocks
   * dealt out in order; -1 past its last */
  int32_t *perm = malloc((size_t)c->sv.blocks * sizeof *perm);
  c->tables = malloc((size_t)(c->steps * c->sv.slots * MB) * sizeof *c->tables);
  if (!perm || !c->tables) {
    free(perm);
    return -1;
  }
  bench_rng r = bench_rng_new(seed, 30);
  for (int64_t i = 0; i < c->sv.blocks; i++)
    perm[i] = (int32_t)i;
  for (int64_t i = c->sv.blocks - 1; i > 0; i--) {
    const int64_t j = (int64_t)bench_rng_below(&r, (uint64_t)i + 1);
    const int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int32_t *bt = in[PTO_DSA_BLOCK_TABLE];
  for (int64_t q = 0, at = 0; q < c->n_seq; q++) {
    const int64_t nb = (c->seq[q].len + BS - 1) / BS;
    for (int64_t j = 0; j < MB; j++)
      bt[q * MB + j] = j < nb ? perm[at + j] : -1;
    at += nb;
  }
  free(perm);
  /* the rotary rows of every token at its position */
  float *cs = in[PTO_DSA_COS], *sn = in[PTO_DSA_SIN];
  for (int64_t s = 0; s < c->steps; s++) {
    const serve_step *st = &c->step[s];
    for (int64_t k = 0, t = st->t0; k < st->b; k++)
      for (int64_t i = 0; i < st->n[k]; i++, t++)
        dsa_rope_row(R, (double)(st->len[k] - st->n[k] + i), cs + t * R,
                     sn + t * R);
    step_table(c, s, c->tables + s * c->sv.slots * MB);
  }
  return 0;
}

/* Step s's inputs for pto_dsa_program (x, cos, sin at its rows, its slots'
 * table rows) and its outputs at its rows of outs (NULL: none). */
static pto_dsa_step step_io(const serve_case *c, int64_t s, void *const *outs,
                            const void **in, void **out) {
  const bench_case *bc = &c->base;
  const serve_step *st = &c->step[s];
  const int64_t MB = c->sv.max_blocks;
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    const int rowed = i == PTO_DSA_X || i == PTO_DSA_COS || i == PTO_DSA_SIN;
    const size_t w = rowed ? bench_array_count(&bc->in[i]) /
                                 (size_t)bc->in[i].shape[0]
                           : 0;
    in[i] = (const char *)bc->in_data[i] + (size_t)st->t0 * w * 4;
  }
  in[PTO_DSA_BLOCK_TABLE] = c->tables + s * c->sv.slots * MB;
  for (int i = 0; outs && i < PTO_DSA_OUTPUT_COUNT; i++) {
    const size_t w =
        bench_array_count(&bc->out[i]) / (size_t)bc->out[i].shape[0];
    out[i] = (char *)outs[i] + (size_t)st->t0 * w * 4;
  }
  return (pto_dsa_step){st->b, st->n, st->len, c->sv.blocks, MB};
}

static pto_program *program(const bench_case *bc) {
  const serve_case *c = (const serve_case *)bc;
  return pto_dsa_serve_program(&c->d, &c->sv, &c->prm);
}

/* Rows [r0, r1) of outputs out: token rows of the steps. */
static int check(const bench_case *bc, int peer, void *const *out, int64_t r0,
                 int64_t r1, char *msg, size_t size) {
  (void)peer;
  const serve_case *c = (const serve_case *)bc;
  for (int64_t s = 0; s < c->steps; s++) {
    const serve_step *st = &c->step[s];
    if (st->t0 + st->T <= r0 || st->t0 >= r1)
      continue;
    const void *in[PTO_DSA_INPUT_COUNT];
    void *o[PTO_DSA_OUTPUT_COUNT];
    char m[768];
    const pto_dsa_step ds = step_io(c, s, out, in, o);
    const int64_t t0 = r0 > st->t0 ? r0 - st->t0 : 0,
                  t1 = r1 < st->t0 + st->T ? r1 - st->t0 : st->T;
    const int rc = pto_dsa_check_tokens(&c->d, &ds, &c->prm, in,
                                        (const void *const *)o, t0, t1, m,
                                        sizeof m);
    if (rc) {
      snprintf(msg, size, "step %" PRId64 " (%" PRId64 " sequences, %" PRId64
                          " tokens): %s",
               s + 1, st->b, st->T, m);
      return rc;
    }
  }
  return 0;
}

static json_t *case_meta(const bench_case_opts *o, const bench_case *bc) {
  const serve_case *c = (const serve_case *)bc;
  const pto_dsa_dims *d = &c->d;
  json_t *steps = json_array();
  for (int64_t s = 0; s < c->steps; s++) {
    const serve_step *st = &c->step[s];
    json_t *q = json_array(), *n = json_array(), *l = json_array();
    for (int64_t k = 0; k < st->b; k++) {
      json_array_append_new(q, json_integer(st->seq[k]));
      json_array_append_new(n, json_integer(st->n[k]));
      json_array_append_new(l, json_integer(st->len[k]));
    }
    json_array_append_new(steps,
                          json_pack("{s:o, s:o, s:o, s:I}", "seqs", q, "n", n,
                                    "len", l, "t0", (json_int_t)st->t0));
  }
  return json_pack(
      "{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
      "s:I, s:f, s:o, s:I, s:s, s:s}",
      "workload", "dsa", "preset", bc->preset, "serve", 1, "d",
      (json_int_t)d->d, "q_lora", (json_int_t)d->q_lora, "h",
      (json_int_t)d->h, "nope", (json_int_t)d->nope, "rope",
      (json_int_t)d->rope, "latent", (json_int_t)d->latent, "hi",
      (json_int_t)d->hi, "di", (json_int_t)d->di, "block",
      (json_int_t)d->block, "topk", (json_int_t)c->prm.topk, "blocks",
      (json_int_t)c->sv.blocks, "scale", c->prm.scale, "steps", steps, "seed",
      (json_int_t)o->h.seed, "dtype", "float32", "semantics",
      "include/pto/dsa.h; x, cos, sin and every output hold every step's "
      "tokens, step s's at rows t0 .. t0 + sum(n); a step's sequences are "
      "rows `seqs` of block_table; the caches hold every position any step "
      "reads");
}

/* ---- the flow over steps ------------------------------------------------- */

/* Writes step s's new rows (the dynamic run's kv_new and k_new) into the
 * caches at the tokens' positions, as the application does after a step. */
static void append_rows(serve_case *c, int64_t s) {
  bench_case *bc = &c->base;
  const serve_step *st = &c->step[s];
  const int64_t KV = c->d.latent + c->d.rope, DI = c->d.di, BS = c->d.block,
                MB = c->sv.max_blocks;
  const float *kvn = (const float *)bc->pto_out[PTO_DSA_KV_NEW] + st->t0 * KV;
  const float *kn = (const float *)bc->pto_out[PTO_DSA_K_NEW] + st->t0 * DI;
  float *kvc = bc->in_data[PTO_DSA_KV_CACHE],
        *kc = bc->in_data[PTO_DSA_K_CACHE];
  const int32_t *bt = bc->in_data[PTO_DSA_BLOCK_TABLE];
  for (int64_t k = 0, t = 0; k < st->b; k++)
    for (int64_t i = 0; i < st->n[k]; i++, t++) {
      const int64_t p = st->len[k] - st->n[k] + i,
                    row = (int64_t)bt[st->seq[k] * MB + p / BS] * BS + p % BS;
      memcpy(kvc + row * KV, kvn + t * KV, (size_t)KV * sizeof *kvc);
      memcpy(kc + row * DI, kn + t * DI, (size_t)DI * sizeof *kc);
    }
}

/* The dynamic executable's run state: its run, the seq input, the inputs
 * and outputs of a step (slots past the step write nowhere: a buffer of a
 * slot's maximum each). */
typedef struct dyn_state {
  pto_run *run;
  int32_t seq[2 * SLOTS];
  const void *in[PTO_DSA_INPUT_COUNT + 1];
  void *out[2 + 3 * SLOTS];
  void *spare[3];
} dyn_state;

/* Binds step s (timed into *us) and sets its buffers. 0, or -1 (printed). */
static int dyn_bind(serve_case *c, dyn_state *y, int64_t s, double *us) {
  const bench_case *bc = &c->base;
  const serve_step *st = &c->step[s];
  void *o[PTO_DSA_OUTPUT_COUNT];
  const pto_dsa_step ds = step_io(c, s, bc->pto_out, y->in, o);
  char msg[512];
  /* the bind and the pass that sizes the run's tasks to it */
  const uint64_t t0 = bench_now_ns();
  pto_status rc =
      pto_dsa_serve_bind(y->run, &c->d, &c->sv, &ds, y->seq, msg, sizeof msg);
  if (!rc && (rc = pto_run_prepare(y->run)))
    snprintf(msg, sizeof msg, "%s", pto_run_error(y->run));
  *us = (double)(bench_now_ns() - t0) * 1e-3;
  if (rc) {
    fprintf(stderr, "pto-bench dsa: %s: step %" PRId64 ": bind: %s\n",
            bc->preset, s + 1, msg);
    return -1;
  }
  y->in[PTO_DSA_INPUT_COUNT] = y->seq;
  y->out[0] = o[PTO_DSA_KV_NEW];
  y->out[1] = o[PTO_DSA_K_NEW];
  const int64_t H = c->d.h, L = c->d.latent, K = c->prm.topk;
  for (int64_t k = 0, t = 0; k < c->sv.slots; k++) {
    if (k < st->b) {
      y->out[2 + 3 * k] = (float *)o[PTO_DSA_OUT] + t * H * L;
      y->out[3 + 3 * k] = (float *)o[PTO_DSA_LSE] + t * H;
      y->out[4 + 3 * k] = (int32_t *)o[PTO_DSA_INDICES] + t * K;
      t += st->n[k];
    } else {
      for (int j = 0; j < 3; j++)
        y->out[2 + 3 * k + j] = y->spare[j];
    }
  }
  return 0;
}

/* One compile and run of step s's own program (the recompiling server):
 * into *ms the compile and the run, *compile_ms the compile alone. */
static int rec_step(serve_case *c, pto_runtime *rt, const pto_config *cfg,
                    int64_t s, double *ms, double *compile_ms) {
  const void *in[PTO_DSA_INPUT_COUNT];
  void *out[PTO_DSA_OUTPUT_COUNT];
  const pto_dsa_step ds = step_io(c, s, c->rec_out, in, out);
  const uint64_t t0 = bench_now_ns();
  pto_program *p = pto_dsa_program(&c->d, &ds, &c->prm);
  pto_executable *e = NULL;
  pto_status st = p ? pto_compile(p, cfg, &e) : PTO_ENOMEM;
  const uint64_t t1 = bench_now_ns();
  if (!st)
    st = pto_runtime_run(rt, e, in, out);
  const uint64_t t2 = bench_now_ns();
  if (st)
    fprintf(stderr, "pto-bench dsa: %s: step %" PRId64 " recompiled: %s: %s\n",
            c->base.preset, s + 1, pto_strerror(st),
            e ? pto_executable_error(e)
              : p ? pto_program_error(p) : "out of memory");
  pto_executable_free(e);
  pto_program_free(p);
  *ms = (double)(t2 - t0) * 1e-6;
  *compile_ms = (double)(t1 - t0) * 1e-6;
  return st ? -1 : 0;
}

/* The peer on every step: its per-step medians into c->torch, its outputs
 * into c->base.peer_out. 0, or -1 (printed). */
static int peer_steps(const bench_opts *o, const bench_case_opts *x,
                      serve_case *c, const bench_peer *peer, int threads,
                      int repeats, bench_case_result *res) {
  bench_case *bc = &c->base;
  bench_array a[BENCH_CASE_MAX_IN + BENCH_CASE_MAX_OUT];
  char err[1024], path[4096], file[256];
  int rc = -1;
  json_t *meta = case_meta(x, bc), *out = NULL;
  for (size_t i = 0; i < bc->n_in; i++) {
    a[i] = bc->in[i];
    a[i].data = bc->in_data[i];
  }
  char *dir = meta ? bench_tmpdir_new("dsa") : NULL;
  if (!dir)
    goto done;
  bench_progress(o, "dsa: %s: PyTorch peer on the %" PRId64 " steps (%s)",
                 bc->preset, c->steps, peer->python);
  if (bench_write_arrays(dir, a, bc->n_in, meta, err, sizeof err)) {
    fprintf(stderr, "pto-bench dsa: peer inputs: %s\n", err);
    goto done;
  }
  out = bench_peer_run("dsa", peer, "dsa", dir, threads, repeats, 1,
                       !o->progress);
  json_t *var = out ? json_object_get(json_object_get(out, "variants"),
                                      json_string_value(
                                          json_object_get(out, "best")))
                    : NULL;
  json_t *sm = json_object_get(var, "step_ms"), *tm = json_object_get(var, "times_ms");
  if (!out || json_array_size(sm) != (size_t)c->steps || !json_array_size(tm)) {
    if (out)
      fprintf(stderr, "pto-bench dsa: the peer's result has no step_ms for "
                      "the %" PRId64 " steps\n",
              c->steps);
    goto done;
  }
  for (int64_t s = 0; s < c->steps; s++)
    c->torch.ms[s] = json_number_value(json_array_get(sm, (size_t)s));
  double tv[64];
  const int nt = (int)(json_array_size(tm) < 64 ? json_array_size(tm) : 64);
  for (int i = 0; i < nt; i++)
    tv[i] = json_number_value(json_array_get(tm, (size_t)i));
  res->torch = bench_stats_of(tv, nt);
  snprintf(res->best, sizeof res->best, "%s",
           json_string_value(json_object_get(out, "best")));
  res->torch_ran = 1;
  c->torch_steps = 1;
  for (size_t i = 0; i < bc->n_out; i++) {
    snprintf(file, sizeof file, "%s.npy", bc->out[i].name);
    if (bench_path(path, sizeof path, dir, file) ||
        bench_npy_load_into(path, bc->out[i].dtype, bc->out[i].ndim,
                            bc->out[i].shape, bc->peer_out[i], err,
                            sizeof err)) {
      fprintf(stderr, "pto-bench dsa: the peer's output: %s\n", err);
      goto done;
    }
  }
  rc = 0;
done:
  json_decref(out);
  json_decref(meta);
  bench_tmpdir_free(dir);
  return rc;
}

static int run_case(const bench_opts *o, const bench_workload *w,
                    const bench_case_opts *x, bench_case *bc,
                    const pto_config *cfg, const bench_peer *peer, int threads,
                    bench_case_result *res) {
  serve_case *c = (serve_case *)bc;
  const int64_t S = c->steps;
  const int repeats = o->repeats > 0 ? o->repeats : o->quick ? 1 : 3;
  dyn_state y;
  memset(&y, 0, sizeof y);
  pto_runtime *rt = NULL;
  pto_program *p = NULL;
  pto_executable *e = NULL;
  int rc = -1;
  double *buf = calloc((size_t)S * 6, sizeof *buf);
  if (!buf)
    goto oom;
  c->dyn.ms = buf, c->rec.ms = buf + S, c->torch.ms = buf + 2 * S;
  c->bind_us = buf + 3 * S, c->rec_compile_ms = buf + 4 * S;
  double *rep = buf + 5 * S; /* scratch: one step's repeats */
  (void)rep;
  for (size_t i = 0; i < bc->n_out; i++)
    if (!(c->rec_out[i] = pto_buffer_alloc(bench_array_count(&bc->out[i]) * 4)))
      goto oom;
  {
    const int64_t H = c->d.h, L = c->d.latent, K = c->prm.topk,
                  M = c->sv.max_new;
    const size_t spare[3] = {(size_t)(M * H * L), (size_t)(M * H),
                             (size_t)(M * K)};
    for (int j = 0; j < 3; j++)
      if (!(y.spare[j] = pto_buffer_alloc(spare[j] * 4)))
        goto oom;
  }
  /* the one compile */
  bench_progress(o, "dsa: %s: %" PRId64 " steps, %" PRId64 " sequences, %" PRId64
                    " tokens (%" PRId64 " prefill, %" PRId64 " decode); compiling "
                    "the serving program once",
                 bc->preset, S, c->n_seq, c->tokens, c->prefills, c->decodes);
  p = program(bc);
  const uint64_t t0 = bench_now_ns();
  pto_status st = p ? pto_compile(p, cfg, &e) : PTO_ENOMEM;
  c->compile_ms = (double)(bench_now_ns() - t0) * 1e-6;
  if (st) {
    fprintf(stderr, "pto-bench dsa: %s: compile: %s: %s\n", bc->preset,
            pto_strerror(st), p ? pto_program_error(p) : "out of memory");
    goto done;
  }
  c->tasks = pto_executable_num_tasks(e);
  res->compile_ms = c->compile_ms;
  res->tasks = c->tasks;
  if (pto_run_new(e, &y.run))
    goto oom;
  pto_runtime_params rp = pto_runtime_params_from_config(cfg);
  if (pto_runtime_new(&rp, &rt)) {
    fprintf(stderr, "pto-bench dsa: cannot start a runtime: %s\n",
            pto_runtime_error(NULL));
    goto done;
  }
  bench_progress(o, "dsa: %s: compiled in %.0f ms (%u tasks); the steps, "
                    "dynamic and recompiling in turn, %d times each",
                 bc->preset, c->compile_ms, c->tasks, repeats);
  for (int64_t s = 0; s < S; s++) {
    const serve_step *sp = &c->step[s];
    double dyn[16], rec[16], comp[16], bind = 0;
    const int R = repeats < 16 ? repeats : 16;
    for (int r = 0; r < R; r++) {
      double us;
      const uint64_t a0 = bench_now_ns();
      if (dyn_bind(c, &y, s, &us))
        goto done;
      if ((st = pto_run_exec(rt, y.run, y.in, y.out))) {
        fprintf(stderr, "pto-bench dsa: %s: step %" PRId64 ": %s: %s\n",
                bc->preset, s + 1, pto_strerror(st), pto_run_error(y.run));
        goto done;
      }
      dyn[r] = (double)(bench_now_ns() - a0) * 1e-6;
      bind += us;
      if (us > c->bind_us_max)
        c->bind_us_max = us;
      if (rec_step(c, rt, cfg, s, &rec[r], &comp[r]))
        goto done;
    }
    c->dyn.ms[s] = bench_median(dyn, R);
    c->rec.ms[s] = bench_median(rec, R);
    c->rec_compile_ms[s] = bench_median(comp, R);
    c->bind_us[s] = bind / R;
    if (o->progress && (s % 8 == 7 || s == S - 1))
      bench_progress(o,
                     "dsa: %s: step %" PRId64 " of %" PRId64 " (%" PRId64
                     " sequences, %" PRId64 " tokens): dynamic %.2f ms, "
                     "recompiling %.2f ms (compile %.2f)",
                     bc->preset, s + 1, S, sp->b, sp->T, c->dyn.ms[s],
                     c->rec.ms[s], c->rec_compile_ms[s]);
    append_rows(c, s); /* the next steps read these positions */
  }
  pto_runtime_free(rt);
  rt = NULL;
  times_finish(&c->dyn, S);
  times_finish(&c->rec, S);
  for (int64_t s = 0; s < S; s++) {
    c->bind_us_mean += c->bind_us[s] / (double)S;
    c->rec_compile_mean += c->rec_compile_ms[s] / (double)S;
  }
  /* the table's PTO time: all steps' medians together, one sample */
  double tot = c->dyn.mean * (double)S;
  res->pto = bench_stats_of(&tot, 1);
  if (bench_case_check(o, w, bc, threads, "PTO (dynamic)", bc->pto_out)) {
    res->pto_wrong = 1;
    goto done;
  }
  res->pto_checked = 1;
  if (bench_case_check(o, w, bc, threads, "PTO (recompiling)", c->rec_out)) {
    c->rec_wrong = 1;
    goto done;
  }
  c->rec_checked = 1;
  if (x->h.save_dir && bench_case_save(o, w, x, bc))
    goto done;
  if (peer) {
    if (peer_steps(o, x, c, peer, threads, repeats, res) ||
        bench_case_check(o, w, bc, threads, "PyTorch", bc->peer_out))
      goto done;
    times_finish(&c->torch, S);
    res->torch_checked = 1;
  }
  rc = 0;
  goto done;
oom:
  fprintf(stderr, "pto-bench dsa: %s: out of memory\n", bc->preset);
done:
  pto_runtime_free(rt);
  pto_run_free(y.run);
  pto_executable_free(e);
  pto_program_free(p);
  for (int j = 0; j < 3; j++)
    free(y.spare[j]);
  return rc;
}

/* ---- the command --------------------------------------------------------- */

static void head(FILE *f) {
  fprintf(f, "%-12s %5s %5s %6s %6s %8s ", "preset", "slots", "steps", "seqs",
          "tokens", "compiles");
}

static json_t *report(const bench_case_opts *o, int k, const bench_case *bc,
                      const char *nm, int threads, FILE *f, double *gflop) {
  const serve_case *c = (const serve_case *)bc;
  int64_t v[N_PARAMS];
  bench_preset_values(&table, &o->sel, k, v);
  fprintf(f, "%-12s %5lld %5lld %6lld %6lld %8d ", nm, (long long)v[P_SLOTS],
          (long long)v[P_STEPS], c ? (long long)c->n_seq : 0LL,
          c ? (long long)c->tokens : 0LL, 1);
  *gflop = bc ? bc->gflop : 0;
  json_t *j = json_pack("{s:s, s:s, s:b}", "workload", "dsa", "preset",
                        bench_preset_name(&table, &o->sel, k), "serve", 1);
  for (int i = 0; i < N_PARAMS; i++) {
    char key[32];
    snprintf(key, sizeof key, "%s", params[i].name);
    for (char *q = key; *q; q++)
      if (*q == '-')
        *q = '_';
    json_object_set_new(j, key, json_integer((json_int_t)v[i]));
  }
  json_object_set_new(j, "threads", json_integer(threads));
  json_object_set_new(j, "seed", json_integer((json_int_t)o->h.seed));
  return j;
}

static json_t *times_json(const serve_times *t, int have) {
  return have ? json_pack("{s:f, s:f, s:f}", "mean", t->mean, "p50", t->p50,
                          "p99", t->p99)
              : json_null();
}

static void after(const bench_case_opts *x, const bench_case *bc,
                  const bench_case_result *res, FILE *f, json_t *j) {
  (void)x;
  const serve_case *c = (const serve_case *)bc;
  const int ok = c && res->pto_checked, rok = ok && c->rec_checked,
            tok = ok && res->torch_checked && c->torch_steps;
  json_object_set_new(j, "compiles", json_integer(ok ? 1 : 0));
#define NUM_OR_NULL(key, have, val)                                            \
  json_object_set_new(j, key, (have) ? json_real(val) : json_null())
  NUM_OR_NULL("step_ms", ok, c->dyn.mean);
  NUM_OR_NULL("step_ms_p50", ok, c->dyn.p50);
  NUM_OR_NULL("step_ms_p99", ok, c->dyn.p99);
  NUM_OR_NULL("bind_us", ok, c->bind_us_mean);
  NUM_OR_NULL("bind_us_max", ok, c->bind_us_max);
  NUM_OR_NULL("recompile_ms", rok, c->rec.mean);
  NUM_OR_NULL("recompile_ms_p50", rok, c->rec.p50);
  NUM_OR_NULL("recompile_ms_p99", rok, c->rec.p99);
  NUM_OR_NULL("recompile_compile_ms", rok, c->rec_compile_mean);
  NUM_OR_NULL("recompile_ratio", rok, c->rec.mean / c->dyn.mean);
  NUM_OR_NULL("torch_step_ms", tok, c->torch.mean);
  NUM_OR_NULL("torch_step_ms_p50", tok, c->torch.p50);
  NUM_OR_NULL("torch_step_ms_p99", tok, c->torch.p99);
  NUM_OR_NULL("torch_step_ratio", tok, c->torch.mean / c->dyn.mean);
#undef NUM_OR_NULL
  json_object_set_new(j, "recompile_check",
                      json_string(c && c->rec_wrong     ? "wrong"
                                  : c && c->rec_checked ? "ok"
                                                        : "failed"));
  if (!ok)
    return;
  json_object_set_new(j, "sequences", json_integer((json_int_t)c->n_seq));
  json_object_set_new(j, "tokens", json_integer((json_int_t)c->tokens));
  json_object_set_new(j, "prefill_tokens", json_integer((json_int_t)c->prefills));
  json_object_set_new(j, "decode_tokens", json_integer((json_int_t)c->decodes));
  json_object_set_new(j, "dynamic", times_json(&c->dyn, ok));
  json_object_set_new(j, "recompiling", times_json(&c->rec, rok));
  json_object_set_new(j, "torch", times_json(&c->torch, tok));
  json_t *steps = json_array();
  for (int64_t s = 0; s < c->steps; s++) {
    const serve_step *st = &c->step[s];
    json_array_append_new(
        steps, json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:o}", "b",
                         (json_int_t)st->b, "tokens", (json_int_t)st->T,
                         "pto_ms", c->dyn.ms[s], "bind_us", c->bind_us[s],
                         "recompile_ms", rok ? c->rec.ms[s] : 0.0,
                         "recompile_compile_ms",
                         rok ? c->rec_compile_ms[s] : 0.0,
                         "torch_ms",
                         tok ? json_real(c->torch.ms[s]) : json_null()));
  }
  json_object_set_new(j, "steps", steps);
  fprintf(f, "  %-22s %9s %9s %9s %10s\n", "per step, ms", "mean", "p50", "p99",
          "mean ratio");
  fprintf(f, "  %-22s %9.2f %9.2f %9.2f %10s\n", "PTO dynamic (1 compile)",
          c->dyn.mean, c->dyn.p50, c->dyn.p99, "1.00x");
  if (rok) {
    char r[16];
    snprintf(r, sizeof r, "%.2fx", c->rec.mean / c->dyn.mean);
    fprintf(f, "  %-22s %9.2f %9.2f %9.2f %10s  (compile %.2f ms a step)\n",
            "PTO recompiling", c->rec.mean, c->rec.p50, c->rec.p99, r,
            c->rec_compile_mean);
  }
  if (tok) {
    char r[16];
    snprintf(r, sizeof r, "%.2fx", c->torch.mean / c->dyn.mean);
    fprintf(f, "  %-22s %9.2f %9.2f %9.2f %10s\n", "PyTorch", c->torch.mean,
            c->torch.p50, c->torch.p99, r);
  }
  fprintf(f,
          "  one compile of %.0f ms (%u tasks); bind %.1f us a step (max "
          "%.1f); %" PRId64 " sequences, %" PRId64 " prefill and %" PRId64
          " decode tokens\n",
          c->compile_ms, c->tasks, c->bind_us_mean, c->bind_us_max, c->n_seq,
          c->prefills, c->decodes);
}

/* after(), then what the case allocated beside the driver's buffers. */
static void after_and_free(const bench_case_opts *x, const bench_case *bc,
                           const bench_case_result *res, FILE *f, json_t *j) {
  after(x, bc, res, f, j);
  if (!bc)
    return;
  serve_case *c = (serve_case *)bc;
  free(c->step);
  free(c->seq);
  free(c->tables);
  free(c->dyn.ms); /* the block of every per-step array */
  for (int i = 0; i < BENCH_CASE_MAX_OUT; i++)
    free(c->rec_out[i]);
  c->step = NULL, c->seq = NULL, c->tables = NULL, c->dyn.ms = NULL;
}

static const bench_workload workload = {
    .table = &table,
    .labels = "\"mla_prolog\", \"indexer_prolog\", \"indexer\", "
              "\"attention\"",
    .case_size = sizeof(serve_case),
    .init = case_init,
    .fill = case_fill,
    .program = program,
    .check = check,
    .meta = case_meta,
    .head = head,
    .report = report,
    .run_case = run_case,
    .after = after_and_free,
};

void dsa_serve_usage(FILE *f) {
  fputs("\n--preset serve (alone): continuous batching, one compile for every "
        "step.\n"
        "Sequences arrive with a cached prefix and a prefill (slot 0, the one\n"
        "prefilling slot), decode one token a step and finish; the steps come\n"
        "from the seed. Three ways on the same steps: PTO dynamic\n"
        "(pto_dsa_serve_program compiled once, each step bound), PTO\n"
        "recompiling (pto_dsa_program compiled for each step, its compile\n"
        "and first run counted) and PyTorch; every step's results of all\n"
        "three checked with pto_dsa_check_tokens. Per step: the median of R\n"
        "runs (--repeats, default 3); then mean, p50 and p99 over the steps.\n"
        "presets (their flags as above):\n",
        f);
  bench_preset_usage(&table, f);
  fputs("JSON fields: compiles, compile_ms, step_ms (mean), step_ms_p50,\n"
        "step_ms_p99, bind_us (mean), bind_us_max, recompile_ms (mean),\n"
        "recompile_ms_p50, recompile_ms_p99, recompile_compile_ms,\n"
        "recompile_ratio, torch_step_ms, torch_step_ms_p50,\n"
        "torch_step_ms_p99, torch_step_ratio, sequences, tokens,\n"
        "prefill_tokens, decode_tokens, steps (per step: b, tokens, pto_ms,\n"
        "bind_us, recompile_ms, recompile_compile_ms, torch_ms), and the\n"
        "driver's (pto_ms: all steps' dynamic time; torch_ms likewise).\n",
        f);
}

int dsa_serve_run(const bench_opts *o, int argc, char **argv) {
  bench_case_opts x;
  memset(&x, 0, sizeof x);
  return bench_case_main(o, &workload, &x, argc, argv);
}
