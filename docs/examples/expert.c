/* docs/examples/expert.c: a row softmax written in expert mode, as a tile
 * program of PTO instructions on tiles it declares, mixed into a tensor
 * program between two tensor ops; compiled, run on every core, checked
 * against the reference evaluator; then a program with a window past its
 * tensor, refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pto/pto.h>

enum { M = 512, N = 256, RB = 16 };

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "%s: %s\n", what, msg);
  return 1;
}

/* softmax over the rows of an [M, N] input, RB rows a block, every block
 * the same instructions on its own rows */
static pto_tprog *row_softmax(int64_t blocks) {
  const int64_t shape[2] = {M, N}, grid[1] = {blocks};
  pto_tprog *tp = pto_tprog_new("row_softmax", 1, grid);
  int x = pto_tprog_input(tp, "x", PTO_F32, 2, shape);
  int y = pto_tprog_output(tp, "y", PTO_F32, 2, shape);
  int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, RB, N, 1);
  int m = pto_tprog_tile(tp, "m", PTO_MEM_UB, PTO_F32, RB, 1, 1);
  /* the window of block b starts at row RB * b */
  const pto_tp_expr at[2] = {pto_tp_var(pto_tprog_block(tp, 0), RB),
                             pto_tp_const(0)};
  const int tm[2] = {t, m};
  pto_tprog_load(tp, t, x, at);
  pto_tprog_op(tp, "TROWMAX", 1, &m, 1, &t, NULL);
  /* t = exp(t - m) and m = its row sums, in one pass */
  pto_tprog_op(tp, "TROWEXPANDEXPDIFSUM", 2, tm, 2, tm, NULL);
  pto_tprog_op(tp, "TROWEXPANDDIV", 1, &t, 2, tm, NULL);
  pto_tprog_store(tp, t, y, at);
  return tp;
}

int main(void) {
  /* 1. a tensor program: 2 x, the tile program, + 1 */
  pto_program *p = pto_program_new("expert");
  const int64_t xs[2] = {M, N};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs), *y;
  pto_tensor *x2 = pto_muls(p, x, 2.0);
  pto_tprog *tp = row_softmax(M / RB);
  if (pto_tprog_status(tp) != PTO_OK)
    return fail("tile program", pto_tprog_error(tp));
  pto_program_push_label(p, "softmax"); /* names its tasks in traces */
  pto_tile_program(p, tp, 1, &x2, &y);
  pto_program_pop_label(p);
  pto_tprog_free(tp); /* the program keeps a copy */
  pto_output(p, pto_adds(p, y, 1.0), "z");
  if (pto_program_status(p) != PTO_OK)
    return fail("build", pto_program_error(p));

  /* 2. compile, run on every core, check against the evaluator */
  float *xv = pto_buffer_alloc(sizeof(float) * M * N),
        *zv = pto_buffer_alloc(sizeof(float) * M * N),
        *ref = pto_buffer_alloc(sizeof(float) * M * N);
  if (!xv || !zv || !ref)
    return fail("alloc", "out of memory");
  for (int i = 0; i < M * N; i++)
    xv[i] = (float)(i % 13) / 4 - 1.5f;
  const void *in[] = {xv};
  void *out[] = {zv}, *ref_out[] = {ref};
  pto_executable *e;
  if (pto_compile(p, NULL, &e) != PTO_OK)
    return fail("compile", pto_program_error(p));
  pto_runtime *rt;
  if (pto_runtime_new(NULL, &rt) != PTO_OK)
    return fail("runtime", pto_runtime_error(NULL));
  if (pto_runtime_run(rt, e, in, out) != PTO_OK)
    return fail("run", pto_executable_error(e));
  if (pto_program_eval(p, in, ref_out) != PTO_OK)
    return fail("eval", pto_program_error(p));
  double worst = 0, row = 0;
  for (int i = 0; i < M * N; i++)
    worst = fmax(worst, fabs((double)zv[i] - ref[i]));
  for (int c = 0; c < N; c++)
    row += zv[c] - 1.0;
  printf("row 0 sums to %.4f; off the evaluator by %s\n", row,
         worst < 1e-6 ? "< 1e-6" : "more than 1e-6");

  /* 3. one block too many: its window leaves x, refused when recorded */
  pto_program *bad = pto_program_new("bad");
  pto_tensor *u = pto_input(bad, "x", PTO_F32, 2, xs), *v;
  pto_tprog *over = row_softmax(M / RB + 1);
  pto_tile_program(bad, over, 1, &u, &v);
  printf("refused: %s\n", pto_program_error(bad));
  pto_tprog_free(over);
  pto_program_free(bad);

  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  free(xv);
  free(zv);
  free(ref);
  return worst < 1e-6 ? 0 : 1;
}
