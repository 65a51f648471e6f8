// What the cudnn_plan tests (cudnn_plan_test.cpp, convt_plan_test.cpp) share
// to replay cuDNN's documented definitions over a plan's numbers: element
// access through a plan's descriptor and filter, cuDNN's output extent, the
// tensors, the test cases' geometry (test/unit/common/conv_case.hpp) and the
// bias gradient's check.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "cmd/common/cudnn_plan.hpp"
#include "unit/common/conv_case.hpp"

namespace cudnn_replay {

using cmdtest::T;
namespace cp = nnc::cudnn_plan;

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

// Element (n, c, h, w) of a tensor through a plan's descriptor.
inline float& at(const ccv_nnc_tensor_t* t, const cp::Tensor4& d, int n, int c, int h, int w) {
  return t->data.f32[static_cast<int64_t>(n) * d.stride[0] + static_cast<int64_t>(c) * d.stride[1] +
                     static_cast<int64_t>(h) * d.stride[2] + static_cast<int64_t>(w) * d.stride[3]];
}
// Element (k, c, r, s) of a packed cuDNN filter {K, C, R, S} in the plan's layout.
inline float& wat(const ccv_nnc_tensor_t* t, const cp::Filter& f, int k, int c, int r, int s) {
  const int Cg = f.dim[1], R = f.dim[2], S = f.dim[3];
  const size_t i = f.nhwc ? ((static_cast<size_t>(k) * R + r) * S + s) * Cg + c
                          : ((static_cast<size_t>(k) * Cg + c) * R + r) * S + s;
  return t->data.f32[i];
}
// cuDNN's output extent (cudnnGetConvolutionNdForwardOutputDim).
inline int cudnn_out(int in, int pad, int filter, int dil, int stride) {
  return (in + 2 * pad - ((filter - 1) * dil + 1)) / stride + 1;
}

// cuDNN's cross-correlation over a plan (cudnnConvolutionForward's definition,
// which its backward-data and backward-filter calls share): for every
// position (n, k, oh, ow) of q.y and every tap (ci, r, s) of filter k that
// lands inside q.x, visit(n, k, oh, ow, c, ci, r, s, h, w), with
// c = (k / Kg) * Cg + ci the tap's channel of x (Cg = q.w.dim[1] channels and
// Kg filters per group) and (h, w) = (oh, ow) * stride - pad + (r, s) * dilation
// its position there.
template <class Visit>
void for_each_tap(const cp::Conv& q, Visit&& visit) {
  const int Cg = q.w.dim[1], Kg = q.w.dim[0] / q.groups;
  for (int n = 0; n < q.y.dim[0]; n++)
    for (int k = 0; k < q.y.dim[1]; k++)
      for (int oh = 0; oh < q.y.dim[2]; oh++)
        for (int ow = 0; ow < q.y.dim[3]; ow++)
          for (int ci = 0; ci < Cg; ci++)
            for (int r = 0; r < q.w.dim[2]; r++)
              for (int s = 0; s < q.w.dim[3]; s++) {
                const int h = oh * q.stride[0] - q.pad[0] + r * q.dilation[0];
                const int w = ow * q.stride[1] - q.pad[1] + s * q.dilation[1];
                if (h < 0 || w < 0 || h >= q.x.dim[2] || w >= q.x.dim[3]) continue;
                visit(n, k, oh, ow, (k / Kg) * Cg + ci, ci, r, s, h, w);
              }
}

inline T make(const std::vector<int>& shape, int format, bool view) {
  return view ? T::view(CCV_32F, shape, format) : T(CCV_32F, shape, format);
}

// cudnnConvolutionBackwardBias: dbias (stride bias.stride[1]) is the sum of
// dy (g, described by gd) over n, h, w per channel.
inline void expect_bias_gradient(const ccv_nnc_tensor_t* g, const cp::Tensor4& gd, const ccv_nnc_tensor_t* db,
                                 const cp::Tensor4& bias) {
  for (int k = 0; k < gd.dim[1]; k++) {
    double s = 0;
    for (int n = 0; n < gd.dim[0]; n++)
      for (int h = 0; h < gd.dim[2]; h++)
        for (int ww = 0; ww < gd.dim[3]; ww++) s += at(g, gd, n, k, h, ww);
    EXPECT_NEAR(s, db->data.f32[k * bias.stride[1]], 1e-4) << "dbias " << k;
  }
}

}  // namespace cudnn_replay
