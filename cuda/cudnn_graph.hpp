// GPU_CUDNN's convolutions through cuDNN's graph (backend) API
// (cudnn_graph.cpp; the numbers from cmd/common/cudnn_graph_plan.hpp). The
// legacy kernels in cudnn.cpp call these first: each returns true when it ran
// the call on the graph API, false when the legacy path should run it (the
// switch is off, or the graph API has no plan for this shape: remembered, so
// the next call of the shape goes straight to the legacy path).
//
// NNC_CUDNN_GRAPH (read at every call): 0 / unset the legacy API only; 1 the
// graph API first; 2 the graph API only (a shape it has no plan for is
// refused with nnc::Declined, saying why: for tests and benchmarks).
// NNC_CUDNN_GRAPH_REJECT=1 (tests) skips every engine configuration, as if
// none finalized: the "no plan" path end to end. NNC_CUDNN_GRAPH_VERBOSE=1
// prints each shape's plan (or why it has none) once; NNC_CUDNN_TRACE=1, as
// for the legacy calls, prints every call the graph API ran and its engine.
//
// Every call: `h` the Lease's handle (bound to `s`), `stream` the call's
// stream context (the plan cache lives with the stream's own handle there),
// `p` the plan, the descriptors of the image side (x or dx) and the output
// side (y or dy), the device pointers, `what` for messages.
#pragma once

#include <cudnn.h>

#include "cmd/common/cudnn_plan.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::cuda::cudnn_graph {

// y = conv(x, w) (y described by y_desc, x by x_desc).
bool conv_forward(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s,
                  const cudnn_plan::Conv& p, const cudnn_plan::Tensor4& x_desc, const cudnn_plan::Tensor4& y_desc,
                  const void* x, const void* w, void* y, const char* what);
// dx = the data gradient from dy and w.
bool conv_backward_data(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s,
                        const cudnn_plan::Conv& p, const cudnn_plan::Tensor4& dx_desc,
                        const cudnn_plan::Tensor4& dy_desc, const void* w, const void* dy, void* dx, const char* what);
// dw = the filter gradient from x and dy (dw packed in p.w's layout).
bool conv_backward_filter(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s,
                          const cudnn_plan::Conv& p, const cudnn_plan::Tensor4& x_desc,
                          const cudnn_plan::Tensor4& dy_desc, const void* x, const void* dy, void* dw,
                          const char* what);

}  // namespace nnc::cuda::cudnn_graph
