// CONVOLUTION_TRANSPOSE on CPU_REF: the definition in convolution_transpose.cpp
// as loops, in double, over any strides, both formats and every float type.
#include <vector>

#include "cmd/convolution_transpose/convolution_transpose.hpp"
#include "core/tensor.hpp"

namespace nnc::convt {

namespace {

struct Access {
  unsigned char* data;
  int dt;
  int64_t es;
  double get(int64_t off) const { return load_double(data + off * es, dt); }
  void put(int64_t off, double v) const { store_double(data + off * es, dt, v); }
};
Access access(unsigned char* data, int dt) { return {data, dt, static_cast<int64_t>(datatype_size(dt))}; }

int64_t ioff(const Image& im, int n, int h, int w, int c) { return n * im.sn + h * im.sh + w * im.sw + c * im.sc; }
int64_t woff(const Weights& w, int c, int kh, int kw, int k) { return c * w.sc + kh * w.skh + kw * w.skw + k * w.sk; }

// Calls f(n, h, w, c, oh, ow, k, kh, kw, kk) for every product of the
// definition whose output pixel lies inside the cropped output.
template <class F>
void each_tap(const Geometry& g, const F& f) {
  for (int n = 0; n < g.N; n++)
    for (int h = 0; h < g.H; h++)
      for (int w = 0; w < g.W; w++)
        for (int kh = 0; kh < g.KH; kh++) {
          const int oh = h * g.SH + kh * g.DH - g.PT;
          if (oh < 0 || oh >= g.OH) continue;
          for (int kw = 0; kw < g.KW; kw++) {
            const int ow = w * g.SW + kw * g.DW - g.PL;
            if (ow < 0 || ow >= g.OW) continue;
            for (int c = 0; c < g.C; c++) {
              const int grp = c / g.Cg;
              for (int kk = 0; kk < g.Kg; kk++) f(n, h, w, c, oh, ow, grp * g.Kg + kk, kh, kw, kk);
            }
          }
        }
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Geometry g = geometry(cmd, hint, inputs[0], inputs[1], input_size > 2 ? inputs[2] : nullptr, outputs[0],
                              "CONVOLUTION_TRANSPOSE_FORWARD");
  const Access x = access(g.x.data, g.datatype), w = access(g.w.data, g.datatype), y = access(g.y.data, g.datatype);
  std::vector<double> acc(static_cast<size_t>(g.N) * g.OH * g.OW * g.K, 0.0);
  auto at = [&](int n, int oh, int ow, int k) -> double& {
    return acc[((static_cast<size_t>(n) * g.OH + oh) * g.OW + ow) * g.K + k];
  };
  each_tap(g, [&](int n, int h, int ww, int c, int oh, int ow, int k, int kh, int kw, int kk) {
    at(n, oh, ow, k) += x.get(ioff(g.x, n, h, ww, c)) * w.get(woff(g.w, c, kh, kw, kk));
  });
  const Access b = access(g.bias, g.datatype);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int k = 0; k < g.K; k++)
          y.put(ioff(g.y, n, oh, ow, k), at(n, oh, ow, k) + (g.bias ? b.get(k * g.bias_stride) : 0.0));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const BackwardIo io = backward_io(inputs, input_size, outputs, output_size);
  if (io.dbias) bias_gradient(io.g, io.dbias);
  if (!io.dx && !io.dw) return CCV_NNC_EXEC_SUCCESS;
  const Geometry g = geometry(cmd, hint, io.x, io.w, nullptr, io.g, "CONVOLUTION_TRANSPOSE_BACKWARD");
  const Access x = access(g.x.data, g.datatype), w = access(g.w.data, g.datatype), gy = access(g.y.data, g.datatype);
  std::vector<double> dx(io.dx ? static_cast<size_t>(g.N) * g.H * g.W * g.C : 0);
  std::vector<double> dw(io.dw ? static_cast<size_t>(g.C) * g.KH * g.KW * g.Kg : 0);
  each_tap(g, [&](int n, int h, int ww, int c, int oh, int ow, int k, int kh, int kw, int kk) {
    const double gv = gy.get(ioff(g.y, n, oh, ow, k));
    if (io.dx) dx[((static_cast<size_t>(n) * g.H + h) * g.W + ww) * g.C + c] += gv * w.get(woff(g.w, c, kh, kw, kk));
    if (io.dw) dw[((static_cast<size_t>(c) * g.KH + kh) * g.KW + kw) * g.Kg + kk] += gv * x.get(ioff(g.x, n, h, ww, c));
  });
  if (io.dx) {
    const Image d = image_of(io.dx);
    const Access a = access(d.data, g.datatype);
    for (int n = 0; n < g.N; n++)
      for (int h = 0; h < g.H; h++)
        for (int ww = 0; ww < g.W; ww++)
          for (int c = 0; c < g.C; c++)
            a.put(ioff(d, n, h, ww, c), dx[((static_cast<size_t>(n) * g.H + h) * g.W + ww) * g.C + c]);
  }
  if (io.dw) {
    const Weights d = weights_of(io.dw);
    const Access a = access(d.data, g.datatype);
    for (int c = 0; c < g.C; c++)
      for (int kh = 0; kh < g.KH; kh++)
        for (int kw = 0; kw < g.KW; kw++)
          for (int kk = 0; kk < g.Kg; kk++)
            a.put(woff(d, c, kh, kw, kk), dw[((static_cast<size_t>(c) * g.KH + kh) * g.KW + kw) * g.Kg + kk]);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::convt
