// The host side of GPU_CUDNN's convolutions through cuDNN's graph (backend)
// API (cuda/cudnn_graph.cpp): what each backend descriptor is given, worked
// out without any CUDA or cuDNN header so that the ordinary build compiles it
// and CPU tests check it (test/unit/cmd_cudnn_plan/graph_plan_test.cpp).
//
// A convolution planned by cudnn_plan (Conv: dims and element strides in
// (n, c, h, w) order, the filter {K, C/groups, KH, KW} in one of two layouts,
// symmetric pads) becomes one operation of the graph API:
//   forward          y  = conv(x, w)     (CONVOLUTION_FORWARD: X, W, Y)
//   backward data    dx = conv^T(dy, w)  (CONVOLUTION_BACKWARD_DATA: DX, W, DY)
//   backward filter  dw = conv^T(x, dy)  (CONVOLUTION_BACKWARD_FILTER: X, DW, DY)
// over three 4-d tensors given by dims and strides (int64, logical
// (n, c, h, w) order whatever the memory layout: a filter's strides say KCRS
// or KRSC) and a convolution descriptor (2 spatial dims, pre = post padding,
// filter strides, dilations; groups are not an attribute: the graph API reads
// them from x's channels over the filter's). Every tensor carries a unique id
// (its role below) and the byte alignment of its pointer (at most 16).
//
//   cudnn_graph_plan::GraphConv g = cudnn_graph_plan::make(Op::kForward, p, p.x, p.y);
//   std::vector<int64_t> key = cudnn_graph_plan::key(g, device, tf32, aligns);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cmd/common/cudnn_plan.hpp"

namespace nnc::cudnn_graph_plan {

enum class Op { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

// A tensor descriptor's numbers (CUDNN_ATTR_TENSOR_DIMENSIONS / _STRIDES).
struct GraphTensor {
  int64_t dim[4] = {0, 0, 0, 0};
  int64_t stride[4] = {0, 0, 0, 0};
};

// The unique ids of the three tensors (CUDNN_ATTR_TENSOR_UNIQUE_ID and the
// variant pack's ids), by role in the convolution whatever the operation:
// the image side x (x or dx), the filter side w (w or dw), the output side y
// (y or dy).
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

// One operation of the graph API.
struct GraphConv {
  Op op = Op::kForward;
  int datatype = 0;    // CCV_32F, CCV_16F or CCV_16BF: every tensor's; compute type fp32
  GraphTensor x, w, y;  // by role (see kUidX ...)
  int64_t pad[2] = {0, 0};  // pre = post padding
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
};

// An image descriptor as the graph API takes it (dims and strides as they are).
GraphTensor image(const cudnn_plan::Tensor4& t);
// A packed filter's descriptor: dims {K, C/groups, KH, KW}; strides of KCRS
// memory (NCHW weights) or KRSC memory (NHWC weights).
GraphTensor filter(const cudnn_plan::Filter& f);

// The operation `op` of plan p, with `x` the image side's descriptor (p.x,
// or a dx descriptor) and `y` the output side's (p.y, or a dy descriptor).
GraphConv make(Op op, const cudnn_plan::Conv& p, const cudnn_plan::Tensor4& x, const cudnn_plan::Tensor4& y);

// Whether the graph API can be asked at all: the groups it would infer (x's
// channels over the filter's, which must divide) equal the plan's, the output
// extent is the one the descriptor's pads, strides and dilations give, and
// every number is positive. Otherwise why says what (the legacy path runs it).
bool consistent(const GraphConv& g, int groups, std::string* why);

// The byte alignment CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT is told for a pointer:
// the largest power of two dividing the address, at most 16 (an engine may
// use vector loads up to that width); 16 for a null pointer.
int64_t byte_alignment(uintptr_t address);

// Whether an engine with these numerical notes may run a convolution of
// `datatype`: never one that reduces in reduced precision
// (REDUCED_PRECISION_REDUCTION: NNC's 16-bit convolutions accumulate in
// fp32); for 32F, none on tensor cores or converting its inputs down
// (TENSOR_CORE, DOWN_CONVERT_INPUTS: TF32) unless allow_tf32 (the legacy
// path's rule: fp32 means fp32 unless NNC_CUDNN_ALLOW_TF32=1); 16F / 16BF
// may use tensor cores.
bool engine_allowed(int datatype, bool allow_tf32, bool tensor_core, bool down_convert, bool reduced_precision);

// The plan cache's key: the operation, the device, the filter rule (tf32) and
// everything the finalized plan depends on (type, dims, strides, pads,
// strides, dilations, the three alignments).
std::vector<int64_t> key(const GraphConv& g, int device, bool allow_tf32, const int64_t alignment[3]);

// NNC_CUDNN_GRAPH: 0 (or unset, or anything else) the legacy API only; 1 the
// graph API first, the legacy API for shapes it has no plan for; 2 the graph
// API only (a shape without a plan is refused: for tests and benchmarks that
// must know which path ran).
enum class Mode { kOff = 0, kFirst = 1, kOnly = 2 };
Mode mode_from(const char* value);

}  // namespace nnc::cudnn_graph_plan
