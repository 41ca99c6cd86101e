/* partitioner: what pto_compile tells the user beyond success or failure.
 * Settings of a config's label overrides that the program does not read
 * are warnings of the executable; failing calls leave a message. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "pto/pto.h"

#define EXPECT_HAS(msg, part)                                                  \
  cr_expect(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

static unsigned count_lines(const char *s) {
  unsigned n = *s ? 1 : 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* Compiles the mlp example (labels mlp.up: matmul, mlp.act: relu,
 * mlp.down: matmul) under the config json; returns its warnings (a copy,
 * to free). */
static char *mlp_warnings(const char *json) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_load_string(c, json), PTO_OK, "%s",
               pto_config_error(c));
  pto_program *p = pto_example_mlp();
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  char *w = strdup(pto_executable_warnings(e));
  cr_assert_not_null(w);
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(c);
  return w;
}

Test(partitioner, no_warnings_without_label_overrides) {
  char *w = mlp_warnings("{\"knobs\": {\"nbuffer\": 2}}");
  cr_expect_str_eq(w, "");
  free(w);
  cr_expect_str_eq(pto_executable_warnings(NULL), "");
  /* every setting read by some op: no warning */
  w = mlp_warnings("{\"labels\": {\"mlp\": {\"cube_tile\": [64, 64, 64], "
                   "\"fuse\": false, \"nbuffer\": 1, \"l1_reuse\": 2}, "
                   "\"mlp.act\": {\"vec_tile\": [32, 64]}}}");
  cr_expect_str_eq(w, "");
  free(w);
}

Test(partitioner, label_matching_no_op_is_a_warning) {
  char *w = mlp_warnings("{\"labels\": {\"mpl.up\": {\"l1_reuse\": 4, "
                         "\"cube_tile\": [64, 64, 64]}}}");
  cr_expect_eq(count_lines(w), 1, "%s", w);
  EXPECT_HAS(w, "config: label 'mpl.up' (l1_reuse, cube_tile) matches no op "
                "of program 'mlp'");
  free(w);
}

Test(partitioner, setting_for_ops_the_label_has_none_of_is_a_warning) {
  char *w = mlp_warnings(
      "{\"labels\": {\"mlp.act\": {\"cube_tile\": [64, 64, 64], "
      "\"l1_reuse\": 2, \"vec_tile\": [32, 64]}, "
      "\"mlp.up\": {\"nbuffer\": 2, \"vec_tile\": [8, 8], \"fuse\": 0}}}");
  cr_expect_eq(count_lines(w), 4, "%s", w);
  EXPECT_HAS(w, "label 'mlp.act': l1_reuse is unused: it applies to matmuls, "
                "and the label has none");
  EXPECT_HAS(w, "label 'mlp.act': cube_tile is unused: it applies to matmuls");
  EXPECT_HAS(w, "label 'mlp.up': nbuffer is unused: it applies to vector ops");
  EXPECT_HAS(w, "label 'mlp.up': vec_tile is unused: it applies to ops other "
                "than matmul");
  cr_expect_null(strstr(w, "'mlp.act': vec_tile"), "%s", w);
  cr_expect_null(strstr(w, "fuse"), "%s", w);
  free(w);
}

Test(partitioner, setting_every_op_takes_from_a_longer_label_is_a_warning) {
  char *w = mlp_warnings("{\"labels\": {\"mlp\": {\"fuse\": false, "
                         "\"cube_tile\": [64, 64, 64]}, "
                         "\"mlp.up\": {\"fuse\": true}, "
                         "\"mlp.act\": {\"fuse\": true}, "
                         "\"mlp.down\": {\"fuse\": true}}}");
  cr_expect_eq(count_lines(w), 1, "%s", w);
  EXPECT_HAS(w, "label 'mlp': fuse is unused: every op under it that reads "
                "fuse takes it from a longer label");
  free(w);
}

/* tools/configs/host-split.json is written for the mlp example: every
 * setting it has is read. */
Test(partitioner, example_config_has_no_unused_settings) {
  char dir[PATH_MAX], path[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s", __FILE__);
  char *slash = strrchr(dir, '/');
  cr_assert_not_null(slash);
  *slash = '\0';
  snprintf(path, sizeof path, "%s/../tools/configs/host-split.json", dir);
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_load_file(c, path), PTO_OK, "%s",
               pto_config_error(c));
  pto_program *p = pto_example_mlp();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  cr_expect_str_eq(pto_executable_warnings(e), "");
  pto_executable_free(e);
  /* the same config on another program: each label is reported */
  pto_program *q = pto_example_pypto();
  cr_assert_eq(pto_compile(q, c, &e), PTO_OK, "%s", pto_program_error(q));
  cr_expect_eq(count_lines(pto_executable_warnings(e)), 2, "%s",
               pto_executable_warnings(e));
  EXPECT_HAS(pto_executable_warnings(e), "label 'mlp' ");
  EXPECT_HAS(pto_executable_warnings(e), "label 'mlp.act' ");
  pto_executable_free(e);
  pto_program_free(q);
  pto_program_free(p);
  pto_config_free(c);
}

/* ---- failing calls leave a message about themselves -----------------------
 */

Test(partitioner, failing_compile_and_dump_calls_say_why) {
  pto_program *p = pto_example_pypto();
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  /* no place for the executable */
  cr_expect_eq(pto_compile(p, NULL, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_program_error(p), "compile: exe is NULL");
  /* the next compile starts clean */
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  cr_expect_str_eq(pto_program_error(p), "");
  /* no program: nowhere but the thread's last error */
  pto_executable *none = e;
  cr_expect_eq(pto_compile(NULL, NULL, &none), PTO_EINVAL);
  cr_expect_null(none);
  EXPECT_HAS(pto_last_error(), "pto_compile: the program is NULL");
  /* queries on the executable */
  cr_expect_eq(pto_executable_stats(e, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "stats: s is NULL");
  cr_expect_eq(pto_executable_dump(e, PTO_STAGE_COUNT, PTO_DUMP_DOT, stdout),
               PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "dump: stage 4");
  cr_expect_eq(pto_executable_dump(e, PTO_STAGE_TILE, PTO_DUMP_JSON, NULL),
               PTO_EINVAL);
  EXPECT_HAS(pto_executable_error(e), "dump: out is NULL");
  cr_expect_eq(pto_executable_dump(NULL, PTO_STAGE_TILE, PTO_DUMP_JSON, stdout),
               PTO_EINVAL);
  EXPECT_HAS(pto_last_error(), "pto_executable_dump: the executable is NULL");
  cr_expect_eq(pto_executable_stats(NULL, NULL), PTO_EINVAL);
  EXPECT_HAS(pto_last_error(), "pto_executable_stats: the executable is NULL");
  cr_expect_str_eq(pto_executable_error(NULL), "executable is NULL");
  pto_executable_free(e);
  pto_program_free(p);
}
