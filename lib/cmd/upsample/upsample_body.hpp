// The UPSAMPLE loops on packed B x H x W x C tensors, written once and
// compiled per instruction set: cpu_opt.cpp (generic), cpu_opt_avx2.cpp and
// cpu_opt_avx512.cpp include this inside their own namespace, so that each
// gets its own copies. Plain loops that the compiler vectorises across C
// (NHWC); with C = 1 (NCHW planes) they gather along the row. No std::
// algorithms here: their instantiations would be shared between the files.

namespace {

template <class T>
void forward_impl(const Tables<T>& t, const T* x, T* y, size_t r0, size_t r1) {
  const size_t C = t.C, row = static_cast<size_t>(t.W) * C, orow = static_cast<size_t>(t.OW) * C;
  for (size_t r = r0; r < r1; r++) {
    const size_t b = r / static_cast<size_t>(t.OH), oy = r % static_cast<size_t>(t.OH);
    const T* a0 = x + (b * static_cast<size_t>(t.H) + static_cast<size_t>(t.h0[oy])) * row;
    T* out = y + r * orow;
    if (t.nearest) {
      for (int ox = 0; ox < t.OW; ox++) {
        const T* s = a0 + static_cast<size_t>(t.w0[ox]) * C;
        T* o = out + static_cast<size_t>(ox) * C;
        for (size_t c = 0; c < C; c++) o[c] = s[c];
      }
      continue;
    }
    const T* a1 = x + (b * static_cast<size_t>(t.H) + static_cast<size_t>(t.h1[oy])) * row;
    const T ly = t.hl[oy], my = T(1) - ly;
    if (C == 1) {
      for (int ox = 0; ox < t.OW; ox++) {
        const int i0 = t.w0[ox], i1 = t.w1[ox];
        const T lx = t.wl[ox], mx = T(1) - lx;
        out[ox] = my * (mx * a0[i0] + lx * a0[i1]) + ly * (mx * a1[i0] + lx * a1[i1]);
      }
      continue;
    }
    for (int ox = 0; ox < t.OW; ox++) {
      const size_t i0 = static_cast<size_t>(t.w0[ox]) * C, i1 = static_cast<size_t>(t.w1[ox]) * C;
      const T lx = t.wl[ox], mx = T(1) - lx;
      const T w00 = my * mx, w01 = my * lx, w10 = ly * mx, w11 = ly * lx;
      const T *p00 = a0 + i0, *p01 = a0 + i1, *p10 = a1 + i0, *p11 = a1 + i1;
      T* o = out + static_cast<size_t>(ox) * C;
      for (size_t c = 0; c < C; c++) o[c] = w00 * p00[c] + w01 * p01[c] + w10 * p10[c] + w11 * p11[c];
    }
  }
}

// Each input row gathers the output rows that read it, so rows never share a
// write and split over threads freely.
template <class T>
void backward_impl(const Tables<T>& t, const T* g, T* dx, size_t r0, size_t r1) {
  const size_t C = t.C, row = static_cast<size_t>(t.W) * C, orow = static_cast<size_t>(t.OW) * C;
  for (size_t r = r0; r < r1; r++) {
    const size_t b = r / static_cast<size_t>(t.H);
    const int iy = static_cast<int>(r % static_cast<size_t>(t.H));
    T* d = dx + r * row;
    for (size_t i = 0; i < row; i++) d[i] = T(0);
    for (int oy = t.lo[iy]; oy < t.hi[iy]; oy++) {
      T wy = T(0);
      if (t.h0[oy] == iy) wy += t.nearest ? T(1) : T(1) - t.hl[oy];
      if (!t.nearest && t.h1[oy] == iy) wy += t.hl[oy];
      if (wy == T(0)) continue;
      const T* gr = g + (b * static_cast<size_t>(t.OH) + static_cast<size_t>(oy)) * orow;
      if (C == 1) {
        if (t.nearest) {
          for (int ox = 0; ox < t.OW; ox++) d[t.w0[ox]] += wy * gr[ox];
        } else {
          for (int ox = 0; ox < t.OW; ox++) {
            const T v = wy * gr[ox];
            d[t.w0[ox]] += v - v * t.wl[ox];
            d[t.w1[ox]] += v * t.wl[ox];
          }
        }
        continue;
      }
      for (int ox = 0; ox < t.OW; ox++) {
        const T* s = gr + static_cast<size_t>(ox) * C;
        T* d0 = d + static_cast<size_t>(t.w0[ox]) * C;
        const T lx = t.nearest ? T(0) : t.wl[ox], w0 = wy * (T(1) - lx), w1 = wy * lx;
        for (size_t c = 0; c < C; c++) d0[c] += w0 * s[c];
        if (w1 != T(0)) {
          T* d1 = d + static_cast<size_t>(t.w1[ox]) * C;
          for (size_t c = 0; c < C; c++) d1[c] += w1 * s[c];
        }
      }
    }
  }
}

}  // namespace

void forward_rows(const Tables<float>& t, const float* x, float* y, size_t r0, size_t r1) {
  forward_impl(t, x, y, r0, r1);
}
void forward_rows(const Tables<double>& t, const double* x, double* y, size_t r0, size_t r1) {
  forward_impl(t, x, y, r0, r1);
}
void backward_rows(const Tables<float>& t, const float* g, float* dx, size_t r0, size_t r1) {
  backward_impl(t, g, dx, r0, r1);
}
void backward_rows(const Tables<double>& t, const double* g, double* dx, size_t r0, size_t r1) {
  backward_impl(t, g, dx, r0, r1);
}
