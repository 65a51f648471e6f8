// Index arithmetic of the GPU_REF element-wise and reduction kernels
// (cuda/ew_kernels.cu), as host code: it is built in every configuration and
// tested on the CPU (test/unit/gpu_plan), so the part of a GPU kernel that
// decides which element goes where is checked without a GPU.
//
//   int64_t ys[kPlanDims], as[kPlanDims];
//   broadcast_strides(a.dim, a.stride, a.nd, y.dim, y.nd, as);   // 0 where a is broadcast
//   const int64_t* s[] = {y.stride, as};
//   EwPlan p;
//   make_plan(p, y.dim, y.nd, 2, s);      // size-1 dimensions dropped, contiguous ones merged
//   // element i (0 <= i < p.count) of operand k lies at plan_offset(p, k, i) (in elements)
//
// A reduction (REDUCE_*, the gradient of a broadcast operand) splits the
// full shape into the output's dimensions (outer) and the summed ones
// (inner): element (o, r) of input k lies at plan_offset(outer, 1 + k, o) +
// plan_offset(inner, k, r), and output o at plan_offset(outer, 0, o).
//
// This header is C++17 without CUDA or NNC includes, so nvcc compiles it into
// the kernels as it is (NNC_HD marks the functions both sides run).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define NNC_HD __host__ __device__ __forceinline__
#else
#define NNC_HD inline
#endif

namespace nnc::gpu {

constexpr int kPlanDims = 12;      // CCV_NNC_MAX_DIM_ALLOC
constexpr int kPlanOperands = 10;  // an output and up to 9 inputs (ADAM with amsgrad: 9 tensors)

// A walk over `count` elements in row-major order of dim[0..nd), with each
// operand's strides (in elements; 0 where it is broadcast). Passed to kernels
// by value.
struct EwPlan {
  int nd = 1;
  int operands = 0;
  int64_t count = 0;
  int64_t dim[kPlanDims] = {};
  int64_t stride[kPlanOperands][kPlanDims] = {};
};

// Offset of element i of operand k.
NNC_HD int64_t plan_offset(const EwPlan& p, int k, int64_t i) {
  if (p.nd == 1) return i * p.stride[k][0];
  int64_t off = 0;
  for (int d = p.nd - 1; d > 0; d--) {
    const int64_t q = i / p.dim[d];
    off += (i - q * p.dim[d]) * p.stride[k][d];
    i = q;
  }
  return off + i * p.stride[k][0];
}

// Offsets of element i of operands [0, n) at once (one division per dimension).
NNC_HD void plan_offsets(const EwPlan& p, int n, int64_t i, int64_t* off) {
  for (int k = 0; k < n; k++) off[k] = 0;
  for (int d = p.nd - 1; d > 0; d--) {
    const int64_t q = i / p.dim[d];
    const int64_t r = i - q * p.dim[d];
    for (int k = 0; k < n; k++) off[k] += r * p.stride[k][d];
    i = q;
  }
  for (int k = 0; k < n; k++) off[k] += i * p.stride[k][0];
}

// Strides of x (xnd dimensions) over y's dimensions, aligned at the last
// dimension (libnnc's broadcast): 0 where x has 1 or no dimension. False when
// x does not broadcast to y (a dimension neither 1 nor y's, or more
// dimensions than y that are not 1).
bool broadcast_strides(const int* xdim, const int64_t* xstride, int xnd, const int* ydim, int ynd, int64_t* out);

// Packed row-major strides of a shape.
void packed_strides(const int* dim, int nd, int64_t* stride);

// The plan of `operands` (<= kPlanOperands) stride arrays over dim[0..nd):
// dimensions of size 1 dropped, neighbours contiguous in every operand merged
// (so packed operands give nd == 1). count is 0 when nd == 0 or a dimension is
// 0. False when operands is out of range.
bool make_plan(EwPlan& p, const int* dim, int nd, int operands, const int64_t* const* strides);

// A reduction of inputs that all have the full shape full[0..nfull) (their
// strides over it in in_strides, broadcast ones 0) into an output whose
// shape aligns with full at the last dimension, each of its dimensions equal
// to full's or 1 (missing leading ones count as 1). outer: operand 0 the
// output, 1 + k input k, over the output's elements; inner: operand k input
// k, over the elements summed into one output. False when the shapes do not
// fit or there are more than kPlanOperands - 1 inputs.
struct ReducePlan {
  EwPlan outer;
  EwPlan inner;
};
bool make_reduce_plan(ReducePlan& r, const int* full, int nfull, const int* out_dim, const int64_t* out_stride,
                      int out_nd, int inputs, const int64_t* const* in_strides);

// How a reduction is launched: one thread per output (loops over the inner
// elements; coalesced when neighbouring outputs are neighbours in memory), or
// one block per output (its threads share the inner elements, then combine).
struct ReduceLaunch {
  bool block_per_output = false;
  int threads = 256;   // per block
  int64_t blocks = 1;  // at most kMaxBlocks; kernels loop over the rest
  // Above 1 (choose_reduce_sliced only): the inner elements cut into `slices`
  // runs; a thread per (run, output) writes its partial to scratch
  // (reduce_slice_begin), and a second kernel combines each output's
  // partials in run order. blocks / threads are the first kernel's.
  int64_t slices = 1;
};
constexpr int64_t kMaxBlocks = 65535;
ReduceLaunch choose_reduce(const ReducePlan& r);
// choose_reduce, or the sliced launch where outputs that are neighbours read
// neighbouring input elements but are too few to fill a GPU with one thread
// each over long sums (a bias gradient: a column sum of a tall matrix): runs
// of at least kReduceSliceMin inner elements, enough (run, output) pairs for
// kReduceSliceThreads threads, at most kReduceMaxSlices runs. Only for
// callers that supply the scratch (reduce_scratch_elements).
constexpr int64_t kReduceSliceThreads = int64_t{1} << 17;
constexpr int64_t kReduceSliceMin = 32;
constexpr int64_t kReduceMaxSlices = 1024;
ReduceLaunch choose_reduce_sliced(const ReducePlan& r);
// Partials the sliced launch keeps (0 when not sliced).
inline int64_t reduce_scratch_elements(const ReduceLaunch& l, const ReducePlan& r) {
  return l.slices > 1 ? l.slices * r.outer.count : 0;
}
// The first inner element of run s of `slices` over n elements.
NNC_HD int64_t reduce_slice_begin(int64_t n, int64_t slices, int64_t s) {
  return n / slices * s + (s < n % slices ? s : n % slices);
}

// An element-wise launch: `threads` per block, blocks capped (grid-stride loops).
struct EwLaunch {
  int threads = 256;
  int64_t blocks = 0;
};
EwLaunch choose_ew(int64_t count);

}  // namespace nnc::gpu
