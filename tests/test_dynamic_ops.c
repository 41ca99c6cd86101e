/* kernels: the operators on dynamic dims. The lightning indexer built on
 * inputs whose batch, queries and keys are dynamic, compiled once and run
 * at many bindings (extents of 1, tile boundaries, fewer keys than
 * queries, the maxima), with the causal mask following the extents: every
 * result equals the evaluator's at that binding and nothing past the
 * extents is written. Small integer inputs make every score exact, so the
 * top-k (ties by index) must match bit for bit. Then the builders with
 * params.dynamic (pto_indexer_program, pto_attention_program), below. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "tests/kernels_test.h"

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

/* ---- the convenience builders: pto_indexer_program and
 * pto_attention_program with params.dynamic ------------------------------
 *
 * Each dynamic program is compiled once and run at many bindings
 * (extents of 0 and 1, tile boundaries, fewer keys than queries, the
 * maxima) serially and on a runtime of 2 workers; every run is checked
 * against the evaluator at that binding, against the operator's checker at
 * the bound sizes (pto_*_check_bound, in the buffers laid out for the
 * maxima), and for nothing written past the extents. The bound references
 * are checked against the plain ones on the valid region packed dense.
 * At the maxima the dynamic program gives the static one's results bit
 * for bit. */

static const pto_indexer_dims IMAX = {BM, S1M, S2M, H, D};

static pto_indexer_params indexer_prm(pto_mask_mode mask, unsigned dyn) {
  pto_indexer_params prm = pto_indexer_params_default();
  prm.topk = TOPK;
  prm.mask = mask;
  prm.qk_tile = (pto_tile_shape){0, 0, 6 * H, 48, 0};
  prm.topk_tile = (pto_tile_shape){4, 64, 0, 0, 0};
  prm.dynamic = dyn;
  return prm;
}

/* Binds "B", "S1", "S2" of run to v. */
static void bind3(pto_run *run, const int64_t v[3]) {
  static const char *const names[3] = {"B", "S1", "S2"};
  for (int i = 0; i < 3; i++)
    cr_assert_eq(pto_run_bind(run, names[i], v[i]), PTO_OK, "%s",
                 pto_run_error(run));
}

/* Whether rows and columns of a buffer [b, s1, cols] laid out for the
 * maxima lie inside the binding: row b * S1M + i with b < B, i < S1. */
static int inside(const int64_t v[3], int64_t s1m, int64_t row) {
  return row / s1m < v[0] && row % s1m < v[1];
}

/* The dynamic indexer program checked at many bindings, mask `mask`. */
static void indexer_program_bindings(pto_mask_mode mask) {
  const pto_indexer_params prm = indexer_prm(mask, PTO_INDEXER_DYN_ALL);
  pto_program *p = pto_indexer_program(&IMAX, &prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(pto_program_num_dims(p), 3);
  static const char *const names[3] = {"B", "S1", "S2"};
  const int64_t maxima[3] = {BM, S1M, S2M};
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(pto_program_dim_name(p, i), names[i]);
    cr_assert_eq(pto_program_dim_max(p, i), maxima[i]);
  }
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime_with(2, 0);
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static io b;
  static int32_t xidx[BM * S1M * TOPK], didx[BM * S1M * TOPK];
  static float xval[BM * S1M * TOPK], dval[BM * S1M * TOPK];
  static float dq[BM * S1M * H * D], dk[BM * S2M * D], dw[BM * S1M * H];
  inputs(&b);
  const void *in[] = {b.q, b.k, b.w};
  void *out[] = {b.idx, b.val}, *ref[] = {b.ridx, b.rval};
  /* B S1 S2: ones, the score's tile (6 queries x 48 keys) and the top-k's
   * (64 keys), fewer keys than queries, an S2 of 0 (every slot padding),
   * B of 0 (nothing), the maxima */
  static const int64_t bind[][3] = {
      {1, 1, 1},   {1, 6, 48}, {2, 12, 64},  {2, 20, 7},  {1, 20, 19},
      {2, 7, 129}, {2, 5, 0},  {0, 20, 300}, {1, 1, 300}, {2, 20, 300}};
  const int64_t n_out = BM * S1M * TOPK;
  for (size_t c = 0; c < sizeof bind / sizeof bind[0]; c++) {
    const int64_t *v = bind[c];
    const pto_indexer_dims dd = {v[0], v[1], v[2], H, D};
    char what[96], msg[512];
    snprintf(what, sizeof what, "mask %d, B=%ld S1=%ld S2=%ld", (int)mask,
             (long)v[0], (long)v[1], (long)v[2]);
    bind3(run, v);
    clear(&b);
    cr_assert_eq(pto_program_eval_dims(p, v, in, ref), PTO_OK, "%s: %s", what,
                 pto_program_error(p));
    cr_assert_eq(pto_indexer_check_bound(&dd, &IMAX, &prm, b.q, b.k, b.w,
                                         b.ridx, b.rval, 0, v[0] * v[1], 0, msg,
                                         sizeof msg),
                 0, "%s, evaluator: %s", what, msg);
    /* the bound reference: the evaluator's results (exact inputs), and
     * nothing written past the extents */
    for (int64_t i = 0; i < n_out; i++) {
      xidx[i] = -99;
      xval[i] = SENTINEL;
    }
    cr_assert_eq(pto_indexer_ref_bound(&dd, &IMAX, &prm, b.q, b.k, b.w, 0,
                                       v[0] * v[1], xidx, xval),
                 PTO_OK, "%s", what);
    int bad = 0;
    for (int64_t i = 0; i < n_out; i++)
      bad += xidx[i] != b.ridx[i] || memcmp(&xval[i], &b.rval[i], 4);
    cr_expect_eq(bad, 0,
                 "%s: the bound reference and the evaluator differ "
                 "in %d slots",
                 what, bad);
    /* ... and the plain reference on the valid region packed dense */
    if (v[0] && v[1] && v[2]) {
      for (int64_t r = 0; r < v[0] * v[1]; r++) {
        const int64_t br = r / v[1] * S1M + r % v[1];
        memcpy(dq + r * H * D, b.q + br * H * D, sizeof(float) * H * D);
        memcpy(dw + r * H, b.w + br * H, sizeof(float) * H);
      }
      for (int64_t bb = 0; bb < v[0]; bb++)
        memcpy(dk + bb * v[2] * D, b.k + bb * S2M * D,
               sizeof(float) * (size_t)(v[2] * D));
      cr_assert_eq(
          pto_indexer_ref(&dd, &prm, dq, dk, dw, 0, v[0] * v[1], didx, dval),
          PTO_OK);
      bad = 0;
      for (int64_t r = 0; r < v[0] * v[1]; r++) {
        const int64_t br = r / v[1] * S1M + r % v[1];
        bad += memcmp(didx + r * TOPK, xidx + br * TOPK, 4 * TOPK) ||
               memcmp(dval + r * TOPK, xval + br * TOPK, 4 * TOPK);
      }
      cr_expect_eq(bad, 0,
                   "%s: %d rows of the bound reference differ from "
                   "the plain one's",
                   what, bad);
    }
    for (int way = 0; way < 2; way++) {
      for (int64_t i = 0; i < n_out; i++) {
        b.idx[i] = -99;
        b.val[i] = SENTINEL;
      }
      const pto_status st = way ? pto_run_exec(rt, run, in, out)
                                : pto_run_exec_serial(run, in, out);
      cr_assert_eq(st, PTO_OK, "%s: %s", what, pto_run_error(run));
      bad = 0; /* equal to the evaluator, sentinels past the extents too */
      for (int64_t i = 0; i < n_out; i++)
        bad += b.idx[i] != b.ridx[i] || memcmp(&b.val[i], &b.rval[i], 4);
      cr_expect_eq(bad, 0, "%s, %s: %d slots differ from the evaluator", what,
                   way ? "2 workers" : "serial", bad);
      int outside = 0;
      for (int64_t i = 0; i < n_out; i++)
        outside += !inside(v, S1M, i / TOPK) &&
                   (b.idx[i] != -99 || b.val[i] != SENTINEL);
      cr_expect_eq(outside, 0, "%s: %d slots written past the extents", what,
                   outside);
      cr_expect_eq(pto_indexer_check_bound(&dd, &IMAX, &prm, b.q, b.k, b.w,
                                           b.idx, b.val, 0, v[0] * v[1], 0, msg,
                                           sizeof msg),
                   0, "%s, %s: %s", what, way ? "2 workers" : "serial", msg);
    }
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(kernels, dynamic_indexer_program_causal_at_many_bindings, .timeout = 120) {
  indexer_program_bindings(PTO_MASK_CAUSAL);
}

Test(kernels, dynamic_indexer_program_unmasked_at_many_bindings,
     .timeout = 120) {
  indexer_program_bindings(PTO_MASK_NONE);
}

/* At the maxima the dynamic program is the static one: random inputs,
 * results equal bit for bit (serial and 2 workers), and both pass the
 * checker. With dynamic 0 the builder declares no dim. */
Test(kernels, dynamic_indexer_program_at_the_maxima_equals_the_static,
     .timeout = 120) {
  pto_runtime *rt = runtime_with(2, 0);
  float *q = random_f32(BM * S1M * H * D, 31),
        *k = random_f32(BM * S2M * D, 32), *w = random_f32(BM * S1M * H, 33);
  const void *in[] = {q, k, w};
  for (int causal = 0; causal < 2; causal++) {
    const pto_mask_mode mask = causal ? PTO_MASK_CAUSAL : PTO_MASK_NONE;
    const pto_indexer_params sp = indexer_prm(mask, 0),
                             dp = indexer_prm(mask, PTO_INDEXER_DYN_ALL);
    pto_program *ps = pto_indexer_program(&IMAX, &sp),
                *pd = pto_indexer_program(&IMAX, &dp);
    cr_assert_eq(pto_program_status(ps), PTO_OK, "%s", pto_program_error(ps));
    cr_assert_eq(pto_program_status(pd), PTO_OK, "%s", pto_program_error(pd));
    cr_assert_eq(pto_program_num_dims(ps), 0);
    pto_executable *es = NULL, *ed = NULL;
    cr_assert_eq(pto_compile(ps, NULL, &es), PTO_OK, "%s",
                 pto_program_error(ps));
    cr_assert_eq(pto_compile(pd, NULL, &ed), PTO_OK, "%s",
                 pto_program_error(pd));
    cr_expect_eq(pto_executable_num_tasks(es), pto_executable_num_tasks(ed));
    pto_run *rd = NULL;
    cr_assert_eq(pto_run_new(ed, &rd), PTO_OK);
    bind3(rd, (const int64_t[]){BM, S1M, S2M});
    static int32_t si[BM * S1M * TOPK], di[BM * S1M * TOPK];
    static float sv[BM * S1M * TOPK], dv[BM * S1M * TOPK];
    void *so[] = {si, sv}, *dout[] = {di, dv};
    for (int way = 0; way < 2; way++) {
      memset(si, 0x55, sizeof si);
      memset(di, 0x66, sizeof di);
      memset(sv, 0x55, sizeof sv);
      memset(dv, 0x66, sizeof dv);
      if (way) {
        cr_assert_eq(pto_runtime_run(rt, es, in, so), PTO_OK, "%s",
                     pto_executable_error(es));
        cr_assert_eq(pto_run_exec(rt, rd, in, dout), PTO_OK, "%s",
                     pto_run_error(rd));
      } else {
        cr_assert_eq(pto_executable_run_serial(es, in, so), PTO_OK, "%s",
                     pto_executable_error(es));
        cr_assert_eq(pto_run_exec_serial(rd, in, dout), PTO_OK, "%s",
                     pto_run_error(rd));
      }
      cr_expect_eq(memcmp(si, di, sizeof si), 0, "causal %d way %d: indices",
                   causal, way);
      cr_expect_eq(memcmp(sv, dv, sizeof sv), 0, "causal %d way %d: values",
                   causal, way);
      char msg[512];
      cr_expect_eq(pto_indexer_check(&IMAX, &sp, q, k, w, di, dv, 0, BM * S1M,
                                     0, msg, sizeof msg),
                   0, "causal %d way %d: %s", causal, way, msg);
    }
    pto_run_free(rd);
    pto_executable_free(es);
    pto_executable_free(ed);
    pto_program_free(ps);
    pto_program_free(pd);
  }
  pto_runtime_free(rt);
  free(q);
  free(k);
  free(w);
}

/* The builder with dynamic 0 builds what static inputs and pto_indexer
 * build by hand: the same executable, dump for dump. */
static char *exe_dump(pto_executable *e, pto_stage stage) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  cr_assert_not_null(f);
  cr_assert_eq(pto_executable_dump(e, stage, PTO_DUMP_JSON, f), PTO_OK);
  fclose(f);
  return buf;
}

Test(kernels, dynamic_indexer_program_default_is_the_static_build,
     .timeout = 60) {
  const pto_indexer_params prm = indexer_prm(PTO_MASK_CAUSAL, 0);
  pto_program *pb = pto_indexer_program(&IMAX, &prm);
  pto_program *ph = pto_program_new("indexer");
  const int64_t qs[4] = {BM, S1M, H, D}, ks[3] = {BM, S2M, D},
                ws[3] = {BM, S1M, H};
  pto_tensor *q = pto_input(ph, "q", PTO_F32, 4, qs);
  pto_tensor *k = pto_input(ph, "k", PTO_F32, 3, ks);
  pto_tensor *w = pto_input(ph, "w", PTO_F32, 3, ws);
  pto_tensor *idx = NULL;
  pto_tensor *v = pto_indexer(ph, q, k, w, &prm, &idx);
  pto_output(ph, idx, "indices");
  pto_output(ph, v, "values");
  pto_executable *eb = NULL, *eh = NULL;
  cr_assert_eq(pto_compile(pb, NULL, &eb), PTO_OK, "%s", pto_program_error(pb));
  cr_assert_eq(pto_compile(ph, NULL, &eh), PTO_OK, "%s", pto_program_error(ph));
  cr_assert_eq(pto_executable_num_dims(eb), 0);
  for (int s = 0; s < PTO_STAGE_COUNT; s++) {
    char *a = exe_dump(eb, (pto_stage)s), *b = exe_dump(eh, (pto_stage)s);
    cr_expect_str_eq(a, b, "stage %d differs", s);
    free(a);
    free(b);
  }
  pto_executable_free(eb);
  pto_executable_free(eh);
  pto_program_free(pb);
  pto_program_free(ph);
}

/* ---- attention ---------------------------------------------------------- */

enum { AB = 2, AS1 = 9, AS2 = 200, AH = 3, AD = 24, ADV = 16, AT = 37 };
static const pto_attention_dims AMAX = {AB, AS1, AS2, AH, AD, ADV, AT};
#define NQ (AB * AS1 * AH * AD)
#define NKV (AB * AS2 * AD)
#define NIX (AB * AS1 * AT)
#define NOUT (AB * AS1 * AH * ADV)
#define NLSE (AB * AS1 * AH)

static pto_attention_params attention_prm(int causal, unsigned dyn) {
  pto_attention_params prm = pto_attention_params_default();
  prm.causal = causal;
  /* 2 heads of 3 per task, 16 slots of 37 per block: tails in both */
  prm.tile = (pto_tile_shape){0, 0, 2, 16, 0};
  prm.dynamic = dyn;
  return prm;
}

/* Indices for a binding's valid rows: keys below S2, with -1 and S2, S2 + 1
 * (skipped) among them; the rows past the binding hold keys that would be
 * valid at the maxima, which nothing may read. */
static void attention_indices(int32_t *ix, const int64_t v[3]) {
  for (int64_t r = 0; r < AB * AS1; r++)
    for (int64_t t = 0; t < AT; t++)
      ix[r * AT + t] = inside(v, AS1, r)
                           ? (int32_t)((r * 31 + t * 17 + 5) % (v[2] + 3)) - 1
                           : (int32_t)((r + t) % AS2);
}

typedef struct aio {
  float q[NQ], kv[NKV];
  int32_t ix[NIX];
  float out[NOUT], lse[NLSE], eout[NOUT], else_[NLSE], rout[NOUT], rlse[NLSE];
  float dq[NQ], dkv[NKV], dout[NOUT], dlse[NLSE];
  int32_t dix[NIX];
} aio;

static void fill(float *a, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    a[i] = SENTINEL;
}

/* got and want agree to the checker's tolerances over the binding's rows
 * and hold the sentinel past them; the number of elements that do not. */
static int attention_agree(const int64_t v[3], const float *out,
                           const float *lse, const float *wout,
                           const float *wlse) {
  int bad = 0;
  for (int64_t i = 0; i < NOUT; i++) {
    const int in = inside(v, AS1, i / (AH * ADV));
    bad += in ? !(fabsf(out[i] - wout[i]) <= 1e-5f + 1e-4f * fabsf(wout[i]))
              : out[i] != SENTINEL;
  }
  for (int64_t i = 0; i < NLSE; i++) {
    const int in = inside(v, AS1, i / AH);
    bad +=
        in ? isinf(wlse[i])
                 ? lse[i] != wlse[i]
                 : !(fabsf(lse[i] - wlse[i]) <= 1e-6f + 1e-6f * fabsf(wlse[i]))
           : lse[i] != SENTINEL;
  }
  return bad;
}

static void attention_program_bindings(int causal) {
  const pto_attention_params prm = attention_prm(causal, PTO_ATTENTION_DYN_ALL);
  pto_program *p = pto_attention_program(&AMAX, &prm);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(pto_program_num_dims(p), 3);
  static const char *const names[3] = {"B", "S1", "S2"};
  const int64_t maxima[3] = {AB, AS1, AS2};
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(pto_program_dim_name(p, i), names[i]);
    cr_assert_eq(pto_program_dim_max(p, i), maxima[i]);
  }
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime_with(2, 0);
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static aio b;
  float *q = random_f32(NQ, 41), *kv = random_f32(NKV, 42);
  memcpy(b.q, q, sizeof b.q);
  memcpy(b.kv, kv, sizeof b.kv);
  free(q);
  free(kv);
  const void *in[] = {b.q, b.kv, b.ix};
  void *out[] = {b.out, b.lse}, *ev[] = {b.eout, b.else_};
  /* B S1 S2: ones, a slot block's keys (16), fewer keys than queries (the
   * causal limit S2 - S1 + i below 0 for the first rows: lse +inf), S2 of
   * 0, B of 0, the maxima */
  static const int64_t bind[][3] = {{1, 1, 1},   {2, 9, 5},   {1, 9, 16},
                                    {2, 4, 64},  {1, 3, 150}, {2, 9, 0},
                                    {0, 9, 200}, {2, 1, 200}, {2, 9, 200}};
  for (size_t c = 0; c < sizeof bind / sizeof bind[0]; c++) {
    const int64_t *v = bind[c];
    const pto_attention_dims dd = {v[0], v[1], v[2], AH, AD, ADV, AT};
    const int64_t rows = v[0] * v[1];
    char what[96], msg[512];
    snprintf(what, sizeof what, "causal %d, B=%ld S1=%ld S2=%ld", causal,
             (long)v[0], (long)v[1], (long)v[2]);
    attention_indices(b.ix, v);
    bind3(run, v);
    fill(b.eout, NOUT);
    fill(b.else_, NLSE);
    cr_assert_eq(pto_program_eval_dims(p, v, in, ev), PTO_OK, "%s: %s", what,
                 pto_program_error(p));
    cr_assert_eq(pto_attention_check_bound(&dd, &AMAX, &prm, b.q, b.kv, b.ix,
                                           b.eout, b.else_, 0, rows, msg,
                                           sizeof msg),
                 0, "%s, evaluator: %s", what, msg);
    /* the bound reference: the evaluator's results, nothing written past
     * the extents, and the plain reference's on the rows packed dense */
    fill(b.rout, NOUT);
    fill(b.rlse, NLSE);
    cr_assert_eq(pto_attention_ref_bound(&dd, &AMAX, &prm, b.q, b.kv, b.ix, 0,
                                         rows, b.rout, b.rlse),
                 PTO_OK, "%s", what);
    cr_expect_eq(attention_agree(v, b.rout, b.rlse, b.eout, b.else_), 0,
                 "%s: the bound reference and the evaluator differ", what);
    if (v[0] && v[1] && v[2]) {
      for (int64_t r = 0; r < rows; r++) {
        const int64_t br = r / v[1] * AS1 + r % v[1];
        memcpy(b.dq + r * AH * AD, b.q + br * AH * AD, 4 * AH * AD);
        memcpy(b.dix + r * AT, b.ix + br * AT, 4 * AT);
      }
      for (int64_t bb = 0; bb < v[0]; bb++)
        memcpy(b.dkv + bb * v[2] * AD, b.kv + bb * AS2 * AD,
               4 * (size_t)(v[2] * AD));
      cr_assert_eq(pto_attention_ref(&dd, &prm, b.dq, b.dkv, b.dix, 0, rows,
                                     b.dout, b.dlse),
                   PTO_OK);
      int bad = 0;
      for (int64_t r = 0; r < rows; r++) {
        const int64_t br = r / v[1] * AS1 + r % v[1];
        bad += memcmp(b.dout + r * AH * ADV, b.rout + br * AH * ADV,
                      4 * AH * ADV) ||
               memcmp(b.dlse + r * AH, b.rlse + br * AH, 4 * AH);
      }
      cr_expect_eq(bad, 0,
                   "%s: %d rows of the bound reference differ from "
                   "the plain one's",
                   what, bad);
    }
    for (int way = 0; way < 2; way++) {
      fill(b.out, NOUT);
      fill(b.lse, NLSE);
      const pto_status st = way ? pto_run_exec(rt, run, in, out)
                                : pto_run_exec_serial(run, in, out);
      cr_assert_eq(st, PTO_OK, "%s: %s", what, pto_run_error(run));
      cr_expect_eq(pto_attention_check_bound(&dd, &AMAX, &prm, b.q, b.kv, b.ix,
                                             b.out, b.lse, 0, rows, msg,
                                             sizeof msg),
                   0, "%s, %s: %s", what, way ? "2 workers" : "serial", msg);
      cr_expect_eq(attention_agree(v, b.out, b.lse, b.eout, b.else_), 0,
                   "%s, %s: differs from the evaluator (or wrote past the "
                   "extents)",
                   what, way ? "2 workers" : "serial");
    }
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(kernels, dynamic_attention_program_causal_at_many_bindings,
     .timeout = 120) {
  attention_program_bindings(1);
}

Test(kernels, dynamic_attention_program_unmasked_at_many_bindings,
     .timeout = 120) {
  attention_program_bindings(0);
}

Test(kernels, dynamic_attention_program_at_the_maxima_equals_the_static,
     .timeout = 120) {
  pto_runtime *rt = runtime_with(2, 0);
  static aio b;
  float *q = random_f32(NQ, 51), *kv = random_f32(NKV, 52);
  memcpy(b.q, q, sizeof b.q);
  memcpy(b.kv, kv, sizeof b.kv);
  free(q);
  free(kv);
  attention_indices(b.ix, (const int64_t[]){AB, AS1, AS2});
  const void *in[] = {b.q, b.kv, b.ix};
  void *so[] = {b.rout, b.rlse}, *dout[] = {b.out, b.lse};
  for (int causal = 0; causal < 2; causal++) {
    const pto_attention_params sp = attention_prm(causal, 0),
                               dp =
                                   attention_prm(causal, PTO_ATTENTION_DYN_ALL);
    pto_program *ps = pto_attention_program(&AMAX, &sp),
                *pd = pto_attention_program(&AMAX, &dp);
    cr_assert_eq(pto_program_status(ps), PTO_OK, "%s", pto_program_error(ps));
    cr_assert_eq(pto_program_status(pd), PTO_OK, "%s", pto_program_error(pd));
    cr_assert_eq(pto_program_num_dims(ps), 0);
    pto_executable *es = NULL, *ed = NULL;
    cr_assert_eq(pto_compile(ps, NULL, &es), PTO_OK, "%s",
                 pto_program_error(ps));
    cr_assert_eq(pto_compile(pd, NULL, &ed), PTO_OK, "%s",
                 pto_program_error(pd));
    pto_run *rd = NULL;
    cr_assert_eq(pto_run_new(ed, &rd), PTO_OK);
    bind3(rd, (const int64_t[]){AB, AS1, AS2});
    for (int way = 0; way < 2; way++) {
      memset(b.rout, 0x55, sizeof b.rout);
      memset(b.rlse, 0x55, sizeof b.rlse);
      fill(b.out, NOUT);
      fill(b.lse, NLSE);
      if (way) {
        cr_assert_eq(pto_runtime_run(rt, es, in, so), PTO_OK, "%s",
                     pto_executable_error(es));
        cr_assert_eq(pto_run_exec(rt, rd, in, dout), PTO_OK, "%s",
                     pto_run_error(rd));
      } else {
        cr_assert_eq(pto_executable_run_serial(es, in, so), PTO_OK, "%s",
                     pto_executable_error(es));
        cr_assert_eq(pto_run_exec_serial(rd, in, dout), PTO_OK, "%s",
                     pto_run_error(rd));
      }
      cr_expect_eq(memcmp(b.rout, b.out, sizeof b.out), 0,
                   "causal %d way %d: out", causal, way);
      cr_expect_eq(memcmp(b.rlse, b.lse, sizeof b.lse), 0,
                   "causal %d way %d: lse", causal, way);
      char msg[512];
      cr_expect_eq(pto_attention_check(&AMAX, &sp, b.q, b.kv, b.ix, b.out,
                                       b.lse, 0, AB * AS1, msg, sizeof msg),
                   0, "causal %d way %d: %s", causal, way, msg);
    }
    pto_run_free(rd);
    pto_executable_free(es);
    pto_executable_free(ed);
    pto_program_free(ps);
    pto_program_free(pd);
  }
  pto_runtime_free(rt);
}

Test(kernels, dynamic_attention_program_default_is_the_static_build,
     .timeout = 60) {
  for (int causal = 0; causal < 2; causal++) {
    const pto_attention_params prm = attention_prm(causal, 0);
    pto_program *pb = pto_attention_program(&AMAX, &prm);
    pto_program *ph = pto_program_new("attention");
    const int64_t qs[4] = {AB, AS1, AH, AD}, ks[3] = {AB, AS2, AD},
                  is[3] = {AB, AS1, AT};
    pto_tensor *q = pto_input(ph, "q", PTO_F32, 4, qs);
    pto_tensor *kv = pto_input(ph, "kv", PTO_F32, 3, ks);
    pto_tensor *ix = pto_input(ph, "indices", PTO_I32, 3, is);
    pto_tensor *lse = NULL;
    pto_tensor *o = pto_attention(ph, q, kv, ix, ADV, &prm, &lse);
    pto_output(ph, o, "out");
    pto_output(ph, lse, "lse");
    pto_executable *eb = NULL, *eh = NULL;
    cr_assert_eq(pto_compile(pb, NULL, &eb), PTO_OK, "%s",
                 pto_program_error(pb));
    cr_assert_eq(pto_compile(ph, NULL, &eh), PTO_OK, "%s",
                 pto_program_error(ph));
    cr_assert_eq(pto_executable_num_dims(eb), 0);
    for (int s = 0; s < PTO_STAGE_COUNT; s++) {
      char *a = exe_dump(eb, (pto_stage)s), *c = exe_dump(eh, (pto_stage)s);
      cr_expect_str_eq(a, c, "causal %d: stage %d differs", causal, s);
      free(a);
      free(c);
    }
    pto_executable_free(eb);
    pto_executable_free(eh);
    pto_program_free(pb);
    pto_program_free(ph);
  }
}

/* A binding above a maximum is refused, naming the dim, the maximum and
 * the value; the run keeps its previous binding. */
Test(kernels, dynamic_operator_programs_refuse_a_binding_above_a_maximum,
     .timeout = 60) {
  const pto_indexer_params ip =
      indexer_prm(PTO_MASK_CAUSAL, PTO_INDEXER_DYN_ALL);
  const pto_attention_params ap = attention_prm(1, PTO_ATTENTION_DYN_ALL);
  pto_program *ps[2] = {pto_indexer_program(&IMAX, &ip),
                        pto_attention_program(&AMAX, &ap)};
  const int64_t maxima[2][3] = {{BM, S1M, S2M}, {AB, AS1, AS2}};
  static const char *const names[3] = {"B", "S1", "S2"};
  for (int o = 0; o < 2; o++) {
    pto_executable *e = NULL;
    cr_assert_eq(pto_compile(ps[o], NULL, &e), PTO_OK, "%s",
                 pto_program_error(ps[o]));
    cr_assert_eq(pto_executable_num_dims(e), 3);
    pto_run *run = NULL;
    cr_assert_eq(pto_run_new(e, &run), PTO_OK);
    for (int i = 0; i < 3; i++) {
      cr_assert_eq(pto_executable_dim_max(e, i), maxima[o][i]);
      cr_assert_eq(pto_run_bind(run, names[i], maxima[o][i]), PTO_OK);
      cr_expect_eq(pto_run_bind(run, names[i], maxima[o][i] + 1), PTO_ERANGE);
      char dim[16], mx[32], val[32];
      snprintf(dim, sizeof dim, "'%s'", names[i]);
      snprintf(mx, sizeof mx, "%ld", (long)maxima[o][i]);
      snprintf(val, sizeof val, "= %ld", (long)maxima[o][i] + 1);
      const char *m = pto_run_error(run);
      cr_expect(strstr(m, dim) && strstr(m, mx) && strstr(m, val),
                "op %d dim %s: '%s'", o, names[i], m);
      cr_expect_eq(pto_run_dim(run, names[i]), maxima[o][i]);
    }
    pto_run_free(run);
    pto_executable_free(e);
    pto_program_free(ps[o]);
  }
}

/* What the builders and the bound checkers refuse, and how they say it. */
static void expect_refused(pto_program *p, pto_status st, const char *a,
                           const char *b, const char *c) {
  const char *m = pto_program_error(p);
  cr_expect_eq(pto_program_status(p), st, "status %d: %s",
               (int)pto_program_status(p), m);
  cr_expect(strstr(m, a) && strstr(m, b) && strstr(m, c), "'%s'", m);
  pto_program_free(p);
}

Test(kernels, dynamic_operator_programs_refuse_bad_params, .timeout = 60) {
  /* flags that do not exist */
  pto_indexer_params ip = indexer_prm(PTO_MASK_CAUSAL, 0x9u);
  expect_refused(pto_indexer_program(&IMAX, &ip), PTO_EINVAL, "indexer",
                 "dynamic is 0x9", "PTO_INDEXER_DYN_B");
  pto_attention_params ap = attention_prm(1, 0x10u);
  expect_refused(pto_attention_program(&AMAX, &ap), PTO_EINVAL, "attention",
                 "dynamic is 0x10", "PTO_ATTENTION_DYN_B");
  /* a dynamic dim's maximum out of range */
  ip.dynamic = PTO_INDEXER_DYN_S2;
  pto_indexer_dims d0 = IMAX;
  d0.s2 = 0;
  expect_refused(pto_indexer_program(&d0, &ip), PTO_EINVAL, "indexer",
                 "dynamic dim S2", "s2 is 0");
  ap.dynamic = PTO_ATTENTION_DYN_S1;
  pto_attention_dims a0 = AMAX;
  a0.s1 = -3;
  expect_refused(pto_attention_program(&a0, &ap), PTO_EINVAL, "attention",
                 "dynamic dim S1", "s1 is -3");
  /* the op on static inputs with a flag: the caller expected a dim */
  {
    pto_program *p = pto_program_new("static");
    const int64_t qs[4] = {BM, S1M, H, D}, ks[3] = {BM, S2M, D},
                  ws[3] = {BM, S1M, H};
    pto_tensor *q = pto_input(p, "q", PTO_F32, 4, qs);
    pto_tensor *k = pto_input(p, "k", PTO_F32, 3, ks);
    pto_tensor *w = pto_input(p, "w", PTO_F32, 3, ws);
    pto_tensor *idx = NULL;
    ip.dynamic = PTO_INDEXER_DYN_S1;
    cr_expect_null(pto_indexer(p, q, k, w, &ip, &idx));
    expect_refused(p, PTO_EINVAL, "params flag S1 dynamic", "axis 1 of q",
                   "f32[2,20,4,16]");
  }
  {
    pto_program *p = pto_program_new("static");
    const int64_t B = pto_dim_dynamic(p, "B", AB);
    const int64_t qs[4] = {B, AS1, AH, AD}, ks[3] = {B, AS2, AD},
                  is[3] = {B, AS1, AT};
    pto_tensor *q = pto_input(p, "q", PTO_F32, 4, qs);
    pto_tensor *kv = pto_input(p, "kv", PTO_F32, 3, ks);
    pto_tensor *ix = pto_input(p, "indices", PTO_I32, 3, is);
    pto_tensor *lse = NULL;
    ap.dynamic = PTO_ATTENTION_DYN_B | PTO_ATTENTION_DYN_S2;
    cr_expect_null(pto_attention(p, q, kv, ix, ADV, &ap, &lse));
    expect_refused(p, PTO_EINVAL, "params flag S2 dynamic", "axis 1 of kv",
                   "f32[B<=2,200,24]");
  }
  /* causal over a slice of a dynamic S1: its valid length is not the dim's */
  {
    pto_program *p = pto_program_new("sliced");
    const int64_t S1 = pto_dim_dynamic(p, "S1", 2 * AS1);
    const int64_t qs[4] = {AB, S1, AH, AD}, ks[3] = {AB, AS2, AD},
                  is[3] = {AB, S1, AT};
    pto_tensor *q = pto_input(p, "q", PTO_F32, 4, qs);
    pto_tensor *kv = pto_input(p, "kv", PTO_F32, 3, ks);
    pto_tensor *ix = pto_input(p, "indices", PTO_I32, 3, is);
    pto_tensor *qh = pto_slice(p, q, (const int64_t[]){0, 0, 0, 0},
                               (const int64_t[]){AB, AS1, AH, AD});
    pto_tensor *ih = pto_slice(p, ix, (const int64_t[]){0, 0, 0},
                               (const int64_t[]){AB, AS1, AT});
    pto_tensor *lse = NULL;
    ap = attention_prm(1, 0);
    cr_expect_null(pto_attention(p, qh, kv, ih, ADV, &ap, &lse));
    expect_refused(p, PTO_ENOTSUP, "attention: axis 1 of q", "dim 'S1'",
                   "causal mask");
  }
}

Test(kernels, dynamic_operator_bound_checkers_refuse_sizes_past_the_layout,
     .timeout = 60) {
  const pto_indexer_params ip =
      indexer_prm(PTO_MASK_CAUSAL, PTO_INDEXER_DYN_ALL);
  const pto_attention_params ap = attention_prm(1, PTO_ATTENTION_DYN_ALL);
  static io b;
  static aio a;
  char msg[512];
  pto_indexer_dims d = IMAX;
  d.s2 = S2M + 1;
  cr_expect_eq(
      pto_indexer_ref_bound(&d, &IMAX, &ip, b.q, b.k, b.w, 0, 1, b.idx, b.val),
      PTO_EINVAL);
  cr_expect_eq(pto_indexer_check_bound(&d, &IMAX, &ip, b.q, b.k, b.w, b.idx,
                                       b.val, 0, 1, 0, msg, sizeof msg),
               -1);
  cr_expect(strstr(msg, "s2 301") && strstr(msg, "do not fit"), "'%s'", msg);
  d = IMAX;
  d.h = H + 1;
  cr_expect_eq(pto_indexer_check_bound(&d, &IMAX, &ip, b.q, b.k, b.w, b.idx,
                                       b.val, 0, 1, 0, msg, sizeof msg),
               -1);
  cr_expect(strstr(msg, "h and d equal"), "'%s'", msg);
  d = IMAX;
  d.s1 = 3;
  cr_expect_eq(pto_indexer_check_bound(&d, &IMAX, &ip, b.q, b.k, b.w, b.idx,
                                       b.val, 0, 7, 0, msg, sizeof msg),
               -1);
  cr_expect(strstr(msg, "rows [0, 7)") && strstr(msg, "the 6 of B*S1"), "'%s'",
            msg);
  pto_attention_dims ad = AMAX;
  ad.b = AB + 1;
  cr_expect_eq(pto_attention_ref_bound(&ad, &AMAX, &ap, a.q, a.kv, a.ix, 0, 1,
                                       a.out, a.lse),
               PTO_EINVAL);
  cr_expect_eq(pto_attention_check_bound(&ad, &AMAX, &ap, a.q, a.kv, a.ix,
                                         a.out, a.lse, 0, 1, msg, sizeof msg),
               -1);
  cr_expect(strstr(msg, "b 3") && strstr(msg, "do not fit"), "'%s'", msg);
  ad = AMAX;
  ad.topk = AT - 1;
  cr_expect_eq(pto_attention_check_bound(&ad, &AMAX, &ap, a.q, a.kv, a.ix,
                                         a.out, a.lse, 0, 1, msg, sizeof msg),
               -1);
  cr_expect(strstr(msg, "topk 36") && strstr(msg, "the rest equal"), "'%s'",
            msg);
}
