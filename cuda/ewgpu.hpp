// Helpers shared by the GPU_REF backends (ewgpu.cpp, reduce_gpu.cpp,
// loss_optim_gpu.cpp): which GPU a call runs on, its stream, and plans over
// tensors' layouts (cmd/common/gpu_plan.hpp).
#pragma once

#include <memory>

#include "cuda/cuda.hpp"

#include <initializer_list>
#include <string>

#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

// True when every tensor present is a plain tensor or view in the memory of
// one GPU (its id in *device).
bool on_one_gpu(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
                int* device);
// That GPU (0 when there is none).
int device_of(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size);
GpuType gpu_type(int datatype);
std::string shape_string_n(const int* dim, int nd);

// The element-wise plan over y's shape of y and each x broadcast to it
// (a NULL x: a NULL operand, strides 0). Throws when an x does not broadcast.
gpu::EwPlan plan_of(const Layout& y, std::initializer_list<const Layout*> xs, const char* what);

// One kernel call's stream: made by stream_of, ended by done() (finish).
struct Call {
  ccv_nnc_stream_context_t* stream;
  const char* what;
  cudaStream_t s;
  Call(ccv_nnc_stream_context_t* ctx, int device, const char* what);
  void check(cudaError_t e) const;  // a launch's status
  void done() const;
};

// A device int a kernel sets to flag bad input (a class index, a row
// index), starting at 0. done() ends the call (finish) and returns the flag.
// On a synchronous call (no stream context, or a CPU one) it is a block of the
// module's allocator, read back. On a GPU stream context, which the call
// cannot wait for, it is a slot of the stream's device error log and done()
// returns 0: the slot is read back when the host next waits for the stream,
// and a nonzero value is reported then as a failure of the stream
// (core/stream_errors.hpp), worded by describe_gpu_flag
// (cmd/common/gpu_flags.cpp) from the command's name: a new user of
// DeviceFlag adds its command's encoding there.
class DeviceFlag {
 public:
  DeviceFlag(const Call& c, bool needed);
  ~DeviceFlag();
  int* device() const { return d_; }
  int done();
  DeviceFlag(const DeviceFlag&) = delete;
  DeviceFlag& operator=(const DeviceFlag&) = delete;

 private:
  const Call& c_;
  std::unique_ptr<StreamBlock> block_;
  int* d_ = nullptr;
  int host_ = 0;
};

// y = x, two views of one shape on the GPU.
void copy_layout(const Call& c, const Layout& y, const Layout& x);

// DATA_TRANSFER of a to b, both on one GPU, views allowed (transfer.cpp).
void copy_views(ccv_nnc_stream_context_t* stream, const ccv_nnc_tensor_t* a, ccv_nnc_tensor_t* b, const char* what);

void register_ewgpu(Registry& r);

// Whether GPU_REF runs this LAYER_NORM call (forward, or the backward's dx
// pass — without dx its dscale / dbias pass) on its row kernels
// (gpu::choose_norm_rows; more_gpu.cpp). GPU_CUDNN declines those calls: on
// an H200 the row kernels ran 3.5 to 17 times faster than GPU_CUDNN's layer
// norm (bench-cudnn, 8192x1024 and 4096x4096 fp32). False for bad input.
bool layer_norm_takes_rows(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                           ccv_nnc_tensor_t* const* outputs, int output_size);

}  // namespace nnc::cuda
