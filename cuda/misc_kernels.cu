// GPU_REF kernels of ROI_ALIGN, NMS, HISTOGRAM and COMPRESSION_LSSC. The
// values come from cmd/common/gpu_misc.hpp (the CPU_REF kernels' operations,
// in double, tested on the CPU); here only the walk over the elements:
// grid-stride loops with 64-bit indices, one thread per output element (ROI,
// NMS's rows, LSSC's 4 x 4 blocks), one block per batch item for NMS's greedy
// pass, privatised shared-memory counts for HISTOGRAM.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "cuda/misc_kern.hpp"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;

// Element off of a float tensor of GpuType `type`, as double (exact).
__device__ __forceinline__ double ldd(const void* p, int type, int64_t off) {
  switch (type) {
    case kF32:
      return static_cast<const float*>(p)[off];
    case kF16:
      return gpu::float_from_half(static_cast<const uint16_t*>(p)[off]);
    case kBF16:
      return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(p)[off]) << 16);
    default:
      return static_cast<const double*>(p)[off];
  }
}

// v stored as nnc::store_double does: through float for 16F / 16BF.
__device__ __forceinline__ void std_as(void* p, int type, int64_t off, double v) {
  switch (type) {
    case kF32:
      static_cast<float*>(p)[off] = static_cast<float>(v);
      break;
    case kF16:
      static_cast<uint16_t*>(p)[off] = gpu::half_from_float(static_cast<float>(v));
      break;
    case kBF16:
      static_cast<uint16_t*>(p)[off] = gpu::bf16_from_float(static_cast<float>(v));
      break;
    default:
      static_cast<double*>(p)[off] = v;
  }
}

__device__ __forceinline__ int64_t first_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t stride_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__device__ __forceinline__ double row_at(const RowsArg& r, int b, int i, int j) {
  return ldd(r.p, r.type, b * r.sb + i * r.sn + j * r.sk);
}

// --- ROI_ALIGN ----------------------------------------------------------------

// bad = INT_MAX - (the first box with a value that is not finite).
__global__ void roi_check_kernel(RowsArg boxes, int* bad) {
  for (int64_t k = first_thread(); k < boxes.n; k += stride_threads()) {
    bool ok = true;
    for (int j = 0; j < 4; j++) ok = ok && gpu::is_finite(row_at(boxes, 0, static_cast<int>(k), j));
    if (!ok) atomicMax(bad, static_cast<int>(INT_MAX - k));
  }
}

__device__ __forceinline__ gpu::RoiBin bin_of(const RowsArg& boxes, int k, const ImgArg& map, int rows, int cols) {
  return gpu::roi_bin(row_at(boxes, 0, k, 0), row_at(boxes, 0, k, 1), row_at(boxes, 0, k, 2), row_at(boxes, 0, k, 3),
                      map.h, map.w, rows, cols);
}

// One thread per element (k, i, j, c) of b.
__global__ void roi_forward_kernel(ImgArg a, ImgArg b, RowsArg boxes, const int* bad) {
  if (*bad) return;
  const int64_t total = static_cast<int64_t>(b.n) * b.h * b.w * b.c;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t q = t;
    const int c = static_cast<int>(q % b.c);
    q /= b.c;
    const int j = static_cast<int>(q % b.w);
    q /= b.w;
    const int i = static_cast<int>(q % b.h);
    const int k = static_cast<int>(q / b.h);
    const gpu::RoiBin bin = bin_of(boxes, k, a, b.h, b.w);
    const int64_t base = (a.n == 1 ? 0 : static_cast<int64_t>(k) * a.sn) + c * a.sc;
    double acc = 0;
    gpu::roi_for_each_tap(bin, a.h, a.w, i, j,
                          [&](int y, int x, double wt) { acc += wt * ldd(a.p, a.type, base + y * a.sh + x * a.sw); });
    std_as(b.p, b.type, k * b.sn + i * b.sh + j * b.sw + c * b.sc, acc);
  }
}

// Every element of an image set to 0 (im.type: kF32 or kF64, the
// accumulators of ROI_ALIGN's backward).
__global__ void zero_image_kernel(ImgArg im, const int* bad) {
  if (*bad) return;
  const int64_t total = static_cast<int64_t>(im.n) * im.h * im.w * im.c;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t q = t;
    const int c = static_cast<int>(q % im.c);
    q /= im.c;
    const int x = static_cast<int>(q % im.w);
    q /= im.w;
    const int y = static_cast<int>(q % im.h);
    const int n = static_cast<int>(q / im.h);
    const int64_t off = n * im.sn + y * im.sh + x * im.sw + c * im.sc;
    if (im.type == kF64)
      static_cast<double*>(im.p)[off] = 0;
    else
      static_cast<float*>(im.p)[off] = 0.f;
  }
}

// One thread per element (k, i, j, c) of g (any float type), its samples'
// shares added into acc (A: float for a 32F da, double for a 64F da or the
// double scratch of a 16F / 16BF one).
template <class A>
__global__ void roi_backward_kernel(ImgArg g, ImgArg acc, RowsArg boxes, const int* bad) {
  if (*bad) return;
  const int64_t total = static_cast<int64_t>(g.n) * g.h * g.w * g.c;
  A* out = static_cast<A*>(acc.p);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t q = t;
    const int c = static_cast<int>(q % g.c);
    q /= g.c;
    const int j = static_cast<int>(q % g.w);
    q /= g.w;
    const int i = static_cast<int>(q % g.h);
    const int k = static_cast<int>(q / g.h);
    const double gv = ldd(g.p, g.type, k * g.sn + i * g.sh + j * g.sw + c * g.sc);
    if (gv == 0) continue;
    const gpu::RoiBin bin = bin_of(boxes, k, acc, g.h, g.w);
    const int64_t base = (acc.n == 1 ? 0 : static_cast<int64_t>(k) * acc.sn) + c * acc.sc;
    gpu::roi_for_each_tap(bin, acc.h, acc.w, i, j, [&](int y, int x, double wt) {
      atomicAdd(out + base + y * acc.sh + x * acc.sw, static_cast<A>(wt * gv));
    });
  }
}

// da = the double scratch's sums, each stored as CPU_REF's store_double
// stores them (std_as).
__global__ void roi_store_kernel(ImgArg acc, ImgArg da, const int* bad) {
  if (*bad) return;
  const int64_t total = static_cast<int64_t>(da.n) * da.h * da.w * da.c;
  const double* sum = static_cast<const double*>(acc.p);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t q = t;
    const int c = static_cast<int>(q % da.c);
    q /= da.c;
    const int x = static_cast<int>(q % da.w);
    q /= da.w;
    const int y = static_cast<int>(q % da.h);
    const int n = static_cast<int>(q / da.h);
    std_as(da.p, da.type, n * da.sn + y * da.sh + x * da.sw + c * da.sc,
           sum[n * acc.sn + y * acc.sh + x * acc.sw + c * acc.sc]);
  }
}

// --- NMS --------------------------------------------------------------------

// order[b n + rank] = the row of that rank (stable, NaN last).
__global__ void nms_rank_kernel(RowsArg a, int* order) {
  const int64_t total = static_cast<int64_t>(a.batch) * a.n;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    const int b = static_cast<int>(t / a.n), i = static_cast<int>(t % a.n);
    const double si = row_at(a, b, i, 0);
    int rank = 0;
    for (int j = 0; j < a.n; j++) rank += gpu::nms_before(row_at(a, b, j, 0), j, si, i) ? 1 : 0;
    order[static_cast<int64_t>(b) * a.n + rank] = i;
  }
}

// One block per batch item: the ranked rows in turn, each tested against the
// rows kept so far by the block's threads together.
__global__ void nms_greedy_kernel(RowsArg a, double threshold, const int* order, int* kept) {
  __shared__ int m;
  for (int b = blockIdx.x; b < a.batch; b += gridDim.x) {
    const int* ord = order + static_cast<int64_t>(b) * a.n;
    int* kp = kept + static_cast<int64_t>(b) * a.n;
    if (threadIdx.x == 0) m = 0;
    __syncthreads();
    for (int r = 0; r < a.n; r++) {
      const int i = ord[r];
      const double x = row_at(a, b, i, 1), y = row_at(a, b, i, 2), w = row_at(a, b, i, 3), h = row_at(a, b, i, 4);
      int suppressed = 0;
      for (int q = threadIdx.x; q < m && !suppressed; q += blockDim.x) {
        const int k = kp[q];
        suppressed = gpu::nms_iou(x, y, w, h, row_at(a, b, k, 1), row_at(a, b, k, 2), row_at(a, b, k, 3),
                                  row_at(a, b, k, 4)) > threshold;
      }
      suppressed = __syncthreads_or(suppressed);
      if (!suppressed && threadIdx.x == 0) kp[m++] = i;
      __syncthreads();
    }
    for (int q = m + threadIdx.x; q < a.n; q += blockDim.x) kp[q] = -1;
    __syncthreads();
  }
}

// b's rows and c from the kept rows.
__global__ void nms_write_kernel(RowsArg a, RowsArg out, RowsArg c, const int* kept) {
  const int64_t total = static_cast<int64_t>(a.batch) * a.n * a.k;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    const int x = static_cast<int>(t % a.k);
    const int64_t q = t / a.k;
    const int j = static_cast<int>(q % a.n), b = static_cast<int>(q / a.n);
    const int r = kept[q];
    std_as(out.p, out.type, b * out.sb + j * out.sn + x * out.sk, r >= 0 ? row_at(a, b, r, x) : 0.0);
    if (x == 0) static_cast<int*>(c.p)[b * c.sb + j * c.sn] = r;
  }
}

// bad = INT_MAX - (the first bad entry's index), so atomicMax keeps the first.
__global__ void nms_check_kernel(RowsArg c, int* bad) {
  const int64_t total = static_cast<int64_t>(c.batch) * c.n;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    const int b = static_cast<int>(t / c.n), j = static_cast<int>(t % c.n);
    const int r = static_cast<const int*>(c.p)[b * c.sb + j * c.sn];
    if (r < -1 || r >= c.n) atomicMax(bad, static_cast<int>(INT_MAX - (t < INT_MAX - 1 ? t : INT_MAX - 1)));
  }
}

// da's element (b, i, x) = the sum over j with c[b, j] == i of g's (b, j, x),
// in j's order (CPU_REF's), in double.
__global__ void nms_backward_kernel(RowsArg g, RowsArg da, RowsArg c, const int* bad) {
  if (*bad) return;
  const int64_t total = static_cast<int64_t>(g.batch) * g.n * g.k;
  const int* ci = static_cast<const int*>(c.p);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    const int x = static_cast<int>(t % g.k);
    const int64_t q = t / g.k;
    const int i = static_cast<int>(q % g.n), b = static_cast<int>(q / g.n);
    double sum = 0;
    for (int j = 0; j < g.n; j++)
      if (ci[b * c.sb + j * c.sn] == i) sum += row_at(g, b, j, x);
    std_as(da.p, da.type, b * da.sb + i * da.sn + x * da.sk, sum);
  }
}

// --- HISTOGRAM ------------------------------------------------------------

__global__ void hist_edges_kernel(EwPlan plan, const void* edges, int type, double* out, int* bad) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int flag = 0;
  for (int64_t i = 0; i < plan.count; i++) {
    const double v = ldd(edges, type, gpu::plan_offset(plan, 0, i));
    out[i] = v;
    if (flag) continue;
    if (gpu::is_nan(v))
      flag = static_cast<int>(1 + 2 * i);
    else if (i > 0 && out[i - 1] > v)
      flag = static_cast<int>(2 + 2 * i);
  }
  *bad = flag;
}

__global__ void hist_zero_kernel(int* h, int64_t hs, int m, const int* bad) {
  if (bad && *bad) return;
  for (int64_t i = first_thread(); i < m; i += stride_threads()) h[i * hs] = 0;
}

// Counts of m <= kSharedCounts in shared memory per block, then added to h.
constexpr int kSharedCounts = 8192;

__global__ void hist_count_shared_kernel(EwPlan plan, const void* x, int type, gpu::HistArgs args, int* h, int64_t hs,
                                         const int* bad) {
  if (bad && *bad) return;
  extern __shared__ int counts[];
  for (int i = threadIdx.x; i < args.m; i += blockDim.x) counts[i] = 0;
  __syncthreads();
  for (int64_t t = first_thread(); t < plan.count; t += stride_threads())
    atomicAdd(&counts[gpu::hist_slot(ldd(x, type, gpu::plan_offset(plan, 0, t)), args)], 1);
  __syncthreads();
  for (int i = threadIdx.x; i < args.m; i += blockDim.x)
    if (counts[i]) atomicAdd(h + i * hs, counts[i]);
}

__global__ void hist_count_global_kernel(EwPlan plan, const void* x, int type, gpu::HistArgs args, int* h, int64_t hs,
                                         const int* bad) {
  if (bad && *bad) return;
  for (int64_t t = first_thread(); t < plan.count; t += stride_threads())
    atomicAdd(h + gpu::hist_slot(ldd(x, type, gpu::plan_offset(plan, 0, t)), args) * hs, 1);
}

constexpr int kStatsBlocks = 256, kStatsThreads = 256;

struct Stats {
  double mn, mx, sum, sq;
  int has;
};

__device__ __forceinline__ void stats_add(Stats& s, double v) {
  if (gpu::is_nan(v)) return;
  s.mn = s.has ? gpu::min_of(s.mn, v) : v;
  s.mx = s.has ? gpu::max_of(s.mx, v) : v;
  s.sum += v, s.sq += v * v, s.has = 1;
}
__device__ __forceinline__ void stats_merge(Stats& s, const Stats& o) {
  if (!o.has) return;
  s.mn = s.has ? gpu::min_of(s.mn, o.mn) : o.mn;
  s.mx = s.has ? gpu::max_of(s.mx, o.mx) : o.mx;
  s.sum += o.sum, s.sq += o.sq, s.has = 1;
}

__global__ void hist_stats_kernel(EwPlan plan, const void* x, int type, Stats* partial, const int* bad) {
  if (bad && *bad) return;
  __shared__ Stats part[kStatsThreads];
  Stats s{0, 0, 0, 0, 0};
  for (int64_t t = first_thread(); t < plan.count; t += stride_threads())
    stats_add(s, ldd(x, type, gpu::plan_offset(plan, 0, t)));
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) stats_merge(part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

__global__ void hist_stats_final_kernel(const Stats* partial, int blocks, void* out, int type, int64_t ss,
                                        const int* bad) {
  if ((bad && *bad) || threadIdx.x != 0 || blockIdx.x != 0) return;
  Stats s{0, 0, 0, 0, 0};
  for (int b = 0; b < blocks; b++) stats_merge(s, partial[b]);
  const double nan = __longlong_as_double(0x7ff8000000000000LL);
  const double v[4] = {s.has ? s.mn : nan, s.has ? s.mx : nan, s.sum, s.sq};
  for (int i = 0; i < 4; i++) std_as(out, type, i * ss, v[i]);
}

// --- COMPRESSION_LSSC ---------------------------------------------------------

__device__ __forceinline__ uint16_t* px(const ImgArg& im, int n, int y, int x, int c) {
  return static_cast<uint16_t*>(im.p) + (n * im.sn + y * im.sh + x * im.sw + c * im.sc);
}

// One thread per block (n, by, bx, c) of the code.
__global__ void lssc_compress_kernel(ImgArg x, ImgArg out) {
  const int bw = out.w / 4;
  const int64_t total = static_cast<int64_t>(x.n) * out.h * bw * x.c;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t q = t;
    const int c = static_cast<int>(q % x.c);
    q /= x.c;
    const int bx = static_cast<int>(q % bw);
    q /= bw;
    const int by = static_cast<int>(q % out.h);
    const int n = static_cast<int>(q / out.h);
    double v[16];
    for (int i = 0; i < 16; i++) {
      const int yy = 4 * by + i / 4, xx = 4 * bx + i % 4;
      v[i] = yy < x.h && xx < x.w ? gpu::float_from_half(*px(x, n, yy, xx, c))
                                  : __longlong_as_double(0x7ff8000000000000LL);
    }
    double lo, hi;
    uint32_t bits;
    gpu::lssc_encode(v, &lo, &hi, &bits);
    *px(out, n, by, 4 * bx, c) = gpu::half_from_float(static_cast<float>(lo));
    *px(out, n, by, 4 * bx + 1, c) = gpu::half_from_float(static_cast<float>(hi));
    *px(out, n, by, 4 * bx + 2, c) = static_cast<uint16_t>(bits & 0xffffu);
    *px(out, n, by, 4 * bx + 3, c) = static_cast<uint16_t>(bits >> 16);
  }
}

__global__ void lssc_decompress_kernel(ImgArg in, ImgArg y) {
  const int bw = in.w / 4;
  const int64_t total = static_cast<int64_t>(y.n) * in.h * bw * y.c;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t q = t;
    const int c = static_cast<int>(q % y.c);
    q /= y.c;
    const int bx = static_cast<int>(q % bw);
    q /= bw;
    const int by = static_cast<int>(q % in.h);
    const int n = static_cast<int>(q / in.h);
    const double lo = gpu::float_from_half(*px(in, n, by, 4 * bx, c));
    const double hi = gpu::float_from_half(*px(in, n, by, 4 * bx + 1, c));
    const uint32_t bits = *px(in, n, by, 4 * bx + 2, c) | static_cast<uint32_t>(*px(in, n, by, 4 * bx + 3, c)) << 16;
    for (int i = 0; i < 16; i++) {
      const int yy = 4 * by + i / 4, xx = 4 * bx + i % 4;
      if (yy >= y.h || xx >= y.w) continue;
      *px(y, n, yy, xx, c) = gpu::half_from_float(static_cast<float>(gpu::lssc_level(lo, hi, (bits >> (2 * i)) & 3u)));
    }
  }
}

dim3 grid_for(int64_t count) { return dim3(static_cast<unsigned>(gpu::choose_ew(count).blocks)); }

}  // namespace

cudaError_t launch_roi_check(cudaStream_t s, const RowsArg& boxes, int* bad) {
  if (boxes.n > 0) roi_check_kernel<<<grid_for(boxes.n), 256, 0, s>>>(boxes, bad);
  return cudaGetLastError();
}

cudaError_t launch_roi_forward(cudaStream_t s, const ImgArg& a, const ImgArg& b, const RowsArg& boxes, const int* bad) {
  const int64_t total = static_cast<int64_t>(b.n) * b.h * b.w * b.c;
  if (total == 0) return cudaSuccess;
  roi_forward_kernel<<<grid_for(total), 256, 0, s>>>(a, b, boxes, bad);
  return cudaGetLastError();
}

cudaError_t launch_roi_backward(cudaStream_t s, const ImgArg& g, const ImgArg& da, const RowsArg& boxes, const int* bad,
                                void* scratch) {
  const int64_t dtotal = static_cast<int64_t>(da.n) * da.h * da.w * da.c;
  if (dtotal == 0) return cudaSuccess;
  const bool half = da.type == kF16 || da.type == kBF16;
  if (half && !scratch) return cudaErrorInvalidValue;
  ImgArg acc = da;  // 32F and 64F: da itself (float or double atomics)
  if (half) {       // the packed double scratch, NHWC order of meaning
    acc.p = scratch;
    acc.type = kF64;
    acc.sc = 1;
    acc.sw = da.c;
    acc.sh = static_cast<int64_t>(da.w) * da.c;
    acc.sn = static_cast<int64_t>(da.h) * acc.sh;
  }
  zero_image_kernel<<<grid_for(dtotal), 256, 0, s>>>(acc, bad);
  const int64_t total = static_cast<int64_t>(g.n) * g.h * g.w * g.c;
  if (total > 0) {
    if (acc.type == kF64)
      roi_backward_kernel<double><<<grid_for(total), 256, 0, s>>>(g, acc, boxes, bad);
    else
      roi_backward_kernel<float><<<grid_for(total), 256, 0, s>>>(g, acc, boxes, bad);
  }
  if (half) roi_store_kernel<<<grid_for(dtotal), 256, 0, s>>>(acc, da, bad);
  return cudaGetLastError();
}

cudaError_t launch_nms_forward(cudaStream_t s, const RowsArg& a, const RowsArg& b, const RowsArg& c, double threshold,
                               int* order, int* kept) {
  const int64_t rows = static_cast<int64_t>(a.batch) * a.n;
  if (rows == 0) return cudaSuccess;
  nms_rank_kernel<<<grid_for(rows), 256, 0, s>>>(a, order);
  nms_greedy_kernel<<<static_cast<unsigned>(a.batch < 65535 ? a.batch : 65535), 256, 0, s>>>(a, threshold, order, kept);
  nms_write_kernel<<<grid_for(rows * a.k), 256, 0, s>>>(a, b, c, kept);
  return cudaGetLastError();
}

cudaError_t launch_nms_backward(cudaStream_t s, const RowsArg& g, const RowsArg& da, const RowsArg& c, int* bad) {
  const int64_t rows = static_cast<int64_t>(g.batch) * g.n;
  if (rows == 0) return cudaSuccess;
  nms_check_kernel<<<grid_for(rows), 256, 0, s>>>(c, bad);
  nms_backward_kernel<<<grid_for(rows * g.k), 256, 0, s>>>(g, da, c, bad);
  return cudaGetLastError();
}

cudaError_t launch_hist_edges(cudaStream_t s, const EwPlan& plan, const void* edges, int type, double* out, int* bad) {
  hist_edges_kernel<<<1, 1, 0, s>>>(plan, edges, type, out, bad);
  return cudaGetLastError();
}

cudaError_t launch_hist_count(cudaStream_t s, const EwPlan& x_plan, const void* x, int type, const gpu::HistArgs& args,
                              int* h, int64_t hs, const int* bad) {
  hist_zero_kernel<<<grid_for(args.m), 256, 0, s>>>(h, hs, args.m, bad);
  if (x_plan.count > 0) {
    if (args.m <= kSharedCounts) {
      const int64_t blocks = gpu::choose_ew(x_plan.count).blocks;
      hist_count_shared_kernel<<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), 256,
                                 static_cast<size_t>(args.m) * sizeof(int), s>>>(x_plan, x, type, args, h, hs, bad);
    } else {
      hist_count_global_kernel<<<grid_for(x_plan.count), 256, 0, s>>>(x_plan, x, type, args, h, hs, bad);
    }
  }
  return cudaGetLastError();
}

size_t hist_stats_scratch() { return sizeof(Stats) * kStatsBlocks; }

cudaError_t launch_hist_stats(cudaStream_t s, const EwPlan& x_plan, const void* x, int type, void* stats, int64_t ss,
                              void* scratch, const int* bad) {
  Stats* partial = static_cast<Stats*>(scratch);
  hist_stats_kernel<<<kStatsBlocks, kStatsThreads, 0, s>>>(x_plan, x, type, partial, bad);
  hist_stats_final_kernel<<<1, 1, 0, s>>>(partial, kStatsBlocks, stats, type, ss, bad);
  return cudaGetLastError();
}

cudaError_t launch_lssc_compress(cudaStream_t s, const ImgArg& x, const ImgArg& out) {
  const int64_t total = static_cast<int64_t>(x.n) * out.h * (out.w / 4) * x.c;
  if (total == 0) return cudaSuccess;
  lssc_compress_kernel<<<grid_for(total), 256, 0, s>>>(x, out);
  return cudaGetLastError();
}

cudaError_t launch_lssc_decompress(cudaStream_t s, const ImgArg& in, const ImgArg& y) {
  const int64_t total = static_cast<int64_t>(y.n) * in.h * (in.w / 4) * y.c;
  if (total == 0) return cudaSuccess;
  lssc_decompress_kernel<<<grid_for(total), 256, 0, s>>>(in, y);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
