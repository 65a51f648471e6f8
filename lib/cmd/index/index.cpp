// INDEX_SELECT: gather rows (entries of axis 0) of x by a list of indices.
//   Forward inputs |x|indices|, outputs |y|: indices is 32S or 64S with n
//     elements (any shape, read in row-major order), each in [0, x's rows);
//     y is x's shape with n rows, of x's type (any type: rows are copied);
//     y[i, ...] = x[indices[i], ...]. An index outside x is an error.
//   Backward inputs |g|x|indices| (x unused; a fourth, y, is ignored), outputs
//     |dx| (a second output, the indices' gradient, must be NULL): dx has x's shape
//     and floating-point type; dx[r, ...] = the sum of g[i, ...] over the i
//     with indices[i] = r (0 for rows nothing selected).
// Shapes and bitmasks are libnnc's: the forward's y is x with indices' first
// extent as its rows; the backward's dx takes the gradient's shape (libnnc's
// stated best guess; a caller passes dx shaped like x); no in-place pair.
#include "cmd/index/index.hpp"

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace index {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t n = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
  return n;
}

// `big` (x or dx) and `picked` (y or g) agree past axis 0; picked has one row per index.
void check_rows(const char* name, const ccv_nnc_tensor_t* big, const char* rb, const ccv_nnc_tensor_t* picked,
                const char* rp, const ccv_nnc_tensor_t* indices) {
  const int it = CCV_GET_DATA_TYPE(indices->info.datatype);
  NNC_CHECK(it == CCV_32S || it == CCV_64S, "%s: indices is %s; it takes 32S or 64S", name, dt(indices));
  NNC_CHECK(CCV_GET_DATA_TYPE(big->info.datatype) == CCV_GET_DATA_TYPE(picked->info.datatype),
            "%s: %s is %s but %s is %s", name, rb, dt(big), rp, dt(picked));
  const int nd = nd_of(big->info.dim);
  bool same = nd_of(picked->info.dim) == nd && static_cast<size_t>(picked->info.dim[0]) == count_of(indices);
  for (int i = 1; i < nd && same; i++) same = picked->info.dim[i] == big->info.dim[i];
  NNC_CHECK(same, "%s: %s is %s and indices holds %zu, so %s must be %s with %zu rows (it is %s)", name, rb,
            shape_string(big->info.dim).c_str(), count_of(indices), rp, rb, count_of(indices),
            shape_string(picked->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "INDEX_SELECT_FORWARD";
  NNC_CHECK(input_size == 2 && output_size == 1,
            "%s: takes inputs |x|indices| and output |y| (got %d inputs, %d outputs)", name, input_size, output_size);
  NNC_CHECK(inputs[0] && inputs[1] && outputs[0], "%s: x, indices (inputs 0, 1) and y (output 0) are required",
            name);
  check_rows(name, inputs[0], "x", outputs[0], "y", inputs[1]);
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "INDEX_SELECT_BACKWARD";
  NNC_CHECK(input_size >= 3 && input_size <= 4 && output_size >= 1 && output_size <= 2,
            "%s: takes inputs |g|x|indices| (and y) and output |dx| (got %d inputs, %d outputs)", name, input_size,
            output_size);
  NNC_CHECK(output_size < 2 || !outputs[1], "%s: indices have no gradient; output 1 must be NULL", name);
  NNC_CHECK(inputs[0] && inputs[2] && outputs[0], "%s: g (input 0), indices (input 2) and dx (output 0) are required",
            name);
  NNC_CHECK(CCV_GET_DATA_TYPE(inputs[0]->info.datatype) & types::kFloat,
            "%s: g is %s; the backward takes 16F, 16BF, 32F and 64F", name, dt(inputs[0]));
  check_rows(name, outputs[0], "dx", inputs[0], "g", inputs[2]);
}

void forward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 2 || output_size < 1) return;
  outputs[0] = inputs[0];
  outputs[0].dim[0] = inputs[1].dim[0];
}

// x and indices; exactly y.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  return (word0(inputs, isz) & 3u) == 3u && word0(outputs, osz) == 1u;
}

// g and indices (x not needed); dx.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                      const uint64_t* outputs, int osz) {
  return (word0(inputs, isz) & 5u) == 5u && (word0(outputs, osz) & 1u) == 1u;
}

}  // namespace

void read_rows(const ccv_nnc_tensor_t* indices, int64_t rows, const char* name, int64_t* out) {
  const Layout l = layout_of(indices, "indices");
  size_t i = 0;
  for_each_index(l.dim.data(), l.nd, [&](const int* at) {
    const unsigned char* p = l.at(at);
    out[i++] = l.datatype == CCV_32S ? *reinterpret_cast<const int32_t*>(p) : *reinterpret_cast<const int64_t*>(p);
  });
  for (size_t k = 0; k < i; k++)
    NNC_CHECK(out[k] >= 0 && out[k] < rows, "%s: indices[%zu] is %lld, outside the %lld rows", name, k,
              static_cast<long long>(out[k]), static_cast<long long>(rows));
}

}  // namespace index

void register_index(Registry& r) {
  using namespace index;
  r.add_command({.cmd = CCV_NNC_INDEX_SELECT_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_INDEX_SELECT_BACKWARD, .tensor_auto = shape::same_as_first_input, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kAll),
                {{CCV_NNC_INDEX_SELECT_FORWARD, forward_ref}, {CCV_NNC_INDEX_SELECT_BACKWARD, backward_ref}});
  r.add_kernels(cpu_opt(types::kAll).accepting(opt_accepts),
                {{CCV_NNC_INDEX_SELECT_FORWARD, forward_opt}, {CCV_NNC_INDEX_SELECT_BACKWARD, backward_opt}});
}

}  // namespace nnc
