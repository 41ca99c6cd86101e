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
#include "partitioner/partition.h"
#include "pto/pto.h"
#include "tests/exe_test.h"

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
  cr_assert_eq(pto_program_eval(p, (const void *const *)b->in, b->want), PTO_OK,
               "%s", pto_program_error(p));
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
                pto_program_name(p), where, pto_tensor_name(t), k, g[k], w[k]);
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
    pto_tensor *acc = pto_slice(p, x, (int64_t[]){0, 0}, (int64_t[]){32, 16});
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

/* ---- 2. fusion and cycles between subgraphs ------------------------------ */

/* The program: fused by node edges alone it became two tasks, cube
 * {A, Z} and vector {R, S}, each waiting for the other. */
static pto_program *cube_vector_crossing(void) {
  pto_program *p = pto_program_new("cube_vector_crossing");
  int64_t s[] = {8, 8};
  pto_tensor *X = pto_input(p, "X", PTO_F32, 2, s);
  pto_tensor *A = pto_matmul(p, X, X, 0);            /* cube */
  pto_tensor *R = pto_exp(p, X);                     /* vector */
  pto_output(p, pto_matmul_acc(p, R, A, X, 0), "Z"); /* cube, reads R */
  pto_output(p, pto_add(p, R, A), "S");              /* vector, reads A */
  return p;
}

Test(partitioner, fusion_never_makes_tasks_wait_on_each_other, .timeout = 300) {
  pto_program *p = cube_vector_crossing();
  expect_right_everywhere(p, 1e-5);
  pto_program_free(p);
}

/* The executable is checked for a cycle as it is built; forced into one,
 * the check names the tasks and their ops. */
Test(partitioner, a_cyclic_task_graph_is_refused_naming_its_ops) {
  pto_program *p = cube_vector_crossing();
  pto_config *c = config_n(2); /* fuse 0: A, R, Z, S one task each */
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(pto__exe_check_acyclic(e), PTO_OK);
  /* a back edge from the task of Z to the task of A: A -> Z -> A */
  uint32_t a = UINT32_MAX, z = UINT32_MAX;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_node *n = e->tg.prog->nodes[e->tasks[t].node];
    if (n->op == PTO_TOP_MATMUL)
      *(n->n_in == 3 ? &z : &a) = t;
  }
  cr_assert(a != UINT32_MAX && z != UINT32_MAX);
  add_edge(e, z, a);
  cr_assert_eq(pto__exe_check_acyclic(e), PTO_ESTATE);
  const char *msg = pto_executable_error(e);
  char ta[32], tz[32];
  snprintf(ta, sizeof ta, "task %u (matmul", a);
  snprintf(tz, sizeof tz, "task %u (matmul", z);
  cr_expect(strstr(msg, "cycle") && strstr(msg, ta) && strstr(msg, tz), "%s",
            msg);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* 1000 random programs over [8, 8] tensors mixing cube ops (matmul,
 * matmul_acc) and vector ops (add, neg, muls, relu) on shared operands (the
 * node-edge merge check made a cycle at seed 226), under random
 * tiles: each compiles (an executable with a cycle is refused) and gives
 * the evaluator's values bit for bit (the values are k / 2^n with few
 * enough bits that every sum is exact in f32, in any order). */
Test(partitioner, random_cube_vector_fusion_is_acyclic_and_exact,
     .timeout = 300) {
  for (unsigned seed = 1; seed <= 1000; seed++) {
    unsigned r = seed * 2654435761u;
#define RND(n) ((r = r * 1103515245u + 12345u), (r >> 16) % (n))
    char name[32];
    snprintf(name, sizeof name, "fusion_seed_%u", seed);
    pto_program *p = pto_program_new(name);
    const uint32_t vt[][2] = {{0, 0}, {4, 8}, {2, 4}, {8, 2}};
    const uint32_t ct[][3] = {{0, 0, 0}, {4, 8, 8}, {8, 4, 4}, {4, 4, 8}};
    size_t vi = RND(4), ci = RND(4);
    pto_program_set_vec_tile(p, vt[vi][0], vt[vi][1]);
    pto_program_set_cube_tile(p, ct[ci][0], ct[ci][1], ct[ci][2]);
    int64_t s[] = {8, 8};
    pto_tensor *pool[16];
    int frac[16], mag[16], n = 0;
    for (int i = 0; i < 2 + (int)RND(2); i++, n++) {
      char in[8];
      snprintf(in, sizeof in, "x%d", i);
      pool[n] = pto_input(p, in, PTO_F32, 2, s);
      frac[n] = 4;
      mag[n] = 0;
    }
    int n_ops = 3 + (int)RND(7);
    for (int k = 0; k < n_ops; k++, n++) {
      /* operands mostly among the last few tensors: long paths that cross
       * between cube and vector ops and come back */
      unsigned w = n < 4 ? (unsigned)n : 4;
      int a = n - 1 - (int)RND(w), b = n - 1 - (int)RND(w),
          c = n - 1 - (int)RND(w);
      int op = (int)RND(6), f, m;
      if (op == 0 && frac[a] + frac[b] + mag[a] + mag[b] + 3 <= 24) {
        pool[n] = pto_matmul(p, pool[a], pool[b], 0);
        f = frac[a] + frac[b];
        m = mag[a] + mag[b] + 3;
      } else if (op == 1) {
        f = frac[a] + frac[b] > frac[c] ? frac[a] + frac[b] : frac[c];
        m = (mag[a] + mag[b] + 3 > mag[c] ? mag[a] + mag[b] + 3 : mag[c]) + 1;
        if (f + m > 24)
          goto neg;
        pool[n] = pto_matmul_acc(p, pool[c], pool[a], pool[b], 0);
      } else if (op == 2 && (frac[a] > frac[b] ? frac[a] : frac[b]) +
                                    (mag[a] > mag[b] ? mag[a] : mag[b]) + 1 <=
                                24) {
        pool[n] = pto_add(p, pool[a], pool[b]);
        f = frac[a] > frac[b] ? frac[a] : frac[b];
        m = (mag[a] > mag[b] ? mag[a] : mag[b]) + 1;
      } else if (op == 3 && frac[a] + mag[a] < 24) {
        pool[n] = pto_muls(p, pool[a], 0.5);
        f = frac[a] + 1;
        m = mag[a];
      } else if (op == 4) {
        pool[n] = pto_relu(p, pool[a]);
        f = frac[a];
        m = mag[a];
      } else {
      neg:
        pool[n] = pto_neg(p, pool[a]);
        f = frac[a];
        m = mag[a];
      }
      frac[n] = f;
      mag[n] = m;
      if (n == 15)
        break;
    }
    int n_in = pto_program_num_inputs(p);
    pto_output(p, pool[n - 1 < 15 ? n - 1 : 15], "out");
    for (int i = n_in; i < n - 1 && pto_program_num_outputs(p) < 4; i++)
      if (RND(3) == 0) {
        char o[8];
        snprintf(o, sizeof o, "o%d", i);
        pto_output(p, pool[i], o);
      }
#undef RND
    cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
    pto_executable *e = NULL;
    cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "seed %u: %s", seed,
                 pto_program_error(p));
    bufs b;
    bufs_init(&b, p);
    poison(&b);
    cr_assert_eq(pto_executable_run_serial(e, (const void *const *)b.in, b.got),
                 PTO_OK, "seed %u: %s", seed, pto_executable_error(e));
    expect_outputs(p, &b, "serial", 0);
    bufs_free(&b);
    pto_executable_free(e);
    pto_program_free(p);
  }
}

/* ---- 3. compiles that must return ---------------------------------------- */

/* The program: the whole matmul as one cube tile (then the
 * default) needs 84 864 bytes of L0A and the Ascend model has 65 536. With
 * l1_reuse >= 2 the split of the reuse group was undone by the next
 * grouping, forever. Under every knob setting it now fails at once, naming
 * the op; on the host, where it fits, it compiles and computes what the
 * evaluator does. With no tile set, the compiler chooses one that fits
 * both. */
static pto_program *transposed_matmul_tiled(int whole) {
  pto_program *p = pto_program_new("l1_reuse_overflow");
  int64_t s[] = {1, 200, 100};
  pto_tensor *t0 = pto_input(p, "in0", PTO_F32, 3, s);
  pto_tensor *t1 = pto_transpose(p, t0, 0, 2); /* [100, 200, 1] */
  if (whole)
    pto_program_set_cube_tile(p, 0, 0, 0);
  pto_output(p, pto_matmul(p, t0, t1, PTO_MATMUL_TRANS_A), "out0");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

static pto_program *transposed_matmul(void) {
  return transposed_matmul_tiled(1);
}

Test(partitioner, a_matmul_with_no_tile_set_fits_every_machine,
     .timeout = 120) {
  pto_program *p = transposed_matmul_tiled(0);
  for (int ascend = 0; ascend < 2; ascend++) {
    pto_config *c = pto_config_new();
    if (ascend) {
      pto_machine m = pto_machine_ascend();
      cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
    }
    pto_executable *e = NULL;
    cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
    expect_eval_everywhere(p, e, 1e-4);
    pto_executable_free(e);
    pto_config_free(c);
  }
  pto_program_free(p);
}

Test(partitioner, a_matmul_that_cannot_fit_fails_under_every_knob,
     .timeout = 120) {
  pto_program *p = transposed_matmul();
  const int64_t reuse[] = {1, 2, 3, 4, 32, 1000};
  const int64_t nbuf[] = {0, 1, 3};
  for (int ascend = 0; ascend < 2; ascend++)
    for (int fuse = 0; fuse < 2; fuse++)
      for (size_t n = 0; n < 3; n++)
        for (size_t r = 0; r < 6; r++) {
          pto_config *c = pto_config_new();
          if (ascend) {
            pto_machine m = pto_machine_ascend();
            cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
          }
          pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, fuse);
          pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, nbuf[n]);
          pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, reuse[r]);
          pto_executable *e = NULL;
          pto_status st = pto_compile(p, c, &e);
          if (ascend) {
            cr_assert_eq(st, PTO_ECAPACITY,
                         "fuse %d nbuffer %lld l1_reuse %lld", fuse,
                         (long long)nbuf[n], (long long)reuse[r]);
            const char *msg = pto_program_error(p);
            cr_expect(strstr(msg, "matmul") && strstr(msg, "L0A") &&
                          strstr(msg, "65536"),
                      "%s", msg);
          } else {
            cr_assert_eq(st, PTO_OK, "%s", pto_program_error(p));
            if (r == 1 && n == 0)
              expect_eval_everywhere(p, e, 1e-4);
            pto_executable_free(e);
          }
          pto_config_free(c);
        }
  pto_program_free(p);
}

/* l1_reuse larger than what fits is halved until the group fits, not
 * refused (nor retried forever): units sharing their A window keep every K
 * slice of it live (16 of 16 KiB, for 64 KiB of L0A) where one unit alone
 * holds a slice at a time. */
Test(partitioner, l1_reuse_group_too_large_is_halved_until_it_fits,
     .timeout = 120) {
  pto_program *p = pto_program_new("l1_reuse_halved");
  int64_t sa[] = {64, 1024}, sb[] = {1024, 512};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, sa);
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, sb);
  pto_program_set_cube_tile(p, 64, 64, 64);
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  for (int64_t reuse = 1; reuse <= 32; reuse *= 2) {
    pto_config *c = config_n(1);
    pto_config_set_knob(c, NULL, PTO_KNOB_L1_REUSE, reuse);
    pto_executable *e = NULL;
    cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "l1_reuse %lld: %s",
                 (long long)reuse, pto_program_error(p));
    pto_exe_stats st;
    pto_executable_stats(e, &st);
    cr_expect_eq(st.tasks, 8, "l1_reuse %lld: %u tasks", (long long)reuse,
                 st.tasks);
    cr_expect_leq(st.mem_peak[PTO_MEM_L0A], 65536);
    if (reuse == 32)
      expect_eval_everywhere(p, e, MM_TOL);
    pto_executable_free(e);
    pto_config_free(c);
  }
  pto_program_free(p);
}

/* ---- 5. fusion against parallelism --------------------------------------- */

static pto_program *colmax_softmax_neg(int64_t rows, int64_t cols, uint32_t tr,
                                       uint32_t tc) {
  char name[64];
  snprintf(name, sizeof name, "colmax_softmax_neg_%lldx%lld_tile_%ux%u",
           (long long)rows, (long long)cols, tr, tc);
  pto_program *p = pto_program_new(name);
  int64_t s[] = {rows, cols};
  pto_tensor *X = pto_input(p, "X", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, tr, tc);
  pto_output(p, pto_colmax(p, pto_softmax(p, pto_neg(p, X))), "Y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

/* Tasks of p compiled for machine m with nbuffer 1 (one subgraph per task,
 * so the count is the parallelism the partitioner left). */
static uint32_t tasks_on(pto_program *p, const pto_machine *m) {
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_machine(c, m), PTO_OK);
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_exe_stats st;
  pto_executable_stats(e, &st);
  pto_executable_free(e);
  pto_config_free(c);
  return st.tasks;
}

/* colmax joins every row tile of the softmax it reads: fused, the whole
 * program was one task (one worker did everything). Now the cluster is
 * split where it collapses, and every shape compiles to at least as many
 * tasks as the workers can use (or as the row blocks allow), keeping the
 * fusions that do not cost parallelism (neg into the softmax of its rows). */
Test(partitioner, fusion_leaves_the_workers_their_parallelism, .timeout = 300) {
  const struct {
    int64_t rows, cols;
    uint32_t tr, tc;
    uint32_t par; /* tasks the ops allow: row blocks, or colmax's columns */
  } cases[] = {{64, 127, 2, 1, 32},
               {64, 127, 2, 127, 32},
               {8, 127, 2, 1, 127},
               {64, 64, 2, 2, 32}};
  pto_machine host, ascend = pto_machine_ascend();
  cr_assert_eq(pto_machine_host(&host), PTO_OK);
  const pto_machine *ms[2] = {&host, &ascend};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_program *p = colmax_softmax_neg(cases[i].rows, cases[i].cols,
                                        cases[i].tr, cases[i].tc);
    for (int k = 0; k < 2; k++) {
      uint32_t w = ms[k]->workers[PTO_CORE_VECTOR];
      uint32_t want = w < cases[i].par ? w : cases[i].par;
      uint32_t got = tasks_on(p, ms[k]);
      cr_expect_geq(got, want, "%s on '%s' (%u vector workers): %u tasks",
                    pto_program_name(p), ms[k]->name, w, got);
    }
    expect_right_everywhere(p, 1e-5);
    pto_program_free(p);
  }
  /* the fusion that keeps the rows apart stays */
  pto_program *p = colmax_softmax_neg(64, 127, 2, 127);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  const char *name = pto_executable_program_name(e, 0);
  cr_expect(strstr(name, "TNEG") && strstr(name, "TROWSUM"), "%s", name);
  pto_executable_free(e);
  pto_program_free(p);
}

/* With a 1x1 tile everything fused into one subgraph of 179 968 tiles, over
 * the 65 535 a program can address: PTO_ERANGE where fuse 0 compiles. The
 * split now happens first, and a subgraph over the limit is split like one
 * over local memory. */
Test(partitioner, fusion_past_a_programs_tile_limit_is_split, .timeout = 300) {
  pto_program *p = colmax_softmax_neg(128, 128, 1, 1);
  expect_right_everywhere(p, 1e-5);
  pto_program_free(p);
}

/* Enough subgraphs for the workers, each over the tile limit: fused, the
 * rows of rowsum(exp(neg(X))) with a 1x1 tile are two subgraphs of some
 * 80 000 tiles for two workers, where rowsum alone needs 48 000. Split
 * like a local-memory overflow, they compile and compute. */
Test(partitioner, subgraphs_over_the_tile_limit_are_split, .timeout = 300) {
  pto_program *p = pto_program_new("rowsum_exp_neg_1x1");
  int64_t s[] = {2, 16000};
  pto_tensor *X = pto_input(p, "X", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 1, 1);
  pto_output(p, pto_rowsum(p, pto_exp(p, pto_neg(p, X))), "y");
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[PTO_CORE_CUBE] = m.workers[PTO_CORE_VECTOR] = 2;
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  expect_eval_everywhere(p, e, 1e-5);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}
