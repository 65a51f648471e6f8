// The geometry of one convolution or transposed-convolution test case, as the
// cuDNN plan tests (test/unit/cmd_cudnn_plan), the GPU tests
// (test/unit/cuda/convt_gpu_test.cpp, cudnn_test.cpp) and the transposed
// convolution's own tests (test/unit/cmd_convolution_transpose) state it: x is N, H, W, C (NHWC) or
// N, C, H, W (NCHW), optionally unbatched (3-d) or a view; the output is
// OH x OW with K channels; stride, padding (begin / end) and dilation per
// axis, groups, and for the transposed convolution output_padding. Weights:
// the convolution's K, KH, KW, C/G (NHWC) or K, C/G, KH, KW; the transposed
// convolution's C, KH, KW, K/G or C, K/G, KH, KW. Headers only: every target
// that includes it has ${PROJECT_SOURCE_DIR}/test among its include directories.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"

namespace nnc_test_conv {

template <bool Transposed>
struct ConvCase {
  int N, H, W, C, K, KH, KW;
  int SH = 1, SW = 1, PT = 0, PB = 0, PL = 0, PR = 0, DH = 1, DW = 1, G = 1;
  int OP = 0;  // output_padding (transposed only)
  int format = CCV_TENSOR_FORMAT_NHWC;
  bool batched = true, views = false, bias = true;

  int OH() const {
    return Transposed ? (H - 1) * SH + (KH - 1) * DH + 1 - PT - PB + OP : (H + PT + PB - ((KH - 1) * DH + 1)) / SH + 1;
  }
  int OW() const {
    return Transposed ? (W - 1) * SW + (KW - 1) * DW + 1 - PL - PR + OP : (W + PL + PR - ((KW - 1) * DW + 1)) / SW + 1;
  }
  // An image's dims in this case's format (n dropped when unbatched).
  std::vector<int> img(int n, int h, int w, int c) const {
    std::vector<int> d = format == CCV_TENSOR_FORMAT_NHWC ? std::vector<int>{n, h, w, c} : std::vector<int>{n, c, h, w};
    if (!batched) d.erase(d.begin());
    return d;
  }
  std::vector<int> x_shape() const { return img(N, H, W, C); }
  std::vector<int> y_shape() const { return img(N, OH(), OW(), K); }
  std::vector<int> w_shape() const {
    const int out = Transposed ? C : K, per_group = Transposed ? K / G : C / G;
    return format == CCV_TENSOR_FORMAT_NHWC ? std::vector<int>{out, KH, KW, per_group}
                                            : std::vector<int>{out, per_group, KH, KW};
  }
  ccv_nnc_hint_t hint() const {
    ccv_nnc_hint_t h;
    std::memset(&h, 0, sizeof(h));
    h.stride.dim[0] = SH, h.stride.dim[1] = SW;
    h.border.begin[0] = PT, h.border.end[0] = PB, h.border.begin[1] = PL, h.border.end[1] = PR;
    return h;
  }
  // The command (size.dim[2] = C) on `backend` (CPU_REF unless named).
  ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend = CCV_NNC_BACKEND_CPU_REF) const {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.size.dim[0] = KH, p.size.dim[1] = KW, p.size.dim[2] = C;
    if (Transposed) {
      p.convolution_transpose.count = K;
      p.convolution_transpose.groups = G;
      p.convolution_transpose.dilation[0] = DH, p.convolution_transpose.dilation[1] = DW;
      p.convolution_transpose.output_padding = OP;
    } else {
      p.convolution.count = K;
      p.convolution.groups = G;
      p.convolution.dilation[0] = DH, p.convolution.dilation[1] = DW;
    }
    ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
    c.backend = backend;
    return c;
  }
};

// The three odd cases every convolution test starts from, in `format`: odd
// sizes with pad 1; groups 2 with stride 2x3, dilation 2x1 and pads 2 / 0;
// unbatched (3-d) with groups 4, no bias and column padding only.
inline std::vector<ConvCase<false>> odd_conv_cases(int format) {
  ConvCase<false> a{2, 7, 9, 3, 5, 3, 3};
  a.PT = a.PB = a.PL = a.PR = 1, a.format = format;
  ConvCase<false> b{3, 11, 10, 6, 4, 3, 2};
  b.SH = 2, b.SW = 3, b.PT = b.PB = 2, b.G = 2, b.DH = 2, b.format = format;
  ConvCase<false> c{1, 6, 5, 4, 8, 3, 3};
  c.batched = false, c.G = 4, c.bias = false, c.format = format, c.PL = c.PR = 1;
  return {a, b, c};
}

}  // namespace nnc_test_conv
