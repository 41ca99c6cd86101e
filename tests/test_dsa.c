/* kernels: DeepSeek-V3.2's indexer attention chain (pto/dsa.h) at small
 * dimensions. The compiled program, run serially and on 1 and 2 workers,
 * and the op-by-op evaluator, against the plain-C reference through
 * pto_dsa_check (the prologs' rows within tolerance, the indices as top-k
 * sets, out and lse against the reference attention over the selected
 * keys), on block tables whose blocks are out of order, batches of
 * sequences of different lengths, sequences shorter than topk, decode and
 * prefill-like steps; the checker itself catches corrupted outputs; bad
 * input is refused with a message naming the tensors and sizes. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/kernels_test.h"

/* D, Q, H, N, R, L, HI, DI, BS */
static const pto_dsa_dims small = {64, 32, 4, 16, 8, 32, 4, 16, 4};

typedef struct dsa_case {
  pto_dsa_dims d;
  pto_dsa_step s;
  pto_dsa_params prm;
  int64_t n[16], len[16];
  void *in[PTO_DSA_INPUT_COUNT];
  void *out[PTO_DSA_OUTPUT_COUNT];
  int64_t out_n[PTO_DSA_OUTPUT_COUNT];
} dsa_case;

static int64_t numel(const int64_t *sh, int nd) {
  int64_t n = 1;
  for (int a = 0; a < nd; a++)
    n *= sh[a];
  return n;
}

/* Sylvester's Hadamard matrix of order n (a power of two) times n^-0.5. */
static void hadamard(float *h, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++)
      h[i * n + j] =
          (float)((__builtin_popcountll((unsigned long long)(i & j)) & 1
                       ? -1.0
                       : 1.0) /
                  sqrt((double)n));
}

/* A step of B sequences with n[b] new tokens and len[b] in all, every
 * sequence's blocks scattered over the caches in a shuffled order, the
 * table's unused columns garbage (-7: never read). */
static void case_new(dsa_case *c, const pto_dsa_dims *d, int64_t B,
                     const int64_t *n, const int64_t *len, int64_t topk,
                     unsigned seed) {
  memset(c, 0, sizeof *c);
  c->d = *d;
  memcpy(c->n, n, (size_t)B * sizeof *n);
  memcpy(c->len, len, (size_t)B * sizeof *len);
  int64_t mb = 1;
  for (int64_t b = 0; b < B; b++) {
    const int64_t need = (len[b] + d->block - 1) / d->block;
    mb = need > mb ? need : mb;
  }
  c->s = (pto_dsa_step){B, c->n, c->len, B * mb + 3, mb + 1};
  c->prm = pto_dsa_params_default();
  c->prm.topk = topk;
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(&c->d, &c->s, i, sh);
    cr_assert_gt(nd, 0, "input %d", i);
    c->in[i] = random_f32(numel(sh, nd), seed + (unsigned)i);
  }
  /* weights drawn in [-2, 2] scaled by fan-in^-0.5, as a trained model's
   * keep activations near 1; the rotary rows real angles */
  const struct {
    int i;
    int64_t fan;
  } fan[] = {{PTO_DSA_W_DQ, d->d},      {PTO_DSA_W_UQ_QR, d->q_lora},
             {PTO_DSA_W_UK, d->nope},   {PTO_DSA_W_DKV_KR, d->d},
             {PTO_DSA_W_QB, d->q_lora}, {PTO_DSA_W_K, d->d},
             {PTO_DSA_W_PROJ, d->d}};
  for (size_t f = 0; f < sizeof fan / sizeof fan[0]; f++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(&c->d, &c->s, fan[f].i, sh);
    float *w = c->in[fan[f].i];
    for (int64_t k = 0; k < numel(sh, nd); k++)
      w[k] = (float)(w[k] / sqrt((double)fan[f].fan));
  }
  const int64_t T = pto_dsa_tokens(&c->s);
  float *cs = c->in[PTO_DSA_COS], *sn = c->in[PTO_DSA_SIN];
  for (int64_t k = 0; k < T * d->rope; k++) {
    const double a = cs[k] * 3.0;
    cs[k] = (float)cos(a);
    sn[k] = (float)sin(a);
  }
  hadamard(c->in[PTO_DSA_HADAMARD], d->di);
  /* the block table: a shuffled permutation of the physical blocks */
  free(c->in[PTO_DSA_BLOCK_TABLE]);
  int32_t *table = malloc((size_t)(B * c->s.max_blocks) * sizeof *table);
  int32_t *perm = malloc((size_t)c->s.blocks * sizeof *perm);
  cr_assert(table && perm);
  srand(seed * 7 + 1);
  for (int64_t k = 0; k < c->s.blocks; k++)
    perm[k] = (int32_t)k;
  for (int64_t k = c->s.blocks - 1; k > 0; k--) {
    const int64_t j = rand() % (k + 1);
    const int32_t t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  for (int64_t b = 0; b < B; b++)
    for (int64_t j = 0; j < c->s.max_blocks; j++)
      table[b * c->s.max_blocks + j] = j < mb ? perm[b * mb + j] : -7;
  free(perm);
  c->in[PTO_DSA_BLOCK_TABLE] = table;
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_output_shape(&c->d, &c->s, &c->prm, i, sh);
    cr_assert_gt(nd, 0, "output %d", i);
    c->out_n[i] = numel(sh, nd);
    c->out[i] = malloc((size_t)c->out_n[i] * 4);
    cr_assert_not_null(c->out[i]);
  }
}

static void case_free(dsa_case *c) {
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++)
    free(c->in[i]);
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    free(c->out[i]);
}

static void poison(dsa_case *c) {
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    memset(c->out[i], 0x5a, (size_t)c->out_n[i] * 4);
}

static void check(dsa_case *c, const char *what) {
  char msg[512];
  int rc = pto_dsa_check(&c->d, &c->s, &c->prm, (const void *const *)c->in,
                         (const void *const *)c->out, msg, sizeof msg);
  cr_assert_eq(rc, 0, "%s: %s", what, msg);
}

/* Compiles the chain for c, runs it through the evaluator, serially and on
 * 1 and 2 workers, and checks every result. */
static void run_case(dsa_case *c, const char *what) {
  pto_program *p = pto_dsa_program(&c->d, &c->s, &c->prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  char w[160];
  poison(c);
  cr_assert_eq(pto_program_eval(p, (const void *const *)c->in, c->out), PTO_OK,
               "%s: eval: %s", what, pto_program_error(p));
  snprintf(w, sizeof w, "%s (evaluator)", what);
  check(c, w);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  for (uint32_t workers = 0; workers <= 2; workers++) {
    poison(c);
    run_on_workers(e, (const void *const *)c->in, c->out, workers, what);
    snprintf(w, sizeof w, "%s on %u workers", what, workers);
    check(c, w);
  }
  pto_executable_free(e);
  pto_program_free(p);
}

/* Decode: one new token per sequence, of lengths 5 (shorter than topk), 13
 * and 30, in one batch. */
Test(kernels, dsa_decode_batch_of_lengths, .timeout = 120) {
  dsa_case c;
  case_new(&c, &small, 3, (const int64_t[]){1, 1, 1},
           (const int64_t[]){5, 13, 30}, 8, 11);
  run_case(&c, "decode");
  case_free(&c);
  /* ten sequences: their results concatenated in two levels (eight
   * operands per concat at most) */
  case_new(&c, &small, 10, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
           (const int64_t[]){3, 9, 4, 17, 1, 12, 8, 5, 21, 2}, 6, 13);
  run_case(&c, "decode of ten");
  case_free(&c);
}

/* Prefill-like: sequences with several new tokens; one starts from an
 * empty cache (len == n), one has more new tokens than topk (no packing of
 * the new rows' slots). */
Test(kernels, dsa_prefill_like_steps, .timeout = 120) {
  dsa_case c;
  case_new(&c, &small, 3, (const int64_t[]){6, 3, 10},
           (const int64_t[]){20, 3, 27}, 8, 21);
  run_case(&c, "prefill");
  case_free(&c);
  /* a single sequence (no concat of per-sequence results) of 20 new
   * tokens: the new rows' attention in chunks of 8 queries, the first's
   * slots packed to 8 of 12, the others' not */
  case_new(&c, &small, 1, (const int64_t[]){20}, (const int64_t[]){33}, 12, 31);
  run_case(&c, "one sequence");
  case_free(&c);
}

/* One slot per token (topk 1): a token whose one key is a new row leaves
 * the cache's attention empty (lse +inf, weight 0 in the merge), one whose
 * key is cached the new rows' attention. Zero cache keys score exactly 0,
 * so the new rows win wherever their score is positive. */
Test(kernels, dsa_merge_with_one_side_empty, .timeout = 60) {
  dsa_case c;
  case_new(&c, &small, 1, (const int64_t[]){6}, (const int64_t[]){14}, 1, 97);
  memset(c.in[PTO_DSA_K_CACHE], 0,
         (size_t)(c.s.blocks * small.block * small.di) * sizeof(float));
  run_case(&c, "topk 1");
  const int32_t *ix = c.out[PTO_DSA_INDICES];
  int fresh = 0, cached = 0;
  for (int t = 0; t < 6; t++) {
    fresh += ix[t] >= 8;
    cached += ix[t] >= 0 && ix[t] < 8;
  }
  cr_expect(fresh > 0 && cached > 0,
            "%d tokens chose a new row, %d a cached one: one side untested",
            fresh, cached);
  case_free(&c);
}

/* Every task carries its part's label, each of the four parts has tasks,
 * and no output of a batch is a view copied out at the end. */
Test(kernels, dsa_every_task_is_labelled_by_its_part, .timeout = 60) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){1, 2}, (const int64_t[]){12, 7}, 4,
           91);
  pto_program *p = pto_dsa_program(&c.d, &c.s, &c.prm);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  const char *parts[4] = {"mla_prolog.", "indexer_prolog.", "indexer.",
                          "attention"};
  uint32_t seen[4] = {0};
  for (uint32_t t = 0; t < pto_executable_num_tasks(e); t++) {
    const char *l = pto_executable_task_label(e, t);
    int k = 0;
    while (k < 4 && strncmp(l, parts[k], strlen(parts[k])) != 0)
      k++;
    cr_assert_lt(k, 4, "task %u is labelled '%s'", t, l);
    seen[k]++;
  }
  for (int k = 0; k < 4; k++)
    cr_expect_gt(seen[k], 0, "no task of %s", parts[k]);
  pto_executable_free(e);
  pto_program_free(p);
  case_free(&c);
}

/* DeepSeek's head count and latent and rope sizes (the attention's tiles
 * then are the real ones) with 64 new tokens: the new rows' attention in
 * chunks whose packed widths run up to 64 slots, where the host's
 * attention tile needs care to fit (new_rows_tile in kernels/dsa.c). */
Test(kernels, dsa_real_heads_and_latent, .timeout = 300) {
  const pto_dsa_dims d = {64, 32, 128, 16, 64, 512, 4, 64, 16};
  dsa_case c;
  case_new(&c, &d, 1, (const int64_t[]){64}, (const int64_t[]){70}, 128, 101);
  pto_program *p = pto_dsa_program(&c.d, &c.s, &c.prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  poison(&c);
  run_on_workers(e, (const void *const *)c.in, c.out, 2, "real heads");
  check(&c, "real heads on 2 workers");
  pto_executable_free(e);
  pto_program_free(p);
  case_free(&c);
}

/* Tile shapes given for every stage (small ones: many tasks, partial
 * tiles at every edge) instead of the host's. */
Test(kernels, dsa_given_tiles_per_stage, .timeout = 120) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){3, 1}, (const int64_t[]){14, 23}, 8,
           81);
  const pto_tile_shape pro = {5, 12, 4, 16, 8};
  c.prm.mla_prolog = pro;
  c.prm.indexer_prolog = (pto_tile_shape){3, 0, 6, 8, 16};
  c.prm.indexer_qk = (pto_tile_shape){0, 0, 8, 8, 0};
  c.prm.indexer_topk = (pto_tile_shape){1, 8, 0, 0, 0};
  c.prm.attention = (pto_tile_shape){0, 0, 2, 4, 0};
  run_case(&c, "given tiles");
  case_free(&c);
}

/* Every key selected (topk beyond every length): out and lse do not depend
 * on the top-k's choice, so they are compared with the reference's own
 * outputs directly as well. */
Test(kernels, dsa_all_keys_match_the_reference_outputs, .timeout = 120) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){2, 1}, (const int64_t[]){9, 6}, 16,
           41);
  void *ref[PTO_DSA_OUTPUT_COUNT];
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    ref[i] = malloc((size_t)c.out_n[i] * 4);
    cr_assert_not_null(ref[i]);
  }
  cr_assert_eq(pto_dsa_ref(&c.d, &c.s, &c.prm, (const void *const *)c.in, ref),
               PTO_OK);
  /* the reference passes its own checker */
  char msg[512];
  cr_assert_eq(pto_dsa_check(&c.d, &c.s, &c.prm, (const void *const *)c.in,
                             (const void *const *)ref, msg, sizeof msg),
               0, "%s", msg);
  pto_program *p = pto_dsa_program(&c.d, &c.s, &c.prm);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  run_on_workers(e, (const void *const *)c.in, c.out, 2, "all keys");
  const float *o = c.out[PTO_DSA_OUT], *ro = ref[PTO_DSA_OUT];
  for (int64_t k = 0; k < c.out_n[PTO_DSA_OUT]; k++)
    cr_assert(fabsf(o[k] - ro[k]) <= 1e-4f + 1e-3f * fabsf(ro[k]),
              "out[%" PRId64 "] %.9g, reference %.9g", k, o[k], ro[k]);
  const float *l = c.out[PTO_DSA_LSE], *rl = ref[PTO_DSA_LSE];
  for (int64_t k = 0; k < c.out_n[PTO_DSA_LSE]; k++)
    cr_assert(fabsf(l[k] - rl[k]) <= 1e-4f + 1e-4f * fabsf(rl[k]),
              "lse[%" PRId64 "] %.9g, reference %.9g", k, l[k], rl[k]);
  /* every visible key selected: the sets are the reference's */
  const int32_t *ix = c.out[PTO_DSA_INDICES], *rx = ref[PTO_DSA_INDICES];
  for (int64_t t = 0; t < 3; t++) {
    int64_t a = 0, b = 0;
    for (int64_t k = 0; k < c.prm.topk; k++) {
      a += ix[t * c.prm.topk + k] >= 0 ? ix[t * c.prm.topk + k] + 1 : 0;
      b += rx[t * c.prm.topk + k] >= 0 ? rx[t * c.prm.topk + k] + 1 : 0;
    }
    cr_assert_eq(a, b, "token %" PRId64 ": index sums differ", t);
  }
  pto_executable_free(e);
  pto_program_free(p);
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    free(ref[i]);
  case_free(&c);
}

/* The checker fails what is wrong: an unselected key swapped in, a moved
 * out, lse and kv_new value, and a padding slot holding a key. */
Test(kernels, dsa_check_catches_corrupted_outputs, .timeout = 60) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){1, 2}, (const int64_t[]){30, 24}, 4,
           51);
  cr_assert_eq(
      pto_dsa_ref(&c.d, &c.s, &c.prm, (const void *const *)c.in, c.out),
      PTO_OK);
  check(&c, "reference");
  char msg[512];
  const void *const *in = (const void *const *)c.in;
  const void *const *out = (const void *const *)c.out;
  int32_t *ix = c.out[PTO_DSA_INDICES];
  /* a key of token 0 not among its top-4: the lowest-scoring one is
   * unlikely to be within the threshold's tolerance */
  int32_t keep = ix[3];
  for (int32_t j = 0; j < 30; j++) {
    int taken = 0;
    for (int k = 0; k < 4; k++)
      taken |= ix[k] == j;
    if (!taken) {
      ix[3] = j;
      if (pto_dsa_check(&c.d, &c.s, &c.prm, in, out, msg, sizeof msg) != 0)
        break;
    }
  }
  cr_expect(strstr(msg, "indices") != NULL, "%s", msg);
  ix[3] = keep;
  check(&c, "restored");
  struct {
    int o;
    int64_t at;
    float by;
    const char *needle;
  } bad[] = {{PTO_DSA_OUT, 5, 0.01f, "out:"},
             {PTO_DSA_LSE, 2, 0.001f, "lse:"},
             {PTO_DSA_KV_NEW, 7, 0.01f, "kv_new"},
             {PTO_DSA_K_NEW, 3, 0.01f, "k_new"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    float *v = c.out[bad[i].o];
    const float was = v[bad[i].at];
    v[bad[i].at] += bad[i].by * (1 + fabsf(was));
    cr_expect_eq(pto_dsa_check(&c.d, &c.s, &c.prm, in, out, msg, sizeof msg),
                 -1, "%s not caught", bad[i].needle);
    cr_expect(strstr(msg, bad[i].needle) != NULL, "%s", msg);
    v[bad[i].at] = was;
  }
  check(&c, "restored again");
  ix[4 + 3] = -1; /* token 1's last slot padded while it sees 23 keys */
  cr_expect_eq(pto_dsa_check(&c.d, &c.s, &c.prm, in, out, msg, sizeof msg), -1);
  cr_expect(strstr(msg, "indices") != NULL, "%s", msg);
  case_free(&c);
}

/* pto_dsa_check_tokens checks its tokens' rows and only those: every split
 * of a correct step passes on both sides; a value corrupted in token 3 of
 * each output fails exactly the ranges that hold token 3; a range outside
 * the step is refused. */
Test(kernels, dsa_check_tokens_covers_its_range_only, .timeout = 120) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){3, 2}, (const int64_t[]){30, 24}, 4,
           53);
  cr_assert_eq(
      pto_dsa_ref(&c.d, &c.s, &c.prm, (const void *const *)c.in, c.out),
      PTO_OK);
  char msg[512];
  const void *const *in = (const void *const *)c.in;
  const void *const *out = (const void *const *)c.out;
  const int64_t T = 5;
  for (int64_t k = 0; k <= T; k++) {
    cr_expect_eq(pto_dsa_check_tokens(&c.d, &c.s, &c.prm, in, out, 0, k, msg,
                                      sizeof msg),
                 0, "[0, %" PRId64 "): %s", k, msg);
    cr_expect_eq(pto_dsa_check_tokens(&c.d, &c.s, &c.prm, in, out, k, T, msg,
                                      sizeof msg),
                 0, "[%" PRId64 ", 5): %s", k, msg);
  }
  const int64_t H = c.d.h, L = c.d.latent, LR = L + c.d.rope, DI = c.d.di;
  struct {
    int o;
    int64_t at;
    const char *needle;
  } bad[] = {{PTO_DSA_OUT, 3 * H * L + 5, "out:"},
             {PTO_DSA_LSE, 3 * H + 1, "lse:"},
             {PTO_DSA_KV_NEW, 3 * LR + 7, "kv_new: row 3"},
             {PTO_DSA_K_NEW, 3 * DI + 2, "k_new: row 3"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    float *v = c.out[bad[i].o];
    const float was = v[bad[i].at];
    v[bad[i].at] += 0.01f * (1 + fabsf(was));
    for (int64_t t0 = 0; t0 <= T; t0++)
      for (int64_t t1 = t0; t1 <= T; t1++) {
        const int holds = t0 <= 3 && 3 < t1;
        const int rc = pto_dsa_check_tokens(&c.d, &c.s, &c.prm, in, out, t0, t1,
                                            msg, sizeof msg);
        cr_expect_eq(rc, holds ? -1 : 0,
                     "%s in token 3, range [%" PRId64 ", %" PRId64 "): %d (%s)",
                     bad[i].needle, t0, t1, rc, msg);
        if (holds)
          cr_expect(strstr(msg, bad[i].needle) != NULL, "%s", msg);
      }
    v[bad[i].at] = was;
  }
  const int64_t ranges[3][2] = {{-1, 2}, {3, 2}, {0, 6}};
  for (int i = 0; i < 3; i++) {
    cr_expect_eq(pto_dsa_check_tokens(&c.d, &c.s, &c.prm, in, out, ranges[i][0],
                                      ranges[i][1], msg, sizeof msg),
                 PTO_EINVAL, "[%" PRId64 ", %" PRId64 ")", ranges[i][0],
                 ranges[i][1]);
    cr_expect(strstr(msg, "tokens") != NULL, "%s", msg);
  }
  case_free(&c);
}

/* Inputs declared as the step needs, but for input `bad` with shape sh and
 * dtype dt instead. */
static pto_program *program_with(const dsa_case *c, int bad, pto_dtype dt,
                                 int nd, const int64_t *sh) {
  pto_program *p = pto_program_new("bad");
  pto_tensor *in[PTO_DSA_INPUT_COUNT], *out[PTO_DSA_OUTPUT_COUNT];
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t s[PTO_MAX_DIMS];
    const int n = pto_dsa_input_shape(&c->d, &c->s, i, s);
    in[i] = i == bad
                ? pto_input(p, pto_dsa_input_name(i), dt, nd, sh)
                : pto_input(p, pto_dsa_input_name(i),
                            i == PTO_DSA_BLOCK_TABLE ? PTO_I32 : PTO_F32, n, s);
  }
  pto_status st = pto_dsa(p, &c->d, &c->s, &c->prm, in, out);
  cr_expect_neq(st, PTO_OK);
  cr_expect_eq(st, pto_program_status(p));
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    cr_expect_null(out[i]);
  return p;
}

Test(kernels, dsa_bad_input_names_the_tensor_and_sizes, .timeout = 30) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){1, 2}, (const int64_t[]){9, 6}, 4,
           61);
  /* x of the wrong hidden size */
  pto_program *p =
      program_with(&c, PTO_DSA_X, PTO_F32, 2, (const int64_t[]){3, 63});
  cr_expect_eq(pto_program_status(p), PTO_ESHAPE);
  EXPECT_MSG_HAS(p, "input 'x' f32[3,63]");
  EXPECT_MSG_HAS(p, "f32 [3,64]");
  pto_program_free(p);
  /* w_uk with its heads and dims swapped */
  p = program_with(&c, PTO_DSA_W_UK, PTO_F32, 3, (const int64_t[]){16, 4, 32});
  EXPECT_MSG_HAS(p, "input 'w_uk' f32[16,4,32]");
  EXPECT_MSG_HAS(p, "[4,16,32]");
  pto_program_free(p);
  /* a block table of f32 */
  p = program_with(&c, PTO_DSA_BLOCK_TABLE, PTO_F32, 2,
                   (const int64_t[]){2, c.s.max_blocks});
  cr_expect_eq(pto_program_status(p), PTO_EDTYPE);
  EXPECT_MSG_HAS(p, "input 'block_table' f32[2,");
  EXPECT_MSG_HAS(p, "need i32 [2,");
  pto_program_free(p);
  /* a kv cache of another block count than the step's */
  p = program_with(&c, PTO_DSA_KV_CACHE, PTO_F32, 3,
                   (const int64_t[]){c.s.blocks + 1, 4, 40});
  EXPECT_MSG_HAS(p, "kv_cache");
  pto_program_free(p);

  /* steps: len < n, a block table too small for len, topk 0 */
  pto_dsa_step s = c.s;
  int64_t len[2] = {9, 1};
  s.len = len;
  p = pto_dsa_program(&c.d, &s, &c.prm);
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "sequence 1: n 2 new tokens and length 1");
  pto_program_free(p);
  len[1] = 6;
  s.max_blocks = 2; /* 8 positions for lengths 9 and 6 */
  p = pto_dsa_program(&c.d, &s, &c.prm);
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "sequence 0: length 9 needs 3 blocks of 4; block_table "
                    "[2,2] holds 2");
  pto_program_free(p);
  pto_dsa_params prm = c.prm;
  prm.topk = 0;
  p = pto_dsa_program(&c.d, &c.s, &prm);
  EXPECT_MSG_HAS(p, "topk 0");
  pto_program_free(p);
  pto_dsa_dims d = c.d;
  d.rope = 7;
  p = pto_dsa_program(&d, &c.s, &c.prm);
  EXPECT_MSG_HAS(p, "R 7");
  pto_program_free(p);
  case_free(&c);
}

/* A block table entry outside the caches fails the run, naming the gather
 * and the entry, and the reference refuses it too. */
Test(kernels, dsa_block_table_entry_out_of_range_fails_the_run, .timeout = 60) {
  dsa_case c;
  case_new(&c, &small, 2, (const int64_t[]){1, 1}, (const int64_t[]){9, 6}, 4,
           71);
  int32_t *table = c.in[PTO_DSA_BLOCK_TABLE];
  table[1 * c.s.max_blocks + 1] = (int32_t)c.s.blocks; /* one past */
  cr_expect_eq(
      pto_dsa_ref(&c.d, &c.s, &c.prm, (const void *const *)c.in, c.out),
      PTO_EINVAL);
  char msg[512];
  cr_expect_eq(pto_dsa_check(&c.d, &c.s, &c.prm, (const void *const *)c.in,
                             (const void *const *)c.out, msg, sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "block_table[1][1]") != NULL, "%s", msg);
  pto_program *p = pto_dsa_program(&c.d, &c.s, &c.prm);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  cr_expect_eq(pto_executable_run_serial(e, (const void *const *)c.in, c.out),
               PTO_ERANGE);
  cr_expect(strstr(pto_executable_error(e), "gather") != NULL, "%s",
            pto_executable_error(e));
  pto_runtime *rt = runtime_with(2, 0);
  cr_expect_eq(pto_runtime_run(rt, e, (const void *const *)c.in, c.out),
               PTO_ERANGE);
  pto_runtime_free(rt);
  cr_expect_eq(pto_program_eval(p, (const void *const *)c.in, c.out),
               PTO_ERANGE);
  pto_executable_free(e);
  pto_program_free(p);
  case_free(&c);
}

/* ---- serving: one program for every step ---------------------------------
 * pto_dsa_serve_program compiled once at small dims, then steps of a
 * continuous batch bound to it: decode, prefill, a mix, empty slots. Each
 * step's inputs are a static step's (x, cos, sin, the table's first b rows
 * are prefixes of the serving buffers), so pto_dsa_check judges the
 * results once the slots' outputs are laid out by token. */

enum { SV_SLOTS = 3, SV_TOKENS = 10, SV_NEW = 6, SV_LEN = 40, SV_BLOCKS = 40,
       SV_MB = 10, SV_TOPK = 8 };

static void serve_steps(int64_t prefill_slots) {
  const pto_dsa_serve sv = {SV_SLOTS, SV_TOKENS, SV_NEW, SV_LEN, SV_BLOCKS,
                            SV_MB, prefill_slots};
  pto_dsa_params prm = pto_dsa_params_default();
  prm.topk = SV_TOPK;
  pto_program *p = pto_dsa_serve_program(&small, &sv, &prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  /* one case at the maxima gives the weights, caches and buffers */
  const int64_t n1[1] = {SV_TOKENS}, l1[1] = {SV_TOKENS};
  dsa_case big;
  case_new(&big, &small, 1, n1, l1, SV_TOPK, 77);
  const pto_dsa_step full = {1, n1, l1, SV_BLOCKS, SV_MB};
  void *in[PTO_DSA_INPUT_COUNT + 1];
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    int nd = pto_dsa_input_shape(&small, &full, i, sh);
    if (i == PTO_DSA_BLOCK_TABLE)
      sh[0] = SV_SLOTS;
    in[i] = random_f32(numel(sh, nd), 500 + (unsigned)i);
    if (i != PTO_DSA_KV_CACHE && i != PTO_DSA_K_CACHE &&
        i != PTO_DSA_BLOCK_TABLE && i != PTO_DSA_X) /* the case's weights */
      memcpy(in[i], big.in[i], (size_t)numel(sh, nd) * 4);
  }
  int32_t seq[SV_SLOTS * 2];
  in[PTO_DSA_INPUT_COUNT] = seq;
  const int n_out = 2 + 3 * SV_SLOTS;
  void *out[2 + 3 * SV_SLOTS];
  const int64_t H = small.h, L = small.latent;
  const size_t per_out[3] = {(size_t)(SV_NEW * H * L), (size_t)(SV_NEW * H),
                             (size_t)(SV_NEW * SV_TOPK)};
  out[0] = malloc((size_t)SV_TOKENS * (size_t)(L + small.rope) * 4);
  out[1] = malloc((size_t)SV_TOKENS * (size_t)small.di * 4);
  for (int k = 0; k < SV_SLOTS; k++)
    for (int j = 0; j < 3; j++)
      out[2 + 3 * k + j] = malloc(per_out[j] * 4);
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(NULL, &rt), PTO_OK);
  /* the steps: B, n[], len[] */
  static const struct {
    int64_t b, n[3], len[3];
  } steps[] = {
      {3, {1, 1, 1}, {5, 13, 30}},  /* decode; one shorter than topk */
      {1, {6, 0, 0}, {6, 0, 0}},    /* a fresh prefill */
      {2, {4, 1, 0}, {9, 21, 0}},   /* a prefill beside a decode */
      {3, {6, 1, 1}, {6, 40, 3}},   /* a prefill, the maxima, a short one */
      {1, {1, 0, 0}, {1, 0, 0}},    /* a one-token sequence */
  };
  for (size_t c = 0; c < sizeof steps / sizeof steps[0]; c++) {
    const pto_dsa_step st = {steps[c].b, steps[c].n, steps[c].len, SV_BLOCKS,
                             SV_MB};
    /* each sequence's blocks: distinct, shuffled by the step */
    int32_t *table = in[PTO_DSA_BLOCK_TABLE];
    for (int64_t k = 0; k < SV_SLOTS * SV_MB; k++)
      table[k] = (int32_t)((k * 7 + (int64_t)c * 13) % SV_BLOCKS);
    char msg[512];
    cr_assert_eq(pto_dsa_serve_bind(run, &small, &sv, &st, seq, msg,
                                    sizeof msg),
                 PTO_OK, "%s", msg);
    cr_assert_eq(pto_run_exec(rt, run, (const void *const *)in, out), PTO_OK,
                 "step %zu: %s", c, pto_run_error(run));
    /* the static step's outputs, token by token */
    const int64_t T = pto_dsa_tokens(&st);
    float *o = malloc((size_t)(T * H * L) * 4), *l = malloc((size_t)(T * H) * 4);
    int32_t *ix = malloc((size_t)(T * SV_TOPK) * 4);
    for (int64_t k = 0, t0 = 0; k < st.b; t0 += st.n[k], k++) {
      memcpy(o + t0 * H * L, out[2 + 3 * k], (size_t)(st.n[k] * H * L) * 4);
      memcpy(l + t0 * H, out[3 + 3 * k], (size_t)(st.n[k] * H) * 4);
      memcpy(ix + t0 * SV_TOPK, out[4 + 3 * k],
             (size_t)(st.n[k] * SV_TOPK) * 4);
    }
    const void *so[PTO_DSA_OUTPUT_COUNT] = {o, l, out[0], out[1], ix};
    int rc = pto_dsa_check(&small, &st, &prm, (const void *const *)in, so, msg,
                           sizeof msg);
    cr_expect_eq(rc, 0, "step %zu: %s", c, msg);
    free(o), free(l), free(ix);
  }
  /* the block table: an entry outside the caches fails the run where the
   * slot's cached positions use it, and is never read past them */
  {
    const pto_dsa_step st = {steps[0].b, steps[0].n, steps[0].len, SV_BLOCKS,
                             SV_MB};
    const int64_t BS = small.block,
                  used = (st.len[2] - st.n[2] + BS - 1) / BS; /* slot 2 */
    cr_assert(used >= 1 && used < SV_MB);
    int32_t *table = in[PTO_DSA_BLOCK_TABLE];
    char msg[512];
    cr_assert_eq(pto_dsa_serve_bind(run, &small, &sv, &st, seq, msg,
                                    sizeof msg),
                 PTO_OK, "%s", msg);
    table[2 * SV_MB + used] = SV_BLOCKS; /* past the slot's blocks */
    cr_expect_eq(pto_run_exec(rt, run, (const void *const *)in, out), PTO_OK,
                 "%s", pto_run_error(run));
    table[2 * SV_MB + used - 1] = -3; /* its last cached block */
    cr_expect_eq(pto_run_exec(rt, run, (const void *const *)in, out),
                 PTO_ERANGE);
    cr_expect(strstr(pto_run_error(run), "gather") != NULL, "%s",
              pto_run_error(run));
  }
  /* a step past the maxima is refused before anything runs */
  const int64_t bn[1] = {SV_NEW + 1}, bl[1] = {SV_NEW + 1};
  const pto_dsa_step over = {1, bn, bl, SV_BLOCKS, SV_MB};
  char msg[256];
  cr_expect_eq(pto_dsa_serve_bind(run, &small, &sv, &over, seq, msg, sizeof msg),
               PTO_ERANGE);
  cr_expect(strstr(msg, "new tokens (at most 6)"), "%s", msg);
  if (prefill_slots) { /* two new tokens in a decoding slot */
    const int64_t dn[2] = {1, 2}, dl[2] = {3, 4};
    const pto_dsa_step dec = {2, dn, dl, SV_BLOCKS, SV_MB};
    cr_expect_eq(pto_dsa_serve_bind(run, &small, &sv, &dec, seq, msg,
                                    sizeof msg),
                 PTO_ERANGE);
    cr_expect(strstr(msg, "sequence 1: 2 new tokens (at most 1 in a decoding "
                          "slot)"),
              "%s", msg);
  }
  /* a run of an executable built for other slots is refused, not bound
   * dim by dim to the wrong dims */
  pto_dsa_serve other = sv;
  other.slots = sv.slots - 1;
  const int64_t one = 1;
  const pto_dsa_step st1 = {1, &one, &one, SV_BLOCKS, SV_MB};
  cr_expect_eq(pto_dsa_serve_bind(run, &small, &other, &st1, seq, msg,
                                  sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "is not of pto_dsa_serve_program's executable"), "%s",
            msg);
  pto_run_free(run);
  pto_runtime_free(rt);
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++)
    free(in[i]);
  for (int i = 0; i < n_out; i++)
    free(out[i]);
  case_free(&big);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(kernels, dsa_serve_runs_every_step_on_one_executable, .timeout = 300) {
  serve_steps(0);
}

/* The same with slot 0 the one prefilling slot: the others decode. */
Test(kernels, dsa_serve_decoding_slots_take_one_token, .timeout = 300) {
  serve_steps(1);
}
