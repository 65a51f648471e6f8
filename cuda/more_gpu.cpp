// More GPU_REF backends, for command families that had no GPU kernel (issue
// 19: every family runs on an NVIDIA GPU):
//   activations  LEAKY_RELU, GELU (exact and tanh forms), SWISH, forward and backward;
//   ew math      CLAMP, MIN, MAX, forward and backward;
//   shape        TRANSPOSE (any type), PAD (zero, replicate, reflect; the
//                backward 32F, 16F, 16BF), UPSAMPLE (nearest and bilinear,
//                align_corners or not; 32F, 16F, 16BF), forward and backward;
//   reduce       REDUCE_MIN and REDUCE_NORM2 forward and, with REDUCE_MAX,
//                backward (32F, 16F, 16BF; the forward sums in float and
//                rounds once); ARGMAX / ARGMIN (32F, 16F, 16BF in, 32S out);
//   losses       MSE, SMOOTH_L1, BINARY_CROSSENTROPY, SIGMOID_BINARY_CROSSENTROPY
//                forward and backward (32F, 16F or 16BF rows along the last dimension, any
//                strides; losses in any shape of one entry per row; NULL g
//                read as ones; NULL outputs skipped);
//   norms        LAYER_NORM (after cuDNN's), RMSNORM and GROUP_NORM forward and
//                backward (32F, 16F, 16BF; any axes,
//                views; statistics in double; the saved statistics optional
//                forward, read backward as CPU_REF does); LAYER_NORM /
//                RMSNORM over packed innermost axes on the row kernels
//                (gpu::choose_norm_rows: a row read once, statistics in float);
//   optimiser    LAMB (32F, 16F, 16BF; the trust ratio's norms summed on the device);
//   complex      CMUL forward and backward (32F, 16F, 16BF in double, rounded
//                once; broadcasts, views);
//   isnan        REDUCE_ISNAN forward (x 32F / 16F / 16BF, y 32F, 64F, 16F,
//                16BF, 32S, 64S or 8U) and backward (zeros, any type);
//   fills        SET_BACKWARD (as SET_FORWARD: every output set to blas.a[0])
//                and RANDOM_UNIFORM / RANDOM_NORMAL backward (zeros), any type.
//
// The contracts are the CPU_REF ones (lib/cmd/activation/activation.cpp,
// lib/cmd/ew/math.cpp): the families' validate functions have checked
// counts, shapes and types before a kernel here runs, so these backends only
// refuse what they do not do (tensors off one GPU, 64F, an input list without
// the tensor a backward reads). Any view, any format (the ops are
// element-wise); 32F, 16F and 16BF computed in float. A NULL g reads as ones
// inside the kernels. In place: every input of an element is read before its
// outputs are written, so the pairs libnnc allows (output 0 over input 0)
// work. Index arithmetic: cmd/common/gpu_plan.hpp (tested on the CPU).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "cmd/common/axes.hpp"
#include "cmd/common/gpu_optim_args.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/optim/optim.hpp"
#include "cmd/upsample/upsample.hpp"
#include "cmd/util/util.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/more_kern.hpp"
#include "cuda/rows.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

namespace {

using namespace gpu;  // the ActOp values

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

bool accept_gpu(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  return on_one_gpu(inputs, input_size, outputs, output_size, nullptr);
}

const ccv_nnc_tensor_t* in_at(ccv_nnc_tensor_t* const* inputs, int input_size, int i) {
  return i < input_size ? inputs[i] : nullptr;
}

// The plan of outs then ins over ref's shape (every tensor present has it or
// broadcasts to it; a NULL one gets strides 0), and their pointers.
gpu::EwPlan plan_n(const Layout& ref, const std::vector<const ccv_nnc_tensor_t*>& ts, EwPtrs* q, const char* what) {
  int64_t st[gpu::kPlanOperands][gpu::kPlanDims] = {};
  const int64_t* sp[gpu::kPlanOperands];
  NNC_CHECK(ts.size() <= static_cast<size_t>(gpu::kPlanOperands), "%s: too many operands for one GPU kernel", what);
  for (size_t k = 0; k < ts.size(); k++) {
    sp[k] = st[k];
    q->p[k] = nullptr;
    if (!ts[k]) continue;
    const Layout l = layout_of(ts[k], what);
    NNC_CHECK(gpu::broadcast_strides(l.dim.data(), l.stride.data(), l.nd, ref.dim.data(), ref.nd, st[k]),
              "%s: an operand %s does not fit %s", what, shape_string_n(l.dim.data(), l.nd).c_str(),
              shape_string_n(ref.dim.data(), ref.nd).c_str());
    q->p[k] = l.data;
  }
  gpu::EwPlan p;
  NNC_CHECK(gpu::make_plan(p, ref.dim.data(), ref.nd, static_cast<int>(ts.size()), sp), "%s: cannot plan the kernel",
            what);
  return p;
}

void run_act(ccv_nnc_stream_context_t* stream, ccv_nnc_tensor_t* const* inputs, int input_size,
             ccv_nnc_tensor_t* const* outputs, int output_size, const char* what, int op,
             const std::vector<const ccv_nnc_tensor_t*>& outs, const std::vector<const ccv_nnc_tensor_t*>& ins,
             const ActArgs& args) {
  const ccv_nnc_tensor_t* ref = nullptr;
  for (const ccv_nnc_tensor_t* t : outs)
    if (t && !ref) ref = t;
  NNC_CHECK(ref, "%s: no output to compute", what);
  const Layout r = layout_of(ref, what);
  std::vector<const ccv_nnc_tensor_t*> ts = outs;
  ts.insert(ts.end(), ins.begin(), ins.end());
  EwPtrs q;
  const gpu::EwPlan p = plan_n(r, ts, &q, what);
  const Call c(stream, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_act(c.s, gpu_type(r.datatype), p, q, op, static_cast<int>(outs.size()), static_cast<int>(ins.size()),
                     args));
  c.done();
}

// --- activations ---------------------------------------------------------

int act_forward_op(const ccv_nnc_cmd_t& cmd) {
  switch (cmd.cmd & ~1u) {
    case CCV_NNC_LEAKY_RELU_FORWARD:
      return kActLeakyRelu;
    case CCV_NNC_GELU_FORWARD:
      return cmd.info.gelu.tanh ? kActGeluTanh : kActGelu;
    default:
      return kActSwish;
  }
}

NNC_KERNEL(act_forward) {
  const char* what = name_of(cmd.cmd);
  ActArgs a;
  a.a = cmd.info.leaky_relu.negative_slope;
  run_act(stream_context, inputs, input_size, outputs, output_size, what, act_forward_op(cmd), {outputs[0]},
          {inputs[0]}, a);
  return CCV_NNC_EXEC_SUCCESS;
}

// |g|x|y| -> |dx|: GELU and SWISH read x; LEAKY_RELU x, or y when x is NULL.
const ccv_nnc_tensor_t* act_operand(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size) {
  const ccv_nnc_tensor_t* x = in_at(inputs, input_size, 1);
  if (!x && (cmd.cmd & ~1u) == CCV_NNC_LEAKY_RELU_FORWARD) return in_at(inputs, input_size, 2);
  return x;
}

bool accept_act_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size) {
  return output_size >= 1 && outputs[0] && accept_gpu(cmd, inputs, input_size, outputs, output_size) &&
         act_operand(cmd, inputs, input_size);
}

NNC_KERNEL(act_backward) {
  const char* what = name_of(cmd.cmd);
  int op = kActSwishGrad;
  switch (act_forward_op(cmd)) {
    case kActLeakyRelu:
      op = kActLeakyReluGrad;
      break;
    case kActGelu:
      op = kActGeluGrad;
      break;
    case kActGeluTanh:
      op = kActGeluTanhGrad;
      break;
    default:
      break;
  }
  const ccv_nnc_tensor_t* t = act_operand(cmd, inputs, input_size);
  NNC_CHECK(t, "%s: the input it reads (x) is missing", what);
  ActArgs a;
  a.a = cmd.info.leaky_relu.negative_slope;
  run_act(stream_context, inputs, input_size, outputs, output_size, what, op, {outputs[0]}, {inputs[0], t}, a);
  return CCV_NNC_EXEC_SUCCESS;
}

// --- CLAMP, MIN, MAX -----------------------------------------------------

ActArgs clamp_args(const ccv_nnc_cmd_t& cmd) {
  ActArgs a;
  a.lo = cmd.info.clamp.min;
  a.hi = cmd.info.clamp.max;
  a.has_lo = a.lo == a.lo;  // a NaN bound is no bound
  a.has_hi = a.hi == a.hi;
  return a;
}

NNC_KERNEL(math_forward) {
  const char* what = name_of(cmd.cmd);
  if (cmd.cmd == CCV_NNC_CLAMP_FORWARD) {
    run_act(stream_context, inputs, input_size, outputs, output_size, what, kActClamp, {outputs[0]}, {inputs[0]},
            clamp_args(cmd));
  } else {
    run_act(stream_context, inputs, input_size, outputs, output_size, what,
            cmd.cmd == CCV_NNC_MIN_FORWARD ? kActMin : kActMax, {outputs[0]}, {inputs[0], inputs[1]}, ActArgs{});
  }
  return CCV_NNC_EXEC_SUCCESS;
}

// CLAMP: |g|x|y| -> |dx| reads y; MIN / MAX: |g|a|b|y| -> |da|db| reads a and b.
bool accept_math_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                          ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!accept_gpu(cmd, inputs, input_size, outputs, output_size)) return false;
  if (cmd.cmd == CCV_NNC_CLAMP_BACKWARD) return output_size >= 1 && outputs[0] && in_at(inputs, input_size, 2);
  return in_at(inputs, input_size, 1) && in_at(inputs, input_size, 2) && output_size >= 1;
}

NNC_KERNEL(math_backward) {
  const char* what = name_of(cmd.cmd);
  if (cmd.cmd == CCV_NNC_CLAMP_BACKWARD) {
    run_act(stream_context, inputs, input_size, outputs, output_size, what, kActClampGrad, {outputs[0]},
            {inputs[0], in_at(inputs, input_size, 2)}, clamp_args(cmd));
  } else {
    const ccv_nnc_tensor_t* db = output_size > 1 ? outputs[1] : nullptr;
    run_act(stream_context, inputs, input_size, outputs, output_size, what,
            cmd.cmd == CCV_NNC_MIN_BACKWARD ? kActMinGrad : kActMaxGrad, {outputs[0], db},
            {inputs[0], inputs[1], inputs[2]}, ActArgs{});
  }
  return CCV_NNC_EXEC_SUCCESS;
}

// --- TRANSPOSE: pairs |x_i| -> |y_i| (backward |g_i|..| -> |dx_i|), any type --

bool accept_transpose(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < output_size || !on_one_gpu(inputs, output_size, outputs, output_size, nullptr)) return false;
  for (int i = 0; i < output_size; i++) {
    if (!inputs[i] || !outputs[i]) return false;
    const int es = CCV_GET_DATA_TYPE_SIZE(inputs[i]->info.datatype);
    if (es != 1 && es != 2 && es != 4 && es != 8) return false;
    // Not in place (libnnc declares no pair): a swap would read what it has overwritten.
    if (inputs[i]->data.u8 == outputs[i]->data.u8 && cmd.info.transpose.axis[0] != cmd.info.transpose.axis[1])
      return false;
  }
  return true;
}

NNC_KERNEL(transpose) {
  const char* what = name_of(cmd.cmd);
  const int a = cmd.info.transpose.axis[0], b = cmd.info.transpose.axis[1];
  const Call c(stream_context, device_of(inputs, output_size, outputs, output_size), what);
  for (int i = 0; i < output_size; i++) {
    const Layout x = layout_of(inputs[i], what), y = layout_of(outputs[i], what);
    NNC_CHECK(a >= 0 && a < x.nd && b >= 0 && b < x.nd && x.nd == y.nd, "%s: axes %d and %d do not fit", what, a, b);
    int64_t st[2][gpu::kPlanDims] = {};
    for (int d = 0; d < y.nd; d++) {
      st[0][d] = y.stride[d];
      st[1][d] = x.stride[d == a ? b : d == b ? a : d];  // y[..i..j..] = x[..j..i..]
    }
    const int64_t* sp[] = {st[0], st[1]};
    gpu::EwPlan p;
    NNC_CHECK(gpu::make_plan(p, y.dim.data(), y.nd, 2, sp), "%s: cannot plan the kernel", what);
    if (p.count) c.check(launch_copy(c.s, p, y.data, x.data, static_cast<int>(y.element_size)));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// The backwards that scatter g into dx with atomic additions (PAD,
// UPSAMPLE): 32F adds into the zeroed dx with float atomics; 16F and 16BF add
// into a zeroed, packed double scratch of dx's shape (8 bytes an element,
// stream-ordered), then one conversion rounds each sum once into dx, as
// CPU_REF's double sums rounded once. Not half atomics: they would round at
// every addition. Not a float scratch: a double holds a sum of 16F values
// exactly (all are multiples of 2^-24 below 2^16) while its partial sums stay
// below 2^29, so PAD's sums are order-free and bit-equal to CPU_REF's (16BF:
// error ~2^-53, far below its rounding); UPSAMPLE's weighted taps are off by
// a few double roundings at most. 64F is refused with a message (the
// kernels load through float).
struct Accumulator {
  Layout acc;  // where the kernel adds: dx, or the scratch (packed, 64F)
  std::unique_ptr<StreamBlock> block;
  bool scratch = false;
};

Accumulator accumulator_of(const Call& c, const Layout& g, const Layout& dx, const char* what) {
  const int t = dx.datatype;
  if (g.datatype != t || (t != CCV_32F && t != CCV_16F && t != CCV_16BF))
    fail(CCV_NNC_EXEC_NO_KERNEL,
         "%s: GPU_REF sums the gradient in float or double and takes 32F, 16F and 16BF, g and dx of one type "
         "(g is %s, dx %s): run 64F on the CPU",
         what, datatype_name(g.datatype), datatype_name(t));
  Accumulator a;
  a.acc = dx;
  if (t == CCV_32F) return a;
  a.scratch = true;
  a.block = std::make_unique<StreamBlock>(dx.count() * sizeof(double), c.s, what);
  a.acc.data = static_cast<unsigned char*>(a.block->get());
  a.acc.datatype = CCV_64F;
  a.acc.element_size = sizeof(double);
  nnc::packed_strides(dx.dim.data(), dx.nd, a.acc.stride.data());
  return a;
}

// dx = the scratch's sums, each rounded once (nothing for 32F).
void store_sums(const Call& c, const Accumulator& a, const Layout& dx) {
  if (!a.scratch) return;
  const gpu::EwPlan p = plan_of(dx, {&a.acc}, c.what);
  if (p.count) c.check(launch_convert(c.s, p, dx.data, gpu_type(dx.datatype), a.acc.data, kF64));
}

// --- PAD: |x| -> |y| (any type); |g|x..| -> |dx| (32F, 16F, 16BF) -------------

// dx (or y) zeroed on the call's stream.
void zero(const Call& c, const Layout& t) {
  const gpu::EwPlan p = plan_of(t, {}, c.what);
  if (p.count) c.check(launch_fill(c.s, p, t.data, 0, static_cast<int>(t.element_size)));
}

gpu::PadMap pad_map_of(const ccv_nnc_cmd_t& cmd, const Layout& small, const Layout& big, const char* what) {
  int begin[kMaxDim] = {};
  for (int d = 0; d < small.nd; d++) begin[d] = cmd.info.size.dim[d];
  gpu::PadMap m;
  NNC_CHECK(small.nd == big.nd && gpu::make_pad_map(m, cmd.info.pad.type, small.dim.data(), small.stride.data(),
                                                    big.dim.data(), big.stride.data(), small.nd, begin),
            "%s: %s does not pad to %s", what, shape_string_n(small.dim.data(), small.nd).c_str(),
            shape_string_n(big.dim.data(), big.nd).c_str());
  return m;
}

bool accept_pad(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return false;
  if (!on_one_gpu(inputs, 1, outputs, 1, nullptr)) return false;
  if (inputs[0]->data.u8 == outputs[0]->data.u8) return false;  // no in-place pair
  const int es = CCV_GET_DATA_TYPE_SIZE(inputs[0]->info.datatype);
  // The backward: 32F, 16F, 16BF; 64F only to be refused with a message
  // (accumulator_of).
  if (cmd.cmd == CCV_NNC_PAD_BACKWARD) return CCV_GET_DATA_TYPE(inputs[0]->info.datatype) & types::kFloat;
  return es == 1 || es == 2 || es == 4 || es == 8;
}

NNC_KERNEL(pad_forward) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  const gpu::PadMap m = pad_map_of(cmd, x, y, what);
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  c.check(launch_pad(c.s, m, y.data, x.data, static_cast<int>(y.element_size)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(pad_backward) {
  const char* what = name_of(cmd.cmd);
  const Layout g = layout_of(inputs[0], what), dx = layout_of(outputs[0], what);
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  const Accumulator a = accumulator_of(c, g, dx, what);
  const gpu::PadMap m = pad_map_of(cmd, a.acc, g, what);
  zero(c, a.acc);
  c.check(launch_pad_backward(c.s, gpu_type(g.datatype), m, g.data, a.acc.data));
  store_sums(c, a, dx);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- UPSAMPLE: |x| -> |y|, |g|x|y| -> |dx| (32F, 16F, 16BF) ------------------

bool accept_upsample(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                     ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return false;
  if (!on_one_gpu(inputs, 1, outputs, 1, nullptr)) return false;
  if (inputs[0]->data.u8 == outputs[0]->data.u8) return false;  // no in-place pair
  // The backward: 32F, 16F, 16BF; 64F only to be refused with a message
  // (accumulator_of).
  return cmd.cmd == CCV_NNC_UPSAMPLE_FORWARD || (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) & types::kFloat);
}

gpu::UpMap up_map_of(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* small_t, const Layout& small, const Layout& big,
                     const char* what) {
  gpu::UpMap m;
  NNC_CHECK(small.nd == big.nd &&
                gpu::make_up_map(m, cmd.info.upsample.type == CCV_NNC_UPSAMPLE_NEAREST,
                                 cmd.info.upsample.align_corners ? 1 : 0, upsample::height_axis(small_t->info),
                                 big.dim.data(), big.stride.data(), small.dim.data(), small.stride.data(), small.nd),
            "%s: %s and %s are not an image and its resize", what, shape_string_n(small.dim.data(), small.nd).c_str(),
            shape_string_n(big.dim.data(), big.nd).c_str());
  return m;
}

NNC_KERNEL(upsample_forward) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  const gpu::UpMap m = up_map_of(cmd, inputs[0], x, y, what);
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  c.check(launch_upsample(c.s, gpu_type(y.datatype), m, y.data, x.data));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(upsample_backward) {
  const char* what = name_of(cmd.cmd);
  const Layout g = layout_of(inputs[0], what), dx = layout_of(outputs[0], what);
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  const Accumulator a = accumulator_of(c, g, dx, what);
  const gpu::UpMap m = up_map_of(cmd, outputs[0], a.acc, g, what);
  zero(c, a.acc);
  c.check(launch_upsample_backward(c.s, gpu_type(g.datatype), m, g.data, a.acc.data));
  store_sums(c, a, dx);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- REDUCE_MIN / REDUCE_NORM2 forward, REDUCE_MAX / MIN / NORM2 backward ---

bool accept_reduce2(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                    ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || !inputs[0] || output_size < 1 || !outputs[0]) return false;
  // 64F too, only to be refused with a message (refuse_f64).
  const int t = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
  if (!(t & types::kFloat) || CCV_GET_DATA_TYPE(outputs[0]->info.datatype) != t) return false;
  return on_one_gpu(inputs, 1, outputs, 1, nullptr) && inputs[0]->data.u8 != outputs[0]->data.u8;
}

NNC_KERNEL(reduce2_forward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, 1, outputs, 1, what);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  NNC_CHECK(x.nd == y.nd, "%s: x is %s but y is %s; y keeps x's rank", what, shape_string(inputs[0]->info.dim).c_str(),
            shape_string(outputs[0]->info.dim).c_str());
  const int64_t* ins[] = {x.stride.data()};
  gpu::ReducePlan rp;
  NNC_CHECK(gpu::make_reduce_plan(rp, x.dim.data(), x.nd, y.dim.data(), y.stride.data(), y.nd, 1, ins),
            "%s: x %s does not reduce to y %s", what, shape_string(inputs[0]->info.dim).c_str(),
            shape_string(outputs[0]->info.dim).c_str());
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  c.check(launch_reduce2(c.s, gpu_type(y.datatype), rp, gpu::choose_reduce(rp), y.data, x.data,
                         cmd.cmd == CCV_NNC_REDUCE_MIN_FORWARD ? kRed2Min : kRed2Norm2));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// |g|x|y| -> |dx|: every one needed, of one float type.
bool accept_reduce2_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                             ccv_nnc_tensor_t* const* outputs, int output_size) {
  return input_size >= 3 && inputs[0] && inputs[1] && inputs[2] && output_size >= 1 && outputs[0] &&
         accept_gpu(cmd, inputs, 3, outputs, 1);
}

NNC_KERNEL(reduce2_backward) {
  const char* what = name_of(cmd.cmd);
  run_act(stream_context, inputs, 3, outputs, 1, what,
          cmd.cmd == CCV_NNC_REDUCE_NORM2_BACKWARD ? kActNorm2Grad : kActReduceMaxGrad, {outputs[0]},
          {inputs[0], inputs[1], inputs[2]}, ActArgs{});
  return CCV_NNC_EXEC_SUCCESS;
}

// --- ARGMAX / ARGMIN: |x| -> |indices| (32S) along reduce.axis[0] ----------

bool accept_arg(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  if (input_size < 1 || !inputs[0] || output_size < 1 || !outputs[0]) return false;
  const int t = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
  return (t == CCV_32F || t == CCV_16F || t == CCV_16BF) && CCV_GET_DATA_TYPE(outputs[0]->info.datatype) == CCV_32S &&
         on_one_gpu(inputs, 1, outputs, 1, nullptr);
}

NNC_KERNEL(arg_forward) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  const int axis = cmd.info.reduce.axis[0];
  NNC_CHECK(x.nd == y.nd && axis >= 0 && axis < x.nd && y.dim[axis] == 1, "%s: y %s is not x %s reduced along axis %d",
            what, shape_string(outputs[0]->info.dim).c_str(), shape_string(inputs[0]->info.dim).c_str(), axis);
  int64_t st[2][gpu::kPlanDims] = {};
  for (int d = 0; d < y.nd; d++) {
    NNC_CHECK(d == axis || x.dim[d] == y.dim[d], "%s: y %s is not x %s reduced along axis %d", what,
              shape_string(outputs[0]->info.dim).c_str(), shape_string(inputs[0]->info.dim).c_str(), axis);
    st[0][d] = y.stride[d];
    st[1][d] = x.stride[d];
  }
  const int64_t* sp[] = {st[0], st[1]};
  gpu::EwPlan p;
  NNC_CHECK(gpu::make_plan(p, y.dim.data(), y.nd, 2, sp), "%s: cannot plan the kernel", what);
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  c.check(launch_arg(c.s, gpu_type(x.datatype), p, reinterpret_cast<int32_t*>(y.data), x.data, x.dim[axis],
                     x.stride[axis], cmd.cmd == CCV_NNC_ARGMAX_FORWARD));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- losses (lib/cmd/loss/loss.cpp's contracts) -----------------------------

int loss_op(uint32_t cmd) {
  switch (cmd & ~1u) {
    case CCV_NNC_MSE_FORWARD:
      return kLossMse;
    case CCV_NNC_SMOOTH_L1_FORWARD:
      return kLossSmoothL1;
    case CCV_NNC_BINARY_CROSSENTROPY_FORWARD:
      return kLossBce;
    default:
      return kLossSigmoidBce;
  }
}

LossArgs loss_args(const ccv_nnc_cmd_t& cmd, int cols) {
  LossArgs p;
  p.w = cmd.info.binary_crossentropy.pos_weight;
  p.beta = cmd.info.smooth_l1.beta;
  p.k = loss_op(cmd.cmd) == kLossMse && cmd.info.mse.reduce_op != CCV_NNC_MSE_REDUCE_SUM ? cols : 1;
  return p;
}

const ccv_nnc_tensor_t* out_at(ccv_nnc_tensor_t* const* outputs, int output_size, int i) {
  return i < output_size ? outputs[i] : nullptr;
}

// Every tensor present on one GPU (the traits' types: 32F, 16F, 16BF, and
// 64F only to be refused with a message), and what the backward reads there.
bool accept_loss(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  if (!(cmd.cmd & 1)) return input_size >= 2 && inputs[0] && inputs[1];
  if (loss_op(cmd.cmd) != kLossSigmoidBce) return input_size >= 3 && inputs[1] && inputs[2];
  // |g|g_sigmoid|z|y|loss|sigmoid|: y, and z or the saved sigmoid; dy needs z.
  const ccv_nnc_tensor_t* z = in_at(inputs, input_size, 2);
  if (!in_at(inputs, input_size, 3) || (!z && !in_at(inputs, input_size, 5))) return false;
  return z || !out_at(outputs, output_size, 1);
}

NNC_KERNEL(loss_forward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const ccv_nnc_tensor_t* s = loss_op(cmd.cmd) == kLossSigmoidBce ? out_at(outputs, output_size, 1) : nullptr;
  RowArgs a;
  set_rows(a, {inputs[0], inputs[1], s}, what);
  set_item(a, 0, outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_loss_rows(c.s, a, loss_op(cmd.cmd), loss_args(cmd, a.cols)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(loss_backward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const int op = loss_op(cmd.cmd);
  const ccv_nnc_tensor_t *a0, *b, *gs = nullptr, *s = nullptr;
  if (op == kLossSigmoidBce) {
    gs = in_at(inputs, input_size, 1);
    a0 = in_at(inputs, input_size, 2);
    b = in_at(inputs, input_size, 3);
    s = a0 ? nullptr : in_at(inputs, input_size, 5);
  } else {
    a0 = in_at(inputs, input_size, 1);
    b = in_at(inputs, input_size, 2);
  }
  RowArgs a;
  set_rows(a, {a0, b, out_at(outputs, output_size, 0), out_at(outputs, output_size, 1), gs, s}, what);
  set_item(a, 0, inputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_loss_rows_backward(c.s, a, op, loss_args(cmd, a.cols)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- LAYER_NORM / RMSNORM / GROUP_NORM ---------------------------------------

bool accept_norm(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  // GROUP_NORM splits its group axis in two: one axis more than x.
  const ccv_nnc_tensor_t* x = (cmd.cmd & 1) ? in_at(inputs, input_size, cmd.cmd == CCV_NNC_RMSNORM_BACKWARD ? 2 : 3)
                                            : in_at(inputs, input_size, 0);
  return x && nd_of(x->info.dim) < gpu::kPlanDims;
}

// One norm call's operands: strides over the full shape (x's, or x's split).
struct NormCall {
  int nd = 0;
  int dim[gpu::kPlanDims] = {};
  int64_t st[gpu::kNormOperands][gpu::kPlanDims] = {};
  bool present[gpu::kNormOperands] = {};
  NormPtrs q;
};

// Operand k: t (x-shaped when want is NULL, else a small tensor of want's
// non-1 extents over x's axes), split for GROUP_NORM (ga >= 0).
void set_norm(NormCall& n, int k, const ccv_nnc_tensor_t* t, const Layout& x, const int* want, int ga, int groups,
              bool by_group, const char* what) {
  if (!t) return;
  const Layout l = layout_of(t, what);
  int64_t s[kMaxDim] = {};
  if (want) {
    NNC_CHECK(gpu::small_strides(l.dim.data(), l.stride.data(), l.nd, want, x.nd, s), "%s: %s does not fit x %s", what,
              shape_string(t->info.dim).c_str(), shape_string_n(x.dim.data(), x.nd).c_str());
  } else {
    NNC_CHECK(l.nd == x.nd && same_shape(t->info.dim, x.dim.data()), "%s: %s is not x's shape %s", what,
              shape_string(t->info.dim).c_str(), shape_string_n(x.dim.data(), x.nd).c_str());
    for (int i = 0; i < x.nd; i++) s[i] = l.stride[i];
  }
  if (ga >= 0)
    gpu::split_strides(s, x.nd, ga, x.dim[ga] / groups, by_group, n.st[k]);
  else
    for (int i = 0; i < x.nd; i++) n.st[k][i] = s[i];
  NNC_CHECK(l.datatype == x.datatype, "%s: %s is %s but x is %s; GPU_REF takes one type (as CPU_REF)", what,
            shape_string(t->info.dim).c_str(), datatype_name(l.datatype), datatype_name(x.datatype));
  n.present[k] = true;
  n.q.ptr[k] = l.data;
  n.q.type = gpu_type(x.datatype);
}

gpu::NormPlan norm_plan(const NormCall& n, unsigned norm, unsigned param, const char* what) {
  const int64_t* sp[gpu::kNormOperands];
  for (int k = 0; k < gpu::kNormOperands; k++) sp[k] = n.present[k] ? n.st[k] : nullptr;
  gpu::NormPlan p;
  NNC_CHECK(gpu::make_norm_plan(p, n.dim, n.nd, sp, norm, param), "%s: cannot plan the kernel", what);
  return p;
}

// The full shape and masks: RMSNORM over its axes; GROUP_NORM split.
struct NormShape {
  int ga = -1, groups = 1;
  unsigned norm = 0, param = 0;
  int stats[kMaxDim] = {}, scale[kMaxDim] = {};
};

NormShape norm_shape(const ccv_nnc_cmd_t& cmd, const Layout& x, NormCall& n, const char* what) {
  NormShape sh;
  const uint32_t fwd = cmd.cmd & ~1u;
  if (fwd == CCV_NNC_RMSNORM_FORWARD || fwd == CCV_NNC_LAYER_NORM_FORWARD) {
    // LAYER_NORM normalises over its axes as RMSNORM does, with a mean and a bias.
    const unsigned mask = fwd == CCV_NNC_RMSNORM_FORWARD
                              ? axis_mask(what, cmd.info.rmsnorm.axis, cmd.info.rmsnorm.count, x.nd)
                              : axis_mask(what, cmd.info.lnorm.axis, cmd.info.lnorm.count, x.nd);
    for (int i = 0; i < x.nd; i++) {
      sh.stats[i] = (mask >> i) & 1u ? 1 : x.dim[i];
      sh.scale[i] = (mask >> i) & 1u ? x.dim[i] : 1;
    }
    sh.norm = sh.param = mask;
    n.nd = x.nd;
    for (int i = 0; i < x.nd; i++) n.dim[i] = x.dim[i];
    return sh;
  }
  sh.ga = cmd.info.gnorm.group_axis;
  sh.groups = cmd.info.gnorm.groups;
  const unsigned red = norm::gnorm_reduce_mask(cmd);
  for (int i = 0; i < x.nd; i++) {
    sh.stats[i] = i == sh.ga ? sh.groups : (red >> i) & 1u ? 1 : x.dim[i];
    sh.scale[i] = i == sh.ga ? x.dim[i] : 1;
  }
  sh.norm = 1u << (sh.ga + 1);
  sh.param = (1u << sh.ga) | (1u << (sh.ga + 1));
  for (int i = 0; i < x.nd; i++)
    if ((red >> i) & 1u) sh.norm |= 1u << (i > sh.ga ? i + 1 : i);
  n.nd = x.nd + 1;
  gpu::split_dims(x.dim.data(), x.nd, sh.ga, sh.groups, n.dim);
  return sh;
}

// The row kernels' choice (gpu::choose_norm_rows) for a LAYER_NORM /
// RMSNORM call's operands; GROUP_NORM (ga >= 0) goes the general way.
gpu::NormRows rows_of(const NormCall& n, const gpu::NormPlan& p, int ga) {
  if (ga >= 0) return {};
  uintptr_t addr[gpu::kNormOperands];
  for (int k = 0; k < gpu::kNormOperands; k++) addr[k] = reinterpret_cast<uintptr_t>(n.q.ptr[k]);
  const int es = n.q.type == kF32 ? 4 : n.q.type == kF16 || n.q.type == kBF16 ? 2 : 0;
  return gpu::choose_norm_rows(p, n.present, addr, es);
}

// A norm call's operands as the kernels take them, with its plan and the
// row kernels' choice (rows_of). The forward: x, y, scale, bias and the saved
// statistics; the backward's dx pass: x, g, dx, scale and the statistics; its
// parameter pass: x, g, dscale, dbias and the statistics (NULLs stay absent).
struct NormSetup {
  NormCall n;
  NormShape sh;
  gpu::NormPlan p;
  gpu::NormRows rows;
};
NormSetup norm_setup(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, int k1, const ccv_nnc_tensor_t* t1, int k2,
                     const ccv_nnc_tensor_t* t2, const ccv_nnc_tensor_t* scale, const ccv_nnc_tensor_t* bias,
                     const ccv_nnc_tensor_t* mean, const ccv_nnc_tensor_t* inv, const char* what) {
  NormSetup u;
  const Layout xl = layout_of(x, what);
  u.sh = norm_shape(cmd, xl, u.n, what);
  const NormShape& sh = u.sh;
  set_norm(u.n, gpu::kNormX, x, xl, nullptr, sh.ga, sh.groups, false, what);
  set_norm(u.n, k1, t1, xl, nullptr, sh.ga, sh.groups, false, what);
  if (k2 >= 0) set_norm(u.n, k2, t2, xl, nullptr, sh.ga, sh.groups, false, what);
  set_norm(u.n, gpu::kNormScale, scale, xl, sh.scale, sh.ga, sh.groups, false, what);
  set_norm(u.n, gpu::kNormBias, bias, xl, sh.scale, sh.ga, sh.groups, false, what);
  set_norm(u.n, gpu::kNormMean, mean, xl, sh.stats, sh.ga, sh.groups, true, what);
  set_norm(u.n, gpu::kNormInv, inv, xl, sh.stats, sh.ga, sh.groups, true, what);
  u.p = norm_plan(u.n, sh.norm, sh.param, what);
  u.rows = rows_of(u.n, u.p, sh.ga);
  return u;
}
NormSetup forward_setup(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* y,
                        const ccv_nnc_tensor_t* scale, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* mean,
                        const ccv_nnc_tensor_t* inv, const char* what) {
  return norm_setup(cmd, x, gpu::kNormY, y, -1, nullptr, scale, bias, mean, inv, what);
}
NormSetup backward_dx_setup(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* g,
                            const ccv_nnc_tensor_t* dx, const ccv_nnc_tensor_t* scale, const ccv_nnc_tensor_t* mean,
                            const ccv_nnc_tensor_t* inv, const char* what) {
  return norm_setup(cmd, x, gpu::kNormG, g, gpu::kNormDx, dx, scale, nullptr, mean, inv, what);
}
NormSetup backward_params_setup(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* g,
                                const ccv_nnc_tensor_t* dscale, const ccv_nnc_tensor_t* dbias,
                                const ccv_nnc_tensor_t* mean, const ccv_nnc_tensor_t* inv, const char* what) {
  return norm_setup(cmd, x, gpu::kNormG, g, -1, nullptr, dscale, dbias, mean, inv, what);
}

NNC_KERNEL(norm_forward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const bool rms = cmd.cmd == CCV_NNC_RMSNORM_FORWARD;
  ccv_nnc_tensor_t *x, *scale, *bias = nullptr, *y, *mean = nullptr, *inv;
  if (rms) {
    const norm::RmsNormIo io = norm::rmsnorm_forward_io(inputs, input_size, outputs, output_size);
    x = io.x, scale = io.scale, y = io.y, inv = io.saved_inv_std;
  } else {
    const norm::GroupNormIo io = cmd.cmd == CCV_NNC_LAYER_NORM_FORWARD
                                     ? norm::layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size)
                                     : norm::group_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
    x = io.x, scale = io.scale, bias = io.bias, y = io.y, mean = io.saved_mean, inv = io.saved_inv_std;
  }
  const NormSetup u = forward_setup(cmd, x, y, scale, bias, mean, inv, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  const float eps = rms                                     ? cmd.info.rmsnorm.epsilon
                    : cmd.cmd == CCV_NNC_LAYER_NORM_FORWARD ? cmd.info.lnorm.epsilon
                                                            : cmd.info.gnorm.epsilon;
  if (u.rows.fast)
    c.check(launch_norm_rows_forward(c.s, u.rows, u.p.groups.outer, u.n.q, rms, eps));
  else
    c.check(launch_norm_forward(c.s, u.p.groups, u.p.group_size, u.n.q, rms, eps));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(norm_backward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const bool rms = cmd.cmd == CCV_NNC_RMSNORM_BACKWARD;
  ccv_nnc_tensor_t *g, *x, *scale, *mean = nullptr, *inv, *dx, *dscale, *dbias = nullptr;
  if (rms) {
    const norm::RmsNormIo io = norm::rmsnorm_backward_io(inputs, input_size, outputs, output_size);
    g = io.g, x = io.x, scale = io.scale, inv = io.saved_inv_std, dx = io.dx, dscale = io.dscale;
  } else {
    const norm::GroupNormIo io = cmd.cmd == CCV_NNC_LAYER_NORM_BACKWARD
                                     ? norm::layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size)
                                     : norm::group_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
    g = io.g, x = io.x, scale = io.scale, mean = io.saved_mean, inv = io.saved_inv_std, dx = io.dx, dscale = io.dscale,
    dbias = io.dbias;
  }
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  // Both passes read g, x and the statistics before any output is written
  // (dscale / dbias first: dx may be g).
  std::unique_ptr<StreamBlock> partial;  // the row case's dscale / dbias partials, kept until done()
  if (dscale || dbias) {
    const NormSetup u = backward_params_setup(cmd, x, g, dscale, dbias, mean, inv, what);
    if (u.rows.fast) {
      const gpu::NormCols cols = gpu::choose_norm_cols(u.p.groups.outer.count, u.p.group_size);
      partial = std::make_unique<StreamBlock>(static_cast<size_t>(2 * cols.splits * u.p.group_size) * sizeof(float),
                                              c.s, what);
      c.check(launch_norm_cols_params(c.s, cols, u.p.groups.outer, u.p.group_size, u.n.q, rms,
                                      static_cast<float*>(partial->get())));
    } else {
      c.check(launch_norm_backward_params(c.s, u.p.params, u.n.q, rms));
    }
  }
  if (dx) {
    const NormSetup u = backward_dx_setup(cmd, x, g, dx, scale, mean, inv, what);
    if (u.rows.fast)
      c.check(launch_norm_rows_backward_dx(c.s, u.rows, u.p.groups.outer, u.n.q, rms));
    else
      c.check(launch_norm_backward_dx(c.s, u.p.groups, u.p.group_size, u.n.q, rms));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- LAMB: |g|a|m|v| -> |b|n|u| ----------------------------------------------

bool accept_lamb(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size != 4 || output_size != 3 || !on_one_gpu(inputs, input_size, outputs, output_size, nullptr))
    return false;
  for (int i = 0; i < 4; i++)
    if (!inputs[i]) return false;
  for (int i = 0; i < 3; i++)
    if (!outputs[i]) return false;
  // Pass 2 reads a and the new moments: b may be a, but not n or u (nor g, m, v, read in pass 1).
  for (int i : {0, 2, 3})
    if (inputs[i]->data.u8 == outputs[0]->data.u8) return false;
  return outputs[0]->data.u8 != outputs[1]->data.u8 && outputs[0]->data.u8 != outputs[2]->data.u8;
}

NNC_KERNEL(lamb) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const gpu::LambCoef c = gpu::lamb_coef_of(cmd);
  const Layout a = layout_of(inputs[1], what);
  std::vector<const ccv_nnc_tensor_t*> ts = {inputs[0],  inputs[1],  inputs[2], inputs[3],
                                             outputs[0], outputs[1], outputs[2]};
  for (const ccv_nnc_tensor_t* t : ts)
    NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) == a.datatype,
              "%s: a tensor is %s but a is %s (one type, as CPU_REF)", what,
              datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)), datatype_name(a.datatype));
  EwPtrs q;
  const gpu::EwPlan p = plan_n(a, ts, &q, what);
  const int device = device_of(inputs, input_size, outputs, output_size);
  const Call call(stream_context, device, what);
  double* sums = static_cast<double*>(device_alloc_on(device, 2 * sizeof(double), call.s, what));
  const cudaError_t z = cudaMemsetAsync(sums, 0, 2 * sizeof(double), call.s);
  const cudaError_t e = z == cudaSuccess ? launch_lamb(call.s, gpu_type(a.datatype), p, q, c, sums) : z;
  device_free_on(device, sums);  // stream-ordered: after the kernels queued above
  call.check(e);
  call.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- CMUL: |a|b| -> |c|; |g|a|b| -> |da|db| ------------------------------------

// A tensor as pairs over `n` axes of the full pair shape: its strides (0 where
// it broadcasts, the last doubled) and the distance to the imaginary part.
void pair_strides(const Layout& t, const int* half, int n, int64_t* s, int64_t* im, const char* what) {
  NNC_CHECK(gpu::pair_strides(t.dim.data(), t.stride.data(), t.nd, half, n, s, im),
            "%s: %s is not of (real, imaginary) pairs broadcasting to the others", what,
            shape_string_n(t.dim.data(), t.nd).c_str());
}

bool accept_cmul(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  // Every tensor present of one float type (the family's check); 64F only to
  // be refused with a message (refuse_f64).
  int type = 0;
  for (int i = 0; i < input_size + output_size; i++) {
    const ccv_nnc_tensor_t* x = i < input_size ? inputs[i] : outputs[i - input_size];
    if (!x) continue;
    const int t = CCV_GET_DATA_TYPE(x->info.datatype);
    if (!(t & types::kFloat) || (type && t != type)) return false;
    type = t;
  }
  if (cmd.cmd == CCV_NNC_CMUL_FORWARD) return input_size >= 2 && inputs[0] && inputs[1] && output_size >= 1;
  // Backward: a gradient that is an input would be overwritten while sums still read it.
  for (int j = 0; j < output_size && j < 2; j++)
    for (int i = 0; i < input_size && i < 3; i++)
      if (outputs[j] && inputs[i] && outputs[j]->data.u8 == inputs[i]->data.u8) return false;
  return input_size >= 3 && inputs[1] && inputs[2];
}

NNC_KERNEL(cmul_forward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const Layout a = layout_of(inputs[0], what), b = layout_of(inputs[1], what), c = layout_of(outputs[0], what);
  int half[kMaxDim];
  for (int i = 0; i < c.nd; i++) half[i] = c.dim[i];
  half[c.nd - 1] = c.dim[c.nd - 1] / 2;
  int64_t st[3][gpu::kPlanDims] = {}, im[3];
  pair_strides(c, half, c.nd, st[0], &im[0], what);
  pair_strides(a, half, c.nd, st[1], &im[1], what);
  pair_strides(b, half, c.nd, st[2], &im[2], what);
  const int64_t* sp[] = {st[0], st[1], st[2]};
  gpu::EwPlan p;
  NNC_CHECK(gpu::make_plan(p, half, c.nd, 3, sp), "%s: cannot plan the kernel", what);
  const Call call(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  call.check(launch_cmul(call.s, gpu_type(c.datatype), p, c.data, a.data, b.data, im));
  call.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(cmul_backward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const ccv_nnc_tensor_t* gt = inputs[0];
  const Layout a = layout_of(inputs[1], what), b = layout_of(inputs[2], what);
  // The full shape: g's, or (NULL g) the broadcast of a and b.
  int full[kMaxDim] = {};
  int n = 0;
  if (gt) {
    const Layout g = layout_of(gt, what);
    n = g.nd;
    for (int i = 0; i < n; i++) full[i] = g.dim[i];
  } else {
    n = std::max(a.nd, b.nd);
    for (int i = 0; i < n; i++) {
      const int ja = i - (n - a.nd), jb = i - (n - b.nd);
      full[i] = std::max(ja >= 0 ? a.dim[ja] : 1, jb >= 0 ? b.dim[jb] : 1);
    }
  }
  int half[kMaxDim];
  for (int i = 0; i < n; i++) half[i] = full[i];
  half[n - 1] = full[n - 1] / 2;
  int64_t gs[gpu::kPlanDims] = {}, gim = 0;
  if (gt) pair_strides(layout_of(gt, what), half, n, gs, &gim, what);
  const Call call(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  for (int j = 0; j < 2 && j < output_size; j++) {
    if (!outputs[j]) continue;
    const Layout d = layout_of(outputs[j], what);
    const Layout& o = j == 0 ? b : a;  // da = g conj(b), db = g conj(a)
    int64_t os[gpu::kPlanDims] = {}, ds[gpu::kPlanDims] = {}, im[3] = {0, gim, 0};
    pair_strides(o, half, n, os, &im[2], what);
    int64_t dsh[gpu::kPlanDims] = {};
    pair_strides(d, half, n, dsh, &im[0], what);  // checks d's pairs; its own strides below
    int dh[kMaxDim];
    for (int i = 0; i < d.nd; i++) dh[i] = d.dim[i], ds[i] = d.stride[i];
    dh[d.nd - 1] = d.dim[d.nd - 1] / 2;
    ds[d.nd - 1] = 2 * d.stride[d.nd - 1];
    const int64_t* ins[] = {gs, os};
    gpu::ReducePlan rp;
    NNC_CHECK(gpu::make_reduce_plan(rp, half, n, dh, ds, d.nd, 2, ins), "%s: gradient %d %s does not reduce from %s",
              what, j, shape_string(outputs[j]->info.dim).c_str(), shape_string_n(full, n).c_str());
    call.check(launch_cmul_backward(call.s, gpu_type(d.datatype), rp, d.data, gt ? gt->data.ptr : nullptr, o.data, im));
  }
  call.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- REDUCE_ISNAN -------------------------------------------------------------

int flag_code(int type) {
  switch (CCV_GET_DATA_TYPE(type)) {
    case CCV_32F:
      return 0;
    case CCV_64F:
      return 1;
    case CCV_16F:
      return 2;
    case CCV_16BF:
      return 3;
    case CCV_32S:
      return 4;
    case CCV_64S:
      return 5;
    case CCV_8U:
      return 6;
    default:
      return -1;
  }
}

bool accept_isnan(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (cmd.cmd == CCV_NNC_REDUCE_ISNAN_BACKWARD) return on_one_gpu(nullptr, 0, outputs, output_size, nullptr);
  if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return false;
  const int t = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
  return (t == CCV_32F || t == CCV_16F || t == CCV_16BF) && flag_code(outputs[0]->info.datatype) >= 0 &&
         on_one_gpu(inputs, 1, outputs, 1, nullptr) && inputs[0]->data.u8 != outputs[0]->data.u8;
}

NNC_KERNEL(isnan_forward) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  const int64_t* ins[] = {x.stride.data()};
  gpu::ReducePlan rp;
  NNC_CHECK(x.nd == y.nd && gpu::make_reduce_plan(rp, x.dim.data(), x.nd, y.dim.data(), y.stride.data(), y.nd, 1, ins),
            "%s: x %s does not reduce to y %s", what, shape_string(inputs[0]->info.dim).c_str(),
            shape_string(outputs[0]->info.dim).c_str());
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  c.check(launch_isnan(c.s, rp, y.data, flag_code(y.datatype), x.data, gpu_type(x.datatype)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(isnan_backward) {
  const char* what = name_of(cmd.cmd);
  const Call c(stream_context, device_of(nullptr, 0, outputs, output_size), what);
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) zero(c, layout_of(outputs[i], what));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- SET_BACKWARD, RANDOM_*_BACKWARD: fills -------------------------------------

bool accept_fill(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const* outputs,
                 int output_size) {
  return on_one_gpu(nullptr, 0, outputs, output_size, nullptr);
}

NNC_KERNEL(fill) {
  const char* what = name_of(cmd.cmd);
  const double v = cmd.cmd == CCV_NNC_SET_BACKWARD ? cmd.info.blas.a[0] : 0.0;
  const Call c(stream_context, device_of(nullptr, 0, outputs, output_size), what);
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout y = layout_of(outputs[i], what);
    unsigned char pattern[8];
    util::fill_pattern(v, y.datatype, pattern);
    uint64_t bits = 0;
    std::memcpy(&bits, pattern, 8);
    const gpu::EwPlan p = plan_of(y, {}, what);
    if (p.count) c.check(launch_fill(c.s, p, y.data, bits, static_cast<int>(y.element_size)));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

bool layer_norm_takes_rows(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                           ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (cmd.cmd != CCV_NNC_LAYER_NORM_FORWARD && cmd.cmd != CCV_NNC_LAYER_NORM_BACKWARD) return false;
  try {
    const char* what = name_of(cmd.cmd);
    if (cmd.cmd == CCV_NNC_LAYER_NORM_FORWARD) {
      const norm::GroupNormIo io = norm::layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
      return io.x && io.y &&
             forward_setup(cmd, io.x, io.y, io.scale, io.bias, io.saved_mean, io.saved_inv_std, what).rows.fast;
    }
    // The backward: its dx pass (without dx, the dscale / dbias pass), as norm_backward chooses.
    const norm::GroupNormIo io = norm::layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
    if (!io.x || !io.g) return false;
    if (io.dx)
      return backward_dx_setup(cmd, io.x, io.g, io.dx, io.scale, io.saved_mean, io.saved_inv_std, what).rows.fast;
    return (io.dscale || io.dbias) &&
           backward_params_setup(cmd, io.x, io.g, io.dscale, io.dbias, io.saved_mean, io.saved_inv_std, what).rows.fast;
  } catch (...) {
    return false;
  }
}

// Every backend of this file: the one call register_cuda makes.
void register_gpu_more(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF;
  r.add_kernels(t.accepting(accept_gpu), {{CCV_NNC_LEAKY_RELU_FORWARD, act_forward},
                                          {CCV_NNC_GELU_FORWARD, act_forward},
                                          {CCV_NNC_SWISH_FORWARD, act_forward},
                                          {CCV_NNC_CLAMP_FORWARD, math_forward},
                                          {CCV_NNC_MIN_FORWARD, math_forward},
                                          {CCV_NNC_MAX_FORWARD, math_forward}});
  r.add_kernels(t.accepting(accept_act_backward), {{CCV_NNC_LEAKY_RELU_BACKWARD, act_backward},
                                                   {CCV_NNC_GELU_BACKWARD, act_backward},
                                                   {CCV_NNC_SWISH_BACKWARD, act_backward}});
  r.add_kernels(t.accepting(accept_math_backward), {{CCV_NNC_CLAMP_BACKWARD, math_backward},
                                                    {CCV_NNC_MIN_BACKWARD, math_backward},
                                                    {CCV_NNC_MAX_BACKWARD, math_backward}});
  KernelTraits all = t;
  all.datatypes = types::kAll;
  r.add_kernels(all.accepting(accept_transpose),
                {{CCV_NNC_TRANSPOSE_FORWARD, transpose}, {CCV_NNC_TRANSPOSE_BACKWARD, transpose}});
  r.add_kernels(all.accepting(accept_pad), {{CCV_NNC_PAD_FORWARD, pad_forward}, {CCV_NNC_PAD_BACKWARD, pad_backward}});
  // Losses, norms, LAMB, REDUCE_MIN / NORM2 forward and CMUL: 32F, 16F and
  // 16BF computed in float (CMUL in double); 64F reaches their kernels only
  // to be refused with a message (refuse_f64).
  KernelTraits fl = t;
  fl.datatypes = CCV_32F | CCV_16F | CCV_16BF | CCV_64F;
  r.add_kernels(fl.accepting(accept_reduce2),
                {{CCV_NNC_REDUCE_MIN_FORWARD, reduce2_forward}, {CCV_NNC_REDUCE_NORM2_FORWARD, reduce2_forward}});
  r.add_kernels(t.accepting(accept_reduce2_backward), {{CCV_NNC_REDUCE_MAX_BACKWARD, reduce2_backward},
                                                       {CCV_NNC_REDUCE_MIN_BACKWARD, reduce2_backward},
                                                       {CCV_NNC_REDUCE_NORM2_BACKWARD, reduce2_backward}});
  KernelTraits arg = t;
  arg.datatypes = CCV_32F | CCV_16F | CCV_16BF | CCV_32S;
  r.add_kernels(arg.accepting(accept_arg),
                {{CCV_NNC_ARGMAX_FORWARD, arg_forward}, {CCV_NNC_ARGMIN_FORWARD, arg_forward}});
  r.add_kernels(fl.accepting(accept_loss), {{CCV_NNC_MSE_FORWARD, loss_forward},
                                            {CCV_NNC_MSE_BACKWARD, loss_backward},
                                            {CCV_NNC_SMOOTH_L1_FORWARD, loss_forward},
                                            {CCV_NNC_SMOOTH_L1_BACKWARD, loss_backward},
                                            {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, loss_forward},
                                            {CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, loss_backward},
                                            {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, loss_forward},
                                            {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, loss_backward}});
  r.add_kernels(fl.accepting(accept_norm), {{CCV_NNC_LAYER_NORM_FORWARD, norm_forward},
                                            {CCV_NNC_LAYER_NORM_BACKWARD, norm_backward},
                                            {CCV_NNC_RMSNORM_FORWARD, norm_forward},
                                            {CCV_NNC_RMSNORM_BACKWARD, norm_backward},
                                            {CCV_NNC_GROUP_NORM_FORWARD, norm_forward},
                                            {CCV_NNC_GROUP_NORM_BACKWARD, norm_backward}});
  r.add_kernels(fl.accepting(accept_lamb), {{CCV_NNC_LAMB_FORWARD, lamb}});
  r.add_kernels(fl.accepting(accept_cmul),
                {{CCV_NNC_CMUL_FORWARD, cmul_forward}, {CCV_NNC_CMUL_BACKWARD, cmul_backward}});
  r.add_kernels(all.accepting(accept_isnan),
                {{CCV_NNC_REDUCE_ISNAN_FORWARD, isnan_forward}, {CCV_NNC_REDUCE_ISNAN_BACKWARD, isnan_backward}});
  r.add_kernels(
      all.accepting(accept_fill),
      {{CCV_NNC_SET_BACKWARD, fill}, {CCV_NNC_RANDOM_UNIFORM_BACKWARD, fill}, {CCV_NNC_RANDOM_NORMAL_BACKWARD, fill}});
  r.add_kernels(t.accepting(accept_upsample),
                {{CCV_NNC_UPSAMPLE_FORWARD, upsample_forward}, {CCV_NNC_UPSAMPLE_BACKWARD, upsample_backward}});
}

}  // namespace nnc::cuda
