// CPU_REF kernels of ROI_ALIGN: one walk over every bin's samples, each
// sample handing its four pixels and weights to the forward (gather) or the
// backward (scatter); sums in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cmd/common/image.hpp"
#include "cmd/roi/roi_align.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::roi_align {

namespace {

// Samples per bin along one axis at most (a box far larger than the map).
constexpr double kMaxSamples = 1024;

struct Box {
  double x, y, w, h;
};

std::vector<Box> read_boxes(const ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t, "boxes");
  const int r = l.nd == 1 ? 1 : l.dim[0];
  const int64_t sr = l.nd == 1 ? 0 : l.stride[0], sk = l.stride[l.nd - 1];
  std::vector<Box> boxes(r);
  for (int k = 0; k < r; k++) {
    double v[4];
    for (int j = 0; j < 4; j++)
      v[j] = load_double(l.data + (k * sr + j * sk) * static_cast<int64_t>(l.element_size), l.datatype);
    NNC_CHECK(std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]) && std::isfinite(v[3]),
              "ROI_ALIGN: box %d is (%g, %g, %g, %g); its values must be finite", k, v[0], v[1], v[2], v[3]);
    boxes[k] = {v[0], v[1], v[2], v[3]};
  }
  return boxes;
}

// For bin (i, j) of a box on an h x w map: f(py, px, weight) for each pixel a
// sample touches, weights summing to at most 1 (samples outside read 0).
template <class F>
void for_each_tap(const Box& box, int h, int w, int rows, int cols, int i, int j, F&& f) {
  const double y0 = box.y * h, x0 = box.x * w;
  const double bh = std::max(box.h, 0.0) * h / rows, bw = std::max(box.w, 0.0) * w / cols;
  const int sy = static_cast<int>(std::clamp(std::ceil(bh), 1.0, kMaxSamples));
  const int sx = static_cast<int>(std::clamp(std::ceil(bw), 1.0, kMaxSamples));
  const double share = 1.0 / (static_cast<double>(sy) * sx);
  for (int iy = 0; iy < sy; iy++) {
    double y = y0 + i * bh + (iy + 0.5) * bh / sy - 0.5;
    if (y < -1 || y > h) continue;
    y = std::clamp(y, 0.0, static_cast<double>(h - 1));
    const int yl = static_cast<int>(std::floor(y)), yh = std::min(yl + 1, h - 1);
    const double ly = y - yl;
    for (int ix = 0; ix < sx; ix++) {
      double x = x0 + j * bw + (ix + 0.5) * bw / sx - 0.5;
      if (x < -1 || x > w) continue;
      x = std::clamp(x, 0.0, static_cast<double>(w - 1));
      const int xl = static_cast<int>(std::floor(x)), xh = std::min(xl + 1, w - 1);
      const double lx = x - xl;
      f(yl, xl, share * (1 - ly) * (1 - lx));
      f(yl, xh, share * (1 - ly) * lx);
      f(yh, xl, share * ly * (1 - lx));
      f(yh, xh, share * ly * lx);
    }
  }
}

unsigned char* pixel(const Image& im, int n, int y, int x, int c) {
  return im.data + (n * im.sn + y * im.sh + x * im.sw + c * im.sc) * static_cast<int64_t>(datatype_size(im.datatype));
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Image a = image_of(inputs[0]), b = image_of(outputs[0]);
  const std::vector<Box> boxes = read_boxes(inputs[1]);
  const int rows = b.h, cols = b.w, channels = a.c;
  std::vector<double> acc(channels);
  for (size_t k = 0; k < boxes.size(); k++) {
    const int n = a.n == 1 ? 0 : static_cast<int>(k);
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < cols; j++) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for_each_tap(boxes[k], a.h, a.w, rows, cols, i, j, [&](int y, int x, double wt) {
          for (int c = 0; c < channels; c++) acc[c] += wt * load_double(pixel(a, n, y, x, c), a.datatype);
        });
        for (int c = 0; c < channels; c++) store_double(pixel(b, static_cast<int>(k), i, j, c), b.datatype, acc[c]);
      }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Image g = image_of(inputs[0]), da = image_of(outputs[0]);
  const std::vector<Box> boxes = read_boxes(inputs[2]);
  const int rows = g.h, cols = g.w, channels = da.c;
  const size_t plane = static_cast<size_t>(da.h) * da.w * channels;
  std::vector<double> sum(static_cast<size_t>(da.n) * plane, 0.0);
  for (size_t k = 0; k < boxes.size(); k++) {
    const int n = da.n == 1 ? 0 : static_cast<int>(k);
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < cols; j++)
        for_each_tap(boxes[k], da.h, da.w, rows, cols, i, j, [&](int y, int x, double wt) {
          double* s = &sum[n * plane + (static_cast<size_t>(y) * da.w + x) * channels];
          for (int c = 0; c < channels; c++)
            s[c] += wt * load_double(pixel(g, static_cast<int>(k), i, j, c), g.datatype);
        });
  }
  for (int n = 0; n < da.n; n++)
    for (int y = 0; y < da.h; y++)
      for (int x = 0; x < da.w; x++)
        for (int c = 0; c < channels; c++)
          store_double(pixel(da, n, y, x, c), da.datatype, sum[n * plane + (static_cast<size_t>(y) * da.w + x) * channels + c]);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::roi_align
