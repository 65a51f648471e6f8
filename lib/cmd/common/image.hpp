// The spatial layout of an image tensor, shared by the window families
// (convolution, pooling): one 3-d or 4-d tensor or view, NHWC or NCHW, seen
// as element strides in NHWC order of meaning.
#pragma once

#include <cstdint>

#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

// Strides of a 4-d image tensor (or view) in NHWC order of meaning, whatever
// its format: n, h, w, c (elements).
struct Image {
  unsigned char* data = nullptr;
  int datatype = 0;
  int n = 1, h = 0, w = 0, c = 0;
  int64_t sn = 0, sh = 0, sw = 0, sc = 0;
  bool nhwc = true;  // the tensor's own format (NCHW otherwise)
};

// A 3-d (n = 1) or 4-d tensor or view as an Image.
Image image_of(const ccv_nnc_tensor_t* t);

// The height axis of a 3-d or 4-d NHWC or NCHW image's parameters (the width
// axis follows it); -1 for any other rank or format.
inline int image_height_axis(const ccv_nnc_tensor_param_t& p) {
  const int nd = nd_of(p.dim);
  if (nd != 3 && nd != 4) return -1;
  if (p.format == CCV_TENSOR_FORMAT_NCHW) return nd - 2;
  if (p.format == CCV_TENSOR_FORMAT_NHWC) return nd - 3;
  return -1;
}

}  // namespace nnc
