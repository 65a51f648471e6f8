// The random family: RANDOM_UNIFORM, RANDOM_NORMAL and DROPOUT.
//
// RANDOM_UNIFORM_FORWARD: no inputs needed (any given are ignored), one output
// filled with values uniform in [blas.a[0], blas.a[1]) (CMD_RANDOM_UNIFORM_FORWARD(lb, ub));
// in 16F / 16BF / 32F the rounding to the type can give ub itself.
// RANDOM_NORMAL_FORWARD: one output, normal with standard deviation blas.a[0]
// and mean blas.a[1] (CMD_RANDOM_NORMAL_FORWARD(std, mean)).
// Their backward commands have nothing to pass back: gradients asked for are
// filled with zeros.
// DROPOUT_FORWARD: inputs |x|, outputs |y|mask|. Each element is dropped with
// probability dropout.p (with dropout.entirety the whole tensor at once),
// y = x / (1 - p) where kept and 0 where dropped. The mask records which
// (rand.hpp): one byte per element, 1 where kept; ccv_nnc_hint_tensor_auto
// gives libnnc's reserved-space shape for it, an 8U tensor of x's shape also
// serves (with entirety, one byte). y may be x.
// DROPOUT_BACKWARD: libnnc's layout |g|g_mask|x|y|mask| (the gradient of each
// forward output, then x, then y and the mask): only g (input 0) and the mask
// (input 4) are read, the rest may be NULL. Output |dx|: dx = g / (1 - p)
// where the mask is 1, 0 elsewhere.
// Values are reproducible under a seed: see rand.hpp.
#include "cmd/rand/rand.hpp"

#include <cmath>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace rand {

uint32_t draw_seed(ccv_nnc_stream_context_t* stream) { return stream_genrand(stream); }

bool mask_like_x(const ccv_nnc_tensor_t* mask, const ccv_nnc_tensor_t* x) {
  return CCV_GET_DATA_TYPE(mask->info.datatype) == CCV_8U && same_shape(mask->info, x->info);
}

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t c = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) c *= static_cast<size_t>(t->info.dim[i]);
  return c;
}

void validate_random(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const*, int,
                     ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool uniform = cmd.cmd == CCV_NNC_RANDOM_UNIFORM_FORWARD;
  const char* name = uniform ? "RANDOM_UNIFORM_FORWARD" : "RANDOM_NORMAL_FORWARD";
  NNC_CHECK(output_size == 1, "%s: takes exactly one output (got %d)", name, output_size);
  NNC_CHECK(outputs[0], "%s: the output is NULL", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(outputs[0]->info.datatype) & types::kFloat,
            "%s: cannot fill a %s tensor (it fills 16F, 16BF, 32F and 64F)", name, dt(outputs[0]));
  const double a0 = cmd.info.blas.a[0], a1 = cmd.info.blas.a[1];
  if (uniform)
    NNC_CHECK(std::isfinite(a0) && std::isfinite(a1) && a0 <= a1,
              "%s: the range [%g, %g) (blas.a[0], blas.a[1]) must be finite with lower <= upper", name, a0, a1);
  else
    NNC_CHECK(std::isfinite(a0) && std::isfinite(a1) && a0 >= 0,
              "%s: std (blas.a[0] = %g) must be finite and >= 0 and mean (blas.a[1] = %g) finite", name, a0, a1);
}

// libnnc's pattern for the random commands, forward and backward alike: the
// one output, whatever inputs there are.
bool random_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t*, int, const uint64_t* outputs,
                    int output_bitmask_size) {
  return output_bitmask_size > 0 && outputs[0] == 1u;
}

void check_p(const ccv_nnc_cmd_t& cmd, const char* name) {
  const double p = cmd.info.dropout.p;
  NNC_CHECK(p >= 0 && p <= 1, "%s: dropout.p is %g; it must be in [0, 1]", name, p);
}

void check_mask(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* mask, const ccv_nnc_tensor_t* like,
                const char* name) {
  if (mask_like_x(mask, like)) return;
  const size_t need = cmd.info.dropout.entirety ? 1 : count_of(like);
  const size_t bytes = count_of(mask) * CCV_GET_DATA_TYPE_SIZE(mask->info.datatype);
  NNC_CHECK(CCV_IS_TENSOR_CONTIGUOUS(mask) && bytes >= need,
            "%s: the mask (%s %s, %zu bytes%s) cannot hold one byte per element of the data (%s, %zu); make it with "
            "ccv_nnc_hint_tensor_auto, or 8U of the data's shape",
            name, dt(mask), shape_string(mask->info.dim).c_str(), bytes,
            CCV_IS_TENSOR_CONTIGUOUS(mask) ? "" : ", not contiguous", shape_string(like->info.dim).c_str(), need);
}

void validate_dropout_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                              int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "DROPOUT_FORWARD";
  NNC_CHECK(input_size == 1 && output_size == 2, "%s: takes one input (x) and two outputs (y, mask); got %d and %d",
            name, input_size, output_size);
  check_p(cmd, name);
  const ccv_nnc_tensor_t* x = inputs[0];
  const ccv_nnc_tensor_t* y = outputs[0];
  NNC_CHECK(x && y && outputs[1], "%s: x, y and mask must all be given", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) & types::kFloat, "%s: x is %s (it takes 16F, 16BF, 32F and 64F)", name, dt(x));
  NNC_CHECK(CCV_GET_DATA_TYPE(y->info.datatype) == CCV_GET_DATA_TYPE(x->info.datatype), "%s: y is %s but x is %s", name,
            dt(y), dt(x));
  NNC_CHECK(same_shape(x->info, y->info), "%s: y is %s but x is %s", name, shape_string(y->info.dim).c_str(),
            shape_string(x->info.dim).c_str());
  check_mask(cmd, outputs[1], x, name);
}

void validate_dropout_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                               int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "DROPOUT_BACKWARD";
  NNC_CHECK(input_size == 5 && output_size == 1,
            "%s: takes libnnc's inputs |g|g_mask|x|y|mask| (g and mask read, the others may be NULL) and one output "
            "|dx|; got %d and %d",
            name, input_size, output_size);
  check_p(cmd, name);
  const ccv_nnc_tensor_t* g = inputs[0];
  const ccv_nnc_tensor_t* dx = outputs[0];
  NNC_CHECK(g && inputs[4] && dx, "%s: g (input 0), the mask (input 4) and dx must be given", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(g->info.datatype) & types::kFloat, "%s: g is %s (it takes 16F, 16BF, 32F and 64F)", name, dt(g));
  NNC_CHECK(CCV_GET_DATA_TYPE(dx->info.datatype) == CCV_GET_DATA_TYPE(g->info.datatype), "%s: dx is %s but g is %s",
            name, dt(dx), dt(g));
  NNC_CHECK(same_shape(g->info, dx->info), "%s: dx is %s but g is %s", name, shape_string(dx->info.dim).c_str(),
            shape_string(g->info.dim).c_str());
  check_mask(cmd, inputs[4], g, name);
}

// libnnc's shapes: y is x; the mask is reserved space in x's data type,
// [128 / element size, ceil(d0 / 128) * d1 * ...] (128 bytes per 128
// elements along the first dimension), or [1] with entirety.
void dropout_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  if (output_size > 0) outputs[0] = inputs[0];
  if (output_size > 1) {
    ccv_nnc_tensor_param_t m = inputs[0];
    for (int i = 0; i < kMaxDim; i++) m.dim[i] = 0;
    if (p.dropout.entirety) {
      m.dim[0] = 1;
    } else {
      const int size = static_cast<int>(CCV_GET_DATA_TYPE_SIZE(inputs[0].datatype));
      NNC_CHECK(size > 0 && 128 % size == 0, "DROPOUT_FORWARD: no mask shape for x of type %s",
                datatype_name(CCV_GET_DATA_TYPE(inputs[0].datatype)));
      int64_t line = (inputs[0].dim[0] + 127) / 128;
      for (int i = 1; i < kMaxDim && inputs[0].dim[i] > 0; i++) line *= inputs[0].dim[i];
      NNC_CHECK(line <= INT32_MAX, "DROPOUT_FORWARD: x (%s) is too large for a mask",
                shape_string(inputs[0].dim).c_str());
      m.dim[0] = 128 / size;
      m.dim[1] = static_cast<int>(line);
    }
    outputs[1] = m;
  }
}

// libnnc's patterns: forward x -> y and mask, all present.
bool dropout_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                             const uint64_t* outputs, int output_bitmask_size) {
  return input_bitmask_size > 0 && output_bitmask_size > 0 && inputs[0] == 1u && outputs[0] == 3u;
}

// Backward reads g (input 0) and the mask (input 4) for dx.
bool dropout_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                              const uint64_t* outputs, int output_bitmask_size) {
  return input_bitmask_size > 0 && output_bitmask_size > 0 && (inputs[0] & 17u) == 17u && (outputs[0] & 1u) == 1u;
}

bool first_pair(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == 0 && output_idx == 0;
}

}  // namespace

}  // namespace rand

void register_rand(Registry& r) {
  using namespace rand;
  // CPU_OPT takes every type the reference does and hands 16-bit types and
  // views to it, so forcing CPU_OPT never fails where CPU_REF would run.
  for (uint32_t id : {CCV_NNC_RANDOM_UNIFORM_FORWARD, CCV_NNC_RANDOM_NORMAL_FORWARD}) {
    CommandInfo fwd;
    fwd.cmd = id;
    fwd.tensor_auto = shape::same_as_first_input;
    fwd.bitmask = random_bitmask;
    fwd.validate = validate_random;
    r.add_command(fwd);
    CommandInfo back;
    back.cmd = id + 1;
    back.tensor_auto = shape::same_as_input_i;
    back.bitmask = random_bitmask;
    r.add_command(back);
  }
  r.add_kernels(cpu_ref(types::kFloat),
                {{CCV_NNC_RANDOM_UNIFORM_FORWARD, uniform_ref}, {CCV_NNC_RANDOM_NORMAL_FORWARD, normal_ref}});
  r.add_kernels(cpu_opt(types::kFloat),
                {{CCV_NNC_RANDOM_UNIFORM_FORWARD, uniform_opt}, {CCV_NNC_RANDOM_NORMAL_FORWARD, normal_opt}});
  r.add_kernels(cpu_ref(types::kAll),
                {{CCV_NNC_RANDOM_UNIFORM_BACKWARD, zero_gradients}, {CCV_NNC_RANDOM_NORMAL_BACKWARD, zero_gradients}});

  r.add_command({.cmd = CCV_NNC_DROPOUT_FORWARD, .tensor_auto = dropout_auto, .bitmask = dropout_forward_bitmask, .allow_inplace = first_pair, .validate = validate_dropout_forward});
  CommandInfo back;
  back.cmd = CCV_NNC_DROPOUT_BACKWARD;
  back.tensor_auto = shape::same_as_first_input;
  back.bitmask = dropout_backward_bitmask;  // no in-place pair, as in libnnc
  back.validate = validate_dropout_backward;
  r.add_command(back);
  r.add_kernels(cpu_ref(types::kFloat | CCV_8U),
                {{CCV_NNC_DROPOUT_FORWARD, dropout_forward_ref}, {CCV_NNC_DROPOUT_BACKWARD, dropout_backward_ref}});
  r.add_kernels(cpu_opt(types::kFloat | CCV_8U),
                {{CCV_NNC_DROPOUT_FORWARD, dropout_forward_opt}, {CCV_NNC_DROPOUT_BACKWARD, dropout_backward_opt}});
}

}  // namespace nnc
