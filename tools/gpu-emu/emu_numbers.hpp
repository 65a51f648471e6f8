// The emulated libraries' elements (emu_cublas.cpp, emu_cudnn.cpp): floating
// storage read as double (exact for every type) and written rounded once, and
// the TF32 rounding of tensor-core operands.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace emu {

enum class Elem { kF32, kF64, kF16, kBF16 };

inline double load(Elem t, const void* p, int64_t i) {
  switch (t) {
    case Elem::kF64:
      return static_cast<const double*>(p)[i];
    case Elem::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case Elem::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}
inline void store(Elem t, void* p, int64_t i, double v) {
  switch (t) {
    case Elem::kF64:
      static_cast<double*>(p)[i] = v;
      break;
    case Elem::kF16:
      static_cast<__half*>(p)[i] = __float2half(static_cast<float>(v));
      break;
    case Elem::kBF16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v));
      break;
    default:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
  }
}

// fp32 rounded to TF32 (10 explicit mantissa bits), to nearest, ties away
// from zero as the tensor cores' conversion does.
inline float tf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace emu
