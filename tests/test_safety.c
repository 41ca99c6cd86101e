/* partitioner: programs that once compiled to wrong answers, to a task graph
 * with a cycle, to a compile that never returned, or to one task for many
 * workers (issue 14). Each runs through the reference evaluator, the serial
 * executor and runtimes of 1 to 3 workers (shared and dedicated, every
 * policy), and every output must agree. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exe.h"
#include "pto/pto.h"

/* Input values k/16 for k in [-16, 16]: exact in bf16 and f16 as in f32. */
static float input_value(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return (float)((int)((*seed >> 16) % 33) - 16) / 16.0f;
}

static uint16_t to_half(pto_dtype dt, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if (dt == PTO_BF16)
    return (uint16_t)(u >> 16); /* exact: few mantissa bits */
  if (v == 0)
    return (uint16_t)((u >> 16) & 0x8000u);
  uint32_t sign = (u >> 16) & 0x8000u;
  int32_t e = (int32_t)((u >> 23) & 0xffu) - 127 + 15;
  return (uint16_t)(sign | (uint32_t)e << 10 | ((u >> 13) & 0x3ffu));
}

typedef struct bufs {
  int n_in, n_out;
  void *in[8], *want[8], *got[8];
  size_t out_bytes[8];
} bufs;

static void bufs_free(bufs *b) {
  for (int i = 0; i < b->n_in; i++)
    free(b->in[i]);
  for (int i = 0; i < b->n_out; i++) {
    free(b->want[i]);
    free(b->got[i]);
  }
}

/* Inputs filled, and the evaluator's outputs in want. */
static void bufs_init(bufs *b, pto_program *p) {
  memset(b, 0, sizeof *b);
  b->n_in = pto_program_num_inputs(p);
  b->n_out = pto_program_num_outputs(p);
  cr_assert(b->n_in <= 8 && b->n_out <= 8);
  unsigned seed = 7;
  for (int i = 0; i < b->n_in; i++) {
    const pto_tensor *t = pto_program_input(p, i);
    pto_dtype dt = pto_tensor_dtype(t);
    int64_t n = pto_tensor_numel(t);
    b->in[i] = malloc((size_t)n * pto_dtype_size(dt));
    cr_assert_not_null(b->in[i]);
    for (int64_t k = 0; k < n; k++) {
      float v = input_value(&seed);
      if (dt == PTO_F32)
        ((float *)b->in[i])[k] = v;
      else if (dt == PTO_I32)
        ((int32_t *)b->in[i])[k] = (int32_t)(v * 16);
      else
        ((uint16_t *)b->in[i])[k] = to_half(dt, v);
    }
  }
  for (int j = 0; j < b->n_out; j++) {
    const pto_tensor *t = pto_program_output(p, j);
    b->out_bytes[j] =
        (size_t)pto_tensor_numel(t) * pto_dtype_size(pto_tensor_dtype(t));
    b->want[j] = malloc(b->out_bytes[j]);
    b->got[j] = malloc(b->out_bytes[j]);
    cr_assert(b->want[j] && b->got[j]);
  }
  cr_assert_eq(pto_program_eval(p, (const void *const *)b->in, b->want),
               PTO_OK, "%s", pto_program_error(p));
}

/* got equals want: f32 within tol * (1 + |want|), anything else exactly. */
static void expect_outputs(pto_program *p, bufs *b, const char *where,
                           double tol) {
  for (int j = 0; j < b->n_out; j++) {
    const pto_tensor *t = pto_program_output(p, j);
    if (pto_tensor_dtype(t) != PTO_F32) {
      cr_assert(memcmp(b->got[j], b->want[j], b->out_bytes[j]) == 0,
                "%s: %s, output %d differs", pto_program_name(p), where, j);
      continue;
    }
    const float *g = b->got[j], *w = b->want[j];
    for (size_t k = 0; k < b->out_bytes[j] / 4; k++)
      cr_assert(fabs((double)g[k] - w[k]) <= tol * (1 + fabs((double)w[k])),
                "%s: %s, output '%s'[%zu] is %.9g, the evaluator's %.9g",
                pto_program_name(p), where, pto_tensor_name(t), k, g[k],
                w[k]);
  }
}

static void poison(bufs *b) {
  for (int j = 0; j < b->n_out; j++)
    memset(b->got[j], 0xa5, b->out_bytes[j]);
}

/* Runs e serially and on runtimes of 1, 2 and 3 workers, shared and with
 * dedicated cube and vector workers, over the policies, and expects the
 * evaluator's outputs from every run. */
static void expect_eval_everywhere(pto_program *p, pto_executable *e,
                                   double tol) {
  bufs b;
  bufs_init(&b, p);
  poison(&b);
  cr_assert_eq(pto_executable_run_serial(e, (const void *const *)b.in, b.got),
               PTO_OK, "%s", pto_executable_error(e));
  expect_outputs(p, &b, "serial", tol);
  static const struct {
    int shared;
    uint32_t cube, vector;
  } rts[] = {{1, 1, 1}, {1, 2, 2}, {0, 1, 1}, {1, 3, 3}, {0, 1, 2}};
  for (size_t r = 0; r < sizeof rts / sizeof rts[0]; r++) {
    pto_machine m;
    cr_assert_eq(pto_machine_host(&m), PTO_OK);
    m.shared = rts[r].shared;
    m.workers[PTO_CORE_CUBE] = rts[r].cube;
    m.workers[PTO_CORE_VECTOR] = rts[r].vector;
    pto_runtime_params prm = pto_runtime_params_default();
    prm.machine = &m;
    prm.policy = (pto_policy)(r % PTO_POLICY_COUNT);
    prm.spin_us = 20;
    prm.yield_us = 100;
    pto_runtime *rt = NULL;
    cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK, "%s",
                 pto_runtime_error(NULL));
    char where[96];
    snprintf(where, sizeof where, "runtime of %u %s workers, %s",
             pto_runtime_num_workers(rt), m.shared ? "shared" : "dedicated",
             pto_policy_name(prm.policy));
    poison(&b);
    cr_assert_eq(pto_runtime_run(rt, e, (const void *const *)b.in, b.got),
                 PTO_OK, "%s: %s", where, pto_executable_error(e));
    expect_outputs(p, &b, where, tol);
    pto_runtime_free(rt);
  }
  bufs_free(&b);
}

/* The configs every program here compiles under: the host with default
 * knobs, the Ascend model, no fusion, and l1_reuse 2 with nbuffer 3. */
#define N_CONFIGS 4
static pto_config *config_n(int i) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  if (i == 1 || i == 3) {
    pto_machine m = pto_machine_ascend();
    cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  }
  if (i == 2)
    cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  if (i == 3) {
    cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, 2), PTO_OK);
    cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 3), PTO_OK);
  }
  return c;
}

/* p under every config: compiles, and gives the evaluator's values. */
static void expect_right_everywhere(pto_program *p, double tol) {
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  for (int i = 0; i < N_CONFIGS; i++) {
    pto_config *c = config_n(i);
    pto_executable *e = NULL;
    cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s, config %d: %s",
                 pto_program_name(p), i, pto_program_error(p));
    expect_eval_everywhere(p, e, tol);
    pto_executable_free(e);
    pto_config_free(c);
  }
}

/* Matmul sums of up to 256 products of k/16 values: exact in f32 unless the
 * tables reorder them, which stays far below this. */
#define MM_TOL 1e-5

/* ---- 1. an accumulator whose window is loaded twice in one subgraph ----- */

static pto_program *acc_is_operand(int64_t n, uint32_t tm, uint32_t tn,
                                   uint32_t tk) {
  char name[64];
  snprintf(name, sizeof name, "acc_is_a_%lld_tile_%ux%ux%u", (long long)n, tm,
           tn, tk);
  pto_program *p = pto_program_new(name);
  int64_t sa[] = {5, n}, sb[] = {n, n};
  pto_tensor *A = pto_input(p, "A", PTO_F32, 2, sa);
  pto_tensor *B = pto_input(p, "B", PTO_F32, 2, sb);
  pto_program_set_cube_tile(p, tm, tn, tk);
  pto_output(p, pto_matmul_acc(p, A, A, B, 0), "out");
  return p;
}

Test(partitioner, accumulator_that_is_also_the_left_operand, .timeout = 300) {
  /* the program, then other sizes and tiles that split K and N */
  const struct {
    int64_t n;
    uint32_t m, nt, k;
  } cases[] = {{64, 0, 0, 0},   {16, 0, 0, 0},   {256, 0, 64, 128},
               {64, 5, 16, 16}, {64, 4, 32, 32}, {256, 5, 256, 32}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_program *p =
        acc_is_operand(cases[i].n, cases[i].m, cases[i].nt, cases[i].k);
    expect_right_everywhere(p, MM_TOL);
    pto_program_free(p);
  }
}

/* The accumulator is an operand through a view: t + t^T w (at [1, 1] the
 * transposed window is the accumulator's own). */
Test(partitioner, accumulator_read_as_a_transposed_operand, .timeout = 300) {
  const uint32_t cube[][3] = {{0, 0, 0}, {16, 16, 16}, {48, 16, 48}};
  for (size_t i = 0; i < 4; i++) {
    pto_program *p = pto_program_new("acc_transposed");
    int64_t n = i < 3 ? 48 : 1, s[] = {n, n};
    pto_tensor *t = pto_input(p, "t", PTO_F32, 2, s);
    pto_tensor *w = pto_input(p, "w", PTO_F32, 2, s);
    const uint32_t *ct = cube[i < 3 ? i : 0];
    pto_program_set_cube_tile(p, ct[0], ct[1], ct[2]);
    pto_output(p, pto_matmul_acc(p, t, pto_transpose(p, t, 0, 1), w, 0), "y");
    pto_output(p, pto_matmul_acc(p, t, t, w, PTO_MATMUL_TRANS_A), "z");
    expect_right_everywhere(p, MM_TOL);
    pto_program_free(p);
  }
}

/* The accumulator is a slice of the left operand: slice(x) + x y. */
Test(partitioner, accumulator_is_a_slice_of_the_operand, .timeout = 300) {
  const uint32_t cube[][3] = {{0, 0, 0}, {32, 16, 16}, {8, 16, 16}};
  for (size_t i = 0; i < 3; i++) {
    pto_program *p = pto_program_new("acc_slice");
    int64_t sx[] = {32, 64}, sy[] = {64, 16};
    pto_tensor *x = pto_input(p, "x", PTO_F32, 2, sx);
    pto_tensor *y = pto_input(p, "y", PTO_F32, 2, sy);
    pto_program_set_cube_tile(p, cube[i][0], cube[i][1], cube[i][2]);
    pto_tensor *acc =
        pto_slice(p, x, (int64_t[]){0, 0}, (int64_t[]){32, 16});
    pto_output(p, pto_matmul_acc(p, acc, x, y, 0), "out");
    expect_right_everywhere(p, MM_TOL);
    pto_program_free(p);
  }
}

/* A matmul result fused into its consumers: the accumulator of one and an
 * operand of the same or another matmul in one subgraph. Every reader must
 * see y as it was computed. */
Test(partitioner, fused_accumulator_other_matmuls_read, .timeout = 300) {
  for (int variant = 0; variant < 3; variant++) {
    pto_program *p = pto_program_new("acc_fused");
    int64_t s[] = {32, 32};
    pto_tensor *x = pto_input(p, "x", PTO_F32, 2, s);
    pto_tensor *w = pto_input(p, "w", PTO_F32, 2, s);
    pto_tensor *v = pto_input(p, "v", PTO_F32, 2, s);
    if (variant == 2)
      pto_program_set_cube_tile(p, 16, 16, 16);
    pto_tensor *y = pto_matmul(p, x, w, 0);
    if (variant == 0) { /* y + y v */
      pto_output(p, pto_matmul_acc(p, y, y, v, 0), "z");
    } else { /* y + x v, then y w, then y as it is */
      pto_output(p, pto_matmul_acc(p, y, x, v, 0), "z1");
      pto_output(p, pto_matmul(p, y, w, 0), "z2");
      pto_output(p, pto_matmul_acc(p, y, y, y, 0), "z3");
      pto_output(p, y, "y");
    }
    expect_right_everywhere(p, 1e-4);
    pto_program_free(p);
  }
}

/* bf16 and f16 operands with an f32 accumulator their product also reads. */
Test(partitioner, accumulator_shared_with_bf16_and_f16_operands,
     .timeout = 300) {
  for (int half = 0; half < 2; half++) {
    pto_dtype dt = half ? PTO_F16 : PTO_BF16;
    pto_program *p = pto_program_new(half ? "acc_f16" : "acc_bf16");
    int64_t sx[] = {16, 64}, sw[] = {64, 64};
    pto_tensor *x = pto_input(p, "x", PTO_F32, 2, sx);
    pto_tensor *xh = pto_input(p, "xh", dt, 2, sx);
    pto_tensor *w = pto_input(p, "w", dt, 2, sw);
    /* x + x w, the accumulator also the f32 operand */
    pto_output(p, pto_matmul_acc(p, x, x, w, 0), "a");
    /* y = xh w fused into y + y w and y + xh w */
    pto_tensor *y = pto_matmul(p, xh, w, 0);
    pto_output(p, pto_matmul_acc(p, y, y, w, 0), "b");
    pto_output(p, pto_matmul_acc(p, y, xh, w, 0), "c");
    expect_right_everywhere(p, 1e-4);
    pto_program_free(p);
  }
}
