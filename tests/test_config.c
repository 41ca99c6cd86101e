/* core: machines, knobs and label overrides, set in code. The host machine
 * (from hwloc) and the ascend preset; a machine or knob is validated when
 * set; labels match by '.'-prefix, the longest wins and unset knobs fall
 * through; policy is global only; tile overrides; the JSON a config writes
 * loads back equal, and a clone is independent. Loading JSON and its
 * errors: test_config_load.c. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "pto/pto.h"
#include "tests/config_test.h"

/* ---- machines ------------------------------------------------------------ */

Test(core, config_host_machine_is_sane) {
  pto_machine m, again;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  cr_expect_str_eq(m.name, "host");
  cr_expect_geq(m.workers[PTO_CORE_CUBE], 1);
  cr_expect_eq(m.workers[PTO_CORE_CUBE], m.workers[PTO_CORE_VECTOR]);
  cr_expect(m.shared);
  cr_expect_leq(m.workers[PTO_CORE_CUBE],
                (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    cr_expect_gt(m.mem[l], 0, "%s", pto_mem_level_name((pto_mem_level)l));
  /* L1 = UB = L0A = L0B = L2/2, L0C = L2 */
  cr_expect_eq(m.mem[PTO_MEM_L1], m.mem[PTO_MEM_L0A]);
  cr_expect_eq(m.mem[PTO_MEM_L0A], m.mem[PTO_MEM_L0B]);
  cr_expect_eq(m.mem[PTO_MEM_L0C], 2 * m.mem[PTO_MEM_L0A]);
  cr_expect_eq(m.mem[PTO_MEM_UB], m.mem[PTO_MEM_L1]);
  cr_expect_eq(pto__machine_check(&m, &(pto_error){0}, "host"), PTO_OK);
  /* cached: the same answer again */
  cr_assert_eq(pto_machine_host(&again), PTO_OK);
  cr_expect_eq(memcmp(&m, &again, sizeof m), 0);
  cr_expect_eq(pto_machine_host(NULL), PTO_EINVAL);
}

/* With every CPU discovery component disabled hwloc cannot load a topology:
 * the host machine reports PTO_EIO and configs fall back to one worker. Each
 * Criterion test runs in its own process, so the cache starts empty. */
Test(core, config_host_machine_hwloc_failure) {
  pto_machine m;
  pto_config *c;
  setenv("HWLOC_COMPONENTS", "-linux,-x86,-no_os", 1);
  cr_expect_eq(pto_machine_host(&m), PTO_EIO);
  c = pto_config_new();
  cr_assert_not_null(c);
  cr_expect_str_eq(pto_config_machine(c)->name, "host");
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_CUBE], 1);
  cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_L1], 512 * KIB);
  cr_expect_eq(pto_config_load_string(c, "{\"machine\": \"host\"}"), PTO_EIO);
  EXPECT_ERR_HAS(c, "hwloc");
  pto_config_free(c);
}

/* The host machine has one worker per core this process may run on: with
 * the calling thread restricted to one CPU (as under taskset), one. Nothing
 * asks for the host before the restriction, as it is detected once per
 * process (each Criterion test runs in its own). */
Test(core, config_host_machine_counts_the_cores_it_may_run_on, .timeout = 30) {
  cpu_set_t may, one;
  pto_machine m;
  int last = CPU_SETSIZE - 1;
  cr_assert_eq(sched_getaffinity(0, sizeof may, &may), 0);
  while (last > 0 && !CPU_ISSET(last, &may))
    last--;
  CPU_ZERO(&one);
  CPU_SET(last, &one);
  cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0); /* this thread */
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  cr_expect_eq(m.workers[PTO_CORE_CUBE], 1, "%u workers on CPU %d",
               m.workers[PTO_CORE_CUBE], last);
  cr_expect_eq(m.workers[PTO_CORE_VECTOR], 1);
  cr_expect(m.shared);
}

Test(core, config_ascend_preset) {
  pto_machine m = pto_machine_ascend();
  cr_expect_str_eq(m.name, "ascend");
  cr_expect_eq(m.workers[PTO_CORE_CUBE], 24);
  cr_expect_eq(m.workers[PTO_CORE_VECTOR], 48);
  cr_expect_not(m.shared);
  cr_expect_eq(m.mem[PTO_MEM_L1], 512 * KIB);
  cr_expect_eq(m.mem[PTO_MEM_L0A], 64 * KIB);
  cr_expect_eq(m.mem[PTO_MEM_L0B], 64 * KIB);
  cr_expect_eq(m.mem[PTO_MEM_L0C], 128 * KIB);
  cr_expect_eq(m.mem[PTO_MEM_UB], 192 * KIB);
}

Test(core, config_level_and_knob_names) {
  static const char *const names[] = {"L1", "L0A", "L0B", "L0C", "UB"};
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    cr_expect_str_eq(pto_mem_level_name((pto_mem_level)l), names[l]);
    cr_expect_eq(pto_mem_level_core((pto_mem_level)l),
                 l == PTO_MEM_UB ? PTO_CORE_VECTOR : PTO_CORE_CUBE);
  }
  cr_expect_str_eq(pto_mem_level_name(PTO_MEM_LEVEL_COUNT), "?");
  cr_expect_eq(pto_mem_level_core(PTO_MEM_LEVEL_COUNT), PTO_CORE_TYPE_COUNT);
  cr_expect_str_eq(pto_knob_name(PTO_KNOB_NBUFFER), "nbuffer");
  cr_expect_str_eq(pto_knob_name(PTO_KNOB_L1_REUSE), "l1_reuse");
  cr_expect_str_eq(pto_knob_name(PTO_KNOB_POLICY), "policy");
  cr_expect_str_eq(pto_knob_name(PTO_KNOB_FUSE), "fuse");
  cr_expect_str_eq(pto_knob_name(PTO_KNOB_COUNT), "?");
}

Test(core, config_new_has_host_machine_and_defaults) {
  pto_config *c = pto_config_new();
  pto_machine host;
  cr_assert_not_null(c);
  cr_assert_eq(pto_machine_host(&host), PTO_OK);
  cr_expect_eq(memcmp(pto_config_machine(c), &host, sizeof host), 0);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_NBUFFER), 0);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_L1_REUSE), 1);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_POLICY), 1);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_FUSE), 1);
  cr_expect_eq(pto_config_knob(c, "any.label", PTO_KNOB_FUSE), 1);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_COUNT), 0);
  cr_expect_eq(pto_config_knob(NULL, NULL, PTO_KNOB_L1_REUSE), 1);
  cr_expect_str_eq(pto_config_error(c), "");
  pto_config_free(c);
  pto_config_free(NULL); /* a no-op */
}

Test(core, config_set_machine_validates) {
  pto_config *c = pto_config_new();
  pto_machine m = pto_machine_ascend(), bad;
  cr_assert_not_null(c);
  cr_expect_eq(pto_config_set_machine(c, &m), PTO_OK);
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_VECTOR], 48);

  bad = m;
  bad.workers[PTO_CORE_CUBE] = 0;
  cr_expect_eq(pto_config_set_machine(c, &bad), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "0 cube workers");

  bad = m;
  bad.mem[PTO_MEM_UB] = 0;
  cr_expect_eq(pto_config_set_machine(c, &bad), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "UB capacity is 0");

  bad = m;
  memset(bad.name, 'x', sizeof bad.name); /* no terminator */
  cr_expect_eq(pto_config_set_machine(c, &bad), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "too long");

  bad = m;
  bad.name[0] = '\0';
  cr_expect_eq(pto_config_set_machine(c, &bad), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "name is empty");

  bad = m;
  bad.shared = 1; /* 24 and 48 workers cannot be the same workers */
  cr_expect_eq(pto_config_set_machine(c, &bad), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "shared");

  cr_expect_eq(pto_config_set_machine(c, NULL), PTO_EINVAL);
  cr_expect_eq(pto_config_set_machine(NULL, &m), PTO_EINVAL);
  /* failures left the good machine in place */
  cr_expect_str_eq(pto_config_machine(c)->name, "ascend");
  cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_UB], 192 * KIB);
  pto_config_free(c);
}

/* ---- label overrides ----------------------------------------------------- */

Test(core, config_label_matching) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 1), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_POLICY, 0), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, "indexer", PTO_KNOB_NBUFFER, 4), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, "indexer", PTO_KNOB_L1_REUSE, 3), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, "indexer.qk", PTO_KNOB_NBUFFER, 8),
               PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, "indexer.qk.score", PTO_KNOB_FUSE, 0),
               PTO_OK);

  /* exact */
  cr_expect_eq(pto_config_knob(c, "indexer", PTO_KNOB_NBUFFER), 4);
  /* prefix with '.' */
  cr_expect_eq(pto_config_knob(c, "indexer.topk", PTO_KNOB_NBUFFER), 4);
  /* not a prefix at a '.' boundary */
  cr_expect_eq(pto_config_knob(c, "indexerx", PTO_KNOB_NBUFFER), 1);
  cr_expect_eq(pto_config_knob(c, "indexe", PTO_KNOB_NBUFFER), 1);
  cr_expect_eq(pto_config_knob(c, "x.indexer", PTO_KNOB_NBUFFER), 1);
  cr_expect_eq(pto_config_knob(c, "", PTO_KNOB_NBUFFER), 1);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_NBUFFER), 1);
  /* longest wins */
  cr_expect_eq(pto_config_knob(c, "indexer.qk", PTO_KNOB_NBUFFER), 8);
  cr_expect_eq(pto_config_knob(c, "indexer.qk.score.max", PTO_KNOB_NBUFFER), 8);
  cr_expect_eq(pto_config_knob(c, "indexer.qkx", PTO_KNOB_NBUFFER), 4);
  /* fall-through: indexer.qk.score sets only fuse; nbuffer from
   * indexer.qk, l1_reuse from indexer, policy from the global value */
  cr_expect_eq(pto_config_knob(c, "indexer.qk.score", PTO_KNOB_FUSE), 0);
  cr_expect_eq(pto_config_knob(c, "indexer.qk.score", PTO_KNOB_NBUFFER), 8);
  cr_expect_eq(pto_config_knob(c, "indexer.qk.score", PTO_KNOB_L1_REUSE), 3);
  cr_expect_eq(pto_config_knob(c, "indexer.qk.score", PTO_KNOB_POLICY), 0);
  cr_expect_eq(pto_config_knob(c, "indexer.qk", PTO_KNOB_FUSE), 1);
  {
    int64_t all[PTO_KNOB_COUNT];
    pto__config_knobs(c, "indexer.qk.score.x", all);
    cr_expect_eq(all[PTO_KNOB_NBUFFER], 8);
    cr_expect_eq(all[PTO_KNOB_L1_REUSE], 3);
    cr_expect_eq(all[PTO_KNOB_POLICY], 0);
    cr_expect_eq(all[PTO_KNOB_FUSE], 0);
    pto__config_knobs(c, "other", all);
    cr_expect_eq(all[PTO_KNOB_NBUFFER], 1);
    cr_expect_eq(all[PTO_KNOB_FUSE], 1);
  }
  /* changing the global value shows through where no label sets it */
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_POLICY, 2), PTO_OK);
  cr_expect_eq(pto_config_knob(c, "indexer.qk.score", PTO_KNOB_POLICY), 2);
  pto_config_free(c);
}

Test(core, config_label_matching_from_json) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_load_string(
                   c, "{\"knobs\": {\"nbuffer\": 1},"
                      " \"labels\": {\"b\": {\"nbuffer\": 2},"
                      " \"a.b\": {\"nbuffer\": 3}, \"a\": {\"fuse\": false},"
                      " \"a.b.c\": {\"l1_reuse\": 5}}}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_expect_eq(pto_config_knob(c, "a.b.c", PTO_KNOB_NBUFFER), 3);
  cr_expect_eq(pto_config_knob(c, "a.b.c", PTO_KNOB_FUSE), 0);
  cr_expect_eq(pto_config_knob(c, "a.b.c", PTO_KNOB_L1_REUSE), 5);
  cr_expect_eq(pto_config_knob(c, "a.b", PTO_KNOB_L1_REUSE), 1);
  cr_expect_eq(pto_config_knob(c, "a.c", PTO_KNOB_NBUFFER), 1);
  cr_expect_eq(pto_config_knob(c, "b.a", PTO_KNOB_NBUFFER), 2);
  cr_expect_eq(pto_config_knob(c, "ab", PTO_KNOB_NBUFFER), 1);
  pto_config_free(c);
}

/* policy orders the ready queues of a whole run: a label may not set it,
 * in code or in JSON, and the refusal says where to set it instead. */
Test(core, config_policy_is_global_only) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  char *before = pto_config_to_json(c);
  cr_assert_not_null(before);
  cr_expect_eq(pto_config_set_knob(c, "mlp", PTO_KNOB_POLICY, 2), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "label 'mlp'");
  EXPECT_ERR_HAS(c, "policy is chosen per run");
  EXPECT_ERR_HAS(c, "knobs.policy");
  cr_expect_eq(pto_config_load_string(
                   c, "{\"labels\": {\"mlp\": {\"fuse\": false, "
                      "\"policy\": \"locality\"}}}"),
               PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "labels.mlp.policy: policy is chosen per run");
  /* nor is it offered for a misspelt label key */
  cr_expect_eq(pto_config_load_string(
                   c, "{\"labels\": {\"mlp\": {\"fusee\": false}}}"),
               PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "expected nbuffer, l1_reuse, fuse, vec_tile, cube_tile)");
  char *after = pto_config_to_json(c);
  cr_assert_not_null(after);
  cr_expect_str_eq(after, before, "a refused setting leaves no trace");
  /* globally it is fine */
  cr_expect_eq(pto_config_set_knob(c, NULL, PTO_KNOB_POLICY, 2), PTO_OK);
  cr_expect_eq(pto_config_load_string(
                   c, "{\"knobs\": {\"policy\": \"fifo\"}}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_expect_eq(pto_config_knob(c, "mlp", PTO_KNOB_POLICY), 0);
  free(before);
  free(after);
  pto_config_free(c);
}

Test(core, config_tile_overrides) {
  pto_config *c = pto_config_new();
  pto_tile_shape in_force = pto_tile_shape_default(), s;
  pto_tile_shape attn = {16, 256, 128, 128, 64};
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_set_tile(c, "attn", &attn), PTO_OK);
  /* JSON: vec part only for attn.softmax, cube part only for mlp */
  cr_assert_eq(pto_config_load_string(
                   c, "{\"labels\": {\"attn.softmax\": {\"vec_tile\": [8, 64]},"
                      " \"mlp\": {\"cube_tile\": [64, 32, 16]}}}"),
               PTO_OK, "%s", pto_config_error(c));

  s = in_force;
  cr_expect_eq(pto_config_tile(c, "attn.qk", &s), 1);
  cr_expect_eq(memcmp(&s, &attn, sizeof s), 0);

  s = in_force; /* vec from attn.softmax, cube falls through to attn */
  cr_expect_eq(pto_config_tile(c, "attn.softmax.exp", &s), 1);
  cr_expect_eq(s.vec_rows, 8);
  cr_expect_eq(s.vec_cols, 64);
  cr_expect_eq(s.cube_m, 128);
  cr_expect_eq(s.cube_n, 128);
  cr_expect_eq(s.cube_k, 64);

  s = in_force; /* cube from mlp, vec keeps the shape in force */
  cr_expect_eq(pto_config_tile(c, "mlp", &s), 1);
  cr_expect_eq(s.vec_rows, in_force.vec_rows);
  cr_expect_eq(s.vec_cols, in_force.vec_cols);
  cr_expect_eq(s.cube_m, 64);
  cr_expect_eq(s.cube_n, 32);
  cr_expect_eq(s.cube_k, 16);

  s = in_force; /* no override */
  cr_expect_eq(pto_config_tile(c, "attnx", &s), 0);
  cr_expect_eq(memcmp(&s, &in_force, sizeof s), 0);
  cr_expect_eq(pto_config_tile(c, NULL, &s), 0);

  /* a knob-only label does not count as a tile override */
  cr_assert_eq(pto_config_set_knob(c, "norm", PTO_KNOB_FUSE, 0), PTO_OK);
  cr_expect_eq(pto_config_tile(c, "norm", &s), 0);

  cr_expect_eq(pto_config_set_tile(c, NULL, &attn), PTO_EINVAL);
  cr_expect_eq(pto_config_set_tile(c, "", &attn), PTO_EINVAL);
  cr_expect_eq(pto_config_set_tile(c, "x", NULL), PTO_EINVAL);
  pto_config_free(c);
}

/* ---- JSON out ------------------------------------------------------------ */

Test(core, config_round_trip) {
  pto_config *c = pto_config_new(), *back = pto_config_new();
  pto_machine m = pto_machine_ascend();
  pto_tile_shape t = {4, 8, 16, 32, 64};
  char *json, *again;
  cr_assert_not_null(c);
  cr_assert_not_null(back);
  snprintf(m.name, sizeof m.name, "odd \"name\"");
  m.mem[PTO_MEM_UB] = 1000;    /* not a whole KiB */
  m.mem[PTO_MEM_L1] = 3 * MIB; /* MiB */
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_POLICY, 2), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, 0), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, "a", PTO_KNOB_NBUFFER, 7), PTO_OK);
  cr_assert_eq(pto_config_set_knob(c, "a.b", PTO_KNOB_FUSE, 1), PTO_OK);
  cr_assert_eq(pto_config_set_tile(c, "a.b", &t), PTO_OK);
  cr_assert_eq(pto_config_load_string(
                   c, "{\"labels\": {\"v\": {\"vec_tile\": [2, 3]}}}"),
               PTO_OK);

  json = pto_config_to_json(c);
  cr_assert_not_null(json);
  cr_expect(strstr(json, "\"3MiB\"") != NULL, "%s", json);
  cr_expect(strstr(json, "\"locality\"") != NULL, "%s", json);
  cr_assert_eq(pto_config_load_string(back, json), PTO_OK, "%s\n%s",
               pto_config_error(back), json);
  cr_expect(pto__config_equal(c, back), "%s", json);
  again = pto_config_to_json(back);
  cr_assert_not_null(again);
  cr_expect_str_eq(json, again);
  free(json);
  free(again);

  /* the default config round-trips too */
  pto_config_free(back);
  back = pto_config_new();
  pto_config_free(c);
  c = pto_config_new();
  json = pto_config_to_json(c);
  cr_assert_not_null(json);
  cr_assert_eq(pto_config_load_string(back, json), PTO_OK);
  cr_expect(pto__config_equal(c, back));
  free(json);
  cr_expect_null(pto_config_to_json(NULL));
  pto_config_free(back);
  pto_config_free(c);
}

Test(core, config_clone_is_independent) {
  pto_config *c = pto_config_new(), *d;
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_set_knob(c, "x", PTO_KNOB_NBUFFER, 5), PTO_OK);
  d = pto_config_clone(c);
  cr_assert_not_null(d);
  cr_expect(pto__config_equal(c, d));
  cr_assert_eq(pto_config_set_knob(d, "x", PTO_KNOB_NBUFFER, 6), PTO_OK);
  cr_assert_eq(pto_config_set_knob(d, "y", PTO_KNOB_NBUFFER, 6), PTO_OK);
  cr_expect_eq(pto_config_knob(c, "x", PTO_KNOB_NBUFFER), 5);
  cr_expect_eq(pto_config_knob(c, "y", PTO_KNOB_NBUFFER), 0);
  cr_expect_not(pto__config_equal(c, d));
  cr_expect_null(pto_config_clone(NULL));
  pto_config_free(d);
  pto_config_free(c);
}
