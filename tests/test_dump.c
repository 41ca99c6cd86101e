/* partitioner: dumps of every compile stage, checked on the PyPTO example
 * (3 programs, 7 tasks, 6 edges on the Ascend-like machine). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

typedef struct compiled {
  pto_program *p;
  pto_config *c;
  pto_executable *e;
} compiled;

static pto_config *ascend(void) {
  pto_config *c = pto_config_new();
  cr_assert_not_null(c);
  pto_machine m = pto_machine_ascend();
  cr_assert_eq(pto_config_set_machine(c, &m), PTO_OK);
  return c;
}

/* C = rowsum(matmul(A*2 + B, W)) under the label "example". */
static compiled pypto(void) {
  compiled r;
  r.p = pto_program_new("pypto-example");
  const int64_t ab[2] = {64, 64}, w[2] = {64, 32};
  pto_tensor *A = pto_input(r.p, "A", PTO_F32, 2, ab);
  pto_tensor *B = pto_input(r.p, "B", PTO_F32, 2, ab);
  pto_tensor *W = pto_input(r.p, "W", PTO_F32, 2, w);
  pto_program_set_vec_tile(r.p, 32, 32);
  pto_program_push_label(r.p, "example");
  pto_tensor *x = pto_add(r.p, pto_muls(r.p, A, 2.0), B);
  pto_output(r.p, pto_rowsum(r.p, pto_matmul(r.p, x, W, 0)), "C");
  pto_program_pop_label(r.p);
  cr_assert_eq(pto_program_status(r.p), PTO_OK, "%s", pto_program_error(r.p));
  r.c = ascend();
  r.e = NULL;
  cr_assert_eq(pto_compile(r.p, r.c, &r.e), PTO_OK, "%s",
               pto_program_error(r.p));
  return r;
}

static void release(compiled *r) {
  pto_executable_free(r->e);
  pto_config_free(r->c);
  pto_program_free(r->p);
}

/* The dump as a NUL-terminated string (free it). */
static char *dump(const pto_executable *e, pto_stage s, pto_dump_format f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_not_null(m);
  pto_status st = pto_executable_dump(e, s, f, m);
  cr_assert_eq(fclose(m), 0);
  cr_assert_eq(st, PTO_OK, "stage %d format %d: %s", s, f, pto_strerror(st));
  cr_assert_not_null(buf);
  return buf;
}

static json_t *dump_json(const pto_executable *e, pto_stage s) {
  char *text = dump(e, s, PTO_DUMP_JSON);
  json_error_t err;
  json_t *j = json_loads(text, 0, &err);
  cr_assert_not_null(j, "stage %d: JSON line %d: %s", s, err.line, err.text);
  free(text);
  cr_assert(json_is_object(j));
  return j;
}

static json_int_t count(json_t *j, const char *key) {
  json_t *c = json_object_get(json_object_get(j, "counts"), key);
  cr_assert(json_is_integer(c), "counts.%s", key);
  return json_integer_value(c);
}

static size_t arr(json_t *j, const char *key) {
  json_t *a = json_object_get(j, key);
  cr_assert(json_is_array(a), "%s is not an array", key);
  return json_array_size(a);
}

/* DOT shape: "digraph" first, braces balanced outside quoted strings,
 * strings closed, "}" last. */
static void check_dot(const char *text, const char *what) {
  cr_assert_eq(strncmp(text, "digraph ", 8), 0, "%s: %.40s", what, text);
  int depth = 0, in_str = 0, max = 0;
  for (const char *c = text; *c; c++) {
    if (in_str) {
      if (*c == '\\' && c[1])
        c++;
      else if (*c == '"')
        in_str = 0;
      continue;
    }
    if (*c == '"')
      in_str = 1;
    else if (*c == '{')
      depth++;
    else if (*c == '}')
      cr_assert_geq(--depth, 0, "%s: '}' without '{'", what);
    max = depth > max ? depth : max;
  }
  cr_assert_not(in_str, "%s: unterminated string", what);
  cr_assert_eq(depth, 0, "%s: unbalanced braces", what);
  cr_assert_geq(max, 1, "%s", what);
  size_t n = strlen(text);
  cr_assert(n >= 2 && !strcmp(text + n - 2, "}\n"), "%s: no final '}'", what);
}

Test(partitioner, dump_every_stage_both_formats_parses) {
  compiled r = pypto();
  static const char *const stages[] = {"tensor", "tile", "subgraph", "exec"};
  for (int s = 0; s < PTO_STAGE_COUNT; s++) {
    char *dot = dump(r.e, (pto_stage)s, PTO_DUMP_DOT);
    check_dot(dot, stages[s]);
    cr_expect(strstr(dot, "example") != NULL, "%s DOT has the label",
              stages[s]);
    free(dot);
    json_t *j = dump_json(r.e, (pto_stage)s);
    cr_expect_str_eq(json_string_value(json_object_get(j, "stage")), stages[s]);
    cr_expect_str_eq(json_string_value(json_object_get(j, "program")),
                     "pypto-example");
    cr_expect_str_eq(json_string_value(json_object_get(j, "format")),
                     "pto-dump");
    json_decref(j);
  }
  release(&r);
}

Test(partitioner, dump_exec_has_7_tasks_and_6_edges) {
  compiled r = pypto();
  json_t *j = dump_json(r.e, PTO_STAGE_EXEC);
  cr_expect_eq(count(j, "tasks"), 7);
  cr_expect_eq(count(j, "edges"), 6);
  cr_assert_eq(arr(j, "tasks"), 7);
  cr_expect_eq(arr(j, "edges"), 6);
  size_t succ = 0, pred = 0, cube = 0;
  json_t *tasks = json_object_get(j, "tasks");
  for (size_t t = 0; t < 7; t++) {
    json_t *task = json_array_get(tasks, t);
    cr_expect_eq(json_integer_value(json_object_get(task, "id")),
                 (json_int_t)t);
    cr_expect_eq(json_integer_value(json_object_get(task, "program")),
                 pto_executable_task_program(r.e, (uint32_t)t));
    cr_expect_str_eq(json_string_value(json_object_get(task, "label")),
                     "example");
    const uint32_t *s;
    uint32_t n = pto_executable_task_succ(r.e, (uint32_t)t, &s);
    json_t *js = json_object_get(task, "successors");
    cr_assert_eq(json_array_size(js), n);
    for (uint32_t k = 0; k < n; k++)
      cr_expect_eq(json_integer_value(json_array_get(js, k)), s[k]);
    succ += n;
    pred += (size_t)json_integer_value(json_object_get(task, "n_pred"));
    cube += !strcmp(json_string_value(json_object_get(task, "core")), "cube");
  }
  cr_expect_eq(succ, 6);
  cr_expect_eq(pred, 6);
  cr_expect_eq(cube, 1, "one matmul task");
  /* every edge is some task's successor */
  json_t *edges = json_object_get(j, "edges");
  for (size_t k = 0; k < json_array_size(edges); k++) {
    json_t *ed = json_array_get(edges, k);
    json_int_t from = json_integer_value(json_object_get(ed, "from"));
    json_int_t to = json_integer_value(json_object_get(ed, "to"));
    const uint32_t *s;
    uint32_t n = pto_executable_task_succ(r.e, (uint32_t)from, &s);
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
      found |= s[i] == to;
    cr_expect(found, "edge %lld -> %lld", (long long)from, (long long)to);
  }
  json_decref(j);
  /* DOT: one node per task, one arrow per edge, colored by core */
  char *dot = dump(r.e, PTO_STAGE_EXEC, PTO_DUMP_DOT);
  int arrows = 0;
  for (const char *c = dot; (c = strstr(c, " -> ")); c++)
    arrows++;
  cr_expect_eq(arrows, 6);
  cr_expect(strstr(dot, "task6 [") && !strstr(dot, "task7 ["));
  cr_expect(strstr(dot, "#f4a261") && strstr(dot, "#8ecae6"),
            "cube and vector colors");
  free(dot);
  release(&r);
}

Test(partitioner, dump_subgraph_has_3_programs) {
  compiled r = pypto();
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(r.e, &st), PTO_OK);
  json_t *j = dump_json(r.e, PTO_STAGE_SUBGRAPH);
  cr_expect_eq(count(j, "programs"), 3);
  cr_assert_eq(arr(j, "programs"), 3);
  cr_assert_eq(arr(j, "subgraphs"), st.subgraphs);
  cr_expect_eq(count(j, "subgraphs"), st.subgraphs);
  /* 4 fused MulS+Add subgraphs feed the matmul, which feeds 2 rowsums */
  cr_expect_eq(arr(j, "edges"), 6);
  json_t *progs = json_object_get(j, "programs");
  json_int_t tasks = 0, sgs = 0;
  for (size_t q = 0; q < 3; q++) {
    json_t *pr = json_array_get(progs, q);
    cr_expect_str_eq(json_string_value(json_object_get(pr, "name")),
                     pto_executable_program_name(r.e, (uint32_t)q));
    tasks += json_integer_value(json_object_get(pr, "tasks"));
    sgs += json_integer_value(json_object_get(pr, "subgraphs"));
    json_t *tiles = json_object_get(pr, "tiles");
    cr_assert_gt(json_array_size(tiles), 0);
    json_t *mem = json_object_get(pr, "mem");
    /* tiles lie inside their level's planned use */
    for (size_t t = 0; t < json_array_size(tiles); t++) {
      json_t *tile = json_array_get(tiles, t);
      const char *lvl = json_string_value(json_object_get(tile, "level"));
      json_int_t end = json_integer_value(json_object_get(tile, "offset")) +
                       json_integer_value(json_object_get(tile, "bytes"));
      cr_expect_leq(end, json_integer_value(json_object_get(mem, lvl)),
                    "program %zu tile %zu in %s", q, t, lvl);
    }
    cr_expect_gt(json_array_size(json_object_get(pr, "instructions")), 0);
  }
  cr_expect_eq(tasks, 7);
  cr_expect_eq(sgs, (json_int_t)st.subgraphs);
  /* each subgraph's program is its task's program */
  json_t *sg = json_object_get(j, "subgraphs");
  for (size_t k = 0; k < json_array_size(sg); k++) {
    json_t *s = json_array_get(sg, k);
    json_int_t t = json_integer_value(json_object_get(s, "task"));
    cr_expect_eq(json_integer_value(json_object_get(s, "program")),
                 pto_executable_task_program(r.e, (uint32_t)t));
    cr_expect_gt(json_array_size(json_object_get(s, "units")), 0);
  }
  json_decref(j);
  char *dot = dump(r.e, PTO_STAGE_SUBGRAPH, PTO_DUMP_DOT);
  cr_expect(strstr(dot, "subgraph cluster_p2 {") && !strstr(dot, "cluster_p3"));
  free(dot);
  release(&r);
}

Test(partitioner, dump_tile_graph_counts_and_edges) {
  compiled r = pypto();
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(r.e, &st), PTO_OK);
  json_t *j = dump_json(r.e, PTO_STAGE_TILE);
  cr_assert_eq(arr(j, "instructions"), st.tile_instructions);
  cr_expect_eq(count(j, "instructions"), st.tile_instructions);
  cr_expect_eq(arr(j, "edges"),
               (size_t)(count(j, "local_edges") + count(j, "global_edges")));
  /* 4 MulS units store the tiles that 4 Add units load exactly */
  cr_expect_geq(count(j, "global_edges"), 4);
  json_t *insts = json_object_get(j, "instructions");
  size_t n_global = 0;
  for (size_t i = 0; i < json_array_size(insts); i++) {
    json_t *in = json_array_get(insts, i);
    const char *name = json_string_value(json_object_get(in, "name"));
    json_t *win = json_object_get(in, "window");
    int mem = !strcmp(name, "TLOAD") || !strcmp(name, "TSTORE");
    cr_expect_eq(win != NULL, mem, "instruction %zu %s", i, name);
    if (win) {
      n_global++;
      cr_expect(json_is_string(json_object_get(win, "storage")));
      cr_expect_gt(json_integer_value(json_object_get(win, "rows")), 0);
    }
    cr_expect_str_eq(json_string_value(json_object_get(in, "label")),
                     "example");
    json_t *src = json_object_get(in, "src");
    for (size_t k = 0; k < json_array_size(src); k++)
      cr_expect(
          json_is_string(json_object_get(json_array_get(src, k), "dtype")));
  }
  cr_expect_gt(n_global, 0);
  /* edges go forward */
  json_t *edges = json_object_get(j, "edges");
  for (size_t k = 0; k < json_array_size(edges); k++) {
    json_t *ed = json_array_get(edges, k);
    cr_expect_lt(json_integer_value(json_object_get(ed, "from")),
                 json_integer_value(json_object_get(ed, "to")));
  }
  cr_expect_eq(arr(j, "units"), (size_t)count(j, "units"));
  json_decref(j);
  char *dot = dump(r.e, PTO_STAGE_TILE, PTO_DUMP_DOT);
  cr_expect(strstr(dot, "subgraph cluster_0 {") != NULL);
  cr_expect(strstr(dot, "TMATMUL") != NULL);
  free(dot);
  release(&r);
}

Test(partitioner, dump_tensor_graph) {
  compiled r = pypto();
  json_t *j = dump_json(r.e, PTO_STAGE_TENSOR);
  cr_expect_eq(count(j, "ops"), 4);
  cr_assert_eq(arr(j, "ops"), 4);
  cr_expect_eq(arr(j, "tensors"), 7, "A B W and four results");
  cr_expect_eq(arr(j, "edges"), 10, "6 operands, 4 results");
  json_t *ops = json_object_get(j, "ops");
  static const char *const names[] = {"muls", "add", "matmul", "rowsum"};
  for (size_t n = 0; n < 4; n++) {
    json_t *op = json_array_get(ops, n);
    cr_expect_str_eq(json_string_value(json_object_get(op, "op")), names[n]);
    cr_expect_str_eq(json_string_value(json_object_get(op, "label")),
                     "example");
    json_t *vec = json_object_get(json_object_get(op, "tile"), "vec");
    cr_expect_eq(json_integer_value(json_array_get(vec, 0)), 32);
  }
  json_t *a = json_array_get(json_object_get(j, "tensors"), 0);
  cr_expect_str_eq(json_string_value(json_object_get(a, "name")), "A");
  cr_expect_str_eq(json_string_value(json_object_get(a, "kind")), "input");
  json_t *shape = json_object_get(a, "shape");
  cr_expect_eq(json_integer_value(json_array_get(shape, 1)), 64);
  json_decref(j);
  release(&r);
}

Test(partitioner, dump_views_output_copies_and_quotes) {
  /* names that need escaping, a transposed view that is an output (copied
   * out by a unit with no op) */
  pto_program *p = pto_program_new("quote\"d\\prog");
  const int64_t s[2] = {64, 32};
  pto_tensor *x = pto_input(p, "x\"1", PTO_F32, 2, s);
  pto_program_set_vec_tile(p, 16, 16);
  pto_program_push_label(p, "a\"b");
  pto_tensor *y = pto_exp(p, x);
  pto_output(p, pto_transpose(p, y, 0, 1), "out\\t");
  pto_output(p, y, "y");
  pto_program_pop_label(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_config *c = ascend();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, c, &e), PTO_OK, "%s", pto_program_error(p));
  for (int st = 0; st < PTO_STAGE_COUNT; st++) {
    char *dot = dump(e, (pto_stage)st, PTO_DUMP_DOT);
    check_dot(dot, "quoted");
    cr_expect(strstr(dot, "a\\\"b") != NULL, "label escaped in stage %d", st);
    free(dot);
    json_t *j = dump_json(e, (pto_stage)st);
    cr_expect_str_eq(json_string_value(json_object_get(j, "program")),
                     "quote\"d\\prog");
    json_decref(j);
  }
  json_t *j = dump_json(e, PTO_STAGE_TENSOR);
  json_t *ts = json_object_get(j, "tensors");
  int views = 0, outs = 0;
  for (size_t k = 0; k < json_array_size(ts); k++) {
    json_t *t = json_array_get(ts, k);
    if (!strcmp(json_string_value(json_object_get(t, "kind")), "view")) {
      views++;
      cr_expect(json_is_integer(json_object_get(t, "root")));
    }
    outs += (int)json_array_size(json_object_get(t, "outputs"));
  }
  cr_expect_eq(views, 1);
  cr_expect_eq(outs, 2);
  cr_expect_str_eq(
      json_string_value(json_object_get(json_array_get(ts, 0), "name")),
      "x\"1");
  json_decref(j);
  j = dump_json(e, PTO_STAGE_TILE);
  json_t *units = json_object_get(j, "units");
  int copies = 0;
  for (size_t u = 0; u < json_array_size(units); u++)
    copies += json_is_null(json_object_get(json_array_get(units, u), "node"));
  cr_expect_gt(copies, 0, "the transposed output is copied out");
  json_decref(j);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

Test(partitioner, dump_bad_arguments_are_einval) {
  compiled r = pypto();
  FILE *f = tmpfile();
  cr_assert_not_null(f);
  cr_expect_eq(pto_executable_dump(NULL, PTO_STAGE_EXEC, PTO_DUMP_JSON, f),
               PTO_EINVAL);
  cr_expect_eq(pto_executable_dump(r.e, PTO_STAGE_EXEC, PTO_DUMP_JSON, NULL),
               PTO_EINVAL);
  cr_expect_eq(pto_executable_dump(r.e, PTO_STAGE_COUNT, PTO_DUMP_DOT, f),
               PTO_EINVAL);
  cr_expect_eq(pto_executable_dump(r.e, (pto_stage)-1, PTO_DUMP_DOT, f),
               PTO_EINVAL);
  cr_expect_eq(pto_executable_dump(r.e, PTO_STAGE_TILE, (pto_dump_format)2, f),
               PTO_EINVAL);
  cr_expect_eq(pto_executable_dump(r.e, PTO_STAGE_TILE, (pto_dump_format)-1, f),
               PTO_EINVAL);
  cr_expect_eq(ftell(f), 0, "nothing written on a bad argument");
  fclose(f);
  release(&r);
}

Test(partitioner, dump_write_error_is_eio) {
  compiled r = pypto();
  for (int s = 0; s < PTO_STAGE_COUNT; s++)
    for (int fmt = 0; fmt < 2; fmt++) {
      FILE *f = fopen("/dev/null", "r"); /* every write fails */
      cr_assert_not_null(f);
      cr_expect_eq(
          pto_executable_dump(r.e, (pto_stage)s, (pto_dump_format)fmt, f),
          PTO_EIO, "stage %d format %d", s, fmt);
      fclose(f);
    }
  release(&r);
}

static int has_flag(json_t *inst, const char *flag) {
  json_t *f = json_object_get(inst, "flags");
  for (size_t i = 0; i < json_array_size(f); i++)
    if (json_is_string(json_array_get(f, i)) &&
        !strcmp(json_string_value(json_array_get(f, i)), flag))
      return 1;
  return 0;
}

static json_int_t imm(json_t *inst, int i) {
  return json_integer_value(json_array_get(json_object_get(inst, "imm"), i));
}

/* The partitioner loads each matmul operand packed for the micro-kernel:
 * its TLOAD and the matmul carry PTO_TF_PACK_A / PTO_TF_PACK_B with the
 * same panel widths, the tiles hold whole panels, and the accumulator's
 * TLOAD (matmul_acc) stays plain. */
Test(partitioner, matmul_operands_are_loaded_packed) {
  pto_program *p = pto_program_new("packed");
  const int64_t as[2] = {50, 40}, bs[2] = {40, 70}, cs[2] = {50, 70};
  pto_tensor *A = pto_input(p, "A", PTO_F32, 2, as);
  pto_tensor *B = pto_input(p, "B", PTO_F32, 2, bs);
  pto_tensor *C = pto_input(p, "C", PTO_F32, 2, cs);
  pto_program_set_cube_tile(p, 25, 35, 16);
  pto_output(p, pto_matmul_acc(p, C, A, B, 0), "D");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  json_t *j = dump_json(e, PTO_STAGE_SUBGRAPH);
  json_t *progs = json_object_get(j, "programs");
  int matmuls = 0;
  for (size_t q = 0; q < json_array_size(progs); q++) {
    json_t *pr = json_array_get(progs, q);
    json_t *insts = json_object_get(pr, "instructions");
    json_t *tiles = json_object_get(pr, "tiles");
    for (size_t k = 0; k < json_array_size(insts); k++) {
      json_t *mm = json_array_get(insts, k);
      const char *op = json_string_value(json_object_get(mm, "op"));
      if (strncmp(op, "TMATMUL", 7))
        continue;
      matmuls++;
      cr_expect(has_flag(mm, "pack_a") && has_flag(mm, "pack_b"), "%s", op);
      json_int_t mr = imm(mm, 0), nr = imm(mm, 1);
      cr_assert(mr >= 1 && nr >= 1, "panel widths %lld x %lld", (long long)mr,
                (long long)nr);
      for (int s = 0; s < 2; s++) { /* the TLOAD defining src s */
        json_int_t t =
            json_integer_value(json_array_get(json_object_get(mm, "src"), s));
        int found = 0;
        for (size_t l = 0; l < json_array_size(insts); l++) {
          json_t *ld = json_array_get(insts, l);
          if (strcmp(json_string_value(json_object_get(ld, "op")), "TLOAD") ||
              json_integer_value(json_array_get(json_object_get(ld, "dst"),
                                                0)) != t)
            continue;
          found = 1;
          cr_expect(has_flag(ld, s ? "pack_b" : "pack_a"));
          cr_expect_eq(imm(ld, 0), s ? nr : mr);
          json_t *shape = json_object_get(json_array_get(tiles, (size_t)t),
                                          "shape");
          json_int_t ext = json_integer_value(json_array_get(shape, s));
          cr_expect_eq(ext % (s ? nr : mr), 0, "tile extent %lld",
                       (long long)ext);
        }
        cr_expect(found, "src%d of %s has no TLOAD", s, op);
      }
    }
    /* the accumulator's load is plain */
    for (size_t k = 0; k < json_array_size(insts); k++) {
      json_t *ld = json_array_get(insts, k);
      if (strcmp(json_string_value(json_object_get(ld, "op")), "TLOAD"))
        continue;
      json_t *dst = json_array_get(json_object_get(ld, "dst"), 0);
      json_t *tile = json_array_get(tiles, (size_t)json_integer_value(dst));
      const char *lvl = json_string_value(json_object_get(tile, "level"));
      if (!strcmp(lvl, "L0C"))
        cr_expect(!has_flag(ld, "pack_a") && !has_flag(ld, "pack_b"));
    }
  }
  cr_expect_gt(matmuls, 0);
  json_decref(j);
  pto_executable_free(e);
  pto_program_free(p);
}

/* A bf16 matmul's packed operands: kept bf16 (k in pairs, K rounded up to
 * even) where the table's engine multiplies bf16 as it is (avx512bf16),
 * else widened to f32 as they load. An odd cube K exercises the pairs. */
Test(partitioner, bf16_operands_stay_bf16_on_a_bf16_engine) {
  pto_program *p = pto_program_new("packed_bf16");
  const int64_t as[2] = {30, 41}, bs[2] = {41, 50};
  pto_tensor *A = pto_input(p, "A", PTO_BF16, 2, as);
  pto_tensor *B = pto_input(p, "B", PTO_BF16, 2, bs);
  pto_program_set_cube_tile(p, 16, 32, 21);
  pto_output(p, pto_matmul(p, A, B, 0), "C");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  const char *eng = pto_matmul_engine(PTO_BF16);
  const int native = eng && !strcmp(eng, "avx512-bf16");
  json_t *j = dump_json(e, PTO_STAGE_SUBGRAPH);
  json_t *progs = json_object_get(j, "programs");
  int operands = 0;
  for (size_t q = 0; q < json_array_size(progs); q++) {
    json_t *pr = json_object_get(json_array_get(progs, q), "instructions");
    json_t *tiles = json_object_get(json_array_get(progs, q), "tiles");
    for (size_t k = 0; k < json_array_size(pr); k++) {
      json_t *mm = json_array_get(pr, k);
      if (strncmp(json_string_value(json_object_get(mm, "op")), "TMATMUL", 7))
        continue;
      for (int s = 0; s < 2; s++) {
        json_int_t t =
            json_integer_value(json_array_get(json_object_get(mm, "src"), s));
        json_t *tile = json_array_get(tiles, (size_t)t);
        const char *dt = json_string_value(json_object_get(tile, "dtype"));
        cr_expect_str_eq(dt, native ? "bf16" : "f32", "engine %s, src%d", eng,
                         s);
        /* K: A's cols, B's rows, even in pairs */
        json_int_t kext = json_integer_value(
            json_array_get(json_object_get(tile, "shape"), s ? 0 : 1));
        if (native)
          cr_expect_eq(kext % 2, 0, "K extent %lld", (long long)kext);
        operands++;
      }
    }
  }
  cr_expect_gt(operands, 0);
  json_decref(j);
  pto_executable_free(e);
  pto_program_free(p);
}
