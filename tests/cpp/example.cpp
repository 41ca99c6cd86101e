// tests/cpp/example.cpp: PTO from C++ through the header-only wrapper
// (pto/pto.hpp). It builds two operators, compiles them, runs them on the
// MPMD runtime and checks every result against the reference evaluator:
//
//   - PyPTO's worked example, C = rowsum(matmul(A*2 + B, W)), with A and B
//     64x64, W 64x32, a 32x32 vector tile and the matmul untiled;
//   - a plain matmul [rows,256] x [256,256] with no tile shape set and a
//     dynamic number of rows (at most 2048): compiled once, run at three
//     sizes on one pto::run.
//
// It prints a few lines that do not depend on the machine and returns 1 on
// a mismatch or an error (a pto::error says which call failed and why).
#include "pto/pto.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// n values in [-1, 1), the same on every machine.
static std::vector<float> fill(std::size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed;
  for (float &f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
  }
  return v;
}

// Index of the first element of got that differs from want by more than
// rtol (relative to 1 + |want|), or -1.
static long mismatch(const std::vector<float> &got,
                     const std::vector<float> &want, double rtol) {
  for (std::size_t i = 0; i < want.size(); i++)
    if (!(std::fabs(got[i] - want[i]) <= rtol * (1.0 + std::fabs(want[i]))))
      return static_cast<long>(i);
  return -1;
}

static bool report(const char *what, const std::vector<float> &got,
                   const std::vector<float> &want) {
  long bad = mismatch(got, want, 1e-4);
  if (bad >= 0) {
    std::printf("%s: MISMATCH at %ld: run %.6g, eval %.6g\n", what, bad,
                got[static_cast<std::size_t>(bad)],
                want[static_cast<std::size_t>(bad)]);
    return false;
  }
  std::printf("%s: run matches eval (%zu values)\n", what, want.size());
  return true;
}

// C = rowsum(matmul(A*2 + B, W)) under a 32x32 vector tile.
static bool pypto_example(pto::runtime &rt) {
  pto::program p("pypto-example");
  pto::tensor A = p.input("A", PTO_F32, {64, 64});
  pto::tensor B = p.input("B", PTO_F32, {64, 64});
  pto::tensor W = p.input("W", PTO_F32, {64, 32});
  {
    auto tile = p.vec_tile(32, 32); // this block's ops; the matmul untiled
    p.output(p.rowsum(p.matmul(A * 2 + B, W)), "C");
  }

  // One task per tile (nbuffer 1): PyPTO's golden graph, on any machine.
  pto::config cfg;
  cfg.set_knob(PTO_KNOB_NBUFFER, 1);
  pto::executable exe = pto::compile(p, cfg);
  pto_exe_stats st = exe.stats();
  std::printf("C = rowsum(matmul(A*2 + B, W)): %u programs, %u tasks\n",
              st.programs, st.tasks);

  std::vector<float> a = fill(64 * 64, 1), b = fill(64 * 64, 2),
                     w = fill(64 * 32, 3);
  std::vector<float> c(64), ref(64);
  rt.run(exe, {a, b, w}, {c});
  p.eval({a, b, w}, {ref});
  std::printf("C[0..2] = %.4f %.4f %.4f\n", ref[0], ref[1], ref[2]);
  return report("C = rowsum(matmul(A*2 + B, W)) [64,1]", c, ref);
}

// The first program a newcomer writes: a matmul with no tile shape, over
// a number of rows known only when it runs.
static bool plain_matmul(pto::runtime &rt) {
  pto::program p("matmul");
  pto::dynamic_dim rows = p.dim("rows", 2048);
  pto::tensor A = p.input("A", PTO_F32, {rows, 256});
  pto::tensor B = p.input("B", PTO_F32, {256, 256});
  p.output(p.matmul(A, B), "C");
  pto::executable exe = pto::compile(p); // once, for 2048 rows

  // buffers laid out for the maximum; a run writes the rows it binds
  std::vector<float> a = fill(2048 * 256, 4), b = fill(256 * 256, 5);
  std::vector<float> c(2048 * 256), ref(2048 * 256);
  pto::run r(exe);
  bool ok = true;
  for (int64_t n : {2048, 1000, 1}) {
    r.bind("rows", n).exec(rt, {a, b}, {c});
    p.eval_dims(r.extents(), {a, b}, {ref});
    c.resize(static_cast<std::size_t>(n) * 256); // compare the valid rows
    ref.resize(c.size());
    std::string what = "C = A x B [" + std::to_string(n) + ",256]x[256,256]";
    ok = report(what.c_str(), c, ref) && ok;
    c.resize(2048 * 256);
    ref.resize(2048 * 256);
  }
  return ok;
}

// Runs one case; a pto::error is reported and counts as a failure.
static bool run_case(bool (*fn)(pto::runtime &), pto::runtime &rt) {
  try {
    return fn(rt);
  } catch (const pto::error &e) {
    std::printf("error %s: %s\n", e.status_name(), e.what());
    return false;
  }
}

int main() {
  try {
    pto::runtime rt; // one worker per core, shared by cube and vector work
    bool ok = run_case(pypto_example, rt);
    ok = run_case(plain_matmul, rt) && ok;
    return ok ? 0 : 1;
  } catch (const pto::error &e) {
    std::printf("error %s: %s\n", e.status_name(), e.what());
    return 1;
  }
}
