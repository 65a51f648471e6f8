// Host side of the GPU kernels' index arithmetic (gpu_plan.hpp).
#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

bool broadcast_strides(const int* xdim, const int64_t* xstride, int xnd, const int* ydim, int ynd, int64_t* out) {
  if (xnd < 0 || ynd < 0 || xnd > kPlanDims || ynd > kPlanDims) return false;
  // Leading dimensions of x beyond y's rank must be 1.
  for (int j = 0; j < xnd - ynd; j++)
    if (xdim[j] != 1) return false;
  const int off = ynd - xnd;
  for (int i = 0; i < ynd; i++) {
    const int j = i - off;
    if (j < 0 || xdim[j] == 1) {
      out[i] = 0;
      continue;
    }
    if (xdim[j] != ydim[i]) return false;
    out[i] = xstride[j];
  }
  return true;
}

void packed_strides(const int* dim, int nd, int64_t* stride) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    stride[i] = s;
    s *= dim[i];
  }
}

bool make_plan(EwPlan& p, const int* dim, int nd, int operands, const int64_t* const* strides) {
  if (operands < 1 || operands > kPlanOperands || nd < 0 || nd > kPlanDims) return false;
  p = EwPlan{};
  p.operands = operands;
  p.count = nd > 0 ? 1 : 0;
  for (int i = 0; i < nd; i++) p.count *= dim[i] > 0 ? dim[i] : 0;
  // Keep the dimensions of size > 1.
  int m = 0;
  for (int i = 0; i < nd; i++) {
    if (dim[i] == 1) continue;
    p.dim[m] = dim[i];
    for (int k = 0; k < operands; k++) p.stride[k][m] = strides[k][i];
    m++;
  }
  if (m == 0) {
    p.nd = 1;
    p.dim[0] = 1;
    for (int k = 0; k < operands; k++) p.stride[k][0] = 1;
    return true;
  }
  // Merge from the inside out: dimension j folds into the one after it when,
  // for every operand, stepping j is stepping the whole of the next.
  int out = m - 1;
  for (int j = m - 2; j >= 0; j--) {
    bool merge = true;
    for (int k = 0; k < operands && merge; k++) merge = p.stride[k][j] == p.stride[k][out] * p.dim[out];
    if (merge) {
      p.dim[out] *= p.dim[j];
      continue;
    }
    out--;
    p.dim[out] = p.dim[j];
    for (int k = 0; k < operands; k++) p.stride[k][out] = p.stride[k][j];
  }
  p.nd = m - out;
  if (out > 0)
    for (int i = 0; i < p.nd; i++) {
      p.dim[i] = p.dim[i + out];
      for (int k = 0; k < operands; k++) p.stride[k][i] = p.stride[k][i + out];
    }
  for (int i = p.nd; i < kPlanDims; i++) {
    p.dim[i] = 0;
    for (int k = 0; k < operands; k++) p.stride[k][i] = 0;
  }
  return true;
}

bool make_reduce_plan(ReducePlan& r, const int* full, int nfull, const int* out_dim, const int64_t* out_stride,
                      int out_nd, int inputs, const int64_t* const* in_strides) {
  if (inputs < 1 || inputs + 1 > kPlanOperands || nfull < 1 || nfull > kPlanDims || out_nd < 0 || out_nd > kPlanDims)
    return false;
  // The output's strides over the full shape, 0 on the summed dimensions.
  int64_t os[kPlanDims];
  if (!broadcast_strides(out_dim, out_stride, out_nd, full, nfull, os)) return false;
  int odim[kPlanDims], idim[kPlanDims];
  const int off = nfull - out_nd;
  for (int i = 0; i < nfull; i++) {
    const int j = i - off;
    const bool kept = j >= 0 && out_dim[j] == full[i];
    odim[i] = kept ? full[i] : 1;
    idim[i] = kept ? 1 : full[i];
  }
  const int64_t* outer_strides[kPlanOperands];
  outer_strides[0] = os;
  for (int k = 0; k < inputs; k++) outer_strides[1 + k] = in_strides[k];
  return make_plan(r.outer, odim, nfull, 1 + inputs, outer_strides) &&
         make_plan(r.inner, idim, nfull, inputs, in_strides);
}

ReduceLaunch choose_reduce(const ReducePlan& r) {
  ReduceLaunch l;
  const int64_t m = r.outer.count, n = r.inner.count;
  if (m <= 0) {
    l.blocks = 0;
    return l;
  }
  // Neighbouring outputs read neighbouring input elements: one thread per
  // output reads coalesced rows of the input.
  const bool unit = r.outer.stride[1][r.outer.nd - 1] == 1;
  const bool thread_each = n <= 1 || (m >= 4096 && (unit || n <= 64)) || (n <= 16 && m >= 256);
  if (thread_each) {
    l.block_per_output = false;
    l.threads = 256;
    const int64_t b = (m + l.threads - 1) / l.threads;
    l.blocks = b < kMaxBlocks ? b : kMaxBlocks;
    return l;
  }
  l.block_per_output = true;
  int t = 32;
  while (t < 256 && t < n) t *= 2;
  l.threads = t;
  l.blocks = m < kMaxBlocks ? m : kMaxBlocks;
  return l;
}

ReduceLaunch choose_reduce_sliced(const ReducePlan& r) {
  const int64_t m = r.outer.count, n = r.inner.count;
  if (m <= 0 || n < 4 * kReduceSliceMin || r.outer.stride[1][r.outer.nd - 1] != 1 || m >= kReduceSliceThreads)
    return choose_reduce(r);
  int64_t slices = (kReduceSliceThreads + m - 1) / m;
  if (slices > n / kReduceSliceMin) slices = n / kReduceSliceMin;
  if (slices > kReduceMaxSlices) slices = kReduceMaxSlices;
  if (slices < 2) return choose_reduce(r);
  ReduceLaunch l;
  l.slices = slices;
  l.threads = 256;
  const int64_t b = (m * slices + l.threads - 1) / l.threads;
  l.blocks = b < kMaxBlocks ? b : kMaxBlocks;
  return l;
}

EwLaunch choose_ew(int64_t count) {
  EwLaunch l;
  l.threads = 256;
  if (count <= 0) return l;
  const int64_t b = (count + l.threads - 1) / l.threads;
  constexpr int64_t kCap = int64_t{1} << 20;  // grid-stride loops cover the rest
  l.blocks = b < kCap ? b : kCap;
  return l;
}

}  // namespace nnc::gpu
