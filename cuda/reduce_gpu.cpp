// GPU_REF reductions (the contract of lib/cmd/reduce/reduce.cpp):
// REDUCE_SUM / REDUCE_MEAN / REDUCE_MAX forward over any axes, |x| -> |y|
// with y of x's rank and extent 1 on the reduced axes; REDUCE_SUM /
// REDUCE_MEAN backward |g|x|y| -> |dx| (g broadcast over the reduced axes,
// divided by the count for MEAN; x and y unread). 32F, 16F and 16BF (x and y
// of one type: the family's check), loaded as float, summed in float, each
// output rounded once on store; 64F is refused with a message (GPU_REF
// computes in float). Any strides (views). MAX propagates NaN as CPU_REF does. The reduction is one kernel
// (reduce_kernels.cu): a thread or a block per output, chosen by
// cmd/common/gpu_plan.hpp.
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/rows.hpp"

namespace nnc::cuda {

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "reduction (GPU_REF)";
}

// Every tensor present of a float type CPU_REF reduces (the family checks
// that they agree); 64F only to be refused with a message (refuse_f64).
bool accept_reduce(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                   ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || !inputs[0] || output_size < 1 || !outputs[0]) return false;
  for (int i = 0; i < input_size; i++)
    if (inputs[i] && !(CCV_GET_DATA_TYPE(inputs[i]->info.datatype) & types::kFloat)) return false;
  if (!(CCV_GET_DATA_TYPE(outputs[0]->info.datatype) & types::kFloat)) return false;
  return on_one_gpu(inputs, input_size, outputs, 1, nullptr);
}

NNC_KERNEL(reduce_forward) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  refuse_f64(inputs, 1, outputs, 1, what);
  NNC_CHECK(x.datatype == y.datatype, "%s: x is %s but y is %s", what, datatype_name(x.datatype),
            datatype_name(y.datatype));
  NNC_CHECK(x.nd == y.nd, "%s: x is %s but y is %s; y keeps x's rank", what, shape_string(inputs[0]->info.dim).c_str(),
            shape_string(outputs[0]->info.dim).c_str());
  const int64_t* ins[] = {x.stride.data()};
  gpu::ReducePlan rp;
  NNC_CHECK(gpu::make_reduce_plan(rp, x.dim.data(), x.nd, y.dim.data(), y.stride.data(), y.nd, 1, ins),
            "%s: x %s does not reduce to y %s", what, shape_string(inputs[0]->info.dim).c_str(),
            shape_string(outputs[0]->info.dim).c_str());
  const int op = cmd.cmd == CCV_NNC_REDUCE_MAX_FORWARD ? kRedMax : kRedSum;
  const float scale =
      cmd.cmd == CCV_NNC_REDUCE_MEAN_FORWARD ? static_cast<float>(1.0 / static_cast<double>(rp.inner.count)) : 1.f;
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  NNC_CHECK(x.data != y.data || rp.inner.count == 1, "%s: y cannot be x itself", what);
  const gpu::ReduceLaunch l = gpu::choose_reduce_sliced(rp);
  StreamBlock scratch(static_cast<size_t>(gpu::reduce_scratch_elements(l, rp)) * sizeof(float), c.s, what);
  c.check(launch_reduce_as(c.s, gpu_type(y.datatype), rp, l, y.data, x.data, nullptr, op, scale,
                           static_cast<float*>(scratch.get())));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(reduce_backward) {
  const char* what = name_of(cmd.cmd);
  const Layout g = layout_of(inputs[0], what), dx = layout_of(outputs[0], what);
  refuse_f64(inputs, input_size, outputs, 1, what);
  NNC_CHECK(g.datatype == dx.datatype, "%s: g is %s but dx is %s", what, datatype_name(g.datatype),
            datatype_name(dx.datatype));
  double count = 1;
  for (int i = 0; i < dx.nd; i++)
    if (i < g.nd && g.dim[i] == 1) count *= dx.dim[i];
  const float scale = cmd.cmd == CCV_NNC_REDUCE_MEAN_BACKWARD ? static_cast<float>(1.0 / count) : 1.f;
  const Call c(stream_context, device_of(inputs, 1, outputs, 1), what);
  const gpu::EwPlan p = plan_of(dx, {&g}, what);
  EwPtrs q;
  q.p[0] = dx.data;
  q.p[1] = g.data;
  c.check(launch_ew(c.s, gpu_type(dx.datatype), p, q, kEwScale, 1, scale, 0));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_reduce_gpu(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF | CCV_64F;
  r.add_kernels(t.accepting(accept_reduce), {{CCV_NNC_REDUCE_SUM_FORWARD, reduce_forward},
                                             {CCV_NNC_REDUCE_MEAN_FORWARD, reduce_forward},
                                             {CCV_NNC_REDUCE_MAX_FORWARD, reduce_forward},
                                             {CCV_NNC_REDUCE_SUM_BACKWARD, reduce_backward},
                                             {CCV_NNC_REDUCE_MEAN_BACKWARD, reduce_backward}});
}

}  // namespace nnc::cuda
