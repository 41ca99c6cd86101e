/* kernels: sparse attention (pto/attention.h). The program, compiled and
 * run serially and on 1 and 2 workers, and the evaluator, against the
 * plain-C reference (pto_attention_check: out abs 1e-5 / rel 1e-4, lse
 * 1e-6); invalid indices anywhere in a row (INT32_MIN, -1, S2, large),
 * rows with every index invalid, the causal flag, topk not a multiple of
 * the block, H not a multiple of the head tile; bad input refused with a
 * message naming the tensors and sizes. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/kernels_test.h"

/* Indices of B*S1 rows of topk: distinct keys below S2 in random order,
 * with every `invalid`-th slot (0: none) replaced by one of INT32_MIN,
 * -1, S2, S2 + 1000 in turn, and row `empty` (-1: none) all invalid. */
static int32_t *indices_new(const pto_attention_dims *d, int invalid,
                            int64_t empty, unsigned seed) {
  const int64_t rows = d->b * d->s1;
  int32_t *ix = malloc((size_t)(rows * d->topk) * sizeof *ix);
  int32_t *perm = malloc((size_t)d->s2 * sizeof *perm);
  cr_assert(ix && perm);
  srand(seed);
  const int32_t bad[4] = {INT32_MIN, -1, (int32_t)d->s2,
                          (int32_t)d->s2 + 1000};
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t j = 0; j < d->s2; j++)
      perm[j] = (int32_t)j;
    for (int64_t t = 0; t < d->topk; t++) {
      int32_t v = -1;
      if (t < d->s2) { /* a partial shuffle: distinct keys */
        int64_t k = t + rand() % (d->s2 - t);
        int32_t x = perm[k];
        perm[k] = perm[t];
        perm[t] = x;
        v = x;
      }
      if ((invalid && t % invalid == invalid - 1) || r == empty)
        v = bad[(r + t) % 4];
      ix[r * d->topk + t] = v;
    }
  }
  free(perm);
  return ix;
}

/* Compiles the attention and checks the evaluator and the compiled runs
 * (serial, 1 and 2 workers) against the reference, on q and kv of
 * prm->dtype (f32 or bf16). */
static void check_attention(const char *what, const pto_attention_dims *d,
                            const pto_attention_params *prm, int invalid,
                            int64_t empty) {
  const int64_t nq = d->b * d->s1 * d->h * d->d, nk = d->b * d->s2 * d->d;
  const int bf = prm->dtype == PTO_BF16;
  void *q = bf ? (void *)random_bf16(nq, 11) : (void *)random_f32(nq, 11);
  void *kv = bf ? (void *)random_bf16(nk, 12) : (void *)random_f32(nk, 12);
  int32_t *ix = indices_new(d, invalid, empty, 13);
  pto_program *p = pto_attention_program(d, prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  const int64_t rows = d->b * d->s1, no = rows * d->h * d->dv,
                nl = rows * d->h;
  float *out = malloc((size_t)no * sizeof *out);
  float *lse = malloc((size_t)nl * sizeof *lse);
  cr_assert(out && lse);
  const void *ins[3] = {q, kv, ix};
  void *outs[2] = {out, lse};
  char msg[256];
  cr_assert_eq(pto_program_eval(p, ins, outs), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  cr_assert_eq(pto_attention_check(d, prm, q, kv, ix, out, lse, 0, rows, msg,
                                   sizeof msg),
               0, "%s, evaluator: %s", what, msg);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  for (uint32_t workers = 0; workers <= 2; workers++) {
    memset(out, 0x7f, (size_t)no * sizeof *out);
    memset(lse, 0x7f, (size_t)nl * sizeof *lse);
    run_on_workers(e, ins, outs, workers, what);
    cr_assert_eq(pto_attention_check(d, prm, q, kv, ix, out, lse, 0, rows,
                                     msg, sizeof msg),
                 0, "%s on %u workers: %s", what, workers, msg);
  }
  if (empty >= 0) /* out 0, lse +inf */
    for (int64_t h = 0; h < d->h; h++) {
      cr_expect(isinf(lse[empty * d->h + h]) && lse[empty * d->h + h] > 0,
                "%s: row %ld lse %g", what, (long)empty,
                lse[empty * d->h + h]);
      for (int64_t c = 0; c < d->dv; c++)
        cr_expect_eq(out[(empty * d->h + h) * d->dv + c], 0.0f);
    }
  pto_executable_free(e);
  pto_program_free(p);
  free(q);
  free(kv);
  free(ix);
  free(out);
  free(lse);
}

Test(kernels, attention_tiles_invalid_indices_and_empty_rows,
     .timeout = 240) {
  pto_attention_params prm = pto_attention_params_default();
  /* b s1 s2 h d dv topk */
  const pto_attention_dims small = {2, 3, 90, 5, 24, 16, 37};
  const pto_tile_shape tiles[] = {{0, 0, 0, 0, 0},   /* chosen */
                                  {0, 0, 2, 16, 0},  /* H not a multiple */
                                  {0, 0, 5, 13, 0},  /* topk not either */
                                  {0, 0, 0, 37, 0}}; /* one block */
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    prm.tile = tiles[i];
    char what[64];
    snprintf(what, sizeof what, "tile %ux%u", tiles[i].cube_m,
             tiles[i].cube_n);
    check_attention(what, &small, &prm, 4, 1);
  }
  /* every index valid, a scale of the model's */
  prm = pto_attention_params_default();
  prm.scale = 0.135234;
  check_attention("all valid", &small, &prm, 0, -1);
  /* DeepSeek's head dims on a few heads and keys */
  const pto_attention_dims mla = {1, 2, 300, 8, 576, 512, 70};
  prm = pto_attention_params_default();
  check_attention("mla dims", &mla, &prm, 7, -1);
}

/* bf16 q and kv (as DeepSeek deploys them): loaded and gathered into f32
 * panels, scores, softmax and sums in f32. Checked against the reference
 * on the same bf16 values, so only the f32 accumulation differs and the
 * f32 tolerances (out abs 1e-5 / rel 1e-4, lse 1e-6) hold. */
Test(kernels, attention_bf16_q_and_kv, .timeout = 240) {
  pto_attention_params prm = pto_attention_params_default();
  prm.dtype = PTO_BF16;
  const pto_attention_dims small = {2, 3, 90, 5, 24, 16, 37};
  check_attention("bf16", &small, &prm, 4, 1);
  prm.tile = (pto_tile_shape){0, 0, 2, 13, 0}; /* partial head and slot tiles */
  check_attention("bf16, tile 2x13", &small, &prm, 3, -1);
  prm = pto_attention_params_default();
  prm.dtype = PTO_BF16;
  prm.causal = 1;
  const pto_attention_dims mla = {1, 2, 300, 8, 576, 512, 70};
  check_attention("bf16, mla dims, causal", &mla, &prm, 7, -1);
}

/* q and kv of two dtypes, or of one the cube does not take, are refused
 * naming both; the reference and the checker refuse such a dtype. */
Test(kernels, attention_bad_dtype_mixes, .timeout = 30) {
  const int64_t qs[4] = {1, 4, 8, 32}, ks[3] = {1, 50, 32}, is[3] = {1, 4, 16};
  const struct {
    pto_dtype q, kv;
    const char *needle;
  } bad[] = {
      {PTO_BF16, PTO_F32,
       "q 'q' bf16[1,4,8,32] and kv 'kv' f32[1,50,32] must both be f32 or "
       "both bf16"},
      {PTO_F32, PTO_BF16, "kv 'kv' bf16[1,50,32] must both be f32"},
      {PTO_F16, PTO_F16, "q 'q' f16[1,4,8,32] and kv 'kv' f16[1,50,32]"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pto_program *p = pto_program_new("bad");
    pto_tensor *q = pto_input(p, "q", bad[i].q, 4, qs);
    pto_tensor *kv = pto_input(p, "kv", bad[i].kv, 3, ks);
    pto_tensor *ix = pto_input(p, "indices", PTO_I32, 3, is);
    pto_attention_params prm = pto_attention_params_default();
    pto_tensor *lse = (pto_tensor *)1;
    cr_expect_null(pto_attention(p, q, kv, ix, 16, &prm, &lse), "case %zu", i);
    cr_expect_null(lse, "case %zu: lse set", i);
    cr_expect_eq(pto_program_status(p), PTO_EDTYPE, "case %zu: %s", i,
                 pto_program_error(p));
    cr_expect(strstr(pto_program_error(p), "attention") &&
                  strstr(pto_program_error(p), bad[i].needle),
              "case %zu: message \"%s\" lacks \"%s\"", i, pto_program_error(p),
              bad[i].needle);
    pto_program_free(p);
  }
  const pto_attention_dims d = {1, 2, 3, 1, 4, 4, 2};
  pto_attention_params prm = pto_attention_params_default();
  prm.dtype = PTO_I32;
  float x[16] = {0};
  int32_t i2[4] = {0};
  cr_expect_eq(pto_attention_ref(&d, &prm, x, x, i2, 0, 2, x, x), PTO_EINVAL);
  char msg[64];
  cr_expect_eq(
      pto_attention_check(&d, &prm, x, x, i2, x, x, 0, 2, msg, sizeof msg), -1);
}

Test(kernels, attention_causal, .timeout = 120) {
  pto_attention_params prm = pto_attention_params_default();
  prm.causal = 1;
  /* S1 = 6 queries end-aligned on S2 = 40 keys: query 0 sees keys <= 34;
   * with S2 = 4 < S1 the first queries see none */
  const pto_attention_dims a = {2, 6, 40, 3, 16, 8, 24},
                           b = {1, 6, 4, 3, 16, 8, 4};
  check_attention("causal", &a, &prm, 5, -1);
  check_attention("causal, early queries see nothing", &b, &prm, 0, -1);
}

/* The chosen tile fits the machine it is chosen for, whatever topk: with
 * one block of 60-64 slots for 66 of 128 heads, the final output could not
 * take the block's room in L1 and the compile failed (ECAPACITY). Every
 * topk up to two blocks compiles at DeepSeek's head count and dims, and
 * the first one that failed gives the reference's values. */
Test(kernels, attention_chosen_tile_fits_every_topk, .timeout = 240) {
  const pto_attention_params prm = pto_attention_params_default();
  for (int64_t topk = 1; topk <= 240; topk++) {
    const pto_attention_dims d = {1, 1, 256, 128, 576, 512, topk};
    pto_program *p = pto_attention_program(&d, &prm);
    pto_executable *e = NULL;
    pto_tile_shape t = pto_attention_tile(NULL, &d);
    cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "topk %ld, tile %ux%u: %s",
                 (long)topk, t.cube_m, t.cube_n, pto_program_error(p));
    pto_executable_free(e);
    pto_program_free(p);
  }
  const pto_attention_dims d = {1, 2, 256, 128, 576, 512, 64};
  check_attention("128 heads, 64 slots", &d, &prm, 9, -1);
}

Test(kernels, attention_bad_input_names_the_tensors_and_sizes,
     .timeout = 30) {
  struct {
    int64_t qs[4], ks[3], is[3];
    pto_dtype idt;
    int64_t dv;
    pto_status st;
    const char *needle;
  } bad[] = {
      {{1, 4, 8, 576}, {1, 50, 512}, {1, 4, 16}, PTO_I32, 512, PTO_ESHAPE,
       "kv 'kv' f32[1,50,512]"},
      {{1, 4, 8, 576}, {2, 50, 576}, {1, 4, 16}, PTO_I32, 512, PTO_ESHAPE,
       "[1,S2,576]"},
      {{1, 4, 8, 576}, {1, 50, 576}, {1, 5, 16}, PTO_I32, 512, PTO_ESHAPE,
       "indices 'indices' i32[1,5,16]"},
      {{1, 4, 8, 576}, {1, 50, 576}, {1, 4, 16}, PTO_F32, 512, PTO_EDTYPE,
       "indices 'indices' f32[1,4,16] must be i32"},
      {{1, 4, 8, 576}, {1, 50, 576}, {1, 4, 16}, PTO_I32, 600, PTO_ERANGE,
       "value dim 600"},
      {{1, 4, 8, 576}, {1, 50, 576}, {1, 4, 16}, PTO_I32, 0, PTO_ERANGE,
       "value dim 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pto_program *p = pto_program_new("bad");
    pto_tensor *q = pto_input(p, "q", PTO_F32, 4, bad[i].qs);
    pto_tensor *kv = pto_input(p, "kv", PTO_F32, 3, bad[i].ks);
    pto_tensor *ix = pto_input(p, "indices", bad[i].idt, 3, bad[i].is);
    pto_attention_params prm = pto_attention_params_default();
    pto_tensor *lse = (pto_tensor *)1;
    cr_expect_null(pto_attention(p, q, kv, ix, bad[i].dv, &prm, &lse),
                   "case %zu", i);
    cr_expect_null(lse, "case %zu: lse set", i);
    cr_expect_eq(pto_program_status(p), bad[i].st, "case %zu: %s", i,
                 pto_program_error(p));
    EXPECT_MSG_HAS(p, "attention");
    EXPECT_MSG_HAS(p, bad[i].needle);
    pto_program_free(p);
  }
  /* a 3-D q, a NULL lse, no dims */
  pto_program *p = pto_program_new("bad");
  pto_tensor *q = pto_input(p, "q", PTO_F32, 3, (int64_t[]){4, 8, 16});
  pto_tensor *kv = pto_input(p, "kv", PTO_F32, 3, (int64_t[]){1, 9, 16});
  pto_tensor *ix = pto_input(p, "indices", PTO_I32, 3, (int64_t[]){1, 4, 2});
  pto_attention_params prm = pto_attention_params_default();
  pto_tensor *lse = NULL;
  cr_expect_null(pto_attention(p, q, kv, ix, 8, &prm, &lse));
  EXPECT_MSG_HAS(p, "q 'q' f32[4,8,16] must be [B,S1,H,D]");
  pto_program_free(p);
  p = pto_program_new("bad");
  cr_expect_null(pto_attention(p, NULL, NULL, NULL, 8, &prm, NULL));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
  p = pto_attention_program(NULL, &prm);
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
  /* the reference and the checker refuse what they cannot compute */
  const pto_attention_dims d = {1, 2, 3, 1, 4, 5, 2}; /* dv > D */
  float x[16] = {0};
  int32_t i2[4] = {0};
  cr_expect_eq(pto_attention_ref(&d, &prm, x, x, i2, 0, 2, x, x), PTO_EINVAL);
  char msg[64];
  cr_expect_eq(pto_attention_check(&d, &prm, x, x, i2, x, x, 0, 2, msg,
                                   sizeof msg),
               -1);
}
