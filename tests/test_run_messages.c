/* scheduler: what runs of compiled executables tell the user. Swimlane
 * boxes are named even without a label. Every test has a timeout. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pto/pto.h"

#define EXPECT_HAS(msg, part)                                                  \
  cr_expect(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

static pto_runtime *runtime_n(uint32_t workers, int trace) {
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[0] = m.workers[1] = workers;
  pto_runtime_params p = pto_runtime_params_default();
  p.machine = &m;
  p.pin = 0;
  p.spin_us = 50;
  p.yield_us = 200;
  p.trace = trace;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&p, &rt), PTO_OK, "%s", pto_runtime_error(NULL));
  return rt;
}

/* ---- traces ---------------------------------------------------------------- */

/* Every box of a traced run has a name: its label, or its program's when it
 * has none; args keep both. */
Test(scheduler, trace_names_unlabelled_tasks_by_program, .timeout = 60) {
  pto_program *p = pto_program_new("names");
  int64_t s[2] = {64, 64};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 64);
  pto_tensor *y = pto_exp(p, a); /* unlabelled */
  pto_program_push_label(p, "named");
  pto_output(p, pto_matmul(p, y, a, 0), "z");
  pto_program_pop_label(p);
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  static float x[64 * 64], z[64 * 64];
  const void *in[] = {x};
  void *out[] = {z};
  pto_runtime *rt = runtime_n(2, 1);
  cr_assert_eq(pto_runtime_run(rt, e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  char path[] = "/tmp/pto_trace_names_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(pto_executable_write_trace(e, path), PTO_OK, "%s",
               pto_executable_error(e));
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  cr_assert_not_null(root, "%s:%d: %s", path, err.line, err.text);
  size_t i, boxes = 0, unlabelled = 0, labelled = 0;
  json_t *ev;
  json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
    if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
      continue;
    boxes++;
    json_t *args = json_object_get(ev, "args");
    const char *name = json_string_value(json_object_get(ev, "name"));
    const char *label = json_string_value(json_object_get(args, "label"));
    const char *prog = json_string_value(json_object_get(args, "program"));
    cr_assert(name && label && prog);
    uint32_t t = (uint32_t)json_integer_value(json_object_get(args, "task"));
    cr_expect_str_eq(label, pto_executable_task_label(e, t));
    cr_expect_str_eq(prog, pto_executable_program_name(
                               e, pto_executable_task_program(e, t)));
    cr_expect_neq(name[0], '\0', "task %u has a blank box", t);
    if (label[0]) {
      labelled++;
      cr_expect_str_eq(name, label);
    } else {
      unlabelled++;
      cr_expect_str_eq(name, prog);
    }
  }
  cr_expect_eq(boxes, pto_executable_num_tasks(e));
  cr_expect_gt(unlabelled, 0);
  cr_expect_gt(labelled, 0);
  json_decref(root);
  unlink(path);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}
