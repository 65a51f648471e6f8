// CPU_OPT kernels of the element-wise math commands (math.cpp) for fp32 and
// fp64: runs of contiguous elements through the vectorised loops (loops.hpp),
// any strides through for_runs, large tensors on the pool. Cases that would
// need a copy to stay correct (a multi-output backward whose output overlaps
// an input, EWPROD over more than two inputs written into one of its later
// inputs) go to the reference loops.
#include <cmath>
#include <limits>

#include "cmd/common/runs.hpp"
#include "cmd/ew/math.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

namespace {

template <class T>
T* ptr(const Layout& l) {
  return reinterpret_cast<T*>(l.data);
}

template <class T>
int forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* y_t) {
  const Loops<T>& L = loops<T>();
  const Op op = op_of(cmd.cmd);
  const Layout y = layout_of(y_t, "output");
  T* yp = ptr<T>(y);
  const int* dim = y.dim.data();
  const int64_t* ys = y.stride.data();
  if (op == Op::kProd && input_size == 1) {
    const Layout a = layout_of(inputs[0], "input");
    const T* x[] = {ptr<T>(a)};
    const int64_t* xs[] = {a.stride.data()};
    for_runs<T, 1>(dim, y.nd, yp, ys, x, xs, 0u,
                   [&](T* o, const T* const* r, const bool*, size_t n) { L.scale(o, r[0], n, T(1)); });
    return CCV_NNC_EXEC_SUCCESS;
  }
  if (input_size == 2 || op == Op::kProd) {
    // Binary: EWPROD (first two inputs), EWDIV, MIN, MAX.
    const T one = 1;
    const int64_t zero[kMaxDim] = {};
    Layout a, b = layout_of(inputs[1], "input");
    const T* ap = &one;
    const int64_t* as = zero;
    if (inputs[0]) {
      a = layout_of(inputs[0], "input");
      ap = ptr<T>(a);
      as = a.stride.data();
    }
    const T* x[] = {ap, ptr<T>(b)};
    const int64_t* xs[] = {as, b.stride.data()};
    // Outputs far beyond the caches are written with non-temporal stores
    // (EWPROD only; its later inputs are multiplied in through the caches).
    const auto mul = y.count() * sizeof(T) >= kStreamBytes && input_size == 2 ? L.mul_nt : L.mul;
    auto body = [&](T* o, const T* const* r, const bool* sc, size_t n) {
      const int mode = sc[0] ? kSV : sc[1] ? kVS : kVV;
      switch (op) {
        case Op::kDiv:
          L.div(o, r[0], r[1], n, mode, T(1));
          break;
        case Op::kMin:
          L.min(o, r[0], r[1], n, mode);
          break;
        case Op::kMax:
          L.max(o, r[0], r[1], n, mode);
          break;
        default:
          mul(o, r[0], r[1], n, mode, T(1));
          break;
      }
    };
    for_runs<T, 2>(dim, y.nd, yp, ys, x, xs, 3u, body);
    // EWPROD with more inputs: multiply the rest into y one at a time.
    for (int i = 2; i < input_size; i++) {
      const Layout c = layout_of(inputs[i], "input");
      const T* x2[] = {yp, ptr<T>(c)};
      const int64_t* xs2[] = {ys, c.stride.data()};
      for_runs<T, 2>(dim, y.nd, yp, ys, x2, xs2, 0u,
                     [&](T* o, const T* const* r, const bool*, size_t n) { L.mul(o, r[0], r[1], n, kVV, T(1)); });
    }
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Layout a = layout_of(inputs[0], "input");
  const T* x[] = {ptr<T>(a)};
  const int64_t* xs[] = {a.stride.data()};
  const float lo = cmd.info.clamp.min, hi = cmd.info.clamp.max;
  const int cf = (std::isnan(lo) ? 0 : kHasLo) | (std::isnan(hi) ? 0 : kHasHi);
  for_runs<T, 1>(dim, y.nd, yp, ys, x, xs, 0u, [&](T* o, const T* const* r, const bool*, size_t n) {
    switch (op) {
      case Op::kExp:
        L.exp(o, r[0], n);
        break;
      case Op::kLog:
        L.log(o, r[0], n);
        break;
      case Op::kSqrt:
        L.sqrt(o, r[0], n);
        break;
      default:
        L.clamp(o, r[0], n, T(lo), T(hi), cf);
        break;
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

// One gradient: out = f(inputs a, b, c) through for_runs.
template <class T, int K, class F>
void grad(ccv_nnc_tensor_t* out, std::initializer_list<ccv_nnc_tensor_t*> ins, const F& f) {
  const Layout d = layout_of(out, "output");
  Layout l[K];
  const T* x[K];
  const int64_t* xs[K];
  int k = 0;
  for (ccv_nnc_tensor_t* t : ins) {
    l[k] = layout_of(t, "input");
    x[k] = ptr<T>(l[k]);
    xs[k] = l[k].stride.data();
    k++;
  }
  for_runs<T, K>(d.dim.data(), d.nd, ptr<T>(d), d.stride.data(), x, xs, 0u,
                 [&](T* o, const T* const* r, const bool*, size_t n) { f(o, r, n); });
}

template <class T>
int backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* in, int input_size, ccv_nnc_tensor_t* const* out,
             int output_size) {
  const Loops<T>& L = loops<T>();
  const Op op = op_of(cmd.cmd);
  ccv_nnc_tensor_t* g = in[0];
  auto at = [&](int i) { return i < input_size ? in[i] : nullptr; };
  switch (op) {
    case Op::kProd:
      if (output_size == 1) {
        grad<T, 1>(out[0], {g}, [&](T* o, const T* const* r, size_t n) { L.scale(o, r[0], n, T(1)); });
      } else {
        if (out[0])
          grad<T, 2>(out[0], {g, in[2]},
                     [&](T* o, const T* const* r, size_t n) { L.mul(o, r[0], r[1], n, kVV, T(1)); });
        if (output_size > 1 && out[1])
          grad<T, 2>(out[1], {g, in[1]},
                     [&](T* o, const T* const* r, size_t n) { L.mul(o, r[0], r[1], n, kVV, T(1)); });
      }
      break;
    case Op::kDiv:
      // db first: it reads g, y and b, which da (written last) may share.
      if (output_size > 1 && out[1])
        grad<T, 3>(out[1], {g, at(3), in[2]},
                   [&](T* o, const T* const* r, size_t n) { L.muldiv(o, r[0], r[1], r[2], n, T(-1)); });
      if (out[0])
        grad<T, 2>(out[0], {g, in[2]}, [&](T* o, const T* const* r, size_t n) { L.div(o, r[0], r[1], n, kVV, T(1)); });
      break;
    case Op::kExp:
      grad<T, 2>(out[0], {g, in[2]}, [&](T* o, const T* const* r, size_t n) { L.mul(o, r[0], r[1], n, kVV, T(1)); });
      break;
    case Op::kLog:
      grad<T, 2>(out[0], {g, in[1]}, [&](T* o, const T* const* r, size_t n) { L.div(o, r[0], r[1], n, kVV, T(1)); });
      break;
    case Op::kSqrt:
      grad<T, 2>(out[0], {g, in[2]}, [&](T* o, const T* const* r, size_t n) { L.div(o, r[0], r[1], n, kVV, T(0.5)); });
      break;
    case Op::kClamp: {
      const float lo = cmd.info.clamp.min, hi = cmd.info.clamp.max;
      const int cf = (std::isnan(lo) ? 0 : kHasLo) | (std::isnan(hi) ? 0 : kHasHi);
      grad<T, 2>(out[0], {g, in[2]},
                 [&](T* o, const T* const* r, size_t n) { L.clamp_grad(o, r[0], r[1], n, T(lo), T(hi), cf); });
      break;
    }
    case Op::kMin:
    case Op::kMax: {
      const int mf = op == Op::kMax ? kMinMaxIsMax : 0;
      for (int j = 0; j < output_size; j++)
        if (out[j])
          grad<T, 3>(out[j], {g, in[1], in[2]}, [&](T* o, const T* const* r, size_t n) {
            L.minmax_grad(o, r[0], r[1], r[2], n, mf | (j ? kMinMaxForB : 0));
          });
      break;
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

// Whether the optimised forward must leave this call to the reference loops.
bool forward_needs_ref(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* y) {
  if (op_of(cmd.cmd) != Op::kProd) return false;
  for (int i = 2; i < input_size; i++)
    if (overlaps(inputs[i], y)) return true;
  return false;
}

bool backward_needs_ref(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                        ccv_nnc_tensor_t* const* outputs, int output_size) {
  const Op op = op_of(cmd.cmd);
  if (op == Op::kProd && output_size > 2) return true;
  if (output_size < 2) return false;
  // Two gradients: the first written must not be read by the second.
  const int first = op == Op::kDiv ? 1 : 0;
  ccv_nnc_tensor_t* d = outputs[first];
  if (!d || !outputs[1 - first]) return false;
  for (int i = 0; i < input_size; i++)
    if (overlaps(d, inputs[i])) return true;
  return false;
}

}  // namespace

NNC_KERNEL(math_forward_opt) {
  if (forward_needs_ref(cmd, inputs, input_size, outputs[0]))
    return math_forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (CCV_GET_DATA_TYPE(outputs[0]->info.datatype) == CCV_64F)
    return forward<double>(cmd, inputs, input_size, outputs[0]);
  return forward<float>(cmd, inputs, input_size, outputs[0]);
}

NNC_KERNEL(math_backward_opt) {
  if (backward_needs_ref(cmd, inputs, input_size, outputs, output_size))
    return math_backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_64F)
    return backward<double>(cmd, inputs, input_size, outputs, output_size);
  return backward<float>(cmd, inputs, input_size, outputs, output_size);
}

}  // namespace nnc::ew
