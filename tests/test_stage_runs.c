/* scheduler: runs of an executable compiled with stage barriers
 * (pto_config_set_stage_barriers) on a traced runtime: in the trace no
 * task of a stage starts before the last task of the stage before has
 * ended, the results stay right, and the recorded config lists the
 * stages. The graph's edges are tested in the partitioner suite. */
#include <jansson.h>
#include <math.h>
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
#include "tests/stages_test.h"

Test(scheduler, stage_barriers_hold_in_a_traced_run, .timeout = 120) {
  pto_program *p = staged(8, 16);
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  cr_assert_eq(pto_config_set_stage_barriers(c, st_stages, 4), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  static float x[ST_R * ST_C], w[ST_C * ST_C], y[3][ST_R * ST_C];
  static double ref[3][ST_R * ST_C];
  staged_inputs(x, w);
  staged_reference(x, w, ref[0], ref[1], ref[2]);
  const void *in[] = {x, w};
  void *out[] = {y[0], y[1], y[2]};
  pto_runtime *rt = runtime_with(2, 1);
  char path[] = "/tmp/pto_stage_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  for (int rep = 0; rep < 3; rep++) {
    memset(y, 0, sizeof y);
    cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
                 pto_runtime_error(rt));
    for (int o = 0; o < 3; o++)
      for (int i = 0; i < ST_R * ST_C; i++)
        cr_assert(fabs(y[o][i] - ref[o][i]) <= 1e-4 * (1 + fabs(ref[o][i])),
                  "output %d [%d]: %g, want %g", o, i, y[o][i], ref[o][i]);
    cr_assert_eq(pto_executable_write_trace(e, path), PTO_OK);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s", err.text);
    double first[4], last[4];
    int seen[4] = {0, 0, 0, 0};
    size_t i, n_x = 0;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
      if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
        continue;
      n_x++;
      const char *label = json_string_value(
          json_object_get(json_object_get(ev, "args"), "label"));
      cr_assert_not_null(label);
      int k = staged_stage(label);
      if (k < 0)
        continue;
      double t0 = json_number_value(json_object_get(ev, "ts"));
      double t1 = t0 + json_number_value(json_object_get(ev, "dur"));
      if (!seen[k] || t0 < first[k])
        first[k] = t0;
      if (!seen[k] || t1 > last[k])
        last[k] = t1;
      seen[k] = 1;
    }
    cr_expect_eq(n_x, pto_executable_num_tasks(e));
    for (int k = 0; k < 4; k++)
      cr_assert(seen[k], "stage %d ran", k);
    /* timestamps are microseconds with ns resolution */
    for (int k = 1; k < 4; k++)
      cr_expect(first[k] + 0.002 >= last[k - 1],
                "run %d: stage %s starts at %.3f us, before stage %s ends at "
                "%.3f us",
                rep, st_stages[k], first[k], st_stages[k - 1], last[k - 1]);
    json_t *stages =
        json_object_get(json_object_get(json_object_get(root, "pto"), "config"),
                        "stage_barriers");
    cr_expect_eq(json_array_size(stages), 4, "the recorded config");
    for (size_t s = 0; s < json_array_size(stages); s++)
      cr_expect(
          !strcmp(json_string_value(json_array_get(stages, s)), st_stages[s]));
    json_decref(root);
  }
  unlink(path);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}
