// MAX_POOL and AVERAGE_POOL on CPU_OPT (fp32, NHWC and NCHW, any strides).
//
// NHWC (channels unit-stride): loops across the channels of a pixel, which
// the compiler vectorises, threaded over output rows (forward) or images
// (backward: neighbouring windows may share input pixels, and an image is
// never split, so no two threads add into one element). NCHW: one plane
// (image, channel) at a time, threaded over planes. Max-pool backward is
// branch-free: a first pass finds each window's maximum m (the NaN rule of
// pool.cpp included), a second walks the window in row-major order and hands
// g to the first element equal to m, so ties and NaNs follow CPU_REF exactly.
// Small problems run on the calling thread.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cmd/pool/pool.hpp"
#include "core/parallel.hpp"

namespace nnc::pool {

namespace {

constexpr size_t kThreadedFrom = 1 << 16;  // output elements (times the window)

template <class F>
void parallel(size_t n, bool threaded, const F& f) {
  if (n == 0) return;
  if (!threaded) {
    f(size_t{0}, n);
    return;
  }
  const F* p = &f;
  parallel_for(n, 1, [p](size_t b, size_t e) { (*p)(b, e); });
}

bool threaded(const Geometry& g) {
  return static_cast<size_t>(g.N) * g.OH * g.OW * g.C * g.KH * g.KW >= kThreadedFrom;
}

struct Window {
  int h0, h1, w0, w1;
};
Window window(const Geometry& g, int oh, int ow) {
  const int h = oh * g.SH - g.PT, w = ow * g.SW - g.PL;
  return {std::max(h, 0), std::min(h + g.KH, g.H), std::max(w, 0), std::min(w + g.KW, g.W)};
}

float* fp(const Image& im) { return reinterpret_cast<float*>(im.data); }

// The larger of best and v by pool.cpp's rule: a NaN wins over numbers and stays.
inline float take_max(float best, float v) { return (v > best || v != v) && best == best ? v : best; }

constexpr int kChunk = 64;  // channels handled at once on the stack

// ---- NHWC ----

void max_forward_nhwc(const Geometry& g) {
  const Image x = g.x, y = g.y;
  parallel(static_cast<size_t>(g.N) * g.OH, threaded(g), [&](size_t b, size_t e) {
    for (size_t item = b; item < e; item++) {
      const int n = static_cast<int>(item / g.OH), oh = static_cast<int>(item % g.OH);
      for (int ow = 0; ow < g.OW; ow++) {
        const Window win = window(g, oh, ow);
        float* out = fp(y) + n * y.sn + oh * y.sh + ow * y.sw;
        const float* first = fp(x) + n * x.sn + win.h0 * x.sh + win.w0 * x.sw;
        std::memcpy(out, first, sizeof(float) * g.C);
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) {
            const float* in = fp(x) + n * x.sn + h * x.sh + w * x.sw;
            for (int c = 0; c < g.C; c++) out[c] = take_max(out[c], in[c]);
          }
      }
    }
  });
}

void avg_forward_nhwc(const Geometry& g) {
  const Image x = g.x, y = g.y;
  parallel(static_cast<size_t>(g.N) * g.OH, threaded(g), [&](size_t b, size_t e) {
    for (size_t item = b; item < e; item++) {
      const int n = static_cast<int>(item / g.OH), oh = static_cast<int>(item % g.OH);
      for (int ow = 0; ow < g.OW; ow++) {
        const Window win = window(g, oh, ow);
        float* out = fp(y) + n * y.sn + oh * y.sh + ow * y.sw;
        std::memset(out, 0, sizeof(float) * g.C);
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) {
            const float* in = fp(x) + n * x.sn + h * x.sh + w * x.sw;
            for (int c = 0; c < g.C; c++) out[c] += in[c];
          }
        const float inv = 1.f / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
        for (int c = 0; c < g.C; c++) out[c] *= inv;
      }
    }
  });
}

// Zero image n of dx (NHWC, channels unit-stride).
void zero_image(const Image& dx, int n) {
  for (int h = 0; h < dx.h; h++)
    for (int w = 0; w < dx.w; w++) std::memset(fp(dx) + n * dx.sn + h * dx.sh + w * dx.sw, 0, sizeof(float) * dx.c);
}

void max_backward_nhwc(const Geometry& g, const Image& dx) {
  // g.x: x; g.y: the gradient g.
  const Image x = g.x, gy = g.y;
  parallel(static_cast<size_t>(g.N), threaded(g), [&](size_t b, size_t e) {
    for (size_t nn = b; nn < e; nn++) {
      const int n = static_cast<int>(nn);
      zero_image(dx, n);
      for (int oh = 0; oh < g.OH; oh++)
        for (int ow = 0; ow < g.OW; ow++) {
          const Window win = window(g, oh, ow);
          const float* grad = fp(gy) + n * gy.sn + oh * gy.sh + ow * gy.sw;
          for (int c0 = 0; c0 < g.C; c0 += kChunk) {
            const int cn = std::min(kChunk, g.C - c0);
            float m[kChunk], left[kChunk];
            std::memcpy(m, fp(x) + n * x.sn + win.h0 * x.sh + win.w0 * x.sw + c0, sizeof(float) * cn);
            for (int h = win.h0; h < win.h1; h++)
              for (int w = win.w0; w < win.w1; w++) {
                const float* in = fp(x) + n * x.sn + h * x.sh + w * x.sw + c0;
                for (int c = 0; c < cn; c++) m[c] = take_max(m[c], in[c]);
              }
            std::memcpy(left, grad + c0, sizeof(float) * cn);
            for (int h = win.h0; h < win.h1; h++)
              for (int w = win.w0; w < win.w1; w++) {
                const float* in = fp(x) + n * x.sn + h * x.sh + w * x.sw + c0;
                float* out = fp(dx) + n * dx.sn + h * dx.sh + w * dx.sw + c0;
                for (int c = 0; c < cn; c++) {
                  const bool hit = in[c] == m[c] || (in[c] != in[c] && m[c] != m[c]);
                  out[c] += hit ? left[c] : 0.f;
                  left[c] = hit ? 0.f : left[c];
                }
              }
          }
        }
    }
  });
}

void avg_backward_nhwc(const Geometry& g) {
  // g.x: dx; g.y: the gradient g.
  const Image dx = g.x, gy = g.y;
  parallel(static_cast<size_t>(g.N), threaded(g), [&](size_t b, size_t e) {
    for (size_t nn = b; nn < e; nn++) {
      const int n = static_cast<int>(nn);
      zero_image(dx, n);
      for (int oh = 0; oh < g.OH; oh++)
        for (int ow = 0; ow < g.OW; ow++) {
          const Window win = window(g, oh, ow);
          const float inv = 1.f / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
          const float* grad = fp(gy) + n * gy.sn + oh * gy.sh + ow * gy.sw;
          for (int h = win.h0; h < win.h1; h++)
            for (int w = win.w0; w < win.w1; w++) {
              float* out = fp(dx) + n * dx.sn + h * dx.sh + w * dx.sw;
              for (int c = 0; c < g.C; c++) out[c] += grad[c] * inv;
            }
        }
    }
  });
}

// ---- NCHW and other strides: plane by plane ----

template <class F>
void planes(const Geometry& g, const F& f) {
  parallel(static_cast<size_t>(g.N) * g.C, threaded(g), [&](size_t b, size_t e) {
    for (size_t item = b; item < e; item++) f(static_cast<int>(item / g.C), static_cast<int>(item % g.C));
  });
}

void forward_planes(const Geometry& g, bool max) {
  const Image x = g.x, y = g.y;
  planes(g, [&](int n, int c) {
    const float* in = fp(x) + n * x.sn + c * x.sc;
    float* out = fp(y) + n * y.sn + c * y.sc;
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++) {
        const Window win = window(g, oh, ow);
        float v = max ? in[win.h0 * x.sh + win.w0 * x.sw] : 0.f;
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) {
            const float u = in[h * x.sh + w * x.sw];
            v = max ? take_max(v, u) : v + u;
          }
        if (!max) v /= static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
        out[oh * y.sh + ow * y.sw] = v;
      }
  });
}

void backward_planes(const Geometry& g, const Image& x, const Image& dx, bool max) {
  const Image gy = g.y;
  planes(g, [&](int n, int c) {
    float* out = fp(dx) + n * dx.sn + c * dx.sc;
    for (int h = 0; h < g.H; h++)
      for (int w = 0; w < g.W; w++) out[h * dx.sh + w * dx.sw] = 0.f;
    const float* in = max ? fp(x) + n * x.sn + c * x.sc : nullptr;
    const float* grad = fp(gy) + n * gy.sn + c * gy.sc;
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++) {
        const Window win = window(g, oh, ow);
        const float gv = grad[oh * gy.sh + ow * gy.sw];
        if (!max) {
          const float v = gv / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
          for (int h = win.h0; h < win.h1; h++)
            for (int w = win.w0; w < win.w1; w++) out[h * dx.sh + w * dx.sw] += v;
          continue;
        }
        int bh = win.h0, bw = win.w0;
        float best = in[bh * x.sh + bw * x.sw];
        for (int h = win.h0; h < win.h1 && best == best; h++)
          for (int w = win.w0; w < win.w1; w++) {
            const float u = in[h * x.sh + w * x.sw];
            if (u > best || u != u) {
              best = u, bh = h, bw = w;
              if (u != u) break;
            }
          }
        out[bh * dx.sh + bw * dx.sw] += gv;
      }
  });
}

bool nhwc_path(const Image& a, const Image& b) { return a.sc == 1 && b.sc == 1; }

NNC_POOL_KERNEL(max_forward_opt) {
  (void)flags, (void)stream_context, (void)input_size, (void)output_size;
  const Geometry g = geometry(cmd, hint, inputs[0], outputs[0], "MAX_POOL_FORWARD");
  if (nhwc_path(g.x, g.y))
    max_forward_nhwc(g);
  else
    forward_planes(g, true);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_POOL_KERNEL(avg_forward_opt) {
  (void)flags, (void)stream_context, (void)input_size, (void)output_size;
  const Geometry g = geometry(cmd, hint, inputs[0], outputs[0], "AVERAGE_POOL_FORWARD");
  if (nhwc_path(g.x, g.y))
    avg_forward_nhwc(g);
  else
    forward_planes(g, false);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_POOL_KERNEL(max_backward_opt) {
  (void)flags, (void)stream_context, (void)input_size, (void)output_size;
  const Geometry g = geometry(cmd, hint, inputs[1], inputs[0], "MAX_POOL_BACKWARD");
  const Image dx = conv::image_of(outputs[0]);
  if (nhwc_path(g.x, g.y) && dx.sc == 1)
    max_backward_nhwc(g, dx);
  else
    backward_planes(g, g.x, dx, true);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_POOL_KERNEL(avg_backward_opt) {
  (void)flags, (void)stream_context, (void)input_size, (void)output_size;
  const Geometry g = geometry(cmd, hint, outputs[0], inputs[0], "AVERAGE_POOL_BACKWARD");
  if (nhwc_path(g.x, g.y))
    avg_backward_nhwc(g);
  else
    backward_planes(g, g.x, g.x, false);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_opt(Registry& r) {
  for (const auto& [id, exec] : {std::pair{CCV_NNC_MAX_POOL_FORWARD, &max_forward_opt},
                                 std::pair{CCV_NNC_MAX_POOL_BACKWARD, &max_backward_opt},
                                 std::pair{CCV_NNC_AVERAGE_POOL_FORWARD, &avg_forward_opt},
                                 std::pair{CCV_NNC_AVERAGE_POOL_BACKWARD, &avg_backward_opt}}) {
    Kernel k;
    k.cmd = id;
    k.backend = CCV_NNC_BACKEND_CPU_OPT;
    k.tensor_formats = CCV_TENSOR_FORMAT_NHWC | CCV_TENSOR_FORMAT_NCHW;
    k.tensor_datatypes = CCV_32F;
    k.tensor_memory = CCV_TENSOR_CPU_MEMORY;
    k.exec = exec;
    r.add_kernel(k);
  }
}

}  // namespace nnc::pool
