// CPU_OPT kernels of INDEX_SELECT on tensors whose rows (axis 0) are packed
// inside, at any row stride (whole tensors, and views that pick rows or a
// run of them): the forward copies whole rows of any type, threaded over
// rows; the backward (fp32 / fp64) splits the columns over the threads, each
// zeroing its columns of dx and adding the selected rows of g into them, so
// no two threads write one element and repeated indices need no atomics.
#include <algorithm>
#include <cstring>

#include "cmd/common/strided.hpp"
#include "cmd/index/index.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::index {

namespace {

constexpr size_t kParallelBytes = size_t{1} << 16;

// Axes 1.. packed among themselves (the row stride is free).
bool rows_packed(const ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t);
  int64_t want = 1;
  for (int d = l.nd - 1; d >= 1; d--) {
    if (l.dim[d] != 1 && l.stride[d] != want) return false;
    want *= l.dim[d];
  }
  return true;
}

size_t row_elements(const Layout& l) {
  size_t n = 1;
  for (int d = 1; d < l.nd; d++) n *= static_cast<size_t>(l.dim[d]);
  return n;
}

template <class T>
void scatter_add(const Layout& g, const Layout& dx, const int64_t* rows) {
  const size_t row = row_elements(dx), n = static_cast<size_t>(g.dim[0]), R = static_cast<size_t>(dx.dim[0]);
  const T* gp = reinterpret_cast<const T*>(g.data);
  T* dp = reinterpret_cast<T*>(dx.data);
  const int64_t gs = g.stride[0], ds = dx.stride[0];
  const size_t threads = thread_count();
  const size_t bytes = (n + R) * row * sizeof(T);
  const size_t blocks = bytes >= kParallelBytes && threads > 1 ? std::min(threads, std::max<size_t>(1, row / 64)) : 1;
  range_parallel(blocks, blocks > 1 ? 0 : 2, 1, [&](size_t b0, size_t b1) {
    for (size_t b = b0; b < b1; b++) {
      const size_t c0 = row * b / blocks, c1 = row * (b + 1) / blocks;
      for (size_t r = 0; r < R; r++) {
        T* d = dp + static_cast<int64_t>(r) * ds;
        for (size_t c = c0; c < c1; c++) d[c] = T(0);
      }
      for (size_t i = 0; i < n; i++) {
        const T* s = gp + static_cast<int64_t>(i) * gs;
        T* d = dp + rows[i] * ds;
        for (size_t c = c0; c < c1; c++) d[c] += s[c];
      }
    }
  });
}

}  // namespace

bool opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool forward = cmd.cmd == CCV_NNC_INDEX_SELECT_FORWARD;
  if (input_size < (forward ? 2 : 3) || output_size < 1) return false;
  const ccv_nnc_tensor_t* a = inputs[0];
  const ccv_nnc_tensor_t* b = outputs[0];
  if (!a || !b || !inputs[forward ? 1 : 2]) return false;
  if (!forward) {
    const int t = CCV_GET_DATA_TYPE(a->info.datatype);
    if (t != CCV_32F && t != CCV_64F) return false;
  }
  return rows_packed(a) && rows_packed(b);
}

NNC_KERNEL(forward_opt) {
  const Layout x = layout_of(inputs[0], "x"), y = layout_of(outputs[0], "y");
  const size_t n = static_cast<size_t>(y.dim[0]);
  int64_t* rows = static_cast<int64_t*>(workspace(stream_context, n * sizeof(int64_t)));
  read_rows(inputs[1], x.dim[0], "INDEX_SELECT_FORWARD", rows);
  const size_t bytes = row_elements(y) * y.element_size;
  const int64_t xs = x.stride[0] * static_cast<int64_t>(x.element_size),
                ys = y.stride[0] * static_cast<int64_t>(y.element_size);
  range_parallel(n, n * bytes >= kParallelBytes ? 0 : n + 1, std::max<size_t>(1, 16384 / std::max<size_t>(bytes, 1)),
                 [&](size_t i0, size_t i1) {
                   for (size_t i = i0; i < i1; i++)
                     std::memcpy(y.data + static_cast<int64_t>(i) * ys, x.data + rows[i] * xs, bytes);
                 });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_opt) {
  const Layout g = layout_of(inputs[0], "g"), dx = layout_of(outputs[0], "dx");
  const size_t n = static_cast<size_t>(g.dim[0]);
  int64_t* rows = static_cast<int64_t*>(workspace(stream_context, n * sizeof(int64_t)));
  read_rows(inputs[2], dx.dim[0], "INDEX_SELECT_BACKWARD", rows);
  if (g.datatype == CCV_64F)
    scatter_add<double>(g, dx, rows);
  else
    scatter_add<float>(g, dx, rows);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::index
