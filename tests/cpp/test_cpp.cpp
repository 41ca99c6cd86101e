// cpp: the header-only C++ wrapper (pto/pto.hpp). Results against the
// reference evaluator, errors thrown with the library's own message, the
// buffer checks only the wrapper can make, move semantics and lifetimes,
// scope guards that pop on every way out of a scope, and runs: a dynamic
// program compiled once and run at many sizes, runs of one executable on
// two threads at once, bindings refused with the library's message.
#include "pto/pto.hpp"

#include <criterion/criterion.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <unistd.h>

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
static_assert(!std::is_copy_constructible_v<pto::run>);
static_assert(!std::is_copy_assignable_v<pto::run>);
static_assert(std::is_nothrow_move_constructible_v<pto::run>);
static_assert(std::is_nothrow_move_assignable_v<pto::run>);
static_assert(std::is_nothrow_destructible_v<pto::run>);
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
    if (!(got[i] == want[i] || /* infinities (a mask's -inf) */
          std::fabs(got[i] - want[i]) <= rtol * (1.0 + std::fabs(want[i])))) {
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
  }(); // the pto::program is gone; exe owns a copy of what it reads
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

// ---- dynamic dims and runs --------------------------------------------------

static constexpr float SENTINEL = -12345.0f;

// y = rowsum(relu(x w + b)) and z = softmax(x) over a dynamic number of
// rows (at most 96), under tiles small enough that the extents cut them.
struct dyn_prog {
  pto::program p{"dyn"};
  pto::dynamic_dim rows;
  dyn_prog() {
    rows = p.dim("rows", 96);
    pto::tensor x = p.input("x", PTO_F32, {rows, 40});
    pto::tensor w = p.input("w", PTO_F32, {40, 24});
    pto::tensor b = p.input("b", PTO_F32, {1, 24});
    auto s = p.scope("mlp", pto_tile_shape{16, 16, 16, 16, 16});
    p.output(p.rowsum(p.relu(p.matmul(x, w) + b)), "y");
    p.output(p.softmax(x), "z");
  }
};

struct dyn_bufs {
  std::vector<float> x = fill(96 * 40, 21), w = fill(40 * 24, 22),
                     b = fill(24, 23);
  std::vector<float> y = std::vector<float>(96), z = std::vector<float>(96 * 40);
  std::vector<float> ry = std::vector<float>(96),
                     rz = std::vector<float>(96 * 40);
  void clear() {
    std::fill(y.begin(), y.end(), SENTINEL);
    std::fill(z.begin(), z.end(), SENTINEL);
    std::fill(ry.begin(), ry.end(), SENTINEL);
    std::fill(rz.begin(), rz.end(), SENTINEL);
  }
  // 0 when the run equals the evaluator inside the extent and left every
  // element past it alone (as the evaluator does)
  int compare(int64_t n) const {
    int bad = 0;
    for (std::size_t i = 0; i < y.size(); i++) {
      bool inside = static_cast<int64_t>(i) < n;
      bad += inside ? !(std::fabs(y[i] - ry[i]) <= 1e-5 * (1 + std::fabs(ry[i])))
                    : y[i] != SENTINEL || ry[i] != SENTINEL;
    }
    for (std::size_t i = 0; i < z.size(); i++) {
      bool inside = static_cast<int64_t>(i / 40) < n;
      bad += inside ? !(std::fabs(z[i] - rz[i]) <= 1e-6)
                    : z[i] != SENTINEL || rz[i] != SENTINEL;
    }
    return bad;
  }
};

// The task events ("ph":"X") of a trace file.
static int trace_tasks(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  cr_assert_not_null(f, "%s", path.c_str());
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
    text.append(buf, n);
  std::fclose(f);
  int events = 0;
  for (std::size_t at = 0;
       (at = text.find("{\"ph\":\"X\"", at)) != std::string::npos; at++)
    events++;
  return events;
}

Test(cpp, a_dynamic_program_compiles_once_and_runs_at_every_size) {
  dyn_prog d;
  pto::program &p = d.p;
  cr_expect_eq(p.num_dims(), 1);
  cr_expect_eq(p.find_dim("rows"), 0);
  cr_expect_eq(p.find_dim("cols"), -1);
  cr_expect_eq(d.rows.code(), p.dim_at(0).code(), "dim_at gives the code");
  cr_expect_lt(d.rows.code(), 0);
  EXPECT_STR(p.dim_at(0).name(), "rows");
  cr_expect_eq(p.dim_at(0).max(), 96);
  pto::tensor x = p.input_at(0);
  EXPECT_STR(x.describe(), "'x' f32[rows<=96,40]");
  cr_expect_eq(x.dim(0), 96, "an axis's extent is its maximum");
  cr_expect_eq(x.dim_dynamic(0), 0);
  cr_expect_eq(x.dim_dynamic(1), -1);
  cr_expect_eq(x.dim_code(0), d.rows.code());
  cr_expect(x.dynamic());
  cr_expect(!p.input_at(1).dynamic());
  cr_expect(x.shape_codes() == (std::vector<int64_t>{d.rows.code(), 40}));

  pto::executable exe = pto::compile(p);
  cr_expect_eq(exe.num_dims(), 1);
  EXPECT_STR(exe.dim_name(0), "rows");
  cr_expect_eq(exe.dim_max(0), 96);
  cr_expect_eq(exe.dim_max(1), -1);
  cr_expect_eq(exe.dims().size(), 1u);
  const pto::tensor_info &xi = exe.inputs().at(0);
  cr_expect(xi.dynamic());
  cr_expect(xi.dim_names == (std::vector<std::string>{"rows", ""}));
  cr_expect_eq(xi.numel, 96 * 40, "laid out for the maximum");

  dyn_bufs B;
  pto_runtime_params prm = pto::runtime_params();
  prm.trace = 1;
  pto::runtime rt(prm);
  pto::run r(exe);
  cr_expect_eq(r.dim("rows"), -1, "unbound");
  const std::string trace = "/tmp/pto_cpp_trace_" +
                            std::to_string(static_cast<long>(::getpid())) +
                            ".json";
  std::vector<int> ran; // tasks traced at each size
  for (int64_t n : {1, 16, 17, 50, 95, 96}) {
    r.bind("rows", n);
    if (n % 2) // the job sized apart, or by the execution
      r.prepare();
    cr_expect_eq(r.dim("rows"), n);
    cr_expect(r.extents() == std::vector<int64_t>{n});
    B.clear();
    p.eval_dims(r.extents(), {B.x, B.w, B.b}, {B.ry, B.rz});
    r.exec(rt, {B.x, B.w, B.b}, {B.y, B.z});
    cr_expect_eq(B.compare(n), 0, "rows %ld on the runtime", (long)n);
    r.write_trace(trace);
    ran.push_back(trace_tasks(trace));
    B.clear();
    p.eval_dims({n}, {B.x, B.w, B.b}, {B.ry, B.rz});
    r.exec_serial({B.x, B.w, B.b}, {B.y, B.z});
    cr_expect_eq(B.compare(n), 0, "rows %ld serially", (long)n);
  }
  std::remove(trace.c_str());
  // the trace holds the tasks that ran: one more 16-row tile's from 17 rows
  // on, every task (and only then) at the maximum
  const int all = static_cast<int>(exe.num_tasks());
  cr_expect(ran[0] == ran[1] && ran[1] < ran[2] && ran[2] < ran[3] &&
                ran[3] < ran[4] && ran[4] == all && ran[5] == all,
            "tasks at 1, 16, 17, 50, 95, 96 rows: %d %d %d %d %d %d of %d",
            ran[0], ran[1], ran[2], ran[3], ran[4], ran[5], all);
  std::FILE *f = std::tmpfile();
  cr_assert_not_null(f);
  r.trace_summary(f);
  cr_expect_gt(std::ftell(f), 0);
  std::fclose(f);
  // 0 rows: nothing runs, nothing is written
  B.clear();
  r.bind_all({0}).exec(rt, {B.x, B.w, B.b}, {B.y, B.z});
  p.eval_dims({0}, {B.x, B.w, B.b}, {B.ry, B.rz});
  cr_expect_eq(B.compare(0), 0, "rows 0");
  // the executable-level calls run at the maxima
  B.clear();
  rt.run(exe, {B.x, B.w, B.b}, {B.y, B.z});
  p.eval({B.x, B.w, B.b}, {B.ry, B.rz});
  cr_expect_eq(B.compare(96), 0, "runtime::run at the maximum");
  // a shape of codes keeps the axis dynamic
  pto::program q("codes");
  pto::dynamic_dim s = q.dim("s", 8);
  pto::tensor in = q.input("in", PTO_F32, {s, 4});
  pto::tensor one = q.full(PTO_F32, in.shape_codes(), 1.0);
  cr_expect_eq(one.dim_dynamic(0), 0);
  cr_expect_eq(q.iota(PTO_I32, {4, s}).dim_dynamic(1), 0);
}

Test(cpp, two_threads_run_one_executable_at_two_sizes_at_once) {
  dyn_prog d;
  pto::executable exe = pto::compile(d.p);
  const int64_t sizes[2] = {7, 90};
  dyn_bufs refs[2];
  for (int k = 0; k < 2; k++) {
    refs[k].clear();
    d.p.eval_dims({sizes[k]}, {refs[k].x, refs[k].w, refs[k].b},
                  {refs[k].ry, refs[k].rz});
  }
  pto::runtime rt;
  std::atomic<int> failures[2] = {{0}, {0}};
  std::string errors[2];
  auto body = [&](int k) {
    try {
      dyn_bufs B;
      pto::run r(exe); // a run per thread: its binding, workspace, trace
      r.bind("rows", sizes[k]);
      for (int i = 0; i < 25; i++) {
        std::fill(B.y.begin(), B.y.end(), SENTINEL);
        std::fill(B.z.begin(), B.z.end(), SENTINEL);
        if (i % 5 == 4)
          r.exec_serial({B.x, B.w, B.b}, {B.y, B.z});
        else
          r.exec(rt, {B.x, B.w, B.b}, {B.y, B.z});
        B.ry = refs[k].ry;
        B.rz = refs[k].rz;
        failures[k] += B.compare(sizes[k]) != 0;
      }
    } catch (const pto::error &e) {
      errors[k] = e.what();
      failures[k]++;
    }
  };
  std::thread t0(body, 0), t1(body, 1);
  t0.join();
  t1.join();
  for (int k = 0; k < 2; k++)
    cr_expect_eq(failures[k].load(), 0, "thread %d (rows %ld): %s", k,
                 (long)sizes[k], errors[k].c_str());
}

Test(cpp, bad_bindings_throw_the_library_message) {
  dyn_prog d;
  pto::executable exe = pto::compile(d.p);
  pto::runtime rt;
  pto::run r(exe);
  dyn_bufs B;
  // nothing bound yet
  pto::error e = thrown([&] { r.exec(rt, {B.x, B.w, B.b}, {B.y, B.z}); });
  cr_expect_eq(e.status(), PTO_EINVAL, "%s", e.what());
  EXPECT_STR(e.call(), "pto::run::exec");
  EXPECT_STR(e.detail(), pto_run_error(r.get()));
  cr_expect(has(e.detail(), "dim 'rows' (maximum 96) is not bound"), "%s",
            e.what());
  // a dim the executable does not have
  e = thrown([&] { r.bind("rowz", 3); });
  cr_expect_eq(e.status(), PTO_ENOTFOUND, "%s", e.what());
  EXPECT_STR(e.call(), "pto::run::bind");
  EXPECT_STR(e.detail(), pto_run_error(r.get()));
  EXPECT_STR(e.detail(), r.error_message());
  cr_expect(has(e.detail(), "has no dim 'rowz'"), "%s", e.what());
  // out of range, either way
  e = thrown([&] { r.bind("rows", 97); });
  cr_expect_eq(e.status(), PTO_ERANGE, "%s", e.what());
  EXPECT_STR(e.detail(), pto_run_error(r.get()));
  cr_expect(has(e.detail(), "dim 'rows' = 97 is outside [0, 96] (its maximum)"),
            "%s", e.what());
  e = thrown([&] { r.bind("rows", -1); });
  cr_expect_eq(e.status(), PTO_ERANGE, "%s", e.what());
  cr_expect_eq(r.dim("rows"), -1, "a refused binding binds nothing");
  e = thrown([&] { r.bind_index(1, 4); });
  cr_expect_eq(e.status(), PTO_ENOTFOUND, "%s", e.what());
  EXPECT_STR(e.call(), "pto::run::bind_index");
  e = thrown([&] { r.bind_all({1, 2}); });
  cr_expect_eq(e.status(), PTO_EINVAL);
  cr_expect(has(e.detail(), "1 dims to bind (rows), 2 given"), "%s", e.what());
  // buffers sized for the extent instead of the maximum
  r.bind("rows", 10);
  std::vector<float> x10(10 * 40);
  e = thrown([&] { r.exec(rt, {x10, B.w, B.b}, {B.y, B.z}); });
  cr_expect_eq(e.status(), PTO_EINVAL);
  cr_expect(has(e.detail(), "input 0 'x' f32[rows<=96,40] needs 3840 elements"),
            "%s", e.what());
  cr_expect(has(e.detail(), "laid out for the maxima"), "%s", e.what());
  cr_expect(has(e.detail(), "given 400"), "%s", e.what());
  e = thrown([&] { r.exec_serial({B.x, B.w, B.b}, {B.y}); });
  EXPECT_STR(e.call(), "pto::run::exec_serial");
  cr_expect(has(e.detail(), "2 output buffers expected (y, z), 1 given"), "%s",
            e.what());
  // the evaluator: one extent per dim, each in range
  e = thrown([&] { d.p.eval_dims({}, {B.x, B.w, B.b}, {B.ry, B.rz}); });
  cr_expect_eq(e.status(), PTO_EINVAL);
  cr_expect(has(e.detail(), "1 extents expected (rows), 0 given"), "%s",
            e.what());
  e = thrown([&] { d.p.eval_dims({97}, {B.x, B.w, B.b}, {B.ry, B.rz}); });
  cr_expect_eq(e.status(), PTO_ERANGE, "%s", e.what());
  EXPECT_STR(e.detail(), d.p.error_message());
  cr_expect(has(e.detail(), "'rows'"), "%s", e.what());
  // none of it stuck: a good binding runs
  B.clear();
  r.bind("rows", 10).exec(rt, {B.x, B.w, B.b}, {B.y, B.z});
  d.p.eval_dims({10}, {B.x, B.w, B.b}, {B.ry, B.rz});
  cr_expect_eq(B.compare(10), 0);
  EXPECT_STR(r.error_message(), "");
  // a moved-from run throws; the one it moved to keeps the binding
  pto::run r2(std::move(r));
  cr_expect_null(r.get());
  e = thrown([&] { r.bind("rows", 1); });
  cr_expect_eq(e.status(), PTO_ESTATE);
  cr_expect(has(e.detail(), "moved from"), "%s", e.what());
  cr_expect_eq(r2.dim("rows"), 10);
  pto::run r3(exe);
  r3 = std::move(r2); // frees r3's own run first
  cr_expect_eq(r3.dim("rows"), 10);
  // a run may outlive its executable
  pto::run keep = [&] {
    pto::executable tmp = pto::compile(d.p);
    return pto::run(tmp);
  }();
  B.clear();
  keep.bind("rows", 33).exec(rt, {B.x, B.w, B.b}, {B.y, B.z});
  d.p.eval_dims({33}, {B.x, B.w, B.b}, {B.ry, B.rz});
  cr_expect_eq(B.compare(33), 0, "after its executable is gone");
  cr_expect_eq(keep.inputs().size(), 3u);
}

Test(cpp, dims_an_op_matches_are_checked_when_bound) {
  pto::program p("two");
  pto::dynamic_dim n = p.dim("n", 8), m = p.dim("m", 8);
  pto::tensor a = p.input("a", PTO_F32, {n, 4});
  pto::tensor b = p.input("b", PTO_F32, {m, 4});
  {
    auto l = p.label("sum");
    p.output(a + b, "c");
  }
  pto::executable exe = pto::compile(p);
  pto::runtime rt;
  pto::run r(exe);
  std::vector<float> av = fill(32, 1), bv = fill(32, 2), c(32, SENTINEL),
                     ref(32, SENTINEL);
  r.bind("n", 3).bind("m", 4);
  pto::error e = thrown([&] { r.exec(rt, {av, bv}, {c}); });
  cr_expect_eq(e.status(), PTO_ESHAPE, "%s", e.what());
  EXPECT_STR(e.detail(), pto_run_error(r.get()));
  cr_expect(has(e.detail(), "add 'sum'"), "%s", e.what());
  cr_expect(has(e.detail(), "dim 'n' = 3 must equal dim 'm' = 4"), "%s",
            e.what());
  cr_expect_eq(c[0], SENTINEL, "nothing ran");
  e = thrown([&] { p.eval_dims({3, 4}, {av, bv}, {ref}); });
  cr_expect_eq(e.status(), PTO_ESHAPE, "%s", e.what());
  cr_expect(has(e.detail(), "must equal"), "%s", e.what());
  r.bind("m", 3).exec(rt, {av, bv}, {c});
  p.eval_dims({3, 3}, {av, bv}, {ref});
  cr_expect(c == ref, "3 rows of a + b, the rest untouched");
  cr_expect_eq(c[12], SENTINEL);

  // what an op cannot follow at a run-time extent is refused when built
  pto::program q("refused");
  pto::dynamic_dim s = q.dim("s", 16);
  pto::tensor x = q.input("x", PTO_F32, {4, s});
  e = thrown([&] { q.topk(x, 2); });
  cr_expect_eq(e.status(), PTO_ENOTSUP, "%s", e.what());
  EXPECT_STR(e.detail(), q.error_message());
  cr_expect(has(e.detail(), "is dynamic dim 's'"), "%s", e.what());
  // and bad dims when declared
  pto::program r1("dims1");
  e = thrown([&] { r1.dim("", 4); });
  cr_expect_eq(e.status(), PTO_EINVAL, "%s", e.what());
  EXPECT_STR(e.detail(), r1.error_message());
  pto::program r2("dims2");
  e = thrown([&] { r2.dim("s", 0); });
  cr_expect_lt(e.status(), 0);
  EXPECT_STR(e.detail(), r2.error_message());
  pto::program r3("dims3");
  r3.dim("s", 4);
  e = thrown([&] { r3.dim("s", 4); });
  cr_expect(has(e.detail(), "declared twice"), "%s", e.what());
  e = thrown([&] { r3.dim_at(1); });
  cr_expect_eq(e.status(), PTO_ERANGE);
}

// ---- the activations, norms, masks and data movement -------------------------

Test(cpp, new_ops_run_as_eval_computes) {
  pto::program p("nn");
  pto::tensor x = p.input("x", PTO_F32, {16, 40});
  pto::tensor g = p.input("g", PTO_F32, {40});
  pto::tensor be = p.input("be", PTO_F32, {1, 40});
  pto::tensor a = p.input("a", PTO_F32, {12, 20});
  pto::tensor bm = p.input("bm", PTO_F32, {20, 12});
  pto::tensor q = p.input("q", PTO_F32, {6, 20});
  const pto_tile_shape outer = p.current_tile();
  {
    auto s = p.scope("act", pto_tile_shape{8, 16, 0, 0, 0});
    cr_expect_eq(p.current_tile().vec_rows, 8u);
    p.output(p.sigmoid(x), "sig");
    p.output(p.silu(x), "silu");
    p.output(p.gelu(x), "gelu");
  }
  cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows, "popped");
  {
    auto s = p.scope("stats"); // the tile in force, copied
    cr_expect_eq(p.current_tile().vec_rows, outer.vec_rows);
    p.output(p.mean(x), "mean");
    p.output(p.var(x), "var");
    p.output(p.rms_norm(x, g, 1e-6), "rms");
    p.output(p.rms_norm(x, 1e-6), "rms1");
    p.output(p.layer_norm(x, g, be, 1e-5), "ln");
    p.output(p.layer_norm(x, 1e-5), "ln1");
  }
  p.output(p.matmul_masked(a, bm, 0, -2), "masked");
  p.output(p.matmul(q, a, pto::matmul_trans_b | pto::matmul_causal), "causal");
  p.output(p.iota_axis(PTO_I32, {4, 6}, 0, 3), "iota_r");
  p.output(p.iota_axis(PTO_F32, {4, 6}, -1, -2), "iota_c");
  p.output(p.concat({p.slice(x, {0, 0}, {16, 3}), p.slice(x, {0, 10}, {16, 17}),
                     p.rowsum(x), p.full(PTO_F32, {16, 2}, 7),
                     p.slice(x, {0, 39}, {16, 40})},
                    1),
           "cat");
  pto::tensor y = p.full(PTO_F32, {8, 8}, 0);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      y = p.assemble(
          y, p.slice(x, {4 * i, 4 * j}, {4 * i + 4, 4 * j + 4}) * (2 * i + j + 1),
          {4 * i, 4 * j});
  p.output(y, "asm");
  cr_assert_eq(p.status(), PTO_OK, "%s", p.error_message().c_str());

  std::vector<float> xv = fill(16 * 40, 31), gv = fill(40, 32),
                     bev = fill(40, 33), av = fill(12 * 20, 34),
                     bmv = fill(20 * 12, 35), qv = fill(6 * 20, 36);
  const std::size_t nf[] = {640, 640, 640, 16, 16, 640, 640, 640, 640,
                            144, 72,  0,   24,  16 * 14, 64};
  std::vector<std::vector<float>> run(15), ref(15);
  std::vector<int32_t> iota_run(24), iota_ref(24);
  for (int k = 0; k < 15; k++) {
    run[k].assign(nf[k], SENTINEL);
    ref[k].assign(nf[k], SENTINEL);
  }
  auto outs = [&](std::vector<std::vector<float>> &o,
                  std::vector<int32_t> &io) {
    std::vector<pto::buffer> v;
    for (int k = 0; k < 15; k++)
      if (k == 11)
        v.emplace_back(io);
      else
        v.emplace_back(o[k]);
    return v;
  };
  std::vector<pto::buffer> run_out = outs(run, iota_run),
                           ref_out = outs(ref, iota_ref);
  p.eval({xv, gv, bev, av, bmv, qv}, ref_out);
  pto::executable exe = pto::compile(p);
  pto::runtime rt;
  rt.run(exe, {xv, gv, bev, av, bmv, qv}, run_out);
  const char *names[] = {"sig", "silu",   "gelu",   "mean",   "var",
                         "rms", "rms1",   "ln",     "ln1",    "masked",
                         "causal", "iota_r", "iota_c", "cat", "asm"};
  for (int k = 0; k < 15; k++)
    if (k != 11)
      expect_close(run[k], ref[k], 1e-5, names[k]);
  cr_expect(iota_run == iota_ref);
  cr_expect(run[14] == ref[14], "assemble is exact");

  // against the formulas, by hand
  const double x0 = xv[0];
  cr_expect(std::fabs(ref[0][0] - 1 / (1 + std::exp(-x0))) <= 1e-6, "sigmoid");
  cr_expect(std::fabs(ref[1][0] - x0 / (1 + std::exp(-x0))) <= 1e-6, "silu");
  const double v = std::sqrt(2 / M_PI) * (x0 + 0.044715 * x0 * x0 * x0);
  cr_expect(std::fabs(ref[2][0] - 0.5 * x0 * (1 + std::tanh(v))) <= 1e-6,
            "gelu (tanh form)");
  double sum = 0, sq = 0;
  for (int c = 0; c < 40; c++)
    sum += xv[c];
  const double mean = sum / 40;
  for (int c = 0; c < 40; c++)
    sq += (xv[c] - mean) * (xv[c] - mean);
  cr_expect(std::fabs(ref[3][0] - mean) <= 1e-6, "mean");
  cr_expect(std::fabs(ref[4][0] - sq / 40) <= 1e-6, "population variance");
  const double ln0 = (xv[0] - mean) / std::sqrt(sq / 40 + 1e-5) * gv[0] + bev[0];
  cr_expect(std::fabs(ref[7][0] - ln0) <= 1e-5, "layer norm: %g vs %g",
            ref[7][0], ln0);
  const float ninf = -std::numeric_limits<float>::infinity();
  cr_expect_eq(ref[9][0 * 12 + 0], ninf, "masked: j > i - 2");
  cr_expect_eq(ref[9][2 * 12 + 1], ninf);
  double dot = 0;
  for (int k = 0; k < 20; k++)
    dot += static_cast<double>(av[2 * 20 + k]) * bmv[k * 12 + 0];
  cr_expect(std::fabs(ref[9][2 * 12 + 0] - dot) <= 1e-5, "masked: a value");
  cr_expect_eq(ref[10][0 * 12 + 7], ninf, "causal: key 7 > 12 - 6 + 0");
  cr_expect(std::isfinite(ref[10][0 * 12 + 6]));
  cr_expect(std::isfinite(ref[10][5 * 12 + 11]), "the last query sees all");
  cr_expect_eq(iota_ref[2 * 6 + 5], 5, "iota along the rows: 3 + r");
  cr_expect_eq(ref[12][3 * 6 + 4], 2.0f, "iota along the cols: -2 + c");
  cr_expect_eq(ref[13][1 * 14 + 3], xv[1 * 40 + 10], "concat's second part");
  cr_expect_eq(ref[13][1 * 14 + 11], 7.0f, "concat's fourth part");
  cr_expect_eq(ref[13][1 * 14 + 13], xv[1 * 40 + 39], "concat's last part");
  cr_expect_eq(ref[14][5 * 8 + 6], xv[5 * 40 + 6] * 4, "block (1, 1) times 4");
  // the scopes' labels follow their tasks
  int act = 0, stats = 0;
  for (const std::string &l : labels(exe)) {
    act += l == "act";
    stats += l == "stats";
  }
  cr_expect_gt(act, 0);
  cr_expect_gt(stats, 0);
}

Test(cpp, scopes_nest_and_a_wrong_pop_is_refused) {
  pto::program p("nest");
  pto::tensor x = p.input("x", PTO_F32, {8, 8});
  auto outer = p.scope("outer");
  auto inner = p.label("inner");
  pto::error e = thrown([&] { outer.close(); });
  cr_expect_eq(e.status(), PTO_ESTATE, "%s", e.what());
  EXPECT_STR(e.call(), "pto::program::scope");
  EXPECT_STR(e.detail(), p.error_message());
  (void)x;
}

Test(cpp, matmul_tile_is_the_compiler_choice) {
  pto_machine m = pto::machine_host();
  pto_tile_shape t = pto::matmul_tile(m, 1, 2048, 256, 256, 2);
  pto_tile_shape c{};
  cr_assert_eq(pto_matmul_tile(&m, 1, 2048, 256, 256, 2, &c), PTO_OK);
  cr_expect(t.cube_m == c.cube_m && t.cube_n == c.cube_n &&
            t.cube_k == c.cube_k);
  cr_expect_gt(t.cube_m, 0u);
  pto::error e = thrown([&] { pto::matmul_tile(m, 1, 0, 256, 256, 2); });
  cr_expect_eq(e.status(), PTO_EINVAL);
  cr_expect(has(e.detail(), "0 x 256 x 256"), "%s", e.what());
}
