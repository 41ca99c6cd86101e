/* scheduler: executables with dynamic dims. Compiled once for the maxima,
 * run at many bindings (extents of 1, tile boundaries, the maxima): each
 * result equals the evaluator's at that binding, nothing past the extents
 * is written, the tasks with nothing inside the extents are not run (and
 * their consumers are), bad bindings are refused with the dim, its maximum
 * and the value, and one executable runs at two sizes on two threads. */
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#ifdef PTO_TSAN_SHIM
#include "tests/tsan_shim.h"
#else
#include <criterion/criterion.h>
#endif

#include "pto/pto.h"

enum { BM = 3, SM = 50, K = 40, N = 36 };
#define SENTINEL (-12345.0f)

/* y = rowsum(relu(x w + b)), z = softmax over S of (x w)^T: x [B, S, K]
 * with B and S dynamic, small tiles so that the extents cut tile grids. */
static pto_program *dyn_program(void) {
  pto_program *p = pto_program_new("dyn");
  const int64_t B = pto_dim_dynamic(p, "B", BM), S = pto_dim_dynamic(p, "S", SM);
  const int64_t xs[3] = {B, S, K}, ws[2] = {K, N}, bs[2] = {1, N};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 3, xs);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, ws);
  pto_tensor *bias = pto_input(p, "bias", PTO_F32, 2, bs);
  pto_program_set_vec_tile(p, 8, 16);
  pto_program_set_cube_tile(p, 16, 16, 16);
  pto_program_push_label(p, "mm");
  pto_tensor *m = pto_matmul(p, x, w, 0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "act");
  pto_tensor *h = pto_relu(p, pto_add(p, m, bias));
  pto_output(p, pto_rowsum(p, h), "y");
  pto_output(p, pto_softmax(p, pto_transpose(p, m, 1, 2)), "z");
  pto_program_pop_label(p);
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  return p;
}

typedef struct bufs {
  float x[BM * SM * K], w[K * N], bias[N];
  float y[BM * SM], z[BM * N * SM];
  float ry[BM * SM], rz[BM * N * SM];
} bufs;

static void fill_inputs(bufs *b) {
  for (int i = 0; i < BM * SM * K; i++)
    b->x[i] = (float)((i * 37) % 19) / 16.0f - 0.5f;
  for (int i = 0; i < K * N; i++)
    b->w[i] = (float)((i * 11) % 7) / 8.0f - 0.375f;
  for (int i = 0; i < N; i++)
    b->bias[i] = (float)(i % 5) / 4.0f - 0.5f;
}

static void fill(float *v, size_t n, float x) {
  for (size_t i = 0; i < n; i++)
    v[i] = x;
}

/* Compares got with the evaluator's ref at binding (b, s): close inside
 * the extents, untouched past them. Returns the count of mismatches. */
static int compare(const bufs *B, int64_t b, int64_t s) {
  int bad = 0;
  for (int64_t i = 0; i < BM; i++)
    for (int64_t r = 0; r < SM; r++) {
      const float g = B->y[i * SM + r], e = B->ry[i * SM + r];
      const int in = i < b && r < s;
      bad += in ? !(fabsf(g - e) <= 1e-4f * (1 + fabsf(e))) : g != SENTINEL;
    }
  for (int64_t i = 0; i < BM; i++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t r = 0; r < SM; r++) {
        const size_t j = (size_t)((i * N + n) * SM + r);
        const int in = i < b && r < s;
        bad += in ? !(fabsf(B->z[j] - B->rz[j]) <= 1e-5f) : B->z[j] != SENTINEL;
      }
  return bad;
}

static pto_runtime *runtime(uint32_t workers, int trace) {
  pto_machine m;
  cr_assert_eq(pto_machine_host(&m), PTO_OK);
  m.shared = 1;
  m.workers[0] = m.workers[1] = workers;
  pto_runtime_params prm = pto_runtime_params_default();
  prm.machine = &m;
  prm.trace = trace;
  pto_runtime *rt = NULL;
  cr_assert_eq(pto_runtime_new(&prm, &rt), PTO_OK, "%s",
               pto_runtime_error(NULL));
  return rt;
}

static const int64_t bindings[][2] = {{1, 1},  {3, 50}, {2, 17}, {1, 16},
                                      {3, 8},  {2, 49}, {1, 33}, {3, 1}};

Test(scheduler, dynamic_runs_equal_the_evaluator_at_every_binding,
     .timeout = 120) {
  pto_program *p = dyn_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  cr_expect_eq(pto_executable_num_dims(e), 2);
  cr_expect_str_eq(pto_executable_dim_name(e, 1), "S");
  cr_expect_eq(pto_executable_dim_max(e, 1), SM);
  static bufs B;
  fill_inputs(&B);
  const void *in[] = {B.x, B.w, B.bias};
  void *out[] = {B.y, B.z}, *ref[] = {B.ry, B.rz};
  pto_runtime *rts[3] = {runtime(1, 0), runtime(2, 0), runtime(3, 0)};
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  for (size_t c = 0; c < sizeof bindings / sizeof bindings[0]; c++) {
    const int64_t b = bindings[c][0], s = bindings[c][1];
    cr_assert_eq(pto_program_eval_dims(p, bindings[c], in, ref), PTO_OK, "%s",
                 pto_program_error(p));
    cr_assert_eq(pto_run_bind(run, "B", b), PTO_OK, "%s", pto_run_error(run));
    cr_assert_eq(pto_run_bind(run, "S", s), PTO_OK, "%s", pto_run_error(run));
    cr_expect_eq(pto_run_dim(run, "S"), s);
    for (int way = 0; way < 4; way++) { /* serial, then 1-3 workers */
      fill(B.y, BM * SM, SENTINEL);
      fill(B.z, BM * N * SM, SENTINEL);
      pto_status st = way ? pto_run_exec(rts[way - 1], run, in, out)
                          : pto_run_exec_serial(run, in, out);
      cr_assert_eq(st, PTO_OK, "%s", pto_run_error(run));
      cr_expect_eq(compare(&B, b, s), 0, "B=%ld S=%ld way %d", (long)b,
                   (long)s, way);
    }
  }
  pto_run_free(run);
  for (int k = 0; k < 3; k++)
    pto_runtime_free(rts[k]);
  pto_executable_free(e);
  pto_program_free(p);
}

Test(scheduler, dynamic_bindings_are_checked, .timeout = 60) {
  pto_program *p = dyn_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static bufs B;
  const void *in[] = {B.x, B.w, B.bias};
  void *out[] = {B.y, B.z};
  /* nothing bound yet */
  cr_expect_eq(pto_run_exec_serial(run, in, out), PTO_EINVAL);
  cr_expect(strstr(pto_run_error(run), "dim 'B' (maximum 3) is not bound"),
            "%s", pto_run_error(run));
  cr_expect_eq(pto_run_bind(run, "S", SM + 1), PTO_ERANGE);
  cr_expect(strstr(pto_run_error(run),
                   "dim 'S' = 51 is outside [0, 50] (its maximum)"),
            "%s", pto_run_error(run));
  cr_expect_eq(pto_run_bind(run, "S", -1), PTO_ERANGE);
  cr_expect_eq(pto_run_bind(run, "T", 4), PTO_ENOTFOUND);
  cr_expect(strstr(pto_run_error(run), "no dim 'T'"), "%s", pto_run_error(run));
  cr_expect_eq(pto_run_bind_index(run, 2, 1), PTO_ENOTFOUND);
  cr_expect_eq(pto_run_dim(run, "B"), -1, "unbound");
  cr_assert_eq(pto_run_bind(run, "B", 2), PTO_OK);
  cr_expect_eq(pto_run_exec_serial(run, in, out), PTO_EINVAL, "S unbound");
  cr_expect_eq(pto_run_prepare(run), PTO_EINVAL, "prepare: S unbound");
  cr_expect(strstr(pto_run_error(run), "dim 'S' (maximum 50) is not bound"),
            "%s", pto_run_error(run));
  cr_expect_eq(pto_run_prepare(NULL), PTO_EINVAL);
  pto_run_free(run);
  pto_executable_free(e);
  pto_program_free(p);
}

/* The tasks a traced execution of run wrote into its trace. */
static long traced_tasks(pto_run *run) {
  char path[] = "/tmp/pto_dyn_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(pto_run_write_trace(run, path), PTO_OK, "%s",
               pto_run_error(run));
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  unlink(path);
  cr_assert_not_null(j, "%s", err.text);
  long n = (long)json_integer_value(json_object_get(json_object_get(j, "pto"),
                                                   "tasks"));
  long events = 0;
  size_t i;
  json_t *ev;
  json_array_foreach(json_object_get(j, "traceEvents"), i, ev) {
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    events += ph && !strcmp(ph, "X");
  }
  cr_expect_eq(events, n, "one event per task run");
  json_decref(j);
  return n;
}

Test(scheduler, dynamic_runs_skip_the_tasks_past_the_extents,
     .timeout = 60) {
  pto_program *p = dyn_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  const long all = (long)pto_executable_num_tasks(e);
  pto_runtime *rt = runtime(2, 1);
  static bufs B;
  fill_inputs(&B);
  const void *in[] = {B.x, B.w, B.bias};
  void *out[] = {B.y, B.z}, *ref[] = {B.ry, B.rz};
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  long prev = 0;
  const int64_t grow[][2] = {{1, 1}, {1, 20}, {2, 20}, {3, 50}};
  for (int c = 0; c < 4; c++) {
    cr_assert_eq(pto_run_bind(run, "B", grow[c][0]), PTO_OK);
    cr_assert_eq(pto_run_bind(run, "S", grow[c][1]), PTO_OK);
    fill(B.y, BM * SM, SENTINEL);
    fill(B.z, BM * N * SM, SENTINEL);
    cr_assert_eq(pto_run_exec(rt, run, in, out), PTO_OK, "%s",
                 pto_run_error(run));
    cr_assert_eq(pto_program_eval_dims(p, grow[c], in, ref), PTO_OK);
    cr_expect_eq(compare(&B, grow[c][0], grow[c][1]), 0, "binding %d", c);
    const long ran = traced_tasks(run);
    /* fewer tasks where the extents are smaller, all at the maxima */
    cr_expect(ran > prev, "binding %d ran %ld tasks after %ld", c, ran, prev);
    cr_expect(c == 3 ? ran == all : ran < all, "binding %d: %ld of %ld", c,
              ran, all);
    prev = ran;
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

typedef struct sized {
  const pto_executable *e;
  pto_runtime *rt;
  int64_t b, s;
  const float *ry, *rz;
  int failures;
} sized;

static void run_sized(void *arg) {
  sized *a = arg;
  static _Thread_local bufs B;
  fill_inputs(&B);
  memcpy(B.ry, a->ry, sizeof B.ry);
  memcpy(B.rz, a->rz, sizeof B.rz);
  const void *in[] = {B.x, B.w, B.bias};
  void *out[] = {B.y, B.z};
  pto_run *run = NULL;
  if (pto_run_new(a->e, &run) || pto_run_bind(run, "B", a->b) ||
      pto_run_bind(run, "S", a->s)) {
    a->failures++;
    pto_run_free(run);
    return;
  }
  for (int i = 0; i < 30; i++) {
    fill(B.y, BM * SM, SENTINEL);
    fill(B.z, BM * N * SM, SENTINEL);
    if (pto_run_exec(a->rt, run, in, out) || compare(&B, a->b, a->s))
      a->failures++;
  }
  pto_run_free(run);
}

Test(scheduler, one_dynamic_executable_runs_two_sizes_at_once,
     .timeout = 120) {
  pto_program *p = dyn_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime(2, 0);
  static bufs R1, R2;
  fill_inputs(&R1);
  fill_inputs(&R2);
  const int64_t d1[2] = {1, 7}, d2[2] = {3, 45};
  const void *in[] = {R1.x, R1.w, R1.bias};
  void *r1[] = {R1.ry, R1.rz}, *r2[] = {R2.ry, R2.rz};
  cr_assert_eq(pto_program_eval_dims(p, d1, in, r1), PTO_OK);
  cr_assert_eq(pto_program_eval_dims(p, d2, in, r2), PTO_OK);
  sized a = {e, rt, 1, 7, R1.ry, R1.rz, 0}, b = {e, rt, 3, 45, R2.ry, R2.rz, 0};
  uv_thread_t t1, t2;
  cr_assert_eq(uv_thread_create(&t1, run_sized, &a), 0);
  cr_assert_eq(uv_thread_create(&t2, run_sized, &b), 0);
  uv_thread_join(&t1);
  uv_thread_join(&t2);
  cr_expect_eq(a.failures, 0);
  cr_expect_eq(b.failures, 0);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

/* Per-row work, as per-sequence work in a batch: row i of x [B, 24] (B
 * dynamic, up to 4) through its own matmul; a row at or past B is skipped
 * whole, and B = 0 runs nothing. */
Test(scheduler, dynamic_slices_run_only_the_rows_inside_the_batch,
     .timeout = 60) {
  enum { R = 4, C = 24, W = 20 };
  pto_program *p = pto_program_new("rows");
  const int64_t xs[2] = {pto_dim_dynamic(p, "B", R), C}, ws[2] = {C, W};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, ws);
  for (int i = 0; i < R; i++) {
    const int64_t b[2] = {i, 0}, e[2] = {i + 1, C};
    char name[8];
    snprintf(name, sizeof name, "y%d", i);
    pto_output(p,
               pto_rowsum(p, pto_relu(p, pto_matmul(p, pto_slice(p, x, b, e),
                                                     w, 0))),
               name);
  }
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime(2, 1);
  float xb[R * C], wb[C * W], y[R], ref[R];
  for (int i = 0; i < R * C; i++)
    xb[i] = (float)(i % 9) - 4;
  for (int i = 0; i < C * W; i++)
    wb[i] = (float)(i % 5) - 2;
  const void *in[] = {xb, wb};
  void *out[] = {&y[0], &y[1], &y[2], &y[3]},
       *refs[] = {&ref[0], &ref[1], &ref[2], &ref[3]};
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  long prev = -1;
  for (int64_t b = 0; b <= R; b++) {
    cr_assert_eq(pto_run_bind(run, "B", b), PTO_OK, "%s", pto_run_error(run));
    fill(y, R, SENTINEL);
    fill(ref, R, SENTINEL);
    cr_assert_eq(pto_run_exec(rt, run, in, out), PTO_OK, "%s",
                 pto_run_error(run));
    cr_assert_eq(pto_program_eval_dims(p, &b, in, refs), PTO_OK, "%s",
                 pto_program_error(p));
    for (int i = 0; i < R; i++) {
      cr_expect_eq(y[i], ref[i], "B=%ld row %d", (long)b, i);
      cr_expect(i < b ? ref[i] != SENTINEL : ref[i] == SENTINEL);
    }
    const long ran = traced_tasks(run);
    cr_expect(b ? ran > prev : ran == 0, "B=%ld ran %ld tasks", (long)b, ran);
    prev = ran;
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

/* Within a few ulp: the kernels' row sums add in another order than the
 * evaluator's. */
static int near(float a, float b) {
  return fabsf(a - b) <= 4 * FLT_EPSILON * (1 + fabsf(b));
}

/* The statistics along a dynamic last axis divide by its bound extent:
 * mean, var, rms_norm and layer_norm of [R, S<=SM] at S = 1, 5, 16, SM
 * against plain C in double (and the run against the evaluator). */
Test(scheduler, dynamic_means_divide_by_the_extent, .timeout = 60) {
  enum { R = 3, SMAX = 24 };
  pto_program *p = pto_program_new("stats");
  const int64_t xs[2] = {R, pto_dim_dynamic(p, "S", SMAX)};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, xs);
  pto_program_set_vec_tile(p, 2, 8);
  pto_output(p, pto_mean(p, x), "mean");
  pto_output(p, pto_var(p, x), "var");
  pto_output(p, pto_rms_norm(p, x, NULL, 1e-6), "rms");
  pto_output(p, pto_layer_norm(p, x, NULL, NULL, 1e-6), "ln");
  cr_assert_eq(pto_program_status(p), PTO_OK, "%s", pto_program_error(p));
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  pto_runtime *rt = runtime(2, 0);
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static float xb[R * SMAX], mean[R], var[R], rms[R * SMAX], ln[R * SMAX];
  static float rmean[R], rvar[R], rrms[R * SMAX], rln[R * SMAX];
  for (int i = 0; i < R * SMAX; i++)
    xb[i] = (float)((i * 7) % 11) / 4.0f - 1.0f;
  const void *in[] = {xb};
  void *out[] = {mean, var, rms, ln}, *ref[] = {rmean, rvar, rrms, rln};
  static const int64_t sizes[] = {1, 5, 16, SMAX};
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
    const int64_t s = sizes[c];
    cr_assert_eq(pto_run_bind(run, "S", s), PTO_OK, "%s", pto_run_error(run));
    cr_assert_eq(pto_run_exec(rt, run, in, out), PTO_OK, "%s",
                 pto_run_error(run));
    cr_assert_eq(pto_program_eval_dims(p, &s, in, ref), PTO_OK, "%s",
                 pto_program_error(p));
    for (int r = 0; r < R; r++) {
      const float *row = xb + r * SMAX;
      double m = 0, v = 0, q = 0;
      for (int64_t k = 0; k < s; k++)
        m += row[k], q += (double)row[k] * row[k];
      m /= (double)s;
      for (int64_t k = 0; k < s; k++)
        v += (row[k] - m) * (row[k] - m);
      v /= (double)s;
      q /= (double)s;
      cr_expect(fabs(mean[r] - m) <= 1e-5, "S=%ld row %d: mean %g, not %g",
                (long)s, r, (double)mean[r], m);
      cr_expect(fabs(var[r] - v) <= 1e-5 * (1 + v),
                "S=%ld row %d: var %g, not %g", (long)s, r, (double)var[r], v);
      cr_expect(near(mean[r], rmean[r]) && near(var[r], rvar[r]),
                "S=%ld row %d: run vs eval", (long)s, r);
      for (int64_t k = 0; k < s; k++) {
        const double wr = row[k] / sqrt(q + 1e-6),
                     wl = (row[k] - m) / sqrt(v + 1e-6);
        const size_t j = (size_t)(r * SMAX + k);
        cr_expect(fabs(rms[j] - wr) <= 1e-4 * (1 + fabs(wr)),
                  "S=%ld [%d][%ld]: rms_norm %g, not %g", (long)s, r, (long)k,
                  (double)rms[j], wr);
        cr_expect(fabs(ln[j] - wl) <= 1e-4 * (1 + fabs(wl)),
                  "S=%ld [%d][%ld]: layer_norm %g, not %g", (long)s, r,
                  (long)k, (double)ln[j], wl);
        cr_expect(near(rms[j], rrms[j]) && near(ln[j], rln[j]),
                  "S=%ld [%d][%ld]: run vs eval", (long)s, r, (long)k);
      }
    }
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}

/* pto_run_prepare sizes the job once per binding: executions at the same
 * extents reuse it, a changed extent redoes it, and the results are the
 * evaluator's either way. */
Test(scheduler, a_prepared_binding_is_reused_until_it_changes, .timeout = 60) {
  pto_program *p = dyn_program();
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  static bufs B;
  fill_inputs(&B);
  const void *in[] = {B.x, B.w, B.bias};
  void *out[] = {B.y, B.z}, *ref[] = {B.ry, B.rz};
  pto_runtime *rt = runtime(2, 0);
  pto_run *run = NULL;
  cr_assert_eq(pto_run_new(e, &run), PTO_OK);
  static const int64_t seq[][2] = {{2, 17}, {2, 17}, {3, 17}, {3, 40}, {3, 40}};
  for (size_t c = 0; c < sizeof seq / sizeof seq[0]; c++) {
    cr_assert_eq(pto_run_bind(run, "B", seq[c][0]), PTO_OK);
    cr_assert_eq(pto_run_bind(run, "S", seq[c][1]), PTO_OK);
    if (c % 2 == 0) /* prepared apart, or by the execution */
      cr_assert_eq(pto_run_prepare(run), PTO_OK, "%s", pto_run_error(run));
    fill(B.y, BM * SM, SENTINEL);
    fill(B.z, BM * N * SM, SENTINEL);
    cr_assert_eq(pto_run_exec(rt, run, in, out), PTO_OK, "%s",
                 pto_run_error(run));
    cr_assert_eq(pto_program_eval_dims(p, seq[c], in, ref), PTO_OK);
    cr_expect_eq(compare(&B, seq[c][0], seq[c][1]), 0, "binding %zu", c);
  }
  pto_run_free(run);
  pto_runtime_free(rt);
  pto_executable_free(e);
  pto_program_free(p);
}
