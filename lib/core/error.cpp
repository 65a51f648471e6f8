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

void set_error_message(const std::string& message) { t_error_message = message; }
const std::string& error_message() { return t_error_message; }
void clear_error_message() { t_error_message.clear(); }

int record_current_exception() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    try { t_error_message = e.what(); } catch (...) {}
    return e.code();
  } catch (const std::bad_alloc&) {
    try { t_error_message = "out of memory"; } catch (...) {}
    return CCV_NNC_EXEC_OOM;
  } catch (const std::exception& e) {
    try { t_error_message = std::string("internal error: ") + e.what(); } catch (...) {}
    return CCV_NNC_EXEC_INVALID;
  } catch (...) {
    try { t_error_message = "internal error: unknown exception"; } catch (...) {}
    return CCV_NNC_EXEC_INVALID;
  }
}

}  // namespace nnc
