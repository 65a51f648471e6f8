// The launch functions of the GPU_REF "misc" kernels (misc_kernels.cu:
// ROI_ALIGN, NMS, HISTOGRAM, COMPRESSION_LSSC), called by misc_gpu.cpp. Each
// queues its work on the stream it is given and returns the launch status.
// The formulas are cmd/common/gpu_misc.hpp's (tested on the CPU). A `bad`
// flag (a device int, 0 when the input is good) is set by a check kernel and
// read by the kernels after it, which then write nothing, so that bad input
// leaves the outputs as they were (as CPU_REF does).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_misc.hpp"
#include "cmd/common/gpu_plan.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

// A 3-d or 4-d image (or view) in NHWC order of meaning, strides in elements.
struct ImgArg {
  void* p = nullptr;
  int type = kF32;  // GpuType
  int n = 1, h = 0, w = 0, c = 0;
  int64_t sn = 0, sh = 0, sw = 0, sc = 0;
};

// Rows of k values: element (b, i, j) at b * sb + i * sn + j * sk.
struct RowsArg {
  void* p = nullptr;
  int type = kF32;
  int batch = 1, n = 0, k = 0;
  int64_t sb = 0, sn = 0, sk = 0;
};

// ROI_ALIGN. boxes: batch 1, n boxes of k = 4 values. bad = INT_MAX - the
// first box with a value that is not finite (0: all finite).
cudaError_t launch_roi_check(cudaStream_t s, const RowsArg& boxes, int* bad);
cudaError_t launch_roi_forward(cudaStream_t s, const ImgArg& a, const ImgArg& b, const RowsArg& boxes, const int* bad);
// da zeroed, then every sample's share of g added into its pixels: 32F with
// float atomics into da, 64F with double atomics into da; 16F / 16BF into
// `scratch` (da.n * da.h * da.w * da.c doubles, device memory; NULL for the
// others) with double atomics, then each sum stored into da (misc_gpu.cpp
// says why).
cudaError_t launch_roi_backward(cudaStream_t s, const ImgArg& g, const ImgArg& da, const RowsArg& boxes, const int* bad,
                                void* scratch);

// NMS forward: order and kept are device scratch of batch * n ints each.
cudaError_t launch_nms_forward(cudaStream_t s, const RowsArg& a, const RowsArg& b, const RowsArg& c, double threshold,
                               int* order, int* kept);
// NMS backward: bad = INT_MAX - (b * n + j) of the first c[b, j] outside -1 .. n - 1.
cudaError_t launch_nms_backward(cudaStream_t s, const RowsArg& g, const RowsArg& da, const RowsArg& c, int* bad);

// HISTOGRAM. Edges (BINS mode) loaded in row-major order into `out` (doubles)
// and checked: bad = 1 + 2 i for a NaN edges[i], 2 + 2 i for edges[i - 1] >
// edges[i] (the first in order).
cudaError_t launch_hist_edges(cudaStream_t s, const gpu::EwPlan& plan, const void* edges, int type, double* out,
                              int* bad);
// h (32S, m counts at stride hs) zeroed and filled from x (a one-operand plan).
cudaError_t launch_hist_count(cudaStream_t s, const gpu::EwPlan& x_plan, const void* x, int type,
                              const gpu::HistArgs& args, int* h, int64_t hs, const int* bad);
// stats (min, max, sum, sum of squares of x's values that are not NaN) into
// `stats` (type, stride ss); scratch: hist_stats_scratch() bytes.
size_t hist_stats_scratch();
cudaError_t launch_hist_stats(cudaStream_t s, const gpu::EwPlan& x_plan, const void* x, int type, void* stats,
                              int64_t ss, void* scratch, const int* bad);

// COMPRESSION_LSSC (16F): x -> its code, and a code -> y.
cudaError_t launch_lssc_compress(cudaStream_t s, const ImgArg& x, const ImgArg& out);
cudaError_t launch_lssc_decompress(cudaStream_t s, const ImgArg& in, const ImgArg& y);

}  // namespace nnc::cuda
