// Asynchronous global -> shared copies (cp.async, sm_80 and later) and
// warp-collective fragment loads from shared memory (ldmatrix), for the
// tensor-core flash kernels (flash_mma_kernels.cu).
//
// cp.async: cp_async16(smem, gmem) starts a 16-byte copy (both addresses
// 16-byte aligned) that completes in the background; cp_async_commit()
// closes the calling thread's copies started since the last commit into a
// group; cp_async_wait<N>() returns once at most the N most recently
// committed groups of the calling thread are still pending (the older ones
// have landed in shared memory). The copies of one thread are visible to
// the other threads of the block only after a __syncthreads that follows the
// wait (the usual pattern: prefetch tile j + 1, commit, wait<1>, __syncthreads,
// compute on tile j).
//
// ldmatrix.m8n8.b16 (.x4: four 8 x 8 matrices of 16-bit values): lane l
// gives the address of row l % 8 of matrix l / 8 (16 contiguous bytes,
// 16-byte aligned; .x2 uses lanes 0..15's addresses). Register m of lane l
// then holds, of matrix m (PTX ISA, "Warp-level matrix load instruction:
// ldmatrix"):
//   plain:  elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1)
//   .trans: elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4)
// the first of the pair in the low half. So a plain load of a row-major
// 8 x 8 block is an A-row / B-column fragment of mma.m16n8k16 (cuda/mma.cuh:
// lane 4 g + t holds row g, columns 2t, 2t + 1), and a .trans load of a
// row-major k x n block is the B fragment (rows 2t, 2t + 1 of column g).
// Every lane of the warp must call ldmatrix together.
//
// Under CPU emulation (tools/gpu-emu, NNC_GPU_EMU):
// - cp.async queues the copy on the calling emulated thread; a commit closes
//   the queue into a group; a wait performs the groups it retires, oldest
//   first (emu_runtime.cpp). So shared memory read before the wait that
//   retires a copy holds the old bytes, as the GPU may show: a missing wait
//   reads stale data. Copies never retired are dropped at the thread's end.
// - ldmatrix is a warp exchange of the lanes' row addresses, then each lane
//   reads its elements by the layout above.
// - A misaligned address (cp.async: either; ldmatrix: a row) fails the
//   launch with cudaErrorMisalignedAddress, as on the GPU.
#pragma once

#include <cstdint>
#include <cstring>

namespace nnc::cuda {

// 16 bytes gmem -> smem, asynchronously (both 16-byte aligned).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
#elif defined(NNC_GPU_EMU)
  ::emu::async_copy(smem, gmem, 16);
#else
  (void)smem, (void)gmem;
#endif
}

// Closes the calling thread's copies since the last commit into a group.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(NNC_GPU_EMU)
  ::emu::async_commit();
#endif
}

// Waits until at most N of the calling thread's committed groups are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  static_assert(N >= 0 && N < 8, "cp.async.wait_group: 0..7");
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif defined(NNC_GPU_EMU)
  ::emu::async_wait(N);
#endif
}

#if defined(NNC_GPU_EMU)
namespace ldmatrix_emu {
// Register m of the caller (lane) from the warp's row addresses (rows[8 m + r]).
inline uint32_t element_pair(const uint64_t* rows, int m, int lane, bool trans) {
  uint16_t lo, hi;
  const int g = lane >> 2, t = lane & 3;
  if (!trans) {
    const auto* row = reinterpret_cast<const uint16_t*>(rows[8 * m + g]);
    std::memcpy(&lo, row + 2 * t, 2);
    std::memcpy(&hi, row + 2 * t + 1, 2);
  } else {
    std::memcpy(&lo, reinterpret_cast<const uint16_t*>(rows[8 * m + 2 * t]) + g, 2);
    std::memcpy(&hi, reinterpret_cast<const uint16_t*>(rows[8 * m + 2 * t + 1]) + g, 2);
  }
  return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
}
template <int M>
inline void load(uint32_t (&r)[M], const void* row, bool trans, const char* file, int line) {
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0)
    ::emu::fault(cudaErrorMisalignedAddress, "ldmatrix: a row address not 16-byte aligned", row, file, line);
  uint64_t rows[32];
  const int lane = static_cast<int>(
      ::emu::warp_exchange(0xffffffffu, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(row)), file, line, rows));
  for (int m = 0; m < M; m++) r[m] = element_pair(rows, m, lane, trans);
}
}  // namespace ldmatrix_emu
#endif

// Four 8 x 8 matrices (see the top): r[m] from matrix m, whose row l % 8 is at
// lane l's `row` (l / 8 == m).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
#elif defined(NNC_GPU_EMU)
  ldmatrix_emu::load(r, row, false, __FILE__, __LINE__);
#else
  (void)r, (void)row;
#endif
}
// The same, each matrix transposed.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
#elif defined(NNC_GPU_EMU)
  ldmatrix_emu::load(r, row, true, __FILE__, __LINE__);
#else
  (void)r, (void)row;
#endif
}
// Two 8 x 8 matrices: r[m] from matrix m, whose row l % 8 is at lane l's
// `row` (l / 8 == m, lanes 0..15; the other lanes' addresses are not read
// but must be valid shared addresses).
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
#if defined(__CUDA_ARCH__)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
#elif defined(NNC_GPU_EMU)
  ldmatrix_emu::load(r, row, false, __FILE__, __LINE__);
#else
  (void)r, (void)row;
#endif
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row) {
#if defined(__CUDA_ARCH__)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
#elif defined(NNC_GPU_EMU)
  ldmatrix_emu::load(r, row, true, __FILE__, __LINE__);
#else
  (void)r, (void)row;
#endif
}

}  // namespace nnc::cuda
