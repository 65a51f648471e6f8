// The per-element formulas and index maps of the GPU_REF kernels of the
// "misc" families (cuda/misc_kernels.cu): ROI_ALIGN's sample grid and
// bilinear taps, NMS's ranking and IoU, HISTOGRAM's bin of a value, and
// COMPRESSION_LSSC's block code, as host code. nvcc compiles this header
// into the kernels as it is, and test/unit/gpu_misc runs the same functions
// on the CPU against the CPU_REF kernels (lib/cmd/roi, nms, histogram,
// compression), so what decides each value is tested without a GPU.
//
// Exactness: the CPU_REF kernels compute in double. Where the GPU result must
// be the CPU's to the last bit (NMS's kept rows, a value on a histogram edge,
// LSSC's levels) the arithmetic here is written with mul_rn / add_rn / sub_rn,
// which nvcc cannot contract into fused multiply-adds (it does by default),
// and max / min / clamp in std::max / std::min / std::clamp's exact form (a
// NaN first operand is returned). 16F rounding is done bit by bit here
// (half_from_float), the FP16 library's result to the bit, NaN included.
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

// --- exact double arithmetic --------------------------------------------

NNC_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
NNC_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
NNC_HD double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
NNC_HD bool is_nan(double v) { return v != v; }
NNC_HD bool is_finite(double v) { return v == v && v - v == 0; }
NNC_HD double max_of(double a, double b) { return a < b ? b : a; }                                // std::max
NNC_HD double min_of(double a, double b) { return b < a ? b : a; }                                // std::min
NNC_HD double clamp_of(double v, double lo, double hi) { return v < lo ? lo : hi < v ? hi : v; }  // std::clamp

// --- 16F and 16BF bits ----------------------------------------------------

// float -> 16F, round to nearest even; NaN -> sign | 0x7e00 (as the FP16
// library, nnc::float_to_half).
NNC_HD uint16_t half_from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  if (x < 0x38800000u) {                        // below 2^-14: a subnormal half or 0
    const uint32_t e = x >> 23;
    if (e == 0) return sign;
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // value in units of 2^-24 is mant >> shift
    if (shift >= 32) return sign;
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = (x >> 13) - (112u << 10);
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
  return static_cast<uint16_t>(sign | r);
}

// 16F -> float, exact.
NNC_HD float float_from_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: m 2^-24
      int k = 0;
      uint32_t mm = m;
      while (!(mm & 0x400u)) mm <<= 1, k++;
      x = sign | ((113u - static_cast<uint32_t>(k)) << 23) | ((mm & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// float -> 16BF, round to nearest even, a NaN kept a NaN (nnc::float_to_bf16).
NNC_HD uint16_t bf16_from_float(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// --- ROI_ALIGN --------------------------------------------------------------

constexpr double kRoiMaxSamples = 1024;

// One box's bins on an h x w map: box origin and bin extents in map units,
// samples per bin each way and each sample's share (lib/cmd/roi/cpu_ref.cpp).
struct RoiBin {
  double y0 = 0, x0 = 0, bh = 0, bw = 0, share = 0;
  int sy = 1, sx = 1;
};
NNC_HD RoiBin roi_bin(double bx, double by, double bwidth, double bheight, int h, int w, int rows, int cols) {
  RoiBin b;
  b.y0 = mul_rn(by, h);
  b.x0 = mul_rn(bx, w);
  b.bh = mul_rn(max_of(bheight, 0.0), h) / rows;
  b.bw = mul_rn(max_of(bwidth, 0.0), w) / cols;
  b.sy = static_cast<int>(clamp_of(std::ceil(b.bh), 1.0, kRoiMaxSamples));
  b.sx = static_cast<int>(clamp_of(std::ceil(b.bw), 1.0, kRoiMaxSamples));
  b.share = 1.0 / mul_rn(static_cast<double>(b.sy), b.sx);
  return b;
}

// Sample s (of n samples) of bin i along one axis: the map coordinate, then
// its two pixels and the upper one's weight; false when it reads 0 (beyond
// one pixel outside the map of `size` pixels).
NNC_HD bool roi_axis(double origin, double extent, int i, int s, int n, int size, int* lo, int* hi, double* frac) {
  double p = sub_rn(add_rn(add_rn(origin, mul_rn(i, extent)), mul_rn(s + 0.5, extent) / n), 0.5);
  if (p < -1 || p > size) return false;
  p = clamp_of(p, 0.0, static_cast<double>(size - 1));
  *lo = static_cast<int>(std::floor(p));
  *hi = *lo + 1 < size - 1 ? *lo + 1 : size - 1;
  *frac = sub_rn(p, *lo);
  return true;
}

// f(y, x, weight) for every pixel a sample of bin (i, j) touches, in the
// CPU_REF kernel's order.
template <class F>
NNC_HD void roi_for_each_tap(const RoiBin& b, int h, int w, int i, int j, F&& f) {
  for (int iy = 0; iy < b.sy; iy++) {
    int yl, yh;
    double ly;
    if (!roi_axis(b.y0, b.bh, i, iy, b.sy, h, &yl, &yh, &ly)) continue;
    for (int ix = 0; ix < b.sx; ix++) {
      int xl, xh;
      double lx;
      if (!roi_axis(b.x0, b.bw, j, ix, b.sx, w, &xl, &xh, &lx)) continue;
      f(yl, xl, mul_rn(mul_rn(b.share, 1 - ly), 1 - lx));
      f(yl, xh, mul_rn(mul_rn(b.share, 1 - ly), lx));
      f(yh, xl, mul_rn(mul_rn(b.share, ly), 1 - lx));
      f(yh, xh, mul_rn(mul_rn(b.share, ly), lx));
    }
  }
}

// --- NMS ----------------------------------------------------------------------

// IoU of two (x, y, width, height) boxes, nms::iou's operations in its order.
NNC_HD double nms_iou(double ax, double ay, double aw, double ah, double bx, double by, double bw, double bh) {
  aw = max_of(aw, 0.0), ah = max_of(ah, 0.0), bw = max_of(bw, 0.0), bh = max_of(bh, 0.0);
  const double iw = max_of(0.0, sub_rn(min_of(add_rn(ax, aw), add_rn(bx, bw)), max_of(ax, bx)));
  const double ih = max_of(0.0, sub_rn(min_of(add_rn(ay, ah), add_rn(by, bh)), max_of(ay, by)));
  const double inter = mul_rn(iw, ih), uni = sub_rn(add_rn(mul_rn(aw, ah), mul_rn(bw, bh)), inter);
  return uni > 0 ? inter / uni : 0.0;
}

// Score s ranks strictly above t: higher first, NaN last.
NNC_HD bool nms_better(double s, double t) { return !is_nan(s) && (is_nan(t) || s > t); }
// Row j (score sj) comes before row i in the stable ranking.
NNC_HD bool nms_before(double sj, int j, double si, int i) {
  return nms_better(sj, si) || (!nms_better(si, sj) && j < i);
}

// --- HISTOGRAM ------------------------------------------------------------

enum HistMode : int { kHistEven = 0, kHistLog = 1, kHistBins = 2 };

// One histogram's parameters (host-made; `edges` points at device or host
// memory as the caller runs): EVEN uses lo, hi, w, bins; LOGARITHMIC lo, u
// and edges[0..u) (lo rate^k, computed on the host as CPU_REF does), log_rate
// for the first guess only; BINS edges[0..n_edges). m counts, NaN in m - 1.
struct HistArgs {
  int mode = kHistEven;
  double lo = 0, hi = 0, w = 0, log_rate = 0;
  int bins = 0, u = 0;
  int64_t n_edges = 0;
  const double* edges = nullptr;
  int m = 0;
};

// Index k in [0, n) with edge(k) <= v < edge(k + 1) from a guess.
template <class Edge>
NNC_HD int hist_settle(double v, long long guess, int n, Edge&& edge) {
  int k = static_cast<int>(guess < 0 ? 0 : guess > n - 1 ? n - 1 : guess);
  while (k > 0 && v < edge(k)) k--;
  while (k < n - 1 && v >= edge(k + 1)) k++;
  return k;
}

// The parameters of a histogram command (histogram.type as mode, min, max,
// bins, rate, and u = histogram::log_range for the logarithmic mode; m the
// number of counts), edges left NULL (gpu_misc.cpp).
HistArgs hist_args(int mode, float min, float max, int bins, float rate, int u, int m);
// The logarithmic mode's edges lo rate^k, k in [0, u), as CPU_REF computes them.
void hist_log_edges(float min, float rate, int u, double* out);

// The count v goes to.
NNC_HD int hist_slot(double v, const HistArgs& a) {
  if (is_nan(v)) return a.m - 1;
  if (a.mode == kHistEven) {
    if (v < a.lo) return 0;
    if (v >= a.hi) return a.bins + 1;
    const double lo = a.lo, w = a.w;
    return 1 + hist_settle(v, static_cast<long long>(std::floor(sub_rn(v, lo) / w)), a.bins,
                           [lo, w](int i) { return add_rn(lo, mul_rn(i, w)); });
  }
  if (a.mode == kHistLog) {
    const double x = std::fabs(v);
    if (x < a.lo) return a.u;
    const double guess = !is_finite(x) ? a.u : std::floor(std::log(x / a.lo) / a.log_rate);
    const double* e = a.edges;
    const int k = hist_settle(x, static_cast<long long>(min_of(guess, a.u)), a.u, [e](int i) { return e[i]; });
    return v < 0 ? a.u - 1 - k : a.u + 1 + k;
  }
  // upper_bound: the number of edges <= v.
  int64_t lo = 0, hi = a.n_edges;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (v < a.edges[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  return static_cast<int>(lo);
}

// --- COMPRESSION_LSSC -------------------------------------------------------

// Level k of a block (lo + (hi - lo) k / 3; 0 and 3 are lo and hi).
NNC_HD double lssc_level(double lo, double hi, int k) {
  return k == 0 ? lo : k == 3 ? hi : add_rn(lo, mul_rn(sub_rn(hi, lo), k) / 3.0);
}

// One block's code from its 16 values (NaN for a pixel outside the image):
// lo, hi (0 for a block of NaNs) and the 2-bit levels.
NNC_HD void lssc_encode(const double* v, double* lo_out, double* hi_out, uint32_t* bits_out) {
  double lo = NAN, hi = NAN;
  for (int i = 0; i < 16; i++) {
    if (is_nan(v[i])) continue;
    lo = is_nan(lo) ? v[i] : min_of(lo, v[i]);
    hi = is_nan(hi) ? v[i] : max_of(hi, v[i]);
  }
  if (is_nan(lo)) lo = hi = 0;
  uint32_t bits = 0;
  for (int i = 0; i < 16; i++) {
    if (is_nan(v[i]) || !(hi > lo)) continue;
    const double t = mul_rn(sub_rn(v[i], lo) / sub_rn(hi, lo), 3);
    int k = v[i] == hi ? 3 : 0;
    if (v[i] != hi && v[i] != lo && is_finite(t)) k = static_cast<int>(clamp_of(std::ceil(sub_rn(t, 0.5)), 0.0, 3.0));
    bits |= static_cast<uint32_t>(k) << (2 * i);
  }
  *lo_out = lo, *hi_out = hi, *bits_out = bits;
}

// --- LSTM (the fused cell of a step; cuda/lstm_kernels.cu) -------------------

NNC_HD uint64_t mix64_hd(uint64_t z) {  // nnc::mix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// lstm::keeps: dropout factor k of a forward keeps its value.
NNC_HD bool lstm_keeps(uint64_t key, uint64_t k, double p) {
  const uint64_t w = mix64_hd(key + (k + 1) * 0x9e3779b97f4a7c15ull);
  return static_cast<double>(w >> 11) * 0x1.0p-53 >= p;
}
NNC_HD float sigmoid_f(float v) { return 1.f / (1.f + expf(-v)); }

// One unit of a step from its four pre-activations (CPU_REF's formulas, in
// float): the activated gates (i, f, g, o) into gates[0..3], c_t, and
// m = o tanh(c_t).
NNC_HD void lstm_cell(float pi, float pf, float pg, float po, float c_prev, float* gates, float* c, float* m) {
  const float i = sigmoid_f(pi), f = sigmoid_f(pf), g = tanhf(pg), o = sigmoid_f(po);
  gates[0] = i, gates[1] = f, gates[2] = g, gates[3] = o;
  *c = f * c_prev + i * g;
  *m = o * tanhf(*c);
}

// Its gradient: from the gates, c_{t-1}, c_t, dm (the gradient of o tanh(c_t))
// and dc (carried from the step after, updated to the gradient of c_{t-1}),
// the four pre-activations' gradients dpre[0..3].
NNC_HD void lstm_cell_grad(const float* gates, float c_prev, float c, float dm, float* dc, float* dpre) {
  const float i = gates[0], f = gates[1], g = gates[2], o = gates[3];
  const float tc = tanhf(c);
  const float dcv = *dc + dm * o * (1 - tc * tc);
  dpre[0] = dcv * g * i * (1 - i);
  dpre[1] = dcv * c_prev * f * (1 - f);
  dpre[2] = dcv * i * (1 - g * g);
  dpre[3] = dm * tc * o * (1 - o);
  *dc = dcv * f;
}

}  // namespace nnc::gpu
