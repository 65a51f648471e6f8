// The channels-inner batch-norm loops for AVX-512F (norm_avx512.hpp).
#include <immintrin.h>

#include "cmd/norm/norm_avx512.hpp"

namespace nnc::norm {

namespace {

// f.template operator()<V>() for K = 16 V (V up to 8).
template <class F>
void by_vectors(size_t K, F f) {
  switch (K / 16) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 5:
      return f.template operator()<5>();
    case 6:
      return f.template operator()<6>();
    case 7:
      return f.template operator()<7>();
    default:
      return f.template operator()<8>();
  }
}

// The stream loops with the per-channel coefficients of a row of K = 16 V
// channels held in registers (up to kRegisterK channels: 16 registers of
// coefficients) instead of reloaded for every row.
constexpr size_t kRegisterK = 64;
template <int V>
void affine_rows(const float* x, float* y, size_t rows, const float* c, const float* a, const float* b) {
  __m512 cv[V], av[V], bv[V];
  for (int v = 0; v < V; v++)
    cv[v] = _mm512_loadu_ps(c + 16 * v), av[v] = _mm512_loadu_ps(a + 16 * v), bv[v] = _mm512_loadu_ps(b + 16 * v);
  for (size_t r = 0; r < rows; r++, x += 16 * V, y += 16 * V)
    for (int v = 0; v < V; v++)
      _mm512_stream_ps(y + 16 * v, _mm512_fmadd_ps(_mm512_sub_ps(_mm512_loadu_ps(x + 16 * v), cv[v]), av[v], bv[v]));
}

template <int V>
void axpbypc_rows(const float* g, const float* x, float* dx, size_t rows, const float* m, const float* a,
                  const float* b, const float* c) {
  __m512 mv[V], av[V], bv[V], cv[V];
  for (int v = 0; v < V; v++) {
    mv[v] = _mm512_loadu_ps(m + 16 * v), av[v] = _mm512_loadu_ps(a + 16 * v);
    bv[v] = _mm512_loadu_ps(b + 16 * v), cv[v] = _mm512_loadu_ps(c + 16 * v);
  }
  for (size_t r = 0; r < rows; r++, g += 16 * V, x += 16 * V, dx += 16 * V)
    for (int v = 0; v < V; v++) {
      const __m512 t = _mm512_fmadd_ps(av[v], _mm512_loadu_ps(g + 16 * v), cv[v]);
      _mm512_stream_ps(dx + 16 * v, _mm512_fmadd_ps(bv[v], _mm512_sub_ps(_mm512_loadu_ps(x + 16 * v), mv[v]), t));
    }
}

}  // namespace

// The formulas of red::Loops' col_affine and col_axpbypc, with fused
// multiply-adds (results differ from those loops' by rounding only).
void col_affine_stream(const float* x, float* y, size_t rows, size_t K, const float* c, const float* a,
                       const float* b) {
  if (K <= kRegisterK) return by_vectors(K, [&]<int V>() {
      if constexpr (V * 16 <= kRegisterK) affine_rows<V>(x, y, rows, c, a, b);
    });
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * K;
    float* yr = y + r * K;
    for (size_t j = 0; j < K; j += 16) {
      const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), _mm512_loadu_ps(c + j));
      _mm512_stream_ps(yr + j, _mm512_fmadd_ps(d, _mm512_loadu_ps(a + j), _mm512_loadu_ps(b + j)));
    }
  }
}

void col_axpbypc_stream(const float* g, const float* x, float* dx, size_t rows, size_t K, const float* m,
                        const float* a, const float* b, const float* c) {
  if (K <= kRegisterK) return by_vectors(K, [&]<int V>() {
      if constexpr (V * 16 <= kRegisterK) axpbypc_rows<V>(g, x, dx, rows, m, a, b, c);
    });
  for (size_t r = 0; r < rows; r++) {
    const float *gr = g + r * K, *xr = x + r * K;
    float* dr = dx + r * K;
    for (size_t j = 0; j < K; j += 16) {
      const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), _mm512_loadu_ps(m + j));
      const __m512 t = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(gr + j), _mm512_loadu_ps(c + j));
      _mm512_stream_ps(dr + j, _mm512_fmadd_ps(_mm512_loadu_ps(b + j), d, t));
    }
  }
}

namespace {

template <int V>
void sqdev(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev) {
  __m512 m[V], s2[V], s1[V];
  for (int v = 0; v < V; v++) {
    m[v] = _mm512_loadu_ps(c + 16 * v);
    s2[v] = _mm512_loadu_ps(acc + 16 * v);
    s1[v] = _mm512_loadu_ps(dev + 16 * v);
  }
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * K;
    for (int v = 0; v < V; v++) {
      const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + 16 * v), m[v]);
      s2[v] = _mm512_fmadd_ps(d, d, s2[v]);
      s1[v] = _mm512_add_ps(s1[v], d);
    }
  }
  for (int v = 0; v < V; v++) {
    _mm512_storeu_ps(acc + 16 * v, s2[v]);
    _mm512_storeu_ps(dev + 16 * v, s1[v]);
  }
}

template <int V>
void dot2(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx) {
  __m512 m[V], a[V], b[V];
  for (int v = 0; v < V; v++) {
    m[v] = _mm512_loadu_ps(c + 16 * v);
    a[v] = _mm512_loadu_ps(sg + 16 * v);
    b[v] = _mm512_loadu_ps(sgx + 16 * v);
  }
  for (size_t r = 0; r < rows; r++) {
    const float *gr = g + r * K, *xr = x + r * K;
    for (int v = 0; v < V; v++) {
      const __m512 gv = _mm512_loadu_ps(gr + 16 * v);
      a[v] = _mm512_add_ps(a[v], gv);
      b[v] = _mm512_fmadd_ps(gv, _mm512_sub_ps(_mm512_loadu_ps(xr + 16 * v), m[v]), b[v]);
    }
  }
  for (int v = 0; v < V; v++) {
    _mm512_storeu_ps(sg + 16 * v, a[v]);
    _mm512_storeu_ps(sgx + 16 * v, b[v]);
  }
}


}  // namespace

void col_sqdev_regs(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev) {
  by_vectors(K, [&]<int V>() { sqdev<V>(x, rows, K, c, acc, dev); });
}

void col_dot2_regs(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx) {
  by_vectors(K, [&]<int V>() { dot2<V>(g, x, rows, K, c, sg, sgx); });
}

}  // namespace nnc::norm
