// MAX_POOL and AVERAGE_POOL on CPU_OPT, AVX2 part: the loops over one task of
// an fp32 problem (see cpu_opt.cpp for the split and the rules).
//
// Channels-inner path (x and y with unit-stride channels, i.e. NHWC): eight
// channels per vector, the window walked in row-major order; the max keeps
// the first maximum and the first NaN exactly as pool.cpp defines it (an
// element replaces the best only if it is greater, or if it is a NaN and the
// best is not), so forward values and backward routing equal CPU_REF's.
// Plane path (any strides, NCHW above all): one (n, c) plane at a time,
// scalar over the window, with a vectorised case for 2x2 windows of stride 2
// along unit-stride rows, the common CNN downsampling.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cmd/pool/pool_opt.hpp"

namespace nnc::pool::opt {

namespace {

struct Win {
  int h0, h1, w0, w1;
};
inline Win window(const Geometry& g, int oh, int ow) {
  const int h = oh * g.SH - g.PT, w = ow * g.SW - g.PL;
  return {std::max(h, 0), std::min(h + g.KH, g.H), std::max(w, 0), std::min(w + g.KW, g.W)};
}

inline float* fp(const Image& im) { return reinterpret_cast<float*>(im.data); }

// best <- v where v > best, or v is NaN and best is not: where best is not
// NaN and !(v <= best) (an unordered compare is true for a NaN v).
inline __m256 take_mask(__m256 v, __m256 best) {
  return _mm256_andnot_ps(_mm256_cmp_ps(best, best, _CMP_UNORD_Q), _mm256_cmp_ps(v, best, _CMP_NLE_UQ));
}
inline bool take(float v, float best) { return v > best || (std::isnan(v) && !std::isnan(best)); }

// ---- channels-inner (NHWC) ----

void max_fwd_nhwc(const Geometry& g, int n, int oh) {
  const Image &x = g.x, &y = g.y;
  const float* xb = fp(x) + n * x.sn;
  float* yrow = fp(y) + n * y.sn + oh * y.sh;
  for (int ow = 0; ow < g.OW; ow++) {
    const Win win = window(g, oh, ow);
    const float* first = xb + win.h0 * x.sh + win.w0 * x.sw;
    float* out = yrow + ow * y.sw;
    int c = 0;
    for (; c + 8 <= g.C; c += 8) {
      __m256 best = _mm256_loadu_ps(first + c);
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) {
          const __m256 v = _mm256_loadu_ps(xb + h * x.sh + w * x.sw + c);
          best = _mm256_blendv_ps(best, v, take_mask(v, best));
        }
      _mm256_storeu_ps(out + c, best);
    }
    for (; c < g.C; c++) {
      float best = first[c];
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) {
          const float v = xb[h * x.sh + w * x.sw + c];
          if (take(v, best)) best = v;
        }
      out[c] = best;
    }
  }
}

void avg_fwd_nhwc(const Geometry& g, int n, int oh) {
  const Image &x = g.x, &y = g.y;
  const float* xb = fp(x) + n * x.sn;
  float* yrow = fp(y) + n * y.sn + oh * y.sh;
  for (int ow = 0; ow < g.OW; ow++) {
    const Win win = window(g, oh, ow);
    const float inv = 1.0f / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
    float* out = yrow + ow * y.sw;
    int c = 0;
    for (; c + 8 <= g.C; c += 8) {
      __m256 s = _mm256_setzero_ps();
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) s = _mm256_add_ps(s, _mm256_loadu_ps(xb + h * x.sh + w * x.sw + c));
      _mm256_storeu_ps(out + c, _mm256_mul_ps(s, _mm256_set1_ps(inv)));
    }
    for (; c < g.C; c++) {
      float s = 0;
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) s += xb[h * x.sh + w * x.sw + c];
      out[c] = s * inv;
    }
  }
}

// dx[n, :, :, c0:c1] = 0 (dx shares x's geometry: dx is an Image like x).
void zero_nhwc(const Image& dx, int n, int c0, int c1) {
  float* b = fp(dx) + n * dx.sn;
  for (int h = 0; h < dx.h; h++)
    for (int w = 0; w < dx.w; w++) std::memset(b + h * dx.sh + w * dx.sw + c0, 0, sizeof(float) * (c1 - c0));
}

// 2x2 windows of stride 2 tiling the image (the common downsampling): per
// window the one-hot of its first maximum from three compares, and the four
// dx elements stored (g where chosen, else 0); no window-position bookkeeping.
// c1 - c0 is a multiple of 8 (max_bwd_nhwc does the channels past it).
void max_bwd_nhwc_2x2(const Geometry& g, const Image& dx, int n, int c0, int c1) {
  const Image &x = g.x, &gy = g.y;
  const float* xb = fp(x) + n * x.sn;
  float* db = fp(dx) + n * dx.sn;
  const float* gb = fp(gy) + n * gy.sn;
  for (int oh = 0; oh < g.OH; oh++) {
    const float* r0 = xb + 2 * oh * x.sh;
    float* d0 = db + 2 * oh * dx.sh;
    for (int ow = 0; ow < g.OW; ow++) {
      const float *p0 = r0 + 2 * ow * x.sw, *p1 = p0 + x.sw, *p2 = p0 + x.sh, *p3 = p2 + x.sw;
      float *q0 = d0 + 2 * ow * dx.sw, *q1 = q0 + dx.sw, *q2 = q0 + dx.sh, *q3 = q2 + dx.sw;
      const float* gp = gb + oh * gy.sh + ow * gy.sw;
      for (int c = c0; c < c1; c += 8) {
        const __m256 e0 = _mm256_loadu_ps(p0 + c), e1 = _mm256_loadu_ps(p1 + c);
        const __m256 e2 = _mm256_loadu_ps(p2 + c), e3 = _mm256_loadu_ps(p3 + c);
        const __m256 s1 = take_mask(e1, e0);
        __m256 best = _mm256_blendv_ps(e0, e1, s1);
        const __m256 s2 = take_mask(e2, best);
        best = _mm256_blendv_ps(best, e2, s2);
        const __m256 s3 = take_mask(e3, best);
        // One-hot: the last element taken is the window's first maximum.
        const __m256 gv = _mm256_loadu_ps(gp + c);
        const __m256 g3 = _mm256_and_ps(s3, gv), rest3 = _mm256_andnot_ps(s3, gv);
        const __m256 g2 = _mm256_and_ps(s2, rest3), rest2 = _mm256_andnot_ps(s2, rest3);
        const __m256 g1 = _mm256_and_ps(s1, rest2);
        _mm256_storeu_ps(q0 + c, _mm256_andnot_ps(s1, rest2));
        _mm256_storeu_ps(q1 + c, g1);
        _mm256_storeu_ps(q2 + c, g2);
        _mm256_storeu_ps(q3 + c, g3);
      }
    }
  }
}

// Each window: the position of its first maximum per lane, then one masked
// add (or store, when windows tile) per window element.
void max_bwd_nhwc(const Geometry& g, const Image& dx, int n, int c0, int c1) {
  const bool tile = tiles(g);
  if (tile && g.KH == 2 && g.KW == 2 && (c1 - c0) >= 8) {
    const int whole = c0 + (c1 - c0) / 8 * 8;
    max_bwd_nhwc_2x2(g, dx, n, c0, whole);
    if (whole == c1) return;
    c0 = whole;
  }
  if (!tile) zero_nhwc(dx, n, c0, c1);
  const Image &x = g.x, &gy = g.y;
  const float* xb = fp(x) + n * x.sn;
  float* db = fp(dx) + n * dx.sn;
  for (int oh = 0; oh < g.OH; oh++)
    for (int ow = 0; ow < g.OW; ow++) {
      const Win win = window(g, oh, ow);
      const float* gv = fp(gy) + n * gy.sn + oh * gy.sh + ow * gy.sw;
      int c = c0;
      for (; c + 8 <= c1; c += 8) {
        __m256 best = _mm256_loadu_ps(xb + win.h0 * x.sh + win.w0 * x.sw + c);
        __m256 at = _mm256_setzero_ps();
        float t = 0;
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++, t += 1.0f) {
            const __m256 v = _mm256_loadu_ps(xb + h * x.sh + w * x.sw + c);
            const __m256 m = take_mask(v, best);
            best = _mm256_blendv_ps(best, v, m);
            at = _mm256_blendv_ps(at, _mm256_set1_ps(t), m);
          }
        const __m256 gvec = _mm256_loadu_ps(gv + c);
        t = 0;
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++, t += 1.0f) {
            float* d = db + h * dx.sh + w * dx.sw + c;
            const __m256 part = _mm256_and_ps(_mm256_cmp_ps(at, _mm256_set1_ps(t), _CMP_EQ_OQ), gvec);
            _mm256_storeu_ps(d, tile ? part : _mm256_add_ps(_mm256_loadu_ps(d), part));
          }
      }
      for (; c < c1; c++) {
        int bh = win.h0, bw = win.w0;
        float best = xb[bh * x.sh + bw * x.sw + c];
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) {
            const float v = xb[h * x.sh + w * x.sw + c];
            if (take(v, best)) best = v, bh = h, bw = w;
          }
        if (tile)
          for (int h = win.h0; h < win.h1; h++)
            for (int w = win.w0; w < win.w1; w++) db[h * dx.sh + w * dx.sw + c] = 0.f;
        db[bh * dx.sh + bw * dx.sw + c] += gv[c];
      }
    }
}

void avg_bwd_nhwc(const Geometry& g, const Image& dx, int n, int c0, int c1) {
  zero_nhwc(dx, n, c0, c1);
  const Image& gy = g.y;
  float* db = fp(dx) + n * dx.sn;
  for (int oh = 0; oh < g.OH; oh++)
    for (int ow = 0; ow < g.OW; ow++) {
      const Win win = window(g, oh, ow);
      const float inv = 1.0f / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
      const float* gv = fp(gy) + n * gy.sn + oh * gy.sh + ow * gy.sw;
      int c = c0;
      for (; c + 8 <= c1; c += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(gv + c), _mm256_set1_ps(inv));
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) {
            float* d = db + h * dx.sh + w * dx.sw + c;
            _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), v));
          }
      }
      for (; c < c1; c++) {
        const float v = gv[c] * inv;
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) db[h * dx.sh + w * dx.sw + c] += v;
      }
    }
}

// ---- planes (any strides) ----

// Plane (n, c) of an Image: base pointer, row and column strides.
struct Plane {
  float* p;
  int64_t sh, sw;
};
inline Plane plane(const Image& im, int n, int c) { return {fp(im) + n * im.sn + c * im.sc, im.sh, im.sw}; }

// 2x2 windows, stride 2, no padding, unit-stride rows: eight outputs a step.
// Lanes of max(a, b) for rows a, b at columns 0..15 are paired by
// shuffles (evens against odds), the same first-maximum rule per pair.
inline __m256 pair_max(__m256 lo, __m256 hi) {
  // lo = cols 0..7, hi = 8..15 of one already-reduced row pair.
  const __m256 ev = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));  // 0 2 8 10 | 4 6 12 14
  const __m256 od = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  const __m256 m = _mm256_blendv_ps(ev, od, take_mask(od, ev));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), _MM_SHUFFLE(3, 1, 2, 0)));
}

// The 2x2 stride-2 case on unit-stride rows r0, r1: outputs [ow, ow + 8).
inline void max_fwd_2x2(const float* r0, const float* r1, float* out, int ow) {
  const __m256 t = pair_max(_mm256_loadu_ps(r0 + 2 * ow), _mm256_loadu_ps(r0 + 2 * ow + 8));
  const __m256 b = pair_max(_mm256_loadu_ps(r1 + 2 * ow), _mm256_loadu_ps(r1 + 2 * ow + 8));
  _mm256_storeu_ps(out + ow, _mm256_blendv_ps(t, b, take_mask(b, t)));
}

inline bool fast_2x2(const Geometry& g, const Plane& x, const Plane& y) {
  return g.KH == 2 && g.KW == 2 && g.SH == 2 && g.SW == 2 && g.PT == 0 && g.PL == 0 && x.sw == 1 && y.sw == 1 &&
         g.OW >= 8 && 2 * g.OW <= g.W;
}

void max_fwd_plane(const Geometry& g, int n, int c) {
  const Plane x = plane(g.x, n, c), y = plane(g.y, n, c);
  const bool fast = fast_2x2(g, x, y);
  for (int oh = 0; oh < g.OH; oh++) {
    float* out = y.p + oh * y.sh;
    if (fast && 2 * oh + 2 <= g.H) {
      // Rows (2 oh, 2 oh + 1), eight outputs a step; the last step overlaps
      // the one before it rather than leaving a scalar tail.
      const float* r0 = x.p + (2 * oh) * x.sh;
      for (int ow = 0;; ow += 8) {
        ow = std::min(ow, g.OW - 8);
        max_fwd_2x2(r0, r0 + x.sh, out, ow);
        if (ow == g.OW - 8) break;
      }
      continue;
    }
    for (int ow = 0; ow < g.OW; ow++) {
      const Win win = window(g, oh, ow);
      float best = x.p[win.h0 * x.sh + win.w0 * x.sw];
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) {
          const float v = x.p[h * x.sh + w * x.sw];
          if (take(v, best)) best = v;
        }
      out[ow * y.sw] = best;
    }
  }
}

void avg_fwd_plane(const Geometry& g, int n, int c) {
  const Plane x = plane(g.x, n, c), y = plane(g.y, n, c);
  for (int oh = 0; oh < g.OH; oh++)
    for (int ow = 0; ow < g.OW; ow++) {
      const Win win = window(g, oh, ow);
      float s = 0;
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) s += x.p[h * x.sh + w * x.sw];
      y.p[oh * y.sh + ow * y.sw] = s * (1.0f / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0)));
    }
}

void zero_plane(const Plane& d, int H, int W) {
  for (int h = 0; h < H; h++) {
    float* r = d.p + h * d.sh;
    if (d.sw == 1) {
      std::memset(r, 0, sizeof(float) * W);
    } else {
      for (int w = 0; w < W; w++) r[w * d.sw] = 0.f;
    }
  }
}

// 2x2 stride-2 backward on rows r0, r1 (dx rows d0, d1), outputs [ow, ow + 8):
// the window's first maximum gets g, the other three elements 0 (the
// windows tile the two rows, so dx is stored, not added to).
inline void max_bwd_2x2(const float* r0, const float* r1, const float* gr, float* d0, float* d1, int ow) {
  const __m256 a0 = _mm256_loadu_ps(r0 + 2 * ow), a1 = _mm256_loadu_ps(r0 + 2 * ow + 8);
  const __m256 b0 = _mm256_loadu_ps(r1 + 2 * ow), b1 = _mm256_loadu_ps(r1 + 2 * ow + 8);
  // Window elements in row-major order, lanes in the shuffled output order
  // (0 1 4 5 2 3 6 7), as pair_max leaves them.
  const __m256 e0 = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 e1 = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
  const __m256 e2 = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 e3 = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
  __m256 best = e0, s1, s2, s3;
  s1 = take_mask(e1, best), best = _mm256_blendv_ps(best, e1, s1);
  s2 = take_mask(e2, best), best = _mm256_blendv_ps(best, e2, s2);
  s3 = take_mask(e3, best);
  // One-hot: the last element taken wins.
  const __m256 w3 = s3, w2 = _mm256_andnot_ps(s3, s2), w1 = _mm256_andnot_ps(_mm256_or_ps(s3, s2), s1);
  const __m256 w0 = _mm256_andnot_ps(_mm256_or_ps(_mm256_or_ps(s3, s2), s1), _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
  const __m256 gv = _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_loadu_ps(gr + ow)), _MM_SHUFFLE(3, 1, 2, 0)));
  const __m256 v0 = _mm256_and_ps(w0, gv), v1 = _mm256_and_ps(w1, gv);
  const __m256 v2 = _mm256_and_ps(w2, gv), v3 = _mm256_and_ps(w3, gv);
  _mm256_storeu_ps(d0 + 2 * ow, _mm256_unpacklo_ps(v0, v1));
  _mm256_storeu_ps(d0 + 2 * ow + 8, _mm256_unpackhi_ps(v0, v1));
  _mm256_storeu_ps(d1 + 2 * ow, _mm256_unpacklo_ps(v2, v3));
  _mm256_storeu_ps(d1 + 2 * ow + 8, _mm256_unpackhi_ps(v2, v3));
}

void max_bwd_plane(const Geometry& g, const Image& dx, int n, int c) {
  const Plane x = plane(g.x, n, c), gy = plane(g.y, n, c), d = plane(dx, n, c);
  const bool tile = tiles(g);
  if (tile && fast_2x2(g, x, gy) && d.sw == 1) {
    for (int oh = 0; oh < g.OH; oh++) {
      const float* r0 = x.p + (2 * oh) * x.sh;
      float* d0 = d.p + (2 * oh) * d.sh;
      for (int ow = 0;; ow += 8) {
        ow = std::min(ow, g.OW - 8);
        max_bwd_2x2(r0, r0 + x.sh, gy.p + oh * gy.sh, d0, d0 + d.sh, ow);
        if (ow == g.OW - 8) break;
      }
    }
    return;
  }
  if (!tile) zero_plane(d, g.H, g.W);
  for (int oh = 0; oh < g.OH; oh++)
    for (int ow = 0; ow < g.OW; ow++) {
      const Win win = window(g, oh, ow);
      int bh = win.h0, bw = win.w0;
      float best = x.p[bh * x.sh + bw * x.sw];
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) {
          const float v = x.p[h * x.sh + w * x.sw];
          if (take(v, best)) best = v, bh = h, bw = w;
        }
      const float gv = gy.p[oh * gy.sh + ow * gy.sw];
      if (tile) {
        for (int h = win.h0; h < win.h1; h++)
          for (int w = win.w0; w < win.w1; w++) d.p[h * d.sh + w * d.sw] = (h == bh && w == bw) ? gv : 0.f;
      } else {
        d.p[bh * d.sh + bw * d.sw] += gv;
      }
    }
}

void avg_bwd_plane(const Geometry& g, const Image& dx, int n, int c) {
  const Plane gy = plane(g.y, n, c), d = plane(dx, n, c);
  zero_plane(d, g.H, g.W);
  for (int oh = 0; oh < g.OH; oh++)
    for (int ow = 0; ow < g.OW; ow++) {
      const Win win = window(g, oh, ow);
      const float v = gy.p[oh * gy.sh + ow * gy.sw] / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
      for (int h = win.h0; h < win.h1; h++)
        for (int w = win.w0; w < win.w1; w++) d.p[h * d.sh + w * d.sw] += v;
    }
}

}  // namespace

void run_avx2(Op op, const Geometry& g, const Image& dx, Task t) {
  switch (op) {
    case Op::kMaxForward:
      if (t.channels_inner) return max_fwd_nhwc(g, t.n, t.a);
      return max_fwd_plane(g, t.n, t.a);
    case Op::kAvgForward:
      if (t.channels_inner) return avg_fwd_nhwc(g, t.n, t.a);
      return avg_fwd_plane(g, t.n, t.a);
    case Op::kMaxBackward:
      if (t.channels_inner) return max_bwd_nhwc(g, dx, t.n, t.a, t.b);
      return max_bwd_plane(g, dx, t.n, t.a);
    case Op::kAvgBackward:
      if (t.channels_inner) return avg_bwd_nhwc(g, dx, t.n, t.a, t.b);
      return avg_bwd_plane(g, dx, t.n, t.a);
  }
}

}  // namespace nnc::pool::opt
