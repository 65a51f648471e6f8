// The random family inside: RANDOM_UNIFORM, RANDOM_NORMAL and DROPOUT.
// rand.cpp describes the commands and registers the kernels; cpu_ref.cpp holds
// the element-by-element loops, cpu_opt.cpp the packed / threaded ones.
//
// Reproducibility: each execution draws one 32-bit seed from its stream's
// generator (ccv_nnc_stream_context_genrand_uint32; the default generator when
// there is no stream), and every element's value is then a pure function of
// (seed, the element's row-major index): a counter-based generator, the
// splitmix64 output function applied to key + (k + 1) * golden. Values do not
// depend on the backend, on how a kernel splits the tensor, or on the number
// of threads; a view gets the same values as a packed tensor of its shape.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/kernel.hpp"
#include "core/splitmix.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::rand {

NNC_KERNEL(uniform_ref);
NNC_KERNEL(uniform_opt);
NNC_KERNEL(normal_ref);
NNC_KERNEL(normal_opt);
NNC_KERNEL(dropout_forward_ref);
NNC_KERNEL(dropout_forward_opt);
NNC_KERNEL(dropout_backward_ref);
NNC_KERNEL(dropout_backward_opt);
NNC_KERNEL(zero_gradients);

using nnc::mix64;  // lib/core/splitmix.hpp

// The random words of one execution.
struct Counter {
  uint64_t key;
  explicit Counter(uint32_t seed) : key(mix64(0x6a09e667f3bcc909ull ^ seed)) {}
  // 64-bit word k.
  uint64_t word64(uint64_t k) const { return mix64(key + (k + 1) * 0x9e3779b97f4a7c15ull); }
  // 32-bit word i: the low half of word64(i / 2) for even i, the high half for odd i.
  uint32_t word32(uint64_t i) const {
    const uint64_t h = word64(i >> 1);
    return static_cast<uint32_t>(i & 1 ? h >> 32 : h);
  }
};

// The seed of one execution, from the stream's generator.
uint32_t draw_seed(ccv_nnc_stream_context_t* stream);

// RANDOM_UNIFORM element i of a tensor of type `wide` (64F: 53 random bits from
// word64(i)) or not (24 bits from word32(i)): lb + (ub - lb) * u, u in [0, 1).
// Both are one correctly rounded fma in double (then one rounding to the
// type), so every backend and vector width gives the same bits.
inline double uniform_narrow(uint32_t w, double lb, double range) {
  return std::fma(range, static_cast<double>(w >> 8) * 0x1p-24, lb);
}
inline double uniform_wide(uint64_t w, double lb, double range) {
  return std::fma(range, static_cast<double>(w >> 11) * 0x1p-53, lb);
}

// RANDOM_NORMAL: elements 2k and 2k+1 are the Box-Muller pair of word64(k)
// (u1 from the low 32 bits, in (0, 1), u2 from the high 32 bits):
// mean + std * sqrt(-2 ln u1) * (cos, sin)(2 pi u2), in double.
inline void normal_pair(uint64_t w, double mean, double std_dev, double* z) {
  const double u1 = (static_cast<double>(static_cast<uint32_t>(w)) + 0.5) * 0x1p-32;
  const double u2 = static_cast<double>(w >> 32) * 0x1p-32;
  const double r = std::sqrt(-2 * std::log(u1));
  const double t = 6.283185307179586476925 * u2;
  z[0] = mean + std_dev * (r * std::cos(t));
  z[1] = mean + std_dev * (r * std::sin(t));
}

// DROPOUT: element i is kept when word32(i) >= threshold (with entirety, all
// are kept or dropped by word32(0)); threshold = round(p * 2^32), so the
// keep rate is 1 - p to within 2^-32. Kept elements are scaled by 1 / (1 - p)
// (0 when p = 1, when nothing is kept).
inline uint64_t dropout_threshold(double p) {
  const double t = std::nearbyint(p * 4294967296.0);
  return t <= 0 ? 0 : t >= 4294967296.0 ? uint64_t{1} << 32 : static_cast<uint64_t>(t);
}
inline double dropout_scale(double p) { return p < 1 ? 1 / (1 - p) : 0; }

// DROPOUT's mask is storage the forward fills and the backward reads: one
// byte per element of x in row-major order (with entirety, one byte), at the
// start of the mask's data. libnnc sizes it as reserved space
// (ccv_nnc_hint_tensor_auto: x's data type, [128 / element size, ceil(d0 /
// 128) * d1 * ...], at least one byte per element); an 8U tensor of x's
// shape is that layout too, and may also be a view (then indexed like x).
// Is `mask` an 8U tensor of x's shape (indexed through its own strides)?
bool mask_like_x(const ccv_nnc_tensor_t* mask, const ccv_nnc_tensor_t* x);

// AVX2 + FMA loops (cpu_opt_avx2.cpp) over 64-bit words k0 .. k1 of a
// Counter with `key`, writing elements 2*k0 .. 2*k1 - 1 of packed fp32; they
// stop at a multiple of four words and return where they stopped (the
// caller finishes with the scalar code). Call only when cpu_features()
// reports avx2 and fma3. Dropout: threshold < 2^32.
size_t uniform_f32_avx2(float* y, size_t k0, size_t k1, uint64_t key, double lb, double range);
size_t dropout_f32_avx2(const float* x, float* y, unsigned char* mask, size_t k0, size_t k1, uint64_t key,
                        uint64_t threshold, double scale);

}  // namespace nnc::rand
