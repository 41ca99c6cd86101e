/* scheduler: what a traced run of an executable records (the task graph's
 * traces are tested in test_runtime_pinning.c): the time of every
 * instruction of every task, the summary's time per label and instruction,
 * and the metadata pto-trace reads (workload, config, tile shapes,
 * windows). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif

#include "pto/pto.h"
#include "tests/runtime_test.h"

/* The GFLOP/s column of the summary's row holding `at` (within buf): 10
 * characters after the label (28), instruction (22), time (12) and share
 * (6) columns and their spaces; 0 when blank. */
static double rate_of(const char *buf, const char *at) {
  while (at > buf && at[-1] != '\n')
    at--;
  char col[11] = "";
  double rate = 0;
  if (strlen(at) > 71)
    memcpy(col, at + 71, 10);
  return sscanf(col, "%lf", &rate) == 1 ? rate : 0;
}

/* The runtime's summary of e's last traced run, malloc'd. */
static char *summary_of(const pto_executable *e) {
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  cr_assert_not_null(mem);
  cr_assert_eq(pto_executable_trace_summary(e, mem), PTO_OK);
  fclose(mem);
  return buf;
}

/* e's last trace, written to a file and read back. */
static json_t *trace_of(const pto_executable *e) {
  char path[] = "/tmp/pto_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(pto_executable_write_trace(e, path), PTO_OK);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  unlink(path);
  cr_assert_not_null(root, "%s", err.text);
  return root;
}

/* A traced run of an executable times every instruction: per task, ns per
 * opcode within the task's duration, and the matmuls' floating-point
 * operations (over partial tiles too: N = 80 in tiles of 32, they add up
 * to the product's 2 M N K); the summary gains time per label and
 * instruction with the matmuls' GFLOP/s; the trace records the workload,
 * config, tiles and windows. */
Test(scheduler, trace_of_an_executable_times_its_instructions, .timeout = 60) {
  pto_program *p = softmax_mm();
  static float a[96 * 64], b[64 * 80], y[96 * 80];
  for (int i = 0; i < 96 * 64; i++)
    a[i] = (float)(i % 7) * 0.1f;
  for (int i = 0; i < 64 * 80; i++)
    b[i] = (float)(i % 5) * 0.1f;
  const void *in[] = {a, b};
  void *out[] = {y};
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime_with(2, 1);
  for (int rep = 0; rep < 2; rep++) /* the second run's trace replaces */
    cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK);
  char *buf = summary_of(e);
  cr_expect(strstr(buf, "instruction") && strstr(buf, "TMATMUL") &&
                strstr(buf, "(executor)") && strstr(buf, "softmax") &&
                strstr(buf, "GFLOP/s"),
            "%s", buf);
  /* a rate on the matmul rows and on no other (the reference's column, on
   * the scalar table, may follow it) */
  for (const char *l = buf; (l = strstr(l, "TMATMUL")); l++)
    cr_expect(rate_of(buf, l) > 0, "a matmul row without its rate: %.60s", l);
  const char *ld = strstr(buf, "TLOAD ");
  cr_expect(ld && rate_of(buf, ld) == 0, "TLOAD with a rate: %.60s",
            ld ? ld : "(none)");
  free(buf);
  json_t *root = trace_of(e);
  json_t *pto = json_object_get(root, "pto");
  const char *prog = json_string_value(
      json_object_get(json_object_get(pto, "workload"), "program"));
  cr_expect(prog && !strcmp(prog, "softmax_mm"), "workload %s", prog);
  cr_expect_eq(json_integer_value(json_object_get(pto, "tasks")),
               pto_executable_num_tasks(e));
  int mm_tile = 0;
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(pto, "tiles"), i, x) {
    json_t *t = json_object_get(x, "tile");
    mm_tile |= !strcmp(json_string_value(json_object_get(x, "label")), "mm") &&
               json_array_size(t) == 3 &&
               json_integer_value(json_array_get(t, 0)) == 32;
  }
  cr_expect(mm_tile, "the matmul's cube tile is recorded");
  cr_expect(
      json_is_object(json_object_get(json_object_get(pto, "config"), "knobs")));
  size_t n_x = 0;
  double flops = 0;
  json_array_foreach(json_object_get(root, "traceEvents"), i, x) {
    if (strcmp(json_string_value(json_object_get(x, "ph")), "X"))
      continue;
    n_x++;
    json_t *args = json_object_get(x, "args"), *v;
    const char *op;
    double sum = 0, dur = json_number_value(json_object_get(x, "dur")) * 1e3;
    json_object_foreach(json_object_get(args, "ops"), op, v) sum +=
        (double)json_integer_value(v);
    cr_expect(sum > 0 && sum <= dur + 1.5, "task %zu: %g ns of %g", n_x, sum,
              dur);
    json_object_foreach(json_object_get(args, "flops"), op, v) {
      cr_expect(!strncmp(op, "TMATMUL", 7), "flops of %s", op);
      cr_expect(json_object_get(json_object_get(args, "ops"), op),
                "flops of %s, which the task has no time for", op);
      flops += (double)json_integer_value(v);
    }
    cr_expect(json_array_size(json_object_get(args, "windows")) >= 1);
  }
  cr_expect_eq(n_x, pto_executable_num_tasks(e));
  cr_expect_eq(flops, 2.0 * 96 * 80 * 64, "%g flops", flops);
  json_decref(root);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

/* The part of an instruction's time spent in the scalar reference, in the
 * summary (a "reference" column, only when some instruction ran on it) and
 * in the trace (a "ref" map per task, within its "ops"): a transposed input
 * (columns 32 elements apart) is loaded by the reference on every table;
 * the softmax of the test above runs none on the SIMD tables. */
Test(scheduler, trace_shows_time_on_the_reference, .timeout = 60) {
  pto_program *p = pto_program_new("transposed_add");
  const int64_t xs[2] = {48, 32}, zs[2] = {32, 48};
  pto_tensor *x = pto_input(p, "X", PTO_F32, 2, xs);
  pto_tensor *z = pto_input(p, "Z", PTO_F32, 2, zs);
  pto_output(p, pto_add(p, pto_transpose(p, x, 0, 1), z), "Y");
  static float a[48 * 32], b[32 * 48], y[32 * 48];
  for (int i = 0; i < 48 * 32; i++)
    a[i] = (float)i, b[i] = 1.0f;
  const void *in[] = {a, b};
  void *out[] = {y};
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime_with(2, 1);
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK);
  cr_expect_eq(y[1 * 48 + 2], a[2 * 32 + 1] + 1.0f);
  char *buf = summary_of(e);
  const char *ld = strstr(buf, "TLOAD ");
  double ns, pct, ref = 0;
  cr_expect(strstr(buf, " reference\n") && strstr(buf, "tileops/ref.c"), "%s",
            buf);
  cr_expect(
      ld && sscanf(strchr(ld, ' '), "%lf %lf%% %lf%%", &ns, &pct, &ref) == 3 &&
          ref > 0 && ref <= 100,
      "TLOAD without its share on the reference: %s", buf);
  free(buf);
  json_t *root = trace_of(e);
  size_t i, n_ref = 0;
  json_t *ev;
  json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
    json_t *args = json_object_get(ev, "args"), *v;
    const char *op;
    json_object_foreach(json_object_get(args, "ref"), op, v) {
      json_t *all = json_object_get(json_object_get(args, "ops"), op);
      cr_expect(all && json_integer_value(v) > 0 &&
                    json_integer_value(v) <= json_integer_value(all),
                "%s: %" JSON_INTEGER_FORMAT
                " ns on the reference of %" JSON_INTEGER_FORMAT,
                op, json_integer_value(v), json_integer_value(all));
      n_ref++;
    }
  }
  cr_expect(n_ref > 0, "no task has time on the reference");
  json_decref(root);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
  /* none for the softmax on a SIMD table: no column */
  if (!strcmp(pto_isa_name(), "scalar"))
    return;
  p = softmax_mm();
  static float sa[96 * 64], sb[64 * 80], sy[96 * 80];
  const void *sin[] = {sa, sb};
  void *sout[] = {sy};
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  rt = runtime_with(2, 1);
  cr_assert_eq(pto_runtime_run(rt, e, sin, sout), PTO_OK);
  buf = summary_of(e);
  cr_expect(!strstr(buf, "reference"), "%s", buf);
  free(buf);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}
