/* core: stage barriers in the config, set in code or from JSON's
 * "stage_barriers": validation with clear messages, prefix matching, the
 * round trip through pto_config_to_json, clones and equality. What they do
 * to a compile is tested in the partitioner suite (test_stages.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "pto/pto.h"

/* Loads json into a fresh config holding the stages {"keep"}: expects st,
 * a message holding frag, and the stages unchanged. */
static void expect_stage_error(const char *json, pto_status st,
                               const char *frag) {
  pto_config *c = pto_config_new();
  const char *const keep[] = {"keep"};
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_set_stage_barriers(c, keep, 1), PTO_OK);
  cr_expect_eq(pto_config_load_string(c, json), st, "%s: %s", json,
               pto_config_error(c));
  cr_expect(strstr(pto_config_error(c), frag),
            "%s: message \"%s\" lacks \"%s\"", json, pto_config_error(c), frag);
  cr_expect_eq(pto_config_n_stage_barriers(c), 1, "%s left the stages", json);
  cr_expect_str_eq(pto_config_stage_barrier(c, 0), "keep");
  pto_config_free(c);
}

Test(core, config_stage_barriers_from_json) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_expect_eq(pto_config_n_stage_barriers(c), 0);
  cr_assert_eq(pto_config_load_string(
                   c,
                   "{\"stage_barriers\": [\"mla_prolog\", \"indexer_prolog\","
                   " \"indexer\", \"attention\"]}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_assert_eq(pto_config_n_stage_barriers(c), 4);
  cr_expect_str_eq(pto_config_stage_barrier(c, 0), "mla_prolog");
  cr_expect_str_eq(pto_config_stage_barrier(c, 3), "attention");
  cr_expect_null(pto_config_stage_barrier(c, 4));
  /* a label is in the stage of the longest prefix that is it or a
   * '.'-separated prefix of it */
  cr_expect_eq(pto__config_stage(c, "indexer"), 2);
  cr_expect_eq(pto__config_stage(c, "indexer.qk"), 2);
  cr_expect_eq(pto__config_stage(c, "indexer_prolog.q.rope"), 1);
  cr_expect_eq(pto__config_stage(c, "indexer_prologue"), -1);
  cr_expect_eq(pto__config_stage(c, "attention"), 3);
  cr_expect_eq(pto__config_stage(c, "mla"), -1);
  cr_expect_eq(pto__config_stage(c, ""), -1);
  cr_expect_eq(pto__config_stage(NULL, "indexer"), -1);
  /* a later load replaces the list; [] clears it */
  cr_assert_eq(pto_config_load_string(c, "{\"stage_barriers\": [\"x\"]}"),
               PTO_OK);
  cr_expect_eq(pto_config_n_stage_barriers(c), 1);
  cr_assert_eq(pto_config_load_string(c, "{\"knobs\": {\"fuse\": 0}}"), PTO_OK);
  cr_expect_eq(pto_config_n_stage_barriers(c), 1, "other keys keep it");
  cr_assert_eq(pto_config_load_string(c, "{\"stage_barriers\": []}"), PTO_OK);
  cr_expect_eq(pto_config_n_stage_barriers(c), 0);
  pto_config_free(c);
}

Test(core, config_stage_barrier_nesting_takes_the_longest_prefix) {
  pto_config *c = pto_config_new();
  const char *const s[] = {"a", "a.b", "c"};
  cr_assert_eq(pto_config_set_stage_barriers(c, s, 3), PTO_OK);
  cr_expect_eq(pto__config_stage(c, "a.x"), 0);
  cr_expect_eq(pto__config_stage(c, "a.b"), 1);
  cr_expect_eq(pto__config_stage(c, "a.b.c"), 1);
  cr_expect_eq(pto__config_stage(c, "a.bc"), 0);
  cr_expect_eq(pto__config_stage(c, "c"), 2);
  pto_config_free(c);
}

Test(core, config_bad_stage_barriers_are_clear_errors) {
  expect_stage_error("{\"stage_barriers\": \"indexer\"}", PTO_ECONFIG,
                     "stage_barriers: expected an array of label prefixes, "
                     "got \"indexer\"");
  expect_stage_error("{\"stage_barriers\": {\"a\": 1}}", PTO_ECONFIG,
                     "stage_barriers: expected an array of label prefixes, "
                     "got an object");
  expect_stage_error("{\"stage_barriers\": [\"a\", 3]}", PTO_ECONFIG,
                     "stage_barriers[1]: expected a label prefix (a string), "
                     "got 3");
  expect_stage_error("{\"stage_barriers\": [\"a\", null]}", PTO_ECONFIG,
                     "stage_barriers[1]: expected a label prefix (a string), "
                     "got null");
  expect_stage_error("{\"stage_barriers\": [\"a\", \"\"]}", PTO_ECONFIG,
                     "stage_barriers[1]: empty label prefix");
  expect_stage_error("{\"stage_barriers\": [\"a.\"]}", PTO_ECONFIG,
                     "stage_barriers[0]: label prefix \"a.\" ends in '.'");
  expect_stage_error(
      "{\"stage_barriers\": [\"a\", \"b\", \"a\"]}", PTO_ECONFIG,
      "stage_barriers[2]: label prefix \"a\" is already stage 0");
}

Test(core, config_bad_stage_barriers_in_code) {
  pto_config *c = pto_config_new();
  const char *const good[] = {"a", "b"};
  const char *const empty[] = {"a", ""};
  const char *const null[] = {"a", NULL};
  const char *const dup[] = {"a", "a"};
  cr_assert_eq(pto_config_set_stage_barriers(c, good, 2), PTO_OK);
  cr_expect_eq(pto_config_set_stage_barriers(c, empty, 2), PTO_ECONFIG);
  cr_expect(strstr(pto_config_error(c), "stage 1: empty label prefix"), "%s",
            pto_config_error(c));
  cr_expect_eq(pto_config_set_stage_barriers(c, null, 2), PTO_ECONFIG);
  cr_expect_eq(pto_config_set_stage_barriers(c, dup, 2), PTO_ECONFIG);
  cr_expect(strstr(pto_config_error(c), "\"a\" is already stage 0"), "%s",
            pto_config_error(c));
  cr_expect_eq(pto_config_set_stage_barriers(c, NULL, 2), PTO_EINVAL);
  cr_expect_eq(pto_config_set_stage_barriers(NULL, good, 2), PTO_EINVAL);
  cr_expect_eq(pto_config_n_stage_barriers(c), 2, "failures change nothing");
  cr_expect_eq(pto_config_set_stage_barriers(c, NULL, 0), PTO_OK);
  cr_expect_eq(pto_config_n_stage_barriers(c), 0);
  cr_expect_eq(pto_config_n_stage_barriers(NULL), 0);
  cr_expect_null(pto_config_stage_barrier(NULL, 0));
  pto_config_free(c);
}

Test(core, config_stage_barriers_round_trip_clone_and_compare) {
  pto_config *c = pto_config_new(), *back = pto_config_new(), *d;
  const char *const s[] = {"mla_prolog", "attention"};
  char *json;
  cr_assert_eq(pto_config_set_stage_barriers(c, s, 2), PTO_OK);
  json = pto_config_to_json(c);
  cr_assert_not_null(json);
  cr_expect(strstr(json, "\"stage_barriers\"") && strstr(json, "\"attention\""),
            "%s", json);
  cr_assert_eq(pto_config_load_string(back, json), PTO_OK, "%s",
               pto_config_error(back));
  cr_expect(pto__config_equal(c, back));
  free(json);
  d = pto_config_clone(c);
  cr_assert_not_null(d);
  cr_expect(pto__config_equal(c, d));
  cr_assert_eq(pto_config_set_stage_barriers(c, s, 1), PTO_OK);
  cr_expect(!pto__config_equal(c, d), "the clone is independent");
  cr_expect_eq(pto_config_n_stage_barriers(d), 2);
  /* a config without stages writes no key, as before there were any */
  cr_assert_eq(pto_config_set_stage_barriers(d, NULL, 0), PTO_OK);
  json = pto_config_to_json(d);
  cr_expect(!strstr(json, "stage_barriers"), "%s", json);
  free(json);
  pto_config_free(c);
  pto_config_free(d);
  pto_config_free(back);
}
