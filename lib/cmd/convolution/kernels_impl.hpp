// The body of the micro-kernel tables (see kernels.hpp), written with the
// vector type of the including file: define NNC_CONV_AVX512 for 16 lanes,
// nothing for AVX2's 8. Everything has internal linkage except the table
// function, so the two copies never merge at link time.
#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "cmd/convolution/kernels.hpp"

namespace nnc::conv {

namespace {

#ifdef NNC_CONV_AVX512
using V = __m512;
constexpr int L = 16;
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V vset1(float v) { return _mm512_set1_ps(v); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
constexpr int kMaxNz = 4;
constexpr int kPix[5] = {0, 16, 12, 0, 6};
constexpr int kRows[5] = {0, 12, 8, 0, 6};
#else
using V = __m256;
constexpr int L = 8;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vset1(float v) { return _mm256_set1_ps(v); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
constexpr int kMaxNz = 2;
constexpr int kPix[5] = {0, 8, 6, 0, 0};
constexpr int kRows[5] = {0, 8, 6, 0, 0};
#endif

// One input channel, stride 1, taps in rows of KW adjacent pixels (a first
// layer): the KW taps of a row read x[q], q < P + KW - 1, so each broadcast
// serves up to KW pixels, with the row's KW x NZ weight vectors in registers.
template <int P, int NZ, int KW>
void strip_rows(const StripArgs& a, V (&acc)[P][NZ]) {
  const float* w = a.w;
  const int rows = a.taps / KW;
  for (int r = 0; r < rows; r++, w += KW * NZ * L) {
    const float* xr = a.x + a.tapoff[r * KW];
    V wv[KW][NZ];
#pragma GCC unroll 8
    for (int kw = 0; kw < KW; kw++)
#pragma GCC unroll 4
      for (int z = 0; z < NZ; z++) wv[kw][z] = vload(w + (kw * NZ + z) * L);
#pragma GCC unroll 32
    for (int q = 0; q < P + KW - 1; q++) {
      const V b = vset1(xr[q]);
#pragma GCC unroll 8
      for (int kw = 0; kw < KW; kw++) {
        const int p = q - kw;
        if (p >= 0 && p < P)
#pragma GCC unroll 4
          for (int z = 0; z < NZ; z++) acc[p][z] = vfma(b, wv[kw][z], acc[p][z]);
      }
    }
  }
}

template <int P, int NZ>
void strip(const StripArgs& a) {
  V acc[P][NZ];
  if (a.bias) {
#pragma GCC unroll 4
    for (int z = 0; z < NZ; z++) {
      const V b = vload(a.bias + z * L);
#pragma GCC unroll 16
      for (int p = 0; p < P; p++) acc[p][z] = b;
    }
  } else {
#pragma GCC unroll 16
    for (int p = 0; p < P; p++)
#pragma GCC unroll 4
      for (int z = 0; z < NZ; z++) acc[p][z] = vzero();
  }
  const float* w = a.w;
  // Row sharing where accumulators, a row's weights and a broadcast fit in
  // the 32 AVX-512 registers (run_strips keeps such strips short enough).
  constexpr bool rows5 = L == 16 && P * NZ + 5 * NZ + 1 <= 32;
  constexpr bool rows3 = L == 16 && P * NZ + 3 * NZ + 1 <= 32;
  if (rows5 && a.kw == 5 && a.xps == 1 && a.cin == 1) {
    if constexpr (rows5) strip_rows<P, NZ, 5>(a, acc);
  } else if (rows3 && a.kw == 3 && a.xps == 1 && a.cin == 1) {
    if constexpr (rows3) strip_rows<P, NZ, 3>(a, acc);
  } else if (a.xps == 1 && a.cin == 1) {
    // One channel, stride 1 (a first layer): the strip's pixels are adjacent,
    // so every broadcast is a displacement off one pointer per tap.
    for (int t = 0; t < a.taps; t++, w += NZ * L) {
      const float* xt = a.x + a.tapoff[t];
      V wv[NZ];
#pragma GCC unroll 4
      for (int z = 0; z < NZ; z++) wv[z] = vload(w + z * L);
#pragma GCC unroll 16
      for (int p = 0; p < P; p++) {
        const V b = vset1(xt[p]);
#pragma GCC unroll 4
        for (int z = 0; z < NZ; z++) acc[p][z] = vfma(b, wv[z], acc[p][z]);
      }
    }
  } else {
    for (int t = 0; t < a.taps; t++) {
      const float* xp[P];
#pragma GCC unroll 16
      for (int p = 0; p < P; p++) xp[p] = a.x + a.tapoff[t] + p * a.xps;
      for (int c = 0; c < a.cin; c++, w += NZ * L) {
        V wv[NZ];
#pragma GCC unroll 4
        for (int z = 0; z < NZ; z++) wv[z] = vload(w + z * L);
#pragma GCC unroll 16
        for (int p = 0; p < P; p++) {
          const V b = vset1(xp[p][c]);
#pragma GCC unroll 4
          for (int z = 0; z < NZ; z++) acc[p][z] = vfma(b, wv[z], acc[p][z]);
        }
      }
    }
  }
#ifdef NNC_CONV_AVX512
  // Aligned, past the caches; the pool's chunk ends with the fence (core/parallel.hpp).
  if (a.stream && a.kvalid == NZ * L) {
#pragma GCC unroll 16
    for (int p = 0; p < P; p++)
#pragma GCC unroll 4
      for (int z = 0; z < NZ; z++) _mm512_stream_ps(a.y + p * a.yps + z * L, acc[p][z]);
    return;
  }
#endif
  if (a.kvalid == NZ * L) {
#pragma GCC unroll 16
    for (int p = 0; p < P; p++)
#pragma GCC unroll 4
      for (int z = 0; z < NZ; z++) vstore(a.y + p * a.yps + z * L, acc[p][z]);
  } else {
    for (int p = 0; p < P; p++) {
      alignas(64) float tmp[NZ * L];
      for (int z = 0; z < NZ; z++) vstore(tmp + z * L, acc[p][z]);
      std::memcpy(a.y + p * a.yps, tmp, sizeof(float) * static_cast<size_t>(a.kvalid));
    }
  }
}

template <int R, int NZ>
void wgrad(const WgradArgs& a) {
  V acc[R][NZ];
  int64_t off[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
    off[r] = a.rowoff[r];
#pragma GCC unroll 4
    for (int z = 0; z < NZ; z++) acc[r][z] = vload(a.acc + r * a.ldacc + z * L);
  }
  for (int run = 0; run < a.nrows; run++) {
    const float* x = a.x + run * a.xrs;
    const float* g = a.g + run * a.grs;
    for (int p = 0; p < a.npix; p++, x += a.xps, g += a.gps) {
      V gv[NZ];
#pragma GCC unroll 4
      for (int z = 0; z < NZ; z++) gv[z] = vload(g + z * L);
#pragma GCC unroll 16
      for (int r = 0; r < R; r++) {
        const V b = vset1(x[off[r]]);
#pragma GCC unroll 4
        for (int z = 0; z < NZ; z++) acc[r][z] = vfma(b, gv[z], acc[r][z]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int z = 0; z < NZ; z++) vstore(a.acc + r * a.ldacc + z * L, acc[r][z]);
}

using StripFn = void (*)(const StripArgs&);
using WgradFn = void (*)(const WgradArgs&);

template <int NZ, size_t... I>
constexpr std::array<StripFn, sizeof...(I) + 1> strip_table(std::index_sequence<I...>) {
  return {nullptr, &strip<static_cast<int>(I) + 1, NZ>...};
}
template <int NZ, size_t... I>
constexpr std::array<WgradFn, sizeof...(I) + 1> wgrad_table(std::index_sequence<I...>) {
  return {nullptr, &wgrad<static_cast<int>(I) + 1, NZ>...};
}

constexpr auto kStrip1 = strip_table<1>(std::make_index_sequence<kPix[1]>{});
constexpr auto kStrip2 = strip_table<2>(std::make_index_sequence<kPix[2]>{});
constexpr auto kWgrad1 = wgrad_table<1>(std::make_index_sequence<kRows[1]>{});
constexpr auto kWgrad2 = wgrad_table<2>(std::make_index_sequence<kRows[2]>{});
#ifdef NNC_CONV_AVX512
constexpr auto kStrip4 = strip_table<4>(std::make_index_sequence<kPix[4]>{});
constexpr auto kWgrad4 = wgrad_table<4>(std::make_index_sequence<kRows[4]>{});
#endif

void strip_any(const StripArgs& a, int nz) {
  switch (nz) {
    case 1:
      kStrip1[a.npix](a);
      return;
    case 2:
      kStrip2[a.npix](a);
      return;
#ifdef NNC_CONV_AVX512
    case 4:
      kStrip4[a.npix](a);
      return;
#endif
  }
}

void wgrad_any(const WgradArgs& a, int nz) {
  switch (nz) {
    case 1:
      kWgrad1[a.rows](a);
      return;
    case 2:
      kWgrad2[a.rows](a);
      return;
#ifdef NNC_CONV_AVX512
    case 4:
      kWgrad4[a.rows](a);
      return;
#endif
  }
}

// y[j * ys + i] = x[i * xs + j] for i < rows, j < cols, by 8 x 8 register
// tiles (AVX2 instructions, in either copy); a last partial block of rows is
// loaded zero-padded and stored through VMASKMOV, the last columns are scalar.
inline void transpose8x8(const __m256 (&r)[8], __m256 (&o)[8]) {
  __m256 t[8], u[8];
  for (int k = 0; k < 4; k++) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; k++) {
    u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int k = 0; k < 4; k++) {
    o[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    o[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}

void transpose(const float* x, int64_t xs, int rows, int cols, float* y, int64_t ys) {
  for (int i = 0; i < rows; i += 8) {
    const int rem = rows - i < 8 ? rows - i : 8;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    int j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256 r[8], o[8];
      for (int k = 0; k < 8; k++) r[k] = k < rem ? _mm256_loadu_ps(x + (i + k) * xs + j) : _mm256_setzero_ps();
      transpose8x8(r, o);
      for (int k = 0; k < 8; k++) {
        if (rem == 8)
          _mm256_storeu_ps(y + (j + k) * ys + i, o[k]);
        else
          _mm256_maskstore_ps(y + (j + k) * ys + i, mask, o[k]);
      }
    }
    for (; j < cols; j++)
      for (int k = 0; k < rem; k++) y[j * ys + i + k] = x[(i + k) * xs + j];
  }
}

Kernels make_table() {
  Kernels k;
  k.lanes = L;
  k.max_nz = kMaxNz;
  for (int i = 0; i < 5; i++) k.max_pix[i] = kPix[i], k.max_rows[i] = kRows[i];
  k.strip = strip_any;
  k.wgrad = wgrad_any;
  k.transpose = transpose;
  return k;
}

}  // namespace

}  // namespace nnc::conv
