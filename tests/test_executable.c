/* partitioner: an executable owns what it reads of its program. Freed
 * first, or grown after the compile, the program changes nothing of the
 * executable: its dumps, labels and runs. */
#include <stdio.h>

#include "tests/partitioner_test.h"

static pto_program *small_program(void) {
  pto_program *p = pto_program_new("owned");
  const int64_t s[2] = {64, 48};
  pto_tensor *a = pto_input(p, "a", PTO_F32, 2, s);
  pto_program_push_label(p, "scale");
  pto_tensor *b = pto_rowsum(p, pto_muls(p, a, 3));
  pto_program_pop_label(p);
  pto_output(p, b, "b");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

static size_t dump_len(const pto_executable *e, pto_stage st) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  cr_assert_eq(pto_executable_dump(e, st, PTO_DUMP_JSON, f), PTO_OK);
  fclose(f);
  cr_expect(strstr(buf, "scale") != NULL, "the label survives: %s", buf);
  free(buf);
  return len;
}

Test(partitioner, executable_outlives_its_program) {
  pto_program *p = small_program();
  pto_executable *e = compile_ok(p, NULL);
  size_t before[PTO_STAGE_COUNT];
  for (int s = 0; s < PTO_STAGE_COUNT; s++)
    before[s] = dump_len(e, (pto_stage)s);
  /* ops added after the compile are not the executable's */
  pto_tensor *x = pto_program_input(p, 0);
  pto_output(p, pto_exp(p, x), "later");
  cr_expect_eq(dump_len(e, PTO_STAGE_TENSOR), before[PTO_STAGE_TENSOR]);
  pto_program_free(p);
  /* and the program's memory is gone: dumps, labels and runs still work */
  for (int s = 0; s < PTO_STAGE_COUNT; s++)
    cr_expect_eq(dump_len(e, (pto_stage)s), before[s], "stage %d", s);
  cr_expect_str_eq(pto_executable_task_label(e, 0), "scale");
  float a[64 * 48], b[64];
  for (int i = 0; i < 64 * 48; i++)
    a[i] = (float)(i % 5);
  const void *in[] = {a};
  void *out[] = {b};
  cr_assert_eq(pto_executable_run_serial(e, in, out), PTO_OK, "%s",
               pto_executable_error(e));
  for (int r = 0; r < 64; r++) {
    double want = 0;
    for (int c = 0; c < 48; c++)
      want += 3.0 * a[r * 48 + c];
    cr_expect_eq(b[r], (float)want, "row %d", r);
  }
  pto_executable_free(e);
}
