// CPU_REF kernels of the optimisers: one element at a time through each
// tensor's own strides, in double, rounded once into the tensor's type.
#include <array>

#include "cmd/optim/optim.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::optim {

NNC_KERNEL(optim_ref) {
  const Coef c = coef_of(cmd);
  std::array<Layout, 5> in;
  std::array<Layout, 4> out;
  for (int i = 0; i < input_size; i++) in[i] = layout_of(inputs[i], "optimiser input");
  for (int i = 0; i < output_size; i++) out[i] = layout_of(outputs[i], "optimiser output");
  const Layout& a = in[1];
  auto ld = [](const Layout& l, const int* idx) { return load_double(l.at(idx), l.datatype); };
  auto st = [](const Layout& l, const int* idx, double v) { store_double(l.at(idx), l.datatype, v); };
  switch (c.kind) {
    case Kind::kSgd:
      for_each_index(a.dim.data(), a.nd, [&](const int* i) {
        double b, n;
        sgd_step<double>(c, ld(in[0], i), ld(in[1], i), ld(in[2], i), b, n);
        st(out[0], i, b), st(out[1], i, n);
      });
      break;
    case Kind::kAdam:
    case Kind::kAdamW:
      for_each_index(a.dim.data(), a.nd, [&](const int* i) {
        double b, n, u, um = 0;
        const double vm = c.amsgrad ? ld(in[4], i) : 0;
        adam_step<double>(c, ld(in[0], i), ld(in[1], i), ld(in[2], i), ld(in[3], i), vm, b, n, u, um);
        st(out[0], i, b), st(out[1], i, n), st(out[2], i, u);
        if (c.amsgrad) st(out[3], i, um);
      });
      break;
    case Kind::kRmsprop:
      for_each_index(a.dim.data(), a.nd, [&](const int* i) {
        double b, n, u;
        rmsprop_step<double>(c, ld(in[0], i), ld(in[1], i), ld(in[2], i), ld(in[3], i), b, n, u);
        st(out[0], i, b), st(out[1], i, n), st(out[2], i, u);
      });
      break;
    case Kind::kLamb: {
      double a2 = 0, r2 = 0;
      for_each_index(a.dim.data(), a.nd, [&](const int* i) {
        double n, u;
        lamb_moments<double>(c, ld(in[0], i), ld(in[2], i), ld(in[3], i), n, u);
        st(out[1], i, n), st(out[2], i, u);
        const double av = ld(in[1], i);
        const double r = lamb_direction<double>(c, av, ld(out[1], i), ld(out[2], i));
        a2 += av * av;
        r2 += r * r;
      });
      const double k = c.rate * lamb_trust(a2, r2);
      for_each_index(a.dim.data(), a.nd, [&](const int* i) {
        const double av = ld(in[1], i);
        st(out[0], i, av - k * lamb_direction<double>(c, av, ld(out[1], i), ld(out[2], i)));
      });
      break;
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::optim
