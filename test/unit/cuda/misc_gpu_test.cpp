// GPU_REF ROI_ALIGN, NMS, HISTOGRAM and COMPRESSION_LSSC (cuda/misc_gpu.cpp)
// against CPU_REF on random inputs with fixed seeds: odd shapes, NHWC and
// NCHW, views (whole parents compared, so a write outside a view fails),
// several types, values on the edges and ties that decide a result, a GPU
// stream context, and refusals (bad boxes, indices and edges: the error code,
// the message, and the outputs left as they were).
//
// Tolerances. NMS's rows and indices, NMS's backward (the same double sums
// in the same order), every histogram count, min / max, and LSSC's codes and
// decoded pixels are exact (0). ROI_ALIGN's forward sums in double as CPU_REF
// does but nvcc may fuse its multiply-adds: the results differ by far less
// than float's rounding, so at most 1 ulp after it (rtol 2e-7, 32F; 1 ulp of
// 16F is 2^-10 relative: rtol 1e-3). ROI_ALIGN's backward adds float products
// with atomics (a few hundred per pixel at most, |terms| <= 1): rtol 1e-5,
// atol 1e-5. The histogram's sums are double in another order, then rounded
// to x's type: rtol 1e-6 for 32F. A wrong tap, weight, bin or level is off
// by far more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

// Built twice: for the real GPU (test_cuda), and in builds without CUDA
// against the pretend GPU of test/unit/fakegpu (test/unit/gpu_misc_fake,
// NNC_MISC_ON_FAKE_GPU), whose GPU_REF kernels are the CPU_REF ones. There
// only the harness is checked (shapes, uploads, seeds, what is compared);
// the refusals that only the real backends make are skipped, GPU_NCCL is
// absent, and LSTM runs on GPU_REF.
#ifdef NNC_MISC_ON_FAKE_GPU
constexpr bool kRealGpu = false;
constexpr uint32_t kLstmBackend = CCV_NNC_BACKEND_GPU_REF;
#else
constexpr bool kRealGpu = true;
constexpr uint32_t kLstmBackend = CCV_NNC_BACKEND_GPU_CUBLAS;
#endif

std::vector<int> image_dims(int n, int h, int w, int c, bool nchw, bool four) {
  std::vector<int> s = nchw ? std::vector<int>{c, h, w} : std::vector<int>{h, w, c};
  if (four) s.insert(s.begin(), n);
  return s;
}

// The GPU side's bytes against the CPU side's, whole parents (16F codes
// hold arbitrary bits: NaN patterns must agree too; nothing written outside
// a view), and the parents as values. The parents, not the views: GPU_REF's
// DATA_TRANSFER refuses a GPU view to packed CPU memory (found running this
// test under tools/gpu-emu; the pretend GPU's CPU_REF transfer takes views).
void expect_same_bits(const Both& b, const std::string& what) {
  b.expect_close(0, 0, what);
  Owned g = to_cpu(b.gpu_parent());
  const ccv_nnc_tensor_t* c = b.cpu_parent();
  const size_t n = ccv_nnc_tensor_count(c->info);
  ASSERT_EQ(ccv_nnc_tensor_count(g->info), n) << what;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (std::memcmp(g->data.u8 + 2 * i, c->data.u8 + 2 * i, 2) != 0 && bad++ < 5)
      ADD_FAILURE() << what << ": 16F element " << i << " differs in its bits";
  EXPECT_EQ(bad, 0u) << what;
}

// A packed CPU tensor's memory seen as one row of n elements of `type`.
Owned flat(ccv_nnc_tensor_t* t, int type) {
  Owned o;
  o.t = ccv_nnc_tensor_new(
      t->data.u8, param_of({static_cast<int>(ccv_nnc_tensor_count(t->info))}, type, CCV_TENSOR_FORMAT_NHWC, false), 0);
  return o;
}

ccv_nnc_cmd_t roi_cmd(uint32_t id, int rows, int cols) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.size.dim[0] = rows, c.info.size.dim[1] = cols, c.info.size.dim[2] = 1;
  return c;
}

// Boxes (x, y, width, height) over and around the map, one far wider than it.
void set_boxes(Both& boxes, int r, std::mt19937& rng) {
  std::uniform_real_distribution<float> pos(-0.3f, 1.1f), ext(-0.1f, 0.9f);
  ccv_nnc_tensor_t* t = boxes.cpu_parent();
  std::vector<float> v(static_cast<size_t>(r) * 4);
  for (int i = 0; i < r; i++)
    v[4 * i] = pos(rng), v[4 * i + 1] = pos(rng), v[4 * i + 2] = ext(rng), v[4 * i + 3] = ext(rng);
  if (r > 2) v[4 * 2 + 2] = 3.5f;
  // The parent may be larger (a view): write row-major into the window at (1, 1).
  const int cols = t->info.dim[1] ? t->info.dim[1] : t->info.dim[0];
  const bool view = cols != 4;
  for (int i = 0; i < r; i++)
    for (int j = 0; j < 4; j++) {
      const size_t off = view ? static_cast<size_t>(i + 1) * cols + j + 1 : static_cast<size_t>(i) * 4 + j;
      if (CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32F)
        t->data.f32[off] = v[static_cast<size_t>(i) * 4 + j];
      else
        t->data.f64[off] = v[static_cast<size_t>(i) * 4 + j];
    }
  boxes.upload();
}

TEST(GpuRefMisc, RoiAlignForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(701);
  struct Case {
    int images, boxes, h, w, c, rows, cols;
    bool nchw, view;
    int datatype, box_type;
  };
  const Case cases[] = {
      {1, 5, 13, 11, 3, 3, 4, false, false, CCV_32F, CCV_32F},
      {3, 3, 9, 17, 5, 2, 5, true, true, CCV_32F, CCV_64F},
      {1, 1, 7, 7, 1, 7, 7, false, true, CCV_32F, CCV_32F},
      {2, 2, 31, 5, 2, 1, 3, true, false, CCV_16F, CCV_32F},  // forward only for 16F
      {1, 4, 40, 33, 8, 5, 3, false, false, CCV_16F, CCV_32F},
      {2, 2, 6, 9, 3, 4, 2, true, true, CCV_64F, CCV_32F},
      {1, 3, 10, 10, 2, 3, 3, false, false, CCV_16BF, CCV_64F},
  };
  for (const Case& k : cases) {
    const int fmt = k.nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
    const std::string what = "ROI_ALIGN " + std::to_string(k.h) + "x" + std::to_string(k.w);
    auto a = both({image_dims(k.images, k.h, k.w, k.c, k.nchw, true), k.view, k.datatype, fmt}, rng);
    auto b = both({image_dims(k.boxes, k.rows, k.cols, k.c, k.nchw, true), !k.view, k.datatype, fmt}, rng);
    auto boxes = both({{k.boxes, 4}, k.view, k.box_type}, rng);
    set_boxes(*boxes, k.boxes, rng);
    const ccv_nnc_cmd_t f = roi_cmd(CCV_NNC_ROI_ALIGN_FORWARD, k.rows, k.cols);
    run_both(f, {a.get(), boxes.get()}, {b.get()}, what + " forward");
    // 1 ulp of the stored type after the double sums: 32F 2^-23 (64F compared as 32F), 16F 2^-10, 16BF 2^-7.
    const float rtol = k.datatype == CCV_16F ? 1e-3f : k.datatype == CCV_16BF ? 8e-3f : 2e-7f;
    b->expect_close(rtol, rtol / 2, what + " forward");
    if (k.datatype != CCV_32F) continue;
    auto g = both({image_dims(k.boxes, k.rows, k.cols, k.c, k.nchw, true), k.view, CCV_32F, fmt}, rng);
    auto da = both({image_dims(k.images, k.h, k.w, k.c, k.nchw, true), !k.view, CCV_32F, fmt}, rng);
    ccv_nnc_cmd_t bw = f;
    bw.cmd = CCV_NNC_ROI_ALIGN_BACKWARD;
    run_both(bw, {g.get(), nullptr, boxes.get()}, {da.get()}, what + " backward");
    da->expect_close(1e-5f, 1e-5f, what + " backward");
  }
}

TEST(GpuRefMisc, RoiAlignRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(709);
  auto a = both({{1, 8, 8, 2}}, rng), b = both({{3, 2, 2, 2}}, rng), boxes = both({{3, 4}}, rng, 0, 0.5f);
  boxes->cpu_parent()->data.f32[4 + 2] = NAN;  // box 1's width
  boxes->upload();
  ccv_nnc_cmd_t f = roi_cmd(CCV_NNC_ROI_ALIGN_FORWARD, 2, 2);
  f.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {a->gpu(), boxes->gpu()}, {b->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("box 1"), std::string::npos) << ccv_nnc_error_message();
  b->expect_close(0, 0, "ROI_ALIGN with a bad box leaves b as it was");
  // A backward with da in CPU memory: GPU_REF refuses it (16F / 16BF / 64F
  // backwards run since branch ghalf3: half3_gpu_test.cpp).
  auto g = both({{3, 2, 2, 2}, false, CCV_16F}, rng), da = both({{1, 8, 8, 2}, false, CCV_16F}, rng);
  boxes->cpu_parent()->data.f32[4 + 2] = 0.25f;
  boxes->upload();
  ccv_nnc_cmd_t bw = roi_cmd(CCV_NNC_ROI_ALIGN_BACKWARD, 2, 2);
  bw.backend = CCV_NNC_BACKEND_GPU_REF;
  if (kRealGpu) {
    EXPECT_NE(exec(bw, ccv_nnc_no_hint, {g->gpu(), nullptr, boxes->gpu()}, {da->cpu()}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
  }
  // A grid that does not match b: the family's check, with its message.
  ccv_nnc_cmd_t wrong = roi_cmd(CCV_NNC_ROI_ALIGN_FORWARD, 3, 2);
  wrong.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(wrong, ccv_nnc_no_hint, {a->gpu(), boxes->gpu()}, {b->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("must be"), std::string::npos) << ccv_nnc_error_message();
}

// Rows (score, x, y, w, h, extras) with ties, NaN scores and a NaN coordinate;
// `grid` makes integer boxes (exact IoUs on the threshold).
void set_rows(Both& a, int rows, int k, bool grid, std::mt19937& rng) {
  ccv_nnc_tensor_t* t = a.cpu_parent();
  const int type = CCV_GET_DATA_TYPE(t->info.datatype);
  std::uniform_real_distribution<float> u(0, 1);
  std::uniform_int_distribution<int> small(0, 4);
  std::vector<double> v(static_cast<size_t>(rows) * k);
  for (int r = 0; r < rows; r++) {
    double* row = v.data() + static_cast<size_t>(r) * k;
    if (grid) {
      row[0] = small(rng), row[1] = small(rng), row[2] = small(rng), row[3] = small(rng) - 1, row[4] = small(rng);
    } else {
      row[0] = u(rng), row[1] = u(rng) * 4, row[2] = u(rng) * 4, row[3] = u(rng) * 2, row[4] = u(rng) * 2;
    }
    for (int x = 5; x < k; x++) row[x] = u(rng);
    if (r % 7 == 3) row[0] = NAN;
    if (r % 11 == 5) row[1 + r % 4] = NAN;
  }
  // Packed parents only (NMS's views are tested through b).
  for (size_t i = 0; i < v.size(); i++) {
    if (type == CCV_32F) t->data.f32[i] = static_cast<float>(v[i]);
    if (type == CCV_64F) t->data.f64[i] = v[i];
  }
  if (type == CCV_16F) {
    Owned f(param_of({static_cast<int>(v.size())}, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false));
    for (size_t i = 0; i < v.size(); i++) f->data.f32[i] = static_cast<float>(v[i]);
    Owned row = flat(t, CCV_16F);
    ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
    c.backend = CCV_NNC_BACKEND_CPU_REF;
    ASSERT_EQ(exec(c, ccv_nnc_no_hint, {f.t}, {row.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  }
  a.upload();
}

TEST(GpuRefMisc, NmsForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(719);
  struct Case {
    int batch, n, k;
    float threshold;
    bool grid, view;
    int datatype;
  };
  const Case cases[] = {
      {1, 37, 5, 0.5f, false, false, CCV_32F},    {3, 301, 6, 0.3f, false, true, CCV_32F},
      {2, 50, 5, 0.5f, true, false, CCV_32F},     {1, 40, 7, 0.f, true, true, CCV_64F},
      {4, 9, 5, 1.f, true, false, CCV_16F},       {1, 1, 5, 0.5f, false, false, CCV_32F},
      {2, 1200, 5, 0.45f, false, false, CCV_32F},  // more rows than a block has threads
  };
  for (const Case& cs : cases) {
    const std::string what = "NMS " + std::to_string(cs.batch) + "x" + std::to_string(cs.n);
    const std::vector<int> dim = cs.batch > 1 ? std::vector<int>{cs.batch, cs.n, cs.k} : std::vector<int>{cs.n, cs.k};
    const std::vector<int> cdim = cs.batch > 1 ? std::vector<int>{cs.batch, cs.n} : std::vector<int>{cs.n};
    auto a = both({dim, false, cs.datatype}, rng), b = both({dim, cs.view, cs.datatype}, rng);
    auto c = both({cdim, cs.view, CCV_32S}, rng, -5, 5);
    set_rows(*a, cs.batch * cs.n, cs.k, cs.grid, rng);
    ccv_nnc_cmd_t f = make_cmd(CCV_NNC_NMS_FORWARD);
    f.info.nms.iou_threshold = cs.threshold;
    run_both(f, {a.get()}, {b.get(), c.get()}, what + " forward");
    c->expect_close(0, 0, what + " c");
    b->expect_close(0, 0, what + " b");
    auto gb = both({dim, cs.view, cs.datatype}, rng), da = both({dim, !cs.view, cs.datatype}, rng);
    ccv_nnc_cmd_t bw = make_cmd(CCV_NNC_NMS_BACKWARD);
    bw.info.nms.iou_threshold = cs.threshold;
    run_both(bw, {gb.get(), nullptr, nullptr, nullptr, c.get()}, {da.get()}, what + " backward");
    da->expect_close(0, 0, what + " da");
  }
}

TEST(GpuRefMisc, NmsBackwardWithRepeatsAndBadIndices) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(727);
  auto gb = both({{2, 6, 5}}, rng), da = both({{2, 6, 5}}, rng), c = both({{2, 6}, false, CCV_32S}, rng, 0, 0);
  const int idx[12] = {3, 3, 0, -1, 5, 3, 1, -1, -1, 2, 2, 0};  // repeats sum, -1 drops
  std::copy(idx, idx + 12, c->cpu_parent()->data.i32);
  c->upload();
  ccv_nnc_cmd_t bw = make_cmd(CCV_NNC_NMS_BACKWARD);
  run_both(bw, {gb.get(), nullptr, nullptr, nullptr, c.get()}, {da.get()}, "NMS backward, repeats");
  da->expect_close(0, 0, "NMS backward, repeats");
  // c[1, 2] = 6 is outside -1 .. 5: an error, da as it was.
  auto before = to_cpu(da->gpu());
  c->cpu_parent()->data.i32[8] = 6;
  c->upload();
  bw.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(bw, ccv_nnc_no_hint, {gb->gpu(), nullptr, nullptr, nullptr, c->gpu()}, {da->gpu()}),
            CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("c[1, 2]"), std::string::npos) << ccv_nnc_error_message();
  auto after = to_cpu(da->gpu());
  for (int i = 0; i < 60; i++) EXPECT_EQ(after->data.f32[i], before->data.f32[i]) << "da element " << i;
  // c of the wrong type: the family refuses it with a message.
  auto cf = both({{2, 6}}, rng);
  EXPECT_NE(exec(bw, ccv_nnc_no_hint, {gb->gpu(), nullptr, nullptr, nullptr, cf->gpu()}, {da->gpu()}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

// x's CPU parent filled with values, NaN / infinities optional, then uploaded.
void set_values(Both& x, const std::vector<double>& v) {
  ccv_nnc_tensor_t* t = x.cpu_parent();
  const size_t n = ccv_nnc_tensor_count(t->info);
  const int type = CCV_GET_DATA_TYPE(t->info.datatype);
  Owned f(param_of({static_cast<int>(n)}, CCV_64F, CCV_TENSOR_FORMAT_NHWC, false));
  for (size_t i = 0; i < n; i++) f->data.f64[i] = v[i % v.size()];
  if (type == CCV_64F) {
    std::copy(f->data.f64, f->data.f64 + n, t->data.f64);
  } else {
    Owned row = flat(t, type);
    ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
    c.backend = CCV_NNC_BACKEND_CPU_REF;
    ASSERT_EQ(exec(c, ccv_nnc_no_hint, {f.t}, {row.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  }
  x.upload();
}

ccv_nnc_cmd_t hist_cmd(int type, int bins, float min, float max, float rate) {
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_HISTOGRAM_FORWARD);
  c.info.histogram.type = type;
  c.info.histogram.bins = bins;
  c.info.histogram.min = min;
  c.info.histogram.max = max;
  c.info.histogram.rate = rate;
  return c;
}

// The count of h CPU_REF's shape inference gives.
int counts_of(const ccv_nnc_cmd_t& c, const ccv_nnc_tensor_param_t& x, const ccv_nnc_tensor_param_t* edges) {
  ccv_nnc_tensor_param_t in[2] = {x, edges ? *edges : x}, out[2];
  std::memset(out, 0, sizeof(out));
  ccv_nnc_hint_tensor_auto(c, in, edges ? 2 : 1, ccv_nnc_no_hint, out, 2);
  return out[0].dim[0];
}

TEST(GpuRefMisc, HistogramEveryMode) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(733);
  std::uniform_real_distribution<double> u(-3, 3), e(-7, 3);
  struct Case {
    int type, bins;
    float min, max, rate;
    std::vector<int> x;
    bool view;
    int datatype;
    bool stats;
  };
  const Case cases[] = {
      {CCV_NNC_HISTOGRAM_EVEN, 7, -1.3f, 2.1f, 0, {31, 17}, true, CCV_32F, true},
      {CCV_NNC_HISTOGRAM_EVEN, 10000, -2.f, 2.f, 0, {(1 << 20) + 7}, false, CCV_32F, true},  // global counts
      {CCV_NNC_HISTOGRAM_EVEN, 97, 0.1f, 0.7f, 0, {5, 7, 11}, false, CCV_64F, true},
      {CCV_NNC_HISTOGRAM_EVEN, 33, -1.f, 1.f, 0, {257, 3}, true, CCV_16F, false},
      {CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 0.01f, 100.f, 1.7f, {999}, false, CCV_32F, true},
      {CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 1e-3f, 1e3f, 1.1f, {3, 301}, true, CCV_64F, false},
      {CCV_NNC_HISTOGRAM_BINS, 0, 0, 0, 0, {4001}, false, CCV_32F, true},
      {CCV_NNC_HISTOGRAM_BINS, 0, 0, 0, 0, {61, 3}, true, CCV_16F, true},
  };
  for (const Case& k : cases) {
    const std::string what = "HISTOGRAM mode " + std::to_string(k.type) + " " + std::to_string(k.bins);
    ccv_nnc_cmd_t c = hist_cmd(k.type, k.bins, k.min, k.max, k.rate);
    auto x = both({k.x, k.view, k.datatype}, rng);
    // Random values, then the mode's edges themselves and their neighbours, NaN, infinities.
    std::vector<double> v;
    for (int i = 0; i < 5000; i++)
      v.push_back(k.type == CCV_NNC_HISTOGRAM_LOGARITHMIC ? (i % 2 ? -1 : 1) * std::pow(10.0, e(rng)) : u(rng));
    BothPtr edges;
    if (k.type == CCV_NNC_HISTOGRAM_EVEN) {
      const double lo = k.min, w = (static_cast<double>(k.max) - lo) / k.bins;
      for (int i = 0; i <= k.bins && i < 400; i++) {
        const double ed = lo + i * w;
        v.insert(v.begin() + 3 * i, {ed, std::nextafter(ed, -10.0), std::nextafter(ed, 10.0)});
      }
    } else if (k.type == CCV_NNC_HISTOGRAM_LOGARITHMIC) {
      for (int i = 0; i < 40; i++) {
        const double ed = static_cast<double>(k.min) * std::pow(static_cast<double>(k.rate), i);
        v.insert(v.begin() + 3 * i, {ed, -ed, static_cast<double>(static_cast<float>(ed))});
      }
      v.insert(v.begin(), 0.0);
    } else {
      edges = both({{2, 5}, false, k.datatype}, rng);  // packed: ascending in row-major order
      std::vector<double> ev;
      for (int i = 0; i < 10; i++) ev.push_back(u(rng));
      std::sort(ev.begin(), ev.end());
      ev[4] = ev[3];                              // a repeated edge: an empty bin
      set_values(*edges, ev);                     // rounded to 16F they still ascend (rounding is monotone)
      v.insert(v.begin(), ev.begin(), ev.end());  // x on the edges (rounded the same way)
    }
    v[7] = NAN;
    if (!k.stats) v[11] = INFINITY, v[12] = -INFINITY;
    set_values(*x, v);
    const int m = counts_of(c, x->cpu()->info, edges ? &edges->cpu()->info : nullptr);
    ASSERT_GT(m, 2) << what;
    auto h = both({{m}, k.view, CCV_32S}, rng, 0, 0);
    BothPtr stats = k.stats ? both({{4}, false, k.datatype}, rng) : nullptr;
    std::vector<Both*> in{x.get()};
    if (edges) in.push_back(edges.get());
    std::vector<Both*> out{h.get()};
    if (stats) out.push_back(stats.get());
    run_both(c, in, out, what);
    h->expect_close(0, 0, what + " counts");
    if (stats) stats->expect_close(k.datatype == CCV_16F ? 1e-3f : 1e-6f, 1e-6f, what + " stats");
  }
}

TEST(GpuRefMisc, HistogramBadEdgesAndStream) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(739);
  ccv_nnc_cmd_t c = hist_cmd(CCV_NNC_HISTOGRAM_BINS, 0, 0, 0, 0);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  auto x = both({{100}}, rng), edges = both({{6}}, rng), h = both({{8}, false, CCV_32S}, rng, 3, 3);
  set_values(*edges, {-1, -0.5, 0, NAN, 0.5, 1});
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {x->gpu(), edges->gpu()}, {h->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("edges[3] is NaN"), std::string::npos) << ccv_nnc_error_message();
  h->expect_close(0, 0, "HISTOGRAM with a NaN edge leaves h as it was");
  set_values(*edges, {-1, -0.5, 0, 0.25, 0.125, 1});
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {x->gpu(), edges->gpu()}, {h->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("ascend"), std::string::npos) << ccv_nnc_error_message();
  // h of the wrong length: the family's check.
  auto h7 = both({{7}, false, CCV_32S}, rng, 0, 0);
  set_values(*edges, {-1, -0.5, 0, 0.25, 0.5, 1});
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->gpu(), edges->gpu()}, {h7->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // On a GPU stream context: the logarithmic mode (edges copied from the
  // host) and stats (scratch), waited for, against CPU_REF.
  ccv_nnc_cmd_t lc = hist_cmd(CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 0.05f, 20.f, 1.3f);
  auto big = both({{70001}}, rng, -30, 30);
  const int m = counts_of(lc, big->cpu()->info, nullptr);
  auto hl = both({{m}, false, CCV_32S}, rng, 0, 0), st = both({{4}}, rng);
  lc.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(lc, ccv_nnc_no_hint, {big->cpu()}, {hl->cpu(), st->cpu()}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  lc.backend = CCV_NNC_BACKEND_GPU_REF;
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_EQ(exec(lc, ccv_nnc_no_hint, {big->gpu()}, {hl->gpu(), st->gpu()}, s), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  hl->expect_close(0, 0, "HISTOGRAM on a stream");
  st->expect_close(1e-6f, 1e-6f, "HISTOGRAM stats on a stream");
}

TEST(GpuRefMisc, LsscCompressDecompress) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(743);
  struct Case {
    int n, h, w, c;
    bool nchw, four, view;
  };
  const Case cases[] = {{1, 5, 7, 3, false, false, false}, {2, 8, 8, 2, true, true, true},
                        {3, 13, 6, 1, false, true, true},  {1, 1, 1, 4, true, false, false},
                        {2, 12, 12, 2, true, true, false}, {4, 33, 65, 9, false, true, false}};
  for (const Case& k : cases) {
    const std::string what = "LSSC " + std::to_string(k.h) + "x" + std::to_string(k.w);
    const int fmt = k.nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
    const int ch = (k.h + 3) / 4, cw = (k.w + 3) / 4 * 4;
    auto x = both({image_dims(k.n, k.h, k.w, k.c, k.nchw, k.four), k.view, CCV_16F, fmt}, rng);
    auto code = both({image_dims(k.n, ch, cw, k.c, k.nchw, k.four), !k.view, CCV_16F, fmt}, rng);
    // Random values with NaN, infinities, repeats and -0; one case of halves of 0 .. 3 (ties).
    std::vector<double> v;
    std::uniform_real_distribution<double> u(-3, 3);
    std::uniform_int_distribution<int> kind(0, 19), half_step(0, 6);
    for (int i = 0; i < 4096; i++) {
      const int z = kind(rng);
      v.push_back(k.h == 12 ? 0.5 * half_step(rng)
                  : z == 0  ? NAN
                  : z == 1  ? INFINITY
                  : z == 2  ? -INFINITY
                  : z < 6   ? 1.5
                  : z < 8   ? -0.0
                            : u(rng));
    }
    set_values(*x, v);
    run_both(make_cmd(CCV_NNC_COMPRESSION_LSSC_FORWARD), {x.get()}, {code.get()}, what + " compress");
    expect_same_bits(*code, what + " code");
    auto y = both({image_dims(k.n, k.h, k.w, k.c, k.nchw, k.four), k.view, CCV_16F, fmt}, rng);
    run_both(make_cmd(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {code.get()}, {y.get()}, what + " decompress");
    expect_same_bits(*y, what + " decoded");
  }
}

TEST(GpuRefMisc, LsscRefusesOtherTypes) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(751);
  auto x = both({{1, 8, 8, 2}}, rng), code = both({{1, 2, 8, 2}}, rng);
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_COMPRESSION_LSSC_FORWARD);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->gpu()}, {code->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("16F"), std::string::npos) << ccv_nnc_error_message();
}

// --- COMM backward on GPU_NCCL: every GPU the machine has, one tensor each ---

ccv_nnc_cmd_t nccl_cmd(uint32_t id) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.backend = CCV_NNC_BACKEND_GPU_NCCL;
  return c;
}

// A 32F tensor of n values on GPU `device`, from host values.
Owned on_device(int device, const std::vector<float>& v) {
  ccv_nnc_tensor_param_t p = param_of({static_cast<int>(v.size())}, CCV_32F, CCV_TENSOR_FORMAT_NHWC, true);
  p.type = CCV_TENSOR_GPU_MEMORY;
  CCV_TENSOR_SET_DEVICE_ID(p.type, device);
  Owned host(param_of({static_cast<int>(v.size())}, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false));
  std::copy(v.begin(), v.end(), host->data.f32);
  Owned g(p);
  EXPECT_EQ(exec(transfer(), ccv_nnc_no_hint, {host.t}, {g.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  return g;
}

void expect_values(const ccv_nnc_tensor_t* gpu, const std::vector<double>& want, double tol, const std::string& what) {
  Owned back = to_cpu(gpu);
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); i++)
    if (!(std::fabs(back->data.f32[i] - want[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << back->data.f32[i] << ", expected " << want[i];
  EXPECT_EQ(bad, 0u) << what;
}

TEST(GpuNcclBackward, AllreduceBroadcastReduceBackward) {
  NNC_REQUIRE_GPU();
  if (!kRealGpu) GTEST_SKIP() << "GPU_NCCL has no pretend backend";
  const int devices = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), n = 1031;
  std::mt19937 rng(761);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<float>> gv(devices);
  std::vector<double> sum(n, 0);
  std::vector<Owned> g, x, dx;
  const std::vector<float> sentinel(n, -7.f);  // outputs start at -7: a call that writes nothing fails
  for (int d = 0; d < devices; d++) {
    gv[d].resize(n);
    for (float& v : gv[d]) v = u(rng);
    for (int i = 0; i < n; i++) sum[i] += gv[d][i];
    g.push_back(on_device(d, gv[d]));
    std::vector<float> xv(n);
    for (float& v : xv) v = u(rng);
    x.push_back(on_device(d, xv));  // a forward tensor after the gradients (ignored)
    dx.push_back(on_device(d, sentinel));
  }
  std::vector<ccv_nnc_tensor_t*> gs, dxs, with_x;
  for (int d = 0; d < devices; d++) gs.push_back(g[d]), dxs.push_back(dx[d]);
  with_x = gs;
  for (int d = 0; d < devices; d++) with_x.push_back(x[d]);
  const double tol = 1e-5 * devices;
  // ALLREDUCE backward: every dx = sum of g (the forward tensors after g unused).
  ASSERT_EQ(exec(nccl_cmd(CCV_NNC_COMM_ALLREDUCE_BACKWARD), ccv_nnc_no_hint, with_x, dxs), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (int d = 0; d < devices; d++) expect_values(dx[d], sum, tol, "ALLREDUCE_BACKWARD device " + std::to_string(d));
  // BROADCAST backward onto one dx (on the last device): the sum there.
  Owned one = on_device(devices - 1, sentinel);
  ASSERT_EQ(exec(nccl_cmd(CCV_NNC_COMM_BROADCAST_BACKWARD), ccv_nnc_no_hint, gs, {one.t}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  expect_values(one, sum, tol, "BROADCAST_BACKWARD (one output)");
  // BROADCAST backward with a dx per g: every dx the sum (CPU_REF's contract).
  for (int d = 0; d < devices; d++) dx[d] = on_device(d, sentinel), dxs[d] = dx[d];
  ASSERT_EQ(exec(nccl_cmd(CCV_NNC_COMM_BROADCAST_BACKWARD), ccv_nnc_no_hint, gs, dxs), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (int d = 0; d < devices; d++) expect_values(dx[d], sum, tol, "BROADCAST_BACKWARD device " + std::to_string(d));
  // REDUCE backward: every dx = g of the root (input 0).
  for (int d = 0; d < devices; d++) dx[d] = on_device(d, sentinel), dxs[d] = dx[d];
  ASSERT_EQ(exec(nccl_cmd(CCV_NNC_COMM_REDUCE_BACKWARD), ccv_nnc_no_hint, gs, dxs), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  const std::vector<double> root(gv[0].begin(), gv[0].end());
  for (int d = 0; d < devices; d++) expect_values(dx[d], root, 0, "REDUCE_BACKWARD device " + std::to_string(d));
  // Two gradients on one device: not NCCL's (no kernel accepts them), an error with a message.
  Owned twin = on_device(0, sentinel);
  EXPECT_NE(exec(nccl_cmd(CCV_NNC_COMM_BROADCAST_BACKWARD), ccv_nnc_no_hint, {gs[0], twin.t}, {dxs[0]}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A gradient whose shape differs: the family's check.
  Owned short_g = on_device(0, std::vector<float>(n - 1, 1.f));
  EXPECT_NE(exec(nccl_cmd(CCV_NNC_COMM_ALLREDUCE_BACKWARD), ccv_nnc_no_hint, {short_g.t}, {dxs[0]}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

// --- LSTM on GPU_CUBLAS (cuda/lstm_gpu.cpp) against CPU_REF -------------------
//
// Tolerance: the GPU computes in float (cuBLAS sums in its own order), CPU_REF
// in double; inputs and weights O(1), T <= 9 steps: the schedule run in float
// on the CPU (test/unit/gpu_misc) stays within 1e-5; rtol 2e-4 and atol 5e-5
// (the weight gradients, sums of T B products: atol 3e-4). Wrong slots, gates
// or transposes are off by 1e-2 or more.

struct LstmCase {
  int T, B, F, H, proj, L;
  bool bias, bidirectional, batch_first, lengths, states;
  float dropout;
};

ccv_nnc_cmd_t lstm_cmd(uint32_t id, const LstmCase& k, uint32_t backend) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.rnn.hidden_size = k.H, c.info.rnn.proj_size = k.proj, c.info.rnn.num_layers = k.L, c.info.rnn.bias = k.bias;
  c.info.rnn.batch_first = k.batch_first, c.info.rnn.bidirectional = k.bidirectional, c.info.rnn.dropout = k.dropout;
  c.backend = backend;
  return c;
}

// The reserve's element count, by the command's aux (libnnc's signature).
size_t reserve_of(const ccv_nnc_cmd_t& c, int F, int B, int T) {
  using Size = size_t (*)(const ccv_nnc_cmd_t, const int, const int, const int, const int);
  const Size f = reinterpret_cast<Size>(ccv_nnc_cmd_aux(c));
  return f ? f(c, CCV_32F, F, B, T) : 0;
}

int exec_n(const ccv_nnc_cmd_t& c, const std::vector<Both*>& in, const std::vector<Both*>& out, bool gpu,
           ccv_nnc_stream_context_t* stream = nullptr) {
  std::vector<ccv_nnc_tensor_t*> i, o;
  for (Both* b : in) i.push_back(b ? (gpu ? b->gpu() : b->cpu()) : nullptr);
  for (Both* b : out) o.push_back(b ? (gpu ? b->gpu() : b->cpu()) : nullptr);
  return exec(c, ccv_nnc_no_hint, i, o, stream);
}

TEST(GpuCublasLstm, ForwardBackwardAsCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(771);
  const LstmCase cases[] = {
      // T  B  F  H  proj L  bias  bi     bf     xs     states dropout
      {5, 3, 4, 6, 0, 1, true, false, false, false, true, 0},     {9, 4, 5, 7, 0, 2, true, true, false, true, true, 0},
      {6, 2, 3, 5, 2, 1, false, false, true, false, false, 0},    {4, 5, 2, 4, 3, 3, true, true, true, true, true, 0},
      {7, 33, 17, 40, 0, 2, true, true, false, true, true, 0.3f},  // dropout between the layers
      {3, 1, 8, 129, 0, 1, true, false, false, false, true, 0},    // more units than a warp, one sequence
  };
  for (const LstmCase& k : cases) {
    const std::string what = "LSTM T" + std::to_string(k.T) + " B" + std::to_string(k.B) + " H" + std::to_string(k.H) +
                             " L" + std::to_string(k.L) + (k.bidirectional ? " bi" : "") + (k.proj ? " proj" : "");
    const int D = k.bidirectional ? 2 : 1, P = k.proj ? k.proj : k.H, O = D * P;
    // Sizes from the command's own shape inference (w's count, r's rows).
    const ccv_nnc_cmd_t fc = lstm_cmd(CCV_NNC_LSTM_FORWARD, k, CCV_NNC_BACKEND_CPU_REF);
    const std::vector<int> xdim = k.batch_first ? std::vector<int>{k.B, k.T, k.F} : std::vector<int>{k.T, k.B, k.F};
    size_t wcount = 0;
    for (int l = 0; l < k.L; l++) {
      const size_t in = l == 0 ? k.F : static_cast<size_t>(O);
      wcount += D * (4 * static_cast<size_t>(k.H) * (in + P) + (k.bias ? 8 * static_cast<size_t>(k.H) : 0) +
                     (k.proj ? static_cast<size_t>(P) * k.H : 0));
    }
    const size_t rcount = reserve_of(fc, k.F, k.B, k.T);  // reserve elements
    ASSERT_GT(rcount, 0u) << what;
    auto x = both({xdim}, rng), w = both({{static_cast<int>(wcount)}}, rng, -0.5f, 0.5f);
    auto xs = both({{k.B}, false, CCV_32S}, rng, 1, k.T);
    xs->cpu_parent()->data.i32[0] = k.T;
    if (k.B > 1) xs->cpu_parent()->data.i32[1] = 0;
    xs->upload();
    auto hx = both({{k.L * D, k.B, P}}, rng), cx = both({{k.L * D, k.B, k.H}}, rng);
    const std::vector<int> ydim = k.batch_first ? std::vector<int>{k.B, k.T, O} : std::vector<int>{k.T, k.B, O};
    auto y = both({ydim}, rng), hy = both({{k.L * D, k.B, P}}, rng), cy = both({{k.L * D, k.B, k.H}}, rng);
    auto r = both({{static_cast<int>(rcount)}}, rng);
    Both* xsp = k.lengths ? xs.get() : nullptr;
    Both* hxp = k.states ? hx.get() : nullptr;
    Both* cxp = k.states ? cx.get() : nullptr;
    ccv_nnc_stream_context_set_seed(nullptr, 4242);  // the same dropout key both sides
    ASSERT_EQ(exec_n(fc, {x.get(), xsp, hxp, cxp, w.get()}, {y.get(), hy.get(), cy.get(), r.get()}, false),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ccv_nnc_stream_context_set_seed(nullptr, 4242);
    const ccv_nnc_cmd_t fg = lstm_cmd(CCV_NNC_LSTM_FORWARD, k, kLstmBackend);
    ASSERT_EQ(exec_n(fg, {x.get(), xsp, hxp, cxp, w.get()}, {y.get(), hy.get(), cy.get(), r.get()}, true),
              CCV_NNC_EXEC_SUCCESS)
        << what << ": " << ccv_nnc_error_message();
    y->expect_close(2e-4f, 5e-5f, what + " y");
    hy->expect_close(2e-4f, 5e-5f, what + " hy");
    cy->expect_close(2e-4f, 5e-5f, what + " cy");
    r->expect_close(2e-4f, 5e-5f, what + " reserve");
    // Backward: CPU_REF from its reserve, the GPU from its own (the two
    // reserves agree, checked above), then the GPU again from CPU_REF's.
    auto dy = both({ydim}, rng), dhy = both({{k.L * D, k.B, P}}, rng), dcy = both({{k.L * D, k.B, k.H}}, rng);
    auto dx = both({xdim}, rng), dhx = both({{k.L * D, k.B, P}}, rng), dcx = both({{k.L * D, k.B, k.H}}, rng);
    auto dw = both({{static_cast<int>(wcount)}}, rng);
    Both* dhyp = k.states ? dhy.get() : nullptr;
    Both* dcyp = k.states ? dcy.get() : nullptr;
    const std::vector<Both*> bin{dy.get(), dhyp,    dcyp,    nullptr, x.get(), xsp,    nullptr,
                                 nullptr,  w.get(), nullptr, nullptr, nullptr, r.get()};
    const std::vector<Both*> bout{dx.get(), nullptr, dhx.get(), dcx.get(), dw.get()};
    ASSERT_EQ(exec_n(lstm_cmd(CCV_NNC_LSTM_BACKWARD, k, CCV_NNC_BACKEND_CPU_REF), bin, bout, false),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const ccv_nnc_cmd_t bg = lstm_cmd(CCV_NNC_LSTM_BACKWARD, k, kLstmBackend);
    ASSERT_EQ(exec_n(bg, bin, bout, true), CCV_NNC_EXEC_SUCCESS) << what << ": " << ccv_nnc_error_message();
    dx->expect_close(2e-4f, 5e-5f, what + " dx");
    dhx->expect_close(2e-4f, 5e-5f, what + " dhx");
    dcx->expect_close(2e-4f, 5e-5f, what + " dcx");
    dw->expect_close(2e-4f, 3e-4f, what + " dw");
    // The GPU backward reading CPU_REF's reserve (copied over the GPU's).
    r->upload();
    ASSERT_EQ(exec_n(bg, bin, bout, true), CCV_NNC_EXEC_SUCCESS) << what << ": " << ccv_nnc_error_message();
    dx->expect_close(2e-4f, 5e-5f, what + " dx from CPU_REF's reserve");
    dw->expect_close(2e-4f, 3e-4f, what + " dw from CPU_REF's reserve");
  }
}

TEST(GpuCublasLstm, StreamAndRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(787);
  const LstmCase k{6, 3, 4, 5, 0, 2, true, true, false, true, true, 0};
  const ccv_nnc_cmd_t fc = lstm_cmd(CCV_NNC_LSTM_FORWARD, k, CCV_NNC_BACKEND_CPU_REF);
  const size_t rcount = reserve_of(fc, k.F, k.B, k.T);
  const int wcount = 2 * (4 * 5 * (4 + 5) + 40) + 2 * (4 * 5 * (10 + 5) + 40);
  auto x = both({{k.T, k.B, k.F}}, rng), w = both({{wcount}}, rng, -0.5f, 0.5f);
  auto xs = both({{k.B}, false, CCV_32S}, rng, 0, k.T);
  auto hx = both({{4, k.B, 5}}, rng), cx = both({{4, k.B, 5}}, rng);
  auto y = both({{k.T, k.B, 10}}, rng), r = both({{static_cast<int>(rcount)}}, rng);
  ASSERT_EQ(exec_n(fc, {x.get(), xs.get(), hx.get(), cx.get(), w.get()}, {y.get(), nullptr, nullptr, r.get()}, false),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  // On a GPU stream context, waited for.
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  const ccv_nnc_cmd_t fg = lstm_cmd(CCV_NNC_LSTM_FORWARD, k, kLstmBackend);
  ASSERT_EQ(exec_n(fg, {x.get(), xs.get(), hx.get(), cx.get(), w.get()}, {y.get(), nullptr, nullptr, r.get()}, true, s),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  y->expect_close(2e-4f, 5e-5f, "LSTM on a stream");
  // A length past T: an error naming it.
  xs->cpu_parent()->data.i32[1] = k.T + 1;
  xs->upload();
  EXPECT_EQ(exec_n(fg, {x.get(), xs.get(), hx.get(), cx.get(), w.get()}, {y.get(), nullptr, nullptr, r.get()}, true),
            CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("xs[1]"), std::string::npos) << ccv_nnc_error_message();
  // A view of x: not this backend's (no kernel), with a message.
  auto xv = both({{k.T, k.B, k.F}, true}, rng);
  xs->cpu_parent()->data.i32[1] = 2;
  xs->upload();
  if (kRealGpu) {
    EXPECT_NE(exec_n(fg, {xv.get(), xs.get(), hx.get(), cx.get(), w.get()}, {y.get(), nullptr, nullptr, r.get()}, true),
              CCV_NNC_EXEC_SUCCESS);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
  }
  // w of the wrong size: the family's check.
  auto w2 = both({{wcount - 1}}, rng);
  EXPECT_NE(exec_n(fg, {x.get(), xs.get(), hx.get(), cx.get(), w2.get()}, {y.get(), nullptr, nullptr, r.get()}, true),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("w has"), std::string::npos) << ccv_nnc_error_message();
}

}  // namespace
