#include "core/error.hpp"

#include <cstdio>
#include <vector>

namespace nnc {

namespace {
thread_local std::string t_error_message;
}

std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = vformat(fmt, args);
  va_end(args);
  return out;
}

void fail(int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = vformat(fmt, args);
  va_end(args);
  throw Error(code, std::move(message));
}

void set_error_message(const std::string& message) {
  t_error_message = message;
  detail::t_guard.error_set = true;
}
const std::string& error_message() {
  static const std::string none;
  return detail::t_guard.error_set ? t_error_message : none;
}
void clear_error_message() { detail::t_guard.error_set = false; }

namespace {
// Store a message from a catch block; the flag is set only once the text is in place.
void store(const char* text) noexcept {
  try {
    t_error_message = text;
    detail::t_guard.error_set = true;
  } catch (...) {
    detail::t_guard.error_set = false;
  }
}
}  // namespace

int record_current_exception() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    store(e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    store("out of memory");
    return CCV_NNC_EXEC_OOM;
  } catch (const std::exception& e) {
    try {
      const std::string text = std::string("internal error: ") + e.what();
      store(text.c_str());
    } catch (...) {
      store("internal error");
    }
    return CCV_NNC_EXEC_INVALID;
  } catch (...) {
    store("internal error: unknown exception");
    return CCV_NNC_EXEC_INVALID;
  }
}

}  // namespace nnc
