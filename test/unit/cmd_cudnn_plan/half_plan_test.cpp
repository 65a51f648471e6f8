// cudnn_plan with 16F and 16BF tensors. A 16-bit call must hand cuDNN the
// same geometry as the 32F call of the same shapes and views (dims, element
// strides, filter layout, pads, strides, dilations, groups, pooling window,
// batch-norm folding: cudnn_plan_test.cpp replays those numbers against
// CPU_REF), with its own storage type in the plan; mixed types are refused
// with a message, as are 64F and 16-bit layer norm (GPU_REF runs those).
// Since element strides are counted in elements, a plan that, e.g., took
// them from byte sizes or kept 32F as the datatype fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cmd/common/cudnn_plan.hpp"
#include "core/error.hpp"
#include "cudnn_replay.hpp"

using namespace cmdtest;
using namespace cudnn_replay;
namespace cp = nnc::cudnn_plan;

namespace {

class CudnnHalfPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr int kHalves[] = {CCV_16F, CCV_16BF};

using Case = nnc_test_conv::ConvCase<false>;

T tensor(int dt, const std::vector<int>& shape, int format, bool view) {
  return view ? T::view(dt, shape, format) : T(dt, shape, format);
}

void expect_same(const cp::Tensor4& a, const cp::Tensor4& b, const char* what) {
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(a.dim[i], b.dim[i]) << what << " dim " << i;
    EXPECT_EQ(a.stride[i], b.stride[i]) << what << " stride " << i;
  }
}

void expect_same(const cp::Conv& a, const cp::Conv& b) {
  expect_same(a.x, b.x, "x");
  expect_same(a.y, b.y, "y");
  for (int i = 0; i < 4; i++) EXPECT_EQ(a.w.dim[i], b.w.dim[i]) << "w dim " << i;
  EXPECT_EQ(a.w.nhwc, b.w.nhwc);
  for (int i = 0; i < 2; i++) {
    EXPECT_EQ(a.pad[i], b.pad[i]);
    EXPECT_EQ(a.stride[i], b.stride[i]);
    EXPECT_EQ(a.dilation[i], b.dilation[i]);
  }
  EXPECT_EQ(a.groups, b.groups);
  EXPECT_EQ(a.has_bias, b.has_bias);
  if (a.has_bias) expect_same(a.bias, b.bias, "bias");
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    Case a{3, 7, 9, 5, 4, 3, 3};  // odd sizes, 3x3, pad 1, stride 2
    a.SH = a.SW = 2, a.PT = a.PB = a.PL = a.PR = 1, a.format = f;
    cs.push_back(a);
    Case b{2, 9, 8, 6, 4, 3, 3};  // groups 2, views, dilation 2x1
    b.G = 2, b.DH = 2, b.PT = b.PB = 2, b.views = true, b.format = f;
    cs.push_back(b);
    Case c{1, 6, 5, 4, 8, 3, 3};  // 3-d, groups 4, no bias
    c.batched = false, c.G = 4, c.bias = false, c.PL = c.PR = 1, c.format = f;
    cs.push_back(c);
  }
  return cs;
}

TEST_F(CudnnHalfPlan, ConvolutionForwardSameNumbersOwnType) {
  for (const Case& c : cases())
    for (int dt : kHalves) {
      SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " G" << c.G
                                      << (c.views ? " views" : "") << (dt == CCV_16F ? " 16F" : " 16BF"));
      T x = tensor(CCV_32F, c.x_shape(), c.format, c.views), w(CCV_32F, c.w_shape(), c.format), b(CCV_32F, {c.K});
      T y = tensor(CCV_32F, c.y_shape(), c.format, c.views);
      T xh = tensor(dt, c.x_shape(), c.format, c.views), wh(dt, c.w_shape(), c.format), bh(dt, {c.K});
      T yh = tensor(dt, c.y_shape(), c.format, c.views);
      cp::Conv p32, ph;
      std::string why;
      const ccv_nnc_cmd_t cmd = c.cmd(CCV_NNC_CONVOLUTION_FORWARD);
      ASSERT_TRUE(cp::conv_forward(cmd, c.hint(), x, w, c.bias ? b.get() : nullptr, y, &p32, &why)) << why;
      ASSERT_TRUE(cp::conv_forward_tensors(xh, wh, c.bias ? bh.get() : nullptr, yh, &why)) << why;
      ASSERT_TRUE(cp::conv_forward(cmd, c.hint(), xh, wh, c.bias ? bh.get() : nullptr, yh, &ph, &why)) << why;
      EXPECT_EQ(p32.datatype, CCV_32F);
      EXPECT_EQ(ph.datatype, dt);
      expect_same(ph, p32);
      // One tensor of another type: refused, saying why (bias, w, y in turn).
      T b32(CCV_32F, {c.K}), w32(CCV_32F, c.w_shape(), c.format);
      EXPECT_FALSE(cp::conv_forward_tensors(xh, wh, b32, yh, &why));
      EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
      why.clear();
      EXPECT_FALSE(cp::conv_forward_tensors(xh, w32, nullptr, yh, &why));
      EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
      why.clear();
      EXPECT_FALSE(cp::conv_forward_tensors(xh, wh, nullptr, y, &why));
      EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
    }
}

TEST_F(CudnnHalfPlan, ConvolutionBackwardSameNumbersOwnType) {
  for (const Case& c : cases())
    for (int dt : kHalves)
      for (int mask = 1; mask < 8; mask++) {
        SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " G" << c.G
                                        << (c.views ? " views" : "") << (dt == CCV_16F ? " 16F" : " 16BF")
                                        << " outputs " << mask);
        const bool want_dx = mask & 1, want_dw = mask & 2, want_db = mask & 4;
        auto slots = [&](int type, std::vector<T>* keep) {
          keep->push_back(tensor(type, c.y_shape(), c.format, c.views));  // g
          keep->push_back(tensor(type, c.x_shape(), c.format, c.views));  // x
          keep->emplace_back(type, c.w_shape(), c.format);                // w
          keep->push_back(tensor(type, c.x_shape(), c.format, c.views));  // dx
          keep->emplace_back(type, c.w_shape(), c.format);                // dw
          keep->emplace_back(type, std::vector<int>{c.K});                // dbias
        };
        std::vector<T> t32, th;
        t32.reserve(6), th.reserve(6);
        slots(CCV_32F, &t32);
        slots(dt, &th);
        auto io = [&](std::vector<T>& t) {
          std::vector<ccv_nnc_tensor_t*> in = {t[0], want_dw ? t[1].get() : nullptr, want_dx ? t[2].get() : nullptr};
          std::vector<ccv_nnc_tensor_t*> out = {want_dx ? t[3].get() : nullptr, want_dw ? t[4].get() : nullptr,
                                                want_db ? t[5].get() : nullptr};
          return std::make_pair(in, out);
        };
        auto [i32, o32] = io(t32);
        auto [ih, oh] = io(th);
        const ccv_nnc_cmd_t cmd = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD);
        cp::ConvBackward p32, ph;
        std::string why;
        ASSERT_TRUE(cp::conv_backward(cmd, c.hint(), i32.data(), 3, o32.data(), 3, &p32, &why)) << why;
        ASSERT_TRUE(cp::conv_backward_tensors(ih.data(), 3, oh.data(), 3, &why)) << why;
        ASSERT_TRUE(cp::conv_backward(cmd, c.hint(), ih.data(), 3, oh.data(), 3, &ph, &why)) << why;
        EXPECT_EQ(ph.conv.datatype, dt);
        EXPECT_EQ(ph.bias_only, p32.bias_only);
        EXPECT_EQ(ph.dx, want_dx);
        EXPECT_EQ(ph.dw, want_dw);
        EXPECT_EQ(ph.dbias, want_db);
        if (ph.bias_only) {
          expect_same(ph.conv.y, p32.conv.y, "g");
          expect_same(ph.conv.bias, p32.conv.bias, "dbias");
        } else {
          expect_same(ph.conv, p32.conv);
          if (want_dx) expect_same(ph.dx_desc, p32.dx_desc, "dx");
        }
        // The first output given in 32F beside 16-bit inputs: refused.
        T other32 = want_dx   ? tensor(CCV_32F, c.x_shape(), c.format, c.views)
                    : want_dw ? T(CCV_32F, c.w_shape(), c.format)
                              : T(CCV_32F, {c.K});
        std::vector<ccv_nnc_tensor_t*> mixed = oh;
        mixed[want_dx ? 0 : want_dw ? 1 : 2] = other32;
        why.clear();
        EXPECT_FALSE(cp::conv_backward_tensors(ih.data(), 3, mixed.data(), 3, &why));
        EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
        // The full plan: a refusal, or (where the family's own checks see the
        // mismatch first) the family's error, as on CPU_REF; either says so.
        why.clear();
        bool planned = true;
        try {
          planned = cp::conv_backward(cmd, c.hint(), ih.data(), 3, mixed.data(), 3, &ph, &why);
        } catch (const nnc::Error& e) {
          planned = false;
          why = e.what();
        }
        EXPECT_FALSE(planned);
        EXPECT_NE(why.find("one type"), std::string::npos) << why;
      }
}

struct PoolCase {
  int N, H, W, C, KH, KW, SH, SW, PT, PB, PL, PR;
  int format;
  bool views = false;
  int OH() const { return (H + PT + PB - KH) / SH + 1; }
  int OW() const { return (W + PL + PR - KW) / SW + 1; }
  std::vector<int> img(int h, int w) const {
    return format == NHWC ? std::vector<int>{N, h, w, C} : std::vector<int>{N, C, h, w};
  }
  ccv_nnc_hint_t hint() const {
    ccv_nnc_hint_t hh = {};
    hh.stride.dim[0] = SH, hh.stride.dim[1] = SW;
    hh.border.begin[0] = PT, hh.border.end[0] = PB, hh.border.begin[1] = PL, hh.border.end[1] = PR;
    return hh;
  }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    c.info.size.dim[0] = KH, c.info.size.dim[1] = KW, c.info.size.dim[2] = 1;
    return c;
  }
};

TEST_F(CudnnHalfPlan, PoolingSameNumbersOwnType) {
  for (int f : {NHWC, NCHW})
    for (const PoolCase& c :
         {PoolCase{3, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, f}, PoolCase{2, 6, 5, 4, 3, 2, 1, 2, 1, 1, 0, 0, f, true}})
      for (int dt : kHalves)
        for (uint32_t id : {CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_AVERAGE_POOL_BACKWARD}) {
          SCOPED_TRACE(testing::Message() << (f == NHWC ? "NHWC" : "NCHW") << (c.views ? " views" : "")
                                          << (dt == CCV_16F ? " 16F" : " 16BF"));
          T x = tensor(CCV_32F, c.img(c.H, c.W), f, c.views), y = tensor(CCV_32F, c.img(c.OH(), c.OW()), f, c.views);
          T xh = tensor(dt, c.img(c.H, c.W), f, c.views), yh = tensor(dt, c.img(c.OH(), c.OW()), f, c.views);
          cp::Pool p32, ph;
          std::string why;
          ASSERT_TRUE(cp::pool(c.cmd(id), c.hint(), x, y, &p32, &why)) << why;
          ASSERT_TRUE(cp::pool_tensors(xh, yh, &why)) << why;
          ASSERT_TRUE(cp::pool(c.cmd(id), c.hint(), xh, yh, &ph, &why)) << why;
          EXPECT_EQ(ph.datatype, dt);
          EXPECT_EQ(ph.mode, p32.mode);
          expect_same(ph.x, p32.x, "x");
          expect_same(ph.y, p32.y, "y");
          for (int i = 0; i < 2; i++) {
            EXPECT_EQ(ph.window[i], p32.window[i]);
            EXPECT_EQ(ph.pad[i], p32.pad[i]);
            EXPECT_EQ(ph.stride[i], p32.stride[i]);
          }
          why.clear();
          EXPECT_FALSE(cp::pool_tensors(xh, y, &why));
          EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
          EXPECT_THROW(cp::pool(c.cmd(id), c.hint(), x, yh, &ph, &why), nnc::Error);  // the family's error
        }
}

TEST_F(CudnnHalfPlan, SoftmaxRowsOwnType) {
  for (int dt : kHalves)
    for (bool view : {false, true}) {
      const std::vector<int> shape = view ? std::vector<int>{7, 33} : std::vector<int>{3, 5, 33};
      T x = tensor(CCV_32F, shape, NHWC, view), xh = tensor(dt, shape, NHWC, view), yh = tensor(dt, shape, NHWC, false);
      cp::Tensor4 a, b;
      std::string why;
      ASSERT_TRUE(cp::softmax_rows(x, &a, &why)) << why;
      ASSERT_TRUE(cp::softmax_rows(xh, &b, &why)) << why;
      expect_same(b, a, "rows");
      EXPECT_TRUE(cp::one_type({xh.get(), nullptr, yh.get()}, &why)) << why;
      EXPECT_FALSE(cp::one_type({xh.get(), x.get()}, &why));
      EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
      EXPECT_FALSE(cp::one_type({nullptr, yh.get(), x.get()}, &why));
    }
  T d(CCV_64F, {4, 5});
  std::string why;
  EXPECT_FALSE(cp::one_type({d.get()}, &why));
  EXPECT_NE(why.find("32F, 16F or 16BF"), std::string::npos) << why;
}

struct BnCase {
  std::vector<int> shape;
  std::vector<int> axes;
  int format = NHWC;
  bool views = false;
  std::vector<int> kept() const {
    std::vector<int> k;
    for (size_t i = 0; i < shape.size(); i++)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) k.push_back(shape[i]);
    return k;
  }
  ccv_nnc_cmd_t cmd(uint32_t id, bool test = false) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    for (size_t i = 0; i < axes.size(); i++) c.info.bnorm.axis[i] = axes[i];
    c.info.bnorm.count = static_cast<int>(axes.size());
    c.info.bnorm.epsilon = 1e-3f;
    c.info.bnorm.momentum = 0.75f;
    c.info.bnorm.is_test = test;
    return c;
  }
};

// Batch norm: the same folding and factors; every per-channel tensor stays in
// x's type in NNC (the backend converts them), so one in 32F beside 16-bit x
// is refused.
TEST_F(CudnnHalfPlan, BatchNormSameNumbersOwnType) {
  for (const BnCase& c : {BnCase{{3, 7, 9, 5}, {0, 1, 2}}, BnCase{{3, 5, 7, 9}, {0, 2, 3}, NCHW},
                          BnCase{{2, 5, 7, 3}, {0, 1, 2}, NHWC, true}, BnCase{{6, 4}, {0}}})
    for (int dt : kHalves) {
      SCOPED_TRACE(testing::Message() << c.shape.size() << "-d" << (c.views ? " views" : "")
                                      << (dt == CCV_16F ? " 16F" : " 16BF"));
      auto make_set = [&](int type, std::vector<T>* t) {
        t->push_back(tensor(type, c.shape, c.format, c.views));       // x
        t->push_back(tensor(type, c.shape, c.format, c.views));       // y (g's and dx's stand-in too)
        for (int i = 0; i < 6; i++) t->emplace_back(type, c.kept());  // scale bias mean var saved_mean saved_inv_std
      };
      std::vector<T> a, h;
      a.reserve(8), h.reserve(8);
      make_set(CCV_32F, &a);
      make_set(dt, &h);
      std::vector<ccv_nnc_tensor_t*> ap, hp;
      for (T& t : a) ap.push_back(t);
      for (T& t : h) hp.push_back(t);
      auto fwd = [&](const std::vector<ccv_nnc_tensor_t*>& t, cp::BatchNorm* p, std::string* why) {
        const std::vector<ccv_nnc_tensor_t*> in = {t[0], t[2], t[3], t[4], t[5]};
        const std::vector<ccv_nnc_tensor_t*> out = {t[1], t[4], t[5], t[6], t[7]};
        return cp::batch_norm_forward(c.cmd(CCV_NNC_BATCH_NORM_FORWARD), in.data(), 5, out.data(), 5, p, why);
      };
      auto bwd = [&](const std::vector<ccv_nnc_tensor_t*>& t, cp::BatchNorm* p, std::string* why) {
        const std::vector<ccv_nnc_tensor_t*> in = {t[1], nullptr, nullptr, nullptr, nullptr, t[0], t[2], t[3],
                                                   t[4], t[5],    t[1],    nullptr, nullptr, t[6], t[7]};
        const std::vector<ccv_nnc_tensor_t*> out = {t[1], t[4], t[5]};
        return cp::batch_norm_backward(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD), in.data(), 15, out.data(), 3, p, why);
      };
      cp::BatchNorm p32, ph;
      std::string why;
      ASSERT_TRUE(fwd(ap, &p32, &why)) << why;
      ASSERT_TRUE(fwd(hp, &ph, &why)) << why;
      EXPECT_EQ(p32.datatype, CCV_32F);
      EXPECT_EQ(ph.datatype, dt);
      expect_same(ph.x, p32.x, "x");
      expect_same(ph.param, p32.param, "param");
      EXPECT_EQ(ph.channels, p32.channels);
      EXPECT_EQ(ph.per_channel, p32.per_channel);
      EXPECT_EQ(ph.keep, p32.keep);
      EXPECT_EQ(ph.take_mean, p32.take_mean);
      EXPECT_EQ(ph.take_var, p32.take_var);
      ASSERT_TRUE(bwd(hp, &ph, &why)) << why;
      EXPECT_EQ(ph.datatype, dt);
      expect_same(ph.x, p32.x, "x (backward)");
      // A 32F per-channel tensor beside 16-bit x (scale, then saved_inv_std), or a 32F y.
      std::swap(hp[2], ap[2]);
      why.clear();
      EXPECT_FALSE(fwd(hp, &ph, &why));
      EXPECT_NE(why.find("x's type"), std::string::npos) << why;
      std::swap(hp[2], ap[2]);
      std::swap(hp[7], ap[7]);
      why.clear();
      EXPECT_FALSE(bwd(hp, &ph, &why));
      EXPECT_NE(why.find("x's type"), std::string::npos) << why;
      std::swap(hp[7], ap[7]);
      std::swap(hp[1], ap[1]);
      why.clear();
      EXPECT_FALSE(fwd(hp, &ph, &why));
      EXPECT_NE(why.find("all of one type"), std::string::npos) << why;
      std::swap(hp[1], ap[1]);
      ASSERT_TRUE(fwd(hp, &ph, &why)) << why;  // restored: taken again
    }
}

// 16-bit layer norm: refused with the reason (GPU_REF runs it).
TEST_F(CudnnHalfPlan, LayerNormHalvesGoToGpuRef) {
  for (int dt : kHalves) {
    ccv_nnc_cmd_t c = command(CCV_NNC_LAYER_NORM_FORWARD, CCV_NNC_BACKEND_CPU_REF);
    c.info.lnorm.axis[0] = 1;
    c.info.lnorm.count = 1;
    c.info.lnorm.epsilon = 1e-4f;
    c.info.lnorm.elementwise_affine = 1;
    T x(dt, {6, 10}), y(dt, {6, 10}), s(dt, {1, 10}), b(dt, {1, 10}), sm(dt, {6, 1}), si(dt, {6, 1});
    const std::vector<ccv_nnc_tensor_t*> in = {x, s, b}, out = {y, sm, si};
    cp::LayerNorm p;
    std::string why;
    EXPECT_FALSE(cp::layer_norm_forward(c, in.data(), 3, out.data(), 3, &p, &why));
    EXPECT_NE(why.find("GPU_REF"), std::string::npos) << why;
    ccv_nnc_cmd_t cb = c;
    cb.cmd = CCV_NNC_LAYER_NORM_BACKWARD;
    const std::vector<ccv_nnc_tensor_t*> bin = {y, nullptr, nullptr, x, s, b, y, sm, si}, bout = {x, nullptr, nullptr};
    why.clear();
    EXPECT_FALSE(cp::layer_norm_backward(cb, bin.data(), 9, bout.data(), 3, &p, &why));
    EXPECT_NE(why.find("GPU_REF"), std::string::npos) << why;
  }
}

}  // namespace
