/* partitioner: incremental top-k (core/tiling_topk.c): topk and
 * topk_masked over tiles of every shape give the evaluator's values and
 * indices exactly, fuse with their producer, and select and merge block
 * by block without a unit holding a whole row. */
#include <criterion/criterion.h>

#include "core/exe.h"
#include "pto/pto.h"
#include "tests/partitioner_test.h"

/* ---- incremental top-k (core/tiling_topk.c) ----------------------------- */

/* Scores with ties (a few levels), NaN, +-0, +-inf; masked: many -inf and
 * some rows wholly -inf (no entry left). */
static void topk_scores(float *x, int64_t rows, int64_t n, unsigned seed,
                        int masked) {
  srand(seed);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < n; c++) {
      float v = (float)(rand() % 7) - 3.0f; /* ties */
      int u = rand() % 64;
      if (u < 24)
        v = (float)rand() / (float)RAND_MAX * 8 - 4;
      else if (u == 24)
        v = NAN;
      else if (u == 25)
        v = u % 2 ? INFINITY : -0.0f;
      if (masked && (r % 5 == 3 || rand() % 3 == 0))
        v = -INFINITY;
      x[r * n + c] = v;
    }
}

/* topk (or topk_masked) of x [b, rows, n] under vector tile {tr, tc}:
 * compiled and run serially and on the runtime, it must give the
 * evaluator's values and indices exactly. */
static void check_topk(int64_t b, int64_t rows, int64_t n, int64_t k,
                       int masked, uint32_t tr, uint32_t tc, unsigned seed) {
  char what[128];
  snprintf(what, sizeof what, "topk%s [%ld,%ld,%ld] k %ld tile %ux%u",
           masked ? "_masked" : "", (long)b, (long)rows, (long)n, (long)k, tr,
           tc);
  pto_program *p = pto_program_new("topk");
  const int64_t shape[3] = {b, rows, n};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, shape), *idx = NULL;
  pto_program_set_vec_tile(p, tr, tc);
  pto_tensor *v = masked ? pto_topk_masked(p, x, k, &idx)
                         : pto_topk(p, x, k, &idx);
  pto_output(p, v, "values");
  pto_output(p, idx, "indices");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  const int64_t m = b * rows;
  float *in = malloc((size_t)(m * n) * sizeof *in);
  float *wv = malloc((size_t)(m * k) * 4), *gv = malloc((size_t)(m * k) * 4);
  int32_t *wi = malloc((size_t)(m * k) * 4), *gi = malloc((size_t)(m * k) * 4);
  cr_assert(in && wv && gv && wi && gi);
  topk_scores(in, m, n, seed, masked);
  const void *ins[1] = {in};
  void *want[2] = {wv, wi}, *got[2] = {gv, gi};
  cr_assert_eq(pto_program_eval(p, ins, want), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s: %s", what,
               pto_program_error(p));
  for (int run = 0; run < 3; run++) {
    memset(gv, 0x5a, (size_t)(m * k) * 4);
    memset(gi, 0x5a, (size_t)(m * k) * 4);
    pto_runtime *rt = NULL;
    if (run == 0) {
      cr_assert_eq(pto_executable_run_serial(e, ins, got), PTO_OK, "%s: %s",
                   what, pto_executable_error(e));
    } else {
      pto_machine mc;
      cr_assert_eq(pto_machine_host(&mc), PTO_OK);
      mc.shared = 1;
      mc.workers[PTO_CORE_CUBE] = mc.workers[PTO_CORE_VECTOR] = (uint32_t)run;
      pto_runtime_params prm = pto_runtime_params_default();
      prm.machine = &mc;
      cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK);
      cr_assert_eq(pto_runtime_run(rt, e, ins, got), PTO_OK, "%s: %s", what,
                   pto_executable_error(e));
      pto_runtime_free(rt);
    }
    for (int64_t j = 0; j < m * k; j++) {
      int same =
          memcmp(&gv[j], &wv[j], 4) == 0 || (isnan(gv[j]) && isnan(wv[j]));
      cr_assert(same && gi[j] == wi[j],
                "%s, run %d: row %ld slot %ld is (%.9g, %d), the evaluator "
                "gives (%.9g, %d)",
                what, run, (long)(j / k), (long)(j % k), gv[j], gi[j], wv[j],
                wi[j]);
    }
  }
  pto_executable_free(e);
  pto_program_free(p);
  free(in);
  free(wv);
  free(gv);
  free(wi);
  free(gi);
}

Test(partitioner, topk_tiles_match_eval, .timeout = 120) {
  /* tiles that divide 96 and that do not, blocks shorter than k, whole
   * rows, one row per tile, k from 1 to the whole row */
  static const uint32_t tl[][2] = {{16, 32}, {13, 37}, {1, 8}, {4, 96},
                                   {0, 0},   {5, 5},   {48, 20}};
  static const int64_t ks[] = {1, 20, 37, 96};
  for (size_t i = 0; i < sizeof tl / sizeof tl[0]; i++)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
      check_topk(1, 48, 96, ks[j], 0, tl[i][0], tl[i][1],
                 (unsigned)(i * 7 + j));
  /* rank 3, several levels of merges (16 blocks -> 4 -> 1, 40 -> ...) */
  check_topk(2, 5, 1000, 250, 0, 3, 100, 1);
  check_topk(2, 5, 1000, 7, 0, 2, 64, 2);
  check_topk(1, 3, 1000, 30, 0, 3, 25, 3);
  check_topk(1, 9, 5000, 300, 0, 4, 512, 4);
}

Test(partitioner, topk_masked_tiles_match_eval, .timeout = 120) {
  static const uint32_t tl[][2] = {{16, 32}, {13, 37}, {1, 8}, {0, 0}, {5, 7}};
  /* k past the row (every row padded), past a block, equal to the row */
  static const int64_t ks[] = {1, 20, 96, 130};
  for (size_t i = 0; i < sizeof tl / sizeof tl[0]; i++)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
      check_topk(1, 48, 96, ks[j], 1, tl[i][0], tl[i][1],
                 (unsigned)(i * 5 + j + 100));
  check_topk(2, 5, 1000, 250, 1, 3, 100, 5);
  check_topk(1, 7, 300, 700, 1, 2, 64, 6);
}

/* A producer whose tiles are the selection's blocks fuses with it (the
 * score never reaches global memory), and the result is the evaluator's. */
Test(partitioner, topk_fuses_with_its_producer, .timeout = 60) {
  pto_program *p = pto_program_new("topk");
  const int64_t shape[2] = {12, 1000};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape), *idx = NULL;
  pto_program_set_vec_tile(p, 4, 128);
  pto_tensor *v = pto_topk_masked(p, pto_muls(p, x, -2.0), 50, &idx);
  pto_output(p, v, "values");
  pto_output(p, idx, "indices");
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  int fused = 0;
  for (uint32_t t = 0; t < pto_executable_num_tasks(e); t++) {
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    fused |= strstr(name, "TMULS") && strstr(name, "TTOPK");
  }
  cr_expect(fused, "no program holds both TMULS and TTOPK");
  float *in = malloc(12 * 1000 * sizeof *in), gv[12 * 50], wv[12 * 50];
  int32_t gi[12 * 50], wi[12 * 50];
  topk_scores(in, 12, 1000, 77, 1);
  const void *ins[1] = {in};
  void *got[2] = {gv, gi}, *want[2] = {wv, wi};
  cr_assert_eq(pto_program_eval(p, ins, want), PTO_OK);
  cr_assert_eq(pto_executable_run_serial(e, ins, got), PTO_OK, "%s",
               pto_executable_error(e));
  for (int j = 0; j < 12 * 50; j++)
    cr_assert((memcmp(&gv[j], &wv[j], 4) == 0 ||
               (isnan(gv[j]) && isnan(wv[j]))) &&
                  gi[j] == wi[j],
              "slot %d: (%g, %d) vs (%g, %d)", j, gv[j], gi[j], wv[j], wi[j]);
  free(in);
  pto_executable_free(e);
  pto_program_free(p);
}

/* No unit holds a whole row: the selection reads blocks of the tile's
 * columns and a merge 4 runs of candidates; each first-level merge waits
 * for exactly its own 4 blocks, so merges start before a row is done; and
 * the units of a level are one program. */
Test(partitioner, topk_is_incremental, .timeout = 60) {
  pto_program *p = pto_program_new("topk");
  const int64_t shape[2] = {16, 4096};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape), *idx = NULL;
  pto_program_set_vec_tile(p, 4, 256);
  pto_tensor *v = pto_topk(p, x, 64, &idx);
  pto_output(p, v, "values");
  pto_output(p, idx, "indices");
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  const pto_tgraph *tg = &e->tg;
  uint32_t selects = 0, merges = 0;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (in->op == PTO_OP_TLOAD)
      cr_expect_leq(in->g.cols, 256, "a load of %ld columns", (long)in->g.cols);
    selects += in->op == PTO_OP_TTOPK;
    merges += in->op == PTO_OP_TMRGTOPK;
    cr_expect(in->op != PTO_OP_TSORT32 && in->op != PTO_OP_TMRGSORT);
  }
  /* 4 row tiles x 16 blocks; merges 16 -> 4 -> 1 per row tile of 2 rows
   * (4 runs of 64 with their indices, and 64 kept, take 2560 bytes a row;
   * a select 256 x 4 + 64 x 8 = 1536, 4 rows of it 6144) */
  cr_expect_eq(selects, 64);
  cr_expect_eq(merges, 8 * (4 + 1));
  cr_expect_eq(tg->n_scratch, 4, "values and indices of 2 levels");
  /* indices relative to each unit's columns: one program per level */
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_expect_eq(st.programs, 3, "selection, first and last merge");
  /* predecessors of each task, from the successor lists */
  const uint32_t nt = pto_executable_num_tasks(e);
  uint32_t *npred = calloc(nt, sizeof *npred);
  uint32_t *from_select = calloc(nt, sizeof *from_select);
  for (uint32_t t = 0; t < nt; t++) {
    const uint32_t *succ;
    const uint32_t ns = pto_executable_task_succ(e, t, &succ);
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    for (uint32_t j = 0; j < ns; j++) {
      npred[succ[j]]++;
      from_select[succ[j]] += strstr(name, "TTOPK") != NULL;
    }
  }
  uint32_t first_level = 0;
  for (uint32_t t = 0; t < nt; t++) {
    const char *name =
        pto_executable_program_name(e, pto_executable_task_program(e, t));
    if (!strstr(name, "TMRGTOPK"))
      continue;
    cr_expect_eq(npred[t], 4, "merge task %u waits for %u tasks", t, npred[t]);
    first_level += from_select[t] == 4;
  }
  cr_expect_eq(first_level, 32, "32 merges of 4 blocks each");
  free(npred);
  free(from_select);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}
