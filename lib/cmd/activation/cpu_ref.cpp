// CPU_REF kernels of the activation family: every element in double, through
// each tensor's own strides (any view, any float type, any format). The
// formulas avoid cancellation (sigmoid of a negative x as e / (1 + e), GELU
// through erfc), so they double as the precision reference for CPU_OPT.
#include <algorithm>
#include <cmath>

#include "cmd/activation/activation.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::activation {

namespace {

double sigmoid(double x) {
  const double e = std::exp(-std::fabs(x));
  return x < 0 ? e / (1 + e) : 1 / (1 + e);
}

// Phi(x) = erfc(-x / sqrt 2) / 2.
double ncdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }

double gelu_tanh_2u(double x) { return 2 * kGeluK0 * (x + kGeluK1 * x * x * x); }

double forward_value(Op op, double x, double a) {
  switch (op) {
    case kRelu:
      return x > 0 || std::isnan(x) ? x : 0.0;
    case kLeakyRelu:
      return x > 0 ? x : a * x;
    case kSigmoid:
      return sigmoid(x);
    case kTanh:
      return std::tanh(x);
    case kGelu:
      return x * ncdf(x);
    case kGeluTanh:
      return x * sigmoid(gelu_tanh_2u(x));
    case kSwish:
      return x * sigmoid(x);
    default:
      return NAN;
  }
}

// d f / d x at the forward input x, or, for the ops that read it, at the
// forward output y (t is whichever the backward was given; from_y says which).
double derivative(Op op, double t, bool from_y, double a) {
  switch (op) {
    case kRelu:
      return t > 0 ? 1.0 : 0.0;
    case kLeakyRelu:
      return t > 0 ? 1.0 : a;
    case kSigmoid: {
      const double y = from_y ? t : sigmoid(t);
      return y * (1 - y);
    }
    case kTanh: {
      const double y = from_y ? t : std::tanh(t);
      return (1 - y) * (1 + y);
    }
    case kGelu:
      return ncdf(t) + t * std::exp(-0.5 * t * t) * 0.39894228040143267794;
    case kGeluTanh: {
      // As CPU_OPT: beyond |x| = 20 the derivative is s (0 or 1), also at +-inf.
      if (!std::isnan(t)) t = std::min(20.0, std::max(-20.0, t));
      const double s = sigmoid(gelu_tanh_2u(t));
      return s + 2 * t * s * (1 - s) * kGeluK0 * (1 + 3 * kGeluK1 * t * t);
    }
    case kSwish: {
      const double s = sigmoid(t);
      return s * (1 + t * (1 - s));
    }
    default:
      return NAN;
  }
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Op op = op_of(cmd);
  const double a = cmd.info.leaky_relu.negative_slope;
  const Layout x = layout_of(inputs[0], "x");
  const Layout y = layout_of(outputs[0], "y");
  for_each_index(x.dim.data(), x.nd, [&](const int* i) {
    store_double(y.at(i), y.datatype, forward_value(op, load_double(x.at(i), x.datatype), a));
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Op op = op_of(cmd);
  const double a = cmd.info.leaky_relu.negative_slope;
  ccv_nnc_tensor_t* const xt = input_size > 1 ? inputs[1] : nullptr;
  ccv_nnc_tensor_t* const yt = input_size > 2 ? inputs[2] : nullptr;
  const bool from_y = (backward_uses_output(op) && yt) || !xt;  // LEAKY_RELU may come with y alone
  const Layout g = layout_of(inputs[0], "g");
  const Layout t = layout_of(from_y ? yt : xt, from_y ? "y" : "x");
  const Layout dx = layout_of(outputs[0], "dx");
  for_each_index(g.dim.data(), g.nd, [&](const int* i) {
    const double gv = load_double(g.at(i), g.datatype);
    const double d = derivative(op, load_double(t.at(i), t.datatype), from_y, a);
    // ReLU's dead side gives zero even where g is inf or NaN (a select, as in CPU_OPT).
    store_double(dx.at(i), dx.datatype, op == kRelu ? (d != 0 ? gv : 0.0) : gv * d);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::activation
