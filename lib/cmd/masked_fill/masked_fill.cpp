// MASKED_FILL: y = fill where the mask equals eq, else x (blas.a[0] = eq,
// blas.a[1] = fill).
//   Forward inputs |x|mask|, outputs |y|: y like x; the mask (any type,
//     compared as a number with eq) broadcasts to x: its axes, aligned with
//     x's last ones, are each 1 or x's extent (an attention mask [1, 1, T, T]
//     over scores [B, H, T, T]).
//   Backward inputs |g|x|mask| (x unused), outputs |dx| or |dx|dmask|:
//     dx = g where the mask differs from eq, 0 where y took the fill; the
//     mask's gradient, if asked for, is 0.
// Shapes and bitmasks are libnnc's: the forward's outputs take the inputs'
// shapes in order, needs exactly |x|mask| in and |y| out; the backward needs
// g and the mask and writes dx, or dx and dmask. No in-place pair. CPU_REF
// only (a select).
#include <algorithm>
#include <vector>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace masked_fill {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// The mask broadcasts to `x`'s shape (aligned at the last axis).
void check_mask(const char* name, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* mask) {
  const int nx = nd_of(x->info.dim), nm = nd_of(mask->info.dim);
  bool ok = nm <= nx;
  for (int i = 0; i < nm && ok; i++) {
    const int m = mask->info.dim[nm - 1 - i], v = x->info.dim[nx - 1 - i];
    ok = m == 1 || m == v;
  }
  NNC_CHECK(ok, "%s: the mask %s does not broadcast to %s (each of its axes, from the last, must be 1 or x's)",
            name, shape_string(mask->info.dim).c_str(), shape_string(x->info.dim).c_str());
}

void check_like(const char* name, const ccv_nnc_tensor_t* a, const char* ra, const ccv_nnc_tensor_t* b,
                const char* rb) {
  NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) == CCV_GET_DATA_TYPE(b->info.datatype), "%s: %s is %s but %s is %s",
            name, ra, dt(a), rb, dt(b));
  NNC_CHECK(same_shape(a->info.dim, b->info.dim), "%s: %s is %s but %s is %s; they must match", name, ra,
            shape_string(a->info.dim).c_str(), rb, shape_string(b->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "MASKED_FILL_FORWARD";
  NNC_CHECK(input_size == 2 && output_size == 1,
            "%s: takes inputs |x|mask| and output |y| (got %d inputs, %d outputs)", name, input_size, output_size);
  NNC_CHECK(inputs[0] && inputs[1] && outputs[0], "%s: x, the mask (inputs 0, 1) and y (output 0) are required",
            name);
  check_like(name, inputs[0], "x", outputs[0], "y");
  check_mask(name, inputs[0], inputs[1]);
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "MASKED_FILL_BACKWARD";
  NNC_CHECK(input_size >= 3 && input_size <= 4 && output_size >= 1 && output_size <= 2,
            "%s: takes inputs |g|x|mask| and outputs |dx|dmask| (got %d inputs, %d outputs)", name, input_size,
            output_size);
  NNC_CHECK(inputs[0] && inputs[2] && outputs[0], "%s: g (input 0), the mask (input 2) and dx (output 0) are required",
            name);
  NNC_CHECK(CCV_GET_DATA_TYPE(inputs[0]->info.datatype) & types::kFloat,
            "%s: g is %s; the backward takes 16F, 16BF, 32F and 64F", name, dt(inputs[0]));
  check_like(name, inputs[0], "g", outputs[0], "dx");
  check_mask(name, inputs[0], inputs[2]);
  if (output_size == 2 && outputs[1]) check_like(name, inputs[2], "the mask", outputs[1], "dmask");
}

// Output i from input i (the gradient's shape where that input is absent).
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  for (int i = 0; i < output_size; i++)
    outputs[i] = 1 + i < input_size && nd_of(inputs[1 + i].dim) > 0 ? inputs[1 + i] : inputs[0];
}

bool forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int, const uint64_t* inputs, int isz,
                     const uint64_t* outputs, int osz) {
  return input_size == 2 && (word0(inputs, isz) & 3u) == 3u && word0(outputs, osz) == 1u;
}

// g and the mask (x not needed); exactly dx, or dx and dmask.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                      const uint64_t* outputs, int osz) {
  const uint64_t out = word0(outputs, osz);
  return (word0(inputs, isz) & 5u) == 5u && (out == 3u || out == 1u);
}

// Visit every element of `like` with the mask element it broadcasts from.
template <class F>
void with_mask(const Layout& like, const Layout& m, F&& f) {
  const int off = like.nd - m.nd;
  for_each_index(like.dim.data(), like.nd, [&](const int* i) {
    int64_t k = 0;
    for (int d = 0; d < m.nd; d++)
      if (m.dim[d] != 1) k += static_cast<int64_t>(i[off + d]) * m.stride[d];
    f(i, load_double(m.data + k * static_cast<int64_t>(m.element_size), m.datatype));
  });
}

NNC_KERNEL(forward_ref) {
  const Layout x = layout_of(inputs[0], "x"), m = layout_of(inputs[1], "mask"), y = layout_of(outputs[0], "y");
  const double eq = cmd.info.blas.a[0], fill = cmd.info.blas.a[1];
  const size_t es = x.element_size;
  std::vector<unsigned char> fill_bytes(es);
  store_double(fill_bytes.data(), x.datatype, fill);
  with_mask(x, m, [&](const int* i, double mv) {
    if (mv == eq)
      std::copy(fill_bytes.begin(), fill_bytes.end(), y.at(i));
    else
      std::copy(x.at(i), x.at(i) + es, y.at(i));
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Layout g = layout_of(inputs[0], "g"), m = layout_of(inputs[2], "mask"), dx = layout_of(outputs[0], "dx");
  const double eq = cmd.info.blas.a[0];
  with_mask(g, m, [&](const int* i, double mv) {
    store_double(dx.at(i), dx.datatype, mv == eq ? 0.0 : load_double(g.at(i), g.datatype));
  });
  if (output_size == 2 && outputs[1]) {
    const Layout d = layout_of(outputs[1], "dmask");
    for_each_index(d.dim.data(), d.nd, [&](const int* at) { store_double(d.at(at), d.datatype, 0.0); });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

}  // namespace masked_fill

void register_masked_fill(Registry& r) {
  using namespace masked_fill;
  r.add_command({.cmd = CCV_NNC_MASKED_FILL_FORWARD, .tensor_auto = shape::same_as_input_i, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_MASKED_FILL_BACKWARD, .tensor_auto = backward_auto, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kAll), {{CCV_NNC_MASKED_FILL_FORWARD, forward_ref}});
  r.add_kernels(cpu_ref(types::kAll), {{CCV_NNC_MASKED_FILL_BACKWARD, backward_ref}});
}

}  // namespace nnc
