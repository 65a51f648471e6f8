// GPU tensors across processes: the staging helpers (across.cpp) and the
// hook through which the CUDA module runs the COMM_ commands on NCCL across
// the processes of a communicator (cuda/nccl_across.cpp). The core never
// links CUDA or NCCL: without the module (or without NCCL) the hooks are
// absent and GPU tensors go through host staging (device -> pinned host ->
// MPI -> device), always by the library's own DATA_TRANSFER commands.
#pragma once

#include <cstddef>

#include "nnc/ccv_nnc.h"

namespace nnc::comm {

struct GpuAcrossHooks {
  // Runs the COMM_ command `cmd` across `comm` on `n` pairs that are all on
  // the GPU, straight between device memory. Returns false to decline (the
  // call then stages through the host); throws nnc::Error with a message on
  // failure. `stream` is the call's stream context (may be NULL): the
  // collective is ordered after the stream's work and its results before the
  // stream's later work.
  bool (*run)(ccv_nnc_comm_t* comm, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs, int n,
              ccv_nnc_stream_context_t* stream);
  // Releases a device communicator `run` cached on a communicator
  // (cache_device_state); `broken`: the communicator failed (abort rather
  // than wait for the others).
  void (*destroy)(void* state, bool broken);
};

// Installed once by the CUDA module when the library initialises; NULL
// removes them.
void set_gpu_across_hooks(const GpuAcrossHooks* hooks);
const GpuAcrossHooks* gpu_across_hooks();

// The device communicator cached on `comm` for `device` (NULL if none), and
// its storing (run by the hook under the communicator's lock: `made` is
// called once per (communicator, device) and its result kept until the
// communicator is freed, then handed to the hooks' destroy).
void* device_state(ccv_nnc_comm_t* comm, int device, void* (*made)(ccv_nnc_comm_t* comm, int device, void* arg), void* arg);

// Whether NNC_COMM_GPU_STAGING=1 asks for host staging even where the hooks
// could run the collective on the device.
bool staging_forced();

// A tensor (CPU or GPU, any strides) packed into host memory `host`
// (count x element size bytes) and back, by DATA_TRANSFER for GPU tensors
// (a view goes through a packed device copy first); never by touching device
// memory from the host. Synchronous: on return the bytes are there.
void to_host(const ccv_nnc_tensor_t* t, void* host, const char* what);
void from_host(const void* host, ccv_nnc_tensor_t* t, const char* what);

bool is_gpu_tensor(const ccv_nnc_tensor_t* t);

}  // namespace nnc::comm
