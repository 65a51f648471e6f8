// Host halves of the GPU_REF norm kernels' plans (gpu_norm.hpp).
#include "cmd/common/gpu_norm.hpp"

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

}  // namespace nnc::gpu
