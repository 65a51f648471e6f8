// GPU_REF LAYER_NORM / RMSNORM row kernels (cuda/more_kernels.cu,
// norm_rows_*; chosen by gpu::choose_norm_rows) against CPU_REF on random
// inputs (fixed seeds): x [rows, cols] normalised over its last axis, 32F /
// 16F / 16BF, with and without scale / bias, row lengths that take the warp
// path (1 .. 1024 32F elements), the block path (1031, 4100) and vector tails
// (a single row of a length that is not a multiple of the 16-byte chunk, so
// the row starts aligned and ends in a partial chunk), row counts 1, 3 and 37,
// and views (a window starting at element (1, 1) of a larger parent: rows
// misaligned, so 16-byte loads must be declined; the parent's border must stay
// untouched). Each case asserts which way the host chose (the row kernels,
// vector or not) before comparing. The general kernels still serve other
// axes (checked the same way). LAYER_NORM / RMSNORM declare no in-place pair
// (their description file has no allow_inplace), so none is tested.
//
// Tolerances (the row kernels' error bound is argued in more_kernels.cu): the
// statistics are float sums of <= 4100 terms of |x| <= 2, off by at most
// ~40 u sum|x| / n <= 5e-6 in the mean (u = 2^-24); y = (x - mean) inv scale +
// bias with |xhat| <= ~4 and scale, bias O(1) is then off by <= ~2e-5
// absolute, so 32F y and the statistics: |gpu - cpu| <= 2e-5 + 1e-5 |cpu|
// (inv reaches 316 for rows of one element: the relative term). 16F / 16BF:
// both sides round once to the storage type, so they are equal or one ulp of
// it apart at |cpu|, plus the same float slack. The backward reads CPU_REF's
// saved statistics on both sides (uploaded), so only the float sums of h and
// h xhat differ (<= ~40 u sum|h|, times inv ~1): dx, dscale, dbias within
// 1e-4 + 1e-4 |cpu| (32F) or one ulp + 1e-4 (halves). A wrong row, column,
// chunk, tail or statistic is off by O(0.1) or more.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cmd/common/gpu_norm.hpp"
#include "cuda/ewgpu.hpp"
#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;
namespace gpu = nnc::gpu;

const int kTypes[] = {CCV_32F, CCV_16F, CCV_16BF};
const char* tname(int t) { return t == CCV_32F ? "32F" : t == CCV_16F ? "16F" : "16BF"; }
int esize(int t) { return t == CCV_32F ? 4 : 2; }

ccv_nnc_cmd_t ln(bool backward, int axis, bool affine) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_LAYER_NORM_BACKWARD : CCV_NNC_LAYER_NORM_FORWARD);
  c.info.lnorm.count = 1, c.info.lnorm.axis[0] = axis, c.info.lnorm.epsilon = 1e-5f;
  c.info.lnorm.elementwise_affine = affine ? 1 : 0;
  return c;
}
ccv_nnc_cmd_t rms(bool backward, int axis) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_RMSNORM_BACKWARD : CCV_NNC_RMSNORM_FORWARD);
  c.info.rmsnorm.count = 1, c.info.rmsnorm.axis[0] = axis, c.info.rmsnorm.epsilon = 1e-5f;
  return c;
}

// |gpu - cpu| <= atol + rtol |cpu| (32F) or one ulp of the storage type at
// |cpu| + atol (16F: 2^-10 relative to the binade, 16BF: 2^-7), parents whole.
void expect_near(const Both& b, int type, float rtol, float atol, const std::string& what) {
  Owned back = to_cpu(b.gpu_parent());
  Owned g = as_f32(back), c = as_f32(b.cpu_parent());
  const size_t n = ccv_nnc_tensor_count(c->info);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const float a = g->data.f32[i], e = c->data.f32[i];
    float tol = atol + rtol * std::fabs(e);
    if (type != CCV_32F && e != 0) {
      int ex;
      std::frexp(e, &ex);  // |e| in [2^(ex-1), 2^ex)
      tol = atol + std::ldexp(1.f, ex - 1 - (type == CCV_16F ? 10 : 7));
    }
    if (!(a == e || std::fabs(a - e) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": parent element " << i << " is " << a << ", expected " << e;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements differ";
}

// The host's choice for x [rows, cols] normalised over axis 1, from the GPU
// tensors as the backend sees them (first element, strides).
void strides_of(const ccv_nnc_tensor_t* t, int64_t* s) {
  if (CCV_IS_TENSOR_VIEW(t)) {
    const auto* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(t);
    s[0] = v->stride[0], s[1] = v->stride[1];
  } else {
    s[0] = t->info.dim[1], s[1] = 1;
  }
}
gpu::NormRows choice(int rows, int cols, int type, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y, ccv_nnc_tensor_t* scale,
                     ccv_nnc_tensor_t* bias, ccv_nnc_tensor_t* stat) {
  const int dim[2] = {rows, cols};
  int64_t st[gpu::kNormOperands][2] = {};
  const int64_t* sp[gpu::kNormOperands] = {};
  bool present[gpu::kNormOperands] = {};
  uintptr_t addr[gpu::kNormOperands] = {};
  auto put = [&](int k, ccv_nnc_tensor_t* t, int kind) {  // kind 0 x-like, 1 per column, 2 per row
    if (!t) return;
    if (kind == 0) strides_of(t, st[k]);
    if (kind == 1) st[k][0] = 0, st[k][1] = 1;
    if (kind == 2) st[k][0] = 1, st[k][1] = 0;
    sp[k] = st[k];
    present[k] = true;
    addr[k] = reinterpret_cast<uintptr_t>(t->data.u8);
  };
  put(gpu::kNormX, x, 0);
  put(gpu::kNormY, y, 0);
  put(gpu::kNormScale, scale, 1);
  put(gpu::kNormBias, bias, 1);
  put(gpu::kNormInv, stat, 2);
  gpu::NormPlan p;
  EXPECT_TRUE(gpu::make_norm_plan(p, dim, 2, sp, 2u, 2u));
  return gpu::choose_norm_rows(p, present, addr, esize(type));
}

struct Case {
  int rows, cols;
  bool view;
};

// The cases per type: every length, rows chosen so that each length meets a
// single aligned row (the vector tail) in some type, and views in some.
std::vector<Case> cases_for(int ti) {
  const int cols[] = {1, 7, 31, 32, 33, 100, 257, 1024, 1031, 4100};
  const int rows[] = {1, 3, 37};
  std::vector<Case> out;
  for (int ci = 0; ci < 10; ci++) {
    int r = rows[(ci + ti) % 3];
    if (cols[ci] >= 1024 && r == 37) r = 1;  // keep the emulated runs short
    const bool view = (ci + ti) % 4 == 3;
    // A view of one row may start aligned by chance: views take 3 rows (rows
    // cols + 2 apart from element cols + 3: never both 16-byte aligned).
    if (view && r == 1) r = 3;
    out.push_back({r, cols[ci], view});
  }
  return out;
}

void run_layer_norm(int ti, const Case& k, bool affine, std::mt19937& rng) {
  const int type = kTypes[ti];
  const std::string what = std::string("LAYER_NORM ") + tname(type) + " " + std::to_string(k.rows) + "x" +
                           std::to_string(k.cols) + (k.view ? " view" : "") + (affine ? " affine" : "");
  const std::vector<int> xd = {k.rows, k.cols}, sd = {1, k.cols}, md = {k.rows, 1};
  auto x = both({xd, k.view, type}, rng, -2, 2), y = both({xd, k.view, type}, rng);
  auto scale = both({sd, false, type}, rng, 0.5f, 1.5f), bias = both({sd, false, type}, rng, -0.5f, 0.5f);
  auto mean = both({md, false, type}, rng), inv = both({md, false, type}, rng);
  Both* s = affine ? scale.get() : nullptr;
  Both* b = affine ? bias.get() : nullptr;
  const gpu::NormRows r = choice(k.rows, k.cols, type, x->gpu(), y->gpu(), affine ? scale->gpu() : nullptr,
                                 affine ? bias->gpu() : nullptr, inv->gpu());
  ASSERT_TRUE(r.fast) << what << ": the row kernels must serve a packed last axis";
  {  // GPU_CUDNN leaves these calls to the row kernels: the same choice, made from the command.
    std::vector<ccv_nnc_tensor_t*> in = {x->gpu()}, out = {y->gpu(), mean->gpu(), inv->gpu()};
    if (affine) in.push_back(scale->gpu()), in.push_back(bias->gpu());
    EXPECT_TRUE(nnc::cuda::layer_norm_takes_rows(ln(false, 1, affine), in.data(), static_cast<int>(in.size()),
                                                 out.data(), 3))
        << what;
    std::vector<ccv_nnc_tensor_t*> bin = {x->gpu(), nullptr, nullptr, x->gpu()}, bout = {y->gpu()};
    if (affine) bin.push_back(scale->gpu()), bin.push_back(bias->gpu());
    bin.push_back(y->gpu()), bin.push_back(mean->gpu()), bin.push_back(inv->gpu());
    EXPECT_TRUE(nnc::cuda::layer_norm_takes_rows(ln(true, 1, affine), bin.data(), static_cast<int>(bin.size()),
                                                 bout.data(), 1))
        << what << " backward";
    EXPECT_FALSE(nnc::cuda::layer_norm_takes_rows(ln(false, 1, affine), nullptr, 0, out.data(), 3)) << "no x";
  }
  // Aligned rows (a packed tensor whose rows are whole 16-byte chunks, or one
  // row) load by 16 bytes; a view's rows start at element 1: never.
  const int v = 16 / esize(type);
  EXPECT_EQ(r.vector, !k.view && (k.rows == 1 || k.cols % v == 0)) << what;
  EXPECT_EQ(r.threads_per_row == 32, (k.cols + v - 1) / v <= 128) << what;
  if (affine)
    run_both(ln(false, 1, affine), {x.get(), s, b}, {y.get(), mean.get(), inv.get()}, what);
  else
    run_both(ln(false, 1, affine), {x.get()}, {y.get(), mean.get(), inv.get()}, what);
  expect_near(*y, type, 1e-5f, 2e-5f, what + " y");
  expect_near(*mean, type, 1e-5f, 2e-5f, what + " saved_mean");
  expect_near(*inv, type, 1e-5f, 2e-5f, what + " saved_inv_std");
  mean->upload();
  inv->upload();
  auto g = both({xd, !k.view, type}, rng), dx = both({xd, k.view, type}, rng), dx2 = both({xd, false, type}, rng);
  auto ds = both({sd, false, type}, rng), db = both({sd, false, type}, rng);
  if (affine)
    run_both(ln(true, 1, affine), {g.get(), nullptr, nullptr, x.get(), s, b, y.get(), mean.get(), inv.get()},
             {dx.get(), ds.get(), db.get()}, what + " backward");
  else
    run_both(ln(true, 1, affine), {g.get(), nullptr, nullptr, x.get(), y.get(), mean.get(), inv.get()}, {dx.get()},
             what + " backward");
  expect_near(*dx, type, 1e-4f, 1e-4f, what + " dx");
  if (affine) {
    expect_near(*ds, type, 1e-4f, 1e-4f, what + " dscale");
    expect_near(*db, type, 1e-4f, 1e-4f, what + " dbias");
    // dscale / dbias alone (the column kernels without dx).
    auto ds2 = both({sd, false, type}, rng), db2 = both({sd, false, type}, rng);
    run_both(ln(true, 1, affine), {g.get(), nullptr, nullptr, x.get(), s, b, y.get(), mean.get(), inv.get()},
             {nullptr, ds2.get(), db2.get()}, what + " params alone");
    expect_near(*ds2, type, 1e-4f, 1e-4f, what + " dscale alone");
    expect_near(*db2, type, 1e-4f, 1e-4f, what + " dbias alone");
  } else {
    run_both(ln(true, 1, affine), {g.get(), nullptr, nullptr, x.get(), y.get(), mean.get(), inv.get()}, {dx2.get()},
             what + " dx packed");
    expect_near(*dx2, type, 1e-4f, 1e-4f, what + " dx packed");
  }
}

void run_rmsnorm(int ti, const Case& k, bool with_scale, std::mt19937& rng) {
  const int type = kTypes[ti];
  const std::string what = std::string("RMSNORM ") + tname(type) + " " + std::to_string(k.rows) + "x" +
                           std::to_string(k.cols) + (k.view ? " view" : "") + (with_scale ? " scale" : "");
  const std::vector<int> xd = {k.rows, k.cols}, sd = {k.cols}, md = {k.rows, 1};
  // x away from 0 in magnitude for rows of one element (inv = 1 / |x| there).
  auto x = both({xd, k.view, type}, rng, 0.25f, 2), y = both({xd, k.view, type}, rng);
  auto scale = both({sd, false, type}, rng, 0.5f, 1.5f), inv = both({md, false, type}, rng);
  Both* s = with_scale ? scale.get() : nullptr;
  const gpu::NormRows r =
      choice(k.rows, k.cols, type, x->gpu(), y->gpu(), with_scale ? scale->gpu() : nullptr, nullptr, inv->gpu());
  ASSERT_TRUE(r.fast) << what;
  const int v = 16 / esize(type);
  EXPECT_EQ(r.vector, !k.view && (k.rows == 1 || k.cols % v == 0)) << what;
  run_both(rms(false, 1), {x.get(), s}, {y.get(), inv.get()}, what);
  expect_near(*y, type, 1e-5f, 2e-5f, what + " y");
  expect_near(*inv, type, 1e-5f, 2e-5f, what + " saved_inv_std");
  inv->upload();
  auto g = both({xd, k.view, type}, rng), dx = both({xd, !k.view, type}, rng), ds = both({sd, false, type}, rng);
  run_both(rms(true, 1), {g.get(), nullptr, x.get(), s, y.get(), inv.get()},
           {dx.get(), with_scale ? ds.get() : nullptr}, what + " backward");
  expect_near(*dx, type, 1e-4f, 1e-4f, what + " dx");
  if (with_scale) expect_near(*ds, type, 1e-4f, 1e-4f, what + " dscale");
}

TEST(NormFastGpu, LayerNormRows) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4242);
  for (int ti = 0; ti < 3; ti++) {
    int i = 0;
    for (const Case& k : cases_for(ti)) run_layer_norm(ti, k, (i++ + ti) % 2 == 0, rng);
  }
}

TEST(NormFastGpu, RmsNormRows) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4243);
  for (int ti = 0; ti < 3; ti++) {
    int i = 0;
    for (const Case& k : cases_for(ti)) run_rmsnorm(ti, k, (i++ + ti) % 2 == 1, rng);
  }
}

// Many rows (past the warp path's 4 rows a block and the column kernels'
// slices): 300 rows of 40 (32F), 130 rows of 1100 (16BF, block path), 301 rows of 72 (16F).
TEST(NormFastGpu, ManyRows) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4244);
  run_layer_norm(0, {300, 40, false}, true, rng);
  run_layer_norm(2, {130, 1100, false}, true, rng);
  run_rmsnorm(1, {301, 72, true}, true, rng);
}

// The general kernels still serve a normalised axis that is not the innermost
// (x [33, 37] over axis 0): the host declines the row kernels, and the results
// still match CPU_REF. (Views whose rows are not packed: GpuRefNorm2.* and
// test_gpu_plan's GpuNormRows.*.)
TEST(NormFastGpu, OtherAxesGoTheGeneralWay) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4245);
  for (int ti = 0; ti < 3; ti++) {
    const int type = kTypes[ti];
    const std::string what = std::string("LAYER_NORM axis 0 ") + tname(type);
    auto x = both({{33, 37}, false, type}, rng, -2, 2), y = both({{33, 37}, false, type}, rng);
    auto scale = both({{33, 1}, false, type}, rng, 0.5f, 1.5f), bias = both({{33, 1}, false, type}, rng);
    auto mean = both({{1, 37}, false, type}, rng), inv = both({{1, 37}, false, type}, rng);
    {
      const int dim[2] = {33, 37};
      const int64_t sx[2] = {37, 1}, ss[2] = {1, 0}, sm[2] = {0, 1};
      const int64_t* sp[gpu::kNormOperands] = {sx, sx, nullptr, nullptr, ss, ss, sm, sm};
      bool present[gpu::kNormOperands] = {true, true, false, false, true, true, true, true};
      uintptr_t addr[gpu::kNormOperands] = {};
      gpu::NormPlan p;
      ASSERT_TRUE(gpu::make_norm_plan(p, dim, 2, sp, 1u, 1u));
      EXPECT_FALSE(gpu::choose_norm_rows(p, present, addr, esize(type)).fast) << what;
    }
    {  // so GPU_CUDNN keeps such calls (cuda::layer_norm_takes_rows)
      std::vector<ccv_nnc_tensor_t*> in = {x->gpu(), scale->gpu(), bias->gpu()}, out = {y->gpu(), mean->gpu(), inv->gpu()};
      EXPECT_FALSE(nnc::cuda::layer_norm_takes_rows(ln(false, 0, true), in.data(), 3, out.data(), 3)) << what;
    }
    run_both(ln(false, 0, true), {x.get(), scale.get(), bias.get()}, {y.get(), mean.get(), inv.get()}, what);
    expect_near(*y, type, 1e-5f, 2e-5f, what + " y");
    expect_near(*inv, type, 1e-5f, 2e-5f, what + " saved_inv_std");
  }
}

// The row kernels refuse nothing the general ones take: a mismatched scale is
// still an error with a message, not a crash.
TEST(NormFastGpu, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4246);
  auto x = both({{3, 40}}, rng), y = both({{3, 40}}, rng), scale = both({{1, 41}}, rng), bias = both({{1, 40}}, rng);
  auto mean = both({{3, 1}}, rng), inv = both({{3, 1}}, rng);
  {  // bad input: not the row kernels' call (GPU_CUDNN then judges it itself), and no crash
    std::vector<ccv_nnc_tensor_t*> in = {x->gpu(), scale->gpu(), bias->gpu()}, out = {y->gpu(), mean->gpu(), inv->gpu()};
    EXPECT_FALSE(nnc::cuda::layer_norm_takes_rows(ln(false, 1, true), in.data(), 3, out.data(), 3));
    EXPECT_FALSE(nnc::cuda::layer_norm_takes_rows(ln(false, 1, true), in.data(), 3, nullptr, 0));
  }
  ccv_nnc_cmd_t c = ln(false, 1, true);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->gpu(), scale->gpu(), bias->gpu()}, {y->gpu(), mean->gpu(), inv->gpu()}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()), "");
  auto y16 = both({{3, 40}, false, CCV_16F}, rng);
  c = rms(false, 1);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->gpu(), nullptr}, {y16->gpu(), inv->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()), "");
}

}  // namespace
