// The emulation's own checks (selftest_test.cpp): kernels that use what
// cuda_emu.hpp emulates, written as CUDA (only the emulation compiles them).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/async_copy.cuh"

namespace gpu_emu_selftest {
namespace {

// Block sums by a shared-memory tree (needs every __syncthreads).
__global__ void block_sum_kernel(const float* x, float* y, int n) {
  __shared__ float part[256];
  float acc = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += x[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = part[0];
}

// Warp sums by __shfl_xor_sync, a ballot of odd values and shuffles up / down / by index.
__global__ void warp_kernel(const int* x, int* sum, unsigned* ballot, int* up, int* down, int* idx) {
  const int t = threadIdx.x;
  int v = x[t];
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  sum[t] = v;
  ballot[t] = __ballot_sync(0xffffffffu, x[t] & 1);
  up[t] = __shfl_up_sync(0xffffffffu, x[t], 3);
  down[t] = __shfl_down_sync(0xffffffffu, x[t], 5, 16);
  idx[t] = __shfl_sync(0xffffffffu, x[t], 7);
  __syncwarp();
}

// Each block reverses its shares of x (blockDim.x elements each, grid-stride
// over `parts` of them) through dynamic shared memory.
__global__ void reverse_kernel(const float* x, float* y, int parts) {
  extern __shared__ float buf[];
  const int t = threadIdx.x;
  for (int part = blockIdx.x; part < parts; part += gridDim.x) {
    const int base = part * blockDim.x;
    buf[t] = x[base + t];
    __syncthreads();
    y[base + t] = buf[blockDim.x - 1 - t];
    __syncthreads();
  }
}

// Block votes: how many threads hold an odd value, whether any holds 7, whether all are below 1000.
__global__ void vote_kernel(const int* x, int* count, int* any7, int* all_small) {
  const int v = x[threadIdx.x];
  const int c = __syncthreads_count(v & 1);
  const int a = __syncthreads_or(v == 7);
  const int s = __syncthreads_and(v < 1000);
  count[threadIdx.x] = c;
  any7[threadIdx.x] = a;
  all_small[threadIdx.x] = s;
}

// __syncthreads where only some threads go: invalid.
__global__ void divergent_kernel(int* y) {
  if (threadIdx.x < 16) {
    __syncthreads();
    y[threadIdx.x] = 1;
  } else {
    __syncthreads();
    y[threadIdx.x] = 2;
  }
}

// Some threads return before the others reach __syncthreads: invalid.
__global__ void early_return_kernel(int* y) {
  if (threadIdx.x == 0) return;
  __syncthreads();
  y[threadIdx.x] = 1;
}

// Warp 1 writes slot after a warp barrier; warp 0 reads it after the next
// one, with no __syncthreads between (a race): in step both warps pass the
// first barrier before warp 0 reads, so it sees the write; with warp 0
// running ahead (EMU_WARP_AHEAD, first to last) it reads before warp 1 wrote.
__global__ void warp_race_kernel(int* seen) {
  __shared__ int slot;
  if (threadIdx.x == 0) slot = 0;
  __syncthreads();
  __syncwarp();
  if (threadIdx.x == 32) slot = 1;
  __syncwarp();
  if (threadIdx.x == 0) *seen = slot;
}

// cp.async of two groups of 16-byte chunks into shared memory (each thread's
// chunk lands where the next thread reads it), then read back: `wait` 0:
// after a __syncthreads with no wait (read 0); 1: after wait_group 1 with no
// __syncthreads (read 1), after the __syncthreads (read 2: the first group
// landed, the second may not have), after wait_group 0 and a __syncthreads
// (read 3: both landed). out: 4 reads x 2 groups x blockDim.x chunks.
__global__ void cp_async_kernel(const uint4* src, uint4* out, int wait) {
  __shared__ __align__(16) uint4 buf[2][64];
  const int t = threadIdx.x, n = blockDim.x, to = (t + 1) % n;
  buf[0][t] = buf[1][t] = make_uint4(0xaaaaaaaau, 0xaaaaaaaau, 0xaaaaaaaau, 0xaaaaaaaau);
  __syncthreads();
  nnc::cuda::cp_async16(&buf[0][to], src + t);
  nnc::cuda::cp_async_commit();
  nnc::cuda::cp_async16(&buf[1][to], src + n + t);
  nnc::cuda::cp_async_commit();
  auto read = [&](int r) { out[(2 * r) * n + t] = buf[0][t], out[(2 * r + 1) * n + t] = buf[1][t]; };
  if (wait == 0) {
    __syncthreads();
    read(0);
    __syncthreads();  // every thread has read before any copy lands
    nnc::cuda::cp_async_wait<0>();
    return;
  }
  nnc::cuda::cp_async_wait<1>();
  read(1);
  __syncthreads();
  read(2);
  __syncthreads();
  nnc::cuda::cp_async_wait<0>();
  __syncthreads();
  read(3);
}

// ldmatrix of a 16 x 16 row-major tile of 16-bit values (rows 24 apart):
// lane l addresses row 8 ((l / 8) & 1) + l % 8, column 8 (l / 16), so the four
// matrices are the tile's quarters, top left, bottom left, top right, bottom
// right. out: 32 lanes x 4 registers, x4 then x4.trans.
__global__ void ldmatrix_kernel(const uint16_t* tile, uint32_t* out) {
  __shared__ __align__(16) uint16_t sm[16 * 24];
  const int l = threadIdx.x;
  for (int e = l; e < 16 * 16; e += 32) sm[e / 16 * 24 + e % 16] = tile[e];
  __syncthreads();
  const uint16_t* row = sm + (8 * ((l / 8) & 1) + l % 8) * 24 + 8 * (l / 16);
  uint32_t r[4], rt[4];
  nnc::cuda::ldmatrix_x4(r, row);
  nnc::cuda::ldmatrix_x4_trans(rt, row);
  for (int m = 0; m < 4; m++) out[l * 4 + m] = r[m], out[128 + l * 4 + m] = rt[m];
}

// A cp.async from a source 8 bytes off 16 (which = 0), or an ldmatrix of rows
// 2 bytes off 16 (which = 1): both fault on a GPU.
__global__ void misaligned_kernel(const uint16_t* src, int which) {
  __shared__ __align__(16) uint16_t sm[32 * 8 + 8];
  for (int e = threadIdx.x; e < 32 * 8 + 8; e += 32) sm[e] = 0;
  __syncthreads();
  if (which == 0) {
    nnc::cuda::cp_async16(sm + threadIdx.x * 8, src + 4 + threadIdx.x * 8);
    nnc::cuda::cp_async_commit();
    nnc::cuda::cp_async_wait<0>();
    __syncthreads();
  } else {
    uint32_t r[4];
    nnc::cuda::ldmatrix_x4(r, sm + 1 + threadIdx.x * 8);
  }
}

}  // namespace

// A launch's status: a bad launch at once, a failure as it runs at the wait
// (which leaves it as the last error too: cleared here).
cudaError_t finished() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  cudaGetLastError();
  return e;
}

cudaError_t misaligned(const uint16_t* src, int which) {
  misaligned_kernel<<<1, 32>>>(src, which);
  return finished();
}
cudaError_t cp_async(const void* src, void* out, int wait, int threads) {
  cp_async_kernel<<<1, threads>>>(static_cast<const uint4*>(src), static_cast<uint4*>(out), wait);
  return finished();
}
cudaError_t ldmatrix(const uint16_t* tile, uint32_t* out) {
  ldmatrix_kernel<<<1, 32>>>(tile, out);
  return finished();
}
cudaError_t warp_race(int* seen) {
  warp_race_kernel<<<1, 64>>>(seen);
  return finished();
}
cudaError_t block_sum(const float* x, float* y, int n, int blocks, int threads) {
  block_sum_kernel<<<blocks, threads>>>(x, y, n);
  return finished();
}
cudaError_t warp_ops(const int* x, int* sum, unsigned* ballot, int* up, int* down, int* idx, int threads) {
  warp_kernel<<<1, threads>>>(x, sum, ballot, up, down, idx);
  return finished();
}
cudaError_t reverse_blocks(const float* x, float* y, int blocks, int threads) {
  reverse_kernel<<<blocks, threads, threads * sizeof(float)>>>(x, y, blocks);
  return finished();
}
cudaError_t block_votes(const int* x, int* count, int* any7, int* all_small, int threads) {
  vote_kernel<<<1, threads>>>(x, count, any7, all_small);
  return finished();
}
cudaError_t divergent(int* y) {
  divergent_kernel<<<1, 32>>>(y);
  return finished();
}
cudaError_t early_return(int* y) {
  early_return_kernel<<<1, 32>>>(y);
  return finished();
}
cudaError_t bad_config(int* y) {
  early_return_kernel<<<1, 2048>>>(y);
  return finished();
}

// Fills `bytes` of dynamic shared memory and copies them out (a launch that
// needs the opt-in above 48 KiB; opt_in: cudaFuncSetAttribute first with
// that many bytes, 0: none).
__global__ void big_shared_kernel(unsigned char* out, int bytes) {
  extern __shared__ unsigned char big[];
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) big[i] = static_cast<unsigned char>(i * 7);
  __syncthreads();
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) out[i] = big[bytes - 1 - i];
}
cudaError_t big_shared(unsigned char* out, int bytes, int opt_in) {
  if (opt_in > 0) {
    const cudaError_t e = cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, opt_in);
    if (e != cudaSuccess) return e;
  }
  big_shared_kernel<<<1, 128, bytes>>>(out, bytes);
  return finished();
}

// Queued on a stream, not waited for (the stream tests wait themselves).
__global__ void store_kernel(int* p, int v) { *p = v; }
__global__ void add_one_kernel(const int* x, int* y) { *y = *x + 1; }
cudaError_t store_on(cudaStream_t s, int* p, int v) {
  store_kernel<<<1, 1, 0, s>>>(p, v);
  return cudaGetLastError();
}
cudaError_t add_one_on(cudaStream_t s, const int* x, int* y) {
  add_one_kernel<<<1, 1, 0, s>>>(x, y);
  return cudaGetLastError();
}
cudaError_t divergent_on(cudaStream_t s, int* y) {
  divergent_kernel<<<1, 32, 0, s>>>(y);
  return cudaGetLastError();
}

}  // namespace gpu_emu_selftest
