/* kernels: the operators on dynamic dims. The lightning indexer built on
 * inputs whose batch, queries and keys are dynamic, compiled once and run
 * at many bindings (extents of 1, tile boundaries, fewer keys than
 * queries, the maxima), with the causal mask following the extents: every
 * result equals the evaluator's at that binding and nothing past the
 * extents is written. Small integer inputs make every score exact, so the
 * top-k (ties by index) must match bit for bit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

enum { BM = 2, S1M = 20, S2M = 300, H = 4, D = 16, TOPK = 32 };
#define SENTINEL (-777.0f)

static pto_program *indexer_dyn(pto_mask_mode mask) {
  pto_program *p = pto_program_new("indexer_dyn");
  const int64_t B = pto_dim_dynamic(p, "B", BM),
                S1 = pto_dim_dynamic(p, "S1", S1M),
                S2 = pto_dim_dynamic(p, "S2", S2M);
  const int64_t qs[4] = {B, S1, H, D}, ks[3] = {B, S2, D}, ws[3] = {B, S1, H};
  pto_tensor *q = pto_input(p, "q", PTO_F32, 4, qs);
  pto_tensor *k = pto_input(p, "k", PTO_F32, 3, ks);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 3, ws);
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = TOPK;
  prm.mask = mask;
  /* small tiles: the extents cut the grids of both the score and top-k */
  prm.qk_tile = (pto_tile_shape){0, 0, 6 * H, 48, 0};
  prm.topk_tile = (pto_tile_shape){4, 64, 0, 0, 0};
  pto_tensor *idx = NULL;
  pto_tensor *v = pto_indexer(p, q, k, w, &prm, &idx);
  cr_assert_not_null(v, "%s", pto_program_error(p));
  pto_output(p, idx, "indices");
  pto_output(p, v, "values");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

typedef struct io {
  float q[BM * S1M * H * D], k[BM * S2M * D], w[BM * S1M * H];
  int32_t idx[BM * S1M * TOPK], ridx[BM * S1M * TOPK];
  float val[BM * S1M * TOPK], rval[BM * S1M * TOPK];
} io;

static void inputs(io *b) {
  for (int i = 0; i < BM * S1M * H * D; i++)
    b->q[i] = (float)((i * 7) % 5 - 2);
  for (int i = 0; i < BM * S2M * D; i++)
    b->k[i] = (float)((i * 13) % 5 - 2);
  for (int i = 0; i < BM * S1M * H; i++)
    b->w[i] = (float)((i * 3) % 4);
}

static void clear(io *b) {
  for (int i = 0; i < BM * S1M * TOPK; i++) {
    b->idx[i] = b->ridx[i] = -99;
    b->val[i] = b->rval[i] = SENTINEL;
  }
}

static void run_bindings(pto_mask_mode mask) {
  pto_program *p = indexer_dyn(mask);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(NULL, &rt), PTO_OK);
  static io b;
  inputs(&b);
  const void *in[] = {b.q, b.k, b.w};
  void *out[] = {b.idx, b.val}, *ref[] = {b.ridx, b.rval};
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static const int64_t bind[][3] = {
      {1, 1, 1},   {2, 20, 300}, {1, 7, 129}, {2, 13, 64},
      {1, 20, 19}, {2, 6, 48},   {1, 1, 300}, {2, 19, 33}};
  for (size_t c = 0; c < sizeof bind / sizeof bind[0]; c++) {
    const char *names[3] = {"B", "S1", "S2"};
    for (int i = 0; i < 3; i++)
      cr_assert_eq(pto_run_bind(run, names[i], bind[c][i]), PTO_OK, "%s",
                   pto_run_error(run));
    clear(&b);
    cr_assert_eq(pto_program_eval_dims(p, bind[c], in, ref), PTO_OK, "%s",
                 pto_program_error(p));
    int written = 0; /* the evaluator wrote every valid slot */
    for (int i = 0; i < BM * S1M * TOPK; i++)
      written += b.ridx[i] != -99;
    cr_expect_eq(written, (int)(bind[c][0] * bind[c][1] * TOPK));
    for (int way = 0; way < 2; way++) {
      for (int i = 0; i < BM * S1M * TOPK; i++) {
        b.idx[i] = -99;
        b.val[i] = SENTINEL;
      }
      pto_status st = way ? pto_run_exec(rt, run, in, out)
                          : pto_run_exec_serial(run, in, out);
      cr_assert_eq(st, PTO_OK, "%s", pto_run_error(run));
      int bad = 0;
      for (int i = 0; i < BM * S1M * TOPK; i++)
        bad += b.idx[i] != b.ridx[i] ||
               memcmp(&b.val[i], &b.rval[i], sizeof(float));
      cr_expect_eq(bad, 0, "mask %d B=%ld S1=%ld S2=%ld way %d: %d differ",
                   (int)mask, (long)bind[c][0], (long)bind[c][1],
                   (long)bind[c][2], way, bad);
    }
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(kernels, dynamic_indexer_causal_equals_the_evaluator, .timeout = 120) {
  run_bindings(PTO_MASK_CAUSAL);
}

Test(kernels, dynamic_indexer_unmasked_equals_the_evaluator,
     .timeout = 120) {
  run_bindings(PTO_MASK_NONE);
}
