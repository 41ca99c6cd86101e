/* core: configs loaded from JSON strings and files: machines (a preset or
 * an object), knobs, label overrides, memory sizes, and the example files
 * in tools/configs/. Every load error names where it happened
 * (file:line:column for syntax, the key path for meaning) and leaves the
 * config as it was. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "pto/pto.h"
#include "tests/config_test.h"

/* Loads json into a fresh config, expects status st and a message holding
 * every fragment in the NULL-terminated list. */
static void expect_load_error(const char *json, pto_status st, ...) {
  pto_config *c = pto_config_new();
  va_list ap;
  const char *frag;
  pto_status got;
  cr_assert_not_null(c);
  got = pto_config_load_string(c, json);
  cr_expect_eq(got, st, "status %s for %s: %s", pto_status_name(got), json,
               pto_config_error(c));
  va_start(ap, st);
  while ((frag = va_arg(ap, const char *)) != NULL)
    cr_expect(strstr(pto_config_error(c), frag) != NULL,
              "for %s: message \"%s\" lacks \"%s\"", json, pto_config_error(c),
              frag);
  va_end(ap);
  pto_config_free(c);
}

/* A temporary directory holding one file `name` with `text`; returns the
 * file's path (static storage). */
static char tmp_dir[64];
static char tmp_path[128];

static const char *write_temp(const char *name, const char *text) {
  FILE *f;
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/pto_config_XXXXXX");
  cr_assert_not_null(mkdtemp(tmp_dir));
  snprintf(tmp_path, sizeof tmp_path, "%s/%s", tmp_dir, name);
  f = fopen(tmp_path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  return tmp_path;
}

static void remove_temp(void) {
  unlink(tmp_path);
  rmdir(tmp_dir);
}

/* ---- loading ------------------------------------------------------------- */

Test(core, config_load_string) {
  pto_config *c = pto_config_new();
  const pto_machine *m;
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_load_string(c,
                                      "{\"machine\": {\"name\": \"box\", "
                                      "\"cube_workers\": 2, "
                                      "\"vector_workers\": 6, "
                                      "\"shared\": false, \"memory\": "
                                      "{\"L1\": \"1MiB\", \"L0A\": 65536, "
                                      "\"L0B\": \"64K\", \"L0C\": \"128 KiB\", "
                                      "\"UB\": \"192KiB\"}},"
                                      " \"knobs\": {\"nbuffer\": 4, "
                                      "\"l1_reuse\": 3, \"policy\": "
                                      "\"locality\", \"fuse\": false}}"),
               PTO_OK, "%s", pto_config_error(c));
  m = pto_config_machine(c);
  cr_expect_str_eq(m->name, "box");
  cr_expect_eq(m->workers[PTO_CORE_CUBE], 2);
  cr_expect_eq(m->workers[PTO_CORE_VECTOR], 6);
  cr_expect_not(m->shared);
  cr_expect_eq(m->mem[PTO_MEM_L1], MIB);
  cr_expect_eq(m->mem[PTO_MEM_L0A], 64 * KIB);
  cr_expect_eq(m->mem[PTO_MEM_L0B], 64 * KIB);
  cr_expect_eq(m->mem[PTO_MEM_L0C], 128 * KIB);
  cr_expect_eq(m->mem[PTO_MEM_UB], 192 * KIB);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_NBUFFER), 4);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_L1_REUSE), 3);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_POLICY), 2);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_FUSE), 0);

  /* integers for policy and fuse; a later load merges */
  cr_assert_eq(
      pto_config_load_string(c, "{\"knobs\": {\"policy\": 0, \"fuse\": 1}}"),
      PTO_OK);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_POLICY), 0);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_FUSE), 1);
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_NBUFFER), 4);
  cr_expect_str_eq(pto_config_machine(c)->name, "box");

  cr_assert_eq(pto_config_load_string(c, "{\"machine\": \"ascend\"}"), PTO_OK);
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_CUBE], 24);
  cr_assert_eq(pto_config_load_string(c, "{\"machine\": \"host\"}"), PTO_OK);
  cr_expect_str_eq(pto_config_machine(c)->name, "host");
  cr_assert_eq(pto_config_load_string(c, "{}"), PTO_OK);
  pto_config_free(c);
}

Test(core, config_size_strings) {
  static const struct {
    const char *size;
    size_t bytes;
  } ok[] = {{"0", 0},
            {"4096", 4096},
            {"512K", 512 * KIB},
            {"512KB", 512 * KIB},
            {"512KiB", 512 * KIB},
            {"2 MiB", 2 * MIB},
            {"3M", 3 * MIB},
            {"1GiB", 1024 * MIB},
            {"7B", 7},
            {"16kib", 16 * KIB}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    pto_config *c = pto_config_new();
    char json[128];
    cr_assert_not_null(c);
    snprintf(json, sizeof json, "{\"machine\": {\"memory\": {\"L1\": \"%s\"}}}",
             ok[i].size);
    if (ok[i].bytes == 0) {
      /* a valid size, but a machine with cube workers needs L1 */
      cr_expect_eq(pto_config_load_string(c, json), PTO_ECONFIG);
      EXPECT_ERR_HAS(c, "L1 capacity is 0");
    } else {
      cr_expect_eq(pto_config_load_string(c, json), PTO_OK, "%s: %s",
                   ok[i].size, pto_config_error(c));
      cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_L1], ok[i].bytes, "%s",
                   ok[i].size);
    }
    pto_config_free(c);
  }
}

Test(core, config_load_file) {
  const char *path = write_temp("tune.json", "{\n"
                                             "  \"knobs\": {\"nbuffer\": 8},\n"
                                             "  \"labels\": {\"mlp\": "
                                             "{\"fuse\": false}}\n"
                                             "}\n");
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_expect_eq(pto_config_load_file(c, path), PTO_OK, "%s",
               pto_config_error(c));
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_NBUFFER), 8);
  cr_expect_eq(pto_config_knob(c, "mlp.up", PTO_KNOB_FUSE), 0);
  cr_expect_eq(pto_config_knob(c, "attn", PTO_KNOB_FUSE), 1);
  remove_temp();
  pto_config_free(c);
}

Test(core, config_example_files_load) {
  /* tools/configs/ relative to this source file */
  char dir[PATH_MAX], path[PATH_MAX + 64];
  pto_config *c = pto_config_new();
  pto_machine asc = pto_machine_ascend();
  char *slash;
  cr_assert_not_null(c);
  snprintf(dir, sizeof dir, "%s", __FILE__);
  slash = strrchr(dir, '/');
  cr_assert_not_null(slash, "__FILE__ is not a path: %s", __FILE__);
  *slash = '\0';

  snprintf(path, sizeof path, "%s/../tools/configs/ascend.json", dir);
  cr_assert_eq(pto_config_load_file(c, path), PTO_OK, "%s",
               pto_config_error(c));
  cr_expect_eq(memcmp(pto_config_machine(c), &asc, sizeof asc), 0);

  snprintf(path, sizeof path, "%s/../tools/configs/host-split.json", dir);
  cr_assert_eq(pto_config_load_file(c, path), PTO_OK, "%s",
               pto_config_error(c));
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_CUBE], 1);
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_VECTOR], 1);
  cr_expect_not(pto_config_machine(c)->shared);
  {
    pto_machine host;
    cr_assert_eq(pto_machine_host(&host), PTO_OK);
    /* memory omitted: the host's */
    cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_UB], host.mem[PTO_MEM_UB]);
  }
  pto_config_free(c);

  /* the DSA prefill tuning: one cube tile per head for the absorption, the
   * merge's vector tile; labels it does not name keep theirs */
  c = pto_config_new();
  cr_assert_not_null(c);
  snprintf(path, sizeof path, "%s/../tools/configs/dsa-prefill.json", dir);
  cr_assert_eq(pto_config_load_file(c, path), PTO_OK, "%s",
               pto_config_error(c));
  pto_tile_shape t = {0, 0, 0, 0, 0};
  cr_expect_eq(pto_config_tile(c, "mla_prolog.q_absorb", &t), 1);
  cr_expect(t.cube_m == 512 && t.cube_n == 512 && t.cube_k == 128);
  t = (pto_tile_shape){0, 0, 0, 0, 0};
  cr_expect_eq(pto_config_tile(c, "attention.merge.add", &t), 1);
  cr_expect(t.vec_rows == 128 && t.vec_cols == 512);
  t = (pto_tile_shape){0, 0, 0, 0, 0};
  cr_expect_eq(pto_config_tile(c, "attention", &t), 0);
  pto_config_free(c);
}

Test(core, config_machine_object_defaults) {
  pto_config *c = pto_config_new();
  pto_machine host;
  cr_assert_not_null(c);
  cr_assert_eq(pto_machine_host(&host), PTO_OK);
  cr_assert_eq(pto_config_load_string(c, "{\"machine\": \"ascend\"}"), PTO_OK);
  /* no name: amends the current machine (ascend) */
  cr_assert_eq(pto_config_load_string(
                   c, "{\"machine\": {\"memory\": {\"UB\": \"256KiB\"}}}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_expect_str_eq(pto_config_machine(c)->name, "ascend");
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_VECTOR], 48);
  cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_UB], 256 * KIB);
  cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_L1], 512 * KIB);
  /* a name: a new machine, omitted fields from the host */
  cr_assert_eq(pto_config_load_string(
                   c, "{\"machine\": {\"name\": \"mine\", \"cube_workers\": 1,"
                      " \"vector_workers\": 1, \"shared\": false}}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_expect_str_eq(pto_config_machine(c)->name, "mine");
  cr_expect_eq(pto_config_machine(c)->mem[PTO_MEM_L1], host.mem[PTO_MEM_L1]);
  /* shared: one count sets both */
  cr_assert_eq(pto_config_load_string(
                   c, "{\"machine\": {\"shared\": true, \"cube_workers\": 3}}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_expect_eq(pto_config_machine(c)->workers[PTO_CORE_VECTOR], 3);
  pto_config_free(c);
}

/* ---- load errors --------------------------------------------------------- */

Test(core, config_missing_file) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_expect_eq(pto_config_load_file(c, "/nonexistent/dir/tune.json"), PTO_EIO);
  EXPECT_ERR_HAS(c, "/nonexistent/dir/tune.json");
  EXPECT_ERR_HAS(c, "No such file or directory");
  cr_expect_eq(pto_config_load_file(c, "/tmp"), PTO_EIO); /* a directory */
  EXPECT_ERR_HAS(c, "/tmp");
  cr_expect_eq(pto_config_load_file(c, NULL), PTO_EINVAL);
  cr_expect_eq(pto_config_load_string(c, NULL), PTO_EINVAL);
  cr_expect_eq(pto_config_load_file(NULL, "x.json"), PTO_EINVAL);
  pto_config_free(c);
}

Test(core, config_syntax_error_has_line_and_column) {
  const char *path = write_temp("tune.json", "{\n"
                                             "  \"knobs\": {\n"
                                             "    \"nbuffer\": x\n"
                                             "  }\n"
                                             "}\n");
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  cr_expect_eq(pto_config_load_file(c, path), PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "tune.json:3:16: syntax error:");
  cr_expect_eq(strncmp(pto_config_error(c), path, strlen(path)), 0, "%s",
               pto_config_error(c));
  remove_temp();

  cr_expect_eq(pto_config_load_string(c, "{\"knobs\": {\"fuse\": 1,}}"),
               PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "<string>:1:");
  EXPECT_ERR_HAS(c, "syntax error");
  pto_config_free(c);

  expect_load_error("", PTO_ECONFIG, "syntax error", NULL);
  expect_load_error("[1, 2]", PTO_ECONFIG, "top level", "expected an object",
                    NULL);
  /* a repeated key is most likely a typo */
  expect_load_error("{\"knobs\": {\"fuse\": 1, \"fuse\": 0}}", PTO_ECONFIG,
                    "duplicate", NULL);
}

/* machine.panel: the cube's panel widths, planned with; bad ones refused */
Test(core, config_machine_panel) {
  pto_config *c = pto_config_new();
  cr_assert_eq(pto_config_load_string(c, "{\"machine\": {\"name\": \"npu\", "
                                         "\"panel\": [16, 16]}}"),
               PTO_OK, "%s", pto_config_error(c));
  cr_expect_eq(pto_config_machine(c)->panel[0], 16);
  cr_expect_eq(pto_config_machine(c)->panel[1], 16);
  pto_config_free(c);
  expect_load_error("{\"machine\": {\"panel\": [16, 0]}}", PTO_ECONFIG,
                    "machine.panel: expected [rows, cols] of the cube's "
                    "panels, each 1..256 ([0, 0]: the host's), got",
                    NULL);
  expect_load_error("{\"machine\": {\"panel\": 16}}", PTO_ECONFIG,
                    "machine.panel: expected [rows, cols]", NULL);
}

Test(core, config_unknown_keys_name_their_path) {
  expect_load_error("{\"machine\": {\"memroy\": {}}}", PTO_ECONFIG,
                    "machine.memroy: unknown key (expected name, "
                    "cube_workers, vector_workers, shared, memory, panel)",
                    NULL);
  expect_load_error("{\"machine\": {\"memory\": {\"L2\": 1}}}", PTO_ECONFIG,
                    "machine.memory.L2: unknown key (expected L1, L0A, L0B, "
                    "L0C, UB)",
                    NULL);
  expect_load_error("{\"knobs\": {\"nbufer\": 1}}", PTO_ECONFIG,
                    "knobs.nbufer: unknown key (expected nbuffer, l1_reuse, "
                    "policy, fuse)",
                    NULL);
  expect_load_error("{\"labels\": {\"attn\": {\"vec_tyle\": [1, 2]}}}",
                    PTO_ECONFIG, "labels.attn.vec_tyle: unknown key",
                    "vec_tile, cube_tile", NULL);
  expect_load_error("{\"knob\": {}}", PTO_ECONFIG,
                    "knob: unknown key (expected machine, knobs, labels, "
                    "stage_barriers)",
                    NULL);
}

Test(core, config_bad_sizes) {
  expect_load_error("{\"machine\": {\"memory\": {\"UB\": \"abc\"}}}",
                    PTO_ECONFIG, "machine.memory.UB: expected a size",
                    "got \"abc\"", NULL);
  expect_load_error("{\"machine\": {\"memory\": {\"UB\": \"12XB\"}}}",
                    PTO_ECONFIG, "machine.memory.UB", "\"12XB\"", NULL);
  expect_load_error("{\"machine\": {\"memory\": {\"L1\": -5}}}", PTO_ECONFIG,
                    "machine.memory.L1: expected a size", "got -5", NULL);
  expect_load_error("{\"machine\": {\"memory\": {\"L1\": 1.5}}}", PTO_ECONFIG,
                    "machine.memory.L1: expected a size", NULL);
  expect_load_error("{\"machine\": {\"memory\": {\"L1\": "
                    "\"99999999999999999999999KiB\"}}}",
                    PTO_ECONFIG, "machine.memory.L1: expected a size", NULL);
  expect_load_error("{\"machine\": {\"memory\": [1]}}", PTO_ECONFIG,
                    "machine.memory: expected an object", NULL);
}

Test(core, config_knob_out_of_range) {
  pto_config *c;
  expect_load_error("{\"knobs\": {\"nbuffer\": 70000}}", PTO_EINVAL,
                    "knobs.nbuffer", "70000", "[0, 65536]", NULL);
  expect_load_error("{\"knobs\": {\"l1_reuse\": 0}}", PTO_EINVAL, "l1_reuse",
                    "= 0", "[1, 65536]", NULL);
  expect_load_error("{\"knobs\": {\"policy\": 3}}", PTO_EINVAL, "policy", "3",
                    "[0, 2]", NULL);
  expect_load_error("{\"knobs\": {\"fuse\": 2}}", PTO_EINVAL, "fuse", "[0, 1]",
                    NULL);
  expect_load_error("{\"labels\": {\"a.b\": {\"nbuffer\": -1}}}", PTO_EINVAL,
                    "labels.a.b.nbuffer", "-1", "[0, 65536]", NULL);

  c = pto_config_new();
  cr_assert_not_null(c);
  cr_expect_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 65537),
               PTO_EINVAL);
  EXPECT_ERR_HAS(c, "nbuffer");
  EXPECT_ERR_HAS(c, "65537");
  EXPECT_ERR_HAS(c, "[0, 65536]");
  cr_expect_eq(pto_config_set_knob(c, "mlp", PTO_KNOB_L1_REUSE, 0), PTO_EINVAL);
  EXPECT_ERR_HAS(c, "mlp: l1_reuse = 0 is out of range [1, 65536]");
  cr_expect_eq(pto_config_knob(c, "mlp", PTO_KNOB_L1_REUSE), 1);
  cr_expect_eq(pto_config_set_knob(c, NULL, PTO_KNOB_COUNT, 0), PTO_EINVAL);
  cr_expect_eq(pto_config_set_knob(c, "", PTO_KNOB_FUSE, 0), PTO_EINVAL);
  cr_expect_eq(pto_config_set_knob(NULL, NULL, PTO_KNOB_FUSE, 0), PTO_EINVAL);
  /* a success clears the message */
  cr_expect_eq(pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, 65536), PTO_OK);
  cr_expect_str_eq(pto_config_error(c), "");
  pto_config_free(c);
}

Test(core, config_machine_errors) {
  expect_load_error("{\"machine\": {\"cube_workers\": -1}}", PTO_ECONFIG,
                    "machine.cube_workers: expected a non-negative integer",
                    "got -1", NULL);
  expect_load_error("{\"machine\": {\"vector_workers\": 4294967296}}",
                    PTO_ECONFIG, "machine.vector_workers", "too many", NULL);
  expect_load_error("{\"machine\": {\"shared\": false, "
                    "\"cube_workers\": 0, \"vector_workers\": 2}}",
                    PTO_ECONFIG, "machine: 0 cube workers", NULL);
  expect_load_error("{\"machine\": {\"shared\": true, "
                    "\"cube_workers\": 3, \"vector_workers\": 2}}",
                    PTO_ECONFIG, "machine: shared", "(3)", "(2)", NULL);
  expect_load_error("{\"machine\": {\"memory\": {\"L0C\": 0}}}", PTO_ECONFIG,
                    "machine: L0C capacity is 0", "cube workers", NULL);
  expect_load_error("{\"machine\": {\"name\": "
                    "\"a-name-that-is-much-too-long-to-fit\"}}",
                    PTO_ECONFIG, "machine.name", "too long", NULL);
  expect_load_error("{\"machine\": {\"name\": \"\"}}", PTO_ECONFIG,
                    "machine.name: expected a non-empty string", NULL);
  expect_load_error("{\"machine\": \"tpu\"}", PTO_ECONFIG,
                    "machine: unknown machine \"tpu\"", NULL);
  expect_load_error("{\"machine\": 3}", PTO_ECONFIG,
                    "machine: expected \"host\", \"ascend\" or an object",
                    NULL);
}

Test(core, config_type_errors) {
  expect_load_error("{\"knobs\": {\"l1_reuse\": \"x\"}}", PTO_ECONFIG,
                    "knobs.l1_reuse: expected an integer", "got \"x\"", NULL);
  expect_load_error("{\"knobs\": {\"nbuffer\": true}}", PTO_ECONFIG,
                    "knobs.nbuffer: expected an integer", "got true", NULL);
  expect_load_error("{\"knobs\": {\"nbuffer\": 2.5}}", PTO_ECONFIG,
                    "knobs.nbuffer: expected an integer", "got 2.5", NULL);
  expect_load_error("{\"knobs\": {\"fuse\": \"yes\"}}", PTO_ECONFIG,
                    "knobs.fuse: expected a boolean or 0/1", NULL);
  expect_load_error("{\"knobs\": {\"policy\": \"fifoo\"}}", PTO_ECONFIG,
                    "knobs.policy: unknown value \"fifoo\"",
                    "fifo, critical-path, locality", NULL);
  expect_load_error("{\"knobs\": {\"policy\": null}}", PTO_ECONFIG,
                    "knobs.policy: expected", "got null", NULL);
  expect_load_error("{\"knobs\": []}", PTO_ECONFIG,
                    "knobs: expected an object, got an array of 0", NULL);
  expect_load_error("{\"machine\": {\"shared\": 1}}", PTO_ECONFIG,
                    "machine.shared: expected a boolean", NULL);
  expect_load_error("{\"labels\": []}", PTO_ECONFIG,
                    "labels: expected an object", NULL);
  expect_load_error("{\"labels\": {\"a\": 1}}", PTO_ECONFIG,
                    "labels.a: expected an object", NULL);
  expect_load_error("{\"labels\": {\"\": {\"fuse\": 0}}}", PTO_ECONFIG,
                    "empty label", NULL);
  expect_load_error("{\"labels\": {\"a\": {\"vec_tile\": [1]}}}", PTO_ECONFIG,
                    "labels.a.vec_tile: expected [rows, cols], got an array "
                    "of 1",
                    NULL);
  expect_load_error("{\"labels\": {\"a\": {\"cube_tile\": [128, 0]}}}",
                    PTO_ECONFIG,
                    "labels.a.cube_tile: expected [m, n, k], got an array of 2",
                    NULL);
  expect_load_error("{\"labels\": {\"a\": {\"cube_tile\": [1, 2, -3]}}}",
                    PTO_ECONFIG, "labels.a.cube_tile", "element 2 is -3", NULL);
  expect_load_error("{\"labels\": {\"a\": {\"cube_tile\": \"64x64\"}}}",
                    PTO_ECONFIG, "labels.a.cube_tile: expected [m, n, k]",
                    NULL);
}

Test(core, config_failed_load_leaves_config_unchanged) {
  pto_config *c = pto_config_new(), *before;
  char *a, *b;
  cr_assert_not_null(c);
  cr_assert_eq(pto_config_load_string(
                   c, "{\"machine\": \"ascend\", \"knobs\": {\"nbuffer\": 2},"
                      " \"labels\": {\"mlp\": {\"fuse\": 0}}}"),
               PTO_OK);
  before = pto_config_clone(c);
  cr_assert_not_null(before);
  /* valid parts come first, the error last: none of it may stick */
  cr_expect_eq(pto_config_load_string(
                   c, "{\"machine\": \"host\", \"knobs\": {\"nbuffer\": 9},"
                      " \"labels\": {\"mlp\": {\"fuse\": 1}, \"new\": "
                      "{\"nbuffer\": 5}, \"z\": {\"l1_reuse\": \"x\"}}}"),
               PTO_ECONFIG);
  EXPECT_ERR_HAS(c, "labels.z.l1_reuse");
  cr_expect(pto__config_equal(c, before));
  cr_expect_str_eq(pto_config_machine(c)->name, "ascend");
  cr_expect_eq(pto_config_knob(c, NULL, PTO_KNOB_NBUFFER), 2);
  cr_expect_eq(pto_config_knob(c, "mlp", PTO_KNOB_FUSE), 0);
  cr_expect_eq(pto_config_knob(c, "new", PTO_KNOB_NBUFFER), 2);
  a = pto_config_to_json(c);
  b = pto_config_to_json(before);
  cr_assert_not_null(a);
  cr_assert_not_null(b);
  cr_expect_str_eq(a, b);
  free(a);
  free(b);
  pto_config_free(before);
  pto_config_free(c);
}
