// The UPSAMPLE loops on packed B x H x W x C tensors, written once and
// compiled per instruction set: cpu_opt.cpp (generic), cpu_opt_avx2.cpp and
// cpu_opt_avx512.cpp include this inside their own namespace, so that each
// gets its own copies. No std:: algorithms here: their instantiations would
// be shared between the files.
//
// Both directions are separable: a vertical pass over whole rows (contiguous,
// vectorised) into a scratch row, then a horizontal pass along it (across C
// when C > 1, a gather when C = 1). The forward copies an output row whose
// taps equal the previous row's (every other row of a 2x nearest upsample);
// the backward gives each input row the output rows and columns that read it,
// so rows never share a write and split over threads freely.

namespace {

template <class T>
void copy_row(const T* s, T* d, size_t n) {
  __builtin_memcpy(d, s, n * sizeof(T));
}

template <class T>
void forward_impl(const Tables<T>& t, const T* x, T* y, size_t r0, size_t r1, T* tmp) {
  const size_t C = t.C, row = static_cast<size_t>(t.W) * C, orow = static_cast<size_t>(t.OW) * C;
  const size_t OH = static_cast<size_t>(t.OH);
  for (size_t r = r0; r < r1; r++) {
    const size_t b = r / OH, oy = r % OH;
    T* out = y + r * orow;
    if (r > r0 && oy > 0 && t.h0[oy] == t.h0[oy - 1] && t.h1[oy] == t.h1[oy - 1] && t.hl[oy] == t.hl[oy - 1]) {
      copy_row(out - orow, out, orow);
      continue;
    }
    const T* a0 = x + (b * static_cast<size_t>(t.H) + static_cast<size_t>(t.h0[oy])) * row;
    const T ly = t.hl[oy];
    const T* v = a0;  // the vertically blended input row
    if (ly != T(0)) {
      const T* a1 = x + (b * static_cast<size_t>(t.H) + static_cast<size_t>(t.h1[oy])) * row;
      const T my = T(1) - ly;
      for (size_t i = 0; i < row; i++) tmp[i] = my * a0[i] + ly * a1[i];
      v = tmp;
    }
    if (C == 1) {
      if (t.nearest) {
        for (int ox = 0; ox < t.OW; ox++) out[ox] = v[t.w0[ox]];
      } else if (t.half_pixel_2x) {
        // Exactly 2x with half-pixel centres: output 2j blends v[j - 1] and v[j]
        // 1 : 3, output 2j + 1 v[j] and v[j + 1] 3 : 1 (the edges clamp);
        // the taps' own rule, in a loop without gathers.
        const int W = t.W;
        out[0] = v[0];
        for (int j = 1; j < W; j++) out[2 * j] = T(0.25) * v[j - 1] + T(0.75) * v[j];
        for (int j = 0; j + 1 < W; j++) out[2 * j + 1] = T(0.75) * v[j] + T(0.25) * v[j + 1];
        out[2 * W - 1] = v[W - 1];
      } else {
        for (int ox = 0; ox < t.OW; ox++) {
          const T lx = t.wl[ox];
          out[ox] = v[t.w0[ox]] + lx * (v[t.w1[ox]] - v[t.w0[ox]]);
        }
      }
      continue;
    }
    for (int ox = 0; ox < t.OW; ox++) {
      const T* p0 = v + static_cast<size_t>(t.w0[ox]) * C;
      T* o = out + static_cast<size_t>(ox) * C;
      const T lx = t.wl[ox];
      if (lx == T(0)) {
        for (size_t c = 0; c < C; c++) o[c] = p0[c];
      } else {
        const T* p1 = v + static_cast<size_t>(t.w1[ox]) * C;
        const T mx = T(1) - lx;
        for (size_t c = 0; c < C; c++) o[c] = mx * p0[c] + lx * p1[c];
      }
    }
  }
}

template <class T>
void backward_impl(const Tables<T>& t, const T* g, T* dx, size_t r0, size_t r1, T* tmp) {
  const size_t C = t.C, row = static_cast<size_t>(t.W) * C, orow = static_cast<size_t>(t.OW) * C;
  for (size_t r = r0; r < r1; r++) {
    const size_t b = r / static_cast<size_t>(t.H);
    const int iy = static_cast<int>(r % static_cast<size_t>(t.H));
    T* d = dx + r * row;
    if (t.nearest_2x && C > 1) {
      // Nearest 2x across channels: each input pixel is the (weighted) sum
      // of the output pixel pairs 2j, 2j + 1 of the rows that read it, added
      // straight into dx (no row buffer, one pass over each output row).
      bool started = false;
      for (int oy = t.lo[iy]; oy < t.hi[iy]; oy++) {
        T wy = T(0);
        if (t.h0[oy] == iy) wy += T(1) - t.hl[oy];
        if (t.h1[oy] == iy && t.h1[oy] != t.h0[oy]) wy += t.hl[oy];
        if (wy == T(0)) continue;
        const T* gr = g + (b * static_cast<size_t>(t.OH) + static_cast<size_t>(oy)) * orow;
        for (int j = 0; j < t.W; j++) {
          const T* a = gr + static_cast<size_t>(2 * j) * C;
          const T* e = a + C;
          T* dj = d + static_cast<size_t>(j) * C;
          if (!started)
            for (size_t c = 0; c < C; c++) dj[c] = wy * (a[c] + e[c]);
          else
            for (size_t c = 0; c < C; c++) dj[c] += wy * (a[c] + e[c]);
        }
        started = true;
      }
      if (!started)
        for (size_t i = 0; i < row; i++) d[i] = T(0);
      continue;
    }
    // Vertical: the weighted sum of the output rows that read this row.
    bool first = true;
    for (int oy = t.lo[iy]; oy < t.hi[iy]; oy++) {
      T wy = T(0);
      if (t.h0[oy] == iy) wy += T(1) - t.hl[oy];
      if (t.h1[oy] == iy && t.h1[oy] != t.h0[oy]) wy += t.hl[oy];
      if (wy == T(0)) continue;
      const T* gr = g + (b * static_cast<size_t>(t.OH) + static_cast<size_t>(oy)) * orow;
      if (first)
        for (size_t i = 0; i < orow; i++) tmp[i] = wy * gr[i];
      else
        for (size_t i = 0; i < orow; i++) tmp[i] += wy * gr[i];
      first = false;
    }
    if (first) {  // no output row reads it (a downsample)
      for (size_t i = 0; i < row; i++) d[i] = T(0);
      continue;
    }
    // Horizontal. One channel: nearest sums the run of output columns that
    // read each input column; bilinear scatters along the row (no branches).
    if (C == 1) {
      if (t.nearest_2x) {  // each input column read by the output pair 2j, 2j + 1
        for (int j = 0; j < t.W; j++) d[j] = tmp[2 * j] + tmp[2 * j + 1];
      } else if (t.nearest) {
        for (int j = 0; j < t.W; j++) {
          T s = T(0);
          for (int ox = t.wlo[j]; ox < t.whi[j]; ox++) s += tmp[ox];
          d[j] = s;
        }
      } else {
        for (int j = 0; j < t.W; j++) d[j] = T(0);
        for (int ox = 0; ox < t.OW; ox++) {
          const T v = tmp[ox], l = t.wl[ox];
          d[t.w0[ox]] += v - l * v;
          d[t.w1[ox]] += l * v;
        }
      }
      continue;
    }
    // Across channels: each input column gathers the output columns that read it.
    for (int j = 0; j < t.W; j++) {
      T* dj = d + static_cast<size_t>(j) * C;
      for (size_t c = 0; c < C; c++) dj[c] = T(0);
      for (int ox = t.wlo[j]; ox < t.whi[j]; ox++) {
        T w = T(0);
        if (t.w0[ox] == j) w += T(1) - t.wl[ox];
        if (t.w1[ox] == j && t.w1[ox] != t.w0[ox]) w += t.wl[ox];
        const T* s = tmp + static_cast<size_t>(ox) * C;
        for (size_t c = 0; c < C; c++) dj[c] += w * s[c];
      }
    }
  }
}

}  // namespace

void forward_rows(const Tables<float>& t, const float* x, float* y, size_t r0, size_t r1, float* row) {
  forward_impl(t, x, y, r0, r1, row);
}
void forward_rows(const Tables<double>& t, const double* x, double* y, size_t r0, size_t r1, double* row) {
  forward_impl(t, x, y, r0, r1, row);
}
void backward_rows(const Tables<float>& t, const float* g, float* dx, size_t r0, size_t r1, float* row) {
  backward_impl(t, g, dx, r0, r1, row);
}
void backward_rows(const Tables<double>& t, const double* g, double* dx, size_t r0, size_t r1, double* row) {
  backward_impl(t, g, dx, r0, r1, row);
}
