// The channels-inner batch-norm loops for AVX2 + FMA (norm_avx2.hpp).
#include <immintrin.h>

#include "cmd/norm/norm_avx2.hpp"

namespace nnc::norm::avx2 {

namespace {

// f.template operator()<V>() for a group of 8 V channels (V up to 4).
template <class F>
void by_vectors(size_t w, F f) {
  switch (w / 8) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    default:
      return f.template operator()<4>();
  }
}

// The stream loops with a row's coefficients in registers up to 32 channels
// (affine: 12 registers; axpbypc: 16 at 32 channels, so 24 channels at most).
template <int V>
void affine_rows(const float* x, float* y, size_t rows, const float* c, const float* a, const float* b) {
  __m256 cv[V], av[V], bv[V];
  for (int v = 0; v < V; v++)
    cv[v] = _mm256_loadu_ps(c + 8 * v), av[v] = _mm256_loadu_ps(a + 8 * v), bv[v] = _mm256_loadu_ps(b + 8 * v);
  for (size_t r = 0; r < rows; r++, x += 8 * V, y += 8 * V)
    for (int v = 0; v < V; v++)
      _mm256_stream_ps(y + 8 * v, _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(x + 8 * v), cv[v]), av[v], bv[v]));
}

template <int V>
void axpbypc_rows(const float* g, const float* x, float* dx, size_t rows, const float* m, const float* a,
                  const float* b, const float* c) {
  __m256 mv[V], av[V], bv[V], cv[V];
  for (int v = 0; v < V; v++) {
    mv[v] = _mm256_loadu_ps(m + 8 * v), av[v] = _mm256_loadu_ps(a + 8 * v);
    bv[v] = _mm256_loadu_ps(b + 8 * v), cv[v] = _mm256_loadu_ps(c + 8 * v);
  }
  for (size_t r = 0; r < rows; r++, g += 8 * V, x += 8 * V, dx += 8 * V)
    for (int v = 0; v < V; v++) {
      const __m256 t = _mm256_fmadd_ps(av[v], _mm256_loadu_ps(g + 8 * v), cv[v]);
      _mm256_stream_ps(dx + 8 * v, _mm256_fmadd_ps(bv[v], _mm256_sub_ps(_mm256_loadu_ps(x + 8 * v), mv[v]), t));
    }
}

// Sums of V registers of channels over `rows` rows K apart, the accumulators
// in registers from start to end.
template <int V>
void sqdev(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev) {
  __m256 m[V], s2[V], s1[V];
  for (int v = 0; v < V; v++) {
    m[v] = _mm256_loadu_ps(c + 8 * v);
    s2[v] = _mm256_loadu_ps(acc + 8 * v);
    s1[v] = _mm256_loadu_ps(dev + 8 * v);
  }
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * K;
    for (int v = 0; v < V; v++) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xr + 8 * v), m[v]);
      s2[v] = _mm256_fmadd_ps(d, d, s2[v]);
      s1[v] = _mm256_add_ps(s1[v], d);
    }
  }
  for (int v = 0; v < V; v++) {
    _mm256_storeu_ps(acc + 8 * v, s2[v]);
    _mm256_storeu_ps(dev + 8 * v, s1[v]);
  }
}

template <int V>
void dot2(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx) {
  __m256 m[V], a[V], b[V];
  for (int v = 0; v < V; v++) {
    m[v] = _mm256_loadu_ps(c + 8 * v);
    a[v] = _mm256_loadu_ps(sg + 8 * v);
    b[v] = _mm256_loadu_ps(sgx + 8 * v);
  }
  for (size_t r = 0; r < rows; r++) {
    const float *gr = g + r * K, *xr = x + r * K;
    for (int v = 0; v < V; v++) {
      const __m256 gv = _mm256_loadu_ps(gr + 8 * v);
      a[v] = _mm256_add_ps(a[v], gv);
      b[v] = _mm256_fmadd_ps(gv, _mm256_sub_ps(_mm256_loadu_ps(xr + 8 * v), m[v]), b[v]);
    }
  }
  for (int v = 0; v < V; v++) {
    _mm256_storeu_ps(sg + 8 * v, a[v]);
    _mm256_storeu_ps(sgx + 8 * v, b[v]);
  }
}

}  // namespace

void col_affine_stream(const float* x, float* y, size_t rows, size_t K, const float* c, const float* a,
                       const float* b) {
  if (K <= 32) return by_vectors(K, [&]<int V>() { affine_rows<V>(x, y, rows, c, a, b); });
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * K;
    float* yr = y + r * K;
    for (size_t j = 0; j < K; j += 8) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xr + j), _mm256_loadu_ps(c + j));
      _mm256_stream_ps(yr + j, _mm256_fmadd_ps(d, _mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j)));
    }
  }
}

void col_axpbypc_stream(const float* g, const float* x, float* dx, size_t rows, size_t K, const float* m,
                        const float* a, const float* b, const float* c) {
  if (K <= 24) return by_vectors(K, [&]<int V>() {
      if constexpr (V <= 3) axpbypc_rows<V>(g, x, dx, rows, m, a, b, c);
    });
  for (size_t r = 0; r < rows; r++) {
    const float *gr = g + r * K, *xr = x + r * K;
    float* dr = dx + r * K;
    for (size_t j = 0; j < K; j += 8) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xr + j), _mm256_loadu_ps(m + j));
      const __m256 t = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(gr + j), _mm256_loadu_ps(c + j));
      _mm256_stream_ps(dr + j, _mm256_fmadd_ps(_mm256_loadu_ps(b + j), d, t));
    }
  }
}

void col_sqdev_regs(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev) {
  by_vectors(K, [&]<int V>() { sqdev<V>(x, rows, K, c, acc, dev); });
}

void col_dot2_regs(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx) {
  by_vectors(K, [&]<int V>() { dot2<V>(g, x, rows, K, c, sg, sgx); });
}

void row_ln_forward_stream(const float* x, float* y, size_t n, float c, float r, float inv, const float* s,
                           const float* b) {
  const __m256 cv = _mm256_set1_ps(c), rv = _mm256_set1_ps(r), iv = _mm256_set1_ps(inv), one = _mm256_set1_ps(1.0f),
               zero = _mm256_setzero_ps();
  for (size_t i = 0; i < n; i += 8) {
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), cv), rv), iv);
    _mm256_stream_ps(y + i, _mm256_fmadd_ps(t, s ? _mm256_loadu_ps(s + i) : one, b ? _mm256_loadu_ps(b + i) : zero));
  }
}

void row_ln_dx_stream(const float* g, const float* x, float* dx, size_t n, float mean, float inv, const float* s,
                      float mh, float mhx) {
  const __m256 mv = _mm256_set1_ps(mean), iv = _mm256_set1_ps(inv), hv = _mm256_set1_ps(mh),
               hxv = _mm256_set1_ps(mhx);
  for (size_t i = 0; i < n; i += 8) {
    __m256 gs = _mm256_loadu_ps(g + i);
    if (s) gs = _mm256_mul_ps(gs, _mm256_loadu_ps(s + i));
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), iv);
    _mm256_stream_ps(dx + i, _mm256_mul_ps(iv, _mm256_fnmadd_ps(xh, hxv, _mm256_sub_ps(gs, hv))));
  }
}

}  // namespace nnc::norm::avx2
