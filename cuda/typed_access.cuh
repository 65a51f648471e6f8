// Loads and stores of 32F / 16F / 16BF storage as float, for the GPU_REF
// kernels (ew_kernels.cu, more_kernels.cu): ld<T>(p, off) reads element off
// of a T array, st<T>(p, off, v) writes v rounded to nearest, st_d<T> a
// double rounded to nearest once (not through float).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kern.hpp"

namespace nnc::cuda {

// Host side of a launch: calls f(Elem{}) with the element type a GpuType
// names (kF32 float, kF16 __half, kBF16 __nv_bfloat16) so that one launch
// line serves the three; false (nothing called) for any other type.
template <class F>
bool with_float_type(int type, F&& f) {
  switch (type) {
    case kF32:
      f(float{});
      return true;
    case kF16:
      f(__half{});
      return true;
    case kBF16:
      f(__nv_bfloat16{});
      return true;
    default:
      return false;
  }
}

template <class T>
__device__ __forceinline__ float ld(const void* p, int64_t off);
template <>
__device__ __forceinline__ float ld<float>(const void* p, int64_t off) {
  return static_cast<const float*>(p)[off];
}
template <>
__device__ __forceinline__ float ld<__half>(const void* p, int64_t off) {
  return __half2float(static_cast<const __half*>(p)[off]);
}
template <>
__device__ __forceinline__ float ld<__nv_bfloat16>(const void* p, int64_t off) {
  return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[off]);
}

template <class T>
__device__ __forceinline__ void st(void* p, int64_t off, float v);
template <>
__device__ __forceinline__ void st<float>(void* p, int64_t off, float v) {
  static_cast<float*>(p)[off] = v;
}
template <>
__device__ __forceinline__ void st<__half>(void* p, int64_t off, float v) {
  static_cast<__half*>(p)[off] = __float2half_rn(v);
}
template <>
__device__ __forceinline__ void st<__nv_bfloat16>(void* p, int64_t off, float v) {
  static_cast<__nv_bfloat16*>(p)[off] = __float2bfloat16_rn(v);
}

// ld<T> as a functor (the loader the gpu:: attention formulas take).
template <class T>
struct LdAs {
  __device__ float operator()(const void* p, int64_t off) const { return ld<T>(p, off); }
};

// Element off of p of run-time GpuType `type` (kF32, kF16, kBF16) as float,
// and its store rounded to nearest.
__device__ __forceinline__ float ld_any(const void* p, int64_t off, int type) {
  return type == kF16 ? ld<__half>(p, off) : type == kBF16 ? ld<__nv_bfloat16>(p, off) : ld<float>(p, off);
}
__device__ __forceinline__ void st_any(void* p, int64_t off, int type, float v) {
  if (type == kF16)
    st<__half>(p, off, v);
  else if (type == kBF16)
    st<__nv_bfloat16>(p, off, v);
  else
    st<float>(p, off, v);
}

template <class T>
__device__ __forceinline__ void st_d(void* p, int64_t off, double v);
template <>
__device__ __forceinline__ void st_d<float>(void* p, int64_t off, double v) {
  static_cast<float*>(p)[off] = static_cast<float>(v);
}
template <>
__device__ __forceinline__ void st_d<__half>(void* p, int64_t off, double v) {
  static_cast<__half*>(p)[off] = __double2half(v);
}
template <>
__device__ __forceinline__ void st_d<__nv_bfloat16>(void* p, int64_t off, double v) {
  static_cast<__nv_bfloat16*>(p)[off] = __double2bfloat16(v);
}

}  // namespace nnc::cuda
