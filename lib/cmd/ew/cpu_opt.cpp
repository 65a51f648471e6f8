// CPU_OPT kernels of EWSUM for fp32 and fp64: packed tensors are summed as
// flat arrays (AVX2 for fp32 when the CPU has it), views row by row through a
// Walk; large sums are split over the thread pool. Nothing allocates.
#include <cstdint>

#include "cmd/common/copy.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/ew/ew.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

namespace {

// Below this many elements the sum stays on the calling thread.
constexpr size_t kParallelSum = size_t{1} << 16;
// Up to this many packed elements skip the vector and thread machinery.
constexpr size_t kSmall = 8;
// Inputs one pass handles; more go to the reference loop (rare).
constexpr int kMaxInputs = kMaxWalkOperands - 1;

template <class T>
void sum_packed(T* y, const T* const* x, int n, size_t count) {
  if constexpr (sizeof(T) == 4) {
    if (cpu_features().avx2) {
      sum_f32_avx2(y, x, n, count);
      return;
    }
  }
  if (n == 1) {
    if (y != x[0])
      for (size_t i = 0; i < count; i++) y[i] = x[0][i];
    return;
  }
  for (size_t i = 0; i < count; i++) {
    T s = x[0][i];
    for (int k = 1; k < n; k++) s += x[k][i];
    y[i] = s;
  }
}

template <class T>
void sum_strided(T* y, int64_t ys, const T* const* x, const int64_t* xs, int n, size_t count) {
  for (size_t i = 0; i < count; i++) {
    const int64_t j = static_cast<int64_t>(i);
    T s = x[0][j * xs[0]];
    for (int k = 1; k < n; k++) s += x[k][j * xs[k]];
    y[j * ys] = s;
  }
}

template <class T>
int sum(ccv_nnc_tensor_t* const* inputs, int n, ccv_nnc_tensor_t* out) {
  bool packed = CCV_IS_TENSOR_CONTIGUOUS(out);
  for (int i = 0; i < n && packed; i++) packed = CCV_IS_TENSOR_CONTIGUOUS(inputs[i]);
  if (packed) {
    size_t count = 1;
    for (int d = 0; d < kMaxDim && out->info.dim[d]; d++) count *= static_cast<size_t>(out->info.dim[d]);
    if (count <= kSmall) {
      // A handful of elements (a graph's scalars): the loop alone, left to
      // right like the vector code, so results do not depend on the size.
      T* y = reinterpret_cast<T*>(out->data.u8);
      for (size_t i = 0; i < count; i++) {
        T s = reinterpret_cast<const T*>(inputs[0]->data.u8)[i];
        for (int k = 1; k < n; k++) s += reinterpret_cast<const T*>(inputs[k]->data.u8)[i];
        y[i] = s;
      }
      return CCV_NNC_EXEC_SUCCESS;
    }
    const T* x[kMaxInputs];
    for (int i = 0; i < n; i++) x[i] = reinterpret_cast<const T*>(inputs[i]->data.u8);
    T* y = reinterpret_cast<T*>(out->data.u8);
    range_parallel(count, kParallelSum, kParallelSum / 4, [&](size_t b, size_t e) {
      const T* xb[kMaxInputs];
      for (int i = 0; i < n; i++) xb[i] = x[i] + b;
      sum_packed(y + b, xb, n, e - b);
    });
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Layout y = layout_of(out, "EWSUM output");
  Layout xl[kMaxInputs];
  const int64_t* strides[kMaxWalkOperands];
  strides[0] = y.stride.data();
  for (int i = 0; i < n; i++) {
    xl[i] = layout_of(inputs[i], "EWSUM input");
    strides[i + 1] = xl[i].stride.data();
  }
  Walk w;
  make_walk(w, y.dim.data(), y.nd, n + 1, strides);
  walk_parallel(w, kParallelSum, [&](const int64_t* off, size_t count) {
    const T* xb[kMaxInputs];
    int64_t xs[kMaxInputs];
    for (int i = 0; i < n; i++) {
      xb[i] = reinterpret_cast<const T*>(xl[i].data) + off[i + 1];
      xs[i] = w.inner_stride(i + 1);
    }
    T* yb = reinterpret_cast<T*>(y.data) + off[0];
    if (w.unit_inner())
      sum_packed(yb, xb, n, count);
    else
      sum_strided(yb, w.inner_stride(0), xb, xs, n, count);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

NNC_KERNEL(ewsum_forward_opt) {
  if (input_size > kMaxInputs)
    return ewsum_forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (CCV_GET_DATA_TYPE(outputs[0]->info.datatype) == CCV_64F) return sum<double>(inputs, input_size, outputs[0]);
  return sum<float>(inputs, input_size, outputs[0]);
}

NNC_KERNEL(ewsum_backward_opt) {
  const ccv_nnc_tensor_t* g = input_size > 0 ? inputs[0] : nullptr;
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    // dx may be g itself (any pair is allowed in place): nothing to copy.
    if (g && outputs[i]->data.u8 == g->data.u8 && !CCV_IS_TENSOR_VIEW(g) && !CCV_IS_TENSOR_VIEW(outputs[i])) continue;
    if (g)
      util::opt_copy(g, outputs[i]);
    else
      util::opt_fill(outputs[i], 1.0);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::ew
