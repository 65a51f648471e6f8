// The bookkeeping of stream failures (core/stream_errors.hpp) and the words
// for the GPU kernels' bad-input flags (cmd/common/gpu_flags.hpp).
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "cmd/common/gpu_flags.hpp"
#include "core/error.hpp"
#include "core/stream_errors.hpp"
#include "nnc/ccv_nnc.h"

namespace {

using nnc::DeviceErrorLog;
using nnc::StreamErrors;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(StreamErrors, KeepsTheFirstFailureWholeAndCountsTheOthers) {
  StreamErrors e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.code(), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(e.message(), "");
  e.add(CCV_NNC_EXEC_OOM, "first");
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(e.code(), CCV_NNC_EXEC_OOM);
  EXPECT_EQ(e.message(), "first");
  e.add(CCV_NNC_EXEC_INVALID, "second");
  EXPECT_EQ(e.code(), CCV_NNC_EXEC_OOM);
  EXPECT_EQ(e.count(), 2);
  EXPECT_EQ(e.message(), "first (and 1 further error on this stream)");
  e.add(CCV_NNC_EXEC_INVALID, "third");
  EXPECT_EQ(e.message(), "first (and 2 further errors on this stream)");
  e.clear();
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.message(), "");
  // No message: one that names the code; a success code is still a failure.
  e.add(CCV_NNC_EXEC_NO_KERNEL, "");
  EXPECT_EQ(e.message(), "a command on a stream failed with -2");
  e.clear();
  e.add(CCV_NNC_EXEC_SUCCESS, "odd");
  EXPECT_EQ(e.code(), CCV_NNC_EXEC_INVALID);
}

TEST(StreamErrors, MergeKeepsTheOlderFirstAndAddsTheCounts) {
  StreamErrors a, b, c;
  b.add(CCV_NNC_EXEC_INVALID, "b1");
  b.add(CCV_NNC_EXEC_INVALID, "b2");
  a.merge(b);  // into an empty one: b's first becomes a's
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(a.message(), "b1 (and 1 further error on this stream)");
  c.add(CCV_NNC_EXEC_OOM, "c1");
  a.merge(c);
  EXPECT_EQ(a.count(), 3);
  EXPECT_EQ(a.code(), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(a.message(), "b1 (and 2 further errors on this stream)");
  a.merge(c);  // empty: nothing changes
  EXPECT_EQ(a.count(), 3);
}

std::string describe(const char* what, int value) { return std::string(what) + "=" + std::to_string(value); }

TEST(DeviceErrorLog, SlotsAreLentInOrderUntilFullThenFreedByADrain) {
  DeviceErrorLog log(3);
  EXPECT_EQ(log.slots(), 3);
  EXPECT_EQ(log.reserve("A"), 0);
  EXPECT_EQ(log.reserve("B"), 1);
  EXPECT_EQ(log.reserve("C"), 2);
  EXPECT_EQ(log.reserve("D"), -1);  // full
  DeviceErrorLog::Span span = log.in_use();
  EXPECT_EQ(span.first, 0);
  EXPECT_EQ(span.count, 3);
  StreamErrors errors;
  const int values[3] = {0, 7, 9};  // B and C found bad input
  log.drain(span, values, errors, describe);
  EXPECT_EQ(errors.count(), 2);
  EXPECT_EQ(errors.message(), "B on a GPU stream: B=7 (and 1 further error on this stream)");
  EXPECT_EQ(log.in_use().count, 0);
  // The ring goes on where it was: slot 0 again after a wrap.
  EXPECT_EQ(log.reserve("E"), 0);
}

TEST(DeviceErrorLog, APrefixDrainKeepsTheLaterSlotsAndTheRingWraps) {
  DeviceErrorLog log(4);
  for (const char* w : {"a", "b", "c"}) log.reserve(w);
  StreamErrors errors;
  const int zeros[4] = {};
  log.drain({0, 2}, zeros, errors, describe);  // a, b done; c lent after the wait began
  EXPECT_TRUE(errors.empty());
  DeviceErrorLog::Span span = log.in_use();
  EXPECT_EQ(span.first, 2);
  EXPECT_EQ(span.count, 1);
  EXPECT_EQ(log.reserve("d"), 3);
  EXPECT_EQ(log.reserve("e"), 0);  // wrapped
  EXPECT_EQ(log.reserve("f"), 1);
  EXPECT_EQ(log.reserve("g"), -1);
  span = log.in_use();
  EXPECT_EQ(span.first, 2);
  EXPECT_EQ(span.count, 4);
  const int values[4] = {0, 0, 5, 6};  // c, d clean; e, f bad: e is first
  log.drain(span, values, errors, describe);
  EXPECT_EQ(errors.message(), "e on a GPU stream: e=5 (and 1 further error on this stream)");
  EXPECT_EQ(log.in_use().count, 0);
}

TEST(DeviceErrorLog, ADrainThatIsNotTheOldestSlotsIsRefused) {
  DeviceErrorLog log(4);
  log.reserve("a");
  log.reserve("b");
  StreamErrors errors;
  const int values[4] = {1, 1, 1, 1};
  EXPECT_THROW(log.drain({1, 1}, values, errors, describe), nnc::Error);  // not the oldest
  EXPECT_THROW(log.drain({0, 3}, values, errors, describe), nnc::Error);  // more than lent
  EXPECT_THROW(log.drain({0, 1}, nullptr, errors, describe), nnc::Error);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(log.in_use().count, 2);  // untouched
  log.drain({0, 0}, nullptr, errors, describe);  // nothing: fine
  EXPECT_EQ(log.in_use().count, 2);
}

TEST(DeviceErrorLog, ManyBadCallsBetweenWaitsAreCountedNotLost) {
  // More bad calls than slots: the owner drains when full (as error_slot
  // does), and every bad call is still counted in the stream's errors.
  DeviceErrorLog log(4);
  StreamErrors errors;
  std::vector<int> device(4, 0);
  int bad = 0;
  for (int call = 0; call < 11; call++) {
    int slot = log.reserve(("call" + std::to_string(call)).c_str());
    if (slot < 0) {
      const DeviceErrorLog::Span span = log.in_use();
      std::vector<int> values;
      for (int i = 0; i < span.count; i++) values.push_back(device[(span.first + i) % 4]);
      log.drain(span, values.data(), errors, describe);
      for (int i = 0; i < span.count; i++) device[(span.first + i) % 4] = 0;
      slot = log.reserve(("call" + std::to_string(call)).c_str());
    }
    ASSERT_GE(slot, 0);
    if (call % 3 == 1) {
      device[slot] = 100 + call;
      bad++;
    }
  }
  const DeviceErrorLog::Span span = log.in_use();
  std::vector<int> values;
  for (int i = 0; i < span.count; i++) values.push_back(device[(span.first + i) % 4]);
  log.drain(span, values.data(), errors, describe);
  EXPECT_EQ(bad, 4);  // calls 1, 4, 7, 10
  EXPECT_EQ(errors.count(), bad);
  EXPECT_EQ(errors.message(), "call1 on a GPU stream: call1=101 (and 3 further errors on this stream)");
}

// The words must say what the synchronous call says (cuda/index_gpu.cpp,
// loss_optim_gpu.cpp, lstm_gpu.cpp, misc_gpu.cpp word the same positions from
// the same encodings), with the kind of error first.
TEST(GpuFlags, EachKernelsEncodingIsDecodedToItsPosition) {
  using nnc::describe_gpu_flag;
  // first + 1 (atomicCAS from 0)
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_INDEX_SELECT_FORWARD", 6), "row index out of range: indices[5] is outside the rows");
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_INDEX_SELECT_BACKWARD", 1), "row index out of range: indices[0] is outside the rows");
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD", 4),
            "label out of range: the label of row 3 is not a class index in [0, classes)");
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD", 1),
            "label out of range: the label of row 0 is not a class index in [0, classes)");
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD", 12),
            "label out of range: the label of row 11 is not a class index in [0, classes)");
  EXPECT_TRUE(has(describe_gpu_flag("CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD", 2), "row 1 is not"));
  // INT_MAX - first (atomicMax)
  EXPECT_TRUE(has(describe_gpu_flag("CCV_NNC_LSTM_FORWARD", INT_MAX - 3), "sequence length out of range: xs[3] is not"));
  EXPECT_TRUE(has(describe_gpu_flag("CCV_NNC_ROI_ALIGN_BACKWARD", INT_MAX), "box not finite: box 0 has a value"));
  EXPECT_TRUE(has(describe_gpu_flag("CCV_NNC_NMS_BACKWARD", INT_MAX - 17), "index out of range: entry 17 of c"));
  // HISTOGRAM: 1 + 2 i for a NaN edges[i], 2 + 2 i for edges[i - 1] > edges[i]
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_HISTOGRAM_FORWARD", 1 + 2 * 4), "bad bin edges: edges[4] is NaN");
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_HISTOGRAM_FORWARD", 2 + 2 * 4),
            "bad bin edges: edges must ascend (edges[3] > edges[4])");
  // Anything else: the raw value, never a crash (NULL too).
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_EWSUM_FORWARD", 42), "bad input found on the device (flag 42)");
  EXPECT_EQ(describe_gpu_flag(nullptr, 3), "bad input found on the device (flag 3)");
  EXPECT_EQ(describe_gpu_flag("CCV_NNC_NMS_FORWARD", 3), "bad input found on the device (flag 3)");
  EXPECT_EQ(describe_gpu_flag("INDEX_SELECT", 2), "row index out of range: indices[1] is outside the rows");
}

}  // namespace
