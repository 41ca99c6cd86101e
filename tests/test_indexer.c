/* kernels: the lightning indexer (pto/indexer.h). Its program, compiled and
 * run serially and on 1 and 2 workers, against its plain-C reference (as
 * top-k sets with a tolerance at the threshold, pto_indexer_check), and
 * the reference itself against scores written out here; bad input is
 * refused with a message naming the tensor and sizes. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/kernels_test.h"

/* q and k are f32 or bf16 arrays (prm->dtype), w f32. */
typedef struct inputs {
  void *q, *k;
  float *w;
} inputs;

static inputs inputs_new(const pto_indexer_dims *d, unsigned seed) {
  inputs in = {random_f32(d->b * d->s1 * d->h * d->d, seed),
               random_f32(d->b * d->s2 * d->d, seed + 1),
               random_f32(d->b * d->s1 * d->h, seed + 2)};
  return in;
}

static inputs inputs_bf16(const pto_indexer_dims *d, unsigned seed) {
  inputs in = {random_bf16(d->b * d->s1 * d->h * d->d, seed),
               random_bf16(d->b * d->s2 * d->d, seed + 1),
               random_f32(d->b * d->s1 * d->h, seed + 2)};
  return in;
}

static void inputs_free(inputs *in) {
  free(in->q);
  free(in->k);
  free(in->w);
}

/* Compiles the indexer for d and prm, runs it serially and on 1 and 2
 * workers and checks every result; returns the number of tasks. */
static uint32_t check_indexer(const char *what, const pto_indexer_dims *d,
                              const pto_indexer_params *prm,
                              const inputs *in) {
  pto_program *p = pto_indexer_program(d, prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  const int64_t rows = d->b * d->s1, n = rows * prm->topk;
  int32_t *idx = malloc((size_t)n * sizeof *idx);
  float *val = malloc((size_t)n * sizeof *val);
  cr_assert(idx && val);
  const void *ins[3] = {in->q, in->k, in->w};
  void *outs[2] = {idx, val};
  char msg[256];
  for (uint32_t workers = 0; workers <= 2; workers++) {
    memset(idx, 0x5a, (size_t)n * sizeof *idx);
    memset(val, 0x5a, (size_t)n * sizeof *val);
    run_on_workers(e, ins, outs, workers, what);
    cr_assert_eq(pto_indexer_check(d, prm, in->q, in->k, in->w, idx, val, 0,
                                   rows, 0, msg, sizeof msg),
                 0, "%s on %u workers: %s", what, workers, msg);
  }
  uint32_t tasks = pto_executable_num_tasks(e);
  free(idx);
  free(val);
  pto_executable_free(e);
  pto_program_free(p);
  return tasks;
}

/* bf16 q and k (as DeepSeek deploys them), widened to f32 as the cube
 * packs them: checked against the reference on the same bf16 values, so
 * the inputs' rounding is shared and only the f32 accumulation differs;
 * the f32 tolerance (rtol 1e-5 of the row's scale) holds. The same values
 * widened to f32 by the test and run as f32 select the same keys within
 * that tolerance too. */
Test(kernels, indexer_bf16_q_and_k, .timeout = 120) {
  const pto_indexer_dims dims[] = {{1, 8, 100, 4, 16},
                                   {2, 5, 67, 7, 9},
                                   {1, 4, 300, 64, 128}}; /* DeepSeek's H, D */
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    const pto_indexer_dims *d = &dims[di];
    inputs in = inputs_bf16(d, 300 + (unsigned)di);
    for (int mask = 0; mask < PTO_MASK_MODE_COUNT; mask++) {
      pto_indexer_params prm = pto_indexer_params_default();
      prm.dtype = PTO_BF16;
      prm.mask = (pto_mask_mode)mask;
      prm.topk = d->s2 < 20 ? d->s2 : 20;
      char what[96];
      snprintf(what, sizeof what, "bf16 dims %zu mask %s", di,
               pto_mask_name(prm.mask));
      check_indexer(what, d, &prm, &in);
      /* the program's inputs are bf16, and the f32 run of the widened
       * values agrees with the bf16 reference */
      pto_program *p = pto_indexer_program(d, &prm);
      cr_assert_eq(pto_tensor_dtype(
                       pto_program_input(p, pto_program_find_input(p, "q"))),
                   PTO_BF16);
      cr_assert_eq(pto_tensor_dtype(
                       pto_program_input(p, pto_program_find_input(p, "k"))),
                   PTO_BF16);
      pto_program_free(p);
      const int64_t nq = d->b * d->s1 * d->h * d->d, nk = d->b * d->s2 * d->d;
      inputs wide = {malloc((size_t)nq * sizeof(float)),
                     malloc((size_t)nk * sizeof(float)), in.w};
      cr_assert(wide.q && wide.k);
      for (int64_t i = 0; i < nq; i++)
        ((float *)wide.q)[i] = bf16_f32(((const uint16_t *)in.q)[i]);
      for (int64_t i = 0; i < nk; i++)
        ((float *)wide.k)[i] = bf16_f32(((const uint16_t *)in.k)[i]);
      pto_indexer_params pf = prm;
      pf.dtype = PTO_F32;
      check_indexer(what, d, &pf, &wide);
      free(wide.q);
      free(wide.k);
    }
    inputs_free(&in);
  }
}

/* q and k of two dtypes, or of a dtype the cube does not take, and bf16
 * weights are refused, naming the tensors; the reference and the checker
 * refuse a dtype they do not read. */
Test(kernels, indexer_bad_dtype_mixes, .timeout = 30) {
  const int64_t qs[4] = {1, 8, 4, 16}, ks[3] = {1, 100, 16}, ws[3] = {1, 8, 4};
  const struct {
    pto_dtype q, k, w;
    const char *needle;
  } bad[] = {
      {PTO_BF16, PTO_F32, PTO_F32,
       "q 'q' bf16[1,8,4,16] and k 'k' f32[1,100,16] must share one dtype"},
      {PTO_F32, PTO_BF16, PTO_F32,
       "q 'q' f32[1,8,4,16] and k 'k' bf16[1,100,16] must share one dtype"},
      {PTO_F16, PTO_F16, PTO_F32, "'q' f16[1,8,4,16] must be f32 or bf16"},
      {PTO_BF16, PTO_BF16, PTO_BF16, "'w' bf16[1,8,4] must be f32"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pto_program *p = pto_program_new("bad");
    pto_tensor *q = pto_input(p, "q", bad[i].q, 4, qs);
    pto_tensor *k = pto_input(p, "k", bad[i].k, 3, ks);
    pto_tensor *w = pto_input(p, "w", bad[i].w, 3, ws);
    pto_indexer_params prm = pto_indexer_params_default();
    prm.topk = 20;
    pto_tensor *idx = (pto_tensor *)1;
    cr_expect_null(pto_indexer(p, q, k, w, &prm, &idx), "case %zu", i);
    cr_expect_null(idx, "case %zu: indices set", i);
    cr_expect_eq(pto_program_status(p), PTO_EDTYPE, "case %zu: %s", i,
                 pto_program_error(p));
    cr_expect(strstr(pto_program_error(p), "indexer") &&
                  strstr(pto_program_error(p), bad[i].needle),
              "case %zu: message \"%s\" lacks \"%s\"", i, pto_program_error(p),
              bad[i].needle);
    pto_program_free(p);
  }
  const pto_indexer_dims d = {1, 2, 3, 1, 1};
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = 2;
  prm.dtype = PTO_F16;
  float x[8] = {0};
  int32_t ix[8];
  cr_expect_eq(pto_indexer_ref(&d, &prm, x, x, x, 0, 2, ix, x), PTO_EINVAL);
  char msg[64];
  cr_expect_eq(
      pto_indexer_check(&d, &prm, x, x, x, ix, x, 0, 2, 0, msg, sizeof msg),
      -1);
}

Test(kernels, indexer_both_masks_batches_and_tiles, .timeout = 120) {
  const pto_indexer_dims dims[] =
      {{1, 8, 100, 4, 16},   /* S2 not a multiple of any tile */
       {2, 5, 67, 7, 9},     /* B > 1, odd heads and dim */
       {1, 16, 12, 3, 8},    /* S1 > S2: the first queries see no key */
       {1, 9, 300, 24, 40}}, /* panels of Q^T shared by two queries */
      *d;
  const pto_tile_shape qk[] = {{0, 0, 0, 0, 0},     /* chosen for the host */
                               {0, 0, 8, 16, 0},    /* 2 queries x 16 keys */
                               {0, 0, 5, 30, 0}};   /* m rounded to groups */
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    d = &dims[di];
    inputs in = inputs_new(d, 100 + (unsigned)di);
    for (size_t ti = 0; ti < sizeof qk / sizeof qk[0]; ti++)
      for (int mask = 0; mask < PTO_MASK_MODE_COUNT; mask++) {
        pto_indexer_params prm = pto_indexer_params_default();
        prm.mask = (pto_mask_mode)mask;
        prm.topk = d->s2 < 20 ? d->s2 : 20;
        prm.qk_tile = qk[ti];
        prm.topk_tile.vec_rows = 1;
        char what[96];
        snprintf(what, sizeof what, "dims %zu tile %zu mask %s", di, ti,
                 pto_mask_name(prm.mask));
        check_indexer(what, d, &prm, &in);
      }
    inputs_free(&in);
  }
}

/* The reference's own rules, against scores written out in double: the
 * order (score descending, index ascending on equal f32 scores), the
 * causal visibility and the -1 / -inf padding of a row with fewer visible
 * keys than topk. Keys 0..3 of a one-head, one-dim problem score exactly
 * w * ReLU(q * k): with k = {2, 1, 2, -1, 2} and q = w = 1 the scores are
 * {2, 1, 2, 0, 2}. */
Test(kernels, indexer_reference_order_ties_and_padding, .timeout = 30) {
  const pto_indexer_dims d = {1, 2, 5, 1, 1};
  float q[2] = {1, 1}, k[5] = {2, 1, 2, -1, 2}, w[2] = {1, 1};
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = 4;
  int32_t idx[8];
  float val[8];
  /* causal: query 0 sees keys 0..3, query 1 all five */
  cr_assert_eq(pto_indexer_ref(&d, &prm, q, k, w, 0, 2, idx, val), PTO_OK);
  const int32_t want_i[8] = {0, 2, 1, 3, 0, 2, 4, 1};
  const float want_v[8] = {2, 2, 1, 0, 2, 2, 2, 1};
  for (int t = 0; t < 8; t++) {
    cr_expect_eq(idx[t], want_i[t], "slot %d: %d", t, idx[t]);
    cr_expect_eq(val[t], want_v[t], "slot %d: %g", t, val[t]);
  }
  char msg[256];
  cr_expect_eq(pto_indexer_check(&d, &prm, q, k, w, idx, val, 0, 2, 0, msg,
                                 sizeof msg),
               0, "%s", msg);
  /* a tie at the threshold may resolve either way: key 4 for key 2 */
  idx[4 + 1] = 4;
  idx[4 + 2] = 2;
  cr_expect_eq(pto_indexer_check(&d, &prm, q, k, w, idx, val, 0, 2, 0, msg,
                                 sizeof msg),
               0, "%s", msg);
  /* but not a lower key for a higher one */
  idx[4 + 2] = 3;
  cr_expect_eq(pto_indexer_check(&d, &prm, q, k, w, idx, val, 0, 2, 0, msg,
                                 sizeof msg),
               -1);
  cr_expect(strstr(msg, "row 1") != NULL, "%s", msg);
  /* S1 = 2 queries with S2 = 1 key, causal: query 0 sees none */
  const pto_indexer_dims d1 = {1, 2, 1, 1, 1};
  prm.topk = 2;
  cr_assert_eq(pto_indexer_ref(&d1, &prm, q, k, w, 0, 2, idx, val), PTO_OK);
  cr_expect(idx[0] == -1 && idx[1] == -1 && isinf(val[0]) && val[0] < 0,
            "query 0: (%d, %g) (%d, %g)", idx[0], val[0], idx[1], val[1]);
  cr_expect(idx[2] == 0 && val[2] == 2 && idx[3] == -1 && isinf(val[3]),
            "query 1: (%d, %g) (%d, %g)", idx[2], val[2], idx[3], val[3]);
  cr_expect_eq(pto_indexer_check(&d1, &prm, q, k, w, idx, val, 0, 2, 0, msg,
                                 sizeof msg),
               0, "%s", msg);
  /* a padding slot that holds a key is caught */
  idx[3] = 0;
  cr_expect_eq(pto_indexer_check(&d1, &prm, q, k, w, idx, val, 0, 2, 0, msg,
                                 sizeof msg),
               -1);
  cr_expect(strstr(msg, "padding") != NULL, "%s", msg);
}

/* Ties at the threshold through the compiled program: integer inputs make
 * many keys score exactly the same, and the selected set must still be
 * one of the valid ones. */
Test(kernels, indexer_ties_at_the_threshold, .timeout = 60) {
  const pto_indexer_dims d = {1, 6, 90, 2, 4};
  inputs in = inputs_new(&d, 7);
  for (int64_t i = 0; i < d.s2 * d.d; i++)
    ((float *)in.k)[i] =
        (float)((i / d.d) % 3); /* three distinct keys, repeated */
  for (int64_t i = 0; i < d.s1 * d.h * d.d; i++)
    ((float *)in.q)[i] = 1;
  for (int64_t i = 0; i < d.s1 * d.h; i++)
    in.w[i] = 0.5f;
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = 25; /* inside the block of keys scoring 2 * 4 = 8 */
  prm.topk_tile.vec_rows = 1;
  check_indexer("ties", &d, &prm, &in);
  inputs_free(&in);
}

Test(kernels, indexer_bad_input_names_the_tensor_and_sizes, .timeout = 30) {
  struct {
    int qn;
    int64_t qs[4];
    pto_dtype qdt;
    int64_t ks[3], ws[3], topk;
    int mask;
    pto_status st;
    const char *needle;
  } bad[] = {
      {4, {1, 8, 4, 16}, PTO_F32, {1, 100, 8}, {1, 8, 4}, 20, 1, PTO_ESHAPE,
       "k 'k' f32[1,100,8]"},
      {4, {1, 8, 4, 16}, PTO_F32, {2, 100, 16}, {1, 8, 4}, 20, 1, PTO_ESHAPE,
       "[1,S2,16]"},
      {4, {1, 8, 4, 16}, PTO_F32, {1, 100, 16}, {1, 8, 5}, 20, 1, PTO_ESHAPE,
       "w 'w' f32[1,8,5]"},
      {3, {8, 4, 16, 0}, PTO_F32, {1, 100, 16}, {1, 8, 4}, 20, 1, PTO_ESHAPE,
       "q 'q' f32[8,4,16]"},
      {4, {1, 8, 4, 16}, PTO_I32, {1, 100, 16}, {1, 8, 4}, 20, 1, PTO_EDTYPE,
       "'q' i32[1,8,4,16] must be f32"},
      {4, {1, 8, 4, 16}, PTO_F32, {1, 100, 16}, {1, 8, 4}, 0, 1, PTO_ERANGE,
       "topk is 0"},
      {4, {1, 8, 4, 16}, PTO_F32, {1, 100, 16}, {1, 8, 4}, 20, 7, PTO_EINVAL,
       "mask mode 7"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pto_program *p = pto_program_new("bad");
    pto_tensor *q = pto_input(p, "q", bad[i].qdt, bad[i].qn, bad[i].qs);
    pto_tensor *k = pto_input(p, "k", PTO_F32, 3, bad[i].ks);
    pto_tensor *w = pto_input(p, "w", PTO_F32, 3, bad[i].ws);
    pto_indexer_params prm = pto_indexer_params_default();
    prm.topk = bad[i].topk;
    prm.mask = (pto_mask_mode)bad[i].mask;
    pto_tensor *idx = (pto_tensor *)1;
    cr_expect_null(pto_indexer(p, q, k, w, &prm, &idx), "case %zu", i);
    cr_expect_null(idx, "case %zu: indices set", i);
    cr_expect_eq(pto_program_status(p), bad[i].st, "case %zu: %s", i,
                 pto_program_error(p));
    EXPECT_MSG_HAS(p, "indexer");
    EXPECT_MSG_HAS(p, bad[i].needle);
    pto_program_free(p);
  }
  /* NULL pieces */
  pto_program *p = pto_program_new("null");
  pto_indexer_params prm = pto_indexer_params_default();
  cr_expect_null(pto_indexer(p, NULL, NULL, NULL, &prm, &(pto_tensor *){0}));
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  pto_program_free(p);
  p = pto_indexer_program(NULL, &prm);
  cr_expect_eq(pto_program_status(p), PTO_EINVAL);
  EXPECT_MSG_HAS(p, "dims");
  pto_program_free(p);
  /* mask names */
  pto_mask_mode m = PTO_MASK_NONE;
  cr_expect_eq(pto_mask_from_name("causal", &m), PTO_OK);
  cr_expect_eq(m, PTO_MASK_CAUSAL);
  cr_expect_eq(pto_mask_from_name("casual", &m), PTO_EINVAL);
  cr_expect_eq(m, PTO_MASK_CAUSAL, "unchanged on error");
  cr_expect_eq(pto_mask_from_name(NULL, &m), PTO_EINVAL);
  cr_expect_str_eq(pto_mask_name(PTO_MASK_NONE), "none");
  cr_expect_str_eq(pto_mask_name((pto_mask_mode)9), "?");
  /* the reference and the checker refuse what they cannot compute */
  const pto_indexer_dims d = {1, 2, 3, 1, 1};
  float x[8] = {0};
  int32_t ix[8];
  cr_expect_eq(pto_indexer_ref(&d, &prm, x, x, x, 0, 3, ix, x), PTO_EINVAL);
  cr_expect_eq(pto_indexer_ref(NULL, &prm, x, x, x, 0, 1, ix, x), PTO_EINVAL);
  char msg[64];
  cr_expect_eq(pto_indexer_check(&d, &prm, x, x, NULL, ix, x, 0, 1, 0, msg,
                                 sizeof msg),
               -1);
}
