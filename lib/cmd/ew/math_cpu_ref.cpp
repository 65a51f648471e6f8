// CPU_REF kernels of the element-wise math commands (math.cpp): one element at
// a time through each tensor's own strides, in double, rounded once into the
// output type. Every element of every input at an index is read before any
// output at that index is written, so outputs may alias inputs.
#include <cmath>
#include <vector>

#include "cmd/ew/math.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

namespace {

// Clamp bounds from the command (NaN: no bound).
struct Bounds {
  double lo, hi;
  bool has_lo, has_hi;
};
Bounds bounds_of(const ccv_nnc_cmd_t& cmd) {
  const float lo = cmd.info.clamp.min, hi = cmd.info.clamp.max;
  return {lo, hi, !std::isnan(lo), !std::isnan(hi)};
}

// Weight of operand x against o in MIN / MAX backward (see math.cpp).
double pick_weight(double x, double o, bool is_max, bool for_b) {
  const bool pick = (is_max ? x > o : x < o) || (std::isnan(x) && (!for_b || !std::isnan(o)));
  return pick ? 1.0 : (x == o ? 0.5 : 0.0);
}

}  // namespace

NNC_KERNEL(math_forward_ref) {
  const Op op = op_of(cmd.cmd);
  const Layout y = layout_of(outputs[0], "output");
  std::vector<Layout> x(static_cast<size_t>(input_size));
  for (int i = 0; i < input_size; i++)
    if (inputs[i]) x[static_cast<size_t>(i)] = layout_of(inputs[i], "input");
  const Bounds bd = bounds_of(cmd);
  for_each_index(y.dim.data(), y.nd, [&](const int* index) {
    auto in = [&](int i) {
      return load_double(x[static_cast<size_t>(i)].at(index), x[static_cast<size_t>(i)].datatype);
    };
    double v = 0;
    switch (op) {
      case Op::kProd:
        v = in(0);
        for (int i = 1; i < input_size; i++) v *= in(i);
        break;
      case Op::kDiv:
        v = (inputs[0] ? in(0) : 1.0) / in(1);
        break;
      case Op::kExp:
        v = std::exp(in(0));
        break;
      case Op::kLog:
        v = std::log(in(0));
        break;
      case Op::kSqrt:
        v = std::sqrt(in(0));
        break;
      case Op::kClamp:
        v = in(0);
        if (bd.has_lo && v < bd.lo) v = bd.lo;
        if (bd.has_hi && v > bd.hi) v = bd.hi;
        break;
      case Op::kMin:
      case Op::kMax: {
        const double a = in(0), b = in(1);
        if (std::isnan(a) || std::isnan(b))
          v = std::isnan(a) ? a : b;
        else
          v = op == Op::kMin ? (a < b ? a : b) : (a > b ? a : b);
        break;
      }
    }
    store_double(y.at(index), y.datatype, v);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(math_backward_ref) {
  const Op op = op_of(cmd.cmd);
  std::vector<Layout> in(static_cast<size_t>(input_size)), out(static_cast<size_t>(output_size));
  for (int i = 0; i < input_size; i++)
    if (inputs[i]) in[static_cast<size_t>(i)] = layout_of(inputs[i], "input");
  for (int j = 0; j < output_size; j++)
    if (outputs[j]) out[static_cast<size_t>(j)] = layout_of(outputs[j], "output");
  const Layout& g = in[0];
  const Bounds bd = bounds_of(cmd);
  const int n = op == Op::kProd ? output_size : forward_inputs(op);
  std::vector<double> xv(static_cast<size_t>(n) + 2), dv(static_cast<size_t>(output_size));
  for_each_index(g.dim.data(), g.nd, [&](const int* index) {
    // Read everything at this index first.
    for (int i = 0; i < input_size && i <= n + 1; i++)
      xv[static_cast<size_t>(i)] =
          inputs[i] ? load_double(in[static_cast<size_t>(i)].at(index), in[static_cast<size_t>(i)].datatype) : 0.0;
    const double gv = xv[0];
    auto X = [&](int i) { return xv[static_cast<size_t>(i)]; };
    for (int j = 0; j < output_size; j++) {
      if (!outputs[j]) continue;
      double d = 0;
      switch (op) {
        case Op::kProd: {
          d = gv;
          for (int i = 0; i < n; i++)
            if (i != j) d *= X(1 + i);
          break;
        }
        case Op::kDiv:
          d = j == 0 ? gv / X(2) : -gv * X(3) / X(2);
          break;
        case Op::kExp:
          d = gv * X(2);
          break;
        case Op::kLog:
          d = gv / X(1);
          break;
        case Op::kSqrt:
          d = gv / (2 * X(2));
          break;
        case Op::kClamp: {
          const double yv = X(2);
          const bool inside = (!bd.has_lo || yv > bd.lo) && (!bd.has_hi || yv < bd.hi);
          d = inside ? gv : 0.0;
          break;
        }
        case Op::kMin:
        case Op::kMax:
          d = gv * (j == 0 ? pick_weight(X(1), X(2), op == Op::kMax, false)
                           : pick_weight(X(2), X(1), op == Op::kMax, true));
          break;
      }
      dv[static_cast<size_t>(j)] = d;
    }
    for (int j = 0; j < output_size; j++)
      if (outputs[j])
        store_double(out[static_cast<size_t>(j)].at(index), out[static_cast<size_t>(j)].datatype,
                     dv[static_cast<size_t>(j)]);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::ew
