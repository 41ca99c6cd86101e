/* scheduler: the environment variables an application is tuned with,
 * without rebuilding it (PTO_THREADS, PTO_CONFIG, PTO_TRACE). Each is read
 * once per process, so every test runs tests/trace_app, an application
 * that compiles with no config and runs on a default runtime. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/spawn.h"

static const char *const clean[] = {"PTO_THREADS", "PTO_CONFIG", "PTO_TRACE",
                                    NULL};

/* trace_app WORKLOAD RUNS with env. */
static spawned app(const char *workload, const char *runs, char *const *env) {
  char *argv[] = {(char *)TRACE_APP, (char *)workload, (char *)runs, NULL};
  return run_with(argv, env, clean);
}

/* The number after `key ` in trace_app's line, or -1. */
static long field(const char *out, const char *key) {
  const char *s = strstr(out, key);
  return s ? strtol(s + strlen(key) + 1, NULL, 10) : -1;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

Test(scheduler, env_threads_sets_the_host_machines_workers, .timeout = 60) {
  char t3[] = "PTO_THREADS=3", t1[] = "PTO_THREADS=1";
  char *e3[] = {t3, NULL}, *e1[] = {t1, NULL};
  spawned r = app("softmax", "1", e3);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_eq(field(r.out, "workers"), 3, "%s", r.out);
  spawned_free(&r);
  r = app("softmax", "1", e1);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_eq(field(r.out, "workers"), 1, "%s", r.out);
  spawned_free(&r);
}

Test(scheduler, env_threads_bad_value_fails_at_start_up, .timeout = 60) {
  const char *bad[] = {"0", "abc", "", "4x", "100000", "-2"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char var[64];
    snprintf(var, sizeof var, "PTO_THREADS=%s", bad[i]);
    char *env[] = {var, NULL};
    spawned r = app("softmax", "1", env);
    cr_expect_eq(r.status, 1, "%s: %s", var, r.out);
    cr_expect(strstr(r.err, var) &&
                  strstr(r.err, "expected a number of workers from 1 to"),
              "%s: %s", var, r.err);
    spawned_free(&r);
  }
}

Test(scheduler, env_config_retunes_a_compile_without_a_config, .timeout = 60) {
  char dir[] = "/tmp/pto_env_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char base[128], tuned[128], bad[128], var[192];
  snprintf(base, sizeof base, "%s/base.json", dir);
  snprintf(tuned, sizeof tuned, "%s/tuned.json", dir);
  snprintf(bad, sizeof bad, "%s/bad.json", dir);
  /* one subgraph per task; the program's 16-row tile, then 8 rows */
  write_file(base, "{\"knobs\": {\"nbuffer\": 1}}\n");
  write_file(tuned, "{\"knobs\": {\"nbuffer\": 1},\n \"labels\": "
                    "{\"softmax\": {\"vec_tile\": [8, 1024]}}}\n");
  write_file(bad, "{\"knobs\": {\"nbuffer\": 1,}}\n");
  snprintf(var, sizeof var, "PTO_CONFIG=%s", base);
  char *env[] = {var, NULL};
  spawned r = app("softmax", "1", env);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_eq(field(r.out, "tasks"), 512 / 16, "%s", r.out);
  spawned_free(&r);
  snprintf(var, sizeof var, "PTO_CONFIG=%s", tuned);
  r = app("softmax", "1", env);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_eq(field(r.out, "tasks"), 512 / 8, "%s", r.out);
  spawned_free(&r);
  /* a syntax error names the variable and where in the file */
  snprintf(var, sizeof var, "PTO_CONFIG=%s", bad);
  r = app("softmax", "1", env);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, var) && strstr(r.err, "bad.json:1:"), "%s", r.err);
  spawned_free(&r);
  snprintf(var, sizeof var, "PTO_CONFIG=%s/missing.json", dir);
  r = app("softmax", "1", env);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, var), "%s", r.err);
  spawned_free(&r);
  unlink(base);
  unlink(tuned);
  unlink(bad);
  rmdir(dir);
}

/* Checks one trace file of the softmax: every task once, its instruction
 * times within its duration, its windows, and the recorded config. */
static void check_softmax_trace(const char *path, long tasks) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  cr_assert_not_null(root, "%s: %s", path, je.text);
  json_t *pto = json_object_get(root, "pto");
  cr_expect_eq(json_integer_value(json_object_get(pto, "tasks")), tasks);
  cr_expect_str_eq(json_string_value(json_object_get(
                       json_object_get(pto, "workload"), "program")),
                   "softmax");
  cr_expect_eq(
      json_integer_value(json_object_get(
          json_object_get(json_object_get(pto, "config"), "knobs"), "nbuffer")),
      1, "the config PTO_CONFIG merged in is recorded");
  size_t i, n = 0;
  json_t *ev;
  json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
    if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
      continue;
    n++;
    json_t *args = json_object_get(ev, "args");
    double dur_ns = json_number_value(json_object_get(ev, "dur")) * 1e3;
    json_t *ops = json_object_get(args, "ops"), *v;
    const char *op;
    double sum = 0;
    json_object_foreach(ops, op, v) sum += (double)json_integer_value(v);
    cr_expect(json_object_size(ops) >= 1, "task %zu: ops per opcode", n);
    cr_expect(sum > 0 && sum <= dur_ns + 1.5, "instruction time %g of %g ns",
              sum, dur_ns);
    json_t *win = json_array_get(json_object_get(args, "windows"), 0);
    const char *r0 =
        json_string_value(json_array_get(json_object_get(win, "r"), 0));
    const char *w0 =
        json_string_value(json_array_get(json_object_get(win, "w"), 0));
    cr_expect(r0 && !strncmp(r0, "X[", 2) && strstr(r0, ":1024]"), "%s", r0);
    cr_expect(w0 && !strncmp(w0, "Y[", 2), "%s", w0);
  }
  cr_expect_eq((long)n, tasks, "%s: one event per task", path);
  json_decref(root);
}

Test(scheduler, env_trace_writes_every_run_to_its_pattern, .timeout = 60) {
  char dir[] = "/tmp/pto_env_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cfg[128], var[192], cvar[192];
  snprintf(cfg, sizeof cfg, "%s/c.json", dir);
  write_file(cfg, "{\"knobs\": {\"nbuffer\": 1}}");
  snprintf(var, sizeof var, "PTO_TRACE=%s/t-%%p-%%n.json", dir);
  snprintf(cvar, sizeof cvar, "PTO_CONFIG=%s", cfg);
  char *env[] = {var, cvar, NULL};
  spawned r = app("softmax", "3", env);
  cr_assert_eq(r.status, 0, "%s", r.err);
  long tasks = field(r.out, "tasks");
  spawned_free(&r);
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  struct dirent *de;
  int seen[3] = {0, 0, 0}, files = 0;
  while ((de = readdir(d))) {
    long pid;
    int run;
    char tail[16];
    if (sscanf(de->d_name, "t-%ld-%d%15s", &pid, &run, tail) != 3)
      continue;
    cr_expect(pid > 0 && run >= 0 && run < 3 && !strcmp(tail, ".json"), "%s",
              de->d_name);
    if (run >= 0 && run < 3)
      seen[run]++;
    files++;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    check_softmax_trace(path, tasks);
    unlink(path);
  }
  closedir(d);
  cr_expect_eq(files, 3, "one trace per run");
  cr_expect(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  unlink(cfg);
  rmdir(dir);
}

Test(scheduler, env_trace_bad_pattern_fails_at_start_up, .timeout = 60) {
  const char *bad[] = {"", "t-%q.json", "/nonexistent-dir/t.json"};
  const char *why[] = {"empty", "only %p", "cannot write in directory"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char var[96];
    snprintf(var, sizeof var, "PTO_TRACE=%s", bad[i]);
    char *env[] = {var, NULL};
    spawned r = app("softmax", "1", env);
    cr_expect_eq(r.status, 1, "%s", var);
    cr_expect(strstr(r.err, "PTO_TRACE") && strstr(r.err, why[i]), "%s: %s",
              var, r.err);
    spawned_free(&r);
  }
}
