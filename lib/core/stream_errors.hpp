// What a stream context remembers of failures until someone is told, and the
// host side of a GPU stream's device error log. Host code only: the CUDA
// module (cuda/stream.cpp) keeps the device array, everything else is here and
// is tested without a GPU (test/unit/stream_errors).
//
//   StreamErrors errors;                 // a stream's failures not yet reported
//   errors.add(CCV_NNC_EXEC_INVALID, "CCV_NNC_X: bad");
//   errors.add(CCV_NNC_EXEC_INVALID, "CCV_NNC_Y: bad");   // counted, not kept
//   errors.message();   // "CCV_NNC_X: bad (and 1 further error on this stream)"
//
//   DeviceErrorLog log(256);             // slots of a device int array
//   int slot = log.reserve("CCV_NNC_INDEX_SELECT_FORWARD");  // a kernel's flag
//   ... the kernel sets device[slot] to a nonzero code on bad input ...
//   DeviceErrorLog::Span span = log.in_use();   // before the host waits
//   ... wait for the stream, copy the span's device ints to `values` ...
//   log.drain(span, values, errors, describe);  // nonzero ones become errors
//
// How the stream reports them (core/stream.cpp): a failure is kept as
// pending until the next ccv_nnc_stream_context_wait, which sets the thread's
// error message and turns it into the stream's held error; the next call that
// queues on the stream (ccv_nnc_cmd_exec, ccv_nnc_graph_run, ...) returns the
// held error's code with its message instead of running, once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnc {

// Failures of a stream not yet reported: the first one whole, the later ones
// counted (a loop of bad calls must not grow without bound, and the first is
// the one that explains the others).
class StreamErrors {
 public:
  // Records a failure. `code` is a CCV_NNC_EXEC_* failure code; an empty
  // message becomes "a command on a stream failed with <code>".
  void add(int code, std::string message);
  // Adds everything `other` holds (its first failure, then its count) after
  // ours, and empties it.
  void merge(StreamErrors& other);
  bool empty() const { return count_ == 0; }
  // Failures recorded since the last clear.
  int64_t count() const { return count_; }
  // The first failure's code (CCV_NNC_EXEC_SUCCESS when empty).
  int code() const { return code_; }
  // The first failure's message, with " (and N further error(s) on this
  // stream)" when there were more; "" when empty.
  std::string message() const;
  void clear();

 private:
  int code_ = 0;
  std::string first_;
  int64_t count_ = 0;
};

// Turns a kernel's nonzero flag value into the words of an error (without the
// command's name, which the log adds).
using DescribeFlag = std::string (*)(const char* what, int value);

// The host half of a GPU stream's device error log: a ring of `slots` device
// ints, each lent to one kernel call between two waits of the host. A slot
// starts at 0 (the device array is cleared when it is made and after each
// drain); the call's kernels set it to a nonzero code on bad input. The log
// keeps, per slot in use, the name of the command it was lent to.
//
// Not thread-safe: its owner (the module's stream object) locks around it.
class DeviceErrorLog {
 public:
  explicit DeviceErrorLog(int slots);
  int slots() const { return static_cast<int>(what_.size()); }
  // Lends the next free slot to a call of `what` (copied); -1 when every slot
  // is lent (drain first: the caller waits for the stream and drains).
  int reserve(const char* what);
  // Slots lent and not yet drained, oldest first: slot (first + i) % slots()
  // for i < count.
  struct Span {
    int first = 0;
    int count = 0;
  };
  Span in_use() const;
  // After the host waited for the work of every call in `span` (taken with
  // in_use() before that wait): values[i] is the device int of the span's
  // i-th slot. Each nonzero value adds a CCV_NNC_EXEC_INVALID error to
  // `errors`, in the order the calls were made: "<what> on a GPU stream:
  // <describe(what, value)>". The span's slots become free (the caller clears
  // their device ints before lending them again). `span` must be a prefix of
  // in_use() (slots lent later stay lent); anything else is refused (throws).
  void drain(Span span, const int* values, StreamErrors& errors, DescribeFlag describe);

 private:
  std::vector<std::string> what_;
  int head_ = 0;   // oldest slot in use
  int count_ = 0;  // slots in use
};

}  // namespace nnc
