#include "core/stream_errors.hpp"

#include "core/error.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

void StreamErrors::add(int code, std::string message) {
  if (count_++ > 0) return;
  code_ = code == CCV_NNC_EXEC_SUCCESS ? CCV_NNC_EXEC_INVALID : code;
  first_ = message.empty() ? format("a command on a stream failed with %d", code) : std::move(message);
}

void StreamErrors::merge(StreamErrors& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    code_ = other.code_;
    first_ = std::move(other.first_);
  }
  count_ += other.count_;
  other.clear();
}

std::string StreamErrors::message() const {
  if (count_ == 0) return {};
  if (count_ == 1) return first_;
  return format("%s (and %lld further error%s on this stream)", first_.c_str(), static_cast<long long>(count_ - 1),
                count_ > 2 ? "s" : "");
}

void StreamErrors::clear() {
  code_ = CCV_NNC_EXEC_SUCCESS;
  first_.clear();
  first_.shrink_to_fit();
  count_ = 0;
}

DeviceErrorLog::DeviceErrorLog(int slots) : what_(static_cast<size_t>(slots > 0 ? slots : 1)) {}

int DeviceErrorLog::reserve(const char* what) {
  if (count_ == slots()) return -1;
  const int slot = (head_ + count_) % slots();
  what_[static_cast<size_t>(slot)] = what ? what : "a GPU command";
  count_++;
  return slot;
}

DeviceErrorLog::Span DeviceErrorLog::in_use() const { return {head_, count_}; }

void DeviceErrorLog::drain(Span span, const int* values, StreamErrors& errors, DescribeFlag describe) {
  NNC_CHECK(span.count >= 0 && span.count <= count_ && (span.count == 0 || span.first == head_),
            "DeviceErrorLog::drain: slots %d..+%d are not the oldest in use (%d..+%d)", span.first, span.count, head_,
            count_);
  NNC_CHECK(span.count == 0 || values, "DeviceErrorLog::drain: values is NULL");
  for (int i = 0; i < span.count; i++) {
    std::string& what = what_[static_cast<size_t>((head_ + i) % slots())];
    if (values[i] != 0) {
      const std::string words = describe ? describe(what.c_str(), values[i]) : format("bad input (flag %d)", values[i]);
      errors.add(CCV_NNC_EXEC_INVALID, format("%s on a GPU stream: %s", what.c_str(), words.c_str()));
    }
    what.clear();
  }
  head_ = (head_ + span.count) % slots();
  count_ -= span.count;
}

}  // namespace nnc
