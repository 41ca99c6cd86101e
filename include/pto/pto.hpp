/* pto/pto.hpp: a header-only C++ wrapper over the C API (pto/pto.h).
 *
 * Requires C++17; std::span (C++20) buffers are accepted where the standard
 * library has them. Nothing here is compiled into the library: this header
 * calls the C functions and adds what C cannot do:
 *
 *   - RAII: pto::program, pto::config, pto::executable and pto::runtime own
 *     their C handle, are move-only (moves are noexcept, a moved-from object
 *     holds nothing) and free it in a destructor that never throws.
 *   - Errors: every failing call throws pto::error, carrying the pto_status
 *     and a message "<call>: <the library's message, verbatim>", e.g.
 *     "pto::program::matmul: matmul 'mlp': K of a 'a' f32[4,8] is 8, K of
 *     b 'b' f32[6,4] is 6".
 *   - Buffers: runs and evals take lists of buffer views made from any
 *     contiguous range (std::vector, std::array, std::span, C arrays) or a
 *     pointer and a count, and check each against its tensor's element count
 *     and dtype, naming the input or output, before the C call sees it.
 *   - Scopes: tile shapes and labels are guards that pop when they leave
 *     scope, also when an exception unwinds it.
 *
 *   pto::program p("example");
 *   pto::tensor A = p.input("A", PTO_F32, {64, 64});
 *   pto::tensor B = p.input("B", PTO_F32, {64, 64});
 *   pto::tensor W = p.input("W", PTO_F32, {64, 32});
 *   {
 *     auto tile = p.vec_tile(32, 32);       // popped at the closing brace
 *     p.output(p.rowsum(p.matmul(A * 2 + B, W)), "C");
 *   }
 *   pto::executable exe = pto::compile(p);
 *   pto::runtime rt;
 *   std::vector<float> a(64 * 64), b(64 * 64), w(64 * 32), c(64);
 *   rt.run(exe, {a, b, w}, {c});            // or exe.run_serial(...)
 *   std::vector<float> ref(64);
 *   p.eval({a, b, w}, {ref});               // the reference evaluator
 *
 * tests/cpp/example.cpp is a complete program; tests/cpp/test_cpp.cpp
 * shows every part of this header at work.
 *
 * Lifetimes. A pto::tensor is a plain handle to a tensor inside its
 * program's arena: it is valid while the program lives, as in C. An
 * executable and a scope guard share ownership of their program's C object,
 * which is freed when the last of them goes, after every executable
 * compiled from it: so any declaration or destruction order is safe, the
 * natural one (program declared first, destroyed last) and any other,
 * whatever order of pto_executable_free and pto_program_free the C API
 * asks for (pto/executable.h).
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
/* calls with no object: the thread's pto_last_error */
inline void check_last(int st, const char *call) {
  if (st < 0)
    fail(st, call, pto_last_error());
}

} // namespace detail

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

/* 1 to PTO_MAX_DIMS sizes: {64, 64}, or a contiguous range of integers.
 * More than PTO_MAX_DIMS throws PTO_EINVAL. */
class dims {
public:
  dims(std::initializer_list<int64_t> l) {
    assign(l.begin(), l.size());
  }
  template <class R, class T = detail::elem_of<const R>,
            class = std::enable_if_t<std::is_integral<T>::value>,
            class = decltype(std::size(std::declval<const R &>()))>
  dims(const R &r) {
    assign(std::data(r), std::size(r));
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
  template <class T> void assign(const T *p, std::size_t n) {
    if (n > PTO_MAX_DIMS)
      throw error(PTO_EINVAL, "pto::dims",
                  std::to_string(n) + " dims given, at most " +
                      std::to_string(PTO_MAX_DIMS));
    for (std::size_t i = 0; i < n && i < PTO_MAX_DIMS; i++)
      v_[i] = static_cast<int64_t>(p[i]);
    n_ = static_cast<int>(n);
  }
  int64_t v_[PTO_MAX_DIMS] = {};
  int n_ = 0;
};

/* What a run's buffer must hold for one input or output. */
struct tensor_info {
  std::string name; /* "" for an output declared through the C API */
  pto_dtype dtype;
  std::vector<int64_t> shape;
  int64_t numel;

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
  std::vector<int64_t> shape() const {
    std::vector<int64_t> s(static_cast<std::size_t>(ndim() > 0 ? ndim() : 0));
    for (std::size_t i = 0; i < s.size(); i++)
      s[i] = dim(static_cast<int>(i));
    return s;
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

inline tensor_info info_of(pto_tensor *t, std::string name) {
  tensor h(nullptr, t);
  return tensor_info{std::move(name), h.dtype(), h.shape(), h.numel()};
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
                  std::to_string(want) + " bytes); given ";
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
      v.push_back(info_of(t, pto_tensor_name(t)));
    }
    return v;
  }
  std::vector<tensor_info> outputs() const {
    std::vector<tensor_info> v;
    for (int i = 0; i < pto_program_num_outputs(p); i++) {
      std::size_t j = static_cast<std::size_t>(i);
      v.push_back(info_of(pto_program_output(p, i),
                          j < output_names.size() ? output_names[j] : ""));
    }
    return v;
  }
};

} // namespace detail

class config;
class executable;
class program;
executable compile(program &p, const config *cfg = nullptr);

/* ---- scopes -------------------------------------------------------------- */

/* A pushed tile shape or label, popped when the guard is destroyed (also
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
  scope label(const std::string &l) {
    const char *call = "pto::program::label";
    detail::check(pto_program_push_label(raw(call), l.c_str()), call, get());
    return scope(state_, pto_program_pop_label, call);
  }
  /* A tile scope: a copy of the tile shape in force, or `shape`. */
  scope tile() {
    return push_tile(nullptr, "pto::program::tile");
  }
  scope tile(const pto_tile_shape &shape) {
    return push_tile(&shape, "pto::program::tile");
  }
  /* A tile scope with the vector tile (or the cube tile) changed. */
  scope vec_tile(uint32_t rows, uint32_t cols) {
    const char *call = "pto::program::vec_tile";
    scope s = push_tile(nullptr, call);
    set_vec_tile(rows, cols, call);
    return s;
  }
  scope cube_tile(uint32_t m, uint32_t n, uint32_t k) {
    const char *call = "pto::program::cube_tile";
    scope s = push_tile(nullptr, call);
    set_cube_tile(m, n, k, call);
    return s;
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
#undef PTO_HPP_BINARY
#undef PTO_HPP_SCALAR
#undef PTO_HPP_UNARY

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

  /* flags: PTO_MATMUL_TRANS_A, PTO_MATMUL_TRANS_B */
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
  tensor concat(list_ref<tensor> ts, int axis) {
    const char *call = "pto::program::concat";
    std::vector<pto_tensor *> v = handles(ts);
    return op(pto_concat(raw(call), static_cast<int>(v.size()), v.data(), axis),
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
  scope push_tile(const pto_tile_shape *shape, const char *call) {
    detail::check(pto_program_push_tile(raw(call), shape), call, get());
    return scope(state_, pto_program_pop_tile, call);
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

/* A compiled program (pto/executable.h): compiled programs and the
 * execution graph. It shares ownership of its program's C object, freed
 * only after the executable, so it may outlive the pto::program it was
 * compiled from. Runs go through pto::runtime::run or run_serial. */
class executable {
public:
  executable(executable &&o) noexcept
      : e_(o.e_), prog_(std::move(o.prog_)), inputs_(std::move(o.inputs_)),
        outputs_(std::move(o.outputs_)) {
    o.e_ = nullptr;
  }
  executable &operator=(executable &&o) noexcept {
    if (this != &o) {
      pto_executable_free(e_); /* before its program may go, below */
      e_ = o.e_;
      o.e_ = nullptr;
      prog_ = std::move(o.prog_);
      inputs_ = std::move(o.inputs_);
      outputs_ = std::move(o.outputs_);
    }
    return *this;
  }
  executable(const executable &) = delete;
  executable &operator=(const executable &) = delete;
  /* Frees the executable, then drops its share of the program. */
  ~executable() {
    pto_executable_free(e_);
  }

  pto_executable *get() const noexcept {
    return e_;
  }
  /* The inputs and outputs as they were when compiled: what run's buffers
   * must hold. */
  const std::vector<tensor_info> &inputs() const noexcept {
    return inputs_;
  }
  const std::vector<tensor_info> &outputs() const noexcept {
    return outputs_;
  }
  /* What the compile noticed but did not refuse, one line each. */
  std::string warnings() const {
    return pto_executable_warnings(e_);
  }
  pto_exe_stats stats() const {
    const char *call = "pto::executable::stats";
    pto_exe_stats s;
    detail::check(pto_executable_stats(raw(call), &s), call, e_);
    return s;
  }

  uint32_t num_tasks() const noexcept {
    return pto_executable_num_tasks(e_);
  }
  uint32_t task_program(uint32_t task) const noexcept {
    return pto_executable_task_program(e_, task);
  }
  std::string task_label(uint32_t task) const {
    const char *l = pto_executable_task_label(e_, task);
    return l ? l : "";
  }
  list_ref<uint32_t> task_successors(uint32_t task) const noexcept {
    const uint32_t *s = nullptr;
    uint32_t n = pto_executable_task_succ(e_, task, &s);
    return list_ref<uint32_t>(s, s ? n : 0);
  }
  std::string program_name(uint32_t prog) const {
    const char *n = pto_executable_program_name(e_, prog);
    return n ? n : "";
  }

  void dump(pto_stage stage, pto_dump_format fmt, std::FILE *out) const {
    const char *call = "pto::executable::dump";
    detail::check(pto_executable_dump(raw(call), stage, fmt, out), call, e_);
  }
  /* The last traced run's trace (pto/runtime.h), as Chrome trace JSON or a
   * text summary. */
  void write_trace(const std::string &path) const {
    const char *call = "pto::executable::write_trace";
    detail::check(pto_executable_write_trace(raw(call), path.c_str()), call,
                  e_);
  }
  void trace_summary(std::FILE *out) const {
    const char *call = "pto::executable::trace_summary";
    detail::check(pto_executable_trace_summary(raw(call), out), call, e_);
  }

  /* Runs every task on the calling thread, in a topological order. */
  void run_serial(list_ref<const_buffer> inputs, list_ref<buffer> outputs) {
    const char *call = "pto::executable::run_serial";
    std::vector<const void *> in;
    std::vector<void *> out;
    bind(call, inputs, outputs, in, out);
    detail::check(pto_executable_run_serial(e_, detail::array_of(in),
                                            detail::array_of(out)),
                  call, e_);
  }

private:
  friend class runtime;
  friend executable compile(program &, const config *);

  executable(pto_executable *e, std::shared_ptr<detail::program_state> p)
      : e_(e), prog_(std::move(p)) {}

  pto_executable *raw(const char *call) const {
    if (!e_)
      detail::fail(PTO_ESTATE, call, "the executable was moved from");
    return e_;
  }
  void bind(const char *call, list_ref<const_buffer> inputs,
            list_ref<buffer> outputs, std::vector<const void *> &in,
            std::vector<void *> &out) const {
    raw(call);
    detail::bind(call, "input", inputs_, inputs, in);
    detail::bind(call, "output", outputs_, outputs, out);
  }

  pto_executable *e_;
  /* declared after e_ and released after the destructor's body: the
   * executable goes first */
  std::shared_ptr<detail::program_state> prog_;
  std::vector<tensor_info> inputs_, outputs_;
};

/* Compiles p (pto_compile); cfg nullptr: the defaults, with the file
 * PTO_CONFIG names merged in. Throws the compile's error, e.g.
 * "pto::compile: compile: rowsum 'x.sum' needs 262144 bytes of UB, ...". */
inline executable compile(program &p, const config *cfg) {
  const char *call = "pto::compile";
  pto_program *raw = p.raw(call);
  pto_executable *e = nullptr;
  detail::check(pto_compile(raw, cfg ? cfg->get() : nullptr, &e), call, raw);
  executable x(e, p.state_);
  x.inputs_ = p.state_->inputs();
  x.outputs_ = p.state_->outputs();
  return x;
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

/* Worker threads running executables' tasks (pto/runtime.h). */
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

  /* Runs e with these buffers (checked against e.inputs() and e.outputs())
   * and waits. A failing task throws its status with the message naming the
   * task, program and label. */
  void run(executable &e, list_ref<const_buffer> inputs,
           list_ref<buffer> outputs) {
    const char *call = "pto::runtime::run";
    if (!rt_)
      detail::fail(PTO_ESTATE, call, "the runtime was moved from");
    std::vector<const void *> in;
    std::vector<void *> out;
    e.bind(call, inputs, outputs, in, out);
    int st =
        pto_runtime_run(rt_, e.e_, detail::array_of(in), detail::array_of(out));
    if (st < 0) {
      const char *m = pto_executable_error(e.e_);
      detail::fail(st, call, m && m[0] ? m : pto_runtime_error(rt_));
    }
  }

private:
  pto_runtime *rt_ = nullptr;
};

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
