// Which CUDA stream a GPU kernel runs on, and when its caller waits for it.
// Every GPU kernel launches its work with stream_of(stream_context, device)
// and ends with finish(): a call without a GPU stream context is synchronous
// (the results are there when ccv_nnc_cmd_exec returns, as libnnc promises);
// a call on a GPU stream context returns once the work is queued.
//
// A GPU stream context (ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU |
// device)) owns a non-blocking CUDA stream on its device, a cuBLAS handle
// bound to it with a workspace of its own, and device scratch memory
// (ccv_nnc_stream_context_get_workspace(..., CCV_TENSOR_GPU_MEMORY)); the core
// reaches them through the hooks installed here (core/gpu_stream.hpp).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "nnc/ccv_nnc.h"

namespace nnc::cuda {

// The CUDA stream for work on `device` asked with `stream` (a GPU stream
// context, or NULL / a CPU stream context for a synchronous call). Makes
// `device` current. A GPU stream context on another device is refused.
cudaStream_t stream_of(ccv_nnc_stream_context_t* stream, int device, const char* what);

// After the launches of a kernel on `s`: checks the launch status and, where
// the call is synchronous, waits for `s` and checks how it ended.
void finish(ccv_nnc_stream_context_t* stream, cudaStream_t s, const char* what);

// The cuBLAS handle for work on `s` = stream_of(stream, device, what): the
// GPU stream context's own (bound to its stream, with its own workspace), or
// for a synchronous call the calling thread's handle of `device`, bound to `s`.
cublasHandle_t cublas_handle(ccv_nnc_stream_context_t* stream, int device, cudaStream_t s, const char* what);

// Per-stream objects of other libraries (a cuDNN handle, ...): the object kept
// under `key` for the GPU stream context `stream`, made by make(device, its
// CUDA stream) on first use and released by destroy when the stream context
// is freed (after its work). NULL for a stream that is not a GPU stream
// context (the caller keeps its own for synchronous calls). `make` throws on
// failure.
void* stream_attachment(ccv_nnc_stream_context_t* stream, const void* key, void* (*make)(int device, cudaStream_t s),
                        void (*destroy)(void* object));

// For a kernel call's bad-input flag (ewgpu.hpp: DeviceFlag) on a GPU stream
// context: a device int of the stream's error log, 0 now, lent to this call
// of `what` until the host next waits for the stream, which reads it back (a
// nonzero value becomes a failure of the stream, reported by
// ccv_nnc_stream_context_wait). When every slot is lent, waits for the stream
// and reads them back first. NULL for NULL or a CPU stream context (the call
// is synchronous: it keeps its own flag). Throws on CUDA failure.
int* error_slot(ccv_nnc_stream_context_t* stream, const char* what);

// Registers the GPU stream hooks with the core (register_cuda calls it).
void install_stream_hooks();

}  // namespace nnc::cuda
