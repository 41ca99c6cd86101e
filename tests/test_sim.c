/* scheduler: the simulator (pto_simulate, scheduler/sim.c) and machine
 * profiles (core/cost.c). Small graphs compiled from real programs (the
 * fusion off, one tile per op, so each op is one task of TLOAD, the op,
 * TSTORE) are replayed on a profile whose costs are round numbers, and
 * their makespans must be the ones worked out by hand below, on one and
 * two workers: a chain, a fan-out, a diamond, stages with direct barrier
 * edges and with a join task. Profiles with a missing, negative or
 * malformed cost are refused with a message naming the key; the cost
 * column, the calibration's coverage and host:N scaling are checked. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif

#include "core/cost.h"
#include "core/exe.h"
#include "pto/pto.h"
#include "pto/sim.h"
#include "tileops/calibrate.h"
#include "tileops/tileops.h"

/* ---- a profile of round numbers ------------------------------------------ */

/* Every class costs a fixed call: TADDS and TMULS (class scalar) 1000 ns,
 * TEXP (unary) 3000, TADD (binary) 2000, every other class (loads and
 * stores included) 0. The runtime: dispatch D = 100 ns from a task's end
 * to the next start on the same worker, handoff H = 300 ns to an idle
 * worker, 50 ns in each box before its instructions. Memory so fast its
 * terms vanish (bytes per ns of 1e9: a 2 KiB tile in 2e-6 ns). So a task
 * of one of those ops lasts T = 50 + its op: 1050, 3050 or 2050. */
#define D 100.0
#define H 300.0
#define T_SCALAR 1050.0
#define T_EXP 3050.0
#define T_ADD 2050.0
#define T_JOIN 50.0
#define EPS 1e-3 /* ns: the vanishing memory terms */

static json_t *round_doc(void) {
  json_t *cls = json_object();
  for (int c = 0; c < PTO_CLASS_COUNT; c++) {
    const char *n = pto__class_name((pto_insn_class)c);
    double ns = !strcmp(n, "SCALAR")   ? 1000
                : !strcmp(n, "UNARY")  ? 3000
                : !strcmp(n, "BINARY") ? 2000
                                       : 0;
    json_object_set_new(cls, n, json_pack("{sf}", "call_ns", ns));
  }
  return json_pack("{ss si ss s{sf sf sf sf sf} s{s{si} s{si sf sf} "
                   "s{sf sf}} s{s{so}}}",
                   "format", "pto-profile", "version", 1, "name", "round",
                   "runtime", "dispatch_ns", D, "handoff_ns", H, "task_ns",
                   T_JOIN, "instance_ns", 0.0, "call_ns", 0.0, "memory", "l2",
                   "bytes", 1 << 20, "llc", "bytes", 1 << 30, "core_gbps", 1e9,
                   "total_gbps", 1e9, "dram", "core_gbps", 1e9, "total_gbps",
                   1e9, "costs", "any", "classes", cls);
}

static json_t *classes_of(json_t *doc) {
  return json_object_get(
      json_object_get(json_object_get(doc, "costs"), "any"), "classes");
}

static pto_profile *load_doc(json_t *doc) {
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  pto_profile *p = NULL;
  pto_status st = pto_profile_load_string(text, &p);
  free(text);
  cr_assert_eq(st, PTO_OK, "%s", pto_last_error());
  return p;
}

/* ---- the graphs -------------------------------------------------------------- */

static const int64_t tile_shape[2] = {8, 64};

static pto_config *no_fusion(void) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  return c;
}

static pto_executable *compile(pto_program *p, pto_config *c) {
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  pto_config_free(c);
  pto_program_free(p);
  return e;
}

/* Task t runs program `ops` (its instructions joined by dots) with
 * successors succ[0..n). */
static void expect_task(const pto_executable *e, uint32_t t, const char *ops,
                        const uint32_t *succ, uint32_t n) {
  const pto_task *k = &e->tasks[t];
  const char *name = e->progs[k->prog].name;
  cr_assert(strstr(name, ops) != NULL, "task %u runs %s, not %s", t, name,
            ops);
  cr_assert_eq(k->n_inst, 1, "task %u: %u instances", t, k->n_inst);
  cr_assert_eq(k->n_succ, n, "task %u: %u successors, not %u", t, k->n_succ,
               n);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(e->succ[k->succ + i], succ[i], "task %u successor %u", t, i);
}

/* x -> adds -> muls -> adds */
static pto_executable *chain(void) {
  pto_program *p = pto_program_new("chain");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, tile_shape);
  pto_tensor *y = pto_adds(p, pto_muls(p, pto_adds(p, x, 1), 2), 3);
  pto_output(p, y, "y");
  pto_executable *e = compile(p, no_fusion());
  cr_assert_eq(e->n_tasks, 3);
  const uint32_t s1[] = {1}, s2[] = {2};
  expect_task(e, 0, "TLOAD.TADDS.TSTORE", s1, 1);
  expect_task(e, 1, "TLOAD.TMULS.TSTORE", s2, 1);
  expect_task(e, 2, "TLOAD.TADDS.TSTORE", NULL, 0);
  return e;
}

/* a = adds(x); four outputs muls(a, i) */
static pto_executable *fan_out(void) {
  pto_program *p = pto_program_new("fan_out");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, tile_shape);
  pto_tensor *a = pto_adds(p, x, 1);
  for (int i = 0; i < 4; i++) {
    char n[8];
    snprintf(n, sizeof n, "b%d", i);
    pto_output(p, pto_muls(p, a, i + 2), n);
  }
  pto_executable *e = compile(p, no_fusion());
  cr_assert_eq(e->n_tasks, 5);
  const uint32_t s[] = {1, 2, 3, 4};
  expect_task(e, 0, "TLOAD.TADDS.TSTORE", s, 4);
  for (uint32_t t = 1; t < 5; t++)
    expect_task(e, t, "TLOAD.TMULS.TSTORE", NULL, 0);
  return e;
}

/* a = adds(x); b = muls(a); c = exp(a); d = b + c */
static pto_executable *diamond(void) {
  pto_program *p = pto_program_new("diamond");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, tile_shape);
  pto_tensor *a = pto_adds(p, x, 1);
  pto_tensor *b = pto_muls(p, a, 2);
  pto_tensor *c = pto_exp(p, a);
  pto_output(p, pto_add(p, b, c), "d");
  pto_executable *e = compile(p, no_fusion());
  cr_assert_eq(e->n_tasks, 4);
  const uint32_t s0[] = {1, 2}, s3[] = {3};
  expect_task(e, 0, "TLOAD.TADDS.TSTORE", s0, 2);
  expect_task(e, 1, "TLOAD.TMULS.TSTORE", s3, 1);
  expect_task(e, 2, "TLOAD.TEXP.TSTORE", s3, 1);
  expect_task(e, 3, "TLOAD.TLOAD.TADD.TSTORE", NULL, 0);
  return e;
}

/* stage s1: a1 = adds(x1), a2 = exp(x2); stage s2: b1 = muls(a1) */
static pto_executable *two_stages(int barriers) {
  pto_program *p = pto_program_new("stages");
  pto_tensor *x1 = pto_input(p, "x1", PTO_F32, 2, tile_shape),
             *x2 = pto_input(p, "x2", PTO_F32, 2, tile_shape);
  pto_program_push_label(p, "s1");
  pto_tensor *a1 = pto_adds(p, x1, 1), *a2 = pto_exp(p, x2);
  pto_program_pop_label(p);
  pto_program_push_label(p, "s2");
  pto_tensor *b1 = pto_muls(p, a1, 2);
  pto_program_pop_label(p);
  pto_output(p, b1, "b1");
  pto_output(p, a2, "a2");
  pto_config *c = no_fusion();
  const char *stages[] = {"s1", "s2"};
  if (barriers)
    cr_assert_eq(pto_config_set_stage_barriers(c, stages, 2), PTO_OK);
  pto_executable *e = compile(p, c);
  cr_assert_eq(e->n_tasks, 3);
  const uint32_t s[] = {2};
  expect_task(e, 0, "TLOAD.TADDS.TSTORE", s, 1);
  expect_task(e, 1, "TLOAD.TEXP.TSTORE", s, barriers ? 1 : 0);
  return e;
}

/* stage s1: six tiles of adds; stage s2: six tiles of muls, one on each:
 * 36 barrier edges, so the compile joins the stages through one empty
 * task */
static pto_executable *joined_stages(void) {
  pto_program *p = pto_program_new("joined");
  const int64_t shape[2] = {48, 64};
  pto_program_set_vec_tile(p, 8, 64);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape);
  pto_program_push_label(p, "s1");
  pto_tensor *a = pto_adds(p, x, 1);
  pto_program_pop_label(p);
  pto_program_push_label(p, "s2");
  pto_tensor *b = pto_muls(p, a, 2);
  pto_program_pop_label(p);
  pto_output(p, b, "b");
  pto_config *c = no_fusion();
  const char *stages[] = {"s1", "s2"};
  cr_assert_eq(pto_config_set_stage_barriers(c, stages, 2), PTO_OK);
  pto_executable *e = compile(p, c);
  cr_assert_eq(e->n_tasks, 13, "6 + 6 tasks and a join, got %u", e->n_tasks);
  const uint32_t join = 12;
  cr_assert(!strcmp(e->tasks[join].label, "stage_barrier"));
  cr_assert_eq(e->progs[e->tasks[join].prog].n_insts, 0);
  cr_assert_eq(e->tasks[join].n_succ, 6);
  return e;
}

static pto_machine workers(uint32_t n) {
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.workers[0] = m.workers[1] = n;
  m.shared = 1;
  return m;
}

static double makespan(const pto_executable *e, const pto_profile *p,
                       uint32_t n) {
  pto_machine m = workers(n);
  pto_sim_params sp = pto_sim_params_default();
  sp.profile = p;
  sp.machine = &m;
  pto_sim_result r;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK, "%s",
               pto_executable_error(e));
  cr_assert_eq(r.workers, n);
  cr_assert_eq(r.tasks, e->n_tasks);
  return r.makespan_ns;
}

#define EXPECT_MAKESPAN(e, p, n, want)                                         \
  do {                                                                         \
    const double got_ = makespan(e, p, n), want_ = (want);                     \
    cr_expect(fabs(got_ - want_) < EPS, "%u worker(s): makespan %.4f ns, by " \
                                        "hand %.4f",                           \
              (unsigned)(n), got_, want_);                                     \
  } while (0)

Test(scheduler, sim_chain_makespans_as_by_hand, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *e = chain();
  /* the first task starts a handoff after the run begins (an idle
   * worker), each next one a dispatch after its producer */
  EXPECT_MAKESPAN(e, p, 1, H + 3 * T_SCALAR + 2 * D);
  EXPECT_MAKESPAN(e, p, 2, H + 3 * T_SCALAR + 2 * D);
  pto_executable_free(e);
  pto_profile_free(p);
}

Test(scheduler, sim_fan_out_makespans_as_by_hand, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *e = fan_out();
  /* one worker: the producer, then the four back to back */
  EXPECT_MAKESPAN(e, p, 1, H + T_SCALAR + 4 * (D + T_SCALAR));
  /* two: worker 0 runs the producer [H, H+T], keeps consumer 1 [H+T+D,
   * H+2T+D] and queues three; worker 1, idle, takes one a handoff later
   * [H+T+H, 2H+2T]; then each takes one more after a dispatch: worker 0
   * ends at H+2D+3T, worker 1 at 2H+D+3T */
  EXPECT_MAKESPAN(e, p, 2, 2 * H + D + 3 * T_SCALAR);
  pto_executable_free(e);
  pto_profile_free(p);
}

Test(scheduler, sim_diamond_makespans_as_by_hand, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *e = diamond();
  /* one worker: a, b (kept), c (popped), d (kept) */
  EXPECT_MAKESPAN(e, p, 1, H + T_SCALAR + D + T_SCALAR + D + T_EXP + D + T_ADD);
  /* two: worker 0 runs a and keeps b; worker 1 takes c a handoff after a
   * ends and, finishing last, keeps d: H + T_a + H + T_c + D + T_d */
  EXPECT_MAKESPAN(e, p, 2, H + T_SCALAR + H + T_EXP + D + T_ADD);
  pto_executable_free(e);
  pto_profile_free(p);
}

Test(scheduler, sim_stage_barriers_makespans_as_by_hand, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *free_e = two_stages(0), *bar = two_stages(1);
  /* without the barrier b1 follows a1 on worker 0 while a2 runs on
   * worker 1: a2 ends last */
  EXPECT_MAKESPAN(free_e, p, 2, H + T_EXP);
  /* with it b1 waits for a2 as well: worker 1 keeps it */
  EXPECT_MAKESPAN(bar, p, 2, H + T_EXP + D + T_SCALAR);
  /* one worker: the two roots in turn, then b1 */
  EXPECT_MAKESPAN(free_e, p, 1, H + T_SCALAR + D + T_SCALAR + D + T_EXP);
  EXPECT_MAKESPAN(bar, p, 1, H + T_SCALAR + D + T_EXP + D + T_SCALAR);
  pto_executable_free(free_e);
  pto_executable_free(bar);
  pto_profile_free(p);
}

Test(scheduler, sim_join_task_makespans_as_by_hand, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *e = joined_stages();
  /* one worker: six of s1 back to back, the join (kept), six of s2 (the
   * first kept, the rest popped) */
  EXPECT_MAKESPAN(e, p, 1,
                  H + 6 * T_SCALAR + 5 * D + D + T_JOIN + 6 * (D + T_SCALAR));
  /* two: s1 in three rounds of two, [H, H+T], then a dispatch between
   * rounds; worker 1 finishes the last and keeps the join; it keeps an
   * s2 task, worker 0 takes one a handoff after the join ends; each runs
   * three: worker 0 ends last, at H + 3T + 2D + D + T_join + H + 3T + 2D */
  EXPECT_MAKESPAN(e, p, 2,
                  H + 3 * T_SCALAR + 2 * D + D + T_JOIN + H + 3 * T_SCALAR +
                      2 * D);
  pto_executable_free(e);
  pto_profile_free(p);
}

/* ---- shared bandwidth ---------------------------------------------------------- */

/* Two tasks that do nothing but stream from DRAM share its bandwidth: on
 * two workers each gets half of the total when the total is the core's
 * own, and all of the core's when the total is twice it. */
Test(scheduler, sim_dram_is_shared_by_the_tasks_streaming_at_once, .timeout = 60) {
  pto_program *pg = pto_program_new("stream");
  const int64_t shape[2] = {128, 1024};
  pto_program_set_vec_tile(pg, 64, 1024);
  pto_tensor *x = pto_input(pg, "x", PTO_F32, 2, shape);
  pto_output(pg, pto_adds(pg, x, 1), "y");
  pto_executable *e = compile(pg, no_fusion());
  cr_assert_eq(e->n_tasks, 2);
  for (int shared = 0; shared < 2; shared++) {
    json_t *doc = round_doc();
    json_t *cls = json_object_get(json_object_get(
                                      json_object_get(doc, "costs"), "any"),
                                  "classes");
    json_object_set_new(cls, "SCALAR", json_pack("{sf}", "call_ns", 0.0));
    json_t *rt = json_object_get(doc, "runtime");
    json_object_set_new(rt, "task_ns", json_real(0));
    json_object_set_new(rt, "handoff_ns", json_real(0));
    json_t *dram =
        json_object_get(json_object_get(doc, "memory"), "dram");
    json_object_set_new(dram, "core_gbps", json_real(1.0));
    json_object_set_new(dram, "total_gbps", json_real(shared ? 1.0 : 2.0));
    /* cold: every byte from DRAM */
    pto_profile *p = load_doc(doc);
    pto_machine m = workers(2);
    pto_sim_params sp = pto_sim_params_default();
    sp.profile = p;
    sp.machine = &m;
    sp.cold = 1;
    pto_sim_result r;
    cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK, "%s",
                 pto_executable_error(e));
    /* each task loads and stores 256 KiB: 512 KiB at 1 byte per ns alone */
    const double alone = 2.0 * 64 * 1024 * 4;
    cr_expect(fabs(r.dram_bytes - 2 * alone) < 1, "%g", r.dram_bytes);
    cr_expect(fabs(r.makespan_ns - (shared ? 2 : 1) * alone) < 1,
              "total %s the core's: makespan %.1f ns, want %.1f",
              shared ? "=" : "2x", r.makespan_ns, (shared ? 2 : 1) * alone);
    pto_profile_free(p);
  }
  pto_executable_free(e);
}

/* The cache model: a window is in its worker's L2 when that worker touched
 * it last, recently enough; in the last-level cache when another did, or
 * when it was not touched yet and every tensor fits there; a store with
 * PTO_TF_STREAM goes to DRAM. A warm run is the second of two. */
Test(scheduler, sim_cache_model_places_the_bytes, .timeout = 60) {
  pto_executable *e = chain();
  cr_assert(e->progs[e->tasks[2].prog].insts[2].flags & PTO_TF_STREAM);
  pto_machine m = workers(1);
  pto_sim_params sp = pto_sim_params_default();
  sp.machine = &m;
  pto_sim_result r;
  const double tile = 8 * 64 * 4;
  /* warm, one worker: the first run left everything in its L2, but the
   * output, which it streamed around the caches */
  pto_profile *p = load_doc(round_doc());
  sp.profile = p;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK);
  cr_expect(fabs(r.l2_bytes - 5 * tile) < 1e-6, "l2 %g", r.l2_bytes);
  cr_expect(r.llc_bytes == 0, "llc %g", r.llc_bytes);
  cr_expect(fabs(r.dram_bytes - tile) < 1e-6, "dram %g", r.dram_bytes);
  /* cold: the input and the windows the first stores write from DRAM;
   * the intermediates loaded where their producer left them, in its L2 */
  sp.cold = 1;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK);
  cr_expect(fabs(r.dram_bytes - 4 * tile) < 1e-6, "dram %g", r.dram_bytes);
  cr_expect(fabs(r.l2_bytes - 2 * tile) < 1e-6, "l2 %g", r.l2_bytes);
  pto_profile_free(p);
  /* an L2 too small for a tile: warm, all of it from the last-level
   * cache */
  json_t *doc = round_doc();
  json_object_set_new(json_object_get(json_object_get(doc, "memory"), "l2"),
                      "bytes", json_integer(512));
  p = load_doc(doc);
  sp.profile = p;
  sp.cold = 0;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK);
  cr_expect(r.l2_bytes == 0, "l2 %g", r.l2_bytes);
  cr_expect(fabs(r.llc_bytes - 5 * tile) < 1e-6, "llc %g", r.llc_bytes);
  cr_expect(fabs(r.dram_bytes - tile) < 1e-6, "dram %g", r.dram_bytes);
  pto_profile_free(p);
  pto_executable_free(e);
}

/* An instruction's memory side: its own cost per contiguous run and its
 * multiplier of the level's streaming time, and from DRAM its own
 * multiplier and cost per row walked. */
Test(scheduler, sim_memory_side_of_an_instruction, .timeout = 60) {
  pto_program *pg = pto_program_new("stream");
  const int64_t shape[2] = {64, 1024};
  pto_program_set_vec_tile(pg, 64, 1024);
  pto_tensor *x = pto_input(pg, "x", PTO_F32, 2, shape);
  pto_output(pg, pto_adds(pg, x, 1), "y");
  pto_executable *e = compile(pg, no_fusion());
  cr_assert_eq(e->n_tasks, 1);
  pto_machine m = workers(1);
  double got[3];
  for (int k = 0; k < 3; k++) {
    json_t *doc = round_doc();
    json_t *cls = classes_of(doc);
    json_object_set_new(cls, "SCALAR", json_pack("{sf}", "call_ns", 0.0));
    /* the load: 3 bytes' time per byte, 100 ns a run (its window is one);
     * then from DRAM 2 bytes' time and 5 ns for each of the 64 rows */
    json_object_set_new(
        cls, "LOAD",
        k == 2   ? json_pack("{sf sf sf sf sf}", "call_ns", 0.0, "mem_x", 3.0,
                             "mrow_ns", 100.0, "dram_x", 2.0, "drow_ns", 5.0)
        : k == 1 ? json_pack("{sf sf sf}", "call_ns", 0.0, "mem_x", 3.0,
                             "mrow_ns", 100.0)
                 : json_pack("{sf}", "call_ns", 0.0));
    json_object_set_new(json_object_get(doc, "runtime"), "task_ns",
                        json_real(0));
    json_object_set_new(json_object_get(doc, "runtime"), "handoff_ns",
                        json_real(0));
    json_t *dram = json_object_get(json_object_get(doc, "memory"), "dram");
    json_object_set_new(dram, "core_gbps", json_real(1.0));
    json_object_set_new(dram, "total_gbps", json_real(1.0));
    json_object_set_new(dram, "store_gbps", json_real(2.0));
    pto_profile *p = load_doc(doc);
    pto_sim_params sp = pto_sim_params_default();
    sp.profile = p;
    sp.machine = &m;
    sp.cold = 1;
    pto_sim_result r;
    cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK);
    got[k] = r.makespan_ns;
    pto_profile_free(p);
  }
  /* 256 KiB loaded at 1 byte per ns, the output stored around the caches
   * at 2 */
  const double bytes = 64 * 1024 * 4;
  cr_expect(fabs(got[0] - (bytes + bytes / 2)) < 1, "%.1f", got[0]);
  cr_expect(fabs(got[1] - (3 * bytes + 100 + bytes / 2)) < 1, "%.1f", got[1]);
  cr_expect(fabs(got[2] - (2 * bytes + 100 + 5 * 64 + bytes / 2)) < 1, "%.1f",
            got[2]);
  pto_executable_free(e);
}

/* A plain store to lines in no cache reads them for ownership and writes
 * them back at DRAM's store rate: x -> adds -> adds -> y unfused, cold, the
 * intermediate stored to a workspace no one touched. */
Test(scheduler, sim_plain_store_to_dram_is_read_and_written_back,
     .timeout = 60) {
  pto_program *pg = pto_program_new("spill");
  const int64_t shape[2] = {64, 1024};
  pto_program_set_vec_tile(pg, 64, 1024);
  pto_tensor *x = pto_input(pg, "x", PTO_F32, 2, shape);
  pto_output(pg, pto_adds(pg, pto_adds(pg, x, 1), 2), "y");
  pto_executable *e = compile(pg, no_fusion());
  cr_assert_eq(e->n_tasks, 2);
  cr_assert(!(e->progs[e->tasks[0].prog].insts[2].flags & PTO_TF_STREAM));
  json_t *doc = round_doc();
  json_object_set_new(classes_of(doc), "SCALAR",
                      json_pack("{sf}", "call_ns", 0.0));
  json_t *rt = json_object_get(doc, "runtime");
  json_object_set_new(rt, "task_ns", json_real(0));
  json_object_set_new(rt, "handoff_ns", json_real(0));
  json_object_set_new(rt, "dispatch_ns", json_real(0));
  json_t *dram = json_object_get(json_object_get(doc, "memory"), "dram");
  json_object_set_new(dram, "core_gbps", json_real(1.0));
  json_object_set_new(dram, "total_gbps", json_real(1.0));
  json_object_set_new(dram, "store_gbps", json_real(2.0));
  pto_profile *p = load_doc(doc);
  pto_machine m = workers(1);
  pto_sim_params sp = pto_sim_params_default();
  sp.profile = p;
  sp.machine = &m;
  sp.cold = 1;
  pto_sim_result r;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK, "%s", pto_executable_error(e));
  /* the first task: x from DRAM at 1 byte per ns, the intermediate's
   * lines read at 1 and written back at 2; the second: the intermediate
   * from its L2, y streamed out at 2 */
  const double bytes = 64 * 1024 * 4;
  const double want = bytes + bytes + bytes / 2 + bytes / 2;
  cr_expect(fabs(r.makespan_ns - want) < 1, "makespan %.1f ns, want %.1f",
            r.makespan_ns, want);
  pto_profile_free(p);
  pto_executable_free(e);
}

/* ---- policies ------------------------------------------------------------------- */

Test(scheduler, sim_policies_and_trace_lanes, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *e = diamond();
  pto_machine m = workers(2);
  char path[] = "/tmp/pto_sim_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  for (int pol = 0; pol < PTO_POLICY_COUNT; pol++) {
    pto_sim_params sp = pto_sim_params_default();
    sp.profile = p;
    sp.machine = &m;
    sp.policy = (pto_policy)pol;
    sp.trace_path = path;
    pto_sim_result r;
    cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK);
    /* one ready task at a time: the policy cannot change this graph */
    cr_expect(fabs(r.makespan_ns - (2 * H + T_SCALAR + T_EXP + D + T_ADD)) <
              EPS);
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
    cr_assert_not_null(t, "%s", je.text);
    json_t *meta = json_object_get(t, "pto");
    cr_expect(json_is_true(json_object_get(meta, "simulated")));
    cr_expect(!strcmp(json_string_value(json_object_get(meta, "machine")),
                       "sim:round"));
    cr_expect_eq(json_array_size(json_object_get(meta, "workers")), 2);
    cr_expect(!strcmp(json_string_value(json_object_get(
                          json_object_get(meta, "sim"), "policy")),
                      pto_policy_name((pto_policy)pol)));
    size_t i, boxes = 0;
    json_t *ev;
    json_array_foreach(json_object_get(t, "traceEvents"), i, ev) {
      if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
        continue;
      boxes++;
      cr_expect(json_integer_value(json_object_get(ev, "tid")) < 2);
    }
    cr_expect_eq(boxes, 4);
    json_decref(t);
  }
  remove(path);
  pto_executable_free(e);
  pto_profile_free(p);
}

Test(scheduler, sim_refuses_what_it_cannot_run, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_executable *e = chain();
  pto_sim_params sp = pto_sim_params_default();
  pto_sim_result r;
  cr_expect_eq(pto_simulate(e, &sp, &r), PTO_EINVAL); /* no profile */
  cr_expect(strstr(pto_executable_error(e), "no profile"));
  sp.profile = p;
  pto_machine m = workers(1);
  m.shared = 0;
  m.workers[PTO_CORE_VECTOR] = 0; /* cube workers only */
  sp.machine = &m;
  cr_expect_eq(pto_simulate(e, &sp, &r), PTO_ECONFIG);
  cr_expect(strstr(pto_executable_error(e), "needs a vector worker"), "%s",
            pto_executable_error(e));
  cr_expect_eq(pto_simulate(NULL, &sp, &r), PTO_EINVAL);
  pto_executable_free(e);
  pto_profile_free(p);
}

/* ---- profiles ------------------------------------------------------------------ */

/* The profile with one change, loaded: its status, and the message holds
 * want. */
static void expect_refused(json_t *doc, const char *want) {
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  pto_profile *p = (pto_profile *)1;
  pto_status st = pto_profile_load_string(text, &p);
  free(text);
  cr_expect_eq(st, PTO_ECONFIG, "status %d for a profile that wants '%s'", st,
               want);
  cr_expect_null(p);
  cr_expect(strstr(pto_last_error(), want) != NULL, "message '%s' lacks '%s'",
            pto_last_error(), want);
}


Test(scheduler, profile_with_a_missing_cost_is_refused, .timeout = 60) {
  json_t *doc = round_doc();
  json_object_del(classes_of(doc), "UNARY");
  /* TEXP is the table's first unary instruction */
  expect_refused(doc, "no cost for TEXP (class unary) on vector cores");
  doc = round_doc();
  json_object_set_new(classes_of(doc), "SCALAR", json_object());
  expect_refused(doc, "costs.any.classes.SCALAR: no cost");
  doc = round_doc();
  json_object_del(doc, "costs");
  expect_refused(doc, "costs: missing");
  doc = round_doc();
  json_object_del(doc, "memory");
  expect_refused(doc, "memory: missing");
  doc = round_doc();
  json_object_del(json_object_get(json_object_get(doc, "memory"), "dram"),
                  "core_gbps");
  expect_refused(doc, "memory.dram.core_gbps: missing");
}

Test(scheduler, profile_with_a_negative_cost_is_refused, .timeout = 60) {
  json_t *doc = round_doc();
  json_object_set_new(classes_of(doc), "UNARY",
                      json_pack("{sf}", "call_ns", -3.0));
  expect_refused(doc, "costs.any.classes.UNARY.call_ns: -3 is negative");
  doc = round_doc();
  json_t *any = json_object_get(json_object_get(doc, "costs"), "any");
  json_object_set_new(any, "insns",
                      json_pack("{s{sf sf}}", "TEXP.bf16", "call_ns", 1.0,
                                "row_ns", -0.5));
  expect_refused(doc, "costs.any.insns.TEXP.bf16.row_ns: -0.5 is negative");
  doc = round_doc();
  json_object_set_new(json_object_get(doc, "runtime"), "task_ns",
                      json_real(-1));
  expect_refused(doc, "runtime.task_ns: -1 is negative");
  doc = round_doc();
  json_object_set_new(classes_of(doc), "UNARY",
                      json_pack("{ss}", "call_ns", "fast"));
  expect_refused(doc, "costs.any.classes.UNARY.call_ns: expected a number");
  doc = round_doc();
  json_object_set_new(classes_of(doc), "LOAD",
                      json_pack("{sf sf}", "call_ns", 1.0, "mem_x", 0.0));
  expect_refused(doc, "costs.any.classes.LOAD.mem_x: 0 is not above 0");
  doc = round_doc();
  json_object_set_new(json_object_get(json_object_get(doc, "memory"), "llc"),
                      "row_ns", json_real(-2));
  expect_refused(doc, "memory.llc.row_ns: -2 is negative");
  doc = round_doc();
  json_object_set_new(classes_of(doc), "LOAD",
                      json_pack("{sf sf}", "call_ns", 1.0, "drow_ns", -1.0));
  expect_refused(doc, "costs.any.classes.LOAD.drow_ns: -1 is negative");
}

Test(scheduler, profile_with_a_malformed_key_is_refused, .timeout = 60) {
  json_t *doc = round_doc();
  json_object_set_new(classes_of(doc), "UNARYY",
                      json_pack("{sf}", "call_ns", 1.0));
  expect_refused(doc, "unknown operand class \"UNARYY\"");
  doc = round_doc();
  json_t *any = json_object_get(json_object_get(doc, "costs"), "any");
  json_object_set_new(any, "insns",
                      json_pack("{s{sf}}", "TEXPP", "call_ns", 1.0));
  expect_refused(doc, "unknown instruction \"TEXPP\"");
  doc = round_doc();
  any = json_object_get(json_object_get(doc, "costs"), "any");
  json_object_set_new(any, "insns",
                      json_pack("{s{sf}}", "TLOAD.pack_c", "call_ns", 1.0));
  expect_refused(doc, "costs.any.insns.TLOAD.pack_c: malformed key");
  doc = round_doc();
  json_object_set_new(classes_of(doc), "UNARY",
                      json_pack("{sf}", "cal_ns", 1.0));
  expect_refused(doc, "unknown key \"cal_ns\"");
  doc = round_doc();
  json_object_set_new(doc, "format", json_string("pto-trace"));
  expect_refused(doc, "not a machine profile");
  doc = round_doc();
  json_object_set_new(doc, "version", json_integer(2));
  expect_refused(doc, "this PTO reads profile version 1");
  pto_profile *p = (pto_profile *)1;
  cr_expect_eq(pto_profile_load_string("{\"format\": ", &p), PTO_ECONFIG);
  cr_expect_null(p);
  cr_expect_eq(pto_profile_load_file("/nonexistent/profile.json", &p),
               PTO_EIO);
  cr_expect(strstr(pto_last_error(), "/nonexistent/profile.json"));
}

/* The lookup order: a variant of an instruction, the instruction, its
 * class; a core type's section before "any". */
Test(scheduler, profile_costs_resolve_most_specific_first, .timeout = 60) {
  json_t *doc = round_doc();
  json_t *costs = json_object_get(doc, "costs");
  json_object_set_new(
      json_object_get(costs, "any"), "insns",
      json_pack("{s{sf} s{sf} s{sf}}", "TLOAD", "call_ns", 7.0,
                "TLOAD.pack_b", "call_ns", 8.0, "TLOAD.pack_b.bf16", "call_ns",
                9.0));
  json_object_set_new(costs, "cube",
                      json_pack("{s{s{sf}}}", "insns", "TEXP", "call_ns",
                                11.0));
  pto_profile *p = load_doc(doc);
  pto_cost_terms buf;
  const pto_cost_terms *t;
  t = pto__profile_cost(p, PTO_CORE_VECTOR, PTO_OP_TLOAD, 0, PTO_F32, &buf);
  cr_expect_eq(t->ns[PTO_COST_CALL], 7);
  t = pto__profile_cost(p, PTO_CORE_VECTOR, PTO_OP_TLOAD, 2, PTO_F32, &buf);
  cr_expect_eq(t->ns[PTO_COST_CALL], 8);
  t = pto__profile_cost(p, PTO_CORE_CUBE, PTO_OP_TLOAD, 2, PTO_BF16, &buf);
  cr_expect_eq(t->ns[PTO_COST_CALL], 9);
  t = pto__profile_cost(p, PTO_CORE_CUBE, PTO_OP_TEXP, 0, PTO_F32, &buf);
  cr_expect_eq(t->ns[PTO_COST_CALL], 11);
  t = pto__profile_cost(p, PTO_CORE_VECTOR, PTO_OP_TEXP, 0, PTO_F32, &buf);
  cr_expect_eq(t->ns[PTO_COST_CALL], 3000);
  pto_profile_free(p);
}

Test(scheduler, profile_scales_to_host_n, .timeout = 60) {
  pto_profile *p = load_doc(round_doc());
  pto_profile *s = NULL;
  cr_assert_eq(pto_profile_scale(p, 64, &s), PTO_OK, "%s", pto_last_error());
  const pto_machine *m = pto_profile_machine(s), *m0 = pto_profile_machine(p);
  cr_expect_eq(m->workers[0], 64);
  cr_expect_eq(m->workers[1], 64);
  cr_expect(m->shared);
  cr_expect(!strcmp(pto_profile_name(s), "round:64"));
  const double f = 64.0 / m0->workers[0];
  cr_expect(fabs(s->llc.total_bw - p->llc.total_bw * f) < 1e-6 * f * 1e9);
  cr_expect(fabs(s->dram.total_bw - p->dram.total_bw * f) < 1e-6 * f * 1e9);
  cr_expect(fabs(s->llc.bytes - p->llc.bytes * f) < 1);
  cr_expect_eq(s->dram.core_bw, p->dram.core_bw); /* the cores are the same */
  /* it round-trips through its JSON */
  char *text = pto_profile_to_json(s);
  pto_profile *back = NULL;
  cr_expect_eq(pto_profile_load_string(text, &back), PTO_OK, "%s",
               pto_last_error());
  cr_expect_eq(pto_profile_machine(back)->workers[0], 64);
  free(text);
  pto_profile_free(back);
  pto_profile_free(s);
  cr_expect_eq(pto_profile_scale(p, 0, &s), PTO_EINVAL);
  pto_sim_runtime rt = pto_profile_runtime(p);
  rt.task_ns = 123;
  cr_expect_eq(pto_profile_set_runtime(p, &rt), PTO_OK);
  cr_expect_eq(pto_profile_runtime(p).task_ns, 123);
  rt.task_ns = -1;
  cr_expect_eq(pto_profile_set_runtime(p, &rt), PTO_EINVAL);
  pto_profile_free(p);
}

/* ---- the cost column and the calibration's coverage ----------------------------- */

/* A profile knows the CPU and instruction table it was calibrated on, so
 * that a cached one from elsewhere is not taken for this host's. */
Test(scheduler, profile_says_whether_it_was_calibrated_here, .timeout = 60) {
  char why[768], here[256];
  pto__host_cpu(here, sizeof here);
#if defined(__x86_64__) || defined(__i386__)
  if (!access("/proc/cpuinfo", R_OK)) /* a model name says too little */
    cr_expect(strstr(here, " (family ") && strstr(here, ", model "), "%s",
              here);
#endif
  const char *table = pto__isa_active()->name;

  pto_profile *p = load_doc(round_doc()); /* written by hand */
  cr_expect_eq(pto_profile_is_this_host(p, why, sizeof why), -1);
  cr_expect(strstr(why, "profile 'round' was not calibrated"), "%s", why);
  pto_profile_free(p);
  cr_expect_eq(pto_profile_is_this_host(NULL, NULL, 0), -1);

  json_t *doc = round_doc();
  json_object_set_new(doc, "calibration",
                      json_pack("{ss ss}", "cpu", here, "isa", table));
  p = load_doc(doc);
  cr_expect_eq(pto_profile_is_this_host(p, why, sizeof why), 1, "%s", why);
  /* the document written out keeps it */
  char *text = pto_profile_to_json(p);
  pto_profile *q = NULL;
  cr_assert_eq(pto_profile_load_string(text, &q), PTO_OK, "%s",
               pto_last_error());
  cr_expect_eq(pto_profile_is_this_host(q, NULL, 0), 1);
  free(text);
  pto_profile_free(q);
  pto_profile_free(p);

  const char *other = "Imaginary CPU (family 1, model 2, stepping 3)";
  doc = round_doc();
  json_object_set_new(doc, "calibration",
                      json_pack("{ss ss}", "cpu", other, "isa", table));
  p = load_doc(doc);
  cr_expect_eq(pto_profile_is_this_host(p, why, sizeof why), 0);
  cr_expect(strstr(why, other) && strstr(why, here), "%s", why);
  pto_profile_free(p);

  doc = round_doc(); /* this CPU, another table */
  json_object_set_new(doc, "calibration",
                      json_pack("{ss ss}", "cpu", here, "isa", "no-such-isa"));
  p = load_doc(doc);
  cr_expect_eq(pto_profile_is_this_host(p, why, sizeof why), 0);
  cr_expect(strstr(why, "with the no-such-isa instruction table"), "%s", why);
  pto_profile_free(p);
}

/* A calibration records when it was made, so that a cached one can
 * expire: a VM's host, and its speed, can change under the same CPU. */
Test(scheduler, profile_says_how_old_its_calibration_is, .timeout = 60) {
  cr_expect_eq(pto_profile_age_s(NULL), -1);
  pto_profile *p = load_doc(round_doc()); /* written by hand: no time */
  cr_expect_eq(pto_profile_age_s(p), -1);
  pto_profile_free(p);
  const json_int_t now = (json_int_t)time(NULL);
  json_t *doc = round_doc();
  json_object_set_new(
      doc, "calibration",
      json_pack("{ss ss sI}", "cpu", "c", "isa", "i", "time", now - 7200));
  p = load_doc(doc);
  const double age = pto_profile_age_s(p);
  cr_expect(age >= 7200 && age < 7200 + 60, "age %g s", age);
  pto_profile_free(p);
  doc = round_doc(); /* a clock set back since: no negative age */
  json_object_set_new(
      doc, "calibration",
      json_pack("{ss ss sI}", "cpu", "c", "isa", "i", "time", now + 3600));
  p = load_doc(doc);
  cr_expect_eq(pto_profile_age_s(p), 0);
  pto_profile_free(p);
  doc = round_doc(); /* a time that is no number is none */
  json_object_set_new(
      doc, "calibration",
      json_pack("{ss ss ss}", "cpu", "c", "isa", "i", "time", "yesterday"));
  p = load_doc(doc);
  cr_expect_eq(pto_profile_age_s(p), -1);
  pto_profile_free(p);
}

Test(scheduler, every_instruction_has_a_cost_shape_and_a_microbenchmark, .timeout = 60) {
  for (int op = 0; op < PTO_OP_COUNT; op++) {
    const pto_insn_class c = pto__insn_rows[op].cls;
    const uint32_t m = pto__class_cost(c);
    cr_expect(m & PTO_COST_BIT(PTO_COST_CALL), "%s", pto__insn_name(op));
    cr_expect(m & ~PTO_COST_BIT(PTO_COST_CALL),
              "%s (class %s) has no work term", pto__insn_name(op),
              pto__class_name(c));
    /* a matmul's time goes with its flops */
    if (pto__insn_rows[op].family == PTO_FAMILY_MATMUL)
      cr_expect(m & PTO_COST_BIT(PTO_COST_FLOP), "%s", pto__insn_name(op));
    cr_expect(pto__calibrate_covers(op),
              "the calibration has no microbenchmark for %s (class %s)",
              pto__insn_name(op), pto__class_name(c));
  }
}

/* Not under TSan: it is a second of timing loops (minutes there), and its
 * threads are the memory probes', not the scheduler's. */
#ifndef PTO_TSAN_SHIM
/* A real calibration, short: it names this host, and no instruction's
 * flops come out faster than the plain matmul's (the fused matmuls' small
 * shapes once fitted TMATMUL_GB at 1.5 times the FMA peak). */
Test(scheduler, a_calibration_is_this_hosts_and_no_flop_beats_the_matmul,
     .timeout = 120) {
  pto_calibrate_params cp = pto_calibrate_params_default();
  cp.seconds = 1;
  pto_profile *p = NULL;
  cr_assert_eq(pto_profile_calibrate(&cp, &p), PTO_OK, "%s",
               pto_last_error());
  char why[768];
  cr_expect_eq(pto_profile_is_this_host(p, why, sizeof why), 1, "%s", why);
  const double age = pto_profile_age_s(p); /* just made */
  cr_expect(age >= 0 && age < 60, "age %g s", age);
  char *text = pto_profile_to_json(p);
  cr_assert(text);
  json_t *doc = json_loads(text, 0, NULL);
  free(text);
  cr_assert(doc);
  json_t *insns = json_object_get(
      json_object_get(json_object_get(doc, "costs"), "any"), "insns");
  const double mm =
      json_number_value(json_object_get(json_object_get(insns, "TMATMUL"),
                                        "flop_ns"));
  cr_assert(mm > 0, "TMATMUL has no flop term");
  const char *key;
  json_t *terms;
  int with_flops = 0;
  json_object_foreach(insns, key, terms) {
    json_t *f = json_object_get(terms, "flop_ns");
    if (!f)
      continue;
    with_flops++;
    cr_expect(json_number_value(f) >= mm * (1 - 1e-9),
              "%s: %g ns a flop, below TMATMUL's %g", key,
              json_number_value(f), mm);
  }
  cr_expect(with_flops >= 5, "%d instructions with a flop term", with_flops);
  json_decref(doc);
  pto_profile_free(p);
}
#endif

/* The features the terms multiply, on a matmul and a row reduction. */
Test(scheduler, cost_features_of_a_call, .timeout = 60) {
  pto_insn_shape s = {.op = PTO_OP_TMATMUL, .n_src = 2, .n_dst = 1};
  s.src[0][0] = 48, s.src[0][1] = 64;  /* A 48 x 64 */
  s.src[1][0] = 64, s.src[1][1] = 128; /* B 64 x 128 */
  s.dst[0][0] = 48, s.dst[0][1] = 128;
  pto_cost_feat f;
  pto__cost_features(&s, 1 << 30, 1 << 30, &f);
  cr_expect_eq(f.x[PTO_COST_CALL], 1);
  cr_expect_eq(f.x[PTO_COST_ROW], 48); /* dst0's (and src0's) */
  cr_expect_eq(f.x[PTO_COST_IN], 48 * 64 + 64 * 128);
  cr_expect_eq(f.x[PTO_COST_OUT], 48 * 128);
  cr_expect_eq(f.x[PTO_COST_FLOP], 2.0 * 48 * 128 * 64);
  cr_expect_eq(f.gbytes[0] + f.gbytes[1], 0);
  cr_expect_eq(f.x[PTO_COST_SPILL], 0); /* 68 KiB in a 1 GiB L1 */
  pto__cost_features(&s, 48 << 10, 1 << 30, &f); /* not in a 48 KiB one */
  cr_expect_eq(f.x[PTO_COST_SPILL], 48 * 64 + 64 * 128 + 48 * 128);
  cr_expect_eq(f.x[PTO_COST_SPILL2], 0);
  pto__cost_features(&s, 48 << 10, 64 << 10, &f); /* nor a 64 KiB L2 */
  cr_expect_eq(f.x[PTO_COST_SPILL2], 48 * 64 + 64 * 128 + 48 * 128);
  pto_insn_shape l = {.op = PTO_OP_TLOADSOFTMAXSTORE, .n_dst = 2,
                      .gdt = PTO_F32, .g2dt = PTO_F32};
  l.dst[0][0] = 10, l.dst[0][1] = 4096;
  l.dst[1][0] = 10, l.dst[1][1] = 1;
  l.g[0] = 10, l.g[1] = 4096, l.g2[0] = 10, l.g2[1] = 4096;
  pto__cost_features(&l, 48 << 10, 2 << 20, &f);
  cr_expect_eq(f.gbytes[0], 10 * 4096 * 4); /* read */
  cr_expect_eq(f.gbytes[1], 10 * 4096 * 4); /* written */
  cr_expect_eq(f.x[PTO_COST_OUT], 10 * 4096 + 10);
}

/* A machine whose cube packs in other panels than this CPU's table: the
 * compile plans with its panels, and a run of the executable (for
 * pto_simulate) is refused with the reason. */
Test(scheduler, foreign_panels_plan_and_refuse_to_run, .timeout = 60) {
  uint32_t mr, nr;
  pto_matmul_panel(&mr, &nr);
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  snprintf(m.name, sizeof m.name, "npu");
  m.panel[0] = mr + 4;
  m.panel[1] = nr + 8;
  pto_program *p = pto_program_new("mm");
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, (int64_t[]){64, 64});
  pto_tensor *b = pto_input(p, "b", PTO_F32, 2, (int64_t[]){64, 64});
  pto_output(p, pto_matmul(p, a, b, 0), "c");
  pto_config *cfg = pto_config_new();
  pto_config_set_machine(cfg, &m);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, cfg, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_expect_eq(pto_run_new(e, &run), PTO_EISA);
  cr_expect(strstr(pto_last_error(), "planned for machine 'npu', whose cube "
                                     "packs matmul operands in panels of"),
            "%s", pto_last_error());
  float *x = calloc(64 * 64, 4), *y = calloc(64 * 64, 4);
  const void *in[2] = {x, x};
  void *out[1] = {y};
  cr_expect_eq(pto_executable_run_serial(e, in, out), PTO_EISA);
  free(x);
  free(y);
  pto_executable_free(e);
  pto_config_free(cfg);
  pto_program_free(p);
}
