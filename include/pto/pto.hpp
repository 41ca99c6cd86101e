/* pto/pto.hpp: a header-only C++ wrapper over the C API (pto/pto.h).
 *
 * Requires C++17; std::span (C++20) buffers are accepted where the standard
 * library has them. Nothing here is compiled into the library: this header
 * calls the C functions and adds what C cannot do:
 *
 *   - RAII: pto::program, pto::config, pto::executable, pto::run and
 *     pto::runtime own their C handle, are move-only (moves are noexcept, a
 *     moved-from object holds nothing) and free it in a destructor that
 *     never throws.
 *   - Errors: every failing call throws pto::error, carrying the pto_status
 *     and a message "<call>: <the library's message, verbatim>", e.g.
 *     "pto::program::matmul: matmul 'mlp': K of a 'a' f32[4,8] is 8, K of
 *     b 'b' f32[6,4] is 6".
 *   - Buffers: runs and evals take lists of buffer views made from any
 *     contiguous range (std::vector, std::array, std::span, C arrays) or a
 *     pointer and a count, and check each against its tensor's element count
 *     and dtype, naming the input or output, before the C call sees it. A
 *     tensor with a dynamic axis is laid out for the dim's maximum, whatever
 *     a run binds: so are its buffers.
 *   - Scopes: tile shapes, labels and the two together are guards that pop
 *     when they leave scope, also when an exception unwinds it.
 *
 *   pto::program p("example");
 *   pto::dynamic_dim rows = p.dim("rows", 64); // at most 64, bound per run
 *   pto::tensor A = p.input("A", PTO_F32, {rows, 64});
 *   pto::tensor B = p.input("B", PTO_F32, {rows, 64});
 *   pto::tensor W = p.input("W", PTO_F32, {64, 32});
 *   {
 *     auto tile = p.vec_tile(32, 32);       // popped at the closing brace
 *     p.output(p.rowsum(p.matmul(A * 2 + B, W)), "C");
 *   }
 *   pto::executable exe = pto::compile(p);  // once
 *   pto::runtime rt;
 *   pto::run r(exe);                         // one per concurrent execution
 *   std::vector<float> a(64 * 64), b(64 * 64), w(64 * 32), c(64);
 *   r.bind("rows", 40).exec(rt, {a, b, w}, {c}); // rows 0..39 of c
 *   std::vector<float> ref(64);
 *   p.eval_dims(r.extents(), {a, b, w}, {ref}); // the reference evaluator
 *
 * tests/cpp/example.cpp is a complete program; tests/cpp/test_cpp.cpp
 * shows every part of this header at work.
 *
 * Lifetimes. A pto::tensor is a plain handle to a tensor inside its
 * program's arena: it is valid while the program lives, as in C. A scope
 * guard shares ownership of its program's C object. An executable owns a
 * copy of what it reads of its program (pto/executable.h), so it may
 * outlive the pto::program it was compiled from; a pto::run shares
 * ownership of its executable's C object, which is freed after its last
 * run. So any declaration or destruction order is safe.
 *
 * Threads. An executable is immutable: any number of pto::run objects of
 * one executable may execute at once, on any threads and runtimes. One
 * pto::run executes once at a time (a second execution while it runs
 * throws PTO_ESTATE): give each thread its own.
 *
 * Errors stick in a program as in C: after a build call has thrown, the
 * program keeps that first error, so a later failing call reports it again
 * and compile and eval refuse the program. Build a new program instead. */
#ifndef PTO_PTO_HPP
#define PTO_PTO_HPP

#if defined(_MSVC_LANG)
#define PTO_HPP_CPLUSPLUS _MSVC_LANG
#else
#define PTO_HPP_CPLUSPLUS __cplusplus
#endif
#if PTO_HPP_CPLUSPLUS < 201703L
#error "pto/pto.hpp needs C++17 (-std=c++17) or later; C includes pto/pto.h"
#endif

#include "pto/pto.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if PTO_HPP_CPLUSPLUS >= 202002L && __has_include(<span>)
#include <span>
#define PTO_HPP_SPAN 1
#else
#define PTO_HPP_SPAN 0
#endif

namespace pto {

/* ---- errors -------------------------------------------------------------- */

/* What every failing call throws: the status (a negative pto_status) and
 * "<call>: <message>". call() is the C++ call ("pto::compile",
 * "pto::program::matmul"); detail() is the library's message as the C API
 * gives it (its pto_*_error), or this header's own for the checks it adds.
 * Copies never throw (the text lives in std::runtime_error). */
class error : public std::runtime_error {
public:
  error(pto_status status, const std::string &call, const std::string &detail)
      : std::runtime_error(call + ": " + detail), status_(status),
        call_len_(call.size()) {}

  pto_status status() const noexcept {
    return status_;
  }
  /* "PTO_ESHAPE" */
  const char *status_name() const noexcept {
    return pto_status_name(status_);
  }
  std::string call() const {
    return std::string(what(), call_len_);
  }
  const char *detail() const noexcept {
    return what() + call_len_ + 2;
  }

private:
  pto_status status_;
  std::size_t call_len_;
};

namespace detail {

/* Throws for status st < 0 with msg, or the status's own text when the
 * library left none. */
[[noreturn]] inline void fail(int st, const char *call, const char *msg) {
  pto_status s = st < 0 ? static_cast<pto_status>(st) : PTO_EINVAL;
  throw error(s, call,
              msg && msg[0] ? std::string(msg) : std::string(pto_strerror(s)));
}

/* Throws for st < 0 with the message the failed call left on its object,
 * read after the call (so never passed as an argument beside it). */
inline void check(int st, const char *call, const pto_program *p) {
  if (st < 0)
    fail(st, call, pto_program_error(p));
}
inline void check(int st, const char *call, const pto_config *c) {
  if (st < 0)
    fail(st, call, pto_config_error(c));
}
inline void check(int st, const char *call, const pto_executable *e) {
  if (st < 0)
    fail(st, call, pto_executable_error(e));
}
/* rt NULL: why the thread's last pto_runtime_new failed */
inline void check(int st, const char *call, const pto_runtime *rt) {
  if (st < 0)
    fail(st, call, pto_runtime_error(rt));
}
inline void check(int st, const char *call, const pto_run *r) {
  if (st < 0)
    fail(st, call, pto_run_error(r));
}
/* calls with no object: the thread's pto_last_error */
inline void check_last(int st, const char *call) {
  if (st < 0)
    fail(st, call, pto_last_error());
}

} // namespace detail

/* ---- flags ---------------------------------------------------------------- */

/* The C flags as one type: PTO_MATMUL_TRANS_A/B, PTO_MATMUL_CAUSAL and
 * PTO_MATMUL_CAUSAL_END are constants of separate C enums, which C++20
 * deprecates or-ing together (PTO_MATMUL_TRANS_B | PTO_MATMUL_CAUSAL
 * warns); these combine freely: pto::matmul_trans_b | pto::matmul_causal. */
inline constexpr unsigned matmul_trans_a = PTO_MATMUL_TRANS_A;
inline constexpr unsigned matmul_trans_b = PTO_MATMUL_TRANS_B;
inline constexpr unsigned matmul_causal = PTO_MATMUL_CAUSAL;
inline constexpr unsigned matmul_causal_end = PTO_MATMUL_CAUSAL_END;
inline constexpr unsigned gather_strict = PTO_GATHER_STRICT;

/* ---- list_ref: a read-only view of a contiguous list --------------------- */

/* What calls taking a list accept: a braced list ({a, b}), a std::vector,
 * std::array, std::span, or a pointer and a count. It does not own what it
 * views; a braced list lives until the end of the call's full expression. */
template <class T> class list_ref {
public:
  list_ref() noexcept = default;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
/* a view of the list, which outlives the call it is an argument of */
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  list_ref(std::initializer_list<T> l) noexcept
      : data_(l.begin()), size_(l.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  list_ref(const T *data, std::size_t size) noexcept
      : data_(data), size_(size) {}
  template <class R,
            class = std::enable_if_t<
                !std::is_same<std::decay_t<R>, list_ref>::value &&
                std::is_convertible<decltype(std::data(std::declval<R &>())),
                                    const T *>::value>>
  list_ref(R &&r) noexcept : data_(std::data(r)), size_(std::size(r)) {}

  const T *data() const noexcept {
    return data_;
  }
  std::size_t size() const noexcept {
    return size_;
  }
  bool empty() const noexcept {
    return size_ == 0;
  }
  const T *begin() const noexcept {
    return data_;
  }
  const T *end() const noexcept {
    return data_ + size_;
  }
  const T &operator[](std::size_t i) const noexcept {
    return data_[i];
  }
#if PTO_HPP_SPAN
  operator std::span<const T>() const noexcept {
    return {data_, size_};
  }
#endif

private:
  const T *data_ = nullptr;
  std::size_t size_ = 0;
};

/* ---- buffers ------------------------------------------------------------- */

namespace detail {

enum class elem_kind : unsigned char { floating, integer, other };

template <class T> constexpr elem_kind kind_of() {
  return std::is_floating_point<T>::value ? elem_kind::floating
         : std::is_integral<T>::value     ? elem_kind::integer
                                          : elem_kind::other;
}

template <class R>
using elem_of = std::remove_pointer_t<decltype(std::data(std::declval<R &>()))>;

} // namespace detail

/* A view of a run's or eval's input: dense row-major elements of any
 * trivially copyable type. Made from a contiguous range (std::vector<float>,
 * std::span<const float>, std::array, a C array) or a pointer and an element
 * count. The element type is checked against the tensor's dtype: its size
 * must equal the dtype's (or be 1: raw bytes), a floating type cannot feed
 * an i32 tensor nor an integer type an f32 one; the count must be the
 * tensor's. */
class const_buffer {
public:
  template <class T,
            class = std::enable_if_t<std::is_trivially_copyable<T>::value>>
  const_buffer(const T *data, std::size_t count) noexcept
      : data_(data), count_(count), elem_size_(sizeof(T)),
        kind_(detail::kind_of<std::remove_cv_t<T>>()) {}
  template <class R, class T = detail::elem_of<const R>,
            class = std::enable_if_t<
                !std::is_same<std::decay_t<R>, const_buffer>::value &&
                std::is_trivially_copyable<T>::value>,
            class = decltype(std::size(std::declval<const R &>()))>
  const_buffer(const R &r) noexcept
      : const_buffer(std::data(r), std::size(r)) {}

  const void *data() const noexcept {
    return data_;
  }
  std::size_t count() const noexcept {
    return count_;
  }
  std::size_t elem_size() const noexcept {
    return elem_size_;
  }
  std::size_t bytes() const noexcept {
    return count_ * elem_size_;
  }
  detail::elem_kind kind() const noexcept {
    return kind_;
  }

private:
  const void *data_;
  std::size_t count_, elem_size_;
  detail::elem_kind kind_;
};

/* A view of a run's or eval's output, as const_buffer but writable: a
 * std::vector<float>, std::span<float>, a C array, a pointer and a count. */
class buffer {
public:
  template <class T,
            class = std::enable_if_t<std::is_trivially_copyable<T>::value &&
                                     !std::is_const<T>::value>>
  buffer(T *data, std::size_t count) noexcept
      : data_(data), count_(count), elem_size_(sizeof(T)),
        kind_(detail::kind_of<std::remove_volatile_t<T>>()) {}
  template <
      class R, class T = detail::elem_of<R>,
      class = std::enable_if_t<!std::is_same<std::decay_t<R>, buffer>::value &&
                               std::is_trivially_copyable<T>::value &&
                               !std::is_const<T>::value>,
      class = decltype(std::size(std::declval<R &>()))>
  buffer(R &&r) noexcept : buffer(std::data(r), std::size(r)) {}

  void *data() const noexcept {
    return data_;
  }
  std::size_t count() const noexcept {
    return count_;
  }
  std::size_t elem_size() const noexcept {
    return elem_size_;
  }
  std::size_t bytes() const noexcept {
    return count_ * elem_size_;
  }
  detail::elem_kind kind() const noexcept {
    return kind_;
  }

private:
  void *data_;
  std::size_t count_, elem_size_;
  detail::elem_kind kind_;
};

/* ---- shapes -------------------------------------------------------------- */

/* A dynamic dim of a program (pto_dim_dynamic): an extent known only when
 * a run binds it, at most max(). Made by pto::program::dim; it stands for
 * the dim wherever a shape is given ({rows, 64}). */
class dynamic_dim {
public:
  dynamic_dim() noexcept = default;

  /* the negative code that stands for the dim in C shapes */
  int64_t code() const noexcept {
    return code_;
  }
  /* its index among the program's dims (declaration order), -1 when null */
  int index() const noexcept {
    return index_;
  }
  const std::string &name() const noexcept {
    return name_;
  }
  int64_t max() const noexcept {
    return max_;
  }
  explicit operator bool() const noexcept {
    return index_ >= 0;
  }

private:
  friend class program;
  dynamic_dim(int64_t code, int index, std::string name, int64_t max)
      : code_(code), index_(index), name_(std::move(name)), max_(max) {}

  int64_t code_ = 0;
  int index_ = -1;
  std::string name_;
  int64_t max_ = 0;
};

/* One entry of a shape: a size, or a dynamic dim (its code). */
class extent {
public:
  extent(int64_t size) noexcept : v_(size) {}
  extent(const dynamic_dim &d) noexcept : v_(d.code()) {}
  int64_t value() const noexcept {
    return v_;
  }

private:
  int64_t v_;
};

/* 1 to PTO_MAX_DIMS sizes: {64, 64}, {rows, 64} with a dynamic dim, or a
 * contiguous range of integers (sizes or dim codes, as
 * pto::tensor::shape_codes gives them). More than PTO_MAX_DIMS throws
 * PTO_EINVAL. */
class dims {
public:
  dims(std::initializer_list<extent> l) {
    check(l.size());
    for (const extent &e : l)
      if (n_ < PTO_MAX_DIMS) /* always (checked): bounds the loop for GCC */
        v_[n_++] = e.value();
  }
  template <class R, class T = detail::elem_of<const R>,
            class = std::enable_if_t<std::is_integral<T>::value>,
            class = decltype(std::size(std::declval<const R &>()))>
  dims(const R &r) {
    check(std::size(r));
    for (std::size_t i = 0; i < std::size(r) && n_ < PTO_MAX_DIMS; i++)
      v_[n_++] = static_cast<int64_t>(std::data(r)[i]);
  }

  int size() const noexcept {
    return n_;
  }
  const int64_t *data() const noexcept {
    return v_;
  }
  int64_t operator[](int i) const noexcept {
    return v_[i];
  }

private:
  static void check(std::size_t n) {
    if (n > PTO_MAX_DIMS)
      throw error(PTO_EINVAL, "pto::dims",
                  std::to_string(n) + " dims given, at most " +
                      std::to_string(PTO_MAX_DIMS));
  }
  int64_t v_[PTO_MAX_DIMS] = {};
  int n_ = 0;
};

/* A dynamic dim of an executable: what a run binds, 0 to max. */
struct dim_info {
  std::string name;
  int64_t max;
};

/* What a run's buffer must hold for one input or output: the tensor laid
 * out for the maxima of its dynamic axes. */
struct tensor_info {
  std::string name; /* "" for an output declared through the C API */
  pto_dtype dtype;
  std::vector<int64_t> shape; /* a dynamic axis: its dim's maximum */
  int64_t numel;              /* at the maxima */
  /* per axis, its dynamic dim's name, "" when static */
  std::vector<std::string> dim_names;

  bool dynamic() const noexcept {
    for (const std::string &d : dim_names)
      if (!d.empty())
        return true;
    return false;
  }

  std::size_t bytes() const {
    return static_cast<std::size_t>(numel) * pto_dtype_size(dtype);
  }
};

/* ---- tensors ------------------------------------------------------------- */

/* A handle to a tensor of a program (not owning: the program's arena owns
 * it). Default-constructed, it is null, and an op given it fails. */
class tensor {
public:
  tensor() noexcept = default;
  tensor(pto_program *p, pto_tensor *t) noexcept : p_(p), t_(t) {}

  pto_tensor *get() const noexcept {
    return t_;
  }
  pto_program *program_handle() const noexcept {
    return p_;
  }
  explicit operator bool() const noexcept {
    return t_ != nullptr;
  }

  std::string name() const {
    const char *n = pto_tensor_name(t_);
    return n ? n : "";
  }
  /* "'name' f32[64,32]" */
  std::string describe() const {
    char buf[160];
    return pto_tensor_describe(t_, buf, sizeof buf);
  }
  pto_dtype dtype() const noexcept {
    return pto_tensor_dtype(t_);
  }
  int ndim() const noexcept {
    return pto_tensor_ndim(t_);
  }
  int64_t dim(int axis) const noexcept {
    return pto_tensor_dim(t_, axis);
  }
  int64_t numel() const noexcept {
    return pto_tensor_numel(t_);
  }
  /* The extents; a dynamic axis gives its dim's maximum. */
  std::vector<int64_t> shape() const {
    std::vector<int64_t> s(static_cast<std::size_t>(ndim() > 0 ? ndim() : 0));
    for (std::size_t i = 0; i < s.size(); i++)
      s[i] = dim(static_cast<int>(i));
    return s;
  }
  /* The index of axis's dynamic dim in its program, or -1 when static. */
  int dim_dynamic(int axis) const noexcept {
    return pto_tensor_dim_dynamic(t_, axis);
  }
  /* Axis as a shape value: its dim's code when dynamic, else its extent. */
  int64_t dim_code(int axis) const noexcept {
    return pto_tensor_dim_code(t_, axis);
  }
  /* The shape as codes: a shape built from it keeps the axes dynamic
   * (p.full(PTO_F32, x.shape_codes(), 0)). */
  std::vector<int64_t> shape_codes() const {
    std::vector<int64_t> s(static_cast<std::size_t>(ndim() > 0 ? ndim() : 0));
    for (std::size_t i = 0; i < s.size(); i++)
      s[i] = dim_code(static_cast<int>(i));
    return s;
  }
  bool dynamic() const noexcept {
    for (int i = 0; i < ndim(); i++)
      if (dim_dynamic(i) >= 0)
        return true;
    return false;
  }

private:
  pto_program *p_ = nullptr;
  pto_tensor *t_ = nullptr;
};

namespace detail {

/* An op's result: t, or the program's error thrown under call's name. */
inline tensor made(pto_program *p, pto_tensor *t, const char *call) {
  if (!t) {
    if (!p)
      fail(PTO_EINVAL, call, "the operand has no program (a null tensor)");
    fail(pto_program_status(p), call, pto_program_error(p));
  }
  return tensor(p, t);
}

/* The program of a binary op's operands: a's, else b's. */
inline pto_program *prog_of(const tensor &a, const tensor &b) noexcept {
  return a.program_handle() ? a.program_handle() : b.program_handle();
}

inline tensor_info info_of(const pto_program *p, pto_tensor *t,
                           std::string name) {
  tensor h(nullptr, t);
  std::vector<std::string> dn(static_cast<std::size_t>(h.ndim()));
  for (std::size_t d = 0; d < dn.size(); d++) {
    int i = h.dim_dynamic(static_cast<int>(d));
    dn[d] = i >= 0 ? pto_program_dim_name(p, i) : "";
  }
  return tensor_info{std::move(name), h.dtype(), h.shape(), h.numel(),
                     std::move(dn)};
}

inline const char *kind_name(elem_kind k) {
  return k == elem_kind::floating  ? "floating-point"
         : k == elem_kind::integer ? "integer"
                                   : "non-arithmetic";
}

inline std::string describe(const char *what, std::size_t i,
                            const tensor_info &t) {
  std::string s = std::string(what) + " " + std::to_string(i);
  if (!t.name.empty())
    s += " '" + t.name + "'";
  s += std::string(" ") + pto_dtype_name(t.dtype) + "[";
  for (std::size_t d = 0; d < t.shape.size(); d++) {
    if (d)
      s += ',';
    if (d < t.dim_names.size() && !t.dim_names[d].empty())
      s += t.dim_names[d] + "<=";
    s += std::to_string(t.shape[d]);
  }
  return s + "]";
}

/* Checks one buffer against its tensor; "" when it fits, else why not. */
template <class B>
std::string misfit(const char *what, std::size_t i, const tensor_info &t,
                   const B &b) {
  std::size_t dsize = pto_dtype_size(t.dtype);
  std::size_t want = t.bytes();
  bool size_ok = b.elem_size() == dsize || b.elem_size() == 1;
  bool kind_ok = b.elem_size() == 1 ||
                 !((t.dtype == PTO_F32 && b.kind() == elem_kind::integer) ||
                   (t.dtype == PTO_I32 && b.kind() == elem_kind::floating));
  if (size_ok && kind_ok && b.bytes() == want && b.data())
    return "";
  std::string s = describe(what, i, t) + " needs " + std::to_string(t.numel) +
                  " elements of " + std::to_string(dsize) + " bytes (" +
                  std::to_string(want) + " bytes" +
                  (t.dynamic() ? ", laid out for the maxima" : "") +
                  "); given ";
  if (!b.data())
    return s + "a null buffer";
  s += std::to_string(b.count()) + " " + kind_name(b.kind()) + " elements of " +
       std::to_string(b.elem_size()) + " bytes (" + std::to_string(b.bytes()) +
       " bytes)";
  if (!size_ok || !kind_ok)
    s += std::string(": not a buffer of ") + pto_dtype_name(t.dtype);
  return s;
}

inline std::string names_of(const std::vector<tensor_info> &ts) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); i++) {
    if (i)
      s += ", ";
    s += ts[i].name.empty() ? std::string("?") : ts[i].name;
  }
  return s;
}

/* v's elements, or (none of them) a valid array: the C calls refuse NULL. */
template <class P> P *array_of(std::vector<P> &v) noexcept {
  static P none = nullptr;
  return v.empty() ? &none : v.data();
}

/* Checks buffers against tensors and gathers their pointers for C. */
template <class B, class P>
void bind(const char *call, const char *what,
          const std::vector<tensor_info> &ts, list_ref<B> bufs,
          std::vector<P> &ptrs) {
  if (bufs.size() != ts.size())
    throw error(PTO_EINVAL, call,
                std::to_string(ts.size()) + " " + what + " buffers expected (" +
                    names_of(ts) + "), " + std::to_string(bufs.size()) +
                    " given");
  ptrs.clear();
  for (std::size_t i = 0; i < ts.size(); i++) {
    std::string why = misfit(what, i, ts[i], bufs[i]);
    if (!why.empty())
      throw error(PTO_EINVAL, call, why);
    ptrs.push_back(bufs[i].data());
  }
}

/* What a wrapper program shares with its executables and scope guards: the
 * C object (freed when the last owner goes) and the names of the outputs
 * declared through the wrapper (the C API has no getter for them). */
struct program_state {
  pto_program *p;
  std::vector<std::string> output_names;

  explicit program_state(pto_program *prog) : p(prog) {}
  ~program_state() {
    pto_program_free(p);
  }
  program_state(const program_state &) = delete;
  program_state &operator=(const program_state &) = delete;

  std::vector<tensor_info> inputs() const {
    std::vector<tensor_info> v;
    for (int i = 0; i < pto_program_num_inputs(p); i++) {
      pto_tensor *t = pto_program_input(p, i);
      v.push_back(info_of(p, t, pto_tensor_name(t)));
    }
    return v;
  }
  std::vector<tensor_info> outputs() const {
    std::vector<tensor_info> v;
    for (int i = 0; i < pto_program_num_outputs(p); i++) {
      std::size_t j = static_cast<std::size_t>(i);
      v.push_back(info_of(p, pto_program_output(p, i),
                          j < output_names.size() ? output_names[j] : ""));
    }
    return v;
  }
};

} // namespace detail

class config;
class executable;
class program;
class run;
executable compile(program &p, const config *cfg = nullptr);

/* ---- scopes -------------------------------------------------------------- */

/* A pushed tile shape, label or both (program::scope), popped when the
 * guard is destroyed (also
 * during unwinding; a failing pop is ignored there: destructors never
 * throw). Move-only; close() pops early and throws on failure. The C
 * scopes are stacks: destroy guards in reverse order of creation, as
 * block scope does. */
class [[nodiscard]] scope {
public:
  scope(scope &&o) noexcept
      : state_(std::move(o.state_)), pop_(o.pop_), call_(o.call_) {}
  scope &operator=(scope &&o) noexcept {
    if (this != &o) {
      release();
      state_ = std::move(o.state_);
      pop_ = o.pop_;
      call_ = o.call_;
    }
    return *this;
  }
  scope(const scope &) = delete;
  scope &operator=(const scope &) = delete;
  ~scope() {
    release();
  }

  void close() {
    if (!state_)
      return;
    std::shared_ptr<detail::program_state> s = std::move(state_);
    detail::check(pop_(s->p), call_, s->p);
  }

private:
  friend class program;
  using pop_fn = pto_status (*)(pto_program *);
  scope(std::shared_ptr<detail::program_state> s, pop_fn pop,
        const char *call) noexcept
      : state_(std::move(s)), pop_(pop), call_(call) {}
  void release() noexcept {
    if (state_)
      (void)pop_(state_->p);
    state_.reset();
  }

  std::shared_ptr<detail::program_state> state_;
  pop_fn pop_ = nullptr;
  const char *call_ = "";
};

/* ---- program ------------------------------------------------------------- */

/* A tensor program being built (pto/program.h). Every op returns a new
 * tensor or throws the program's error. */
class program {
public:
  /* A new empty program. */
  explicit program(const std::string &name) {
    pto_program *p = pto_program_new(name.c_str());
    if (!p)
      detail::fail(PTO_ENOMEM, "pto::program", "out of memory");
    state_ = std::make_shared<detail::program_state>(p);
  }
  /* Takes ownership of a program built by the C API (pto_gemm_program,
   * pto_indexer_program, ...), also when it throws: PTO_ENOMEM for NULL,
   * the program's error when it has one. */
  explicit program(pto_program *adopt) {
    if (!adopt)
      detail::fail(PTO_ENOMEM, "pto::program", "out of memory");
    state_ = std::make_shared<detail::program_state>(adopt);
    check("pto::program");
  }
  program(program &&) noexcept = default;
  program &operator=(program &&) noexcept = default;
  program(const program &) = delete;
  program &operator=(const program &) = delete;
  ~program() = default;

  /* NULL when moved from. */
  pto_program *get() const noexcept {
    return state_ ? state_->p : nullptr;
  }
  explicit operator bool() const noexcept {
    return get() != nullptr;
  }
  std::string name() const {
    const char *n = pto_program_name(get());
    return n ? n : "";
  }
  pto_status status() const noexcept {
    return pto_program_status(get());
  }
  std::string error_message() const {
    return pto_program_error(get());
  }
  /* Throws the program's sticky error, if it has one. */
  void check(const char *call = "pto::program::check") const {
    detail::check(pto_program_status(raw(call)), call, get());
  }
  /* For ops the C API has and this wrapper does not (pto_indexer,
   * pto_attention, ...): t, or the program's error under call's name. */
  tensor wrap(pto_tensor *t, const char *call) const {
    return detail::made(raw(call), t, call);
  }
  /* Records a build error as an invalid op does (pto_program_fail: it
   * sticks, "<op> '<label>': <msg>"), for operators composed from ops, and
   * throws the program's error. */
  [[noreturn]] void fail(pto_status st, const std::string &op,
                         const std::string &msg) {
    const char *call = "pto::program::fail";
    pto_program_fail(raw(call), st, op.c_str(), "%s", msg.c_str());
    if (st >= 0) /* not an error: the C call refused it, recording nothing */
      detail::fail(PTO_EINVAL, call, pto_last_error());
    detail::fail(pto_program_status(get()), call, pto_program_error(get()));
  }

  int num_ops() const noexcept {
    return pto_program_num_ops(get());
  }
  int num_inputs() const noexcept {
    return pto_program_num_inputs(get());
  }
  int num_outputs() const noexcept {
    return pto_program_num_outputs(get());
  }
  tensor input_at(int i) const {
    return at(pto_program_input(get(), i), i, "input", num_inputs(),
              "pto::program::input_at");
  }
  tensor output_at(int i) const {
    return at(pto_program_output(get(), i), i, "output", num_outputs(),
              "pto::program::output_at");
  }
  /* Index of the input or output with that name, or -1. */
  int find_input(const std::string &n) const noexcept {
    return pto_program_find_input(get(), n.c_str());
  }
  int find_output(const std::string &n) const noexcept {
    return pto_program_find_output(get(), n.c_str());
  }
  /* What eval's and run's buffers must hold, in declaration order. */
  std::vector<tensor_info> inputs() const {
    return state("pto::program::inputs").inputs();
  }
  std::vector<tensor_info> outputs() const {
    return state("pto::program::outputs").outputs();
  }

  /* ---- scopes ---- */

  /* auto s = p.label("mlp");  ops until s goes are labelled "...mlp" */
  pto::scope label(const std::string &l) {
    const char *call = "pto::program::label";
    detail::check(pto_program_push_label(raw(call), l.c_str()), call, get());
    return pto::scope(state_, pto_program_pop_label, call);
  }
  /* A tile scope: a copy of the tile shape in force, or `shape`. */
  pto::scope tile() {
    return push_tile(nullptr, "pto::program::tile");
  }
  pto::scope tile(const pto_tile_shape &shape) {
    return push_tile(&shape, "pto::program::tile");
  }
  /* A tile scope with the vector tile (or the cube tile) changed. */
  pto::scope vec_tile(uint32_t rows, uint32_t cols) {
    const char *call = "pto::program::vec_tile";
    pto::scope s = push_tile(nullptr, call);
    set_vec_tile(rows, cols, call);
    return s;
  }
  pto::scope cube_tile(uint32_t m, uint32_t n, uint32_t k) {
    const char *call = "pto::program::cube_tile";
    pto::scope s = push_tile(nullptr, call);
    set_cube_tile(m, n, k, call);
    return s;
  }
  /* A label and a tile shape in one scope (pto_program_push_scope), popped
   * together:  auto s = p.scope("ffn.up", pto_tile_shape{16, 256, 64, 64, 0});
   * Without a tile, a copy of the one in force. Guards nest as blocks do:
   * a guard of a label or tile opened inside it must close first. */
  pto::scope scope(const std::string &label, const pto_tile_shape &tile) {
    return push_scope(label.c_str(), &tile);
  }
  pto::scope scope(const std::string &label) {
    return push_scope(label.c_str(), nullptr);
  }
  /* Change the innermost tile scope (the program's outermost one when no
   * guard is open). */
  void set_vec_tile(uint32_t rows, uint32_t cols,
                    const char *call = "pto::program::set_vec_tile") {
    detail::check(pto_program_set_vec_tile(raw(call), rows, cols), call, get());
  }
  void set_cube_tile(uint32_t m, uint32_t n, uint32_t k,
                     const char *call = "pto::program::set_cube_tile") {
    detail::check(pto_program_set_cube_tile(raw(call), m, n, k), call, get());
  }
  pto_tile_shape current_tile() const noexcept {
    return pto_program_tile(get());
  }
  /* Recommends a knob for the ops of the innermost tile scope. */
  void set_knob(pto_knob k, int64_t value) {
    const char *call = "pto::program::set_knob";
    detail::check(pto_program_set_knob(raw(call), k, value), call, get());
  }

  /* ---- dynamic dims ---- */

  /* A dim whose extent a run binds (pto_dim_dynamic), at most max: use it
   * in shapes ({rows, 64}). Tensors with it are laid out for max; a run
   * dispatches only the tasks inside the extents it binds. Throws for a
   * name that is empty, taken or longer than 31 characters, a max < 1, or
   * more than PTO_DIMS_MAX dims. */
  dynamic_dim dim(const std::string &name, int64_t max) {
    const char *call = "pto::program::dim";
    int64_t code = pto_dim_dynamic(raw(call), name.c_str(), max);
    if (code == 0)
      detail::fail(pto_program_status(get()), call, pto_program_error(get()));
    int i = pto_program_num_dims(get()) - 1;
    return dynamic_dim(code, i, name, max);
  }
  int num_dims() const noexcept {
    return pto_program_num_dims(get());
  }
  /* Dim i in declaration order (PTO_ERANGE past the last). */
  dynamic_dim dim_at(int i) const {
    const char *call = "pto::program::dim_at";
    int n = pto_program_num_dims(raw(call));
    if (i < 0 || i >= n)
      throw error(PTO_ERANGE, call,
                  "dim " + std::to_string(i) +
                      " is out of range: the program has " + std::to_string(n));
    /* dim i's code: PTO_DIM_CODE_BASE - i, as pto_dim_dynamic returns it */
    return dynamic_dim(PTO_DIM_CODE_BASE - i, i, pto_program_dim_name(get(), i),
                       pto_program_dim_max(get(), i));
  }
  /* The index of the dim named name, or -1. */
  int find_dim(const std::string &name) const noexcept {
    return pto_program_find_dim(get(), name.c_str());
  }

  /* ---- inputs and outputs ---- */

  tensor input(const std::string &name, pto_dtype dt, const dims &shape) {
    const char *call = "pto::program::input";
    return detail::made(
        raw(call),
        pto_input(get(), name.c_str(), dt, shape.size(), shape.data()), call);
  }
  void output(const tensor &t, const std::string &name) {
    const char *call = "pto::program::output";
    detail::check(pto_output(raw(call), t.get(), name.c_str()), call, get());
    std::vector<std::string> &names = state_->output_names;
    names.resize(static_cast<std::size_t>(num_outputs()));
    names.back() = name;
  }

  /* ---- views ---- */

  tensor slice(const tensor &t, const dims &begin, const dims &end) {
    const char *call = "pto::program::slice";
    if (t && (begin.size() != t.ndim() || end.size() != t.ndim())) {
      std::string m = t.describe() + " has " + std::to_string(t.ndim()) +
                      " dims; begin has " + std::to_string(begin.size()) +
                      ", end " + std::to_string(end.size());
      pto_program_fail(raw(call), PTO_ESHAPE, "slice", "%s", m.c_str());
      detail::fail(pto_program_status(get()), call, pto_program_error(get()));
    }
    return op(pto_slice(raw(call), t.get(), begin.data(), end.data()), call);
  }
  tensor reshape(const tensor &t, const dims &shape) {
    const char *call = "pto::program::reshape";
    return op(pto_reshape(raw(call), t.get(), shape.size(), shape.data()),
              call);
  }
  tensor transpose(const tensor &t, int axis0, int axis1) {
    const char *call = "pto::program::transpose";
    return op(pto_transpose(raw(call), t.get(), axis0, axis1), call);
  }

  /* ---- element-wise (broadcasting), tensor-scalar, unary ---- */

#define PTO_HPP_BINARY(fn)                                                     \
  tensor fn(const tensor &a, const tensor &b) {                                \
    return op(pto_##fn(raw("pto::program::" #fn), a.get(), b.get()),           \
              "pto::program::" #fn);                                           \
  }
#define PTO_HPP_SCALAR(fn)                                                     \
  tensor fn(const tensor &a, double s) {                                       \
    return op(pto_##fn(raw("pto::program::" #fn), a.get(), s),                 \
              "pto::program::" #fn);                                           \
  }
#define PTO_HPP_UNARY(fn)                                                      \
  tensor fn(const tensor &a) {                                                 \
    return op(pto_##fn(raw("pto::program::" #fn), a.get()),                    \
              "pto::program::" #fn);                                           \
  }
  PTO_HPP_BINARY(add)
  PTO_HPP_BINARY(sub)
  PTO_HPP_BINARY(mul)
  PTO_HPP_BINARY(div)
  PTO_HPP_BINARY(max)
  PTO_HPP_BINARY(min)
  PTO_HPP_SCALAR(adds)
  PTO_HPP_SCALAR(subs)
  PTO_HPP_SCALAR(muls)
  PTO_HPP_SCALAR(divs)
  PTO_HPP_SCALAR(maxs)
  PTO_HPP_SCALAR(mins)
  PTO_HPP_UNARY(exp)
  PTO_HPP_UNARY(log)
  PTO_HPP_UNARY(sqrt)
  PTO_HPP_UNARY(rsqrt)
  PTO_HPP_UNARY(recip)
  PTO_HPP_UNARY(relu)
  PTO_HPP_UNARY(abs)
  PTO_HPP_UNARY(neg)
  /* ---- reductions (dims kept) ---- */
  PTO_HPP_UNARY(rowsum)
  PTO_HPP_UNARY(rowmax)
  PTO_HPP_UNARY(rowmin)
  PTO_HPP_UNARY(colsum)
  PTO_HPP_UNARY(colmax)
  PTO_HPP_UNARY(softmax)
  /* ---- activations and row statistics (composites, pto/program.h) ---- */
  PTO_HPP_UNARY(sigmoid)
  PTO_HPP_UNARY(silu)
  PTO_HPP_UNARY(gelu) /* the tanh form */
  PTO_HPP_UNARY(mean) /* of each row: [..,M,N] -> [..,M,1] */
  PTO_HPP_UNARY(var)  /* population variance of each row */
#undef PTO_HPP_BINARY
#undef PTO_HPP_SCALAR
#undef PTO_HPP_UNARY

  /* Norms over each row; gamma and beta have N entries along their last
   * axis (a null tensor: none); eps >= 0. */
  tensor rms_norm(const tensor &x, double eps) {
    return rms_norm(x, tensor(), eps);
  }
  tensor rms_norm(const tensor &x, const tensor &gamma, double eps) {
    const char *call = "pto::program::rms_norm";
    return op(pto_rms_norm(raw(call), x.get(), gamma.get(), eps), call);
  }
  tensor layer_norm(const tensor &x, double eps) {
    return layer_norm(x, tensor(), tensor(), eps);
  }
  tensor layer_norm(const tensor &x, const tensor &gamma, const tensor &beta,
                    double eps) {
    const char *call = "pto::program::layer_norm";
    return op(
        pto_layer_norm(raw(call), x.get(), gamma.get(), beta.get(), eps), call);
  }

  tensor cast(const tensor &a, pto_dtype dt) {
    const char *call = "pto::program::cast";
    return op(pto_cast(raw(call), a.get(), dt), call);
  }
  tensor cmp(const tensor &a, const tensor &b, pto_cmp_mode mode) {
    const char *call = "pto::program::cmp";
    return op(pto_cmp(raw(call), a.get(), b.get(), mode), call);
  }
  tensor select(const tensor &mask, const tensor &a, const tensor &b) {
    const char *call = "pto::program::select";
    return op(pto_select(raw(call), mask.get(), a.get(), b.get()), call);
  }

  /* ---- matmul ---- */

  /* flags: PTO_MATMUL_TRANS_A, PTO_MATMUL_TRANS_B, PTO_MATMUL_CAUSAL (the
   * end-aligned causal mask: matmul_masked with diag = N - M) */
  tensor matmul(const tensor &a, const tensor &b, unsigned flags = 0) {
    const char *call = "pto::program::matmul";
    return op(pto_matmul(raw(call), a.get(), b.get(), flags), call);
  }
  tensor matmul_acc(const tensor &acc, const tensor &a, const tensor &b,
                    unsigned flags = 0) {
    const char *call = "pto::program::matmul_acc";
    return op(pto_matmul_acc(raw(call), acc.get(), a.get(), b.get(), flags),
              call);
  }
  /* a x b with -inf where col > row + diag (flags: TRANS_A, TRANS_B) */
  tensor matmul_masked(const tensor &a, const tensor &b, unsigned flags,
                       int64_t diag) {
    const char *call = "pto::program::matmul_masked";
    return op(pto_matmul_masked(raw(call), a.get(), b.get(), flags, diag),
              call);
  }
  /* flags: TRANS_A, TRANS_B, PTO_MATMUL_CAUSAL (diag as given) or
   * PTO_MATMUL_CAUSAL | PTO_MATMUL_CAUSAL_END (end-aligned, following
   * dynamic extents) */
  tensor matmul_relu_wsum(const tensor &a, const tensor &b, const tensor &w,
                          int64_t group, unsigned flags = 0, int64_t diag = 0) {
    const char *call = "pto::program::matmul_relu_wsum";
    return op(pto_matmul_relu_wsum(raw(call), a.get(), b.get(), w.get(), group,
                                   flags, diag),
              call);
  }
  struct attention_result {
    tensor out, lse;
  };
  attention_result sparse_attention(const tensor &q, const tensor &kv,
                                    const tensor &idx, int64_t dv,
                                    double scale) {
    const char *call = "pto::program::sparse_attention";
    pto_tensor *lse = nullptr;
    tensor out = op(pto_sparse_attention(raw(call), q.get(), kv.get(),
                                         idx.get(), dv, scale, &lse),
                    call);
    return {out, tensor(get(), lse)};
  }

  /* ---- top-k and data movement ---- */

  struct topk_result {
    tensor values, indices;
  };
  topk_result topk(const tensor &a, int64_t k) {
    const char *call = "pto::program::topk";
    pto_tensor *idx = nullptr;
    tensor v = op(pto_topk(raw(call), a.get(), k, &idx), call);
    return {v, tensor(get(), idx)};
  }
  topk_result topk_masked(const tensor &a, int64_t k) {
    const char *call = "pto::program::topk_masked";
    pto_tensor *idx = nullptr;
    tensor v = op(pto_topk_masked(raw(call), a.get(), k, &idx), call);
    return {v, tensor(get(), idx)};
  }
  /* flags: PTO_GATHER_STRICT */
  tensor gather(const tensor &table, const tensor &index, unsigned flags = 0) {
    const char *call = "pto::program::gather";
    return op(pto_gather(raw(call), table.get(), index.get(), flags), call);
  }
  /* Any number of tensors (one op, each copied once into its place). */
  tensor concat(list_ref<tensor> ts, int axis) {
    const char *call = "pto::program::concat";
    std::vector<pto_tensor *> v = handles(ts);
    return op(pto_concat(raw(call), static_cast<int>(v.size()), v.data(), axis),
              call);
  }
  /* dst with src written over its window at begin (one entry per axis);
   * chains of assembles are one op. */
  tensor assemble(const tensor &dst, const tensor &src, const dims &begin) {
    const char *call = "pto::program::assemble";
    if (dst && begin.size() != dst.ndim()) {
      std::string m = dst.describe() + " has " + std::to_string(dst.ndim()) +
                      " dims; begin has " + std::to_string(begin.size());
      pto_program_fail(raw(call), PTO_ESHAPE, "assemble", "%s", m.c_str());
      detail::fail(pto_program_status(get()), call, pto_program_error(get()));
    }
    return op(pto_assemble(raw(call), dst.get(), src.get(), begin.data()),
              call);
  }
  tensor full(pto_dtype dt, const dims &shape, double value) {
    const char *call = "pto::program::full";
    return op(pto_full(raw(call), dt, shape.size(), shape.data(), value), call);
  }
  tensor iota(pto_dtype dt, const dims &shape, int64_t start = 0) {
    const char *call = "pto::program::iota";
    return op(pto_iota(raw(call), dt, shape.size(), shape.data(), start), call);
  }
  /* iota counting along any axis: out[idx] = start + idx[axis] */
  tensor iota_axis(pto_dtype dt, const dims &shape, int axis,
                   int64_t start = 0) {
    const char *call = "pto::program::iota_axis";
    return op(pto_iota_axis(raw(call), dt, shape.size(), shape.data(), axis,
                            start),
              call);
  }
  /* A custom tile instruction (pto/tileop.h) over tensors of equal shape. */
  tensor custom(int id, list_ref<tensor> inputs) {
    const char *call = "pto::program::custom";
    std::vector<pto_tensor *> v = handles(inputs);
    return op(pto_custom(raw(call), id, static_cast<int>(v.size()), v.data()),
              call);
  }

  /* ---- reference evaluator ---- */

  /* Runs the program op by op in plain C (pto_program_eval), after checking
   * the buffers against the inputs and outputs. */
  void eval(list_ref<const_buffer> inputs, list_ref<buffer> outputs) {
    const char *call = "pto::program::eval";
    const detail::program_state &s = state(call);
    std::vector<const void *> in;
    std::vector<void *> out;
    detail::bind(call, "input", s.inputs(), inputs, in);
    detail::bind(call, "output", s.outputs(), outputs, out);
    detail::check(
        pto_program_eval(s.p, detail::array_of(in), detail::array_of(out)),
        call, s.p);
  }

  /* pto_program_eval_dims: the program evaluated at the extents of its
   * dynamic dims, one per dim in declaration order (run::extents() gives a
   * run's), 0 to each maximum; buffers laid out for the maxima, only the
   * valid region of each output written. */
  void eval_dims(list_ref<int64_t> extents, list_ref<const_buffer> inputs,
                 list_ref<buffer> outputs) {
    const char *call = "pto::program::eval_dims";
    const detail::program_state &s = state(call);
    const int n = pto_program_num_dims(s.p);
    if (extents.size() != static_cast<std::size_t>(n)) {
      std::string names;
      for (int i = 0; i < n; i++)
        names += (i ? ", " : "") + std::string(pto_program_dim_name(s.p, i));
      throw error(PTO_EINVAL, call,
                  std::to_string(n) + " extents expected (" + names + "), " +
                      std::to_string(extents.size()) + " given");
    }
    std::vector<const void *> in;
    std::vector<void *> out;
    detail::bind(call, "input", s.inputs(), inputs, in);
    detail::bind(call, "output", s.outputs(), outputs, out);
    const int64_t none = 0;
    detail::check(pto_program_eval_dims(s.p, n ? extents.data() : &none,
                                        detail::array_of(in),
                                        detail::array_of(out)),
                  call, s.p);
  }

private:
  friend class executable;
  friend executable compile(program &, const config *);

  pto_program *raw(const char *call) const {
    if (!state_)
      detail::fail(PTO_ESTATE, call, "the program was moved from");
    return state_->p;
  }
  const detail::program_state &state(const char *call) const {
    raw(call);
    return *state_;
  }
  tensor op(pto_tensor *t, const char *call) const {
    return detail::made(get(), t, call);
  }
  tensor at(pto_tensor *t, int i, const char *what, int n,
            const char *call) const {
    raw(call);
    if (!t)
      throw error(PTO_ERANGE, call,
                  std::string(what) + " " + std::to_string(i) +
                      " is out of range: the program has " + std::to_string(n));
    return tensor(get(), t);
  }
  static std::vector<pto_tensor *> handles(list_ref<tensor> ts) {
    std::vector<pto_tensor *> v;
    for (const tensor &t : ts)
      v.push_back(t.get());
    return v;
  }
  pto::scope push_scope(const char *label, const pto_tile_shape *tile) {
    const char *call = "pto::program::scope";
    detail::check(pto_program_push_scope(raw(call), label, tile), call, get());
    return pto::scope(state_, pto_program_pop_scope, call);
  }
  pto::scope push_tile(const pto_tile_shape *shape, const char *call) {
    detail::check(pto_program_push_tile(raw(call), shape), call, get());
    return pto::scope(state_, pto_program_pop_tile, call);
  }

  std::shared_ptr<detail::program_state> state_;
};

/* ---- tensor operators: a + b, a * 2, -a ... ------------------------------ */

inline tensor operator+(const tensor &a, const tensor &b) {
  pto_program *p = detail::prog_of(a, b);
  return detail::made(p, pto_add(p, a.get(), b.get()), "pto::operator+");
}
inline tensor operator-(const tensor &a, const tensor &b) {
  pto_program *p = detail::prog_of(a, b);
  return detail::made(p, pto_sub(p, a.get(), b.get()), "pto::operator-");
}
inline tensor operator*(const tensor &a, const tensor &b) {
  pto_program *p = detail::prog_of(a, b);
  return detail::made(p, pto_mul(p, a.get(), b.get()), "pto::operator*");
}
inline tensor operator/(const tensor &a, const tensor &b) {
  pto_program *p = detail::prog_of(a, b);
  return detail::made(p, pto_div(p, a.get(), b.get()), "pto::operator/");
}
inline tensor operator+(const tensor &a, double s) {
  pto_program *p = a.program_handle();
  return detail::made(p, pto_adds(p, a.get(), s), "pto::operator+");
}
inline tensor operator-(const tensor &a, double s) {
  pto_program *p = a.program_handle();
  return detail::made(p, pto_subs(p, a.get(), s), "pto::operator-");
}
inline tensor operator*(const tensor &a, double s) {
  pto_program *p = a.program_handle();
  return detail::made(p, pto_muls(p, a.get(), s), "pto::operator*");
}
inline tensor operator/(const tensor &a, double s) {
  pto_program *p = a.program_handle();
  return detail::made(p, pto_divs(p, a.get(), s), "pto::operator/");
}
inline tensor operator+(double s, const tensor &a) {
  return a + s;
}
inline tensor operator*(double s, const tensor &a) {
  return a * s;
}
inline tensor operator-(const tensor &a) {
  pto_program *p = a.program_handle();
  return detail::made(p, pto_neg(p, a.get()), "pto::operator-");
}

/* ---- config -------------------------------------------------------------- */

/* Machine description and knobs (pto/config.h). */
class config {
public:
  /* The host machine and default knobs. */
  config() : c_(pto_config_new()) {
    if (!c_)
      detail::fail(PTO_ENOMEM, "pto::config", "out of memory");
  }
  /* Takes ownership of a C config (NULL throws PTO_ENOMEM). */
  explicit config(pto_config *adopt) : c_(adopt) {
    if (!c_)
      detail::fail(PTO_ENOMEM, "pto::config", "out of memory");
  }
  config(config &&o) noexcept : c_(o.c_) {
    o.c_ = nullptr;
  }
  config &operator=(config &&o) noexcept {
    if (this != &o) {
      pto_config_free(c_);
      c_ = o.c_;
      o.c_ = nullptr;
    }
    return *this;
  }
  config(const config &) = delete;
  config &operator=(const config &) = delete;
  ~config() {
    pto_config_free(c_);
  }

  pto_config *get() const noexcept {
    return c_;
  }
  /* An independent copy (copies are explicit). */
  config clone() const {
    return config(pto_config_clone(raw("pto::config::clone")));
  }

  /* Merge JSON settings (schema in pto/config.h); the config is unchanged
   * when it throws. */
  void load_file(const std::string &path) {
    const char *call = "pto::config::load_file";
    detail::check(pto_config_load_file(raw(call), path.c_str()), call, c_);
  }
  void load_string(const std::string &json) {
    const char *call = "pto::config::load_string";
    detail::check(pto_config_load_string(raw(call), json.c_str()), call, c_);
  }
  std::string to_json() const {
    const char *call = "pto::config::to_json";
    char *s = pto_config_to_json(raw(call));
    if (!s)
      detail::fail(PTO_ENOMEM, call,
                   "out of memory, or a name or label is not valid UTF-8");
    std::string r(s);
    std::free(s);
    return r;
  }

  void set_machine(const pto_machine &m) {
    const char *call = "pto::config::set_machine";
    detail::check(pto_config_set_machine(raw(call), &m), call, c_);
  }
  const pto_machine &machine() const {
    return *pto_config_machine(raw("pto::config::machine"));
  }

  /* The global value, or the value for ops under label. */
  void set_knob(pto_knob k, int64_t value) {
    knob_set(nullptr, k, value);
  }
  void set_knob(const std::string &label, pto_knob k, int64_t value) {
    knob_set(label.c_str(), k, value);
  }
  int64_t knob(pto_knob k) const noexcept {
    return pto_config_knob(c_, nullptr, k);
  }
  int64_t knob(const std::string &label, pto_knob k) const noexcept {
    return pto_config_knob(c_, label.c_str(), k);
  }
  void set_tile(const std::string &label, const pto_tile_shape &shape) {
    const char *call = "pto::config::set_tile";
    detail::check(pto_config_set_tile(raw(call), label.c_str(), &shape), call,
                  c_);
  }
  /* The parts of *shape an override for label applies to are replaced;
   * true when one applied. */
  bool tile(const std::string &label, pto_tile_shape &shape) const noexcept {
    return pto_config_tile(c_, label.c_str(), &shape) != 0;
  }

  void set_stage_barriers(list_ref<std::string> prefixes) {
    const char *call = "pto::config::set_stage_barriers";
    std::vector<const char *> v;
    for (const std::string &s : prefixes)
      v.push_back(s.c_str());
    detail::check(pto_config_set_stage_barriers(
                      raw(call), v.data(), static_cast<uint32_t>(v.size())),
                  call, c_);
  }
  std::vector<std::string> stage_barriers() const {
    std::vector<std::string> v;
    for (uint32_t i = 0; i < pto_config_n_stage_barriers(c_); i++)
      v.emplace_back(pto_config_stage_barrier(c_, i));
    return v;
  }

private:
  pto_config *raw(const char *call) const {
    if (!c_)
      detail::fail(PTO_ESTATE, call, "the config was moved from");
    return c_;
  }
  void knob_set(const char *label, pto_knob k, int64_t value) {
    const char *call = "pto::config::set_knob";
    detail::check(pto_config_set_knob(raw(call), label, k, value), call, c_);
  }

  pto_config *c_;
};

/* The machine this process runs on (pto_machine_host), and an Ascend-like
 * NPU for planning. */
inline pto_machine machine_host() {
  pto_machine m;
  detail::check_last(pto_machine_host(&m), "pto::machine_host");
  return m;
}
inline pto_machine machine_ascend() noexcept {
  return pto_machine_ascend();
}

/* ---- executable ---------------------------------------------------------- */

namespace detail {

/* What an executable shares with its runs: the C object, freed when the
 * last of them goes (after every run: pto_run_free comes first), and the
 * buffers its runs take. */
struct exe_state {
  pto_executable *e;
  std::vector<tensor_info> inputs, outputs;

  explicit exe_state(pto_executable *x) noexcept : e(x) {}
  ~exe_state() {
    pto_executable_free(e);
  }
  exe_state(const exe_state &) = delete;
  exe_state &operator=(const exe_state &) = delete;

  void bind(const char *call, list_ref<const_buffer> in_bufs,
            list_ref<buffer> out_bufs, std::vector<const void *> &in,
            std::vector<void *> &out) const {
    detail::bind(call, "input", inputs, in_bufs, in);
    detail::bind(call, "output", outputs, out_bufs, out);
  }
};

inline const std::vector<tensor_info> &no_tensors() noexcept {
  static const std::vector<tensor_info> none;
  return none;
}

} // namespace detail

/* A compiled program (pto/executable.h): compiled programs and the
 * execution graph, immutable. It owns a copy of what it reads of its
 * program, so it may outlive the pto::program it was compiled from.
 * Executions go through a pto::run (any number at once, dynamic dims
 * bound per run), or through runtime::run and run_serial, which execute
 * at the dims' maxima on a run of their own and keep the last error and
 * trace here. */
class executable {
public:
  executable(executable &&) noexcept = default;
  executable &operator=(executable &&) noexcept = default;
  executable(const executable &) = delete;
  executable &operator=(const executable &) = delete;
  /* Frees the executable once no pto::run of it is left. */
  ~executable() = default;

  /* NULL when moved from. */
  pto_executable *get() const noexcept {
    return s_ ? s_->e : nullptr;
  }
  /* The inputs and outputs as they were when compiled: what the buffers of
   * its executions must hold (laid out for the maxima). */
  const std::vector<tensor_info> &inputs() const noexcept {
    return s_ ? s_->inputs : detail::no_tensors();
  }
  const std::vector<tensor_info> &outputs() const noexcept {
    return s_ ? s_->outputs : detail::no_tensors();
  }
  /* The dynamic dims a run binds, in declaration order. */
  int num_dims() const noexcept {
    return pto_executable_num_dims(get());
  }
  std::string dim_name(int i) const {
    const char *n = pto_executable_dim_name(get(), i);
    return n ? n : "";
  }
  /* -1 when there is no such dim */
  int64_t dim_max(int i) const noexcept {
    return pto_executable_dim_max(get(), i);
  }
  std::vector<dim_info> dims() const {
    std::vector<dim_info> v;
    for (int i = 0; i < num_dims(); i++)
      v.push_back(dim_info{dim_name(i), dim_max(i)});
    return v;
  }
  /* What the compile noticed but did not refuse, one line each. */
  std::string warnings() const {
    return pto_executable_warnings(get());
  }
  std::string error_message() const {
    const char *m = pto_executable_error(get());
    return m ? m : "";
  }
  pto_exe_stats stats() const {
    const char *call = "pto::executable::stats";
    pto_exe_stats s;
    detail::check(pto_executable_stats(raw(call), &s), call, get());
    return s;
  }

  uint32_t num_tasks() const noexcept {
    return pto_executable_num_tasks(get());
  }
  uint32_t task_program(uint32_t task) const noexcept {
    return pto_executable_task_program(get(), task);
  }
  std::string task_label(uint32_t task) const {
    const char *l = pto_executable_task_label(get(), task);
    return l ? l : "";
  }
  list_ref<uint32_t> task_successors(uint32_t task) const noexcept {
    const uint32_t *s = nullptr;
    uint32_t n = pto_executable_task_succ(get(), task, &s);
    return list_ref<uint32_t>(s, s ? n : 0);
  }
  std::string program_name(uint32_t prog) const {
    const char *n = pto_executable_program_name(get(), prog);
    return n ? n : "";
  }

  void dump(pto_stage stage, pto_dump_format fmt, std::FILE *out) const {
    const char *call = "pto::executable::dump";
    detail::check(pto_executable_dump(raw(call), stage, fmt, out), call,
                  get());
  }
  /* The trace of the last traced runtime::run (pto/runtime.h), as Chrome
   * trace JSON or a text summary; a pto::run keeps its own. */
  void write_trace(const std::string &path) const {
    const char *call = "pto::executable::write_trace";
    detail::check(pto_executable_write_trace(raw(call), path.c_str()), call,
                  get());
  }
  void trace_summary(std::FILE *out) const {
    const char *call = "pto::executable::trace_summary";
    detail::check(pto_executable_trace_summary(raw(call), out), call, get());
  }

  /* Runs every task on the calling thread, in a topological order, at the
   * dims' maxima. */
  void run_serial(list_ref<const_buffer> inputs, list_ref<buffer> outputs) {
    const char *call = "pto::executable::run_serial";
    std::vector<const void *> in;
    std::vector<void *> out;
    state(call).bind(call, inputs, outputs, in, out);
    detail::check(pto_executable_run_serial(get(), detail::array_of(in),
                                            detail::array_of(out)),
                  call, get());
  }

private:
  friend class runtime;
  friend class pto::run;
  friend executable compile(program &, const config *);

  explicit executable(std::shared_ptr<detail::exe_state> s) noexcept
      : s_(std::move(s)) {}

  pto_executable *raw(const char *call) const {
    return state(call).e;
  }
  const detail::exe_state &state(const char *call) const {
    if (!s_)
      detail::fail(PTO_ESTATE, call, "the executable was moved from");
    return *s_;
  }

  std::shared_ptr<detail::exe_state> s_;
};

/* Compiles p (pto_compile); cfg nullptr: the defaults, with the file
 * PTO_CONFIG names merged in. Throws the compile's error, e.g.
 * "pto::compile: compile: rowsum 'x.sum' needs 262144 bytes of UB, ...". */
inline executable compile(program &p, const config *cfg) {
  const char *call = "pto::compile";
  pto_program *raw = p.raw(call);
  pto_executable *e = nullptr;
  detail::check(pto_compile(raw, cfg ? cfg->get() : nullptr, &e), call, raw);
  std::shared_ptr<detail::exe_state> s;
  try {
    s = std::make_shared<detail::exe_state>(e);
  } catch (...) {
    pto_executable_free(e);
    throw;
  }
  s->inputs = p.state_->inputs();
  s->outputs = p.state_->outputs();
  return executable(std::move(s));
}
inline executable compile(program &p, const config &cfg) {
  return compile(p, &cfg);
}

/* ---- runtime ------------------------------------------------------------- */

/* pto_runtime_params with its defaults (pto_runtime_params_default), or
 * a config's machine and policy. */
struct runtime_params : pto_runtime_params {
  runtime_params() noexcept
      : pto_runtime_params(pto_runtime_params_default()) {}
  /* cfg must outlive the runtime's construction (it is copied then). */
  explicit runtime_params(const config &cfg) noexcept
      : pto_runtime_params(pto_runtime_params_from_config(cfg.get())) {}
};

/* Worker threads running executables' tasks (pto/runtime.h). Any number
 * of runs, of one executable or several, may execute on it at once. */
class runtime {
public:
  runtime() : runtime(runtime_params()) {}
  explicit runtime(const pto_runtime_params &params) {
    detail::check(pto_runtime_new(&params, &rt_), "pto::runtime",
                  static_cast<const pto_runtime *>(nullptr));
  }
  /* The config's machine and policy. */
  explicit runtime(const config &cfg) : runtime(runtime_params(cfg)) {}
  runtime(runtime &&o) noexcept : rt_(o.rt_) {
    o.rt_ = nullptr;
  }
  runtime &operator=(runtime &&o) noexcept {
    if (this != &o) {
      pto_runtime_free(rt_);
      rt_ = o.rt_;
      o.rt_ = nullptr;
    }
    return *this;
  }
  runtime(const runtime &) = delete;
  runtime &operator=(const runtime &) = delete;
  /* Waits for runs in flight, then stops the workers. */
  ~runtime() {
    pto_runtime_free(rt_);
  }

  pto_runtime *get() const noexcept {
    return rt_;
  }
  uint32_t num_workers() const noexcept {
    return pto_runtime_num_workers(rt_);
  }
  /* The processing unit worker is pinned to, or -1. */
  int worker_pu(uint32_t worker) const noexcept {
    return pto_runtime_worker_pu(rt_, worker);
  }

  /* Runs e at its dims' maxima with these buffers (checked against
   * e.inputs() and e.outputs()) and waits. A failing task throws its
   * status with the message naming the task, program and label. */
  void run(executable &e, list_ref<const_buffer> inputs,
           list_ref<buffer> outputs) {
    const char *call = "pto::runtime::run";
    pto_runtime *rt = raw(call);
    std::vector<const void *> in;
    std::vector<void *> out;
    e.state(call).bind(call, inputs, outputs, in, out);
    int st = pto_runtime_run(rt, e.get(), detail::array_of(in),
                             detail::array_of(out));
    if (st < 0) {
      const char *m = pto_executable_error(e.get());
      detail::fail(st, call, m && m[0] ? m : pto_runtime_error(rt_));
    }
  }

private:
  friend class pto::run;
  pto_runtime *raw(const char *call) const {
    if (!rt_)
      detail::fail(PTO_ESTATE, call, "the runtime was moved from");
    return rt_;
  }

  pto_runtime *rt_ = nullptr;
};

/* ---- runs ---------------------------------------------------------------- */

/* One execution context of an executable (pto_run, pto/runtime.h): the
 * binding of its dynamic dims, its workspace (mapped when the run is
 * made), its last trace and error. It shares ownership of the executable's
 * C object, so it may outlive the pto::executable. Any number of runs of
 * one executable execute at once, from any threads; one run executes once
 * at a time (PTO_ESTATE otherwise), again and again, and keeps its binding
 * between executions.
 *
 *   pto::run r(exe);
 *   for (int64_t n : {2048, 1000, 1})
 *     r.bind("rows", n).exec(rt, {x, w, b}, {y});
 */
class run {
public:
  /* A new run of e (PTO_ENOMEM when its workspace cannot be mapped). */
  explicit run(const executable &e) {
    const char *call = "pto::run";
    const detail::exe_state &s = e.state(call);
    detail::check_last(pto_run_new(s.e, &r_), call);
    exe_ = e.s_;
  }
  run(run &&o) noexcept : r_(o.r_), exe_(std::move(o.exe_)) {
    o.r_ = nullptr;
  }
  run &operator=(run &&o) noexcept {
    if (this != &o) {
      pto_run_free(r_); /* before its executable may go, below */
      r_ = o.r_;
      o.r_ = nullptr;
      exe_ = std::move(o.exe_);
    }
    return *this;
  }
  run(const run &) = delete;
  run &operator=(const run &) = delete;
  /* Waits for an execution in flight, frees the run, then drops its share
   * of the executable. */
  ~run() {
    pto_run_free(r_);
  }

  /* NULL when moved from. */
  pto_run *get() const noexcept {
    return r_;
  }
  explicit operator bool() const noexcept {
    return r_ != nullptr;
  }
  /* The buffers an execution takes (the executable's). */
  const std::vector<tensor_info> &inputs() const noexcept {
    return exe_ ? exe_->inputs : detail::no_tensors();
  }
  const std::vector<tensor_info> &outputs() const noexcept {
    return exe_ ? exe_->outputs : detail::no_tensors();
  }
  /* The message of the run's last failed call or execution ("" if none). */
  std::string error_message() const {
    return r_ ? pto_run_error(r_) : "";
  }

  /* ---- dynamic dims ---- */

  /* Binds dim `name` to value (0 to its maximum; 0: nothing of it runs)
   * for the executions from now on; throws the library's message for a dim
   * the executable does not have (PTO_ENOTFOUND) or a value out of range
   * (PTO_ERANGE). Returns *this: r.bind("rows", n).exec(rt, ...). */
  run &bind(const std::string &name, int64_t value) {
    const char *call = "pto::run::bind";
    detail::check(pto_run_bind(raw(call), name.c_str(), value), call, r_);
    return *this;
  }
  /* The same by the dim's index (executable::dims()). */
  run &bind_index(int i, int64_t value) {
    const char *call = "pto::run::bind_index";
    detail::check(pto_run_bind_index(raw(call), i, value), call, r_);
    return *this;
  }
  /* Every dim at once, in declaration order. */
  run &bind_all(list_ref<int64_t> values) {
    const char *call = "pto::run::bind_all";
    raw(call);
    int n = pto_executable_num_dims(exe_->e);
    if (values.size() != static_cast<std::size_t>(n))
      throw error(PTO_EINVAL, call,
                  std::to_string(n) + " dims to bind (" + dim_names() + "), " +
                      std::to_string(values.size()) + " given");
    for (int i = 0; i < n; i++)
      detail::check(
          pto_run_bind_index(r_, i, values[static_cast<std::size_t>(i)]), call,
          r_);
    return *this;
  }
  /* Checks the binding and sizes the run's tasks to it now
   * (pto_run_prepare), not in the next execution; throws the library's
   * message for an unbound dim or a failed equality. */
  run &prepare() {
    const char *call = "pto::run::prepare";
    detail::check(pto_run_prepare(raw(call)), call, r_);
    return *this;
  }
  /* What dim `name` is bound to, or -1 (unbound, or no such dim). */
  int64_t dim(const std::string &name) const noexcept {
    return pto_run_dim(r_, name.c_str());
  }
  /* Every dim's binding in declaration order (-1: unbound): what
   * program::eval_dims takes. */
  std::vector<int64_t> extents() const {
    std::vector<int64_t> v;
    int n = exe_ ? pto_executable_num_dims(exe_->e) : 0;
    for (int i = 0; i < n; i++)
      v.push_back(pto_run_dim(r_, pto_executable_dim_name(exe_->e, i)));
    return v;
  }

  /* ---- executing ---- */

  /* Executes the run on rt with these buffers (checked against inputs()
   * and outputs(), laid out for the maxima) and waits. Throws the run's
   * message: an unbound dim, an equality the binding breaks (PTO_ESHAPE),
   * a failing task (naming it, its program and label). */
  run &exec(runtime &rt, list_ref<const_buffer> inputs,
            list_ref<buffer> outputs) {
    const char *call = "pto::run::exec";
    pto_run *r = raw(call);
    pto_runtime *prt = rt.raw(call);
    std::vector<const void *> in;
    std::vector<void *> out;
    exe_->bind(call, inputs, outputs, in, out);
    detail::check(
        pto_run_exec(prt, r, detail::array_of(in), detail::array_of(out)),
        call, r);
    return *this;
  }
  /* Every task on the calling thread, in a topological order. */
  run &exec_serial(list_ref<const_buffer> inputs, list_ref<buffer> outputs) {
    const char *call = "pto::run::exec_serial";
    pto_run *r = raw(call);
    std::vector<const void *> in;
    std::vector<void *> out;
    exe_->bind(call, inputs, outputs, in, out);
    detail::check(
        pto_run_exec_serial(r, detail::array_of(in), detail::array_of(out)),
        call, r);
    return *this;
  }
  /* Tasks of the execution in flight not yet started are skipped; it
   * throws PTO_ECANCELED on the thread that executes it. */
  void cancel() noexcept {
    pto_run_cancel(r_);
  }

  /* The last execution's trace (on a runtime made with params.trace or
   * PTO_TRACE): only the tasks that ran, as Chrome trace JSON or a text
   * summary. */
  void write_trace(const std::string &path) const {
    const char *call = "pto::run::write_trace";
    detail::check(pto_run_write_trace(raw(call), path.c_str()), call, r_);
  }
  void trace_summary(std::FILE *out) const {
    const char *call = "pto::run::trace_summary";
    detail::check(pto_run_trace_summary(raw(call), out), call, r_);
  }

private:
  pto_run *raw(const char *call) const {
    if (!r_)
      detail::fail(PTO_ESTATE, call, "the run was moved from");
    return r_;
  }
  std::string dim_names() const {
    std::string s;
    for (int i = 0; i < pto_executable_num_dims(exe_->e); i++)
      s += (i ? ", " : "") + std::string(pto_executable_dim_name(exe_->e, i));
    return s;
  }

  pto_run *r_ = nullptr;
  /* declared after r_ and released after the destructor's body: the run
   * goes first */
  std::shared_ptr<detail::exe_state> exe_;
};

namespace detail {
/* The length of a name in a fixed array, NUL-terminated or full. */
inline std::size_t name_len(const char *s, std::size_t cap) noexcept {
  const void *z = std::memchr(s, 0, cap);
  return z ? static_cast<std::size_t>(static_cast<const char *>(z) - s) : cap;
}
} // namespace detail

/* The cube tile the compiler gives a matmul nobody tiled (pto_matmul_tile):
 * `batch` M x N x K products on machine m run by `workers` workers. */
inline pto_tile_shape matmul_tile(const pto_machine &m, int64_t batch,
                                  int64_t M, int64_t N, int64_t K,
                                  uint32_t workers) {
  pto_tile_shape t{};
  int st = pto_matmul_tile(&m, batch, M, N, K, workers, &t);
  if (st < 0)
    detail::fail(st, "pto::matmul_tile",
                 (std::string(pto_strerror(st)) + ": batch " +
                  std::to_string(batch) + " of " + std::to_string(M) + " x " +
                  std::to_string(N) + " x " + std::to_string(K) + " on " +
                  std::to_string(workers) + " workers of '" +
                  std::string(m.name, detail::name_len(m.name, sizeof m.name)) +
                  "'")
                     .c_str());
  return t;
}

/* ---- operators built with the API ---------------------------------------- */

/* C = A x B (pto/gemm.h): inputs "A" f32 [M,K], "B" f32 [K,N], output "C";
 * tile nullptr: chosen for the host. */
inline program gemm_program(int64_t M, int64_t N, int64_t K,
                            const pto_tile_shape *tile = nullptr) {
  return program(pto_gemm_program(M, N, K, tile));
}
/* Row softmax (pto/softmax.h): input "X", output "Y". */
inline program softmax_program(int64_t rows, int64_t cols,
                               uint32_t tile_rows = 0,
                               std::size_t l2_bytes = 0) {
  return program(pto_softmax_program(rows, cols, tile_rows, l2_bytes));
}

} // namespace pto

#endif /* PTO_PTO_HPP */
