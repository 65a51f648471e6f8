// DATA_TRANSFER between host and device memory, and within a device
// (GPU_REF): one copy per input / output pair of packed tensors of the same
// type and size, queued with cudaMemcpyAsync on the call's stream (stream.hpp):
// on a GPU stream context the call returns once the copies are queued; without
// one (or on a CPU stream context, whose worker runs the call) it waits for
// them. Host memory on a GPU stream: from pinned host memory
// (ccv_nnc_tensor_pin_memory) the copy is truly asynchronous and the host
// buffer must stay untouched until the stream has passed it; from pageable
// memory CUDA stages the data, so a host-to-device copy may return before the
// device has it (the host buffer may be reused at once) and a device-to-host
// copy into pageable memory completes before the call returns. Either way, read
// a host output only after ccv_nnc_stream_context_wait (or a signal).
#include "core/kernel.hpp"
#include "nnc/ccv_nnc_easy.h"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

namespace {

bool packed(const ccv_nnc_tensor_t* t) { return t && !CCV_IS_TENSOR_VIEW(t) && !CCV_IS_TENSOR_MULTIVIEW(t); }

// Views are copied within one GPU (copy_views, ewgpu.cpp).
bool both_on_one_gpu(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) {
  return !CCV_IS_TENSOR_MULTIVIEW(a) && !CCV_IS_TENSOR_MULTIVIEW(b) && CCV_TENSOR_GET_MEMORY(a->info.type) == CCV_TENSOR_GPU_MEMORY &&
         CCV_TENSOR_GET_MEMORY(b->info.type) == CCV_TENSOR_GPU_MEMORY &&
         CCV_TENSOR_GET_DEVICE_ID(a->info.type) == CCV_TENSOR_GET_DEVICE_ID(b->info.type);
}

bool accept_transfer(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                     int output_size) {
  bool any_gpu = false;
  for (int i = 0; i < input_size && i < output_size; i++) {
    if (!inputs[i] || !outputs[i]) continue;
    if ((!packed(inputs[i]) || !packed(outputs[i])) && !both_on_one_gpu(inputs[i], outputs[i])) return false;
    any_gpu = any_gpu || CCV_TENSOR_GET_MEMORY(inputs[i]->info.type) == CCV_TENSOR_GPU_MEMORY ||
              CCV_TENSOR_GET_MEMORY(outputs[i]->info.type) == CCV_TENSOR_GPU_MEMORY;
  }
  return any_gpu;  // host-to-host copies stay on the CPU backends
}

NNC_KERNEL(transfer) {
  static const char* what = "DATA_TRANSFER (GPU_REF)";
  for (int i = 0; i < input_size && i < output_size; i++) {
    const ccv_nnc_tensor_t* a = inputs[i];
    ccv_nnc_tensor_t* b = outputs[i];
    if (!a || !b || a == b) continue;
    if (!packed(a) || !packed(b)) {
      copy_views(stream_context, a, b, what);
      continue;
    }
    const size_t bytes = ccv_nnc_tensor_data_size_without_padding(a->info);
    NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) == CCV_GET_DATA_TYPE(b->info.datatype) &&
                  bytes == ccv_nnc_tensor_data_size_without_padding(b->info),
              "%s: pair %d: %s %s cannot be copied into %s %s", what, i, datatype_name(a->info.datatype), shape_string(a->info.dim).c_str(),
              datatype_name(b->info.datatype), shape_string(b->info.dim).c_str());
    const bool from_gpu = CCV_TENSOR_GET_MEMORY(a->info.type) == CCV_TENSOR_GPU_MEMORY;
    const bool to_gpu = CCV_TENSOR_GET_MEMORY(b->info.type) == CCV_TENSOR_GPU_MEMORY;
    const cudaMemcpyKind kind = from_gpu ? (to_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                         : (to_gpu ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    // Device to device across GPUs: queued on the source's stream (a GPU
    // stream context on the other device is refused by stream_of).
    const cudaStream_t s = stream_of(stream_context, CCV_TENSOR_GET_DEVICE_ID((from_gpu ? a : b)->info.type), what);
    NNC_CUDA_CHECK(cudaMemcpyAsync(b->data.u8, a->data.u8, bytes, kind, s), what);
    finish(stream_context, s, what);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_transfer(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.datatypes = types::kAll;
  t.memory = CCV_TENSOR_CPU_MEMORY | CCV_TENSOR_GPU_MEMORY;
  r.add_kernels(t.accepting(accept_transfer), {{CCV_NNC_DATA_TRANSFER_FORWARD, transfer}, {CCV_NNC_DATA_TRANSFER_BACKWARD, transfer}});
}

}  // namespace nnc::cuda
