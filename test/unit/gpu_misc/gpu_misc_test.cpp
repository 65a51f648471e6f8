// The GPU_REF misc kernels' formulas (cmd/common/gpu_misc.hpp, run by
// cuda/misc_kernels.cu) run on the CPU in the kernels' own loop order,
// against the CPU_REF kernels of the same commands: ROI_ALIGN, NMS,
// HISTOGRAM, COMPRESSION_LSSC, and the 16F / 16BF bit conversions they use.
// Random inputs with fixed seeds, odd shapes, both formats, values placed on
// the edges and ties that decide a result.
//
// Exactness: on the CPU these functions do CPU_REF's double operations in
// CPU_REF's order, so ROI_ALIGN's forward, NMS's rows and indices, every
// histogram count and LSSC's bits are asserted EQUAL. Only ROI_ALIGN's
// backward, summed in float as the kernel's atomics do, gets a tolerance:
// each element sums at most a few hundred terms of |w g| <= 1, float error
// <= n 2^-24 relative to the sum of magnitudes: rtol 1e-5, atol 1e-5.
#include "cmd/common/gpu_misc.hpp"

#include <gtest/gtest.h>

#include "host_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using namespace nnc::gpu;

using gpu_misc_test::Tensor;

ccv_nnc_cmd_t ref(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  return c;
}

void run(const ccv_nnc_cmd_t& c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  ASSERT_EQ(ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                             static_cast<int>(out.size()), nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// --- 16F / 16BF bits ----------------------------------------------------------

TEST(GpuMisc, HalfToFloatEveryValue) {
  for (uint32_t h = 0; h < 65536; h++) {
    const float a = float_from_half(static_cast<uint16_t>(h)), b = nnc::half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(b)) {
      ASSERT_TRUE(std::isnan(a)) << h;
      ASSERT_EQ(bits_of(a) >> 31, bits_of(b) >> 31) << h;
    } else {
      ASSERT_EQ(bits_of(a), bits_of(b)) << h;
    }
  }
}

TEST(GpuMisc, FloatToHalfAsTheFp16Library) {
  // Every sign and exponent and the top 6 mantissa bits, with the rounding
  // bits (the low 13) at every case that decides a rounding; then random.
  const uint32_t lows[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x0800, 0x1800};
  size_t checked = 0;
  for (uint32_t top = 0; top < (1u << 19); top++)
    for (uint32_t low : lows) {
      const uint32_t u = (top << 13) | low;
      const float f = float_of(u);
      ASSERT_EQ(half_from_float(f), nnc::float_to_half(f)) << std::hex << u;
      checked++;
    }
  // Subnormal halves decide their rounding at other bit positions.
  std::mt19937 rng(11);
  for (int k = 0; k < 4000000; k++) {
    const uint32_t u = rng();
    const float f = float_of(u);
    ASSERT_EQ(half_from_float(f), nnc::float_to_half(f)) << std::hex << u;
    const float g = float_of((u & 0x83ffffffu) | 0x30000000u);  // exponents around 2^-31 .. 2^-14
    ASSERT_EQ(half_from_float(g), nnc::float_to_half(g)) << std::hex << bits_of(g);
  }
  EXPECT_GT(checked, 4000000u);
}

TEST(GpuMisc, FloatToBf16AsTheCpu) {
  std::mt19937 rng(12);
  for (int k = 0; k < 2000000; k++) {
    const float f = float_of(rng());
    ASSERT_EQ(bf16_from_float(f), nnc::float_to_bf16(f)) << std::hex << bits_of(f);
  }
  for (float f : {0.f, -0.f, INFINITY, -INFINITY, NAN, 1.f + std::ldexp(1.f, -8), 1.f + 3 * std::ldexp(1.f, -8)})
    EXPECT_EQ(bf16_from_float(f), nnc::float_to_bf16(f)) << f;
}

// --- ROI_ALIGN ---------------------------------------------------------------

struct Img {
  int n = 1, h = 0, w = 0, c = 0;
  int64_t sn = 0, sh = 0, sw = 0, sc = 0;
  int64_t at(int ni, int y, int x, int ci) const { return ni * sn + y * sh + x * sw + ci * sc; }
};
Img img(int n, int h, int w, int c, bool nchw) {
  Img m;
  m.n = n, m.h = h, m.w = w, m.c = c;
  if (nchw)
    m.sw = 1, m.sh = w, m.sc = static_cast<int64_t>(h) * w, m.sn = m.sc * c;
  else
    m.sc = 1, m.sw = c, m.sh = static_cast<int64_t>(w) * c, m.sn = m.sh * h;
  return m;
}
std::vector<int> shape(int n, int h, int w, int c, bool nchw, bool four) {
  std::vector<int> s = nchw ? std::vector<int>{c, h, w} : std::vector<int>{h, w, c};
  if (four) s.insert(s.begin(), n);
  return s;
}

// The kernels' loops: one element (k, i, j, c) of b at a time.
void roi_forward_emulated(const float* a, const Img& ai, const float* boxes, float* b, const Img& bi) {
  for (int64_t t = 0; t < static_cast<int64_t>(bi.n) * bi.h * bi.w * bi.c; t++) {
    int64_t q = t;
    const int c = static_cast<int>(q % bi.c);
    q /= bi.c;
    const int j = static_cast<int>(q % bi.w);
    q /= bi.w;
    const int i = static_cast<int>(q % bi.h);
    const int k = static_cast<int>(q / bi.h);
    const float* bx = boxes + 4 * k;
    const RoiBin bin = roi_bin(bx[0], bx[1], bx[2], bx[3], ai.h, ai.w, bi.h, bi.w);
    const int64_t base = (ai.n == 1 ? 0 : k * ai.sn) + c * ai.sc;
    double acc = 0;
    roi_for_each_tap(bin, ai.h, ai.w, i, j,
                     [&](int y, int x, double wt) { acc += wt * a[base + y * ai.sh + x * ai.sw]; });
    b[bi.at(k, i, j, c)] = static_cast<float>(acc);
  }
}

void roi_backward_emulated(const float* g, const Img& gi, const float* boxes, float* da, const Img& di) {
  std::fill(da, da + static_cast<int64_t>(di.n) * di.h * di.w * di.c, 0.f);
  for (int64_t t = 0; t < static_cast<int64_t>(gi.n) * gi.h * gi.w * gi.c; t++) {
    int64_t q = t;
    const int c = static_cast<int>(q % gi.c);
    q /= gi.c;
    const int j = static_cast<int>(q % gi.w);
    q /= gi.w;
    const int i = static_cast<int>(q % gi.h);
    const int k = static_cast<int>(q / gi.h);
    const double gv = g[gi.at(k, i, j, c)];
    const float* bx = boxes + 4 * k;
    const RoiBin bin = roi_bin(bx[0], bx[1], bx[2], bx[3], di.h, di.w, gi.h, gi.w);
    const int64_t base = (di.n == 1 ? 0 : k * di.sn) + c * di.sc;
    roi_for_each_tap(bin, di.h, di.w, i, j,
                     [&](int y, int x, double wt) { da[base + y * di.sh + x * di.sw] += static_cast<float>(wt * gv); });
  }
}

TEST(GpuMisc, RoiAlignAsCpuRef) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1, 1), pos(-0.3f, 1.1f), ext(-0.1f, 0.9f);
  struct Case {
    int images, boxes, h, w, c, rows, cols;
    bool nchw;
  };
  const Case cases[] = {{1, 5, 13, 11, 3, 3, 4, false}, {3, 3, 9, 17, 5, 2, 5, true}, {1, 1, 7, 7, 1, 7, 7, false},
                        {2, 2, 31, 5, 2, 1, 3, true},   {1, 4, 1, 1, 2, 2, 2, false}, {1, 6, 40, 33, 1, 5, 3, true}};
  for (const Case& k : cases) {
    Tensor a(CCV_32F, shape(k.images, k.h, k.w, k.c, k.nchw, true),
             k.nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC);
    Tensor boxes(CCV_32F, {k.boxes, 4});
    Tensor b(CCV_32F, shape(k.boxes, k.rows, k.cols, k.c, k.nchw, true), a.t->info.format);
    for (size_t i = 0; i < a.count(); i++) a.f()[i] = u(rng);
    for (int i = 0; i < k.boxes; i++) {
      float* bx = boxes.f() + 4 * i;
      bx[0] = pos(rng), bx[1] = pos(rng), bx[2] = ext(rng), bx[3] = ext(rng);
    }
    if (k.boxes > 2) boxes.f()[4 * 2 + 2] = 3.5f;  // a box far wider than the map
    ccv_nnc_cmd_t f = ref(CCV_NNC_ROI_ALIGN_FORWARD);
    f.info.size.dim[0] = k.rows, f.info.size.dim[1] = k.cols, f.info.size.dim[2] = 1;
    run(f, {a.t, boxes.t}, {b.t});
    std::vector<float> mine(b.count());
    roi_forward_emulated(a.f(), img(k.images, k.h, k.w, k.c, k.nchw), boxes.f(), mine.data(),
                         img(k.boxes, k.rows, k.cols, k.c, k.nchw));
    for (size_t i = 0; i < b.count(); i++) ASSERT_EQ(mine[i], b.f()[i]) << "forward element " << i;
    // Backward.
    Tensor g(CCV_32F, shape(k.boxes, k.rows, k.cols, k.c, k.nchw, true), a.t->info.format);
    Tensor da(CCV_32F, shape(k.images, k.h, k.w, k.c, k.nchw, true), a.t->info.format);
    for (size_t i = 0; i < g.count(); i++) g.f()[i] = u(rng);
    ccv_nnc_cmd_t bw = f;
    bw.cmd = CCV_NNC_ROI_ALIGN_BACKWARD;
    run(bw, {g.t, nullptr, boxes.t}, {da.t});
    std::vector<float> dm(da.count());
    roi_backward_emulated(g.f(), img(k.boxes, k.rows, k.cols, k.c, k.nchw), boxes.f(), dm.data(),
                          img(k.images, k.h, k.w, k.c, k.nchw));
    for (size_t i = 0; i < da.count(); i++)
      ASSERT_NEAR(dm[i], da.f()[i], 1e-5 + 1e-5 * std::fabs(da.f()[i])) << "backward element " << i;
  }
}

// --- NMS -------------------------------------------------------------------

// The kernels' three passes: rank by counting, greedy, write.
void nms_emulated(const float* a, int batch, int n, int k, double threshold, float* b, int* c) {
  for (int bi = 0; bi < batch; bi++) {
    const float* rows = a + static_cast<size_t>(bi) * n * k;
    auto at = [&](int i, int x) { return static_cast<double>(rows[static_cast<size_t>(i) * k + x]); };
    std::vector<int> order(n), kept;
    for (int i = 0; i < n; i++) {
      int rank = 0;
      for (int j = 0; j < n; j++) rank += nms_before(at(j, 0), j, at(i, 0), i) ? 1 : 0;
      order[rank] = i;
    }
    for (int r = 0; r < n; r++) {
      const int i = order[r];
      bool sup = false;
      for (int q : kept)
        sup =
            sup || nms_iou(at(i, 1), at(i, 2), at(i, 3), at(i, 4), at(q, 1), at(q, 2), at(q, 3), at(q, 4)) > threshold;
      if (!sup) kept.push_back(i);
    }
    for (int j = 0; j < n; j++) {
      const int r = j < static_cast<int>(kept.size()) ? kept[j] : -1;
      for (int x = 0; x < k; x++)
        b[(static_cast<size_t>(bi) * n + j) * k + x] = r >= 0 ? static_cast<float>(at(r, x)) : 0.f;
      c[bi * n + j] = r;
    }
  }
}

TEST(GpuMisc, NmsAsCpuRef) {
  std::mt19937 rng(41);
  struct Case {
    int batch, n, k;
    float threshold;
    bool grid;  // integer boxes and scores: exact IoUs and many ties
  };
  const Case cases[] = {{1, 37, 5, 0.5f, false}, {3, 64, 6, 0.3f, false}, {2, 50, 5, 0.5f, true},
                        {1, 40, 7, 0.f, true},   {4, 9, 5, 1.f, true},    {1, 1, 5, 0.5f, false}};
  for (const Case& cs : cases) {
    Tensor a(CCV_32F, cs.batch > 1 ? std::vector<int>{cs.batch, cs.n, cs.k} : std::vector<int>{cs.n, cs.k});
    Tensor b(CCV_32F, cs.batch > 1 ? std::vector<int>{cs.batch, cs.n, cs.k} : std::vector<int>{cs.n, cs.k});
    Tensor c(CCV_32S, cs.batch > 1 ? std::vector<int>{cs.batch, cs.n} : std::vector<int>{cs.n});
    std::uniform_real_distribution<float> u(0, 1);
    std::uniform_int_distribution<int> small(0, 4);
    for (int r = 0; r < cs.batch * cs.n; r++) {
      float* row = a.f() + static_cast<size_t>(r) * cs.k;
      if (cs.grid) {
        row[0] = static_cast<float>(small(rng));  // ties
        row[1] = static_cast<float>(small(rng)), row[2] = static_cast<float>(small(rng));
        row[3] = static_cast<float>(small(rng) - 1), row[4] = static_cast<float>(small(rng));
      } else {
        row[0] = u(rng), row[1] = u(rng) * 4, row[2] = u(rng) * 4, row[3] = u(rng) * 2, row[4] = u(rng) * 2;
      }
      for (int x = 5; x < cs.k; x++) row[x] = u(rng);
      if (r % 7 == 3) row[0] = NAN;           // NaN scores rank last
      if (r % 11 == 5) row[1 + r % 4] = NAN;  // a NaN coordinate
    }
    ccv_nnc_cmd_t f = ref(CCV_NNC_NMS_FORWARD);
    f.info.nms.iou_threshold = cs.threshold;
    run(f, {a.t}, {b.t, c.t});
    std::vector<float> mb(b.count());
    std::vector<int> mc(c.count());
    nms_emulated(a.f(), cs.batch, cs.n, cs.k, cs.threshold, mb.data(), mc.data());
    for (size_t i = 0; i < c.count(); i++) ASSERT_EQ(mc[i], c.i()[i]) << "c " << i;
    for (size_t i = 0; i < b.count(); i++)
      ASSERT_TRUE(mb[i] == b.f()[i] || (std::isnan(mb[i]) && std::isnan(b.f()[i]))) << "b " << i;
  }
}

// --- HISTOGRAM -----------------------------------------------------------------

void check_histogram(const ccv_nnc_cmd_t& cmd, const Tensor& x, const Tensor* edges, const HistArgs& args0,
                     const std::vector<double>& edge_values, const char* what) {
  Tensor h(CCV_32S, {args0.m});
  std::vector<ccv_nnc_tensor_t*> in{x.t};
  if (edges) in.push_back(edges->t);
  run(cmd, in, {h.t});
  HistArgs args = args0;
  args.edges = edge_values.data();
  std::vector<int> mine(static_cast<size_t>(args.m), 0);
  const bool wide = CCV_GET_DATA_TYPE(x.t->info.datatype) == CCV_64F;
  for (size_t i = 0; i < x.count(); i++) {
    const double v = wide ? x.t->data.f64[i] : x.f()[i];
    const int s = hist_slot(v, args);
    ASSERT_TRUE(s >= 0 && s < args.m) << what << ": value " << v << " to slot " << s;
    mine[static_cast<size_t>(s)]++;
  }
  for (int i = 0; i < args.m; i++) ASSERT_EQ(mine[static_cast<size_t>(i)], h.i()[i]) << what << ": count " << i;
}

// hist_settle from every guess lands on the bin the edges define.
TEST(GpuMisc, HistogramSettleFromAnyGuess) {
  std::mt19937 rng(52);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> e(23);
  for (double& v : e) v = u(rng);
  std::sort(e.begin(), e.end());
  const int n = static_cast<int>(e.size());
  auto edge = [&](int k) { return e[static_cast<size_t>(k)]; };
  for (int t = 0; t < 2000; t++) {
    const double v = t % 3 == 0 ? e[static_cast<size_t>(t % n)] : std::max(e[0], u(rng));
    int want = 0;
    for (int k = 0; k < n; k++)
      if (e[static_cast<size_t>(k)] <= v) want = k;
    for (long long guess : {-5LL, 0LL, 7LL, 22LL, 40LL})
      ASSERT_EQ(hist_settle(v, guess, n, edge), want) << "value " << v << " guess " << guess;
  }
}

TEST(GpuMisc, HistogramAsCpuRef) {
  std::mt19937 rng(51);
  // EVEN: values on every edge, beside them, outside, NaN and infinities.
  {
    ccv_nnc_cmd_t c = ref(CCV_NNC_HISTOGRAM_FORWARD);
    c.info.histogram.type = CCV_NNC_HISTOGRAM_EVEN;
    c.info.histogram.bins = 7;
    c.info.histogram.min = -1.3f;
    c.info.histogram.max = 2.1f;
    const HistArgs args = hist_args(kHistEven, -1.3f, 2.1f, 7, 0, 0, 10);
    Tensor x(CCV_32F, {3001});
    std::uniform_real_distribution<float> u(-2, 3);
    for (size_t i = 0; i < x.count(); i++) x.f()[i] = u(rng);
    for (int i = 0; i <= 7; i++) {
      const float e = static_cast<float>(args.lo + i * args.w);
      x.f()[10 * i] = e, x.f()[10 * i + 1] = std::nextafter(e, -10.f), x.f()[10 * i + 2] = std::nextafter(e, 10.f);
    }
    x.f()[100] = NAN, x.f()[101] = INFINITY, x.f()[102] = -INFINITY, x.f()[103] = 2.1f, x.f()[104] = -1.3f;
    check_histogram(c, x, nullptr, args, {}, "EVEN");
  }
  // EVEN over 64F values exactly on the double edges: the first guess
  // (a division) is below the edge for some, and the edges decide.
  {
    ccv_nnc_cmd_t c = ref(CCV_NNC_HISTOGRAM_FORWARD);
    c.info.histogram.type = CCV_NNC_HISTOGRAM_EVEN;
    c.info.histogram.bins = 97;
    c.info.histogram.min = 0.1f;
    c.info.histogram.max = 0.7f;
    const HistArgs args = hist_args(kHistEven, 0.1f, 0.7f, 97, 0, 0, 100);
    Tensor x(CCV_64F, {97 * 3});
    for (int i = 0; i < 97; i++) {
      const double e = args.lo + i * args.w;
      x.t->data.f64[3 * i] = e, x.t->data.f64[3 * i + 1] = std::nextafter(e, -1.0);
      x.t->data.f64[3 * i + 2] = std::nextafter(e, 1.0);
    }
    int below = 0;  // edges whose first guess is one bin low
    for (int i = 1; i < 97; i++) below += std::floor((args.lo + i * args.w - args.lo) / args.w) < i;
    EXPECT_GT(below, 0) << "no edge exercises the correction upwards";
    check_histogram(c, x, nullptr, args, {}, "EVEN 64F");
  }
  // LOGARITHMIC: values on the magnitude edges (as float, both signs), zero.
  {
    ccv_nnc_cmd_t c = ref(CCV_NNC_HISTOGRAM_FORWARD);
    c.info.histogram.type = CCV_NNC_HISTOGRAM_LOGARITHMIC;
    c.info.histogram.min = 0.01f;
    c.info.histogram.max = 100.f;
    c.info.histogram.rate = 1.7f;
    const float lf = static_cast<float>(1.0 / logf(1.7f));
    const int u = static_cast<int>(ceilf(logf(100.f / 0.01f) * lf));
    const HistArgs args = hist_args(kHistLog, 0.01f, 100.f, 0, 1.7f, u, 2 * u + 2);
    std::vector<double> edges(static_cast<size_t>(u));
    hist_log_edges(0.01f, 1.7f, u, edges.data());
    Tensor x(CCV_32F, {4003});
    std::uniform_real_distribution<float> e(-6, 6);
    for (size_t i = 0; i < x.count(); i++) x.f()[i] = (i % 2 ? -1.f : 1.f) * std::pow(10.f, e(rng));
    for (int k = 0; k < u; k++) {
      const float v = static_cast<float>(edges[static_cast<size_t>(k)]);
      x.f()[8 * k] = v, x.f()[8 * k + 1] = -v, x.f()[8 * k + 2] = std::nextafter(v, 0.f),
                x.f()[8 * k + 3] = std::nextafter(v, 1e9f), x.f()[8 * k + 4] = -std::nextafter(v, 0.f);
    }
    x.f()[4000] = 0.f, x.f()[4001] = NAN, x.f()[4002] = -INFINITY, x.f()[3999] = INFINITY;
    check_histogram(c, x, nullptr, args, edges, "LOGARITHMIC");
  }
  // BINS: ascending edges with a repeat; values on them.
  {
    ccv_nnc_cmd_t c = ref(CCV_NNC_HISTOGRAM_FORWARD);
    c.info.histogram.type = CCV_NNC_HISTOGRAM_BINS;
    Tensor edges(CCV_32F, {2, 7});
    std::uniform_real_distribution<float> u(-5, 5);
    std::vector<float> ev(14);
    for (float& v : ev) v = u(rng);
    std::sort(ev.begin(), ev.end());
    ev[6] = ev[5];
    std::copy(ev.begin(), ev.end(), edges.f());
    Tensor x(CCV_32F, {1999});
    for (size_t i = 0; i < x.count(); i++) x.f()[i] = u(rng) * 1.2f;
    for (int i = 0; i < 14; i++) x.f()[3 * i] = ev[static_cast<size_t>(i)];
    x.f()[100] = NAN, x.f()[101] = INFINITY;
    const HistArgs args0 = hist_args(kHistBins, 0, 0, 0, 0, 0, 16);
    HistArgs args = args0;
    args.n_edges = 14;
    std::vector<double> ed(ev.begin(), ev.end());
    check_histogram(c, x, &edges, args, ed, "BINS");
  }
}

// --- COMPRESSION_LSSC ----------------------------------------------------------

// The kernels' loops: one 4 x 4 block (n, by, bx, c) at a time.
void lssc_compress_emulated(const uint16_t* x, const Img& xi, uint16_t* out, const Img& oi) {
  const int bw = oi.w / 4;
  for (int64_t t = 0; t < static_cast<int64_t>(xi.n) * oi.h * bw * xi.c; t++) {
    int64_t q = t;
    const int c = static_cast<int>(q % xi.c);
    q /= xi.c;
    const int bx = static_cast<int>(q % bw);
    q /= bw;
    const int by = static_cast<int>(q % oi.h);
    const int n = static_cast<int>(q / oi.h);
    double v[16];
    for (int i = 0; i < 16; i++) {
      const int yy = 4 * by + i / 4, xx = 4 * bx + i % 4;
      v[i] = yy < xi.h && xx < xi.w ? float_from_half(x[xi.at(n, yy, xx, c)]) : NAN;
    }
    double lo, hi;
    uint32_t bits;
    lssc_encode(v, &lo, &hi, &bits);
    out[oi.at(n, by, 4 * bx, c)] = half_from_float(static_cast<float>(lo));
    out[oi.at(n, by, 4 * bx + 1, c)] = half_from_float(static_cast<float>(hi));
    out[oi.at(n, by, 4 * bx + 2, c)] = static_cast<uint16_t>(bits & 0xffffu);
    out[oi.at(n, by, 4 * bx + 3, c)] = static_cast<uint16_t>(bits >> 16);
  }
}

void lssc_decompress_emulated(const uint16_t* in, const Img& ii, uint16_t* y, const Img& yi) {
  const int bw = ii.w / 4;
  for (int64_t t = 0; t < static_cast<int64_t>(yi.n) * ii.h * bw * yi.c; t++) {
    int64_t q = t;
    const int c = static_cast<int>(q % yi.c);
    q /= yi.c;
    const int bx = static_cast<int>(q % bw);
    q /= bw;
    const int by = static_cast<int>(q % ii.h);
    const int n = static_cast<int>(q / ii.h);
    const double lo = float_from_half(in[ii.at(n, by, 4 * bx, c)]),
                 hi = float_from_half(in[ii.at(n, by, 4 * bx + 1, c)]);
    const uint32_t bits = in[ii.at(n, by, 4 * bx + 2, c)] | static_cast<uint32_t>(in[ii.at(n, by, 4 * bx + 3, c)])
                                                                << 16;
    for (int i = 0; i < 16; i++) {
      const int yy = 4 * by + i / 4, xx = 4 * bx + i % 4;
      if (yy >= yi.h || xx >= yi.w) continue;
      y[yi.at(n, yy, xx, c)] = half_from_float(static_cast<float>(lssc_level(lo, hi, (bits >> (2 * i)) & 3u)));
    }
  }
}

TEST(GpuMisc, LsscAsCpuRef) {
  std::mt19937 rng(61);
  struct Case {
    int n, h, w, c;
    bool nchw, four;
  };
  const Case cases[] = {{1, 5, 7, 3, false, false}, {2, 8, 8, 2, true, true},  {3, 13, 6, 1, false, true},
                        {1, 1, 1, 4, true, false},  {2, 4, 9, 5, false, true}, {1, 12, 12, 2, true, true}};
  for (const Case& k : cases) {
    const int fmt = k.nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
    const int ch = (k.h + 3) / 4, cw = (k.w + 3) / 4 * 4;
    Tensor x(CCV_16F, shape(k.n, k.h, k.w, k.c, k.nchw, k.four), fmt);
    Tensor code(CCV_16F, shape(k.n, ch, cw, k.c, k.nchw, k.four), fmt);
    std::uniform_real_distribution<float> u(-3, 3);
    std::uniform_int_distribution<int> kind(0, 19);
    const bool ties = k.h == 12;  // values on halves of 0 .. 3: pixels halfway between two levels
    std::uniform_int_distribution<int> half_step(0, 6);
    for (size_t i = 0; i < x.count(); i++) {
      if (ties) {
        x.h()[i] = nnc::float_to_half(0.5f * static_cast<float>(half_step(rng)));
        continue;
      }
      const int z = kind(rng);
      const float v = z == 0 ? NAN : z == 1 ? INFINITY : z == 2 ? -INFINITY : z < 6 ? 1.5f : z < 8 ? -0.f : u(rng);
      x.h()[i] = nnc::float_to_half(v);
    }
    run(ref(CCV_NNC_COMPRESSION_LSSC_FORWARD), {x.t}, {code.t});
    std::vector<uint16_t> mine(code.count());
    const Img xi = img(k.n, k.h, k.w, k.c, k.nchw), ci = img(k.n, ch, cw, k.c, k.nchw);
    lssc_compress_emulated(x.h(), xi, mine.data(), ci);
    for (size_t i = 0; i < code.count(); i++) ASSERT_EQ(mine[i], code.h()[i]) << "code " << i;
    // Decode the code, and a code of random bits.
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1)
        for (size_t i = 0; i < code.count(); i++) code.h()[i] = static_cast<uint16_t>(rng());
      Tensor y(CCV_16F, shape(k.n, k.h, k.w, k.c, k.nchw, k.four), fmt);
      run(ref(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {code.t}, {y.t});
      std::vector<uint16_t> my(y.count());
      lssc_decompress_emulated(code.h(), ci, my.data(), xi);
      for (size_t i = 0; i < y.count(); i++) ASSERT_EQ(my[i], y.h()[i]) << "pass " << pass << " pixel " << i;
    }
  }
}

}  // namespace
