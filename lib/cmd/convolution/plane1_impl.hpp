// The body of plane1.hpp's kernel, written with the vector type of the
// including file: define NNC_PLANE1_AVX512 for 16 lanes, nothing for AVX2's 8.
// Internal linkage except the entry point, so the two copies never merge.
#include <immintrin.h>

#include "cmd/convolution/plane1.hpp"

namespace nnc::conv {

namespace {

#ifdef NNC_PLANE1_AVX512
using V = __m512;
constexpr int L = kPlane1LanesAvx512;
constexpr int F = kPlane1FiltersAvx512;  // 3 x 8 accumulators, 3 inputs: 27 of 32 registers
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline void vstore_part(float* p, V v, int n) { _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v); }
inline V vset1(float v) { return _mm512_set1_ps(v); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
#else
using V = __m256;
constexpr int L = kPlane1LanesAvx2;
constexpr int F = kPlane1FiltersAvx2;  // 3 x 4 accumulators, 3 inputs, a broadcast: 16 registers
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline void vstore_part(float* p, V v, int n) {
  const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  _mm256_maskstore_ps(p, m, v);
}
inline V vset1(float v) { return _mm256_set1_ps(v); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
#endif

// NV vectors of pixels from p0 of a line (of which `valid` exist).
template <int NV>
void run(const Plane1Args& a, const float* x, float* y, int p0, int valid) {
  V acc[F][NV];
#pragma GCC unroll 16
  for (int f = 0; f < F; f++) {
    const V b = a.bias ? vset1(a.bias[f]) : vzero();
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) acc[f][v] = b;
  }
  const float* w = a.w;
  x += p0;
  for (int t = 0; t < a.taps; t++, w += F) {
    const float* xp = x + a.tapoff[t];
    V xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) xv[v] = vload(xp + v * L);
#pragma GCC unroll 16
    for (int f = 0; f < F; f++) {
      const V b = vset1(w[f]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) acc[f][v] = vfma(b, xv[v], acc[f][v]);
    }
  }
  y += p0;
#pragma GCC unroll 16
  for (int f = 0; f < F; f++) {
    if (f == a.fvalid) break;
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      const int left = valid - v * L;
      if (left >= L)
        vstore(y + f * a.ysc + v * L, acc[f][v]);
      else if (left > 0)
        vstore_part(y + f * a.ysc + v * L, acc[f][v], left);
    }
  }
}

void plane1(const Plane1Args& a) {
  // Each line's vectors in near-equal runs of at most 3.
  const int vecs = (a.len + L - 1) / L;
  const int runs = (vecs + 2) / 3;
  for (int line = 0; line < a.lines; line++) {
    const float* x = a.x + line * a.xline;
    float* y = a.y + line * a.yline;
    int v0 = 0;
    for (int r = 0; r < runs; r++) {
      const int nv = (vecs - v0 + runs - r - 1) / (runs - r);
      const int p0 = v0 * L, valid = a.len - p0;
      if (nv == 3)
        run<3>(a, x, y, p0, valid);
      else if (nv == 2)
        run<2>(a, x, y, p0, valid);
      else
        run<1>(a, x, y, p0, valid);
      v0 += nv;
    }
  }
}

}  // namespace

}  // namespace nnc::conv
