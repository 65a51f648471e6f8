// REDUCE_ISNAN: whether any element is NaN, over reduce.axis[0..count).
//   Forward inputs |x| (floating point), outputs |y|: y is x's shape with the
//     reduced axes of extent 1, of any type; y = 1 where the elements reduced
//     into it hold a NaN, else 0 (infinities are numbers).
//   Backward: the output is a step function of x, so every gradient it
//     writes (any of its outputs) is 0.
// Shapes and bitmasks are libnnc's: the forward's y is x with the axes of
// extent 1, exactly |x| in and |y| out; the backward's outputs take the
// gradient's shape and it registers no bitmask of its own. One CPU_REF
// kernel each (a reduction of flags needs no more).
#include <cmath>
#include <vector>

#include "cmd/common/axes.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace isnan_ {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "REDUCE_ISNAN_FORWARD";
  NNC_CHECK(input_size == 1 && output_size == 1, "%s: takes input |x| and output |y| (got %d inputs, %d outputs)",
            name, input_size, output_size);
  const ccv_nnc_tensor_t *x = inputs[0], *y = outputs[0];
  NNC_CHECK(x && y, "%s: x (input 0) and y (output 0) are required", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name,
            dt(x));
  const int nd = nd_of(x->info.dim);
  const unsigned mask = axis_mask(name, cmd.info.reduce.axis, cmd.info.reduce.count, nd);
  int want[kMaxDim] = {};
  reduced_dims(x->info.dim, nd, mask, want);
  NNC_CHECK(same_shape(want, y->info.dim), "%s: x is %s, so y must be %s (it is %s)", name,
            shape_string(x->info.dim).c_str(), shape_string(want).c_str(), shape_string(y->info.dim).c_str());
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const*, int,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  bool any = false;
  for (int i = 0; i < output_size; i++) any = any || outputs[i];
  NNC_CHECK(any, "REDUCE_ISNAN_BACKWARD: every output is NULL");
}

void forward_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  const int nd = nd_of(inputs[0].dim);
  for (int i = 0; i < p.reduce.count && i < kMaxDim; i++)
    if (p.reduce.axis[i] >= 0 && p.reduce.axis[i] < nd) outputs[0].dim[p.reduce.axis[i]] = 1;
}

bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  return word0(inputs, isz) == 1u && word0(outputs, osz) == 1u;
}

NNC_KERNEL(forward_ref) {
  const Layout x = layout_of(inputs[0], "x"), y = layout_of(outputs[0], "y");
  const unsigned mask = axis_mask("REDUCE_ISNAN_FORWARD", cmd.info.reduce.axis, cmd.info.reduce.count, x.nd);
  std::vector<unsigned char> flag(y.count(), 0);
  for_each_index(x.dim.data(), x.nd, [&](const int* i) {
    size_t k = 0;
    for (int d = 0; d < x.nd; d++)
      if (!((mask >> d) & 1u)) k = k * static_cast<size_t>(x.dim[d]) + static_cast<size_t>(i[d]);
    if (std::isnan(load_double(x.at(i), x.datatype))) flag[k] = 1;
  });
  size_t k = 0;
  for_each_index(y.dim.data(), y.nd, [&](const int* i) { store_double(y.at(i), y.datatype, flag[k++]); });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout d = layout_of(outputs[i], "gradient");
    for_each_index(d.dim.data(), d.nd, [&](const int* at) { store_double(d.at(at), d.datatype, 0.0); });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

}  // namespace isnan_

void register_isnan(Registry& r) {
  using namespace isnan_;
  r.add_command({.cmd = CCV_NNC_REDUCE_ISNAN_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_REDUCE_ISNAN_BACKWARD, .tensor_auto = shape::same_as_first_input, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kAll), {{CCV_NNC_REDUCE_ISNAN_FORWARD, forward_ref}});
  r.add_kernels(cpu_ref(types::kAll), {{CCV_NNC_REDUCE_ISNAN_BACKWARD, backward_ref}});
}

}  // namespace nnc
