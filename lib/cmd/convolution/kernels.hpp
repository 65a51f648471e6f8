// Micro-kernels of CONVOLUTION on CPU_OPT, compiled once per instruction set
// (kernels_avx2.cpp, kernels_avx512.cpp from kernels_impl.hpp) and chosen at
// run time by kernels() after checking the CPU.
//
// Both kernels are register-blocked outer products over a padded NHWC image:
//   strip: y[p][j] = bias[j] + sum_t sum_c x[p * xps + tapoff[t] + c] * w[(t * cin + c) * BW + j]
//          for npix pixels p and BW = nz * lanes output channels j (the
//          forward, and the input gradient as a convolution of the padded
//          output gradient with flipped weights);
//   wgrad: acc[r][j] += sum_p x[p * xps + rowoff[r]] * g[p * gps + j]
//          (over nrows runs of npix pixels: x + i * xrs, g + i * grs)
//          for `rows` rows r (taps x input channels) and BW columns j (the
//          weight gradient, accumulated in place).
#pragma once

#include <cstdint>

namespace nnc::conv {

struct StripArgs {
  const float* x = nullptr;  // first pixel, tap offsets relative to it
  int64_t xps = 0;           // pixel stride in x
  const int64_t* tapoff = nullptr;
  int taps = 0, cin = 0;
  const float* w = nullptr;     // packed taps x cin x BW
  const float* bias = nullptr;  // BW values, or NULL for 0
  float* y = nullptr;
  int64_t yps = 0;  // pixel stride in y
  int npix = 0;     // <= max_pix(nz)
  int kvalid = 0;   // columns stored (<= BW)
  // With cin = 1 and xps = 1: 3 or 5 when the taps are rows of that many
  // adjacent pixels (tap r * kw + j at tapoff[r * kw] + j), else 0. The
  // AVX-512 kernels then share each broadcast across a row's taps, for
  // npix <= rows_pix(nz, kw).
  int kw = 0;
  // Non-temporal stores of whole blocks (AVX-512; y and yps 64-byte aligned):
  // for outputs much larger than the caches.
  bool stream = false;
};

// The longest strip the row-sharing path takes (AVX-512 only): its P x nz
// accumulators, kw x nz weights and a broadcast fit in 32 registers.
inline int rows_pix(int nz, int kw) { return (31 - kw * nz) / nz; }

struct WgradArgs {
  const float* x = nullptr;
  int64_t xps = 0;
  const int64_t* rowoff = nullptr;
  int rows = 0;  // <= max_rows(nz)
  const float* g = nullptr;
  int64_t gps = 0;
  int npix = 0;
  float* acc = nullptr;  // rows x BW, leading dimension ldacc
  int64_t ldacc = 0;
  int nrows = 1;  // runs of npix pixels, the next one at x + xrs, g + grs
  int64_t xrs = 0, grs = 0;
};

struct Kernels {
  int lanes = 0;      // floats per vector
  int max_nz = 0;     // vectors per block: 1 .. max_nz
  int max_pix[5]{};   // per nz
  int max_rows[5]{};  // per nz
  void (*strip)(const StripArgs& a, int nz) = nullptr;
  void (*wgrad)(const WgradArgs& a, int nz) = nullptr;
  // y[j * ys + i] = x[i * xs + j] for i < rows, j < cols (NCHW <-> NHWC rows).
  void (*transpose)(const float* x, int64_t xs, int rows, int cols, float* y, int64_t ys) = nullptr;
};

// The best table this CPU can run (AVX-512, else AVX2 + FMA), NULL if none.
const Kernels* kernels();
const Kernels* kernels_avx512();
const Kernels* kernels_avx2();

}  // namespace nnc::conv
