// cpp: the header-only C++ wrapper (pto/pto.hpp). Results against the
// reference evaluator, errors thrown with the library's own message, the
// buffer checks only the wrapper can make, move semantics and lifetimes,
// and scope guards that pop on every way out of a scope.
#include "pto/pto.hpp"

#include <criterion/criterion.h>

#include <array>
#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

// ---- what the types promise, checked at compile time ------------------------

static_assert(!std::is_copy_constructible_v<pto::program>);
static_assert(!std::is_copy_assignable_v<pto::program>);
static_assert(std::is_nothrow_move_constructible_v<pto::program>);
static_assert(std::is_nothrow_move_assignable_v<pto::program>);
static_assert(!std::is_copy_constructible_v<pto::executable>);
static_assert(std::is_nothrow_move_constructible_v<pto::executable>);
static_assert(std::is_nothrow_move_assignable_v<pto::executable>);
static_assert(!std::is_copy_constructible_v<pto::runtime>);
static_assert(std::is_nothrow_move_constructible_v<pto::runtime>);
static_assert(std::is_nothrow_move_assignable_v<pto::runtime>);
static_assert(!std::is_copy_constructible_v<pto::config>);
static_assert(std::is_nothrow_move_constructible_v<pto::config>);
static_assert(!std::is_copy_constructible_v<pto::scope>);
static_assert(std::is_nothrow_move_constructible_v<pto::scope>);
static_assert(std::is_nothrow_destructible_v<pto::program>);
static_assert(std::is_nothrow_destructible_v<pto::executable>);
static_assert(std::is_nothrow_destructible_v<pto::scope>);
static_assert(std::is_base_of_v<std::runtime_error, pto::error>);
static_assert(std::is_nothrow_copy_constructible_v<pto::error>);
// a buffer of an output cannot view const data
static_assert(
    !std::is_constructible_v<pto::buffer, const std::vector<float> &>);
static_assert(std::is_constructible_v<pto::buffer, std::vector<float> &>);
static_assert(
    std::is_constructible_v<pto::const_buffer, std::span<const float>>);
static_assert(std::is_constructible_v<pto::buffer, std::span<float>>);
static_assert(!std::is_constructible_v<pto::buffer, std::span<const float>>);

// ---- helpers ----------------------------------------------------------------

static std::vector<float> fill(std::size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed;
  for (float &f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
  }
  return v;
}

static void expect_close(const std::vector<float> &got,
                         const std::vector<float> &want, double rtol,
                         const char *what) {
  cr_assert_eq(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); i++)
    if (!(std::fabs(got[i] - want[i]) <= rtol * (1.0 + std::fabs(want[i])))) {
      cr_assert_fail("%s[%zu]: %.9g, eval %.9g", what, i, got[i], want[i]);
    }
}

// The pto::error f throws (the test fails when it throws none).
template <class F> static pto::error thrown(F &&f) {
  try {
    f();
  } catch (const pto::error &e) {
    return e;
  }
  cr_assert_fail("no pto::error was thrown");
  throw std::logic_error("unreachable");
}

// Criterion's string asserts keep pointers past the statement that made
// them: compare copies.
#define EXPECT_STR(actual, expected)                                           \
  do {                                                                         \
    const std::string a_ = (actual), e_ = (expected);                          \
    cr_expect(a_ == e_, "%s is '%s', expected '%s'", #actual, a_.c_str(),      \
              e_.c_str());                                                     \
  } while (0)

static bool has(const std::string &s, const char *part) {
  return s.find(part) != std::string::npos;
}

// PyPTO's worked example, as the wrapper builds it.
static pto::program pypto_example() {
  pto::program p("pypto-example");
  pto::tensor A = p.input("A", PTO_F32, {64, 64});
  pto::tensor B = p.input("B", PTO_F32, {64, 64});
  pto::tensor W = p.input("W", PTO_F32, {64, 32});
  auto tile = p.vec_tile(32, 32);
  p.output(p.rowsum(p.matmul(A * 2 + B, W)), "C");
  return p;
}

// ---- results against eval ---------------------------------------------------

Test(cpp, pypto_example_runs_as_eval_computes) {
  pto::program p = pypto_example();
  cr_expect_eq(p.num_inputs(), 3);
  cr_expect_eq(p.num_outputs(), 1);
  cr_expect(p.output_at(0).shape() == (std::vector<int64_t>{64, 1}));
  pto::config cfg;
  cfg.set_knob(PTO_KNOB_NBUFFER, 1);
  pto::executable exe = pto::compile(p, cfg);
  pto_exe_stats st = exe.stats();
  cr_expect_eq(st.programs, 3u);
  cr_expect_eq(st.tasks, 7u);
  cr_expect_eq(exe.num_tasks(), 7u);
  EXPECT_STR(exe.outputs().at(0).name, "C");
  EXPECT_STR(exe.inputs().at(2).name, "W");
  cr_expect_eq(exe.inputs().at(2).bytes(), 64u * 32u * 4u);

  std::vector<float> a = fill(64 * 64, 1), b = fill(64 * 64, 2),
                     w = fill(64 * 32, 3);
  std::vector<float> ref(64), par(64), ser(64);
  p.eval({a, b, w}, {ref});
  pto::runtime rt;
  rt.run(exe, {a, b, w}, {par});
  exe.run_serial({a, b, w}, {ser});
  expect_close(par, ref, 1e-5, "runtime");
  expect_close(ser, ref, 1e-5, "serial");
  // by hand, row 5
  double want = 0;
  for (int n = 0; n < 32; n++) {
    double dot = 0;
    for (int k = 0; k < 64; k++)
      dot += (2.0 * a[5 * 64 + k] + b[5 * 64 + k]) * w[k * 32 + n];
    want += dot;
  }
  cr_expect(std::fabs(ref[5] - want) <= 1e-5 * (1 + std::fabs(want)),
            "eval row 5: %g, by hand %g", ref[5], want);
}

Test(cpp, operators_and_ops_match_eval) {
  pto::program p("ops");
  pto::tensor x = p.input("x", PTO_F32, {16, 24});
  pto::tensor y = p.input("y", PTO_F32, {16, 24});
  pto::tensor col = p.input("col", PTO_F32, {16, 1});
  auto tile = p.vec_tile(8, 8);
  // element-wise through operators and methods, broadcasting a column
  pto::tensor e = (x - y) * 3 + 2 * y / 4 - col + (-x) + 1.5;
  e = p.max(p.min(e, y), p.neg(p.abs(x)));
  e = p.mins(p.maxs(p.adds(p.subs(p.muls(p.divs(e, 2), 3), 1), 1), -2), 2);
  p.output(e, "e");
  p.output(p.softmax(p.exp(p.relu(x))), "sm");
  p.output(p.select(p.cmp(x, y, PTO_CMP_GT), x, y), "sel");
  p.output(p.rowmax(x) + p.rowmin(y) + p.rowsum(x), "rows");
  p.output(p.colsum(y) + p.colmax(x), "cols");
  // views, data movement, top-k
  pto::tensor s = p.slice(x, {4, 0}, {12, 24});
  p.output(
      p.concat({s, p.transpose(p.reshape(p.slice(y, {0, 0}, {4, 24}), {24, 4}),
                               0, 1)},
               0),
      "cat");
  auto top = p.topk(x, 5);
  p.output(top.values, "topv");
  p.output(top.indices, "topi");
  pto::tensor idx = p.iota(PTO_I32, {1, 3}, 2);
  p.output(p.gather(x, p.reshape(idx, {3})) + p.full(PTO_F32, {3, 24}, 0.5),
           "gat");
  cr_assert_eq(p.status(), PTO_OK, "%s", p.error_message().c_str());

  std::vector<float> xv = fill(16 * 24, 7), yv = fill(16 * 24, 8),
                     cv = fill(16, 9);
  std::vector<float> e_run(16 * 24), sm_run(16 * 24), sel_run(16 * 24),
      rows_run(16), cols_run(24), cat_run(12 * 24), topv_run(16 * 5),
      gat_run(3 * 24);
  std::vector<int32_t> topi_run(16 * 5);
  std::vector<float> e_ref(e_run.size()), sm_ref(sm_run.size()),
      sel_ref(sel_run.size()), rows_ref(16), cols_ref(24),
      cat_ref(cat_run.size()), topv_ref(topv_run.size()),
      gat_ref(gat_run.size());
  std::vector<int32_t> topi_ref(topi_run.size());
  p.eval({xv, yv, cv}, {e_ref, sm_ref, sel_ref, rows_ref, cols_ref, cat_ref,
                        topv_ref, topi_ref, gat_ref});
  pto::executable exe = pto::compile(p);
  pto::runtime rt;
  rt.run(exe, {xv, yv, cv},
         {e_run, sm_run, sel_run, rows_run, cols_run, cat_run, topv_run,
          topi_run, gat_run});
  expect_close(e_run, e_ref, 1e-6, "e");
  expect_close(sm_run, sm_ref, 1e-5, "sm");
  cr_expect(sel_run == sel_ref, "select is exact");
  expect_close(rows_run, rows_ref, 1e-5, "rows");
  expect_close(cols_run, cols_ref, 1e-5, "cols");
  cr_expect(cat_run == cat_ref, "concat is exact");
  cr_expect(topv_run == topv_ref, "topk values are exact");
  cr_expect(topi_run == topi_ref, "topk indices are exact");
  cr_expect(gat_run == gat_ref, "gather is exact");
  // spot checks against the inputs themselves
  cr_expect_eq(cat_ref[0], xv[4 * 24]);
  cr_expect_eq(gat_ref[0], xv[2 * 24] + 0.5f);
  cr_expect_eq(sel_ref[3], xv[3] > yv[3] ? xv[3] : yv[3]);
}

Test(cpp, buffers_from_spans_arrays_and_pointers) {
  pto::program p("views");
  pto::tensor a = p.input("a", PTO_F32, {2, 4});
  pto::tensor i = p.input("i", PTO_I32, {2, 4});
  p.output(p.rowsum(a * 3), "s");
  p.output(p.cast(i, PTO_F32) + a, "t");
  float a_arr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::array<int32_t, 8> i_arr = {10, 20, 30, 40, 50, 60, 70, 80};
  std::vector<float> s(2), t(8);
  std::span<const float> a_span(a_arr);
  p.eval({a_span, i_arr}, {std::span<float>(s), pto::buffer(t.data(), 8)});
  cr_expect_eq(s[0], 30.0f);
  cr_expect_eq(s[1], 78.0f);
  cr_expect_eq(t[7], 88.0f);
  float s_arr[2] = {0, 0};
  pto::executable exe = pto::compile(p);
  std::vector<pto::const_buffer> ins = {pto::const_buffer(a_arr, 8),
                                        pto::const_buffer(i_arr)};
  std::vector<pto::buffer> outs = {s_arr, t};
  exe.run_serial(ins, outs);
  cr_expect_eq(s_arr[0], 30.0f);
  cr_expect_eq(s_arr[1], 78.0f);
  // raw bytes are accepted by size
  std::vector<unsigned char> bytes(8 * 4);
  std::memcpy(bytes.data(), a_arr, bytes.size());
  std::fill(t.begin(), t.end(), 0.0f);
  exe.run_serial({bytes, i_arr}, {s_arr, t});
  cr_expect_eq(t[0], 11.0f);
}

Test(cpp, gemm_program_is_adopted_and_checked) {
  const int64_t M = 48, N = 40, K = 36;
  pto::program p = pto::gemm_program(M, N, K);
  EXPECT_STR(p.name(), "gemm");
  std::vector<float> a = fill(M * K, 11), b = fill(K * N, 12), c(M * N),
                     ref(M * N);
  pto_gemm_ref(M, N, K, a.data(), b.data(), ref.data());
  pto::executable exe = pto::compile(p);
  // the C API declared the output: its name is unknown, its size is not
  cr_expect_eq(exe.outputs().at(0).numel, M * N);
  pto::runtime rt;
  rt.run(exe, {a, b}, {c});
  expect_close(c, ref, 1e-5, "gemm");

  // bad sizes: the adopted program's error is thrown, the program freed
  pto::error e = thrown([] { (void)pto::gemm_program(0, 8, 8); });
  EXPECT_STR(e.call(), "pto::program");
  cr_expect_lt(e.status(), 0);
  cr_expect(std::strlen(e.detail()) > 0);
}

// ---- errors carry the library's message -------------------------------------

Test(cpp, matmul_k_mismatch_throws_the_library_message) {
  pto::program p("bad");
  pto::tensor a = p.input("a", PTO_F32, {4, 8});
  pto::tensor b = p.input("b", PTO_F32, {6, 4});
  auto l = p.label("mlp");
  pto::error e = thrown([&] { p.matmul(a, b); });
  cr_expect_eq(e.status(), PTO_ESHAPE, "%s", e.what());
  EXPECT_STR(e.status_name(), "PTO_ESHAPE");
  cr_expect_eq(e.status(), p.status());
  EXPECT_STR(e.call(), "pto::program::matmul");
  EXPECT_STR(e.detail(), pto_program_error(p.get()));
  EXPECT_STR(e.what(), "pto::program::matmul: " + p.error_message());
  cr_expect(has(e.detail(), "K of a"), "%s", e.detail());
  cr_expect(has(e.detail(), "'mlp'"), "%s", e.detail());
  cr_expect(has(e.detail(), "8") && has(e.detail(), "6"), "%s", e.detail());
  // the error sticks: compile and eval refuse the program with it
  pto::error c = thrown([&] { (void)pto::compile(p); });
  cr_expect_eq(c.status(), PTO_ESHAPE);
  EXPECT_STR(c.call(), "pto::compile");
  cr_expect(has(c.detail(), "K of a"), "%s", c.what());
  // operators report through the same path
  pto::program q("bad2");
  pto::tensor x = q.input("x", PTO_F32, {4, 8});
  pto::tensor y = q.input("y", PTO_F32, {4, 7});
  pto::error o = thrown([&] { (void)(x + y); });
  cr_expect_eq(o.status(), q.status());
  EXPECT_STR(o.call(), "pto::operator+");
  EXPECT_STR(o.detail(), pto_program_error(q.get()));
}

Test(cpp, bad_config_json_throws_the_library_message) {
  pto::config cfg;
  std::string before = cfg.to_json();
  pto::error e =
      thrown([&] { cfg.load_string("{\"knobs\": {\"nbufer\": 1}}"); });
  cr_expect_eq(e.status(), PTO_ECONFIG);
  EXPECT_STR(e.call(), "pto::config::load_string");
  EXPECT_STR(e.detail(), pto_config_error(cfg.get()));
  cr_expect(has(e.detail(), "knobs.nbufer: unknown key"), "%s", e.detail());
  cr_expect_eq(cfg.to_json(), before, "unchanged on error");
  pto::error syn = thrown([&] { cfg.load_string("{\"knobs\": "); });
  cr_expect_eq(syn.status(), PTO_ECONFIG);
  cr_expect(std::strlen(syn.detail()) > 0);
  pto::error rng = thrown([&] { cfg.set_knob(PTO_KNOB_L1_REUSE, 0); });
  cr_expect_eq(rng.status(), PTO_EINVAL);
  EXPECT_STR(rng.detail(), pto_config_error(cfg.get()));
  pto::error file = thrown([&] { cfg.load_file("/nonexistent/tune.json"); });
  cr_expect_eq(file.status(), PTO_EIO);
  // and a good one applies
  cfg.load_string("{\"knobs\": {\"l1_reuse\": 4}, \"labels\": "
                  "{\"mlp\": {\"vec_tile\": [8, 16]}}}");
  cr_expect_eq(cfg.knob(PTO_KNOB_L1_REUSE), 4);
  pto_tile_shape t = pto_tile_shape_default();
  cr_expect(cfg.tile("mlp.up", t));
  cr_expect_eq(t.vec_rows, 8u);
  cr_expect_eq(t.vec_cols, 16u);
  pto::config copy = cfg.clone();
  cr_expect_eq(copy.to_json(), cfg.to_json());
}

Test(cpp, compile_error_names_the_op_and_sizes) {
  pto::program p("big");
  pto::tensor x = p.input("x", PTO_F32, {64, 1024});
  auto l = p.label("x");
  auto t = p.vec_tile(64, 1024);
  p.output(p.rowsum(x), "s");
  pto::config cfg;
  cfg.load_string("{\"machine\": {\"memory\": {\"UB\": \"16KiB\"}}}");
  pto::error e = thrown([&] { (void)pto::compile(p, cfg); });
  cr_expect_eq(e.status(), PTO_ECAPACITY, "%s", e.what());
  EXPECT_STR(e.detail(), p.error_message());
  cr_expect(has(e.detail(), "UB"), "%s", e.what());
}

Test(cpp, wrong_buffers_are_refused_naming_the_tensor) {
  pto::program p = pypto_example();
  pto::executable exe = pto::compile(p);
  pto::runtime rt;
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64 - 1, 1.0f), w(64 * 32, 1.0f);
  std::vector<float> c(64, -7.0f), c_short(63);
  std::vector<int32_t> ints(64 * 64);

  pto::error e = thrown([&] { rt.run(exe, {a, b, w}, {c}); });
  cr_expect_eq(e.status(), PTO_EINVAL);
  EXPECT_STR(e.call(), "pto::runtime::run");
  cr_expect(has(e.detail(), "input 1 'B' f32[64,64]"), "%s", e.what());
  cr_expect(has(e.detail(), "needs 4096 elements"), "%s", e.what());
  cr_expect(has(e.detail(), "given 4095"), "%s", e.what());
  cr_expect(c[0] == -7.0f, "nothing ran");

  b.push_back(1.0f);
  e = thrown([&] { rt.run(exe, {a, b, w}, {c_short}); });
  cr_expect(has(e.detail(), "output 0 'C' f32[64,1]"), "%s", e.what());
  cr_expect(has(e.detail(), "needs 64 elements"), "%s", e.what());
  cr_expect(has(e.detail(), "given 63"), "%s", e.what());

  e = thrown([&] { rt.run(exe, {a, b}, {c}); });
  cr_expect(has(e.detail(), "3 input buffers expected (A, B, W), 2 given"),
            "%s", e.what());
  e = thrown([&] { rt.run(exe, {a, b, w}, {}); });
  cr_expect(has(e.detail(), "1 output buffers expected (C), 0 given"), "%s",
            e.what());
  e = thrown([&] { rt.run(exe, {ints, b, w}, {c}); });
  cr_expect(has(e.detail(), "input 0 'A'"), "%s", e.what());
  cr_expect(has(e.detail(), "integer"), "%s", e.what());
  const float *none = nullptr;
  e = thrown([&] { rt.run(exe, {pto::const_buffer(none, 4096), b, w}, {c}); });
  cr_expect(has(e.detail(), "a null buffer"), "%s", e.what());
  // the serial runner and eval check the same way
  e = thrown([&] { exe.run_serial({a, c_short, w}, {c}); });
  EXPECT_STR(e.call(), "pto::executable::run_serial");
  cr_expect(has(e.detail(), "input 1 'B'"), "%s", e.what());
  e = thrown([&] { p.eval({a, b, w}, {c_short}); });
  EXPECT_STR(e.call(), "pto::program::eval");
  cr_expect(has(e.detail(), "output 0 'C'"), "%s", e.what());
  // and the right buffers run
  rt.run(exe, {a, b, w}, {c});
  cr_expect_eq(c[0], 3.0f * 64 * 32, "rowsum of 32 cols of (2+1)*64: %g", c[0]);
}

Test(cpp, run_time_error_throws_the_executable_message) {
  pto::program p("strict");
  pto::tensor table = p.input("table", PTO_F32, {5, 4});
  pto::tensor idx = p.input("idx", PTO_I32, {4});
  {
    auto l = p.label("kv");
    p.output(p.gather(table, idx, PTO_GATHER_STRICT), "g");
  }
  std::vector<float> t = fill(20, 3), g(16);
  std::vector<int32_t> bad = {0, 1, 7, 2}, good = {4, 3, 2, 1};
  pto::executable exe = pto::compile(p);
  pto::runtime rt;
  pto::error e = thrown([&] { rt.run(exe, {t, bad}, {g}); });
  cr_expect_eq(e.status(), PTO_ERANGE, "%s", e.what());
  EXPECT_STR(e.detail(), pto_executable_error(exe.get()));
  cr_expect(has(e.detail(), "index 7"), "%s", e.what());
  pto::error v = thrown([&] { p.eval({t, bad}, {g}); });
  cr_expect_eq(v.status(), PTO_ERANGE);
  cr_expect(has(v.detail(), "'kv'"), "%s", v.what());
  // a run-time error does not stick
  rt.run(exe, {t, good}, {g});
  cr_expect_eq(g[0], t[16]);
}

Test(cpp, runtime_params_and_machine) {
  pto::runtime_params prm;
  pto_runtime_params d = pto_runtime_params_default();
  cr_expect_eq(prm.policy, d.policy);
  cr_expect_eq(prm.spin_us, d.spin_us);
  cr_expect_eq(prm.pin, d.pin);
  pto_machine m = pto::machine_host();
  m.workers[0] = m.workers[1] = 2;
  m.shared = 1;
  prm.machine = &m;
  prm.pin = 0;
  pto::runtime rt(prm);
  cr_expect_eq(rt.num_workers(), 2u);
  cr_expect_eq(rt.worker_pu(0), -1);
  pto_machine huge = m;
  huge.workers[0] = huge.workers[1] = 100000;
  prm.machine = &huge;
  pto::error e = thrown([&] { pto::runtime bad(prm); });
  EXPECT_STR(e.call(), "pto::runtime");
  EXPECT_STR(e.detail(), pto_runtime_error(nullptr));
  EXPECT_STR(pto::machine_ascend().name, pto_machine_ascend().name);
}

Test(cpp, composed_operators_wrap_and_fail) {
  pto::program p("composed");
  pto::tensor x = p.input("x", PTO_F32, {4, 8});
  // an op of the C API, wrapped
  pto::tensor e = p.wrap(pto_exp(p.get(), x.get()), "pto_exp");
  cr_expect_eq(e.numel(), 32);
  pto::error w = thrown([&] { p.wrap(pto_exp(p.get(), nullptr), "pto_exp"); });
  EXPECT_STR(w.call(), "pto_exp");
  EXPECT_STR(w.detail(), p.error_message());
  // a composed operator refusing its input, as the C operators do
  pto::program q("composed2");
  q.input("y", PTO_F32, {4, 8});
  auto l = q.label("mine");
  pto::error f = thrown([&] { q.fail(PTO_ESHAPE, "my_op", "y must be 4x4"); });
  cr_expect_eq(f.status(), PTO_ESHAPE);
  EXPECT_STR(f.detail(), "my_op 'mine': y must be 4x4");
  cr_expect_eq(q.status(), PTO_ESHAPE, "it sticks");
  pto::error g = thrown([&] { q.fail(PTO_OK, "my_op", "not an error"); });
  cr_expect_eq(g.status(), PTO_EINVAL);
  // checks of the wrapper's own: slice bounds per dim, at most 4 dims
  pto::program r("checks");
  pto::tensor z = r.input("z", PTO_F32, {4, 8});
  pto::error s = thrown([&] { r.slice(z, {0}, {2}); });
  cr_expect_eq(s.status(), PTO_ESHAPE);
  cr_expect(has(s.detail(), "has 2 dims; begin has 1, end 1"), "%s", s.what());
  pto::program t("dims");
  pto::error d = thrown([&] { t.input("w", PTO_F32, {1, 2, 3, 4, 5}); });
  cr_expect_eq(d.status(), PTO_EINVAL);
  cr_expect(has(d.detail(), "5 dims given, at most 4"), "%s", d.what());
  std::vector<long> v = {2, 3};
  cr_expect(t.input("v", PTO_F32, v).shape() == (std::vector<int64_t>{2, 3}));
  pto::error o = thrown([&] { t.output_at(3); });
  cr_expect_eq(o.status(), PTO_ERANGE);
}

// ---- moves and lifetimes ----------------------------------------------------

Test(cpp, moves_leave_empty_objects_that_throw) {
  pto::program p = pypto_example();
  pto_program *raw = p.get();
  pto::program q(std::move(p));
  cr_expect_eq(q.get(), raw);
  cr_expect_null(p.get());
  cr_expect(!p);
  pto::error e = thrown([&] { p.input("x", PTO_F32, {1}); });
  cr_expect_eq(e.status(), PTO_ESTATE);
  cr_expect(has(e.detail(), "moved from"), "%s", e.what());
  e = thrown([&] { (void)pto::compile(p); });
  cr_expect_eq(e.status(), PTO_ESTATE);

  pto::program r("other");
  r = std::move(q); // frees "other"
  cr_expect_eq(r.get(), raw);
  EXPECT_STR(r.name(), "pypto-example");

  pto::executable x = pto::compile(r);
  pto_executable *xe = x.get();
  pto::executable y(std::move(x));
  cr_expect_eq(y.get(), xe);
  cr_expect_null(x.get());
  std::vector<float> a = fill(64 * 64, 1), b = fill(64 * 64, 2),
                     w = fill(64 * 32, 3), c(64), ref(64);
  e = thrown([&] { x.run_serial({a, b, w}, {c}); });
  cr_expect_eq(e.status(), PTO_ESTATE);
  pto::executable z = pto::compile(r);
  z = std::move(y); // frees z's own executable first
  cr_expect_eq(z.get(), xe);

  pto::runtime rt;
  pto::runtime rt2(std::move(rt));
  cr_expect_null(rt.get());
  e = thrown([&] { rt.run(z, {a, b, w}, {c}); });
  cr_expect_eq(e.status(), PTO_ESTATE);
  rt2.run(z, {a, b, w}, {c});
  r.eval({a, b, w}, {ref});
  expect_close(c, ref, 1e-5, "after moves");

  pto::config cfg;
  pto::config cfg2(std::move(cfg));
  cr_expect_null(cfg.get());
  e = thrown([&] { cfg.load_string("{}"); });
  cr_expect_eq(e.status(), PTO_ESTATE);
  cfg2.load_string("{}");
}

Test(cpp, executable_may_outlive_its_program) {
  std::vector<float> a = fill(64 * 64, 1), b = fill(64 * 64, 2),
                     w = fill(64 * 32, 3), c(64), ref(64);
  pto::executable exe = [&] {
    pto::program p = pypto_example();
    p.eval({a, b, w}, {ref});
    return pto::compile(p);
  }(); // the pto::program is gone; its C object lives on in exe
  pto::runtime rt;
  rt.run(exe, {a, b, w}, {c});
  expect_close(c, ref, 1e-5, "outliving");
  cr_expect_eq(exe.inputs().size(), 3u);
  std::FILE *f = std::tmpfile();
  cr_assert_not_null(f);
  exe.dump(PTO_STAGE_TENSOR, PTO_DUMP_JSON, f); // reads the program's graph
  cr_expect_gt(std::ftell(f), 0);
  std::fclose(f);
}

// ---- scopes -----------------------------------------------------------------

// The labels of exe's tasks, in task order.
static std::vector<std::string> labels(const pto::executable &exe) {
  std::vector<std::string> v;
  for (uint32_t t = 0; t < exe.num_tasks(); t++)
    v.push_back(exe.task_label(t));
  return v;
}

Test(cpp, scopes_nest_and_pop_at_scope_exit) {
  pto::program p("scopes");
  pto::tensor x = p.input("x", PTO_F32, {8, 8});
  const pto_tile_shape outer = p.current_tile();
  {
    auto a = p.label("a");
    auto t = p.vec_tile(4, 8);
    cr_expect_eq(p.current_tile().vec_rows, 4u);
    {
      auto b = p.label("b");
      auto c = p.cube_tile(16, 16, 16);
      cr_expect_eq(p.current_tile().vec_rows, 4u, "a copy of the outer one");
      cr_expect_eq(p.current_tile().cube_m, 16u);
      p.output(p.rowsum(x), "inner");
    }
    cr_expect_eq(p.current_tile().cube_m, outer.cube_m);
    p.output(p.rowmax(x), "middle");
  }
  cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows);
  p.output(p.rowmin(x), "outside");
  pto::config cfg;
  cfg.set_knob(PTO_KNOB_NBUFFER, 1);
  cfg.set_knob(PTO_KNOB_FUSE, 0);
  pto::executable exe = pto::compile(p, cfg);
  std::vector<std::string> l = labels(exe);
  int ab = 0, a = 0, none = 0;
  for (const std::string &s : l) {
    ab += s == "a.b";
    a += s == "a";
    none += s.empty();
  }
  cr_expect_eq(ab, 2, "rowsum in 4-row tiles under a.b");
  cr_expect_eq(a, 2, "rowmax in 4-row tiles under a");
  cr_expect_eq(none, 1, "rowmin unlabelled, one whole tile");
  cr_expect_eq(ab + a + none, static_cast<int>(l.size()));
}

Test(cpp, scopes_pop_when_an_exception_unwinds) {
  pto::program p("unwind");
  pto::tensor x = p.input("x", PTO_F32, {8, 8});
  const pto_tile_shape outer = p.current_tile();
  try {
    auto l = p.label("doomed");
    auto t = p.vec_tile(2, 2);
    (void)p.tile(); // a discarded guard pops at once
    throw std::runtime_error("the application gives up");
  } catch (const std::runtime_error &) {
  }
  cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows);
  cr_expect_eq(p.current_tile().vec_cols, outer.vec_cols);
  // a library error inside scopes unwinds them too (the error sticks, the
  // scopes do not)
  pto::tensor y = p.input("y", PTO_F32, {3, 5});
  pto::error e = thrown([&] {
    auto l = p.label("mm");
    auto t = p.tile(pto_tile_shape{1, 1, 1, 1, 1});
    p.matmul(x, y);
  });
  cr_expect(has(e.detail(), "'mm'"), "%s", e.what());
  cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows);
  // the labels are gone: a fresh op in this program is unlabelled
  pto::program q("after");
  pto::tensor z = q.input("z", PTO_F32, {8, 8});
  try {
    auto l = q.label("doomed");
    throw std::runtime_error("x");
  } catch (const std::runtime_error &) {
  }
  q.output(q.rowsum(z), "s");
  pto::executable exe = pto::compile(q);
  for (const std::string &s : labels(exe))
    cr_expect(s.empty(), "label '%s' leaked out of its scope", s.c_str());
}

Test(cpp, scope_close_pops_early_and_moves_transfer_the_pop) {
  pto::program p("close");
  const pto_tile_shape outer = p.current_tile();
  auto t = p.vec_tile(2, 2);
  t.close();
  cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows);
  t.close(); // a second close does nothing
  cr_expect_eq(p.status(), PTO_OK, "%s", p.error_message().c_str());
  {
    auto u = p.vec_tile(4, 4);
    pto::scope v(std::move(u));
    cr_expect_eq(p.current_tile().vec_rows, 4u);
  }
  cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows);
  cr_expect_eq(p.status(), PTO_OK, "one pop, not two: %s",
               p.error_message().c_str());
  // a guard keeps the program's C object alive past the pto::program
  pto::scope keep = [] {
    pto::program tmp("tmp");
    return tmp.label("l");
  }();
  keep.close();
}
