// GPU_REF under CPU emulation (design: CMakeLists.txt here). Force-included
// (-include) ahead of every kernel file (cuda/*_kernels.cu after
// rewrite_launches.py), compiled as host C++ against the CUDA headers: the
// CUDA built-ins the kernels use, for the host.
//
// - threadIdx / blockIdx / blockDim / gridDim: globals the scheduler
//   (emu_runtime.cpp) sets before it resumes each emulated thread.
// - A block's threads are fibers (ucontext) on one host thread, run in
//   lock-step phases: each runs until it reaches __syncthreads() or returns;
//   when every thread still running waits at the barrier, all go on. A
//   barrier reached at different call sites (divergent __syncthreads) or
//   while some threads of the block have returned fails the launch
//   (cudaErrorLaunchFailure from cudaGetLastError, with a message on stderr).
// - __shared__ arrays are function-local statics: one per kernel
//   instantiation, shared by a block's threads; blocks (and launches) run one
//   after another, so each block has them to itself. Dynamic shared memory
//   (extern __shared__) is not emulated (a launch asking for it fails).
// - Atomics are plain read-modify-writes: threads interleave only at
//   barriers, so nothing can come between.
// - Warp intrinsics (__shfl*_sync, __syncwarp, __ballot_sync, ...) are not
//   defined: a kernel that uses them fails to compile here and needs them
//   added (a per-warp barrier in the scheduler, as __syncthreads has).
// - Math and half / bfloat16 conversions are the CUDA headers' host versions
//   and libm: values may differ from the device's in the last place (no FMA
//   contraction, __expf is expf).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

using std::isinf;
using std::isnan;

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
constexpr int warpSize = 32;

namespace emu {

// Runs body() as the threads of every block of the grid; the status goes
// where cudaGetLastError() finds it.
// `kernel` (its name as the launch spells it) and `caller` (the launching
// function) are counted for EMU_STATS.
void launch_body(dim3 grid, dim3 block, size_t shared_bytes, const char* kernel, const char* caller,
                 void (*body)(void*), void* arg);
template <class F>
void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t, const char* kernel, const char* caller, F&& f) {
  launch_body(grid, block, shared_bytes, kernel, caller, [](void* p) { (*static_cast<F*>(p))(); }, &f);
}
void syncthreads(const char* file, int line);

}  // namespace emu

#define __syncthreads() ::emu::syncthreads(__FILE__, __LINE__)
#undef __shared__
#define __shared__ static
#define __threadfence() ((void)0)

// Device intrinsics that have no host version in the CUDA headers.
inline float __double2float_rn(double x) { return static_cast<float>(x); }  // the host's rounding is to nearest

template <class T>
inline T atomicAdd(T* p, std::type_identity_t<T> v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <class T>
inline T atomicSub(T* p, std::type_identity_t<T> v) {
  const T old = *p;
  *p = old - v;
  return old;
}
template <class T>
inline T atomicMax(T* p, std::type_identity_t<T> v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <class T>
inline T atomicMin(T* p, std::type_identity_t<T> v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}
template <class T>
inline T atomicExch(T* p, std::type_identity_t<T> v) {
  const T old = *p;
  *p = v;
  return old;
}
template <class T>
inline T atomicCAS(T* p, std::type_identity_t<T> compare, std::type_identity_t<T> v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}
