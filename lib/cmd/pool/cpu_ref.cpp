// MAX_POOL and AVERAGE_POOL on CPU_REF: the definitions in pool.cpp as loops,
// in double, over any strides, both formats and every float type.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cmd/pool/pool.hpp"
#include "core/tensor.hpp"

namespace nnc::pool {

namespace {

int64_t off(const Image& im, int n, int h, int w, int c) { return n * im.sn + h * im.sh + w * im.sw + c * im.sc; }
double get(const Image& im, int64_t o) {
  return load_double(im.data + o * static_cast<int64_t>(datatype_size(im.datatype)), im.datatype);
}
void put(const Image& im, int64_t o, double v) {
  store_double(im.data + o * static_cast<int64_t>(datatype_size(im.datatype)), im.datatype, v);
}

// The window of output (oh, ow) clipped to the image: rows [h0, h1), cols [w0, w1).
struct Window {
  int h0, h1, w0, w1;
  int count() const { return (h1 - h0) * (w1 - w0); }
};
Window window(const Geometry& g, int oh, int ow) {
  const int h = oh * g.SH - g.PT, w = ow * g.SW - g.PL;
  return {std::max(h, 0), std::min(h + g.KH, g.H), std::max(w, 0), std::min(w + g.KW, g.W)};
}

// Position of the window's first maximum (first NaN if any).
void argmax(const Geometry& g, const Window& win, int n, int c, int* bh, int* bw) {
  double best = -INFINITY;
  *bh = win.h0, *bw = win.w0;
  bool first = true;
  for (int h = win.h0; h < win.h1; h++)
    for (int w = win.w0; w < win.w1; w++) {
      const double v = get(g.x, off(g.x, n, h, w, c));
      if (std::isnan(v)) {
        *bh = h, *bw = w;
        return;
      }
      if (first || v > best) best = v, *bh = h, *bw = w, first = false;
    }
}

// Zero dx, accumulate in double, store.
template <class F>
void scatter(const Geometry& g, F&& per_output) {
  std::vector<double> acc(static_cast<size_t>(g.N) * g.H * g.W * g.C, 0.0);
  auto at = [&](int n, int h, int w, int c) -> double& {
    return acc[((static_cast<size_t>(n) * g.H + h) * g.W + w) * g.C + c];
  };
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int c = 0; c < g.C; c++) per_output(n, oh, ow, c, at);
  for (int n = 0; n < g.N; n++)
    for (int h = 0; h < g.H; h++)
      for (int w = 0; w < g.W; w++)
        for (int c = 0; c < g.C; c++) put(g.x, off(g.x, n, h, w, c), at(n, h, w, c));
}

}  // namespace

NNC_KERNEL(max_forward_ref) {
  const Geometry g = geometry(cmd, hint, inputs[0], outputs[0], "MAX_POOL_FORWARD");
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int c = 0; c < g.C; c++) {
          int bh, bw;
          argmax(g, window(g, oh, ow), n, c, &bh, &bw);
          put(g.y, off(g.y, n, oh, ow, c), get(g.x, off(g.x, n, bh, bw, c)));
        }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(avg_forward_ref) {
  const Geometry g = geometry(cmd, hint, inputs[0], outputs[0], "AVERAGE_POOL_FORWARD");
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int c = 0; c < g.C; c++) {
          const Window win = window(g, oh, ow);
          double s = 0;
          for (int h = win.h0; h < win.h1; h++)
            for (int w = win.w0; w < win.w1; w++) s += get(g.x, off(g.x, n, h, w, c));
          put(g.y, off(g.y, n, oh, ow, c), s / win.count());
        }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(max_backward_ref) {
  // Geometry over x (for the maxima) and g; dx has x's shape (validated).
  Geometry g = geometry(cmd, hint, inputs[1], inputs[0], "MAX_POOL_BACKWARD");
  const Image dx = image_of(outputs[0]);
  std::vector<double> acc(static_cast<size_t>(g.N) * g.H * g.W * g.C, 0.0);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int c = 0; c < g.C; c++) {
          int bh, bw;
          argmax(g, window(g, oh, ow), n, c, &bh, &bw);
          acc[((static_cast<size_t>(n) * g.H + bh) * g.W + bw) * g.C + c] += get(g.y, off(g.y, n, oh, ow, c));
        }
  for (int n = 0; n < g.N; n++)
    for (int h = 0; h < g.H; h++)
      for (int w = 0; w < g.W; w++)
        for (int c = 0; c < g.C; c++) put(dx, off(dx, n, h, w, c), acc[((static_cast<size_t>(n) * g.H + h) * g.W + w) * g.C + c]);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(avg_backward_ref) {
  const Geometry g = geometry(cmd, hint, outputs[0], inputs[0], "AVERAGE_POOL_BACKWARD");
  scatter(g, [&](int n, int oh, int ow, int c, auto& at) {
    const Window win = window(g, oh, ow);
    const double v = get(g.y, off(g.y, n, oh, ow, c)) / win.count();
    for (int h = win.h0; h < win.h1; h++)
      for (int w = win.w0; w < win.w1; w++) at(n, h, w, c) += v;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::pool
