// CONVOLUTION on CPU_REF: the definition in convolution.cpp as loops, in
// double, over any strides, both formats and every float type.
#include <vector>

#include "cmd/convolution/convolution.hpp"
#include "core/tensor.hpp"

namespace nnc::conv {

namespace {

struct Access {
  unsigned char* data;
  int dt;
  size_t es;
  double get(int64_t off) const { return load_double(data + off * static_cast<int64_t>(es), dt); }
  void put(int64_t off, double v) const { store_double(data + off * static_cast<int64_t>(es), dt, v); }
};
Access access(unsigned char* data, int dt) { return {data, dt, datatype_size(dt)}; }

int64_t xoff(const Image& im, int n, int h, int w, int c) { return n * im.sn + h * im.sh + w * im.sw + c * im.sc; }
int64_t woff(const Weights& w, int k, int kh, int kw, int c) { return k * w.sk + kh * w.skh + kw * w.skw + c * w.sc; }

}  // namespace

NNC_KERNEL(forward_ref) {
  const Geometry g = geometry(cmd, hint, inputs[0], inputs[1], input_size > 2 ? inputs[2] : nullptr, outputs[0],
                              "CONVOLUTION_FORWARD");
  const Access x = access(g.x.data, g.datatype), w = access(g.w.data, g.datatype), y = access(g.y.data, g.datatype);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int k = 0; k < g.K; k++) {
          const int grp = k / g.Kg;
          double s = g.bias ? load_double(g.bias + k * g.bias_stride * static_cast<int64_t>(datatype_size(g.datatype)),
                                          g.datatype)
                            : 0.0;
          for (int kh = 0; kh < g.KH; kh++) {
            const int ih = oh * g.SH + kh * g.DH - g.PT;
            if (ih < 0 || ih >= g.H) continue;
            for (int kw = 0; kw < g.KW; kw++) {
              const int iw = ow * g.SW + kw * g.DW - g.PL;
              if (iw < 0 || iw >= g.W) continue;
              for (int c = 0; c < g.Cg; c++)
                s += x.get(xoff(g.x, n, ih, iw, grp * g.Cg + c)) * w.get(woff(g.w, k, kh, kw, c));
            }
          }
          y.put(xoff(g.y, n, oh, ow, k), s);
        }
  return CCV_NNC_EXEC_SUCCESS;
}

void bias_gradient_only(const ccv_nnc_tensor_t* gt, ccv_nnc_tensor_t* dbias) {
  const Image g = image_of(gt);
  const int dt = g.datatype;
  std::vector<double> db(static_cast<size_t>(g.c), 0.0);
  const Access a = access(g.data, dt);
  for (int n = 0; n < g.n; n++)
    for (int h = 0; h < g.h; h++)
      for (int w = 0; w < g.w; w++) {
        const int64_t o = n * g.sn + h * g.sh + w * g.sw;
        if (dt == CCV_32F) {
          const float* p = reinterpret_cast<const float*>(g.data) + o;
          for (int c = 0; c < g.c; c++) db[c] += p[c * g.sc];
        } else {
          for (int c = 0; c < g.c; c++) db[c] += a.get(o + c * g.sc);
        }
      }
  const Layout b = layout_of(dbias);
  int64_t stride = 1;
  for (int i = 0; i < b.nd; i++)
    if (b.dim[i] == g.c) stride = b.stride[i];
  const Access d = access(b.data, dt);
  for (int c = 0; c < g.c; c++) d.put(c * stride, db[c]);
}

NNC_KERNEL(backward_ref) {
  const BackwardIo io = backward_io(inputs, input_size, outputs, output_size);
  if (!io.dx && !io.dw) {
    bias_gradient_only(io.g, io.dbias);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Geometry g = geometry(cmd, hint, io.x, io.w, nullptr, io.g, "CONVOLUTION_BACKWARD");
  const Access x = access(g.x.data, g.datatype), w = access(g.w.data, g.datatype), gy = access(g.y.data, g.datatype);
  std::vector<double> dx(io.dx ? static_cast<size_t>(g.N) * g.H * g.W * g.C : 0);
  std::vector<double> dw(io.dw ? static_cast<size_t>(g.K) * g.KH * g.KW * g.Cg : 0);
  std::vector<double> db(io.dbias ? static_cast<size_t>(g.K) : 0);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++)
        for (int k = 0; k < g.K; k++) {
          const double gv = gy.get(xoff(g.y, n, oh, ow, k));
          if (io.dbias) db[k] += gv;
          if (!io.dx && !io.dw) continue;
          const int grp = k / g.Kg;
          for (int kh = 0; kh < g.KH; kh++) {
            const int ih = oh * g.SH + kh * g.DH - g.PT;
            if (ih < 0 || ih >= g.H) continue;
            for (int kw = 0; kw < g.KW; kw++) {
              const int iw = ow * g.SW + kw * g.DW - g.PL;
              if (iw < 0 || iw >= g.W) continue;
              for (int c = 0; c < g.Cg; c++) {
                const int ci = grp * g.Cg + c;
                if (io.dx)
                  dx[((static_cast<size_t>(n) * g.H + ih) * g.W + iw) * g.C + ci] +=
                      gv * w.get(woff(g.w, k, kh, kw, c));
                if (io.dw)
                  dw[((static_cast<size_t>(k) * g.KH + kh) * g.KW + kw) * g.Cg + c] +=
                      gv * x.get(xoff(g.x, n, ih, iw, ci));
              }
            }
          }
        }
  if (io.dx) {
    const Image d = image_of(io.dx);
    const Access a = access(d.data, g.datatype);
    for (int n = 0; n < g.N; n++)
      for (int h = 0; h < g.H; h++)
        for (int x0 = 0; x0 < g.W; x0++)
          for (int c = 0; c < g.C; c++)
            a.put(xoff(d, n, h, x0, c), dx[((static_cast<size_t>(n) * g.H + h) * g.W + x0) * g.C + c]);
  }
  if (io.dw) {
    const Weights d = weights_of(io.dw);
    const Access a = access(d.data, g.datatype);
    for (int k = 0; k < g.K; k++)
      for (int kh = 0; kh < g.KH; kh++)
        for (int kw = 0; kw < g.KW; kw++)
          for (int c = 0; c < g.Cg; c++)
            a.put(woff(d, k, kh, kw, c), dw[((static_cast<size_t>(k) * g.KH + kh) * g.KW + kw) * g.Cg + c]);
  }
  if (io.dbias) {
    const Layout b = layout_of(io.dbias);
    int64_t stride = 1;
    for (int i = 0; i < b.nd; i++)
      if (b.dim[i] == g.K) stride = b.stride[i];
    const Access a = access(b.data, g.datatype);
    for (int k = 0; k < g.K; k++) a.put(k * stride, db[k]);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::conv
