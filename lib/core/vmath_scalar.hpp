// nnc::vmath::Scalar: the vector type of core/vmath.hpp with one float per
// "register", for fallbacks on CPUs without AVX2 (any compiler flags). The
// same algorithms as the vector types, so every path gives the same values.
//
//   using V = nnc::vmath::Scalar;
//   float y = nnc::vmath::exp<V>(x);
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/vmath.hpp"

namespace nnc::vmath {

struct Scalar {
  using R = float;
  using M = bool;
  static constexpr int N = 1;
  static R load(const float* p) { return *p; }
  static void store(float* p, R v) { *p = v; }
  static R load_tail(const float* p, int n, float fill = 0.0f) { return n > 0 ? *p : fill; }
  static void store_tail(float* p, R v, int n) {
    if (n > 0) *p = v;
  }
  static void stream(float* p, R v) { *p = v; }
  static R set1(float v) { return v; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R div(R a, R b) { return a / b; }
  static R fmadd(R a, R b, R c) { return std::fma(a, b, c); }
  static R fnmadd(R a, R b, R c) { return std::fma(-a, b, c); }
  // As the SSE instructions: with a NaN, the second operand.
  static R min(R a, R b) { return a < b ? a : b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R abs(R a) { return std::fabs(a); }
  static R round(R x) { return std::nearbyint(x); }
  static M lt(R a, R b) { return a < b; }
  static M gt(R a, R b) { return a > b; }
  static M isnan(R a) { return a != a; }
  static R select(M m, R a, R b) { return m ? a : b; }
  static R opaque(R v) { return v; }
  static R copysign(R mag, R sign) { return std::copysign(mag, sign); }
  static R pow2n(R n) {
    const uint32_t b = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float r;
    std::memcpy(&r, &b, 4);
    return r;
  }
  static R scalef(R p, R n) { return std::ldexp(p, static_cast<int>(n)); }
  static R scale_unit(R p, R n) { return scalef(p, n); }
  static R scale_down(R p, R k, R) { return k == k ? scalef(p, -k) : k; }
  static R recip(R x) { return 1.0f / x; }
  static R exponent(R x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return static_cast<float>(static_cast<int32_t>(b >> 23) - 126);
  }
  static R mantissa(R x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    b = (b & 0x007fffffu) | 0x3f000000u;
    float r;
    std::memcpy(&r, &b, 4);
    return r;
  }
};

}  // namespace nnc::vmath
