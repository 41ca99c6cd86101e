/* tools: pto-trace over traces of real runs (tests/trace_app with
 * PTO_TRACE) and stage dumps (pto-dump --out-dir): the report's numbers
 * against an independent reading of the trace, the comparison, the page,
 * the graphs, and the errors for bad input. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/spawn.h"

static const char *const clean[] = {"PTO_THREADS", "PTO_CONFIG", "PTO_TRACE",
                                    NULL};
static char dir[] = "/tmp/pto_tools_XXXXXX";

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

/* Runs trace_app WORKLOAD once with PTO_TRACE=path (and PTO_CONFIG=config
 * unless NULL). */
static void traced_run(const char *workload, const char *path,
                       const char *config) {
  char tvar[256], cvar[256];
  snprintf(tvar, sizeof tvar, "PTO_TRACE=%s", path);
  snprintf(cvar, sizeof cvar, "PTO_CONFIG=%s", config ? config : "");
  char *env[] = {tvar, config ? cvar : NULL, NULL};
  char *argv[] = {(char *)TRACE_APP, (char *)workload, (char *)"1", NULL};
  spawned r = run_with(argv, env, clean);
  cr_assert_eq(r.status, 0, "%s", r.err);
  spawned_free(&r);
}

/* pto-trace with up to 5 arguments. */
static spawned tool(const char *a, const char *b, const char *c, const char *d,
                    const char *e) {
  char *argv[] = {(char *)PTO_TRACE_TOOL,
                  (char *)a,
                  (char *)b,
                  (char *)c,
                  (char *)d,
                  (char *)e,
                  NULL};
  return run_with(argv, NULL, clean);
}

static json_t *parse(const char *text) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  cr_assert_not_null(j, "%s: %s", je.text, text);
  return j;
}

/* The longest chain of task times, read from the trace file directly. */
static double longest_chain_us(json_t *trace, size_t n) {
  double *dur = calloc(n, sizeof *dur), *best = calloc(n, sizeof *best);
  double *start = calloc(n, sizeof *start);
  json_t **prods = calloc(n, sizeof *prods);
  size_t i;
  json_t *ev;
  json_array_foreach(json_object_get(trace, "traceEvents"), i, ev) {
    if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
      continue;
    json_t *args = json_object_get(ev, "args");
    size_t k = (size_t)json_integer_value(json_object_get(args, "task"));
    dur[k] = json_number_value(json_object_get(ev, "dur"));
    start[k] = json_number_value(json_object_get(ev, "ts"));
    prods[k] = json_object_get(args, "producers");
  }
  /* a producer ends before its consumer starts: by start time is a
   * topological order; relax until nothing changes to be safe */
  double top = 0;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t k = 0; k < n; k++) {
      double b = 0;
      json_t *p;
      size_t j;
      json_array_foreach(prods[k], j, p) {
        double v = best[json_integer_value(p)];
        b = v > b ? v : b;
      }
      if (b + dur[k] > best[k] + 1e-9) {
        best[k] = b + dur[k];
        changed = 1;
      }
      top = best[k] > top ? best[k] : top;
    }
  }
  free(dur);
  free(best);
  free(start);
  free(prods);
  return top;
}

TestSuite(tools, .init = setup, .fini = teardown, .timeout = 120);

Test(tools, report_agrees_with_the_trace_it_reads) {
  char path[256];
  snprintf(path, sizeof path, "%s/ix.json", dir);
  traced_run("indexer", path, NULL);
  json_error_t je;
  json_t *trace = json_load_file(path, 0, &je);
  cr_assert_not_null(trace);
  size_t n = (size_t)json_integer_value(
      json_object_get(json_object_get(trace, "pto"), "tasks"));
  spawned r = tool("report", path, "--json", NULL, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json_t *rep = parse(r.out);
  cr_expect_eq(json_integer_value(json_object_get(rep, "tasks")), (int)n);
  double makespan = json_real_value(json_object_get(rep, "makespan_us"));
  double crit = json_real_value(json_object_get(rep, "critical_path_us"));
  cr_expect(crit > 0 && crit <= makespan + 0.01, "%g of %g", crit, makespan);
  cr_expect(fabs(crit - longest_chain_us(trace, n)) < 0.01, "%g vs %g", crit,
            longest_chain_us(trace, n));
  /* the critical path is a chain of producer -> consumer */
  json_t *path_tasks = json_object_get(rep, "critical_path");
  cr_expect(json_array_size(path_tasks) >= 2, "the indexer's qk then topk");
  for (size_t i = 1; i < json_array_size(path_tasks); i++) {
    json_int_t a = json_integer_value(
        json_object_get(json_array_get(path_tasks, i - 1), "task"));
    json_int_t b = json_integer_value(
        json_object_get(json_array_get(path_tasks, i), "task"));
    size_t j;
    json_t *ev;
    int found = 0;
    json_array_foreach(json_object_get(trace, "traceEvents"), j, ev) {
      json_t *args = json_object_get(ev, "args");
      if (json_integer_value(json_object_get(args, "task")) != b ||
          strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
        continue;
      size_t q;
      json_t *p;
      json_array_foreach(json_object_get(args, "producers"), q, p) found |=
          json_integer_value(p) == a;
    }
    cr_expect(found, "critical path: %lld is a producer of %lld", (long long)a,
              (long long)b);
  }
  /* labels and instructions: the score is one cube instruction, reading
   * the keys in place */
  int qk = 0, wsum = 0;
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(rep, "per_label"), i, x) qk |=
      !strcmp(json_string_value(json_object_get(x, "label")), "indexer.qk");
  /* its rate: the events' flops over their ns, which only matmuls have */
  double flops = 0, ns = 0;
  json_array_foreach(json_object_get(trace, "traceEvents"), i, x) {
    json_t *args = json_object_get(x, "args");
    flops += (double)json_integer_value(
        json_object_get(json_object_get(args, "flops"), "TMATMUL_RELU_WSUM_G"));
    ns += (double)json_integer_value(
        json_object_get(json_object_get(args, "ops"), "TMATMUL_RELU_WSUM_G"));
  }
  cr_expect(flops > 0 && ns > 0, "%g flops in %g ns", flops, ns);
  json_array_foreach(json_object_get(rep, "per_label_instruction"), i, x) {
    const char *ins = json_string_value(json_object_get(x, "instruction"));
    json_t *g = json_object_get(x, "gflops");
    if (!strcmp(json_string_value(json_object_get(x, "label")), "indexer.qk") &&
        !strcmp(ins, "TMATMUL_RELU_WSUM_G")) {
      wsum = 1;
      cr_expect(fabs(json_real_value(g) - flops / ns) < 1e-6 * flops / ns,
                "%g GFLOP/s in the report, %g in the trace", json_real_value(g),
                flops / ns);
    } else {
      cr_expect(json_is_null(g), "%s has a rate", ins);
    }
  }
  cr_expect(qk && wsum, "%s", r.out);
  /* gaps: ordered longest first, each inside the run */
  double last = 1e300;
  json_array_foreach(json_object_get(rep, "idle_gaps"), i, x) {
    double from = json_real_value(json_object_get(x, "from_us")),
           to = json_real_value(json_object_get(x, "to_us")),
           idle = json_real_value(json_object_get(x, "idle_us"));
    cr_expect(from < to && to <= makespan + 0.01 && idle <= last + 1e-9);
    last = idle;
  }
  json_t *tail = json_object_get(rep, "tail_us");
  cr_expect(json_real_value(tail) >= 0 &&
            json_real_value(tail) <= makespan + 0.01);
  json_decref(rep);
  spawned_free(&r);
  r = tool("report", path, NULL, NULL, NULL);
  cr_expect_eq(r.status, 0);
  const char *sections[] = {"makespan",  "critical",          "tail",
                            "core type", "instruction",       "critical path:",
                            "GFLOP/s",   "largest idle gaps", "indexer.topk"};
  for (size_t s = 0; s < sizeof sections / sizeof *sections; s++)
    cr_expect(strstr(r.out, sections[s]), "'%s' in\n%s", sections[s], r.out);
  spawned_free(&r);
  json_decref(trace);
}

/* A two-task trace, written by hand: a score task whose matmul ran all on
 * the scalar reference (ref0 its "ref" entry: `,"ref":{...}` or "") and a
 * softmax whose TEXP ran half on it (ref1). */
static void reference_trace(const char *path, const char *ref0,
                            const char *ref1) {
  char text[2048];
  snprintf(
      text, sizeof text,
      "{\"pto\":{\"format\":\"pto-trace\",\"version\":2,\"machine\":\"test\","
      "\"makespan_ns\":160000,\"tasks\":2,\"workers\":[{\"id\":0,\"serves\":"
      "\"cube\",\"pu\":0},{\"id\":1,\"serves\":\"vector\",\"pu\":1}]},"
      "\"traceEvents\":["
      "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":0,\"dur\":100,\"name\":"
      "\"indexer.qk\",\"args\":{\"task\":0,\"label\":\"indexer.qk\","
      "\"program\":\"p0\",\"producers\":[],\"ops\":{\"TLOAD\":10000,"
      "\"TMATMUL_RELU_WSUM_G\":90000}%s,\"flops\":{\"TMATMUL_RELU_WSUM_G\":"
      "900000}}},"
      "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":60,\"name\":"
      "\"sfa.softmax\",\"args\":{\"task\":1,\"label\":\"sfa.softmax\","
      "\"program\":\"p1\",\"producers\":[0],\"ops\":{\"TEXP\":40000,"
      "\"TADD\":20000}%s}}]}",
      ref0, ref1);
  write_file(path, text);
}

/* The column just after s in the line of text that holds key, or -1. */
static long column_after(const char *text, const char *key, const char *s) {
  const char *line = strstr(text, key);
  if (!line)
    return -1;
  while (line > text && line[-1] != '\n')
    line--;
  const char *x = strstr(line, s), *eol = strchr(line, '\n');
  return x && (!eol || x < eol) ? (long)(x - line + strlen(s)) : -1;
}

Test(tools, report_shows_the_share_of_time_on_the_reference) {
  char a[256], b[256];
  snprintf(a, sizeof a, "%s/ref.json", dir);
  snprintf(b, sizeof b, "%s/simd.json", dir);
  reference_trace(a, ",\"ref\":{\"TMATMUL_RELU_WSUM_G\":90000}",
                  ",\"ref\":{\"TEXP\":20000}");
  reference_trace(b, "", "");
  /* a column of shares, under its heading whether or not the row has a
   * rate, and what it means under the table */
  spawned r = tool("report", a, NULL, NULL, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  long head = column_after(r.out, "GFLOP/s", "reference");
  cr_expect(head > 0, "%s", r.out);
  cr_expect_eq(column_after(r.out, "TMATMUL_RELU_WSUM_G", " 10.0    100.0%"),
               head, "%s", r.out);
  cr_expect_eq(column_after(r.out, "TEXP", "50.0%"), head, "%s", r.out);
  cr_expect(strstr(r.out, "reference: the share") &&
                strstr(r.out, "tileops/ref.c"),
            "%s", r.out);
  spawned_free(&r);
  r = tool("report", a, "--json", NULL, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json_t *rep = parse(r.out);
  const struct {
    const char *op;
    double us;
  } want[] = {
      {"TMATMUL_RELU_WSUM_G", 90}, {"TLOAD", 0}, {"TEXP", 20}, {"TADD", 0}};
  size_t i;
  json_t *x;
  int seen = 0;
  json_array_foreach(json_object_get(rep, "per_label_instruction"), i, x) {
    const char *op = json_string_value(json_object_get(x, "instruction"));
    json_t *us = json_object_get(x, "reference_us");
    cr_expect(json_is_real(us), "%s: %s", op, r.out);
    for (size_t w = 0; w < sizeof want / sizeof *want; w++)
      if (!strcmp(op, want[w].op)) {
        cr_expect(fabs(json_real_value(us) - want[w].us) < 1e-9, "%s: %s", op,
                  r.out);
        seen++;
      }
  }
  cr_expect_eq(seen, 4, "%s", r.out);
  json_decref(rep);
  spawned_free(&r);
  /* none on the reference: no column, and no note */
  r = tool("report", b, NULL, NULL, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "GFLOP/s") && !strstr(r.out, "reference"), "%s",
            r.out);
  spawned_free(&r);
  /* compare: the shares on either side, when either has any */
  r = tool("compare", a, b, NULL, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "reference A") && strstr(r.out, "100.0%") &&
                strstr(r.out, "50.0%"),
            "%s", r.out);
  spawned_free(&r);
  r = tool("compare", b, b, NULL, NULL);
  cr_expect(r.status == 0 && !strstr(r.out, "reference"), "%s", r.out);
  spawned_free(&r);
  r = tool("compare", b, a, "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  rep = parse(r.out);
  json_t *refs = json_object_get(rep, "reference_shares");
  cr_assert_eq(json_array_size(refs), 2, "%s", r.out);
  x = json_array_get(refs, 1);
  cr_expect(
      !strcmp(json_string_value(json_object_get(x, "instruction")), "TEXP") &&
          json_real_value(json_object_get(x, "a")) == 0 &&
          json_real_value(json_object_get(x, "b")) == 0.5,
      "%s", r.out);
  json_decref(rep);
  spawned_free(&r);
}

Test(tools, bad_reference_times_are_named) {
  struct {
    const char *name, *ref, *expect;
  } cases[] = {
      {"ref-type.json", ",\"ref\":\"many\"", "\"ref\" that are not an object"},
      {"ref-neg.json", ",\"ref\":{\"TEXP\":-5}", "\"ref\" of TEXP that are"},
      {"ref-str.json", ",\"ref\":{\"TEXP\":\"5\"}", "\"ref\" of TEXP that are"},
      {"ref-op.json", ",\"ref\":{\"TFOO\":5}", "\"ref\" of TFOO that are"},
      /* more than the instruction's own time */
      {"ref-big.json", ",\"ref\":{\"TEXP\":40001}", "\"ref\" of TEXP that are"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, cases[i].name);
    reference_trace(path, "", cases[i].ref);
    spawned r = tool("report", path, NULL, NULL, NULL);
    cr_expect_eq(r.status, 1, "%s", cases[i].name);
    cr_expect(strstr(r.err, cases[i].name) &&
                  strstr(r.err, "not a valid PTO trace: task 1") &&
                  strstr(r.err, cases[i].expect),
              "%s: %s", cases[i].name, r.err);
    spawned_free(&r);
  }
}

Test(tools, compare_reports_ratios_labels_and_config_keys) {
  char a[256], b[256], cfg[256], ix[256];
  snprintf(a, sizeof a, "%s/a.json", dir);
  snprintf(b, sizeof b, "%s/b.json", dir);
  snprintf(ix, sizeof ix, "%s/ix.json", dir);
  snprintf(cfg, sizeof cfg, "%s/tune.json", dir);
  write_file(cfg, "{\"knobs\": {\"nbuffer\": 1}, \"labels\": {\"softmax\": "
                  "{\"vec_tile\": [8, 1024]}}}");
  traced_run("softmax", a, NULL);
  traced_run("softmax", b, cfg);
  spawned r = tool("compare", a, b, "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json_t *c = parse(r.out);
  json_t *m = json_object_get(c, "makespan");
  cr_expect(fabs(json_real_value(json_object_get(m, "ratio")) -
                 json_real_value(json_object_get(m, "b_us")) /
                     json_real_value(json_object_get(m, "a_us"))) < 1e-9);
  json_t *l = json_array_get(json_object_get(c, "labels"), 0);
  cr_expect_str_eq(json_string_value(json_object_get(l, "label")), "softmax");
  cr_expect_eq(json_integer_value(json_object_get(l, "tasks_b")), 64);
  int tile = 0, nbuf = 0;
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(c, "config_differences"), i, x) {
    const char *k = json_string_value(json_object_get(x, "key"));
    tile |= !strcmp(k, "tile.softmax.mul") &&
            !strcmp(json_string_value(json_object_get(x, "a")), "[16,1024]") &&
            !strcmp(json_string_value(json_object_get(x, "b")), "[8,1024]");
    nbuf |= !strcmp(k, "config.knobs.nbuffer");
  }
  cr_expect(tile && nbuf, "%s", r.out);
  json_decref(c);
  spawned_free(&r);
  r = tool("compare", a, b, NULL, NULL);
  cr_expect(strstr(r.out, "makespan us") &&
                strstr(r.out, "configuration keys that differ") &&
                strstr(r.out, "config.labels.softmax.vec_tile"),
            "%s", r.out);
  spawned_free(&r);
  /* a different workload is refused, unless forced */
  traced_run("indexer", ix, NULL);
  r = tool("compare", a, ix, NULL, NULL);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "different workloads") &&
                strstr(r.err, "'softmax'") && strstr(r.err, "'indexer'"),
            "%s", r.err);
  spawned_free(&r);
  r = tool("compare", a, ix, "--force", NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  spawned_free(&r);
  /* two runs of the indexer: the score's rate on each side is its report's
   * (a softmax has no matmul: no rates) */
  char ix2[256], ra[2][64];
  snprintf(ix2, sizeof ix2, "%s/ix2.json", dir);
  traced_run("indexer", ix2, NULL);
  cr_expect_eq(json_array_size(json_object_get(
                   c = parse((r = tool("compare", a, b, "--json", NULL)).out),
                   "matmul_rates")),
               0);
  json_decref(c);
  spawned_free(&r);
  double g[2] = {0, 0};
  const char *paths[2] = {ix, ix2};
  for (int s = 0; s < 2; s++) {
    r = tool("report", paths[s], "--json", NULL, NULL);
    c = parse(r.out);
    json_array_foreach(json_object_get(c, "per_label_instruction"), i, x) {
      if (json_is_real(json_object_get(x, "gflops")))
        g[s] = json_real_value(json_object_get(x, "gflops"));
    }
    snprintf(ra[s], sizeof ra[s], "%.1f", g[s]);
    json_decref(c);
    spawned_free(&r);
  }
  r = tool("compare", ix, ix2, "--json", NULL);
  c = parse(r.out);
  json_t *rates = json_object_get(c, "matmul_rates");
  cr_assert_eq(json_array_size(rates), 1, "%s", r.out);
  x = json_array_get(rates, 0);
  cr_expect_str_eq(json_string_value(json_object_get(x, "instruction")),
                   "TMATMUL_RELU_WSUM_G");
  cr_expect(fabs(json_real_value(json_object_get(x, "gflops_a")) - g[0]) <
                    1e-9 * g[0] &&
                fabs(json_real_value(json_object_get(x, "gflops_b")) - g[1]) <
                    1e-9 * g[1] &&
                fabs(json_real_value(json_object_get(x, "ratio")) -
                     g[1] / g[0]) < 1e-9,
            "%s", r.out);
  json_decref(c);
  spawned_free(&r);
  r = tool("compare", ix, ix2, NULL, NULL);
  cr_expect(strstr(r.out, "GFLOP/s A") && strstr(r.out, ra[0]) &&
                strstr(r.out, ra[1]),
            "%s", r.out);
  spawned_free(&r);
}

Test(tools, bad_input_is_named_for_what_it_is) {
  char path[256], good[256];
  snprintf(good, sizeof good, "%s/good.json", dir);
  traced_run("softmax", good, NULL);
  FILE *f = fopen(good, "r");
  char *text = calloc(1, 1 << 22);
  size_t len = fread(text, 1, (1 << 22) - 1, f);
  fclose(f);
  struct {
    const char *name, *content, *expect;
  } cases[] = {
      {"empty.json", "", "the file is empty"},
      {"text.txt", "hello\n", "not JSON"},
      {"other.json", "{\"a\": [1, 2]}", "without a \"traceEvents\""},
      {"chrome.json", "{\"traceEvents\": []}", "not one PTO wrote"},
      {"truncated.json", NULL, "truncated"},
      {"edited.json", NULL, "task events, but the run had"},
      {"flops.json", NULL, "\"flops\" of TLOAD that are not a count"},
      {"flops-op.json", NULL, "\"flops\" of TFOO that are not a count"},
      {"flops-type.json", NULL, "\"flops\" that are not an object"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, cases[i].name);
    if (cases[i].content) {
      write_file(path, cases[i].content);
    } else if (!strcmp(cases[i].name, "truncated.json")) {
      char *cut = strndup(text, len / 2);
      write_file(path, cut);
      free(cut);
    } else if (!strcmp(cases[i].name, "edited.json")) {
      /* one task event fewer: the declared count no longer holds */
      json_t *j = json_loads(text, 0, NULL);
      json_t *evs = json_object_get(j, "traceEvents");
      json_array_remove(evs, json_array_size(evs) - 1);
      json_dump_file(j, path, 0);
      json_decref(j);
    } else { /* the last task's flops: negative, of an instruction it has
              * no time for, not an object */
      json_t *j = json_loads(text, 0, NULL);
      json_t *evs = json_object_get(j, "traceEvents");
      json_t *args = json_object_get(
          json_array_get(evs, json_array_size(evs) - 1), "args");
      json_object_set_new(args, "flops",
                          !strcmp(cases[i].name, "flops.json")
                              ? json_pack("{s:i}", "TLOAD", -5)
                          : !strcmp(cases[i].name, "flops-op.json")
                              ? json_pack("{s:i}", "TFOO", 10)
                              : json_string("many"));
      json_dump_file(j, path, 0);
      json_decref(j);
    }
    const char *cmds[] = {"report", "html", "compare"};
    for (int c = 0; c < 3; c++) {
      char out[300];
      snprintf(out, sizeof out, "%s/out.html", dir);
      spawned r = c == 0   ? tool("report", path, NULL, NULL, NULL)
                  : c == 1 ? tool("html", path, "-o", out, NULL)
                           : tool("compare", good, path, NULL, NULL);
      cr_expect_eq(r.status, 1, "%s %s", cmds[c], cases[i].name);
      cr_expect(strstr(r.err, cases[i].name) && strstr(r.err, cases[i].expect),
                "%s %s: %s", cmds[c], cases[i].name, r.err);
      spawned_free(&r);
    }
  }
  snprintf(path, sizeof path, "%s/missing.json", dir);
  spawned r = tool("report", path, NULL, NULL, NULL);
  cr_expect(r.status == 1 && strstr(r.err, "No such file"), "%s", r.err);
  spawned_free(&r);
  free(text);
}

Test(tools, html_is_one_self_contained_page) {
  char trace[256], page[256];
  snprintf(trace, sizeof trace, "%s/ix.json", dir);
  snprintf(page, sizeof page, "%s/ix.html", dir);
  traced_run("indexer", trace, NULL);
  spawned r = tool("html", trace, "-o", page, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  spawned_free(&r);
  FILE *f = fopen(page, "r");
  cr_assert_not_null(f);
  char *html = calloc(1, 1 << 22);
  size_t n = fread(html, 1, (1 << 22) - 1, f);
  fclose(f);
  cr_expect(n > 1000 && !strncmp(html, "<!doctype html>", 15));
  const char *banned[] = {"http://", "https://", "<script src",
                          "<link",   "@import",  "url("};
  for (size_t i = 0; i < sizeof banned / sizeof *banned; i++)
    cr_expect(!strstr(html, banned[i]), "the page refers to %s", banned[i]);
  int closes = 0;
  for (const char *s = html; (s = strstr(s, "</script>")); s++)
    closes++;
  cr_expect_eq(closes, 2, "the data and the viewer, nothing closes early");
  cr_expect(strstr(html, "\"labels\":[") && strstr(html, "indexer.qk") &&
            strstr(html, "TMATMUL_RELU_WSUM"));
  free(html);
}

Test(tools, graph_renders_every_stage_and_summarises_large_ones) {
  struct stat sb;
  if (stat("/usr/bin/dot", &sb)) {
    cr_skip_test("Graphviz's dot is not installed (tools/install-deps.sh)");
  }
  char dumps[256], out[256], small[256];
  snprintf(dumps, sizeof dumps, "%s/dumps", dir);
  snprintf(out, sizeof out, "%s/svg", dir);
  snprintf(small, sizeof small, "%s/svg-small", dir);
  char *argv[] = {(char *)PTO_DUMP_TOOL, (char *)"pypto-example",
                  (char *)"--out-dir", dumps, NULL};
  spawned r = run_with(argv, NULL, clean);
  cr_assert_eq(r.status, 0, "%s", r.err);
  spawned_free(&r);
  r = tool("graph", dumps, "-o", out, NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  spawned_free(&r);
  /* --max-nodes 3: every stage summarised; PyPTO's example has three
   * programs run by 4, 1 and 2 tasks */
  r = tool("graph", dumps, "-o", small, "--max-nodes");
  cr_expect_eq(r.status, 2, "--max-nodes needs a count");
  spawned_free(&r);
  char *argv2[] = {
      (char *)PTO_TRACE_TOOL, (char *)"graph", dumps, (char *)"-o", small,
      (char *)"--max-nodes",  (char *)"3",     NULL};
  r = run_with(argv2, NULL, clean);
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "summarised"), "%s", r.out);
  spawned_free(&r);
  const char *stages[] = {"tensor", "tile", "subgraph", "exec"};
  for (int s = 0; s < 4; s++)
    for (int k = 0; k < 2; k++) {
      char svg[512];
      snprintf(svg, sizeof svg, "%s/%s.svg", k ? small : out, stages[s]);
      FILE *f = fopen(svg, "r");
      cr_assert_not_null(f, "%s", svg);
      char head[256] = "";
      cr_expect(fread(head, 1, sizeof head - 1, f) > 0);
      fclose(f);
      cr_expect(strstr(head, "<svg") || strstr(head, "<?xml"), "%s", svg);
    }
  char sum[512];
  snprintf(sum, sizeof sum, "%s/exec.summary.dot", small);
  FILE *f = fopen(sum, "r");
  cr_assert_not_null(f);
  char text[8192] = "";
  cr_expect(fread(text, 1, sizeof text - 1, f) > 0);
  fclose(f);
  cr_expect(strstr(text, "7 tasks in 3 groups") && strstr(text, "x 4\"") &&
                strstr(text, "x 2\"") && strstr(text, "x 1\""),
            "%s", text);
}

Test(tools, every_command_has_help) {
  const char *cmds[] = {"html", "report", "compare", "graph"};
  for (int i = 0; i < 4; i++) {
    spawned r = tool(cmds[i], "--help", NULL, NULL, NULL);
    char usage[64];
    snprintf(usage, sizeof usage, "usage: pto-trace %s", cmds[i]);
    cr_expect(r.status == 0 && strstr(r.out, usage), "%s: %s", cmds[i], r.out);
    spawned_free(&r);
  }
  spawned r = tool("--help", NULL, NULL, NULL, NULL);
  cr_expect(r.status == 0 && strstr(r.out, "compare"));
  spawned_free(&r);
  r = tool("frobnicate", NULL, NULL, NULL, NULL);
  cr_expect(r.status == 2 && strstr(r.err, "unknown command"));
  spawned_free(&r);
}
