// CPU_OPT kernels of ADD, MUL and SCALAR_MUL (elementwise.cpp) for fp32 and
// fp64. Forward: the walk of ew/runs.hpp over y with broadcast operands at
// stride 0, so a bias row over a matrix, a per-channel vector over NCHW (a
// scalar per run) or NHWC (a row per run) and a scalar all reach the
// vectorised loops as contiguous runs. Backward: the sums over broadcast
// dimensions in per-thread partial blocks (ew::reduce_runs).
#include "cmd/blas/elementwise.hpp"
#include "cmd/common/checks.hpp"
#include "cmd/common/ew_loops.hpp"
#include "cmd/common/runs.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::blas_ew {

namespace {

template <class T>
T* ptr(const Layout& l) {
  return reinterpret_cast<T*>(l.data);
}

template <class T>
int forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* out) {
  const ew::Loops<T>& L = ew::loops<T>();
  const uint32_t op = cmd.cmd & ~1u;
  const T p = static_cast<T>(cmd.info.blas.a[0]), q = static_cast<T>(cmd.info.blas.a[1]);
  const Layout y = layout_of(out, "y");
  const Layout a = layout_of(inputs[0], "a");
  int64_t as[kMaxDim];
  ew::broadcast_strides(a, y, as);
  if (op == CCV_NNC_SCALAR_MUL_FORWARD) {
    const T* x[] = {ptr<T>(a)};
    const int64_t* xs[] = {as};
    ew::for_runs<T, 1>(y.dim.data(), y.nd, ptr<T>(y), y.stride.data(), x, xs, 0u,
                       [&](T* o, const T* const* r, const bool*, size_t n) { L.scale(o, r[0], n, p); });
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Layout b = layout_of(inputs[1], "b");
  int64_t bs[kMaxDim];
  ew::broadcast_strides(b, y, bs);
  const T* x[] = {ptr<T>(a), ptr<T>(b)};
  const int64_t* xs[] = {as, bs};
  // Outputs far beyond the caches are written with non-temporal stores.
  const bool stream = y.count() * sizeof(T) >= kStreamBytes;
  if (op == CCV_NNC_ADD_FORWARD) {
    const auto add = stream ? L.add_nt : L.add;
    ew::for_runs<T, 2>(y.dim.data(), y.nd, ptr<T>(y), y.stride.data(), x, xs, 3u,
                       [&](T* o, const T* const* r, const bool* sc, size_t n) {
                         add(o, r[0], r[1], n, sc[0] ? ew::kSV : sc[1] ? ew::kVS : ew::kVV, p, q);
                       });
  } else {
    const auto mul = stream ? L.mul_nt : L.mul;
    ew::for_runs<T, 2>(y.dim.data(), y.nd, ptr<T>(y), y.stride.data(), x, xs, 3u,
                       [&](T* o, const T* const* r, const bool* sc, size_t n) {
                         mul(o, r[0], r[1], n, sc[0] ? ew::kSV : sc[1] ? ew::kVS : ew::kVV, p);
                       });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs,
             int output_size, ccv_nnc_stream_context_t* stream) {
  const uint32_t op = cmd.cmd & ~1u;
  const Layout g = layout_of(inputs[0], "g");
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    const Layout d = layout_of(outputs[j], "gradient");
    const T scale = static_cast<T>(op == CCV_NNC_ADD_FORWARD ? cmd.info.blas.a[j] : cmd.info.blas.a[0]);
    int64_t ds[kMaxDim];
    ew::broadcast_strides(d, g, ds);
    if (op == CCV_NNC_MUL_FORWARD) {
      const Layout o = layout_of(inputs[2 - j], "operand");
      int64_t os[kMaxDim];
      ew::broadcast_strides(o, g, os);
      ew::reduce_runs<T>(stream, g.dim.data(), g.nd, d, ds, ptr<T>(g), g.stride.data(), ptr<T>(o), os, scale);
    } else {
      ew::reduce_runs<T>(stream, g.dim.data(), g.nd, d, ds, ptr<T>(g), g.stride.data(), nullptr, nullptr, scale);
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

NNC_KERNEL(forward_opt) {
  if (CCV_GET_DATA_TYPE(outputs[0]->info.datatype) == CCV_64F) return forward<double>(cmd, inputs, outputs[0]);
  return forward<float>(cmd, inputs, outputs[0]);
}

NNC_KERNEL(backward_opt) {
  // The first gradient must not overwrite what the second reads.
  if (output_size > 1 && outputs[0] && outputs[1])
    for (int i = 0; i < input_size; i++)
      if (overlaps(outputs[0], inputs[i]))
        return backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_64F)
    return backward<double>(cmd, inputs, outputs, output_size, stream_context);
  return backward<float>(cmd, inputs, outputs, output_size, stream_context);
}

}  // namespace nnc::blas_ew
