// Warp-level tensor-core products for our kernels: mma.sync.m16n8k16 (sm_80
// and later) on fp16 or bf16 operands with fp32 accumulation,
//   D (16 x 8) = A (16 x 16) B (16 x 8) + C,
// in the register fragments the PTX ISA documents ("Matrix Fragments for
// mma.m16n8k16 with floating point type"). With lane = 4 g + t (g = lane >> 2,
// t = lane & 3) a lane holds
//   A: a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
//      a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   B: b[0] = B[2t, 2t+1][g]     b[1] = B[2t+8, 2t+9][g]
//   C, D: c[0], c[1] = C[g][2t, 2t+1]   c[2], c[3] = C[g+8][2t, 2t+1]
// each 32-bit register two 16-bit values, the first of the pair in the low
// half. Since the layout is documented (unlike wmma's), a kernel can work on
// the accumulators element by element: a row's softmax in flash attention,
// with the row (g or g + 8) and column (2t, 2t+1) known.
//
// Every lane of the warp must call mma_16816 together (mma.sync is a warp
// instruction). Under CPU emulation (tools/gpu-emu, where cuda_emu.hpp
// defines NNC_GPU_EMU) the product is computed from the fragments the 32
// lanes exchange, by the layout above, in float: so an emulated kernel
// that misplaces an element computes a wrong product, as on the GPU.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nnc::cuda {

// The 16-bit bits of v rounded to T (__half or __nv_bfloat16).
template <class T>
__device__ __forceinline__ uint16_t bits16(float v) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma: fp16 or bf16");
  uint16_t b;
  if constexpr (std::is_same_v<T, __half>) {
    const __half h = __float2half_rn(v);
    std::memcpy(&b, &h, 2);
  } else {
    const __nv_bfloat16 h = __float2bfloat16_rn(v);
    std::memcpy(&b, &h, 2);
  }
  return b;
}
// The float a T's 16 bits hold.
template <class T>
__device__ __forceinline__ float from_bits16(uint16_t b) {
  if constexpr (std::is_same_v<T, __half>) {
    __half h;
    std::memcpy(&h, &b, 2);
    return __half2float(h);
  } else {
    __nv_bfloat16 h;
    std::memcpy(&h, &b, 2);
    return __bfloat162float(h);
  }
}
// Two 16-bit values in one register, lo in the low half.
__device__ __forceinline__ uint32_t pack16(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
}
template <class T>
__device__ __forceinline__ uint32_t pack_floats(float lo, float hi) {
  return pack16(bits16<T>(lo), bits16<T>(hi));
}

#if defined(NNC_GPU_EMU)
namespace mma_emu {
// The 16 x 16 A, 16 x 8 B of a warp's fragments (every lane's registers).
template <class T>
inline void gather(const uint64_t* a01, const uint64_t* a23, const uint64_t* b01, float (&A)[16][16],
                   float (&B)[16][8]) {
  for (int lane = 0; lane < 32; lane++) {
    const int g = lane >> 2, t = lane & 3;
    const uint32_t a[4] = {static_cast<uint32_t>(a01[lane]), static_cast<uint32_t>(a01[lane] >> 32),
                           static_cast<uint32_t>(a23[lane]), static_cast<uint32_t>(a23[lane] >> 32)};
    const uint32_t b[2] = {static_cast<uint32_t>(b01[lane]), static_cast<uint32_t>(b01[lane] >> 32)};
    for (int h = 0; h < 2; h++) {
      const int s = 16 * h;
      A[g][2 * t + h] = from_bits16<T>(static_cast<uint16_t>(a[0] >> s));
      A[g + 8][2 * t + h] = from_bits16<T>(static_cast<uint16_t>(a[1] >> s));
      A[g][2 * t + 8 + h] = from_bits16<T>(static_cast<uint16_t>(a[2] >> s));
      A[g + 8][2 * t + 8 + h] = from_bits16<T>(static_cast<uint16_t>(a[3] >> s));
      B[2 * t + h][g] = from_bits16<T>(static_cast<uint16_t>(b[0] >> s));
      B[2 * t + 8 + h][g] = from_bits16<T>(static_cast<uint16_t>(b[1] >> s));
    }
  }
}
}  // namespace mma_emu
#endif

// d = A b + c for the warp (see the top for the fragments); d may be c.
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                          const float (&c)[4]) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma: fp16 or bf16");
#if defined(__CUDA_ARCH__)
// The instruction for operand type TY ("f16" or "bf16"), fp32 C and D.
#define NNC_MMA_16816(TY)                                                                                 \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY                                        \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"             \
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), \
                 "f"(c[2]), "f"(c[3]))
  if constexpr (std::is_same_v<T, __half>)
    NNC_MMA_16816("f16");
  else
    NNC_MMA_16816("bf16");
#undef NNC_MMA_16816
#elif defined(NNC_GPU_EMU)
  uint64_t a01[32], a23[32], b01[32];
  const unsigned lane = ::emu::warp_exchange(0xffffffffu, a[0] | static_cast<uint64_t>(a[1]) << 32, __FILE__,
                                             __LINE__, a01);
  ::emu::warp_exchange(0xffffffffu, a[2] | static_cast<uint64_t>(a[3]) << 32, __FILE__, __LINE__, a23);
  ::emu::warp_exchange(0xffffffffu, b[0] | static_cast<uint64_t>(b[1]) << 32, __FILE__, __LINE__, b01);
  float A[16][16], B[16][8];
  mma_emu::gather<T>(a01, a23, b01, A, B);
  const int g = static_cast<int>(lane >> 2), t = static_cast<int>(lane & 3);
  float out[4];
  for (int e = 0; e < 4; e++) {
    const int row = g + (e >> 1) * 8, col = 2 * t + (e & 1);
    float s = c[e];
    for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
    out[e] = s;
  }
  for (int e = 0; e < 4; e++) d[e] = out[e];
#else
  (void)d, (void)a, (void)b, (void)c;  // the host pass of nvcc: never called on the host
#endif
}

}  // namespace nnc::cuda
