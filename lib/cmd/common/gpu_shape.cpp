// Host halves of the GPU_REF shape kernels' index maps (gpu_shape.hpp).
#include "cmd/common/gpu_shape.hpp"

namespace nnc::gpu {

bool make_pad_map(PadMap& m, int type, const int* small_dim, const int64_t* small_stride, const int* big_dim,
                  const int64_t* big_stride, int nd, const int* begin) {
  if (nd < 1 || nd > kPlanDims || type < kPadZero || type > kPadReflect) return false;
  m = PadMap{};
  m.nd = nd;
  m.type = type;
  m.count = 1;
  for (int d = 0; d < nd; d++) {
    if (small_dim[d] < 1 || begin[d] < 0 || big_dim[d] < small_dim[d] + begin[d]) return false;
    m.dim[d] = big_dim[d];
    m.big_stride[d] = big_stride[d];
    m.small_dim[d] = small_dim[d];
    m.small_stride[d] = small_stride[d];
    m.begin[d] = begin[d];
    m.count *= big_dim[d];
  }
  return true;
}

bool make_up_map(UpMap& m, int nearest, int align, int h, const int* big_dim, const int64_t* big_stride,
                 const int* small_dim, const int64_t* small_stride, int nd) {
  if (nd < 2 || nd > 4 || h < 0 || h + 1 >= nd) return false;
  m = UpMap{};
  m.nd = nd;
  m.h = h;
  m.nearest = nearest;
  m.align = align;
  m.count = 1;
  for (int d = 0; d < nd; d++) {
    if (small_dim[d] < 1 || big_dim[d] < 1) return false;
    if (d != h && d != h + 1 && small_dim[d] != big_dim[d]) return false;
    m.dim[d] = big_dim[d];
    m.big_stride[d] = big_stride[d];
    m.small_dim[d] = small_dim[d];
    m.small_stride[d] = small_stride[d];
    m.count *= big_dim[d];
  }
  return true;
}

bool pair_strides(const int* dim, const int64_t* stride, int nd, const int* half, int n, int64_t* s, int64_t* im) {
  if (nd < 1 || nd > kPlanDims || dim[nd - 1] % 2 != 0) return false;
  int hd[kPlanDims];
  int64_t st[kPlanDims];
  for (int i = 0; i < nd; i++) hd[i] = dim[i], st[i] = stride[i];
  hd[nd - 1] = dim[nd - 1] / 2;
  st[nd - 1] = 2 * stride[nd - 1];
  if (!broadcast_strides(hd, st, nd, half, n, s)) return false;
  *im = stride[nd - 1];
  return true;
}

}  // namespace nnc::gpu
