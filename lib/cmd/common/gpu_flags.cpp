#include "cmd/common/gpu_flags.hpp"

#include <climits>
#include <cstring>
#include <string_view>

#include "core/error.hpp"

namespace nnc {

namespace {

// "CCV_NNC_INDEX_SELECT_FORWARD" -> "INDEX_SELECT".
std::string_view family_of(const char* what) {
  std::string_view w = what ? what : "";
  if (w.substr(0, 8) == "CCV_NNC_") w.remove_prefix(8);
  for (std::string_view suffix : {std::string_view("_FORWARD"), std::string_view("_BACKWARD")})
    if (w.size() > suffix.size() && w.substr(w.size() - suffix.size()) == suffix) {
      w.remove_suffix(suffix.size());
      break;
    }
  return w;
}

bool backward(const char* what) {
  std::string_view w = what ? what : "";
  return w.size() >= 9 && w.substr(w.size() - 9) == "_BACKWARD";
}

// INT_MAX - first: atomicMax keeps the first position (lstm, roi, nms kernels).
long long from_max(int value) { return static_cast<long long>(INT_MAX) - value; }

}  // namespace

std::string describe_gpu_flag(const char* what, int value) {
  const std::string_view f = family_of(what);
  // index_kernels.cu: atomicCAS(flag, 0, i + 1) of a row index i outside the rows.
  if (f == "INDEX_SELECT") return format("row index out of range: indices[%d] is outside the rows", value - 1);
  // loss_optim_kernels.cu: atomicCAS(flag, 0, r + 1) of a row r whose label is no class.
  if (f == "SOFTMAX_CROSSENTROPY" || f == "CATEGORICAL_CROSSENTROPY")
    return format("label out of range: the label of row %d is not a class index in [0, classes)", value - 1);
  if (f == "LSTM")
    return format("sequence length out of range: xs[%lld] is not a sequence length in 0..T (the time steps)",
                  from_max(value));
  if (f == "ROI_ALIGN")
    return format("box not finite: box %lld has a value that is not finite; its values must be finite",
                  from_max(value));
  if (f == "NMS" && backward(what))
    return format("index out of range: entry %lld of c (row-major) is outside -1 .. n - 1", from_max(value));
  // misc_kernels.cu: 1 + 2 i for a NaN edges[i], 2 + 2 i for edges[i - 1] > edges[i].
  if (f == "HISTOGRAM") {
    const int i = (value - 1) / 2;
    if (value % 2) return format("bad bin edges: edges[%d] is NaN", i);
    return format("bad bin edges: edges must ascend (edges[%d] > edges[%d])", i - 1, i);
  }
  return format("bad input found on the device (flag %d)", value);
}

}  // namespace nnc
