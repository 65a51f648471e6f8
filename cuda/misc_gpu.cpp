// GPU_REF backends of the families that had only CPU kernels (issue 19):
//   ROI_ALIGN        forward and backward (a and b, g and da 32F, 16F, 16BF
//                    or 64F; boxes any float type, views; the backward's
//                    atomics: see roi_backward);
//   NMS              forward (a any float type, c 32S) and backward;
//   HISTOGRAM        forward, every mode, the optional stats (x any float type);
//   COMPRESSION_LSSC forward (compress) and backward (decompress), 16F;
// and registers GPU_CUBLAS LSTM (lstm_gpu.cpp).
// The contracts are the CPU_REF ones (lib/cmd/roi/roi_align.cpp,
// lib/cmd/nms/nms.cpp, lib/cmd/histogram/histogram.cpp,
// lib/cmd/compression/lssc.cpp): the families' validate functions have
// checked counts, shapes and types before a kernel here runs, so these
// backends refuse only what they do not do (tensors off one GPU, the types
// above, an in-place pair). The values are those of cmd/common/gpu_misc.hpp
// (tested on the CPU against CPU_REF): NMS's kept rows and indices, LSSC's
// codes and HISTOGRAM's counts are CPU_REF's exactly; ROI_ALIGN's sums and
// the histogram's sums differ by rounding only.
//
// Input the CPU_REF kernels reject while they run (a box value that is not
// finite, an NMS index outside -1 .. n - 1, HISTOGRAM edges that are NaN or
// descend) is found by a check kernel; the kernels after it then write
// nothing, and a synchronous call fails with CCV_NNC_EXEC_INVALID and the
// CPU's message. On a GPU stream the call cannot wait for the check: the
// outputs are left as they were and no error is reported.
#include <climits>
#include <vector>

#include "cmd/common/gpu_misc.hpp"
#include "cmd/common/image.hpp"
#include "cmd/histogram/histogram.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/misc_kern.hpp"

namespace nnc::cuda {

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }
bool is_float(const ccv_nnc_tensor_t* t) { return t && (type_of(t) & types::kFloat); }
const ccv_nnc_tensor_t* at(ccv_nnc_tensor_t* const* ts, int size, int i) { return i < size ? ts[i] : nullptr; }

ImgArg img_of(const ccv_nnc_tensor_t* t) {
  const Image im = image_of(t);
  ImgArg a;
  a.p = im.data;
  a.type = gpu_type(im.datatype);
  a.n = im.n, a.h = im.h, a.w = im.w, a.c = im.c;
  a.sn = im.sn, a.sh = im.sh, a.sw = im.sw, a.sc = im.sc;
  return a;
}

// A 1-d, 2-d or 3-d tensor as [batch, n, k] (1-d: one row of k; 2-d: batch 1).
RowsArg rows_of(const ccv_nnc_tensor_t* t, const char* what) {
  const Layout l = layout_of(t, what);
  RowsArg r;
  r.p = l.data;
  r.type = gpu_type(l.datatype);
  if (l.nd == 1) {
    r.n = 1, r.k = l.dim[0], r.sk = l.stride[0];
  } else if (l.nd == 2) {
    r.n = l.dim[0], r.k = l.dim[1], r.sn = l.stride[0], r.sk = l.stride[1];
  } else {
    r.batch = l.dim[0], r.n = l.dim[1], r.k = l.dim[2];
    r.sb = l.stride[0], r.sn = l.stride[1], r.sk = l.stride[2];
  }
  return r;
}

// NMS's c: [n] or [batch, n] as rows of one value.
RowsArg index_rows(const ccv_nnc_tensor_t* t, const char* what) {
  const Layout l = layout_of(t, what);
  RowsArg r;
  r.p = l.data;
  r.type = kF32;  // unused: read as 32S
  r.k = 1;
  if (l.nd == 1) {
    r.n = l.dim[0], r.sn = l.stride[0];
  } else {
    r.batch = l.dim[0], r.n = l.dim[1], r.sb = l.stride[0], r.sn = l.stride[1];
  }
  return r;
}

bool same_data(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) { return a && b && a->data.u8 == b->data.u8; }

// --- ROI_ALIGN -----------------------------------------------------------------

bool accept_roi(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr) || output_size < 1 || !outputs[0]) return false;
  if (cmd.cmd == CCV_NNC_ROI_ALIGN_FORWARD)
    return is_float(at(inputs, input_size, 0)) && is_float(at(inputs, input_size, 1)) &&
           !same_data(inputs[0], outputs[0]);
  // Backward: g and da of one float type (validated), added up with atomics (roi_backward).
  return is_float(at(inputs, input_size, 0)) && is_float(at(inputs, input_size, 2)) && is_float(outputs[0]) &&
         !same_data(inputs[0], outputs[0]) && (output_size < 2 || !outputs[1]);
}

void check_boxes(const Call& c, int flag) {
  NNC_CHECK(flag == 0, "%s: box %d has a value that is not finite; its values must be finite", c.what, INT_MAX - flag);
}

NNC_KERNEL(roi_forward) {
  const char* what = name_of(cmd.cmd);
  const ImgArg a = img_of(inputs[0]), b = img_of(outputs[0]);
  RowsArg boxes = rows_of(inputs[1], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, true);
  c.check(launch_roi_check(c.s, boxes, bad.device()));
  c.check(launch_roi_forward(c.s, a, b, boxes, bad.device()));
  check_boxes(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

// The backward scatters: each element of g adds its samples' shares into up
// to four pixels of da per sample, many elements of g into one pixel, with
// atomic additions in an order that varies run to run. 32F adds into da with
// float atomics (as before: order-dependent at float rounding); 64F with
// double atomics into da. 16F / 16BF add into a zeroed, packed double scratch
// of da's shape (8 bytes an element, stream-ordered), then one pass stores
// each sum into da as CPU_REF stores its double sums (through float, the
// rounding nnc::store_double does). Why double and not half atomics or a
// float scratch: a pixel's sum has up to thousands of terms wt * g, and
// rounding at every addition (half atomics: 2^-11 relative each) would be
// far from CPU_REF's double sum rounded once; a float scratch would round
// at 2^-24 each addition, still order-dependent, and flip the final 16F
// rounding at a rate of roughly (terms x 2^-13) per pixel. In double each
// addition errs by 2^-53 relative, so the order of the atomics changes a sum
// by ~terms x 2^-53, some 2^-33 of a 16F ulp for a thousand terms: the stored
// value is that of CPU_REF's own double sum except in the vanishingly rare
// case of a sum within that distance of a 16F / 16BF rounding boundary
// (order-independent in practice, deterministic run to run likewise).
// Exactness as INDEX_SELECT's is not on offer: the weights wt are products
// of bilinear fractions and 1 / samples, not short binary fractions.
NNC_KERNEL(roi_backward) {
  const char* what = name_of(cmd.cmd);
  const ImgArg g = img_of(inputs[0]), da = img_of(outputs[0]);
  RowsArg boxes = rows_of(inputs[2], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  const bool half = da.type == kF16 || da.type == kBF16;
  const size_t count = static_cast<size_t>(da.n) * da.h * da.w * da.c;
  StreamBlock scratch(half ? count * sizeof(double) : 0, c.s, what);
  DeviceFlag bad(c, true);
  c.check(launch_roi_check(c.s, boxes, bad.device()));
  c.check(launch_roi_backward(c.s, g, da, boxes, bad.device(), scratch.get()));
  check_boxes(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

// --- NMS -------------------------------------------------------------------------

bool accept_nms(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr) || output_size < 1 || !outputs[0]) return false;
  if (cmd.cmd == CCV_NNC_NMS_FORWARD) {
    const ccv_nnc_tensor_t* c = at(outputs, output_size, 1);
    return is_float(at(inputs, input_size, 0)) && is_float(outputs[0]) && c && type_of(c) == CCV_32S &&
           !same_data(inputs[0], outputs[0]);
  }
  const ccv_nnc_tensor_t* c = at(inputs, input_size, 4);
  return is_float(at(inputs, input_size, 0)) && is_float(outputs[0]) && c && type_of(c) == CCV_32S &&
         !same_data(inputs[0], outputs[0]);
}

NNC_KERNEL(nms_forward) {
  const char* what = name_of(cmd.cmd);
  const RowsArg a = rows_of(inputs[0], what), b = rows_of(outputs[0], what), ci = index_rows(outputs[1], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  const size_t rows = static_cast<size_t>(a.batch) * a.n;
  StreamBlock scratch(2 * rows * sizeof(int), c.s, what);
  int* order = static_cast<int*>(scratch.get());
  c.check(launch_nms_forward(c.s, a, b, ci, cmd.info.nms.iou_threshold, order, order ? order + rows : nullptr));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(nms_backward) {
  const char* what = name_of(cmd.cmd);
  const RowsArg g = rows_of(inputs[0], what), da = rows_of(outputs[0], what), ci = index_rows(inputs[4], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, true);
  c.check(launch_nms_backward(c.s, g, da, ci, bad.device()));
  const int flag = bad.done();
  if (flag) {
    const long long i = INT_MAX - static_cast<long long>(flag);
    fail(CCV_NNC_EXEC_INVALID, "NMS_BACKWARD: c[%lld, %lld] is outside -1 .. %d", i / g.n, i % g.n, g.n - 1);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

// --- HISTOGRAM ---------------------------------------------------------------

bool accept_histogram(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr) || output_size < 1 || !outputs[0]) return false;
  if (!is_float(at(inputs, input_size, 0)) || type_of(outputs[0]) != CCV_32S) return false;
  const ccv_nnc_tensor_t* stats = at(outputs, output_size, 1);
  if (stats && !is_float(stats)) return false;
  return cmd.info.histogram.type != CCV_NNC_HISTOGRAM_BINS || is_float(at(inputs, input_size, 1));
}

gpu::EwPlan plan1(const Layout& l, const char* what) { return plan_of(l, {}, what); }

NNC_KERNEL(histogram) {
  const char* what = name_of(cmd.cmd);
  const auto& p = cmd.info.histogram;
  const Layout x = layout_of(inputs[0], what), h = layout_of(outputs[0], what);
  const int mode = p.type == CCV_NNC_HISTOGRAM_EVEN          ? gpu::kHistEven
                   : p.type == CCV_NNC_HISTOGRAM_LOGARITHMIC ? gpu::kHistLog
                                                             : gpu::kHistBins;
  const int u = mode == gpu::kHistLog ? histogram::log_range(cmd.info) : 0;
  gpu::HistArgs args = gpu::hist_args(mode, p.min, p.max, p.bins, p.rate, u, h.dim[0]);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  const gpu::EwPlan xp = plan1(x, what);
  // The edges as doubles on the device: the logarithmic mode's computed here
  // (CPU_REF's values), the bins mode's loaded and checked there.
  std::unique_ptr<StreamBlock> edges;
  DeviceFlag bad(c, mode == gpu::kHistBins);
  if (mode == gpu::kHistLog) {
    std::vector<double> host(static_cast<size_t>(u));
    gpu::hist_log_edges(p.min, p.rate, u, host.data());
    edges = std::make_unique<StreamBlock>(host.size() * sizeof(double), c.s, what);
    // From pageable memory: the copy has read `host` when it returns (staged),
    // so the vector may go at once.
    NNC_CUDA_CHECK(
        cudaMemcpyAsync(edges->get(), host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice, c.s), what);
    args.edges = static_cast<const double*>(edges->get());
  } else if (mode == gpu::kHistBins) {
    const Layout e = layout_of(inputs[1], what);
    args.n_edges = static_cast<int64_t>(e.count());
    edges = std::make_unique<StreamBlock>(e.count() * sizeof(double), c.s, what);
    args.edges = static_cast<const double*>(edges->get());
    if (e.count() > 0)
      c.check(launch_hist_edges(c.s, plan1(e, what), e.data, gpu_type(e.datatype), static_cast<double*>(edges->get()),
                                bad.device()));
  }
  c.check(launch_hist_count(c.s, xp, x.data, gpu_type(x.datatype), args, reinterpret_cast<int*>(h.data), h.stride[0],
                            bad.device()));
  std::unique_ptr<StreamBlock> scratch;
  if (output_size > 1 && outputs[1]) {
    const Layout st = layout_of(outputs[1], what);
    scratch = std::make_unique<StreamBlock>(hist_stats_scratch(), c.s, what);
    c.check(
        launch_hist_stats(c.s, xp, x.data, gpu_type(x.datatype), st.data, st.stride[0], scratch->get(), bad.device()));
  }
  const int flag = bad.done();
  if (flag) {
    const int i = (flag - 1) / 2;
    if (flag % 2)
      fail(CCV_NNC_EXEC_INVALID, "HISTOGRAM_FORWARD: edges[%d] is NaN", i);
    else
      fail(CCV_NNC_EXEC_INVALID, "HISTOGRAM_FORWARD: edges must ascend (edges[%d] > edges[%d])", i - 1, i);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

// --- COMPRESSION_LSSC --------------------------------------------------------

bool accept_lssc(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t *in = at(inputs, input_size, i), *out = outputs[i];
    if (!in || !out || type_of(in) != CCV_16F || type_of(out) != CCV_16F || same_data(in, out)) return false;
  }
  return true;
}

NNC_KERNEL(lssc_forward) {
  const char* what = name_of(cmd.cmd);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  for (int i = 0; i < output_size; i++) c.check(launch_lssc_compress(c.s, img_of(inputs[i]), img_of(outputs[i])));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(lssc_backward) {
  const char* what = name_of(cmd.cmd);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  for (int i = 0; i < output_size; i++) c.check(launch_lssc_decompress(c.s, img_of(inputs[i]), img_of(outputs[i])));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_lstm_gpu(Registry& r);  // lstm_gpu.cpp

// Every backend of this file and LSTM's: the one call register_cuda makes.
void register_gpu_misc(Registry& r) {
  register_lstm_gpu(r);
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = types::kFloat;
  t.formats = formats::kImage;
  r.add_kernels(t.accepting(accept_roi),
                {{CCV_NNC_ROI_ALIGN_FORWARD, roi_forward}, {CCV_NNC_ROI_ALIGN_BACKWARD, roi_backward}});
  KernelTraits f16 = t;
  f16.datatypes = CCV_16F;
  r.add_kernels(f16.accepting(accept_lssc),
                {{CCV_NNC_COMPRESSION_LSSC_FORWARD, lssc_forward}, {CCV_NNC_COMPRESSION_LSSC_BACKWARD, lssc_backward}});
  KernelTraits any = t;
  any.datatypes = types::kFloat | CCV_32S;
  any.formats = formats::kAll;
  r.add_kernels(any.accepting(accept_nms), {{CCV_NNC_NMS_FORWARD, nms_forward}, {CCV_NNC_NMS_BACKWARD, nms_backward}});
  r.add_kernels(any.accepting(accept_histogram), {{CCV_NNC_HISTOGRAM_FORWARD, histogram}});
}

}  // namespace nnc::cuda
