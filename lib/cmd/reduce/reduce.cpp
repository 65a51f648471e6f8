// The reduction family: REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX, REDUCE_MIN,
// REDUCE_NORM2 (forward and backward), ARGMAX and ARGMIN (forward).
//
// Parameters: reduce.axis[0..reduce.count) are the axes reduced (each once, 1 <=
// count <= nd). The output keeps the input's rank with every reduced axis of
// extent 1 (libnnc's convention): REDUCE_SUM over axis 0 of 64x3136 gives 1x3136.
//
// Forward: inputs |x|, outputs |y|, same data type (16F, 16BF, 32F, 64F).
//   SUM: sum; MEAN: sum / (number of reduced elements); MAX / MIN: the largest /
//   smallest element (CPU_REF propagates NaN; CPU_OPT leaves NaN order
//   unspecified); NORM2: sqrt(sum of squares).
// Backward (libnnc's order): inputs |g|x|y|, outputs |dx|, dx of x's shape and g
//   of y's shape. SUM: dx = g broadcast over the reduced axes; MEAN: g / count
//   (SUM and MEAN need only g: x and y may be NULL or left out). MAX / MIN:
//   dx = g where x equals y and 0 elsewhere (every tied element receives g);
//   NORM2: dx = g * x / y (0 where y is 0). These three need x and y.
// ARGMAX / ARGMIN: inputs |x|, outputs |indices| of 32S, exactly one axis
//   (count = 1): the index along that axis of the largest / smallest element,
//   the first one on ties; a NaN counts as larger (ARGMAX) / smaller (ARGMIN)
//   than any number so that it is found. There is no backward (the gradient is
//   zero almost everywhere): ARGMAX_BACKWARD / ARGMIN_BACKWARD exist, as in
//   libnnc, with a bitmask that accepts nothing and no kernel (CCV_NNC_EXEC_NO_KERNEL).
// Shapes and bitmasks are libnnc's: the forward output is x with the axes of
//   extent 1 (ARGMAX / ARGMIN: 32S); a backward's dx takes g's parameters.
#include "cmd/reduce/reduce.hpp"

#include <cstring>
#include <string>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace red {

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = cmd_name(cmd);
  return n ? n : "reduction";
}
const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

bool is_arg(uint32_t cmd) { return cmd == CCV_NNC_ARGMAX_FORWARD || cmd == CCV_NNC_ARGMIN_FORWARD; }
// Backward commands that read x and y.
bool backward_needs_xy(uint32_t cmd) {
  return cmd == CCV_NNC_REDUCE_MAX_BACKWARD || cmd == CCV_NNC_REDUCE_MIN_BACKWARD ||
         cmd == CCV_NNC_REDUCE_NORM2_BACKWARD;
}

// Output: the input with the reduced axes of extent 1 (an invalid axis list
// leaves the shape alone; execution reports it).
void forward_auto(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  const int nd = nd_of(inputs[0].dim);
  outputs[0] = inputs[0];
  for (int i = 0; i < params.reduce.count && i < kMaxDim; i++)
    if (params.reduce.axis[i] >= 0 && params.reduce.axis[i] < nd) outputs[0].dim[params.reduce.axis[i]] = 1;
  for (int i = 1; i < output_size; i++) outputs[i] = outputs[0];
}

void arg_auto(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
              const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size) {
  forward_auto(params, inputs, input_size, hint, outputs, output_size);
  for (int i = 0; i < output_size && input_size > 0; i++) outputs[i].datatype = CCV_32S;
}

// libnnc's rule for every reduction backward: dx takes the parameters of
// the gradient (input 0). (A caller allocating dx from it gets g's reduced
// shape, which execution refuses; graphs take dx's shape from x.)
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  for (int i = 0; i < output_size; i++) outputs[i] = inputs[0];
}

// ARGMAX / ARGMIN have a backward id but no backward: libnnc's shape rule
// leaves the outputs alone and its bitmask accepts nothing.
void no_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t*, int, const ccv_nnc_hint_t&,
             ccv_nnc_tensor_param_t*, int) {}
bool no_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t*, int, const uint64_t*, int) { return false; }
void validate_no_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const*, int,
                          ccv_nnc_tensor_t* const*, int) {
  fail(CCV_NNC_EXEC_NO_KERNEL, "%s: there is no backward (the index of an extreme has no gradient)",
       name_of(cmd.cmd));
}

// libnnc's bitmasks (predicates on the first word): every forward exactly x
// and y; SUM / MEAN backward g; MAX / MIN / NORM2 backward |g|x|y|.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                     const uint64_t* outputs, int output_bitmask_size) {
  return word0(inputs, input_bitmask_size) == 1u && word0(outputs, output_bitmask_size) == 1u;
}

bool sum_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                          const uint64_t* outputs, int output_bitmask_size) {
  return (word0(inputs, input_bitmask_size) & 1u) == 1u && word0(outputs, output_bitmask_size) == 1u;
}

bool xy_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                         const uint64_t* outputs, int output_bitmask_size) {
  return (word0(inputs, input_bitmask_size) & 7u) == 7u && word0(outputs, output_bitmask_size) == 1u;
}

void check_reduced_shape(const char* name, const ccv_nnc_tensor_t* full, const char* full_name,
                         const ccv_nnc_tensor_t* small, const char* small_name, unsigned mask) {
  const int nd = nd_of(full->info.dim);
  int want[kMaxDim];
  reduced_dims(full->info.dim, nd, mask, want);
  NNC_CHECK(same_shape(small->info.dim, want), "%s: %s is %s, so %s must be %s (the reduced axes kept with extent 1), not %s",
            name, full_name, shape_string(full->info.dim).c_str(), small_name, shape_string(want).c_str(),
            shape_string(small->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = name_of(cmd.cmd);
  NNC_CHECK(input_size == 1, "%s: takes one input x (got %d)", name, input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output (got %d)", name, output_size);
  const ccv_nnc_tensor_t* x = inputs[0];
  const ccv_nnc_tensor_t* y = outputs[0];
  NNC_CHECK(x, "%s: the input x is NULL", name);
  NNC_CHECK(y, "%s: the output is NULL", name);
  NNC_CHECK(type_of(x) & types::kFloat, "%s: x is %s; it reduces 16F, 16BF, 32F and 64F", name, dt(x));
  const int nd = nd_of(x->info.dim);
  const unsigned mask = axis_mask(name, cmd.info.reduce.axis, cmd.info.reduce.count, nd);
  if (is_arg(cmd.cmd)) {
    NNC_CHECK(cmd.info.reduce.count == 1, "%s: takes exactly one axis (got %d)", name, cmd.info.reduce.count);
    NNC_CHECK(type_of(y) == CCV_32S, "%s: the indices must be 32S, not %s", name, dt(y));
  } else {
    NNC_CHECK(type_of(y) == type_of(x), "%s: x is %s but y is %s", name, dt(x), dt(y));
  }
  check_reduced_shape(name, x, "x", y, "the output", mask);
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = name_of(cmd.cmd);
  const bool xy = backward_needs_xy(cmd.cmd);
  NNC_CHECK(input_size >= (xy ? 3 : 1) && input_size <= 3, "%s: takes inputs |g|x|y| (%s), got %d", name,
            xy ? "all three" : "x and y optional", input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output dx (got %d)", name, output_size);
  const ccv_nnc_tensor_t* g = inputs[0];
  const ccv_nnc_tensor_t* dx = outputs[0];
  NNC_CHECK(g, "%s: the gradient g (input 0) is NULL", name);
  NNC_CHECK(dx, "%s: the output dx is NULL", name);
  NNC_CHECK(type_of(g) & types::kFloat, "%s: g is %s; it takes 16F, 16BF, 32F and 64F", name, dt(g));
  NNC_CHECK(type_of(dx) == type_of(g), "%s: g is %s but dx is %s", name, dt(g), dt(dx));
  const unsigned mask = axis_mask(name, cmd.info.reduce.axis, cmd.info.reduce.count, nd_of(dx->info.dim));
  check_reduced_shape(name, dx, "dx", g, "g", mask);
  if (!xy) return;
  const ccv_nnc_tensor_t* x = inputs[1];
  const ccv_nnc_tensor_t* y = inputs[2];
  NNC_CHECK(x && y, "%s: needs the forward input x (input 1) and output y (input 2)", name);
  NNC_CHECK(type_of(x) == type_of(g) && type_of(y) == type_of(g), "%s: g is %s but x is %s and y is %s", name, dt(g),
            dt(x), dt(y));
  NNC_CHECK(same_shape(x->info, dx->info), "%s: x is %s but dx is %s", name,
            shape_string(x->info.dim).c_str(), shape_string(dx->info.dim).c_str());
  NNC_CHECK(same_shape(y->info, g->info), "%s: y is %s but g is %s", name,
            shape_string(y->info.dim).c_str(), shape_string(g->info.dim).c_str());
}

void add_command(Registry& r, uint32_t id, TensorAutoFn tensor_auto, BitmaskFn bitmask, ValidateFn validate) {
  r.add_command({.cmd = id, .tensor_auto = tensor_auto, .bitmask = bitmask, .validate = validate});
}

}  // namespace

}  // namespace red

void register_reduce(Registry& r) {
  using namespace red;
  const uint32_t forward[] = {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD,
                              CCV_NNC_REDUCE_MIN_FORWARD, CCV_NNC_REDUCE_NORM2_FORWARD};
  for (uint32_t f : forward) {
    const uint32_t b = f + 1;
    add_command(r, f, forward_auto, forward_bitmask, validate_forward);
    add_command(r, b, backward_auto, backward_needs_xy(b) ? xy_backward_bitmask : sum_backward_bitmask,
                validate_backward);
    r.add_kernels(cpu_ref(types::kFloat), {{f, reduce_forward_ref}, {b, reduce_backward_ref}});
    r.add_kernels(cpu_opt(types::kWide), {{f, reduce_forward_opt}, {b, reduce_backward_opt}});
  }
  for (uint32_t f : {CCV_NNC_ARGMAX_FORWARD, CCV_NNC_ARGMIN_FORWARD}) {
    add_command(r, f, arg_auto, forward_bitmask, validate_forward);
    r.add_kernels(cpu_ref(types::kFloat | CCV_32S), {{f, arg_forward_ref}});
    r.add_kernels(cpu_opt(types::kWide | CCV_32S), {{f, arg_forward_opt}});
    add_command(r, f + 1, no_auto, no_bitmask, validate_no_backward);
  }
}

}  // namespace nnc
