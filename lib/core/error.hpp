// Errors inside NNC, and the guard that turns them into libnnc's C conventions.
//
// C++ code reports bad input by throwing nnc::Error (through nnc::fail or
// NNC_CHECK); every exported function runs its body through nnc::guard, which
// catches everything, stores the message for ccv_nnc_error_message() and
// returns the C failure value. Nothing thrown ever crosses the C boundary.
#pragma once

#include <cstdarg>
#include <exception>
#include <new>
#include <string>

#include "nnc/ccv_nnc.h"

namespace nnc {

class Error : public std::exception {
 public:
  Error(int code, std::string message) : code_(code), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  int code() const noexcept { return code_; }

 private:
  int code_;
  std::string message_;
};

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vformat(const char* fmt, va_list args);

// Throw an Error with a CCV_NNC_EXEC_* code and a formatted message.
[[noreturn]] void fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's last error message.
void set_error_message(const std::string& message);
const std::string& error_message();
void clear_error_message();

// Record the exception being handled (call from a catch block) and return its code.
int record_current_exception() noexcept;

namespace detail {
// Exported calls in progress on this thread (an exported function may call
// another), and whether the stored message is current. One trivially
// destructible thread-local with the initial-exec model: a guard reaches it
// with a thread-pointer offset, not a __tls_get_addr call (a few bytes of the
// static TLS reserve, which libraries opened with dlopen may use too).
struct GuardState {
  int depth = 0;
  bool error_set = false;
};
inline thread_local GuardState t_guard __attribute__((tls_model("initial-exec")));
}  // namespace detail

// Held by every guard: the outermost exported call on a thread starts with no
// message, so a failure that sets none (a kernel returning a code) is never
// reported with an older call's text. Nested exported calls keep the message
// of the call they are part of. Clearing is a flag; the string keeps its storage.
class GuardScope {
 public:
  GuardScope() noexcept {
    if (detail::t_guard.depth++ == 0) detail::t_guard.error_set = false;
  }
  ~GuardScope() { --detail::t_guard.depth; }
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;
  // True when this is the outermost exported call on the thread.
  static bool outermost() noexcept { return detail::t_guard.depth == 1; }
  // True outside every exported call.
  static bool outside() noexcept { return detail::t_guard.depth == 0; }
};

// Run f; on any exception record it and return `on_error`.
template <class R, class F>
R guard(R on_error, F&& f) noexcept {
  GuardScope scope;
  try {
    return f();
  } catch (...) {
    record_current_exception();
    return on_error;
  }
}

// Run f; on any exception record it and return on_error() (a non-throwing
// callable), for failure values too large to build on every call.
template <class E, class F>
auto guard_else(E&& on_error, F&& f) noexcept -> decltype(f()) {
  GuardScope scope;
  try {
    return f();
  } catch (...) {
    record_current_exception();
    return on_error();
  }
}

// Run f (which returns an int code); on an exception return the exception's code.
template <class F>
int guard_code(F&& f) noexcept {
  GuardScope scope;
  try {
    return f();
  } catch (...) {
    return record_current_exception();
  }
}

// Run f (returning void); exceptions are recorded and swallowed.
template <class F>
void guard_void(F&& f) noexcept {
  GuardScope scope;
  try {
    f();
  } catch (...) {
    record_current_exception();
  }
}

}  // namespace nnc

// Check a caller-supplied condition; on failure throw CCV_NNC_EXEC_INVALID with a message.
#define NNC_CHECK(cond, ...)                              \
  do {                                                    \
    if (!(cond)) ::nnc::fail(CCV_NNC_EXEC_INVALID, __VA_ARGS__); \
  } while (0)
