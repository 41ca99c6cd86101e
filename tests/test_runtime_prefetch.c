/* scheduler: what the executor prefetches. A matmul whose K is split into
 * slices is told the windows of its next slice's operands; while an
 * instance computes, the executor prefetches every line the next
 * instance (or the next task it is told of) will load, for plain loads
 * and for loads that take the row max, exps and sums or a whole softmax.
 * Every test has a timeout. */
#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "scheduler/exec.h"

/* A matmul whose K is split into slices learns the windows of the next
 * slice's operands (pto_targs.ahead) so it can prefetch them; the last
 * slice's matmul learns the next instance's first slice (here the same
 * task's again), or none when no next instance is known; the loads and the
 * store learn none. */
Test(scheduler, matmul_is_told_the_next_slices_operands, .timeout = 30) {
  enum { M = 24, N = 32, K = 256, KS = 64 };
  pto_program *p = pto_program_new("ahead");
  const int64_t sa[2] = {M, K}, sb[2] = {K, N};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, sa);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, sb);
  pto_program_set_cube_tile(p, M, N, KS);
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  static float A[M * K], B[K * N], C[M * N];
  const void *in[] = {A, B};
  void *out[] = {C};
  unsigned char *base[8];
  cr_assert_lt(e->n_storages, 9);
  cr_assert_eq(pto__bind(e, NULL, in, out, base), PTO_OK);
  cr_assert_eq(e->n_tasks, 1);
  const pto_cprog *pr = &e->progs[e->tasks[0].prog];
  const pto_targ *args = e->args + e->tasks[0].args;
  uint32_t slice = 0;
  for (uint32_t i = 0; i < pr->n_insts; i++) {
    pto_gview ahead[PTO_AHEAD_MAX];
    uint32_t n = pto__loads_ahead(pr, i, args, pr, args, base, ahead);
    int mm = pr->insts[i].op == PTO_OP_TMATMUL ||
             pr->insts[i].op == PTO_OP_TMATMUL_ACC;
    if (mm && slice == K / KS - 1)
      cr_assert_eq(pto__loads_ahead(pr, i, args, NULL, NULL, base, ahead), 0,
                   "the last matmul is told windows of no next instance");
    if (!mm) {
      cr_assert_eq(n, 0, "instruction %u (%s) is told %u windows", i,
                   pto__insn_name(pr->insts[i].op), n);
      continue;
    }
    slice++;
    const uint32_t next = slice % (K / KS); /* the next instance's first */
    cr_assert_eq(n, 2, "matmul of slice %u is told %u windows", slice - 1, n);
    /* A's columns and B's rows of the next slice, in either order */
    for (uint32_t w = 0; w < 2; w++) {
      const pto_gview *g = &ahead[w];
      int is_a = g->base == (void *)(A + next * KS);
      cr_assert(is_a || g->base == (void *)(B + next * KS * N),
                "window %u of slice %u is neither operand's next slice", w,
                slice - 1);
      cr_assert_eq(g->rows, is_a ? M : KS);
      cr_assert_eq(g->cols, is_a ? KS : N);
      cr_assert_eq(g->row_stride, is_a ? K : N);
      cr_assert_eq(g->col_stride, 1);
    }
    cr_assert(ahead[0].base != ahead[1].base);
  }
  cr_assert_eq(slice, K / KS, "%u matmuls", slice);
  pto_executable_free(e);
  pto_program_free(p);
}

/* Lines [p, p + n) touches, counted as the prefetcher must: per row. */
static uint64_t lines_of(uintptr_t p, uintptr_t n) {
  return (p + n - 1) / 64 - p / 64 + 1;
}

/* While an instance computes, the executor prefetches the windows the next
 * instance of its task (or, on its last instance, the next task it is told
 * of) will TLOAD: every line of every row of those windows, rows 148 bytes
 * long so they start at every offset within a line (of a row-ahead load's
 * window, the first row only). Nothing is prefetched for the first
 * instance run, nor after the last. With kind 1 the program
 * is x - rowmax(x), whose load is a TLOADROWMAX, with kind 2 the row sums
 * of exp(x - rowmax(x)), one TLOADEXPDIFSUM, with kind 3 softmax(x), one
 * TLOADSOFTMAXSTORE (first rows only, as kind 2's). */
static void prefetch_case(int kind) {
  static const int load_op[] = {PTO_OP_TLOAD, PTO_OP_TLOADROWMAX,
                                PTO_OP_TLOADEXPDIFSUM,
                                PTO_OP_TLOADSOFTMAXSTORE};
  enum { R = 24, C = 37, TR = 3 };
  pto_program *p = pto_program_new("prefetch");
  const int64_t s[2] = {R, C};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, TR, C);
  pto_tensor *dif =
      kind == 1 || kind == 2 ? pto_sub(p, x, pto_rowmax(p, x)) : NULL;
  pto_output(p,
             kind == 3   ? pto_softmax(p, x)
             : kind == 2 ? pto_rowsum(p, pto_exp(p, dif))
             : kind == 1 ? dif
                         : pto_muls(p, x, 2.0),
             "y");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 2);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(e->n_tasks, R / TR / 2, "%u tasks (%s)", e->n_tasks,
               pto_executable_program_name(e, 0));
  /* aligned_alloc wants a multiple of the alignment */
  float *xs = aligned_alloc(64, (R * C * sizeof(float) + 63) & ~(size_t)63),
        y[R * C];
  for (int i = 0; i < R * C; i++)
    xs[i] = (float)i;
  const void *in[] = {xs};
  void *out[] = {y};
  unsigned char *base[8];
  cr_assert(e->n_storages <= 8);
  cr_assert_eq(pto__bind(e, NULL, in, out, base), PTO_OK);
  /* rows of an instance's window prefetched: a row-ahead load
   * (PTO_IF_ROW_AHEAD) fetches the rest itself, so the plan holds only its
   * first */
  const int pf_rows = kind >= 2 ? 1 : TR;
  uint64_t all = 0;
  for (int r = 0; r < R; r++)
    if (r % TR < pf_rows)
      all += lines_of((uintptr_t)(xs + r * C), C * sizeof(float));
  for (int hinted = 0; hinted < 2; hinted++) {
    pto_scratch sc;
    cr_assert_eq(pto__scratch_init(&sc, e), PTO_OK);
    memset(y, 0, sizeof y);
    uint64_t want = all;
    for (uint32_t t = 0; t < e->n_tasks; t++) {
      /* not prefetched: the first instance of each task run unhinted */
      if (t == 0 || !hinted) {
        const pto_cprog *pr = &e->progs[e->tasks[t].prog];
        int64_t off = -1;
        for (uint32_t k = 0; k < pr->n_insts; k++)
          if (pr->insts[k].op == load_op[kind])
            off = e->args[e->tasks[t].args + (uint32_t)pr->insts[k].slot].offset;
        cr_assert(off >= 0 && off % C == 0);
        for (int64_t r = off / C; r < off / C + pf_rows; r++)
          want -= lines_of((uintptr_t)(xs + r * C), C * sizeof(float));
      }
      pto_error err = {0};
      uint32_t next = hinted && t + 1 < e->n_tasks ? t + 1 : PTO_NO_TASK;
      cr_assert_eq(pto__task_exec(e, t, next, &sc, base, NULL, NULL, &err), PTO_OK);
    }
    cr_expect_eq(sc.prefetched, want, "hinted %d: %llu lines, want %llu",
                 hinted, (unsigned long long)sc.prefetched,
                 (unsigned long long)want);
    /* rows ascend by 1: each row's sum of exp(x - max) is that of
     * exp(c - (C - 1)) */
    double sum = 0;
    for (int j = 0; j < C; j++)
      sum += exp((double)(j - (C - 1)));
    if (kind == 2)
      for (int r = 0; r < R; r++)
        cr_assert(fabs(y[r] - sum) <= 1e-5 * sum, "row %d: %.9g, want %.9g", r,
                  (double)y[r], sum);
    else if (kind == 3) { /* each row: exp(c - (C - 1)) / that sum */
      for (int i = 0; i < R * C; i++) {
        const double w = exp((double)(i % C - (C - 1))) / sum;
        cr_assert(fabs(y[i] - w) <= 1e-5 * w, "y[%d] = %.9g, want %.9g", i,
                  (double)y[i], w);
      }
    } else
      for (int i = 0; i < R * C; i++) /* rows ascend: the max is the last */
        cr_assert_eq(y[i], kind ? xs[i] - xs[i / C * C + C - 1] : 2.0f * xs[i]);
    pto__scratch_free(&sc);
  }
  free(xs);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

Test(scheduler, executor_prefetches_the_next_instance_loads, .timeout = 60) {
  prefetch_case(0);
}

Test(scheduler, executor_prefetches_loads_that_take_the_row_max,
     .timeout = 60) {
  prefetch_case(1);
}

Test(scheduler, executor_prefetches_loads_that_take_exps_and_sums,
     .timeout = 60) {
  prefetch_case(2);
}

Test(scheduler, executor_prefetches_loads_of_a_whole_softmax, .timeout = 60) {
  prefetch_case(3);
}
