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
//   (`extern __shared__ T name[];`, rewritten by rewrite_launches.py to a
//   pointer from emu::dynamic_shared()): the launch's bytes, filled with 0xff
//   before each block (uninitialised floats read as NaN).
// - Atomics are plain read-modify-writes: threads interleave only at
//   barriers, so nothing can come between.
// - Warp intrinsics (__syncwarp, __shfl*_sync, __ballot_sync, __any_sync,
//   __all_sync; values of up to 8 bytes): a per-warp barrier (warps are 32
//   consecutive threads): each lane offers its value and waits until every
//   lane of the mask has, reads, and waits again. A lane of the mask that has
//   returned or waits elsewhere fails the launch. Lanes outside the mask read
//   nothing (a shuffle from one gives 0).
// - Tensor-core products (cuda/mma.cuh's mma_16816, which tests
//   NNC_GPU_EMU): three such warp exchanges of the lanes' fragments, then
//   each lane computes its part of the product in float by the PTX ISA's
//   fragment layout.
// - cp.async (cuda/async_copy.cuh): each thread's copies wait in a queue of
//   committed groups until a wait_group retires them and land when the
//   thread's next __syncthreads releases (a missing wait, or a missing
//   barrier after it, reads stale shared memory); with EMU_WARP_AHEAD they
//   land at once instead (a prefetch overwriting a buffer another warp still
//   reads shows). ldmatrix: a warp exchange of the row addresses.
// - Math and half / bfloat16 conversions are the CUDA headers' host versions
//   and libm: values may differ from the device's in the last place (no FMA
//   contraction, __expf is expf).
#pragma once

#define NNC_GPU_EMU 1  // cuda/mma.cuh: the emulated tensor-core product

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

using std::isinf;
using std::isnan;

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
constexpr int warpSize = 32;

namespace emu {

inline int width(int w = 32) { return w; }
inline unsigned warp_mask(unsigned m = 0xffffffffu) { return m; }
// The lanes the caller's warp has (fewer than 32 in a block's last, partial warp).
inline unsigned present_lanes() {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned left = blockDim.x * blockDim.y * blockDim.z - t / 32 * 32;
  return left >= 32 ? 0xffffffffu : (1u << left) - 1;
}

// A launch on `stream`: body() runs as the threads of every block of
// the grid when the stream's work runs (emu_runtime.cpp: streams run their
// work late, at the latest when the host waits for it). A bad launch fails
// at once (cudaGetLastError); a failure inside the kernel shows where the
// host next waits (cudaStreamSynchronize, ...) and in cudaGetLastError after.
// `kernel` (its name as the launch spells it) and `caller` (the launching
// function) are counted for EMU_STATS.
// func: the kernel's address (kernel_address; NULL when the launch asks for
// no dynamic shared memory). More than 48 KiB of dynamic shared memory needs
// the kernel's opt-in (cudaFuncSetAttribute with
// cudaFuncAttributeMaxDynamicSharedMemorySize) of at least that many bytes
// first, as on a GPU; without it the launch fails (cudaErrorInvalidValue).
// The stream must be the current device's (cudaSetDevice), as on a GPU.
bool launch_checked(dim3& grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const char* kernel,
                    const char* caller, const void* func);  // true: queue it (launch_queue)
void launch_queue(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, std::function<void()> body);
// A launch as rewrite_launches.py writes it: f(args...) is the kernel's
// call. The arguments are evaluated and copied here, at the launch, as
// CUDA copies a kernel's parameters (the copy lives until the launch has
// run; each emulated thread gets its own copy of it, as its parameters).
// Checked and counted first; nothing is built when it fails or kernels are
// skipped (EMU_SKIP_KERNELS: host-cost-emu times the host around it).
template <class F, class... A>
void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const char* kernel, const char* caller,
            const void* func, F f, A&&... args) {
  if (launch_checked(grid, block, shared_bytes, stream, kernel, caller, func))
    launch_queue(grid, block, shared_bytes, stream,
                 [f, values = std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)] { std::apply(f, values); });
}
template <class K>
const void* kernel_address(K* k) {
  return reinterpret_cast<const void*>(k);
}
void syncthreads(const char* file, int line);
// __syncthreads_count / _and / _or: the barrier, returning how many of the
// block's threads passed a nonzero predicate.
int syncthreads_count(int predicate, const char* file, int line);
// The current block's dynamic shared memory (the launch's shmem bytes).
void* dynamic_shared();
// A fault of the calling thread (a misaligned address, ...): the message, and
// the launch reports `e` (cudaGetLastError), as CUDA's sticky errors do.
void fault(cudaError_t e, const char* what, const void* address, const char* file, int line);
// Asynchronous copies (cp.async: cuda/async_copy.cuh) of the calling thread:
// queued, closed into a group by async_commit, retired by async_wait and
// written when the thread's next __syncthreads releases: a read before the wait, or
// after it without that barrier, sees the old bytes.
void async_copy(void* dst, const void* src, size_t bytes);  // (both aligned to `bytes`, else a fault)
void async_commit();
void async_wait(int pending);  // performs every group but the `pending` most recent
// The warp barrier: offers `value`, waits for the lanes of `mask`, fills
// lanes[32] with their values; returns the caller's lane.
unsigned warp_exchange(unsigned mask, uint64_t value, const char* file, int line, uint64_t* lanes);

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "gpu-emu: warp values of up to 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
// Source lane of each shuffle kind within segments of `width` lanes; -1: the caller's own value.
enum Shfl { kIdx, kUp, kDown, kXor };
template <class T>
T shuffle(Shfl kind, unsigned mask, T v, int arg, int width, const char* file, int line) {
  uint64_t lanes[32];
  const int lane = static_cast<int>(warp_exchange(mask, to_bits(v), file, line, lanes));
  const int base = lane / width * width;
  int src = lane;
  switch (kind) {
    case kIdx:
      src = base + (arg % width + width) % width;
      break;
    case kUp:
      src = lane - base >= arg ? lane - arg : lane;
      break;
    case kDown:
      src = lane - base + arg < width ? lane + arg : lane;
      break;
    case kXor:
      src = lane ^ arg;  // a later group of `width` lanes gives the caller's own value (CUDA's rule)
      src = src / width > lane / width || src >= 32 ? lane : src;
      break;
  }
  return src == lane ? v : from_bits<T>(lanes[src]);
}
inline unsigned vote(unsigned mask, int predicate, const char* file, int line) {
  uint64_t lanes[32];
  warp_exchange(mask, predicate != 0, file, line, lanes);
  unsigned bits = 0;
  for (unsigned l = 0; l < 32; l++)
    if ((mask >> l & 1u) && lanes[l]) bits |= 1u << l;
  return bits;
}

}  // namespace emu

#define __syncthreads() ::emu::syncthreads(__FILE__, __LINE__)
#define __syncthreads_count(p) ::emu::syncthreads_count((p) != 0, __FILE__, __LINE__)
#define __syncthreads_or(p) (::emu::syncthreads_count((p) != 0, __FILE__, __LINE__) != 0)
#define __syncthreads_and(p) \
  (::emu::syncthreads_count((p) != 0, __FILE__, __LINE__) == static_cast<int>(blockDim.x * blockDim.y * blockDim.z))
#define __syncwarp(...) ((void)::emu::vote(::emu::warp_mask(__VA_ARGS__), 0, __FILE__, __LINE__))
#define __shfl_sync(mask, v, lane, ...) \
  ::emu::shuffle(::emu::kIdx, mask, v, lane, ::emu::width(__VA_ARGS__), __FILE__, __LINE__)
#define __shfl_up_sync(mask, v, d, ...) \
  ::emu::shuffle(::emu::kUp, mask, v, d, ::emu::width(__VA_ARGS__), __FILE__, __LINE__)
#define __shfl_down_sync(mask, v, d, ...) \
  ::emu::shuffle(::emu::kDown, mask, v, d, ::emu::width(__VA_ARGS__), __FILE__, __LINE__)
#define __shfl_xor_sync(mask, v, m, ...) \
  ::emu::shuffle(::emu::kXor, mask, v, m, ::emu::width(__VA_ARGS__), __FILE__, __LINE__)
#define __ballot_sync(mask, p) ::emu::vote(mask, p, __FILE__, __LINE__)
#define __any_sync(mask, p) (::emu::vote(mask, p, __FILE__, __LINE__) != 0u)
#define __all_sync(mask, p) (::emu::vote(mask, p, __FILE__, __LINE__) == ((mask) & ::emu::present_lanes()))
#undef __shared__
#define __shared__ static
#define __threadfence() ((void)0)
#undef __launch_bounds__
#define __launch_bounds__(...)

// Device intrinsics that have no host version in the CUDA headers (the fast
// approximations as the exact operation; the host rounds to nearest).
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x != x ? 0.f : x; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __frcp_rn(float x) { return 1.f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.f / std::sqrt(x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }
inline float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline int __float_as_int(float f) {
  int x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, 8);
  return d;
}
inline long long __double_as_longlong(double d) {
  long long x;
  std::memcpy(&x, &d, 8);
  return x;
}
inline int __double2hiint(double d) { return static_cast<int>(__double_as_longlong(d) >> 32); }
inline int __double2loint(double d) { return static_cast<int>(__double_as_longlong(d) & 0xffffffffll); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double(static_cast<long long>(
      (static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) | static_cast<unsigned>(lo)));
}
inline unsigned __float_as_uint(float f) { return static_cast<unsigned>(__float_as_int(f)); }
inline float __uint_as_float(unsigned x) { return __int_as_float(static_cast<int>(x)); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
// CUDA's global min / max (device overloads of every arithmetic pair).
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) > static_cast<C>(b) ? static_cast<C>(a) : static_cast<C>(b);
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(a) : static_cast<C>(b);
}

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

// cuda_runtime.h's typed cudaFuncSetAttribute (a kernel, not its address) is
// nvcc's only; the emulation's for host compilers.
template <class T>
cudaError_t cudaFuncSetAttribute(T* entry, enum cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}
