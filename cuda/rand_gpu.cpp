// GPU_REF random commands, with the CPU_REF contracts (lib/cmd/rand/rand.cpp):
//   DROPOUT_FORWARD |x| -> |y|mask| and DROPOUT_BACKWARD |g|g_mask|x|y|mask| ->
//     |dx|, 32F, 16F, 16BF or 64F (x and y, g and dx of one type), views, the
//     mask as libnnc's reserved space (bytes in x's row-major order) or an 8U
//     tensor of x's shape, entirety too;
//   RANDOM_UNIFORM_FORWARD and RANDOM_NORMAL_FORWARD into 32F, 16F, 16BF or
//     64F tensors (every type CPU_REF fills).
// Each execution draws its seed from the stream's generator as CPU_REF does,
// and every element's value is the same function of (seed, index), computed
// in double and stored as CPU_REF stores it: a seed gives the same mask and
// values on the GPU as on the CPU. So, as on the CPU, a 16F / 16BF tensor
// gets under a seed the 32F tensor's values rounded to the type (the same
// draws: DROPOUT's mask and RANDOM_*'s values do not depend on the type,
// except RANDOM_UNIFORM into 64F, which takes 53 bits of word64(i)).
#include "cmd/rand/rand.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"

namespace nnc::cuda {

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

bool is_float(const ccv_nnc_tensor_t* t) { return t && (CCV_GET_DATA_TYPE(t->info.datatype) & types::kFloat); }

bool accept_dropout(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                    ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr) || output_size < 1 || !is_float(outputs[0]))
    return false;
  // The data in one type (validate checks it; the mask may be any type).
  const int type = CCV_GET_DATA_TYPE(outputs[0]->info.datatype);
  auto same = [&](const ccv_nnc_tensor_t* t) { return is_float(t) && CCV_GET_DATA_TYPE(t->info.datatype) == type; };
  if (cmd.cmd == CCV_NNC_DROPOUT_FORWARD) return input_size >= 1 && same(inputs[0]) && output_size >= 2 && outputs[1];
  return input_size >= 5 && same(inputs[0]) && inputs[4];
}

NNC_KERNEL(dropout_forward) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what), m = layout_of(outputs[1], what);
  const bool shaped = rand::mask_like_x(outputs[1], inputs[0]);
  const bool entirety = cmd.info.dropout.entirety != 0;
  const rand::Counter ctr(rand::draw_seed(stream_context));
  const uint64_t t = rand::dropout_threshold(cmd.info.dropout.p);
  const double scale = rand::dropout_scale(cmd.info.dropout.p);
  const int keep_all = entirety ? (ctr.word32(0) >= t ? 1 : 0) : -1;
  const gpu::EwPlan p = shaped && !entirety ? plan_of(x, {&y, &m}, what) : plan_of(x, {&y}, what);
  // plan_of puts x first; the kernel wants y, x, mask.
  gpu::EwPlan q = p;
  for (int d = 0; d < q.nd; d++) {
    q.stride[0][d] = p.stride[1][d];
    q.stride[1][d] = p.stride[0][d];
  }
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  if (entirety) NNC_CUDA_CHECK(cudaMemsetAsync(m.data, keep_all, 1, c.s), what);
  c.check(launch_dropout(c.s, gpu_type(y.datatype), q, y.data, x.data, m.data, shaped && !entirety, ctr.key, t, scale,
                         keep_all));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(dropout_backward) {
  const char* what = name_of(cmd.cmd);
  const Layout g = layout_of(inputs[0], what), m = layout_of(inputs[4], what), dx = layout_of(outputs[0], what);
  const bool shaped = rand::mask_like_x(inputs[4], inputs[0]);
  const bool entirety = cmd.info.dropout.entirety != 0;
  const double scale = rand::dropout_scale(cmd.info.dropout.p);
  const gpu::EwPlan p = shaped && !entirety ? plan_of(dx, {&g, &m}, what) : plan_of(dx, {&g}, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_dropout_backward(c.s, gpu_type(dx.datatype), p, dx.data, g.data, m.data, shaped && !entirety, scale,
                                  entirety));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

bool accept_random(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const* outputs,
                   int output_size) {
  return output_size >= 1 && is_float(outputs[0]) && on_one_gpu(nullptr, 0, outputs, 1, nullptr);
}

NNC_KERNEL(random) {
  const char* what = name_of(cmd.cmd);
  const Layout y = layout_of(outputs[0], what);
  const rand::Counter ctr(rand::draw_seed(stream_context));
  const bool normal = cmd.cmd == CCV_NNC_RANDOM_NORMAL_FORWARD;
  const double a = cmd.info.blas.a[0];
  const double b = normal ? static_cast<double>(cmd.info.blas.a[1]) : static_cast<double>(cmd.info.blas.a[1]) - a;
  const gpu::EwPlan p = plan_of(y, {}, what);
  const Call c(stream_context, device_of(nullptr, 0, outputs, 1), what);
  c.check(launch_random(c.s, gpu_type(y.datatype), p, y.data, ctr.key, normal, a, b));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_rand_gpu(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = types::kAll;  // the mask may be 8U or reserved space of any type; accept wants float data
  r.add_kernels(t.accepting(accept_dropout),
                {{CCV_NNC_DROPOUT_FORWARD, dropout_forward}, {CCV_NNC_DROPOUT_BACKWARD, dropout_backward}});
  r.add_kernels(t.accepting(accept_random),
                {{CCV_NNC_RANDOM_UNIFORM_FORWARD, random}, {CCV_NNC_RANDOM_NORMAL_FORWARD, random}});
}

}  // namespace nnc::cuda
