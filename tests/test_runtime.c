/* scheduler: the MPMD runtime. Random DAGs over worker counts, modes and
 * policies (each task once, after all its producers), compiled programs
 * equal to the serial executor bit for bit, failure and reuse, scratchpads
 * and operand buffers, cancel and async completion on a libuv loop, runs
 * that cannot progress. The executor's prefetching is tested in
 * test_runtime_prefetch.c, traces of task graphs and pinning in
 * test_runtime_pinning.c. Every test has a timeout. */
#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "pto/pto.h"
#include "scheduler/exec.h"
#include "tests/exe_test.h"
#include "tests/runtime_test.h"

static uint32_t scale(uint32_t n) {
  const char *s = getenv("PTO_TEST_SCALE");
  double f = s ? atof(s) : 1.0;
  uint32_t v = (uint32_t)(n * (f > 0 ? f : 1.0));
  return v ? v : 1;
}

static void run_dag_case(uint32_t workers, int shared, pto_policy pol,
                         uint32_t n, uint32_t fan, uint32_t hub,
                         unsigned seed) {
  pto_runtime *rt = runtime(workers, shared, pol);
  dag d;
  tctx *ctx;
  pto_graph *g = random_dag(&d, &ctx, n, fan, hub, seed, !shared);
  cr_assert_eq(pto_runtime_run_graph(rt, g), PTO_OK, "%s",
               pto_graph_error(g));
  for (uint32_t t = 0; t < n; t++)
    cr_assert_eq(atomic_load(&d.runs[t]), 1, "task %u ran %d times", t,
                 atomic_load(&d.runs[t]));
  cr_assert_eq(atomic_load(&d.violations), 0,
               "a task ran before one of its producers");
  pto_graph_free(g);
  dag_free(&d, ctx);
  pto_runtime_free(rt);
}

Test(scheduler, random_dags_every_worker_count_and_policy, .timeout = 120) {
  const uint32_t workers[] = {1, 2, 3, 8};
  for (size_t w = 0; w < 4; w++)
    for (int pol = 0; pol < PTO_POLICY_COUNT; pol++)
      run_dag_case(workers[w], 1, (pto_policy)pol, scale(5000), 4, 0,
                   (unsigned)(w * 10 + pol));
}

Test(scheduler, random_dags_dedicated_cube_and_vector, .timeout = 120) {
  const uint32_t workers[] = {2, 3, 8};
  for (size_t k = 0; k < 3; k++)
    for (int pol = 0; pol < PTO_POLICY_COUNT; pol++)
      run_dag_case(workers[k], 0, (pto_policy)pol, scale(5000), 4, 0,
                   (unsigned)(100 + workers[k] * 10 + pol));
}

Test(scheduler, large_dag_with_wide_fan_out_and_fan_in, .timeout = 120) {
  run_dag_case(2, 1, PTO_POLICY_CRITICAL_PATH, scale(100000), 3,
               scale(10000), 7);
  run_dag_case(3, 0, PTO_POLICY_FIFO, scale(20000), 2, scale(10000), 8);
}

/* ---- failures --------------------------------------------------------- */

static atomic_int ran;
static int count_task(void *arg) {
  (void)arg;
  atomic_fetch_add(&ran, 1);
  return 0;
}
static int failing_task(void *arg) {
  (void)arg;
  atomic_fetch_add(&ran, 1);
  return PTO_ERANGE;
}

/* A program named name: y = the custom op op_name (fn, registered on first
 * use) of an 8x8 f32 input a, the op under label when not NULL. */
static pto_program *custom_program(const char *name, const char *op_name,
                                   pto_custom_fn fn, const char *label) {
  int id = pto_custom_op_find(op_name);
  if (id < 0) {
    pto_custom_op_desc d = {op_name, PTO_CORE_VECTOR, 1, PTO_F32, 0, fn, NULL};
    cr_assert_eq(pto_custom_op_register(&d, &id), PTO_OK);
  }
  pto_program *p = pto_program_new(name);
  const int64_t s[2] = {8, 8};
  pto_tensor *in[1] = {pto_input(p, "a", PTO_F32, 2, s)};
  if (label)
    pto_program_push_label(p, label);
  pto_output(p, pto_custom(p, id, 1, in), "y");
  return p;
}

Test(scheduler, failing_task_ends_run_and_runtime_stays_usable,
     .timeout = 60) {
  pto_runtime *rt = runtime(2, 1, PTO_POLICY_FIFO);
  pto_graph *g = pto_graph_new();
  /* a chain: 0 -> 1 (fails) -> 2 -> ... -> 99 */
  for (int i = 0; i < 100; i++) {
    pto_graph_add(g, PTO_CORE_VECTOR, i == 1 ? failing_task : count_task,
                  NULL);
    if (i)
      pto_graph_depend(g, i - 1, i);
  }
  atomic_store(&ran, 0);
  cr_assert_eq(pto_runtime_run_graph(rt, g), PTO_ERANGE);
  cr_expect_eq(atomic_load(&ran), 2, "tasks after the failure are skipped");
  cr_expect(strstr(pto_graph_error(g), "task 1"), "%s", pto_graph_error(g));
  pto_graph *ok = pto_graph_new();
  for (int i = 0; i < 50; i++)
    pto_graph_add(ok, PTO_CORE_VECTOR, count_task, NULL);
  atomic_store(&ran, 0);
  cr_assert_eq(pto_runtime_run_graph(rt, ok), PTO_OK);
  cr_expect_eq(atomic_load(&ran), 50);
  pto_graph_free(ok);
  pto_graph_free(g);
  pto_runtime_free(rt);
}

Test(scheduler, bad_graphs_are_refused, .timeout = 30) {
  pto_runtime *rt = runtime(2, 1, PTO_POLICY_FIFO);
  pto_graph *g = pto_graph_new();
  for (int i = 0; i < 3; i++)
    pto_graph_add(g, PTO_CORE_VECTOR, count_task, NULL);
  cr_expect_eq(pto_graph_depend(g, 0, 0), PTO_EINVAL);
  cr_expect_eq(pto_graph_depend(g, 0, 3), PTO_EINVAL);
  cr_expect_eq(pto_graph_depend(g, -1, 1), PTO_EINVAL);
  cr_expect_lt(pto_graph_add(g, PTO_CORE_MEMORY, count_task, NULL), 0);
  cr_expect_lt(pto_graph_add(g, PTO_CORE_VECTOR, NULL, NULL), 0);
  pto_graph_depend(g, 0, 1);
  pto_graph_depend(g, 1, 2);
  pto_graph_depend(g, 2, 0);
  atomic_store(&ran, 0);
  cr_expect_eq(pto_runtime_run_graph(rt, g), PTO_ESTATE);
  cr_expect_eq(atomic_load(&ran), 0, "nothing runs in a cyclic graph");
  cr_expect(strstr(pto_graph_error(g), "cycle"), "%s", pto_graph_error(g));
  pto_graph_free(g);
  /* cube tasks on a machine whose workers all serve vector only */
  pto_machine m;
  pto_machine_host(&m);
  m.shared = 0;
  m.workers[PTO_CORE_CUBE] = 0;
  m.workers[PTO_CORE_VECTOR] = 2;
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = &m;
  pto_runtime *vec = NULL;
  cr_assert_eq(pto_runtime_new(&p, &vec), PTO_OK);
  g = pto_graph_new();
  pto_graph_add(g, PTO_CORE_CUBE, count_task, NULL);
  cr_expect_eq(pto_runtime_run_graph(vec, g), PTO_ECONFIG);
  cr_expect(strstr(pto_graph_error(g), "cube"), "%s", pto_graph_error(g));
  pto_graph_free(g);
  pto_runtime_free(vec);
  m.workers[PTO_CORE_VECTOR] = 0;
  pto_runtime *none = (pto_runtime *)1;
  cr_expect_eq(pto_runtime_new(&p, &none), PTO_ECONFIG);
  cr_expect_null(none);
  pto_runtime_free(NULL);
  pto_runtime_free(rt);
}

/* ---- compiled programs ----------------------------------------------------- */

Test(scheduler, compiled_runs_equal_serial_bit_for_bit, .timeout = 120) {
  pto_program *p = softmax_mm();
  static float a[96 * 64], b[64 * 80], want[96 * 80], got[96 * 80];
  srand(3);
  for (int i = 0; i < 96 * 64; i++)
    a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  for (int i = 0; i < 64 * 80; i++)
    b[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  const void *in[] = {a, b};
  void *ws[] = {want}, *gs[] = {got};
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  cr_assert_eq(pto_executable_run_serial(e, in, ws), PTO_OK);
  const uint32_t workers[] = {1, 2, 3};
  for (size_t w = 0; w < 3; w++)
    for (int shared = 0; shared < 2; shared++)
      for (int pol = 0; pol < PTO_POLICY_COUNT; pol++) {
        if (!shared && workers[w] < 2)
          continue;
        pto_runtime *rt = runtime(workers[w], shared, (pto_policy)pol);
        for (int rep = 0; rep < 3; rep++) {
          memset(got, 0, sizeof got);
          cr_assert_eq(pto_runtime_run(rt, e, in, gs), PTO_OK, "%s",
                       pto_executable_error(e));
          cr_assert(memcmp(got, want, sizeof got) == 0,
                    "%u workers shared %d policy %s", workers[w], shared,
                    pto_policy_name((pto_policy)pol));
        }
        pto_runtime_free(rt);
      }
  pto_executable_free(e);
  pto_program_free(p);
}

static int fail_custom(pto_tile *dst, const pto_tile *const *src, int n,
                       void *user) {
  (void)dst;
  (void)src;
  (void)n;
  (void)user;
  return PTO_ERANGE;
}

/* Operand buffers: 64-byte aligned below a huge page, whole huge pages
 * from one up, every byte writable; 0 bytes or a size that cannot be
 * rounded up is NULL, not a wrapped-around small block. */
Test(scheduler, operand_buffers_are_aligned_and_refuse_bad_sizes,
     .timeout = 30) {
  cr_expect_null(pto_buffer_alloc(0));
  cr_expect_null(pto_buffer_alloc(SIZE_MAX));
  cr_expect_null(pto_buffer_alloc(SIZE_MAX - PTO_HUGE_PAGE + 2));
  static const size_t sizes[] = {1, 100, PTO_HUGE_PAGE - 1, PTO_HUGE_PAGE,
                                 3 * PTO_HUGE_PAGE / 2};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    unsigned char *p = pto_buffer_alloc(sizes[i]);
    cr_assert_not_null(p, "%zu bytes", sizes[i]);
    const size_t align = sizes[i] < PTO_HUGE_PAGE ? 64 : PTO_HUGE_PAGE;
    cr_expect_eq((uintptr_t)p % align, 0, "%zu bytes at %p", sizes[i],
                 (void *)p);
    memset(p, 0xab, sizes[i]);
    cr_expect_eq(p[sizes[i] - 1], 0xab);
    free(p);
  }
}

/* Every level sized as asked (NULL when 0), 64-byte aligned inside the
 * worker's one region, none overlapping another: each filled with its own
 * byte, then read back. */
static void check_levels(pto_scratch *s, const uint64_t *want) {
  cr_assert_not_null(s->region);
  cr_expect_eq((uintptr_t)s->region % (2u << 20), 0,
               "region not 2 MiB-aligned");
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    cr_expect_eq(s->size[l], want[l], "level %d: %llu bytes, want %llu", l,
                 (unsigned long long)s->size[l], (unsigned long long)want[l]);
    if (!want[l]) {
      cr_expect_null(s->level[l], "level %d has no bytes but a pointer", l);
      continue;
    }
    cr_assert(s->level[l] >= s->region && (uintptr_t)s->level[l] % 64 == 0,
              "level %d at %p, region %p", l, (void *)s->level[l],
              (void *)s->region);
    memset(s->level[l], 0x10 + l, want[l]);
  }
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    for (uint64_t i = 0; i < want[l]; i++)
      cr_assert_eq(s->level[l][i], 0x10 + l, "level %d byte %llu overwritten",
                   l, (unsigned long long)i);
}

Test(scheduler, scratchpads_share_one_region_and_regrow, .timeout = 30) {
  pto_cprog small = {.n_tiles = 3}, big = {.n_tiles = 5};
  small.mem[PTO_MEM_L0A] = 1000;
  small.mem[PTO_MEM_L0C] = 5000;
  big.mem[PTO_MEM_L0A] = 3u << 20; /* past one huge page */
  big.mem[PTO_MEM_UB] = 100;
  pto_executable e = {.progs = &small, .n_progs = 1};
  pto_scratch s;
  cr_assert_eq(pto__scratch_init(&s, &e), PTO_OK);
  check_levels(&s, small.mem);
  cr_expect_geq(s.cap_tiles, 3);
  /* a larger program: every level as large as either needs */
  cr_assert_eq(pto__scratch_reserve(&s, &big), PTO_OK);
  const uint64_t both[PTO_MEM_LEVEL_COUNT] = {
      [PTO_MEM_L0A] = 3u << 20, [PTO_MEM_L0C] = 5000, [PTO_MEM_UB] = 100};
  check_levels(&s, both);
  cr_expect_geq(s.cap_tiles, 5);
  /* a smaller one again: nothing moves */
  unsigned char *region = s.region;
  cr_assert_eq(pto__scratch_reserve(&s, &small), PTO_OK);
  cr_expect_eq(s.region, region);
  check_levels(&s, both);
  pto__scratch_free(&s);
  cr_expect_null(s.region);
}

Test(scheduler, failing_instruction_names_task_program_and_label,
     .timeout = 60) {
  pto_program *p = custom_program("fails", "rt_fail", fail_custom, "bad.op");
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  static float x[64], y[64];
  const void *ins[] = {x};
  void *outs[] = {y};
  pto_runtime *rt = runtime(2, 1, PTO_POLICY_CRITICAL_PATH);
  cr_assert_eq(pto_runtime_run(rt, e, ins, outs), PTO_ERANGE);
  const char *msg = pto_executable_error(e);
  cr_expect(strstr(msg, "task") && strstr(msg, "bad.op") &&
                strstr(msg, "rt_fail"),
            "%s", msg);
  /* the executable and the runtime can run again */
  cr_assert_eq(pto_runtime_run(rt, e, ins, outs), PTO_ERANGE);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

/* ---- async and cancel --------------------------------------------------- */

typedef struct async_state {
  int calls;
  pto_status status;
  uv_thread_t loop_thread;
  int on_loop_thread;
} async_state;

static void on_done(pto_run *run, pto_status st, void *user) {
  (void)run;
  async_state *s = user;
  uv_thread_t self = uv_thread_self();
  s->calls++;
  s->status = st;
  s->on_loop_thread = uv_thread_equal(&self, &s->loop_thread);
}

/* A custom op that holds its task until the test opens the gate: a run of
 * it is still in flight for as long as the test needs. */
static atomic_int gate_open;
static int gate_custom(pto_tile *dst, const pto_tile *const *src, int n,
                       void *user) {
  (void)dst;
  (void)src;
  (void)n;
  (void)user;
  while (!atomic_load(&gate_open))
    sched_yield();
  return PTO_OK;
}

Test(scheduler, async_runs_complete_on_the_loop_two_in_flight,
     .timeout = 60) {
  pto_program *p1 = softmax_mm(), *p2 = softmax_mm();
  pto_executable *e1 = NULL, *e2 = NULL;
  cr_assert_eq(pto_compile(p1, NULL, &e1), PTO_OK);
  cr_assert_eq(pto_compile(p2, NULL, &e2), PTO_OK);
  static float a[96 * 64], b[64 * 80], want[96 * 80], g1[96 * 80],
      g2[96 * 80];
  for (int i = 0; i < 96 * 64; i++)
    a[i] = (float)(i % 11) / 11;
  for (int i = 0; i < 64 * 80; i++)
    b[i] = (float)(i % 7) / 7;
  const void *in[] = {a, b};
  void *ws[] = {want}, *o1[] = {g1}, *o2[] = {g2};
  cr_assert_eq(pto_executable_run_serial(e1, in, ws), PTO_OK);
  uv_loop_t loop;
  cr_assert_eq(uv_loop_init(&loop), 0);
  async_state s1 = {0}, s2 = {0};
  s1.loop_thread = s2.loop_thread = uv_thread_self();
  pto_runtime *rt = runtime(2, 1, PTO_POLICY_CRITICAL_PATH);
  pto_run *r1 = NULL, *r2 = NULL;
  cr_assert_eq(pto_runtime_submit(rt, e1, in, o1, &loop, on_done, &s1, &r1),
               PTO_OK);
  cr_assert_eq(pto_runtime_submit(rt, e2, in, o2, &loop, on_done, &s2, &r2),
               PTO_OK);
  pto_program *pg = custom_program("gated", "rt_gate", gate_custom, NULL);
  pto_executable *eg = NULL;
  cr_assert_eq(pto_compile(pg, NULL, &eg), PTO_OK, "%s", pto_program_error(pg));
  static float gx[64], gy[64], gy2[64], gy3[64];
  const void *gin[] = {gx};
  void *gout[] = {gy}, *gout2[] = {gy2}, *gout3[] = {gy3};
  async_state sg = {0};
  sg.loop_thread = uv_thread_self();
  atomic_store(&gate_open, 0);
  /* an executable runs several times at once: a second submit while the
   * gated run is held is taken; one run (pto_run) executes once at a time:
   * its second submit is refused, and the held runs still complete */
  pto_run *own = NULL;
  cr_assert_eq(pto_run_new(eg, &own), PTO_OK);
  cr_assert_eq(pto_runtime_submit(rt, eg, gin, gout, &loop, on_done, &sg, NULL),
               PTO_OK);
  cr_assert_eq(pto_runtime_submit(rt, eg, gin, gout2, &loop, on_done, &sg,
                                  NULL),
               PTO_OK, "%s", pto_executable_error(eg));
  cr_assert_eq(pto_run_submit(rt, own, gin, gout3, &loop, on_done, &sg),
               PTO_OK, "%s", pto_run_error(own));
  cr_expect_eq(pto_run_submit(rt, own, gin, gout3, &loop, on_done, &sg),
               PTO_ESTATE, "one execution of a run at a time");
  cr_expect(strstr(pto_run_error(own), "this run is executing"), "%s",
            pto_run_error(own));
  atomic_store(&gate_open, 1);
  uv_run(&loop, UV_RUN_DEFAULT);
  pto_run_free(own);
  cr_expect_eq(s1.calls, 1);
  cr_expect_eq(s2.calls, 1);
  cr_expect_eq(sg.calls, 3);
  cr_expect_eq(s1.status, PTO_OK);
  cr_expect_eq(s2.status, PTO_OK);
  cr_expect_eq(sg.status, PTO_OK);
  cr_expect(s1.on_loop_thread && s2.on_loop_thread);
  cr_expect(memcmp(g1, want, sizeof want) == 0);
  cr_expect(memcmp(g2, want, sizeof want) == 0);
  cr_assert_eq(uv_loop_close(&loop), 0);
  pto_runtime_free(rt);
  pto_executable_free(e1);
  pto_executable_free(e2);
  pto_executable_free(eg);
  pto_program_free(p1);
  pto_program_free(p2);
  pto_program_free(pg);
}

Test(scheduler, cancel_skips_tasks_not_started, .timeout = 60) {
  /* cancel is on pto_run (executables); drive it with a long executable */
  pto_program *p = pto_program_new("long");
  const int64_t s[2] = {2048, 2048};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 8, 256);
  pto_output(p, pto_exp(p, pto_exp(p, a)), "y");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK);
  float *x = calloc(2048 * 2048, 4), *y = calloc(2048 * 2048, 4);
  const void *in[] = {x};
  void *out[] = {y};
  uv_loop_t loop;
  uv_loop_init(&loop);
  async_state st = {0};
  st.loop_thread = uv_thread_self();
  pto_runtime *rt = runtime(2, 1, PTO_POLICY_FIFO);
  pto_run *run = NULL;
  cr_assert_eq(pto_runtime_submit(rt, e, in, out, &loop, on_done, &st, &run),
               PTO_OK);
  pto_run_cancel(run);
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_expect_eq(st.calls, 1);
  cr_expect_eq(st.status, PTO_ECANCELED);
  cr_expect(strstr(pto_executable_error(e), "cancel"));
  /* usable afterwards */
  cr_expect_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  uv_loop_close(&loop);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
  free(x);
  free(y);
}

/* ---- runs that can make no progress -------------------------------------- */

/* Many runs of a small fan-in -> fan-out graph (4 roots -> 1 cube task ->
 * 2), the shape where a worker often still holds finished tasks it has
 * not counted when the others finish the rest: the no-progress check must
 * never end such a run early (it once did, and the late count then touched
 * a run already freed). */
Test(scheduler, many_small_runs_all_complete, .timeout = 120) {
  pto_graph *g = pto_graph_new();
  cr_assert_not_null(g);
  for (int i = 0; i < 7; i++)
    pto_graph_add(g, i == 4 ? PTO_CORE_CUBE : PTO_CORE_VECTOR, count_task,
                  NULL);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(pto_graph_depend(g, i, 4), PTO_OK);
  cr_assert_eq(pto_graph_depend(g, 4, 5), PTO_OK);
  cr_assert_eq(pto_graph_depend(g, 4, 6), PTO_OK);
  const struct {
    uint32_t workers;
    int shared;
  } rts[] = {{2, 1}, {3, 0}, {3, 1}, {2, 0}};
  for (size_t r = 0; r < sizeof rts / sizeof rts[0]; r++) {
    pto_runtime *rt = runtime(rts[r].workers, rts[r].shared,
                              (pto_policy)(r % PTO_POLICY_COUNT));
    for (int rep = 0; rep < (int)scale(300); rep++) {
      atomic_store(&ran, 0);
      cr_assert_eq(pto_runtime_run_graph(rt, g), PTO_OK, "run %d: %s", rep,
                   pto_graph_error(g));
      cr_assert_eq(atomic_load(&ran), 7);
    }
    pto_runtime_free(rt);
  }
  pto_graph_free(g);
}

/* adds(a) -> muls -> exp -> rowsum, one task each: a chain 0 -> 1 -> 2 -> 3. */
static pto_executable *chain_of_4(pto_program **pp) {
  pto_program *p = pto_program_new("chain");
  const int64_t s[2] = {8, 8};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_output(p, pto_rowsum(p, pto_exp(p, pto_muls(p, pto_adds(p, a, 1), 2))),
             "y");
  pto_config *c = pto_config_new();
  pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0);
  pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_config_free(c);
  cr_assert_eq(e->n_tasks, 4);
  for (uint32_t t = 0; t < 3; t++)
    cr_assert(e->tasks[t].n_succ == 1 && e->succ[e->tasks[t].succ] == t + 1);
  *pp = p;
  return e;
}

/* A run whose tasks wait on each other (a cycle forced into a compiled
 * executable) ends with PTO_ESTATE and a message, synchronously and on a
 * loop, on every worker count: the runtime notices that no task is running
 * or ready while tasks are left, instead of waiting forever. With no task
 * ready at all it ends at once. The runtime stays usable. */
Test(scheduler, run_that_cannot_progress_ends_with_an_error, .timeout = 120) {
  static float x[64], y[8];
  const void *in[] = {x};
  void *out[] = {y};
  for (int roots = 1; roots >= 0; roots--) {
    pto_program *p;
    pto_executable *e = chain_of_4(&p);
    add_edge(e, 3, 2); /* 2 and 3 wait on each other; 0 and 1 run */
    if (!roots)
      add_edge(e, 3, 0); /* and nothing can start */
    cr_expect_eq(pto_executable_run_serial(e, in, out), PTO_ESTATE);
    for (uint32_t workers = 1; workers <= 3; workers++)
      for (int shared = 0; shared < 2; shared++) {
        if (!shared && workers < 2)
          continue;
        pto_runtime *rt =
            runtime(workers, shared, (pto_policy)(workers % PTO_POLICY_COUNT));
        for (int rep = 0; rep < 3; rep++) {
          cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_ESTATE,
                       "%u workers, shared %d", workers, shared);
          const char *msg = pto_executable_error(e);
          cr_expect(strstr(msg, "no task can make progress") != NULL, "%s",
                    msg);
          cr_expect(strstr(msg, roots ? "2 of 4 tasks left"
                                      : "4 of 4 tasks left") != NULL,
                    "%s", msg);
        }
        /* asynchronously: the callback gets the error */
        uv_loop_t loop;
        cr_assert_eq(uv_loop_init(&loop), 0);
        async_state st = {0};
        st.loop_thread = uv_thread_self();
        cr_assert_eq(
            pto_runtime_submit(rt, e, in, out, &loop, on_done, &st, NULL),
            PTO_OK);
        uv_run(&loop, UV_RUN_DEFAULT);
        cr_expect_eq(st.calls, 1);
        cr_expect_eq(st.status, PTO_ESTATE);
        cr_assert_eq(uv_loop_close(&loop), 0);
        /* and a sound executable runs right after on the same runtime */
        pto_program *q;
        pto_executable *ok = chain_of_4(&q);
        cr_expect_eq(pto_runtime_run(rt, ok, in, out), PTO_OK, "%s",
                     pto_executable_error(ok));
        pto_executable_free(ok);
        pto_program_free(q);
        pto_runtime_free(rt);
      }
    pto_executable_free(e);
    pto_program_free(p);
  }
}
