// GPU_REF in 16F and 16BF for the last families that took 32F only (branch
// ghalf3): ADD / MUL / SCALAR_MUL backward (cuda/ewgpu.cpp), ROI_ALIGN
// backward (cuda/misc_gpu.cpp, also 64F), DROPOUT forward / backward and
// RANDOM_UNIFORM / RANDOM_NORMAL forward (cuda/rand_gpu.cpp, also 64F), each
// against CPU_REF on the same half inputs: odd shapes, broadcasts (ADD / MUL
// gradients summed over one axis, several, or all), NULL g, views inside
// larger parents (whole parents compared: a write outside a view fails), and
// refusals with a message. Skips without a GPU (runs under tools/gpu-emu).
//
// Tolerances (ulp_T: one unit in the last place of the storage type at the
// larger magnitude; 16F 2^-10 relative, 16BF 2^-7):
// - ADD / MUL / SCALAR_MUL backward: GPU_REF sums the n terms of each output
//   in float (products of two halves are exact in float: <= 22 significant
//   bits), scales and rounds once; CPU_REF sums in double and rounds through
//   float. |gpu - cpu| <= ulp_T + (n + 8) 2^-24 S, S = |scale| times the sum
//   of |terms| of that output (computed by CPU_REF from |inputs|), and >= 90%
//   bit-equal. Where no axis is summed (n = 1: da of g's shape, SCALAR_MUL)
//   both round the same exact product once (a half times a float has <= 35
//   bits, exact in double, and float multiplication rounds it correctly):
//   every element bit-equal. NULL g with small-integer sums: exact too.
// - ROI_ALIGN backward, 16F / 16BF: every element bit-equal. GPU_REF adds
//   into a double scratch with atomics; a pixel's double sum then differs
//   from CPU_REF's (another order; on a GPU also the device's fused
//   multiply-adds in the weights) by ~terms x 2^-52 relative, and both store
//   it through float to the type: they differ only if the sum lies within
//   that distance of a rounding boundary, ~2^-40 per element here. A float
//   scratch (2^-24 per addition) flips a 16F rounding only now and then on
//   random data (7 of 44100 elements in one case here, none in others), so
//   RoiAlignBackwardSumsInDouble builds a sum where it always shows.
//   64F: double atomics into da; |gpu - cpu| <= 1e-11 (sums of < 200 terms
//   of magnitude < 1, each addition off by 2^-53 of a sum < 100).
// - DROPOUT, RANDOM_UNIFORM: the same draws and the same double arithmetic,
//   stored the same way: bit-equal to CPU_REF, and a 16F / 16BF tensor under
//   a seed is the 32F tensor under that seed rounded to the type (bit-equal
//   to DATATYPE_CONVERSION of it). RANDOM_NORMAL: the device's double log /
//   cos / sin may differ from libm in the last bit, so 16F / 16BF within one
//   ulp_T and >= 99% bit-equal (the 32F test allows 1e-6 relative); 64F
//   within 1e-12 absolute (values < 6 in size, a few ulps of double).
// - Statistics of n draws (n = 2^16, or 2^17 for DROPOUT's keep rate): a
//   mean within 6 standard errors (sigma / sqrt(n)) plus half an ulp_T of
//   rounding bias, a variance within 6 standard errors of the sample
//   variance (sqrt((mu4 - sigma^4) / n)) plus the rounding's; a keep rate
//   within 6 sqrt(p (1 - p) / n). A wrong range, scale, seed use, word or
//   type is off by far more.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"
#include "test/unit/cuda/half_util.hpp"

namespace {

using namespace nnc_gpu_test;

// A packed 64F copy of a CPU tensor (or view) of any float type.
Owned as_f64(const ccv_nnc_tensor_t* t) {
  ccv_nnc_tensor_param_t p = t->info;
  p.datatype = CCV_64F;
  p.type = CCV_TENSOR_CPU_MEMORY;
  Owned f(p);
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {const_cast<ccv_nnc_tensor_t*>(t)}, {f.t}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  return f;
}

// The GPU parent of b against its CPU parent: every element within
// ulp_T(max |.|) + extra[i] (extra empty: 0), and >= min_exact of them
// bit-equal (as values).
void expect_ulp(const Both& b, int type, const std::vector<double>& extra, const std::string& what,
                double min_exact = 0.9) {
  Owned back = to_cpu(b.gpu_parent());
  Owned g = as_f64(back), c = as_f64(b.cpu_parent());
  const size_t n = ccv_nnc_tensor_count(c->info);
  ASSERT_TRUE(extra.empty() || extra.size() == n) << what;
  size_t bad = 0, exact = 0;
  for (size_t i = 0; i < n; i++) {
    const double x = g->data.f64[i], y = c->data.f64[i];
    if (x == y || (std::isnan(x) && std::isnan(y))) {
      exact++;
      continue;
    }
    const double tol = ulp(type, std::fmax(std::fabs(x), std::fabs(y))) + (extra.empty() ? 0.0 : extra[i]);
    if (!(std::fabs(x - y) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": parent element " << i << " is " << x << " on the GPU, " << y << " on CPU_REF (tol "
                    << tol << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements beyond the bound";
  EXPECT_GE(static_cast<double>(exact), min_exact * static_cast<double>(n))
      << what << ": only " << exact << " of " << n << " elements bit-equal to CPU_REF";
}

// 64F parents: |gpu - cpu| <= atol everywhere.
void expect_close64(const Both& b, double atol, const std::string& what) {
  Owned g = to_cpu(b.gpu_parent());
  const ccv_nnc_tensor_t* c = b.cpu_parent();
  ASSERT_EQ(CCV_GET_DATA_TYPE(c->info.datatype), CCV_64F) << what;
  const size_t n = ccv_nnc_tensor_count(c->info);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const double x = g->data.f64[i], y = c->data.f64[i];
    if (!(std::fabs(x - y) <= atol) && bad++ < 5)
      ADD_FAILURE() << what << ": parent element " << i << " is " << x << " on the GPU, " << y << " on CPU_REF";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements differ";
}

// Per-element bound of a packed tensor of shape dim spread over its parent
// (a view's parent is dim + 2 each way, the window at 1; the border is
// untouched, bound 0).
std::vector<double> over_parent(const std::vector<double>& packed, const std::vector<int>& dim, bool view) {
  if (!view) return packed;
  std::vector<int> pd = dim;
  for (int& d : pd) d += 2;
  size_t total = 1;
  for (int d : pd) total *= static_cast<size_t>(d);
  std::vector<double> out(total, 0.0);
  const size_t nd = dim.size();
  std::vector<int> idx(nd, 0);
  for (size_t k = 0; k < packed.size(); k++) {
    size_t off = 0;
    for (size_t a = 0; a < nd; a++) off = off * static_cast<size_t>(pd[a]) + static_cast<size_t>(idx[a] + 1);
    out[off] = packed[k];
    for (size_t a = nd; a-- > 0;) {
      if (++idx[a] < dim[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

// A packed 32F CPU tensor of |t| (t a CPU tensor or view of any float type).
Owned abs_f32(const ccv_nnc_tensor_t* t) {
  Owned f = as_f32(t);
  for (size_t i = 0; i < ccv_nnc_tensor_count(f->info); i++) f->data.f32[i] = std::fabs(f->data.f32[i]);
  return f;
}

int count(const std::vector<int>& d) {
  int n = 1;
  for (int v : d) n *= v;
  return n;
}

// --- ADD / MUL / SCALAR_MUL backward ----------------------------------------------

ccv_nnc_cmd_t blas(uint32_t id, float p, float q = 0) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.blas.a[0] = p;
  c.info.blas.a[1] = q;
  return c;
}

struct BlasCase {
  uint32_t id;
  float p, q;
  std::vector<int> g, a, b;  // g: its shape (with null_g, the shape a and b broadcast to)
  bool want_da, want_db;
  bool view;     // g, a and da as views
  bool null_ab;  // ADD: a and b left NULL (only g is read)
  bool null_g;
};

TEST(GpuRefHalf3, BlasBackwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4101);
  const BlasCase cases[] = {
      {CCV_NNC_ADD_BACKWARD, 0.5f, -1.5f, {6, 13, 9}, {6, 1, 9}, {13, 1}, true, true, true, true, false},
      {CCV_NNC_ADD_BACKWARD, 1.25f, -0.75f, {300, 7}, {1, 7}, {300, 7}, true, true, false, false, false},  // 300; 1
      {CCV_NNC_ADD_BACKWARD, 0.5f, 2.f, {5, 4, 3}, {5, 1, 3}, {1, 4, 3}, true, true, false, false, true},
      {CCV_NNC_MUL_BACKWARD, 0.75f, 0, {6, 13, 9}, {6, 1, 9}, {13, 9}, true, true, true, false, false},
      {CCV_NNC_MUL_BACKWARD, -1.5f, 0, {40, 33}, {40, 33}, {1}, true, true, false, false, false},     // 1320 into db
      {CCV_NNC_MUL_BACKWARD, 1.f, 0, {7, 5, 3}, {7, 5, 3}, {5, 1}, false, true, true, false, false},  // db only
      {CCV_NNC_MUL_BACKWARD, 2.f, 0, {3, 4, 5}, {3, 1, 5}, {4, 1}, true, true, false, false, true},
  };
  for (int type : kHalves)
    for (const BlasCase& k : cases) {
      const bool mul = k.id == CCV_NNC_MUL_BACKWARD;
      std::string what = std::string(ccv_nnc_cmd_name(k.id)) + " " + tname(type) + " g";
      for (int d : k.g) what.append(" ").append(std::to_string(d));
      if (k.null_g) what += " (NULL)";
      BothPtr g = k.null_g ? nullptr : both({k.g, k.view, type}, rng);
      BothPtr a = k.null_ab ? nullptr : both({k.a, k.view, type}, rng),
              b = k.null_ab ? nullptr : both({k.b, false, type}, rng);
      BothPtr da = k.want_da ? both({k.a, k.view, type}, rng) : nullptr;
      BothPtr db = k.want_db ? both({k.b, false, type}, rng) : nullptr;
      run_both(blas(k.id, k.p, k.q), {g.get(), a.get(), b.get()}, {da.get(), db.get()}, what);
      // S per output: the same command over |g|, |a|, |b| with |p|, |q|, in 32F on CPU_REF.
      Owned ag, aa, ab;
      if (g) ag = abs_f32(g->cpu());
      if (a) aa = abs_f32(a->cpu());
      if (b) ab = abs_f32(b->cpu());
      Owned sa(param_of(k.a, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false)),
          sb(param_of(k.b, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false));
      ccv_nnc_cmd_t s = blas(k.id, std::fabs(k.p), std::fabs(k.q));
      s.backend = CCV_NNC_BACKEND_CPU_REF;
      ASSERT_EQ(exec(s, ccv_nnc_no_hint, {ag.t, aa.t, ab.t}, {k.want_da ? sa.t : nullptr, k.want_db ? sb.t : nullptr}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      auto check = [&](const Both& d, const Owned& sums, const std::vector<int>& dim, bool view, const char* name) {
        const int n = count(k.g) / count(dim);  // terms per output
        const double gamma = (n + 8) * std::ldexp(1.0, -24);
        std::vector<double> extra(ccv_nnc_tensor_count(sums->info));
        for (size_t i = 0; i < extra.size(); i++) extra[i] = gamma * sums->data.f32[i];
        // n = 1 (no axis summed) or ADD's NULL g (small integers times p): every element bit-equal.
        const bool exact = n == 1 || (k.null_g && !mul);
        expect_ulp(d, type, over_parent(extra, dim, view), what + " " + name, exact ? 1.0 : 0.9);
      };
      if (da) check(*da, sa, k.a, k.view, "da");
      if (db) check(*db, sb, k.b, false, "db");
    }
  // SCALAR_MUL backward: dx = a g, one rounding each side: bit-equal (views).
  for (int type : kHalves) {
    const std::string what = "SCALAR_MUL_BACKWARD " + tname(type);
    auto g = both({{11, 13}, true, type}, rng, -4, 4), dx = both({{11, 13}, true, type}, rng);
    run_both(blas(CCV_NNC_SCALAR_MUL_BACKWARD, -1.3f), {g.get()}, {dx.get()}, what);
    dx->expect_close(0, 0, what);
  }
}

TEST(GpuRefHalf3, BlasBackwardRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4103);
  // 64F: GPU_REF sums in float and does not take it (CPU_REF does).
  auto g64 = both({{7, 5}, false, CCV_64F}, rng), d64 = both({{1, 5}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t c = blas(CCV_NNC_ADD_BACKWARD, 1, 1);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {g64->gpu()}, {d64->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // g 16F, da 16BF: the family's type check, with a message naming them.
  auto g16 = both({{7, 5}, false, CCV_16F}, rng), dbf = both({{1, 5}, false, CCV_16BF}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {g16->gpu()}, {dbf->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("16BF"), std::string::npos) << ccv_nnc_error_message();
  // A gradient that does not reduce from g: an error with a message.
  auto d16 = both({{3, 5}, false, CCV_16F}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {g16->gpu()}, {d16->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

// --- ROI_ALIGN backward -------------------------------------------------------------

std::vector<int> image_dims(int n, int h, int w, int c, bool nchw) {
  return nchw ? std::vector<int>{n, c, h, w} : std::vector<int>{n, h, w, c};
}

ccv_nnc_cmd_t roi_cmd(uint32_t id, int rows, int cols) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.size.dim[0] = rows, c.info.size.dim[1] = cols, c.info.size.dim[2] = 1;
  return c;
}

// Boxes (x, y, width, height) over and around the map, one far wider than it
// (written into the window of a view's parent).
void set_boxes(Both& boxes, int r, bool view, std::mt19937& rng) {
  std::uniform_real_distribution<float> pos(-0.3f, 1.1f), ext(-0.1f, 0.9f);
  ccv_nnc_tensor_t* t = boxes.cpu_parent();
  const int cols = view ? 6 : 4;
  for (int i = 0; i < r; i++)
    for (int j = 0; j < 4; j++) {
      float v = j < 2 ? pos(rng) : ext(rng);
      if (i == 2 && j == 2) v = 3.5f;
      const size_t off = view ? static_cast<size_t>(i + 1) * cols + j + 1 : static_cast<size_t>(i) * 4 + j;
      if (CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32F)
        t->data.f32[off] = v;
      else
        t->data.f64[off] = v;
    }
  boxes.upload();
}

TEST(GpuRefHalf3, RoiAlignBackwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4201);
  struct Case {
    int images, boxes, h, w, c, rows, cols;
    bool nchw, view;
    int box_type;
  };
  const Case cases[] = {
      {1, 60, 16, 15, 4, 5, 5, false, false, CCV_32F},  // 60 boxes over one image: many terms in a pixel
      {3, 3, 9, 17, 5, 2, 5, true, true, CCV_64F},
      {2, 2, 31, 5, 2, 1, 3, true, false, CCV_32F},
      {1, 4, 40, 33, 8, 5, 3, false, true, CCV_32F},
  };
  for (int type : {CCV_16F, CCV_16BF, CCV_64F})
    for (const Case& k : cases) {
      const int fmt = k.nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
      const std::string what = "ROI_ALIGN_BACKWARD " + tname(type) + " " + std::to_string(k.boxes) + " boxes " +
                               std::to_string(k.h) + "x" + std::to_string(k.w) + (k.view ? " (views)" : "");
      auto boxes = both({{k.boxes, 4}, k.view, k.box_type}, rng);
      set_boxes(*boxes, k.boxes, k.view, rng);
      auto g = both({image_dims(k.boxes, k.rows, k.cols, k.c, k.nchw), k.view, type, fmt}, rng);
      auto da = both({image_dims(k.images, k.h, k.w, k.c, k.nchw), k.view, type, fmt}, rng);
      run_both(roi_cmd(CCV_NNC_ROI_ALIGN_BACKWARD, k.rows, k.cols), {g.get(), nullptr, boxes.get()}, {da.get()}, what);
      if (type == CCV_64F)
        expect_close64(*da, 1e-11, what);
      else
        da->expect_close(0, 0, what);
    }
}

// Sums that a float accumulator gets wrong (as half2_gpu_test's INDEX_SELECT
// case): 9000 boxes, each the whole of a 1 x 1 map, pooled to one bin of
// one sample, so each g element adds g times weight 1 into the one pixel.
// g is 1, then 8999 times 2^-24 (the smallest 16F). Added to 1 in float,
// each 2^-24 is a tie that rounds back to 1, so a float scratch adding the 1
// first ends at 1 (16F 1); the exact sum 1 + 8999 2^-24 = 1.000536 rounds to
// 1 + 2^-10 in 16F, as CPU_REF has it. (In the emulator's reverse order the
// tiny ones come first and a float scratch would pass; the normal order
// catches it.)
TEST(GpuRefHalf3, RoiAlignBackwardSumsInDouble) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4205);
  const int n = 9000;
  auto g = both({{n, 1, 1, 1}, false, CCV_16F}, rng), da = both({{1, 1, 1, 1}, false, CCV_16F}, rng);
  auto boxes = both({{n, 4}}, rng);
  const uint16_t one = 0x3c00, tiny = 0x0001;  // 16F bits of 1 and 2^-24
  for (int i = 0; i < n; i++) {
    std::memcpy(g->cpu_parent()->data.u8 + 2 * i, i == 0 ? &one : &tiny, 2);
    float* b = boxes->cpu_parent()->data.f32 + 4 * i;
    b[0] = 0, b[1] = 0, b[2] = 1, b[3] = 1;
  }
  g->upload();
  boxes->upload();
  run_both(roi_cmd(CCV_NNC_ROI_ALIGN_BACKWARD, 1, 1), {g.get(), nullptr, boxes.get()}, {da.get()},
           "ROI_ALIGN_BACKWARD 16F exact sums");
  Owned c = as_f32(da->cpu_parent());
  EXPECT_EQ(c->data.f32[0], 1.f + std::ldexp(1.f, -10)) << "CPU_REF's exact sum, rounded once";
  da->expect_close(0, 0, "ROI_ALIGN_BACKWARD 16F exact sums");
}

// A box that is not finite: an error naming it, and da (16F, through the
// scratch) left as it was.
TEST(GpuRefHalf3, RoiAlignBackwardBadBoxLeavesDa) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4203);
  for (int type : kHalves) {
    auto g = both({{3, 2, 2, 2}, false, type}, rng), da = both({{1, 8, 8, 2}, false, type}, rng);
    auto boxes = both({{3, 4}}, rng, 0, 0.5f);
    boxes->cpu_parent()->data.f32[4 + 3] = INFINITY;  // box 1's height
    boxes->upload();
    ccv_nnc_cmd_t bw = roi_cmd(CCV_NNC_ROI_ALIGN_BACKWARD, 2, 2);
    bw.backend = CCV_NNC_BACKEND_GPU_REF;
    EXPECT_EQ(exec(bw, ccv_nnc_no_hint, {g->gpu(), nullptr, boxes->gpu()}, {da->gpu()}), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("box 1"), std::string::npos) << ccv_nnc_error_message();
    da->expect_close(0, 0, "ROI_ALIGN_BACKWARD " + tname(type) + " with a bad box leaves da");
    // g and da of different types: the family's check, with its message.
    auto da32 = both({{1, 8, 8, 2}}, rng);
    boxes->cpu_parent()->data.f32[4 + 3] = 0.25f;
    boxes->upload();
    EXPECT_NE(exec(bw, ccv_nnc_no_hint, {g->gpu(), nullptr, boxes->gpu()}, {da32->gpu()}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find(tname(type)), std::string::npos) << ccv_nnc_error_message();
  }
}

// --- DROPOUT, RANDOM_UNIFORM, RANDOM_NORMAL -----------------------------------------

// Runs c on CPU_REF and on GPU_REF, each right after seeding the default generator with `seed`.
void run_seeded(ccv_nnc_cmd_t c, uint32_t seed, const std::vector<Both*>& in, const std::vector<Both*>& out,
                const std::string& what) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  ccv_nnc_stream_context_set_seed(nullptr, seed);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, ci, co), CCV_NNC_EXEC_SUCCESS)
      << what << " (CPU_REF): " << ccv_nnc_error_message();
  ccv_nnc_stream_context_set_seed(nullptr, seed);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, gi, go), CCV_NNC_EXEC_SUCCESS)
      << what << " (GPU_REF): " << ccv_nnc_error_message();
}

// c on GPU_REF alone, after seeding.
void run_gpu_seeded(ccv_nnc_cmd_t c, uint32_t seed, std::vector<ccv_nnc_tensor_t*> in,
                    std::vector<ccv_nnc_tensor_t*> out, const std::string& what) {
  ccv_nnc_stream_context_set_seed(nullptr, seed);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, in, out), CCV_NNC_EXEC_SUCCESS) << what << ": " << ccv_nnc_error_message();
}

ccv_nnc_cmd_t dropout(uint32_t id, float p, int entirety) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.dropout.p = p;
  c.info.dropout.entirety = entirety;
  return c;
}

// A packed CPU copy of a GPU tensor converted to `type` by CPU_REF (RNE).
Owned gpu_as(const ccv_nnc_tensor_t* gpu, int type) {
  Owned back = to_cpu(gpu);
  ccv_nnc_tensor_param_t p = back->info;
  p.datatype = type;
  Owned out(p);
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {back.t}, {out.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  return out;
}

// A packed CPU copy of a GPU tensor or view (packed on the GPU by GPU_REF
// first: its DATA_TRANSFER takes no GPU view to packed CPU memory).
Owned gpu_packed(const ccv_nnc_tensor_t* gpu) {
  ccv_nnc_tensor_param_t p = gpu->info;
  Owned packed(p);
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {const_cast<ccv_nnc_tensor_t*>(gpu)}, {packed.t}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  return to_cpu(packed);
}

// Two packed CPU tensors bit-equal, byte for byte.
void expect_same_bytes(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b, const std::string& what) {
  const size_t n = ccv_nnc_tensor_count(a->info) * CCV_GET_DATA_TYPE_SIZE(a->info.datatype);
  ASSERT_EQ(n, ccv_nnc_tensor_count(b->info) * CCV_GET_DATA_TYPE_SIZE(b->info.datatype)) << what;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (a->data.u8[i] != b->data.u8[i] && bad++ < 5) ADD_FAILURE() << what << ": byte " << i << " differs";
  EXPECT_EQ(bad, 0u) << what;
}

std::vector<int> reserved_mask(const std::vector<int>& x, int type) {
  int line = (x[0] + 127) / 128;
  for (size_t i = 1; i < x.size(); i++) line *= x[i];
  return {128 / static_cast<int>(CCV_GET_DATA_TYPE_SIZE(type)), line};
}

TEST(GpuRefHalf3, DropoutMatchesCpuRefUnderOneSeed) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4301);
  struct Case {
    std::vector<int> x;
    bool view, shaped_mask;
    float p;
    int entirety;
  };
  const Case cases[] = {
      {{7, 33}, true, true, 0.3f, 0},    {{1023}, false, false, 0.5f, 0}, {{130, 5}, false, false, 0.1f, 0},
      {{5, 3, 7}, true, false, 0.9f, 0}, {{7, 33}, false, true, 0.5f, 1}, {{7, 33}, false, false, 0.5f, 1},
  };
  uint32_t seed = 23;
  for (int type : {CCV_16F, CCV_16BF, CCV_64F})
    for (const Case& k : cases)
      for (int rep = 0; rep < 2; rep++, seed += 7) {
        std::vector<int> md = k.entirety && !k.shaped_mask ? std::vector<int>{1}
                              : k.shaped_mask              ? k.x
                                                           : reserved_mask(k.x, type);
        const int mt = k.shaped_mask ? CCV_8U : type;
        const std::string what =
            "DROPOUT " + tname(type) + " p " + std::to_string(k.p) + (k.entirety ? " entirety" : "");
        auto x = both({k.x, k.view, type}, rng, -3, 3), y = both({k.x, !k.view, type}, rng);
        auto m = both({md, false, mt}, rng, 0, 1);
        run_seeded(dropout(CCV_NNC_DROPOUT_FORWARD, k.p, k.entirety), seed, {x.get()}, {y.get(), m.get()}, what);
        y->expect_close(0, 0, what + " y");
        expect_same_bytes(to_cpu(m->gpu_parent()).t, m->cpu_parent(), what + " mask");
        auto g = both({k.x, false, type}, rng, -3, 3), dx = both({k.x, k.view, type}, rng);
        run_seeded(dropout(CCV_NNC_DROPOUT_BACKWARD, k.p, k.entirety), seed,
                   {g.get(), nullptr, x.get(), y.get(), m.get()}, {dx.get()}, what + " backward");
        dx->expect_close(0, 0, what + " backward");
        // The GPU's own mask read back by its backward: with g = x, dx must be y bit for bit
        // (kept: x / (1 - p) rounded the same way; dropped: 0), in the forward's places.
        auto dx2 = both({k.x, !k.view, type}, rng);
        ccv_nnc_cmd_t bw = dropout(CCV_NNC_DROPOUT_BACKWARD, k.p, k.entirety);
        bw.backend = CCV_NNC_BACKEND_GPU_REF;
        ASSERT_EQ(exec(bw, ccv_nnc_no_hint, {x->gpu(), nullptr, nullptr, nullptr, m->gpu()}, {dx2->gpu()}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        expect_same_bytes(gpu_packed(dx2->gpu()).t, gpu_packed(y->gpu()).t, what + " backward of x is y");
      }
}

// Under one seed a 16F / 16BF / 64F DROPOUT draws the 32F one's mask; its
// kept values are x / (1 - p) stored in its type (16F / 16BF: the 32F
// result rounded to the type).
TEST(GpuRefHalf3, DropoutHalfIsThe32FResultRounded) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4303);
  const std::vector<int> shape = {37, 29};
  for (int type : {CCV_16F, CCV_16BF, CCV_64F}) {
    const std::string what = "DROPOUT " + tname(type) + " against 32F";
    auto x = both({shape, false, type}, rng, -3, 3);
    Owned x32 = gpu_as(x->gpu(), CCV_32F);  // exact
    Owned gx32 = to_gpu(x32), gy32(on_gpu(x32->info)),
          gm32(on_gpu(param_of(shape, CCV_8U, CCV_TENSOR_FORMAT_NHWC, false)));
    Owned gy(on_gpu(x->gpu_parent()->info)), gm(on_gpu(param_of(shape, CCV_8U, CCV_TENSOR_FORMAT_NHWC, false)));
    const ccv_nnc_cmd_t d = dropout(CCV_NNC_DROPOUT_FORWARD, 0.4f, 0);
    run_gpu_seeded(d, 99, {gx32.t}, {gy32.t, gm32.t}, what);
    run_gpu_seeded(d, 99, {x->gpu()}, {gy.t, gm.t}, what);
    expect_same_bytes(to_cpu(gm.t).t, to_cpu(gm32.t).t, what + " mask");
    if (type != CCV_64F) {
      expect_same_bytes(to_cpu(gy.t).t, gpu_as(gy32.t, type).t, what + " y");
    } else {  // 64F: x / 0.6 in double, each kept element
      Owned hy = to_cpu(gy.t), hm = to_cpu(gm.t), hx = to_cpu(x->gpu());
      const double scale = 1 / (1 - static_cast<double>(0.4f));
      for (int i = 0; i < count(shape); i++)
        ASSERT_EQ(hy->data.f64[i], hm->data.u8[i] ? hx->data.f64[i] * scale : 0.0) << what << " element " << i;
    }
  }
}

TEST(GpuRefHalf3, DropoutKeepRate) {
  NNC_REQUIRE_GPU();
  // 2^17 elements at p = 0.3: the kept fraction is 0.7 within 6 standard
  // deviations (6 sqrt(0.21 / 2^17) = 7.6e-3); kept values are all the one
  // value x / 0.7 rounded, within one ulp_T of 1.4 / 0.7 = 2.
  constexpr int n = 1 << 17;
  for (int type : kHalves) {
    Owned x(on_gpu(param_of({n}, type, CCV_TENSOR_FORMAT_NHWC, false))), y(x->info);
    Owned m(on_gpu(param_of({n}, CCV_8U, CCV_TENSOR_FORMAT_NHWC, false)));
    ccv_nnc_cmd_t set = make_cmd(CCV_NNC_SET_FORWARD);
    set.info.blas.a[0] = 1.4f;
    set.backend = CCV_NNC_BACKEND_GPU_REF;
    ASSERT_EQ(exec(set, ccv_nnc_no_hint, {}, {x.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ccv_nnc_cmd_t d = dropout(CCV_NNC_DROPOUT_FORWARD, 0.3f, 0);
    d.backend = CCV_NNC_BACKEND_GPU_REF;
    ASSERT_EQ(exec(d, ccv_nnc_no_hint, {x.t}, {y.t, m.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    Owned hy = gpu_as(y.t, CCV_32F), hm = to_cpu(m.t);
    size_t kept = 0;
    float value = 0;
    for (int i = 0; i < n; i++) {
      if (hm->data.u8[i]) {
        if (!kept) value = hy->data.f32[i];
        kept++;
        ASSERT_EQ(hy->data.f32[i], value) << tname(type) << " " << i;
      } else {
        ASSERT_EQ(hy->data.f32[i], 0.f) << tname(type) << " " << i;
      }
    }
    EXPECT_NEAR(value, 2.0, ulp(type, 2.0)) << tname(type);
    EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.0076) << tname(type);
  }
}

TEST(GpuRefHalf3, UniformAndNormalMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4401);
  for (int type : {CCV_16F, CCV_16BF, CCV_64F})
    for (const Spec& s : {Spec{{1023}, false, type}, Spec{{7, 33}, true, type}, Spec{{1}, false, type}}) {
      const std::string what = tname(type) + " " + std::to_string(s.dim[0]) + (s.view ? " (view)" : "");
      auto u = both(s, rng), z = both(s, rng);
      ccv_nnc_cmd_t cu = make_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD);
      cu.info.blas.a[0] = -2.f, cu.info.blas.a[1] = 3.f;
      run_seeded(cu, 77, {}, {u.get()}, "RANDOM_UNIFORM " + what);
      u->expect_close(0, 0, "RANDOM_UNIFORM " + what);
      if (type == CCV_64F) expect_close64(*u, 0, "RANDOM_UNIFORM " + what);
      ccv_nnc_cmd_t cn = make_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD);
      cn.info.blas.a[0] = 0.5f, cn.info.blas.a[1] = 1.f;
      run_seeded(cn, 78, {}, {z.get()}, "RANDOM_NORMAL " + what);
      if (type == CCV_64F)
        expect_close64(*z, 1e-12, "RANDOM_NORMAL " + what);
      else
        expect_ulp(*z, type, {}, "RANDOM_NORMAL " + what, 0.99);
    }
}

// Under one seed, 16F / 16BF get the 32F draws rounded to the type.
TEST(GpuRefHalf3, RandomHalfIsThe32FResultRounded) {
  NNC_REQUIRE_GPU();
  const std::vector<int> shape = {3, 257};
  for (uint32_t id : {CCV_NNC_RANDOM_UNIFORM_FORWARD, CCV_NNC_RANDOM_NORMAL_FORWARD})
    for (int type : kHalves) {
      const std::string what = std::string(ccv_nnc_cmd_name(id)) + " " + tname(type) + " against 32F";
      ccv_nnc_cmd_t c = make_cmd(id);
      c.info.blas.a[0] = id == CCV_NNC_RANDOM_UNIFORM_FORWARD ? -1.5f : 2.f;
      c.info.blas.a[1] = id == CCV_NNC_RANDOM_UNIFORM_FORWARD ? 2.5f : -0.5f;
      Owned y32(on_gpu(param_of(shape, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false))),
          yh(on_gpu(param_of(shape, type, CCV_TENSOR_FORMAT_NHWC, false)));
      run_gpu_seeded(c, 1234, {}, {y32.t}, what);
      run_gpu_seeded(c, 1234, {}, {yh.t}, what);
      expect_same_bytes(to_cpu(yh.t).t, gpu_as(y32.t, type).t, what);
    }
}

// Statistics of 2^16 draws per type (bounds: the header), the range, and
// draws of one element in a row differing (fresh seeds).
TEST(GpuRefHalf3, UniformAndNormalStatistics) {
  NNC_REQUIRE_GPU();
  constexpr int n = 1 << 16;
  for (int type : {CCV_16F, CCV_16BF, CCV_64F}) {
    const double half_ulp = type == CCV_64F ? 0 : ulp(type, 3.0) / 2;  // the largest |value|'s rounding
    {
      const double lb = -2, ub = 3, mean = (lb + ub) / 2, var = (ub - lb) * (ub - lb) / 12,
                   mu4 = std::pow(ub - lb, 4) / 80;
      ccv_nnc_cmd_t c = make_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD);
      c.info.blas.a[0] = static_cast<float>(lb), c.info.blas.a[1] = static_cast<float>(ub);
      c.backend = CCV_NNC_BACKEND_GPU_REF;
      Owned y(on_gpu(param_of({n}, type, CCV_TENSOR_FORMAT_NHWC, false)));
      ASSERT_EQ(exec(c, ccv_nnc_no_hint, {}, {y.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      Owned h = gpu_as(y.t, CCV_64F);
      double s = 0, s2 = 0;
      for (int i = 0; i < n; i++) {
        const double v = h->data.f64[i];
        ASSERT_TRUE(v >= lb && (type == CCV_64F ? v < ub : v <= ub)) << tname(type) << " uniform " << i << ": " << v;
        s += v;
      }
      const double m = s / n;
      for (int i = 0; i < n; i++) s2 += (h->data.f64[i] - m) * (h->data.f64[i] - m);
      const double v = s2 / (n - 1);
      EXPECT_NEAR(m, mean, 6 * std::sqrt(var / n) + half_ulp) << tname(type) << " uniform mean";
      EXPECT_NEAR(v, var, 6 * std::sqrt((mu4 - var * var) / n) + 2 * half_ulp * 3 + half_ulp * half_ulp)
          << tname(type) << " uniform variance";
    }
    {
      const double sd = 0.5, mean = 1, var = sd * sd;
      ccv_nnc_cmd_t c = make_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD);
      c.info.blas.a[0] = static_cast<float>(sd), c.info.blas.a[1] = static_cast<float>(mean);
      c.backend = CCV_NNC_BACKEND_GPU_REF;
      Owned y(on_gpu(param_of({n}, type, CCV_TENSOR_FORMAT_NHWC, false)));
      ASSERT_EQ(exec(c, ccv_nnc_no_hint, {}, {y.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      Owned h = gpu_as(y.t, CCV_64F);
      double s = 0, s2 = 0;
      for (int i = 0; i < n; i++) {
        ASSERT_TRUE(std::isfinite(h->data.f64[i])) << tname(type) << " normal " << i;
        s += h->data.f64[i];
      }
      const double m = s / n;
      for (int i = 0; i < n; i++) s2 += (h->data.f64[i] - m) * (h->data.f64[i] - m);
      const double v = s2 / (n - 1);
      // Normal: mu4 = 3 sigma^4, so the sample variance's standard error is sigma^2 sqrt(2 / n).
      EXPECT_NEAR(m, mean, 6 * sd / std::sqrt(n) + half_ulp) << tname(type) << " normal mean";
      EXPECT_NEAR(v, var, 6 * var * std::sqrt(2.0 / n) + 2 * half_ulp * 3 + half_ulp * half_ulp)
          << tname(type) << " normal variance";
    }
  }
}

TEST(GpuRefHalf3, RandomRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4501);
  // x 16F, y 16BF: the family's check, with a message naming the types.
  auto x = both({{5, 7}, false, CCV_16F}, rng), y = both({{5, 7}, false, CCV_16BF}, rng);
  auto m = both({{5, 7}, false, CCV_8U}, rng, 0, 1);
  ccv_nnc_cmd_t d = dropout(CCV_NNC_DROPOUT_FORWARD, 0.5f, 0);
  d.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(d, ccv_nnc_no_hint, {x->gpu()}, {y->gpu(), m->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("16BF"), std::string::npos) << ccv_nnc_error_message();
  // An integer output: RANDOM_UNIFORM fills float types only.
  auto i32 = both({{5, 7}, false, CCV_32S}, rng, 0, 0);
  ccv_nnc_cmd_t u = make_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD);
  u.info.blas.a[1] = 1;
  u.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(u, ccv_nnc_no_hint, {}, {i32->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("32S"), std::string::npos) << ccv_nnc_error_message();
}

}  // namespace
