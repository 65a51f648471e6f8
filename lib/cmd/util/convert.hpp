// Scalar conversions between the floating-point storage types, correctly
// rounded (to nearest, ties to even) from any wider type in one step.
//
//   uint16_t h = nnc::to_half(1.0 / 3.0);   // one rounding, not double -> float -> half
//   double d = nnc::from_half(h);
//
// Rounding a double through float first would round twice and can land on the
// wrong neighbour at a tie, so the narrow formats are produced straight from
// the double's bits. NaN stays NaN (quiet, sign and top payload bits kept),
// overflow goes to infinity, and subnormal results are produced exactly.
#pragma once

#include <cstdint>
#include <cstring>

namespace nnc {

namespace detail {

// Round a double to a binary format with `E` exponent bits and `M` mantissa
// bits (no sign bit counted), returning its bit pattern. E <= 11, M <= 52.
template <int E, int M>
inline uint32_t round_double_to(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (E + M);
  const uint64_t mag = b & 0x7fffffffffffffffull;
  constexpr uint32_t kInf = ((1u << E) - 1) << M;
  constexpr int kBias = (1 << (E - 1)) - 1;
  constexpr int kShift = 52 - M;
  if (mag >= 0x7ff0000000000000ull) {
    if (mag == 0x7ff0000000000000ull) return sign | kInf;
    // NaN: quiet bit set, the top payload bits kept.
    return sign | kInf | (1u << (M - 1)) | static_cast<uint32_t>((mag & 0x000fffffffffffffull) >> kShift);
  }
  const int e = static_cast<int>(mag >> 52) - 1023;  // unbiased exponent
  const uint64_t frac = mag & 0x000fffffffffffffull;
  if (e > kBias) return sign | kInf;
  uint64_t q, rem, half;
  uint32_t base;
  if (e >= 1 - kBias) {  // normal in the target
    q = frac >> kShift;
    rem = frac & ((uint64_t{1} << kShift) - 1);
    half = uint64_t{1} << (kShift - 1);
    base = static_cast<uint32_t>(e + kBias) << M;
  } else {  // subnormal (or zero) in the target
    if (mag == 0) return sign;
    const int shift = kShift + (1 - kBias - e);
    if (shift >= 64) return sign;
    const uint64_t full = (mag >> 52) ? (frac | (uint64_t{1} << 52)) : frac;
    q = full >> shift;
    rem = full & ((uint64_t{1} << shift) - 1);
    half = uint64_t{1} << (shift - 1);
    base = 0;
  }
  uint32_t r = base + static_cast<uint32_t>(q);  // a carry out of the mantissa bumps the exponent, up to infinity
  if (rem > half || (rem == half && (q & 1))) r += 1;
  return sign | r;
}

}  // namespace detail

// IEEE binary16 from a double (or a float, which converts to double exactly).
inline uint16_t to_half(double d) { return static_cast<uint16_t>(detail::round_double_to<5, 10>(d)); }
// bfloat16 from a double (or a float).
inline uint16_t to_bf16(double d) { return static_cast<uint16_t>(detail::round_double_to<8, 7>(d)); }

// binary16 to float: exact.
inline float from_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0u);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: value = man * 2^-24, exact in float
    float f = static_cast<float>(man) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// bfloat16 to float: exact.
inline float from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace nnc
