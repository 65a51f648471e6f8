#include "cmd/common/image.hpp"

#include "core/tensor.hpp"

namespace nnc {

Image image_of(const ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t);
  Image im;
  im.data = l.data;
  im.datatype = l.datatype;
  im.nhwc = l.format != CCV_TENSOR_FORMAT_NCHW;
  const int o = l.nd == 4 ? 1 : 0;
  if (l.nd == 4) {
    im.n = l.dim[0];
    im.sn = l.stride[0];
  }
  if (im.nhwc) {
    im.h = l.dim[o], im.w = l.dim[o + 1], im.c = l.dim[o + 2];
    im.sh = l.stride[o], im.sw = l.stride[o + 1], im.sc = l.stride[o + 2];
  } else {
    im.c = l.dim[o], im.h = l.dim[o + 1], im.w = l.dim[o + 2];
    im.sc = l.stride[o], im.sh = l.stride[o + 1], im.sw = l.stride[o + 2];
  }
  return im;
}

}  // namespace nnc
