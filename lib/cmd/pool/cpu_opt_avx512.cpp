// MAX_POOL on CPU_OPT, AVX-512 part (AVX-512F only; called after the CPU
// check in cpu_opt.cpp): the channels-inner (NHWC) max pooling, sixteen
// channels a vector with mask registers for the per-lane choices and the
// channel tail.
//
// Forward takes any window; windows of 2x2 that lie wholly inside the image
// are unrolled. Backward takes the common 2x2 stride-2 windows that tile the
// image (each dx element written once: stored, never added, so no zeroing
// pass); anything else goes back to the AVX2 loops (run_avx512 returns
// false). The choice per lane is CPU_REF's: an element replaces the best if it
// is greater, or a NaN while the best is not, so the first maximum (or the
// first NaN) of the window wins and takes the gradient.
#include <immintrin.h>

#include <algorithm>

#include "cmd/pool/pool_opt.hpp"

namespace nnc::pool::opt {

namespace {

inline float* fp(const Image& im) { return reinterpret_cast<float*>(im.data); }

// Lanes where v replaces best: best is not NaN and !(v <= best), i.e. v is
// greater or v is NaN.
inline __mmask16 take(__m512 v, __m512 best) {
  return _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(best, best, _CMP_ORD_Q), v, best, _CMP_NLE_UQ);
}

// Lanes [0, k) of p (k = 16 without a tail).
template <bool kTail>
inline __m512 load(const float* p, __mmask16 k) {
  if constexpr (kTail) return _mm512_maskz_loadu_ps(k, p);
  return _mm512_loadu_ps(p);
}
template <bool kTail>
inline void store(float* p, __mmask16 k, __m512 v) {
  if constexpr (kTail)
    _mm512_mask_storeu_ps(p, k, v);
  else
    _mm512_storeu_ps(p, v);
}

// Channels [c0, c1) in vectors of 16, then one masked vector for the rest.
template <class F>
inline void channels(int c0, int c1, F f) {
  int c = c0;
  for (; c + 16 <= c1; c += 16) f.template operator()<false>(c, __mmask16(0xffff));
  if (c < c1) f.template operator()<true>(c, static_cast<__mmask16>((1u << (c1 - c)) - 1));
}

void max_fwd_nhwc(const Geometry& g, int n, int oh) {
  const Image &x = g.x, &y = g.y;
  const float* xb = fp(x) + n * x.sn;
  float* yrow = fp(y) + n * y.sn + oh * y.sh;
  const int h = oh * g.SH - g.PT, h0 = std::max(h, 0), h1 = std::min(h + g.KH, g.H);
  for (int ow = 0; ow < g.OW; ow++) {
    const int w = ow * g.SW - g.PL, w0 = std::max(w, 0), w1 = std::min(w + g.KW, g.W);
    const float* first = xb + h0 * x.sh + w0 * x.sw;
    float* out = yrow + ow * y.sw;
    if (h1 - h0 == 2 && w1 - w0 == 2) {
      const float *p1 = first + x.sw, *p2 = first + x.sh, *p3 = p2 + x.sw;
      channels(0, g.C, [&]<bool kTail>(int c, __mmask16 k) {
        __m512 best = load<kTail>(first + c, k);
        const __m512 e1 = load<kTail>(p1 + c, k), e2 = load<kTail>(p2 + c, k), e3 = load<kTail>(p3 + c, k);
        best = _mm512_mask_blend_ps(take(e1, best), best, e1);
        best = _mm512_mask_blend_ps(take(e2, best), best, e2);
        best = _mm512_mask_blend_ps(take(e3, best), best, e3);
        store<kTail>(out + c, k, best);
      });
      continue;
    }
    channels(0, g.C, [&]<bool kTail>(int c, __mmask16 k) {
      __m512 best = load<kTail>(first + c, k);
      for (int hh = h0; hh < h1; hh++)
        for (int ww = w0; ww < w1; ww++) {
          const __m512 v = load<kTail>(xb + hh * x.sh + ww * x.sw + c, k);
          best = _mm512_mask_blend_ps(take(v, best), best, v);
        }
      store<kTail>(out + c, k, best);
    });
  }
}

// 2x2 windows of stride 2 tiling the image: per window the one-hot of its
// first maximum, and the four dx elements stored (g where chosen, else 0).
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
      channels(c0, c1, [&]<bool kTail>(int c, __mmask16 k) {
        const __m512 e0 = load<kTail>(p0 + c, k), e1 = load<kTail>(p1 + c, k);
        const __m512 e2 = load<kTail>(p2 + c, k), e3 = load<kTail>(p3 + c, k);
        const __mmask16 s1 = take(e1, e0);
        __m512 best = _mm512_mask_blend_ps(s1, e0, e1);
        const __mmask16 s2 = take(e2, best);
        best = _mm512_mask_blend_ps(s2, best, e2);
        const __mmask16 s3 = take(e3, best);
        // One-hot: the last element taken is the window's first maximum.
        const __mmask16 w2 = s2 & ~s3, w1 = s1 & ~(s2 | s3), w0 = ~(s1 | s2 | s3);
        const __m512 gv = load<kTail>(gp + c, k);
        store<kTail>(q0 + c, k, _mm512_maskz_mov_ps(w0, gv));
        store<kTail>(q1 + c, k, _mm512_maskz_mov_ps(w1, gv));
        store<kTail>(q2 + c, k, _mm512_maskz_mov_ps(w2, gv));
        store<kTail>(q3 + c, k, _mm512_maskz_mov_ps(s3, gv));
      });
    }
  }
}

}  // namespace

bool run_avx512(Op op, const Geometry& g, const Image& dx, Task t) {
  if (!t.channels_inner) return false;
  switch (op) {
    case Op::kMaxForward:
      max_fwd_nhwc(g, t.n, t.a);
      return true;
    case Op::kMaxBackward:
      if (g.KH != 2 || g.KW != 2 || !tiles(g)) return false;
      max_bwd_nhwc_2x2(g, dx, t.n, t.a, t.b);
      return true;
    default:
      return false;
  }
}

}  // namespace nnc::pool::opt
