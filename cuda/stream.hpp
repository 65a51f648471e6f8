// Which CUDA stream a GPU kernel runs on, and when its caller waits for it.
// Every GPU kernel launches its work with stream_of(stream_context, device)
// and ends with finish(): a call without a GPU stream context is synchronous
// (the results are there when ccv_nnc_cmd_exec returns, as libnnc promises);
// a call on a GPU stream context returns once the work is queued.
#pragma once

#include <cuda_runtime.h>

#include "nnc/ccv_nnc.h"

namespace nnc::cuda {

// The CUDA stream for work on `device` asked with `stream` (a GPU stream
// context, or NULL / a CPU stream context for a synchronous call). Makes
// `device` current.
cudaStream_t stream_of(ccv_nnc_stream_context_t* stream, int device, const char* what);

// After the launches of a kernel on `s`: checks the launch status and, where
// the call is synchronous, waits for `s` and checks how it ended.
void finish(ccv_nnc_stream_context_t* stream, cudaStream_t s, const char* what);

}  // namespace nnc::cuda
