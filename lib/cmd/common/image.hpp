// The spatial layout of an image tensor, shared by the window families
// (convolution, pooling): one 3-d or 4-d tensor or view, NHWC or NCHW, seen
// as element strides in NHWC order of meaning.
#pragma once

#include <cstdint>

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

}  // namespace nnc
