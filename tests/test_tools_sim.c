/* tools: pto-trace over simulated traces (pto_simulate): a simulated
 * swimlane passes the same checks a measured one does (pto-trace's loader,
 * its report agreeing with the trace, the page, the comparison with a
 * measured trace of the same executable), marked simulated, one lane per
 * simulated worker; and the Ascend profile shipped in tools/configs loads
 * and plans an operator compiled for pto_machine_ascend. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pto/pto.h"
#include "pto/sim.h"
#include "tests/spawn.h"

static const char *const clean[] = {"PTO_THREADS", "PTO_CONFIG", "PTO_TRACE",
                                    NULL};
static char dir[] = "/tmp/pto_tools_sim_XXXXXX";

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
}

TestSuite(tools_sim, .init = setup, .fini = teardown, .timeout = 120);

static spawned tool(const char *a, const char *b, const char *c,
                    const char *d) {
  char *argv[] = {(char *)PTO_TRACE_TOOL, (char *)a, (char *)b,
                  (char *)c,              (char *)d, NULL};
  return run_with(argv, NULL, clean);
}

static json_t *parse(const char *text) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  cr_assert_not_null(j, "%s: %s", je.text, text);
  return j;
}

static pto_profile *ascend(void) {
  pto_profile *p = NULL;
  cr_assert_eq(pto_profile_load_file(PTO_ASCEND_PROFILE, &p), PTO_OK, "%s",
               pto_last_error());
  return p;
}

/* A GEMM and a softmax in one program: cube and vector tasks. */
static pto_program *workload(void) {
  pto_program *p = pto_program_new("gemm_softmax");
  const int64_t ab[2] = {256, 256};
  pto_program_set_cube_tile(p, 96, 128, 128); /* fits ascend's L0A */
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, ab),
             *b = pto_input(p, "b", PTO_F32, 2, ab);
  pto_tensor *c = pto_matmul(p, a, b, 0);
  pto_program_set_vec_tile(p, 32, 256);
  pto_output(p, pto_softmax(p, c), "y");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

Test(tools_sim, a_simulated_trace_reads_as_a_measured_one) {
  pto_program *prog = workload();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(prog, NULL, &e), PTO_OK, "%s",
               pto_program_error(prog));
  const uint32_t n = pto_executable_num_tasks(e);
  /* measured: two workers, traced */
  float *a = calloc(256 * 256, 4), *b = calloc(256 * 256, 4),
        *y = calloc(256 * 256, 4);
  for (int i = 0; i < 256 * 256; i++)
    a[i] = b[i] = (float)(i % 7) * 0.01f;
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.workers[0] = m.workers[1] = 2;
  pto_runtime_params rp = pto_runtime_params_default();
  rp.machine = &m;
  rp.trace = 1;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&rp, &rt), PTO_OK);
  const void *in[2] = {a, b};
  void *out[1] = {y};
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK);
  char measured[256], simulated[256], page[256];
  snprintf(measured, sizeof measured, "%s/measured.json", dir);
  snprintf(simulated, sizeof simulated, "%s/simulated.json", dir);
  snprintf(page, sizeof page, "%s/sim.html", dir);
  cr_assert_eq(pto_executable_write_trace(e, measured), PTO_OK);
  pto_runtime_free(rt);
  /* simulated: the Ascend profile's costs on the same two workers */
  pto_profile *p = ascend();
  pto_sim_params sp = pto_sim_params_default();
  sp.profile = p;
  sp.machine = &m;
  sp.trace_path = simulated;
  pto_sim_result r;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK, "%s",
               pto_executable_error(e));
  /* the report reads it, and agrees with the simulation */
  spawned s = tool("report", simulated, "--json", NULL);
  cr_assert_eq(s.status, 0, "%s", s.err);
  json_t *rep = parse(s.out);
  cr_expect_eq(json_integer_value(json_object_get(rep, "tasks")), (int)n);
  const double makespan = json_real_value(json_object_get(rep, "makespan_us"));
  cr_expect(fabs(makespan - r.makespan_ns / 1e3) < 0.01, "%g us vs %g ns",
            makespan, r.makespan_ns);
  const double crit = json_real_value(json_object_get(rep, "critical_path_us"));
  cr_expect(fabs(crit - r.critical_path_ns / 1e3) < 0.05, "%g us vs %g ns",
            crit, r.critical_path_ns);
  json_decref(rep);
  spawned_free(&s);
  /* it says it is simulated, on which profile, one lane per worker */
  json_error_t je;
  json_t *t = json_load_file(simulated, 0, &je);
  cr_assert_not_null(t, "%s", je.text);
  json_t *meta = json_object_get(t, "pto");
  cr_expect(json_is_true(json_object_get(meta, "simulated")));
  cr_expect_str_eq(json_string_value(json_object_get(meta, "machine")),
                   "sim:ascend");
  cr_expect_eq(json_array_size(json_object_get(meta, "workers")), 2);
  cr_expect_not_null(json_object_get(meta, "programs"), "the executable's");
  json_decref(t);
  /* the page, and the comparison with the measured run */
  s = tool("html", simulated, "-o", page);
  cr_expect_eq(s.status, 0, "%s", s.err);
  spawned_free(&s);
  struct stat sb;
  cr_expect(stat(page, &sb) == 0 && sb.st_size > 1000);
  s = tool("compare", measured, simulated, "--json");
  cr_expect_eq(s.status, 0, "%s", s.err);
  spawned_free(&s);
  pto_profile_free(p);
  pto_executable_free(e);
  pto_program_free(prog);
  free(a);
  free(b);
  free(y);
}

Test(tools_sim, the_ascend_profile_plans_an_operator_for_ascend) {
  pto_profile *p = ascend();
  const pto_machine *m = pto_profile_machine(p);
  cr_expect_eq(m->workers[PTO_CORE_CUBE], 24);
  cr_expect_eq(m->workers[PTO_CORE_VECTOR], 48);
  cr_expect(!m->shared);
  pto_config *cfg = pto_config_new();
  cr_assert_eq(pto_config_set_machine(cfg, m), PTO_OK);
  pto_program *prog = workload();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(prog, cfg, &e), PTO_OK, "%s",
               pto_program_error(prog));
  char path[256];
  snprintf(path, sizeof path, "%s/ascend.json", dir);
  pto_sim_params sp = pto_sim_params_default();
  sp.profile = p;
  sp.trace_path = path;
  pto_sim_result r;
  cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK, "%s",
               pto_executable_error(e));
  cr_expect_eq(r.workers, 72);
  cr_expect(r.makespan_ns > 0 && r.critical_path_ns <= r.makespan_ns + 1e-6);
  cr_expect(r.work_ns[PTO_CORE_CUBE] > 0 && r.work_ns[PTO_CORE_VECTOR] > 0);
  spawned s = tool("report", path, NULL, NULL);
  cr_expect_eq(s.status, 0, "%s", s.err);
  cr_expect(strstr(s.out, "cube") && strstr(s.out, "vector"), "%s", s.out);
  spawned_free(&s);
  pto_executable_free(e);
  pto_program_free(prog);
  pto_config_free(cfg);
  pto_profile_free(p);
}

/* DeepSeek-V3.2's decode and prefill, no tile set, compile for the Ascend
 * profile's machine and simulate: the indexer's score and the chain's
 * vector ops take their tiles from the compiler for that machine, and its
 * cube's 16 x 16 panels give the sparse attention's gathered rows (576
 * deep) room in a 64 KiB L0B, which the host's 32-column panels did not. */
Test(tools_sim, deepseek_decode_and_prefill_plan_for_ascend, .timeout = 240) {
  pto_profile *p = ascend();
  const pto_machine *m = pto_profile_machine(p);
  cr_expect_eq(m->panel[0], 16);
  cr_expect_eq(m->panel[1], 16);
  pto_config *cfg = pto_config_new();
  cr_assert_eq(pto_config_set_machine(cfg, m), PTO_OK);
  const pto_dsa_dims d = pto_dsa_dims_default();
  const pto_dsa_params prm = pto_dsa_params_default();
  static const int64_t n_dec[2] = {1, 1}, len_dec[2] = {8192, 9000},
                       n_pre[1] = {512}, len_pre[1] = {8192};
  const pto_dsa_step steps[2] = {{2, n_dec, len_dec, 160, 80},
                                 {1, n_pre, len_pre, 64, 64}};
  for (int k = 0; k < 2; k++) {
    pto_program *prog = pto_dsa_program(&d, &steps[k], &prm);
    cr_assert_eq(pto_program_status(prog), PTO_OK, "%s",
                 pto_program_error(prog));
    pto_executable *e = NULL;
    cr_assert_eq(pto_compile(prog, cfg, &e), PTO_OK, "%s: %s",
                 k ? "prefill" : "decode", pto_program_error(prog));
    pto_sim_params sp = pto_sim_params_default();
    sp.profile = p;
    pto_sim_result r;
    cr_assert_eq(pto_simulate(e, &sp, &r), PTO_OK, "%s",
                 pto_executable_error(e));
    cr_expect(r.makespan_ns > 0);
    pto_run *run = NULL; /* planned for other panels: not run here */
    cr_expect_eq(pto_run_new(e, &run), PTO_EISA);
    pto_executable_free(e);
    pto_program_free(prog);
  }
  pto_config_free(cfg);
  pto_profile_free(p);
}
