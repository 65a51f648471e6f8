// CPU_OPT kernels of the activation family for fp32 tensors and views whose
// innermost dimension is unit-stride. Operands are walked as runs of the
// innermost (merged) dimension (cmd/util/strided.hpp), so a packed tensor is
// one run split over the library's pool and a view is rows; each run goes
// through the loop table of this CPU (AVX-512, AVX2 + FMA, or scalar, picked
// once). Nothing is allocated per call.
#include <algorithm>
#include <cstdint>

#include "cmd/activation/activation.hpp"
#include "cmd/common/strided.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"
#include "core/vmath_scalar.hpp"

namespace nnc::activation {

namespace scalar {
namespace {
using V = vmath::Scalar;
constexpr const char* kTableName = "scalar";
#include "cmd/activation/loops_body.hpp"
}  // namespace
}  // namespace scalar

const Loops kLoopsScalar = scalar::kTable;

const Loops* loops_avx2_if_supported() {
  static const bool ok = cpu_features().avx2;
  return ok ? &kLoopsAvx2 : nullptr;
}

const Loops* loops_avx512_if_supported() {
  return cpu_features().avx512 ? &kLoopsAvx512 : nullptr;
}

const Loops& loops() {
  static const Loops* const best = [] {
    if (const Loops* l = loops_avx512_if_supported()) return l;
    if (const Loops* l = loops_avx2_if_supported()) return l;
    return &kLoopsScalar;
  }();
  return *best;
}

namespace {

// Below this many elements a command stays on the calling thread (PyTorch's
// element-wise grain is 32768 too): the cheap ops (a compare and a select per
// element) are bound by memory and gain from a second thread only on large
// tensors; for the ones with an exp or a division, smaller tensors finish
// before a second thread would have started (measured on the 64 x 256 rows of
// bench-act).
size_t parallel_from(Op op, bool backward) {
  const bool cheap = op == kRelu || op == kLeakyRelu || (backward && (op == kSigmoid || op == kTanh));
  return cheap ? size_t{1} << 16 : size_t{1} << 15;
}

bool unit_inner(const ccv_nnc_tensor_t* t) {
  if (!t) return true;
  if (CCV_GET_DATA_TYPE(t->info.datatype) != CCV_32F) return false;
  if (!CCV_IS_TENSOR_VIEW(t)) return true;
  const int nd = nd_of(t->info.dim);
  return nd == 0 || reinterpret_cast<const ccv_nnc_tensor_view_t*>(t)->stride[nd - 1] == 1;
}

// False, running nothing, when the walk's innermost run is not contiguous
// for every operand: a view whose last stride is 1 can still walk with a
// larger one once extents of 1 are dropped (a [6, 1] column of a wider
// tensor); the element-by-element kernel takes those.
template <int K>
bool run(const Layout* const (&ops)[K], size_t from, const auto& body) {
  Walk w;
  const int64_t* strides[K];
  for (int k = 0; k < K; k++) strides[k] = ops[k]->stride.data();
  make_walk(w, ops[0]->dim.data(), ops[0]->nd, K, strides);
  if (!w.unit_inner()) return false;
  walk_parallel(w, from, body);
  return true;
}

}  // namespace

bool opt_accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size) {
  for (int i = 0; i < input_size; i++)
    if (!unit_inner(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!unit_inner(outputs[i])) return false;
  // SIGMOID / TANH backward from x alone: CPU_REF recomputes y.
  if (cmd.cmd == CCV_NNC_SIGMOID_BACKWARD || cmd.cmd == CCV_NNC_TANH_BACKWARD) return input_size > 2 && inputs[2];
  return true;
}

NNC_KERNEL(forward_opt) {
  const Op op = op_of(cmd);
  const Layout x = layout_of(inputs[0], "x");
  const Layout y = layout_of(outputs[0], "y");
  if (x.count() == 0) return CCV_NNC_EXEC_SUCCESS;
  const auto f = loops().forward[op];
  const float a = cmd.info.leaky_relu.negative_slope;
  float* const xp = reinterpret_cast<float*>(x.data);
  float* const yp = reinterpret_cast<float*>(y.data);
  const Layout* const ops[2] = {&y, &x};
  if (!run(ops, parallel_from(op, false), [&](const int64_t* off, size_t n) { f(xp + off[1], yp + off[0], n, a); }))
    return forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_opt) {
  const Op op = op_of(cmd);
  ccv_nnc_tensor_t* const xt = input_size > 1 ? inputs[1] : nullptr;
  ccv_nnc_tensor_t* const yt = input_size > 2 ? inputs[2] : nullptr;
  const bool use_y = (backward_uses_output(op) && yt) || !xt;  // LEAKY_RELU may come with y alone
  const Layout g = layout_of(inputs[0], "g");
  const Layout t = layout_of(use_y ? yt : xt, use_y ? "y" : "x");
  const Layout dx = layout_of(outputs[0], "dx");
  if (g.count() == 0) return CCV_NNC_EXEC_SUCCESS;
  const float a = cmd.info.leaky_relu.negative_slope;
  float* const gp = reinterpret_cast<float*>(g.data);
  float* const tp = reinterpret_cast<float*>(t.data);
  float* const dp = reinterpret_cast<float*>(dx.data);
  if (const auto fxy = loops().backward_xy[op]; fxy && xt && yt) {
    const Layout y = layout_of(yt, "y");
    float* const yp = reinterpret_cast<float*>(y.data);
    const Layout* const ops[4] = {&dx, &g, &t, &y};
    if (!run(ops, parallel_from(op, true),
             [&](const int64_t* off, size_t n) { fxy(gp + off[1], tp + off[2], yp + off[3], dp + off[0], n, a); }))
      return backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const auto f = loops().backward[op];
  const Layout* const ops[3] = {&dx, &g, &t};
  if (!run(ops, parallel_from(op, true), [&](const int64_t* off, size_t n) { f(gp + off[1], tp + off[2], dp + off[0], n, a); }))
    return backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::activation
