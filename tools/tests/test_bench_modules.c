/* The pto-bench modules the operator benchmarks share (tools/bench/): .npy
 * files, preset tables, per-case paths, rows over threads, seeded draws and
 * sparse index sets, a case's outcome in a table row and in JSON, and the
 * driver of an operator command on a toy operator. Suite "bench". */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/case.h"
#include "bench/files.h"
#include "bench/harness.h"
#include "bench/indices.h"
#include "bench/npy.h"
#include "bench/parallel.h"
#include "bench/preset.h"

static char dir[256];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/pto-test-tools-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
  bench_tmpdir_free(strdup(dir));
}

static void path_of(char *buf, size_t n, const char *name) {
  cr_assert_eq(bench_path(buf, n, dir, name), 0);
}

TestSuite(bench, .init = make_dir, .fini = remove_dir, .timeout = 60);

/* ---- .npy ------------------------------------------------------------------------ */

Test(bench, npy_round_trip_every_dtype_and_rank) {
  const int64_t shapes[][4] = {{0}, {7}, {3, 5}, {2, 3, 4}, {1, 2, 3, 5}};
  char p[512], err[512];
  for (int t = 0; t < BENCH_DTYPE_COUNT; t++)
    for (int nd = 0; nd <= 4; nd++) {
      const int64_t *shape = shapes[nd];
      size_t count = 1;
      for (int i = 0; i < nd; i++)
        count *= (size_t)shape[i];
      const size_t es = bench_dtype_size((bench_dtype)t);
      unsigned char *data = malloc(count * es), *back = malloc(count * es);
      for (size_t i = 0; i < count * es; i++)
        data[i] = (unsigned char)(i * 37 + (size_t)t);
      snprintf(err, sizeof err, "a%d_%d.npy", t, nd);
      path_of(p, sizeof p, err);
      cr_assert_eq(bench_npy_save(p, (bench_dtype)t, nd, shape, data, err,
                                  sizeof err),
                   0, "%s", err);
      /* NumPy's layout: header padded so the data starts on 64 bytes */
      FILE *f = fopen(p, "rb");
      unsigned char pre[10];
      cr_assert_eq(fread(pre, 1, 10, f), 10);
      fseek(f, 0, SEEK_END);
      long size = ftell(f);
      fclose(f);
      cr_assert_eq(memcmp(pre, "\x93NUMPY\x01\x00", 8), 0);
      const size_t hl = (size_t)pre[8] | (size_t)pre[9] << 8;
      cr_assert_eq((10 + hl) % 64, 0);
      cr_assert_eq((size_t)size, 10 + hl + count * es);

      bench_npy a;
      cr_assert_eq(bench_npy_load(p, &a, err, sizeof err), 0, "%s", err);
      cr_assert_eq(a.dtype, (bench_dtype)t);
      cr_assert_eq(a.ndim, nd);
      cr_assert_eq(a.count, count);
      for (int i = 0; i < nd; i++)
        cr_assert_eq(a.shape[i], shape[i]);
      cr_assert_eq(memcmp(a.data, data, count * es), 0);
      bench_npy_free(&a);
      cr_assert_eq(bench_npy_load_into(p, (bench_dtype)t, nd, shape, back,
                                       err, sizeof err),
                   0, "%s", err);
      cr_assert_eq(memcmp(back, data, count * es), 0);
      free(data);
      free(back);
    }
}

Test(bench, npy_float_values_survive_exactly) {
  float v[6] = {0.0f, -0.0f, 1e-38f, -3.5f, INFINITY, -INFINITY}, w[6];
  const int64_t shape[1] = {6};
  char p[512], err[256];
  path_of(p, sizeof p, "f.npy");
  cr_assert_eq(bench_npy_save(p, BENCH_F32, 1, shape, v, err, sizeof err), 0);
  cr_assert_eq(bench_npy_load_into(p, BENCH_F32, 1, shape, w, err, sizeof err),
               0, "%s", err);
  cr_assert_eq(memcmp(v, w, sizeof v), 0);
}

static void write_raw(const char *name, const void *bytes, size_t n, char *p,
                      size_t size) {
  path_of(p, size, name);
  FILE *f = fopen(p, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(bytes, 1, n, f), n);
  fclose(f);
}

/* A version 2.0 header with the keys in another order, as another writer
 * may produce it. */
Test(bench, npy_reads_version_2_and_any_key_order) {
  const char hdr[] = "{'shape': (2, 2), 'fortran_order': False, "
                     "'descr': '<i4'}\n";
  unsigned char buf[256];
  const size_t hl = sizeof hdr - 1;
  memcpy(buf, "\x93NUMPY\x02\x00", 8);
  buf[8] = (unsigned char)hl;
  buf[9] = buf[10] = buf[11] = 0;
  memcpy(buf + 12, hdr, hl);
  const int32_t data[4] = {1, -2, 3, -4};
  memcpy(buf + 12 + hl, data, sizeof data);
  char p[512], err[256];
  write_raw("v2.npy", buf, 12 + hl + sizeof data, p, sizeof p);
  bench_npy a;
  cr_assert_eq(bench_npy_load(p, &a, err, sizeof err), 0, "%s", err);
  cr_assert_eq(a.dtype, BENCH_I32);
  cr_assert_eq(a.ndim, 2);
  cr_assert_eq(memcmp(a.data, data, sizeof data), 0);
  bench_npy_free(&a);
}

Test(bench, npy_refuses_what_it_cannot_read_with_a_reason) {
  char p[512], err[512];
  const int64_t shape[2] = {2, 3};
  float data[6] = {0};
  path_of(p, sizeof p, "x.npy");
  cr_assert_eq(bench_npy_save(p, BENCH_F32, 2, shape, data, err, sizeof err),
               0);
  int32_t i32[6];
  const int64_t other[2] = {3, 2};
  cr_assert_eq(bench_npy_load_into(p, BENCH_I32, 2, shape, i32, err,
                                   sizeof err),
               -1);
  cr_assert(strstr(err, "holds float32 (2, 3), expected int32 (2, 3)"), "%s",
            err);
  cr_assert_eq(bench_npy_load_into(p, BENCH_F32, 2, other, data, err,
                                   sizeof err),
               -1);
  cr_assert(strstr(err, "expected float32 (3, 2)"), "%s", err);

  bench_npy a;
  path_of(p, sizeof p, "missing.npy");
  cr_assert_eq(bench_npy_load(p, &a, err, sizeof err), -1);
  cr_assert(strstr(err, "No such file"), "%s", err);

  write_raw("text.npy", "hello, world", 12, p, sizeof p);
  cr_assert_eq(bench_npy_load(p, &a, err, sizeof err), -1);
  cr_assert(strstr(err, "not an .npy file"), "%s", err);

  const char bh[] = "{'descr': '>f4', 'fortran_order': False, "
                    "'shape': (1,), }\n";
  unsigned char big[128] = "\x93NUMPY\x01\x00";
  big[8] = (unsigned char)(sizeof bh - 1);
  big[9] = 0;
  memcpy(big + 10, bh, sizeof bh - 1);
  write_raw("big.npy", big, 10 + sizeof bh - 1 + 4, p, sizeof p);
  cr_assert_eq(bench_npy_load(p, &a, err, sizeof err), -1);
  cr_assert(strstr(err, "big-endian"), "%s", err);

  /* a header promising 6 floats, then 2 */
  path_of(p, sizeof p, "x.npy");
  FILE *f = fopen(p, "rb");
  unsigned char buf[128 + 8];
  size_t n = fread(buf, 1, 64 + 8, f);
  fclose(f);
  cr_assert_eq(n, 64 + 8);
  write_raw("short.npy", buf, n, p, sizeof p);
  cr_assert_eq(bench_npy_load(p, &a, err, sizeof err), -1);
  cr_assert(strstr(err, "truncated"), "%s", err);
}

Test(bench, write_arrays_makes_the_directory_and_meta) {
  char sub[512], p[600], err[256];
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  const float x[2] = {1, 2};
  bench_array arr = {"x", BENCH_F32, 1, {2}, x};
  json_t *meta = json_pack("{s:s}", "mask", "causal");
  cr_assert_eq(bench_write_arrays(sub, &arr, 1, meta, err, sizeof err), 0,
               "%s", err);
  json_decref(meta);
  snprintf(p, sizeof p, "%s/x.npy", sub);
  cr_assert_eq(access(p, R_OK), 0);
  snprintf(p, sizeof p, "%s/meta.json", sub);
  json_t *back = json_load_file(p, 0, NULL);
  cr_assert_str_eq(json_string_value(json_object_get(back, "mask")),
                   "causal");
  json_decref(back);
  /* clean up what bench_tmpdir_free does not descend into */
  snprintf(p, sizeof p, "%s/x.npy", sub);
  unlink(p);
  snprintf(p, sizeof p, "%s/meta.json", sub);
  unlink(p);
  rmdir(sub);
  snprintf(p, sizeof p, "%s/a", dir);
  rmdir(p);
}

/* ---- presets and paths --------------------------------------------------------- */

static const bench_param tparams[2] = {{"s1", "S1", 1, 100},
                                       {"topk", "topk", 1, 1000}};
static const bench_preset tpresets[3] = {
    {"smoke", {1, 10}}, {"medium", {8, 100}}, {"large", {64, 500}}};
static const bench_preset_table ttable = {"test", tparams, 2, tpresets, 3,
                                          "medium", "smoke"};

static int parse_args(bench_preset_sel *s, int argc, const char **args) {
  char *argv[8];
  for (int i = 0; i < argc; i++)
    argv[i] = (char *)args[i];
  memset(s, 0, sizeof *s);
  for (int i = 1; i < argc; i++)
    if (bench_preset_arg(&ttable, s, argc, argv, &i) != 1)
      return -1;
  return 0;
}

Test(bench, presets_lists_all_and_flags) {
  bench_preset_sel s;
  const char *a1[] = {"x", "--preset", "large,smoke,large", "--s1", "3"};
  cr_assert_eq(parse_args(&s, 5, a1), 0);
  cr_assert_eq(s.n, 2);
  cr_assert_str_eq(bench_preset_name(&ttable, &s, 0), "large");
  int64_t v[2];
  bench_preset_values(&ttable, &s, 1, v);
  cr_assert_eq(v[0], 3);
  cr_assert_eq(v[1], 10);
  cr_assert(bench_preset_changed(&ttable, &s, 1));

  const char *a2[] = {"x", "--preset", "all"};
  cr_assert_eq(parse_args(&s, 3, a2), 0);
  cr_assert_eq(s.n, 3);

  const char *a3[] = {"x"};
  cr_assert_eq(parse_args(&s, 1, a3), 0);
  bench_preset_finish(&ttable, &s, 0);
  cr_assert_str_eq(bench_preset_name(&ttable, &s, 0), "medium");
  cr_assert_not(bench_preset_changed(&ttable, &s, 0));
  cr_assert_eq(parse_args(&s, 1, a3), 0);
  bench_preset_finish(&ttable, &s, 1);
  cr_assert_str_eq(bench_preset_name(&ttable, &s, 0), "smoke");
}

Test(bench, presets_refuse_bad_names_and_numbers) {
  bench_preset_sel s;
  const char *bad[][3] = {{"x", "--preset", "huge"},  {"x", "--preset", "smoke,"},
                    {"x", "--s1", "0"},         {"x", "--s1", "101"},
                    {"x", "--s1", "12abc"},     {"x", "--topk", ""},
                    {"x", "--s1", "99999999999999999999"}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    cr_assert_eq(parse_args(&s, 3, bad[k]), -1, "accepted %s %s", bad[k][1],
                 bad[k][2]);
  const char *missing[] = {"x", "--preset"};
  cr_assert_eq(parse_args(&s, 2, missing), -1);
}

Test(bench, case_paths) {
  char b[256];
  cr_assert_eq(bench_case_path(b, sizeof b, "t.json", "medium", 0, 0), 0);
  cr_assert_str_eq(b, "t.json");
  cr_assert_eq(bench_case_path(b, sizeof b, "d/t.json", "medium", 1, 0), 0);
  cr_assert_str_eq(b, "d/t-medium.json");
  cr_assert_eq(bench_case_path(b, sizeof b, "d.x/trace", "small", 1, 0), 0);
  cr_assert_str_eq(b, "d.x/trace-small");
  cr_assert_eq(bench_case_path(b, sizeof b, "out", "small", 1, 1), 0);
  cr_assert_str_eq(b, "out/small");
  cr_assert_eq(bench_case_path(b, 8, "long/path", "small", 1, 1), -1);
}

Test(bench, stats_and_seeded_inputs) {
  double v[5] = {5, 1, 4, 2, 3};
  bench_stats s = bench_stats_of(v, 5);
  cr_assert_eq(s.median, 3);
  cr_assert_eq(s.min, 1);
  cr_assert_eq(s.max, 5);
  cr_assert_eq(s.q1, 2);
  cr_assert_eq(s.q3, 4);
  float a[1000], b[1000], c[1000];
  bench_fill_uniform(a, 1000, 7, 1, -1, 1);
  bench_fill_uniform(b, 1000, 7, 1, -1, 1);
  bench_fill_uniform(c, 1000, 7, 2, -1, 1);
  cr_assert_eq(memcmp(a, b, sizeof a), 0);
  cr_assert_neq(memcmp(a, c, sizeof a), 0);
  double mean = 0;
  for (int i = 0; i < 1000; i++) {
    cr_assert(a[i] >= -1 && a[i] < 1);
    mean += a[i] / 1000;
  }
  cr_assert(fabs(mean) < 0.1, "mean %g", mean);
}

/* ---- rows over threads ------------------------------------------------------------ */

typedef struct rows_ctx {
  unsigned char seen[1000];
  int64_t fail_from;
} rows_ctx;

static int mark_rows(void *ctx, int64_t r0, int64_t r1, char *msg,
                     size_t size) {
  rows_ctx *c = ctx;
  for (int64_t r = r0; r < r1; r++) {
    if (r >= c->fail_from) {
      snprintf(msg, size, "row %lld is bad", (long long)r);
      return -1;
    }
    c->seen[r]++;
  }
  return 0;
}

Test(bench, parallel_rows_covers_each_row_once_and_reports_failures) {
  rows_ctx c;
  char msg[128];
  for (int threads = 1; threads <= 4; threads++) {
    memset(&c, 0, sizeof c);
    c.fail_from = 1000;
    cr_assert_eq(bench_parallel_rows(threads, 1000, 0, mark_rows, &c, NULL,
                                     msg, sizeof msg),
                 0);
    for (int r = 0; r < 1000; r++)
      cr_assert_eq(c.seen[r], 1, "row %d seen %d times", r, c.seen[r]);
  }
  memset(&c, 0, sizeof c);
  c.fail_from = 500;
  cr_assert_eq(bench_parallel_rows(3, 1000, 7, mark_rows, &c, NULL, msg,
                                   sizeof msg),
               -1);
  cr_assert_str_eq(msg, "row 500 is bad");
}

/* ---- a case's outcome ------------------------------------------------------------- */

/* The row's result columns and the JSON fields of r. */
static void outcome(const bench_case_result *r, int have_peer, char *row,
                    size_t size, json_t **j) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  cr_assert_not_null(f);
  bench_case_print(f, r, 2, 10.0, 100.0, have_peer);
  fclose(f);
  snprintf(row, size, "%s", buf);
  free(buf);
  bench_peer peer;
  memset(&peer, 0, sizeof peer);
  snprintf(peer.torch, sizeof peer.torch, "1.13");
  *j = json_object();
  bench_case_json(*j, r, 10.0, 100.0, "AVX2", have_peer ? &peer : NULL);
}

static double num(const json_t *j, const char *key) {
  const json_t *v = json_object_get(j, key);
  cr_assert(json_is_number(v), "%s is not a number", key);
  return json_number_value(v);
}

Test(bench, case_outcome_row_and_json_agree) {
  bench_case_result r;
  memset(&r, 0, sizeof r);
  double pt[3] = {20, 10, 30}, tt[3] = {40, 40, 50};
  r.pto = bench_stats_of(pt, 3);
  r.torch = bench_stats_of(tt, 3);
  r.pto_checked = r.torch_ran = r.torch_checked = 1;
  r.tasks = 7;
  snprintf(r.best, sizeof r.best, "naive");
  char row[512];
  json_t *j;
  outcome(&r, 1, row, sizeof row, &j);
  /* 10 GFLOP in 20 ms: 500 GFLOP/s, 500 % of a 100 GFLOP/s peak */
  cr_assert(strstr(row, "20.00 [10.00-30.00]") && strstr(row, "2.00x") &&
                strstr(row, "naive") && strstr(row, "500.0%") &&
                strstr(row, " ok\n"),
            "%s", row);
  cr_assert_eq(num(j, "ratio"), 2.0);
  cr_assert_eq(num(j, "pto_gflops"), 500.0);
  cr_assert_eq(num(j, "pto_peak_fraction"), 5.0);
  cr_assert_eq(num(j, "torch_ms"), 40.0);
  cr_assert_str_eq(json_string_value(json_object_get(j, "check")), "ok");
  cr_assert_str_eq(json_string_value(json_object_get(j, "torch_check")), "ok");
  json_decref(j);

  /* the peer's answer failed its check: no PyTorch figures, said so */
  r.torch_checked = 0;
  outcome(&r, 1, row, sizeof row, &j);
  cr_assert(strstr(row, "ok, torch WRONG") && !strstr(row, "2.00x"), "%s",
            row);
  cr_assert(json_is_null(json_object_get(j, "torch_ms")));
  cr_assert(json_is_null(json_object_get(j, "ratio")));
  cr_assert_str_eq(json_string_value(json_object_get(j, "torch_check")),
                   "wrong");
  json_decref(j);

  /* PTO's answer failed: no figures at all */
  r.pto_checked = 0;
  r.pto_wrong = 1;
  outcome(&r, 0, row, sizeof row, &j);
  cr_assert(strstr(row, "WRONG") && !strstr(row, "20.00"), "%s", row);
  cr_assert(json_is_null(json_object_get(j, "pto_ms")));
  cr_assert(json_is_null(json_object_get(j, "torch_check")));
  cr_assert(json_is_null(json_object_get(j, "torch_version")));
  cr_assert_str_eq(json_string_value(json_object_get(j, "check")), "wrong");
  json_decref(j);
}

/* ---- seeded draws and index sets ------------------------------------------------- */

Test(bench, parse_f64_takes_finite_numbers_in_range) {
  double x;
  cr_assert_eq(bench_parse_f64("test", "--scale", "0.135234", 0, 1e9, &x), 0);
  cr_assert_eq(x, 0.135234);
  cr_assert_eq(bench_parse_f64("test", "--invalid", "12.5", 0, 100, &x), 0);
  cr_assert_eq(x, 12.5);
  const char *bad[] = {"", "abc", "1x", "nan", "inf", "1e400", "100.5", "-1"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    cr_assert_eq(bench_parse_f64("test", "--invalid", bad[k], 0, 100, &x), -1,
                 "accepted '%s'", bad[k]);
  cr_assert_eq(bench_parse_f64("test", "--invalid", NULL, 0, 100, &x), -1);
}

Test(bench, draw_distinct_is_uniform_over_values_and_positions) {
  enum { N = 10, K = 3, DRAWS = 30000 };
  unsigned char mark[N] = {0};
  int32_t out[N];
  int at[K][N] = {{0}};
  bench_rng r = bench_rng_new(3, 1);
  for (int d = 0; d < DRAWS; d++) {
    bench_draw_distinct(&r, N, K, out, mark);
    for (int m = 0; m < K; m++) {
      cr_assert(out[m] >= 0 && out[m] < N);
      for (int p = 0; p < m; p++)
        cr_assert_neq(out[m], out[p], "draw %d repeats %d", d, out[m]);
      at[m][out[m]]++;
    }
    for (int v = 0; v < N; v++)
      cr_assert_eq(mark[v], 0, "mark[%d] left set", v);
  }
  /* each value at each position DRAWS / N times, within 10 % */
  for (int m = 0; m < K; m++)
    for (int v = 0; v < N; v++)
      cr_assert(abs(at[m][v] - DRAWS / N) < DRAWS / N / 10,
                "value %d at position %d %d times", v, m, at[m][v]);
  /* k = n: a permutation; k = 0: nothing */
  bench_draw_distinct(&r, N, N, out, mark);
  int seen[N] = {0};
  for (int m = 0; m < N; m++)
    seen[out[m]]++;
  for (int v = 0; v < N; v++)
    cr_assert_eq(seen[v], 1);
  bench_draw_distinct(&r, N, 0, out, mark);
}

/* Every row of idx: valid keys distinct and visible; the counts add up. */
static void check_indices(const int32_t *idx, int64_t b, int64_t s1,
                          int64_t s2, int64_t topk, int causal,
                          const bench_indices_count *n, int64_t *kinds) {
  unsigned char *seen = calloc((size_t)s2, 1);
  int64_t valid = 0, other = 0;
  for (int64_t row = 0; row < b * s1; row++) {
    const int64_t i = row % s1, last = causal ? s2 - s1 + i : s2 - 1;
    const int32_t *x = idx + row * topk;
    for (int64_t t = 0; t < topk; t++) {
      const int64_t j = x[t];
      if (j >= 0 && j <= last) {
        cr_assert_not(seen[j], "row %ld repeats key %ld", (long)row, (long)j);
        seen[j] = 1;
        valid++;
        continue;
      }
      other++;
      if (kinds)
        kinds[j == -1           ? 0
              : j == INT32_MIN  ? 1
              : j == s2         ? 2
              : j == INT32_MAX  ? 4
              : j > s2          ? 3
              : j < -1          ? 5
                                : 6]++;
    }
    for (int64_t t = 0; t < topk; t++)
      if (x[t] >= 0 && x[t] < s2)
        seen[x[t]] = 0;
  }
  free(seen);
  cr_assert_eq(valid, n->valid);
  cr_assert_eq(other, n->padding + n->invalid);
}

Test(bench, sparse_indices_visible_distinct_with_the_invalid_share) {
  const int64_t b = 2, s1 = 40, s2 = 64, topk = 48, slots = b * s1 * topk;
  int32_t *idx = malloc((size_t)slots * sizeof *idx);
  bench_indices_count n;
  int64_t kinds[7] = {0};

  /* not causal, none invalid: every row all valid */
  cr_assert_eq(bench_sparse_indices(idx, b, s1, s2, topk, 0, 0, 1, 4, &n), 0);
  cr_assert_eq(n.valid, slots);
  check_indices(idx, b, s1, s2, topk, 0, &n, NULL);

  /* 25 %: exactly a quarter of the slots, rows differ, every kind used */
  cr_assert_eq(bench_sparse_indices(idx, b, s1, s2, topk, 0, 25, 1, 4, &n), 0);
  cr_assert_eq(n.invalid, slots / 4);
  cr_assert_eq(n.valid, slots - slots / 4);
  check_indices(idx, b, s1, s2, topk, 0, &n, kinds);
  for (int k = 0; k < 6; k++)
    cr_assert_gt(kinds[k], 0, "no invalid index of kind %d", k);
  cr_assert_eq(kinds[6], 0, "a hidden key without causal");
  int64_t first = 0, last_row = 0;
  for (int64_t t = 0; t < topk; t++) {
    first += idx[t] < 0 || idx[t] >= s2;
    last_row += idx[slots - topk + t] < 0 || idx[slots - topk + t] >= s2;
  }
  cr_assert(first > 0 && first < topk && last_row > 0 && last_row < topk,
            "invalid slots not scattered: %ld and %ld of %ld",
            (long)first, (long)last_row, (long)topk);

  /* causal: query i sees s2 - s1 + i + 1 keys (25 to 64 here): short rows
   * are padded with -1; the hidden keys are among the invalid ones */
  memset(kinds, 0, sizeof kinds);
  cr_assert_eq(bench_sparse_indices(idx, b, s1, s2, topk, 1, 30, 2, 4, &n), 0);
  check_indices(idx, b, s1, s2, topk, 1, &n, kinds);
  cr_assert_gt(n.padding, 0);
  cr_assert_gt(kinds[6], 0, "no hidden key among the invalid ones");
  cr_assert_eq(n.invalid, (int64_t)(0.3 * slots + 0.5));

  /* a query that sees nothing (s1 > s2): a row of -1 */
  cr_assert_eq(bench_sparse_indices(idx, 1, 8, 4, 6, 1, 0, 1, 4, &n), 0);
  for (int t = 0; t < 6; t++)
    cr_assert_eq(idx[t], -1);
  check_indices(idx, 1, 8, 4, 6, 1, &n, NULL);

  /* 100 %: nothing valid; same seed, same indices */
  cr_assert_eq(bench_sparse_indices(idx, b, s1, s2, topk, 0, 100, 1, 4, &n), 0);
  cr_assert_eq(n.valid, 0);
  cr_assert_eq(n.invalid, slots);
  int32_t *again = malloc((size_t)slots * sizeof *again);
  cr_assert_eq(bench_sparse_indices(again, b, s1, s2, topk, 0, 100, 1, 4, &n),
               0);
  cr_assert_eq(memcmp(idx, again, (size_t)slots * sizeof *idx), 0);
  free(again);
  free(idx);
}

/* ---- the driver of an operator command -------------------------------------
 */

/* A toy operator for bench_case_main: y = x + 1 over [rows, 16]. */
typedef struct toy_opts {
  bench_case_opts base;
  int lie;       /* --lie: its check refuses PTO's result */
  int fail_init; /* --fail-init: no case can be made */
} toy_opts;

typedef struct toy_case {
  bench_case base;
  int lie;
} toy_case;

static int toy_unmade; /* cases reported without a case */

static const bench_param toy_params[1] = {{"rows", "R", 1, 1 << 30}};
static const bench_preset toy_presets[2] = {{"one", {8}}, {"two", {3}}};
static const bench_preset_table toy_table = {
    "toy", toy_params, 1, toy_presets, 2, "one", "one"};

static int toy_arg(bench_case_opts *o, int argc, char **argv, int *i) {
  toy_opts *x = (toy_opts *)o;
  (void)argc;
  if (!strcmp(argv[*i], "--lie"))
    return x->lie = 1;
  if (!strcmp(argv[*i], "--fail-init"))
    return x->fail_init = 1;
  return 0;
}

static int toy_init(const bench_case_opts *o, int k, bench_case *bc) {
  const toy_opts *x = (const toy_opts *)o;
  int64_t rows;
  bench_preset_values(&toy_table, &o->sel, k, &rows);
  bc->preset = bench_preset_name(&toy_table, &o->sel, k);
  if (x->fail_init)
    return -1;
  ((toy_case *)bc)->lie = x->lie;
  bc->gflop = (double)rows * 16e-9;
  bc->rows = rows;
  bc->n_in = bc->n_out = 1;
  bc->in[0] = (bench_array){"x", BENCH_F32, 2, {rows, 16}, NULL};
  bc->out[0] = (bench_array){"y", BENCH_F32, 2, {rows, 16}, NULL};
  return 0;
}

static int toy_fill(const bench_case_opts *o, bench_case *bc) {
  bench_fill_uniform(bc->in_data[0], (size_t)bc->rows * 16, o->h.seed, 1, -1.0f,
                     1.0f);
  return 0;
}

static pto_program *toy_program(const bench_case *c) {
  pto_program *p = pto_program_new("toy");
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, c->in[0].shape);
  pto_output(p, pto_adds(p, x, 1.0), "y");
  return p;
}

static int toy_check(const bench_case *bc, int peer, void *const *out,
                     int64_t r0, int64_t r1, char *msg, size_t size) {
  (void)peer; /* the same check for both sides */
  const float *x = bc->in_data[0], *y = out[0];
  for (int64_t i = r0 * 16; i < r1 * 16; i++)
    if (((const toy_case *)bc)->lie || y[i] != x[i] + 1.0f) {
      snprintf(msg, size, "element %lld is %g", (long long)i, y[i]);
      return 1;
    }
  return 0;
}

static json_t *toy_meta(const bench_case_opts *o, const bench_case *c) {
  return json_pack("{s:s, s:I, s:I}", "workload", "toy", "rows",
                   (json_int_t)c->rows, "seed", (json_int_t)o->h.seed);
}

static void toy_head(FILE *f) {
  fprintf(f, "%-10s ", "preset");
}

static json_t *toy_report(const bench_case_opts *o, int k, const bench_case *c,
                          const char *nm, int threads, FILE *f, double *gflop) {
  int64_t rows;
  bench_preset_values(&toy_table, &o->sel, k, &rows);
  toy_unmade += !c;
  fprintf(f, "%-10s ", nm);
  *gflop = (double)rows * 16e-9;
  return json_pack("{s:s, s:s, s:I, s:i}", "workload", "toy", "preset",
                   bench_preset_name(&toy_table, &o->sel, k), "rows",
                   (json_int_t)rows, "threads", threads);
}

static const bench_workload toy = {
    .table = &toy_table,
    .labels = "\"toy\"",
    .case_size = sizeof(toy_case),
    .arg = toy_arg,
    .init = toy_init,
    .fill = toy_fill,
    .program = toy_program,
    .check = toy_check,
    .meta = toy_meta,
    .head = toy_head,
    .report = toy_report,
};

/* `pto-bench --json --quick --threads 2 toy ARGS... --no-peer` */
static int toy_run(int argc, const char **args) {
  char *argv[16] = {(char *)"toy"};
  for (int i = 0; i < argc; i++)
    argv[i + 1] = (char *)args[i];
  argv[argc + 1] = (char *)"--no-peer";
  bench_opts o = {.json = 1, .quick = 1, .threads = 2};
  toy_opts x;
  memset(&x, 0, sizeof x);
  return bench_case_main(&o, &toy, &x.base, argc + 2, argv);
}

static const char *str(const json_t *j, const char *key) {
  const char *s = json_string_value(json_object_get(j, key));
  cr_assert_not_null(s, "%s is not a string", key);
  return s;
}

Test(bench, case_driver_runs_checks_and_saves_each_preset) {
  char save[300], p[400], err[256];
  snprintf(save, sizeof save, "%s/saved", dir);
  const char *args[] = {"--preset", "one,two", "--seed", "5", "--save", save};
  cr_assert_eq(toy_run(6, args), 0);
  json_t *r = bench_results();
  cr_assert_eq(json_array_size(r), 2);
  const char *names[2] = {"one", "two"};
  const int64_t rows[2] = {8, 3};
  for (size_t k = 0; k < 2; k++) {
    const json_t *j = json_array_get(r, k);
    cr_assert_str_eq(str(j, "preset"), names[k]);
    cr_assert_str_eq(str(j, "check"), "ok");
    cr_assert_gt(num(j, "pto_ms"), 0);
    cr_assert_eq(num(j, "repeats"), 3); /* --quick */
    cr_assert_gt(num(j, "tasks"), 0);
    cr_assert(json_is_null(json_object_get(j, "torch_check")));
    /* the saved inputs are the seed's, PTO's output is x + 1 */
    float x[8 * 16], y[8 * 16], want[8 * 16];
    const int64_t shape[2] = {rows[k], 16};
    bench_fill_uniform(want, (size_t)rows[k] * 16, 5, 1, -1.0f, 1.0f);
    snprintf(p, sizeof p, "%s/%s/x.npy", save, names[k]);
    cr_assert_eq(
        bench_npy_load_into(p, BENCH_F32, 2, shape, x, err, sizeof err), 0,
        "%s", err);
    snprintf(p, sizeof p, "%s/%s/y.npy", save, names[k]);
    cr_assert_eq(
        bench_npy_load_into(p, BENCH_F32, 2, shape, y, err, sizeof err), 0,
        "%s", err);
    for (int64_t i = 0; i < rows[k] * 16; i++)
      cr_assert(x[i] == want[i] && y[i] == x[i] + 1.0f, "%s: element %lld",
                names[k], (long long)i);
    snprintf(p, sizeof p, "%s/%s/meta.json", save, names[k]);
    json_t *meta = json_load_file(p, 0, NULL);
    cr_assert_eq(num(meta, "rows"), (double)rows[k]);
    cr_assert_eq(num(meta, "seed"), 5);
    json_decref(meta);
    /* clean up what bench_tmpdir_free does not descend into */
    const char *files[3] = {"x.npy", "y.npy", "meta.json"};
    for (int f = 0; f < 3; f++) {
      snprintf(p, sizeof p, "%s/%s/%s", save, names[k], files[f]);
      unlink(p);
    }
    snprintf(p, sizeof p, "%s/%s", save, names[k]);
    rmdir(p);
  }
  rmdir(save);
}

/* toy_run with its stderr (where --json puts the table too) into err. */
static int toy_run_err(int argc, const char **args, char *err, size_t size) {
  char p[300];
  path_of(p, sizeof p, "stderr");
  fflush(stderr);
  const int fd = dup(2);
  cr_assert(fd >= 0 && freopen(p, "w", stderr));
  const int rc = toy_run(argc, args);
  fflush(stderr);
  cr_assert(dup2(fd, 2) == 2);
  close(fd);
  FILE *f = fopen(p, "r");
  cr_assert_not_null(f);
  err[fread(err, 1, size - 1, f)] = 0;
  fclose(f);
  return rc;
}

Test(bench, case_driver_fails_a_wrong_result_and_a_case_not_made) {
  const char *lie[] = {"--lie"}, *fail[] = {"--fail-init"},
             *big[] = {"--rows", "1073741824"}, *bad[] = {"--bogus"};
  char err[8192];
  json_t *r = bench_results();
  cr_assert_eq(toy_run_err(1, lie, err, sizeof err), 1);
  cr_assert_eq(json_array_size(r), 1);
  cr_assert_str_eq(str(json_array_get(r, 0), "check"), "wrong");
  cr_assert(json_is_null(json_object_get(json_array_get(r, 0), "pto_ms")));
  cr_assert(strstr(err, "pto-bench toy: one: WRONG RESULT from PTO: "
                        "element 0 is "),
            "%s", err);
  cr_assert_eq(toy_unmade, 0);

  /* a case that cannot be made still has its row, reported without it */
  cr_assert_eq(toy_run(1, fail), 1);
  cr_assert_eq(json_array_size(r), 2);
  cr_assert_str_eq(str(json_array_get(r, 1), "check"), "failed");
  cr_assert_eq(num(json_array_get(r, 1), "rows"), 8);
  cr_assert_eq(toy_unmade, 1);

  /* 2^30 rows of 16 floats: 64 GiB of x and twice 64 of y, refused */
  cr_assert_eq(toy_run_err(2, big, err, sizeof err), 1);
  cr_assert_eq(json_array_size(r), 3);
  cr_assert_str_eq(str(json_array_get(r, 2), "check"), "failed");
  cr_assert(strstr(err, "pto-bench toy: one: R=1073741824 needs 192.0 GiB "
                        "of buffers, more than 16\n"),
            "%s", err);
  cr_assert_eq(toy_unmade, 2);

  /* a usage error runs nothing */
  cr_assert_eq(toy_run(1, bad), 2);
  cr_assert_eq(json_array_size(r), 3);
}
