// Host halves of the GPU_REF norm kernels' plans (gpu_norm.hpp).
#include "cmd/common/gpu_norm.hpp"

#include <initializer_list>

namespace nnc::gpu {

bool small_strides(const int* sdim, const int64_t* sstride, int snd, const int* want, int nd, int64_t* out) {
  int j = 0;
  for (int i = 0; i < nd; i++) {
    out[i] = 0;
    if (want[i] == 1) continue;
    while (j < snd && sdim[j] == 1) j++;
    if (j >= snd || sdim[j] != want[i]) return false;
    out[i] = sstride[j++];
  }
  while (j < snd && sdim[j] == 1) j++;
  return j == snd;
}

void split_dims(const int* dim, int nd, int ga, int groups, int* out) {
  for (int i = 0, o = 0; i < nd; i++) {
    if (i == ga) {
      out[o++] = groups;
      out[o++] = dim[i] / groups;
    } else {
      out[o++] = dim[i];
    }
  }
}

void split_strides(const int64_t* s, int nd, int ga, int per_group, bool by_group, int64_t* out) {
  for (int i = 0, o = 0; i < nd; i++) {
    if (i == ga) {
      out[o++] = by_group ? s[i] : s[i] * per_group;
      out[o++] = by_group ? 0 : s[i];
    } else {
      out[o++] = s[i];
    }
  }
}

bool make_norm_plan(NormPlan& p, const int* dim, int nd, const int64_t* const* strides, unsigned norm_mask,
                    unsigned param_mask) {
  if (nd < 1 || nd > kPlanDims) return false;
  static const int64_t zeros[kPlanDims] = {};
  const int64_t* st[kNormOperands];
  for (int k = 0; k < kNormOperands; k++) st[k] = strides[k] ? strides[k] : zeros;
  int gdim[kPlanDims], pdim[kPlanDims];
  int64_t gs[kPlanDims], ps[kPlanDims];
  p.group_size = 1;
  for (int i = 0; i < nd; i++) {
    if (dim[i] < 1) return false;
    const bool norm = (norm_mask >> i) & 1u, param = (param_mask >> i) & 1u;
    gdim[i] = norm ? 1 : dim[i];
    pdim[i] = param ? dim[i] : 1;
    if (norm) p.group_size *= dim[i];
  }
  packed_strides(gdim, nd, gs);
  packed_strides(pdim, nd, ps);
  return make_reduce_plan(p.groups, dim, nd, gdim, gs, nd, kNormOperands, st) &&
         make_reduce_plan(p.params, dim, nd, pdim, ps, nd, kNormOperands, st);
}

NormRows choose_norm_rows(const NormPlan& p, const bool* present, const uintptr_t* addr, int element_size) {
  NormRows r;
  if (element_size != 4 && element_size != 2) return r;
  const EwPlan& in = p.groups.inner;
  const EwPlan& out = p.groups.outer;
  if (in.nd != 1 || in.count != p.group_size || p.group_size < 1 || out.count < 1) return r;
  // The row operands: unit stride along the row. Scale and bias: the same
  // for every row (outer strides 0) as well. The statistics do not vary
  // along a row (inner stride 0 by construction) and may sit anywhere.
  static const int row_ops[] = {kNormX, kNormY, kNormG, kNormDx, kNormScale, kNormBias};
  bool aligned = true;
  for (int k : row_ops) {
    if (!present[k]) continue;
    if (in.stride[k][0] != 1) return r;
    if (addr[k] % 16 != 0) aligned = false;
    for (int d = 0; d < out.nd; d++) {
      if (out.dim[d] < 2) continue;  // one row: its stride is never stepped
      const int64_t s = out.stride[1 + k][d];
      if ((k == kNormScale || k == kNormBias) && s != 0) return r;
      if ((s * element_size) % 16 != 0) aligned = false;
    }
  }
  for (int k : {kNormMean, kNormInv})
    if (present[k] && in.count > 1 && in.stride[k][0] != 0) return r;  // (one element: strides set to 1)
  r.rows = out.count;
  r.cols = p.group_size;
  r.vec_width = 16 / element_size;
  r.vector = aligned;
  const int64_t chunks = (r.cols + r.vec_width - 1) / r.vec_width;
  if (chunks <= 32 * kNormRowMaxChunks) {
    r.threads_per_row = 32;
    r.rows_per_block = kNormRowWarps;
  } else {
    // About 4 chunks a thread (16 floats of x for 32F, 32 for the halves):
    // enough independent loads in flight, few enough registers.
    int t = 128;
    while (t < kNormRowMaxThreads && static_cast<int64_t>(t) * kNormRowMaxChunks < chunks) t *= 2;
    if (static_cast<int64_t>(t) * kNormRowMaxChunks < chunks) return NormRows{};  // too long: the general way
    r.threads_per_row = t;
    r.rows_per_block = 1;
  }
  r.chunks = 1;
  while (static_cast<int64_t>(r.threads_per_row) * r.chunks < chunks) r.chunks *= 2;
  const int64_t b = (r.rows + r.rows_per_block - 1) / r.rows_per_block;
  r.blocks = b < kMaxBlocks ? b : kMaxBlocks;
  r.fast = true;
  return r;
}

NormCols choose_norm_cols(int64_t rows, int64_t cols) {
  NormCols c;
  if (rows < 1 || cols < 1) return c;
  c.strips = (cols + kNormColWidth - 1) / kNormColWidth;
  // About 1024 blocks in all (several per SM), each slice at least 32 rows
  // (4 a thread) so that the partials stay a small fraction of the traffic.
  const int64_t want = (1024 + c.strips - 1) / c.strips;
  const int64_t most = (rows + 31) / 32;
  c.splits = want < most ? want : most;
  if (c.splits > kMaxBlocks) c.splits = kMaxBlocks;
  if (c.splits < 1) c.splits = 1;
  c.rows_per_split = (rows + c.splits - 1) / c.splits;
  c.splits = (rows + c.rows_per_split - 1) / c.rows_per_split;  // no empty slice
  return c;
}

}  // namespace nnc::gpu
