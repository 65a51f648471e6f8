// The cp.async / ldmatrix probe (ldmatrix_probe.hpp).
#include "cuda/async_copy.cuh"
#include "cuda/ldmatrix_probe.hpp"

namespace nnc::cuda {

namespace {

// Where source row l lives in shared memory: rows of 16 halves (8 used, 16
// bytes of padding), in the order 7 l + 3 mod 32.
__device__ __forceinline__ int probe_row(int l) { return (7 * l + 3) & 31; }

__global__ void ldmatrix_probe(const uint16_t* src, uint32_t* out) {
  __shared__ __align__(16) uint16_t tile[32 * 16];
  const int lane = threadIdx.x;
  uint16_t* row = tile + probe_row(lane) * 16;
  for (int c = 0; c < 16; c++) row[c] = 0xdead;  // overwritten by the copy (first 8)
  __syncthreads();
  cp_async16(row, src + lane * 8);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  for (int c = 0; c < 8; c += 2)
    out[lane * 4 + c / 2] = static_cast<uint32_t>(row[c]) | static_cast<uint32_t>(row[c + 1]) << 16;
  uint32_t* regs = out + 32 * 4 + lane * 12;
  uint32_t x4[4], x4t[4], x2[2], x2t[2];
  ldmatrix_x4(x4, row);
  ldmatrix_x4_trans(x4t, row);
  ldmatrix_x2(x2, row);
  ldmatrix_x2_trans(x2t, row);
  for (int m = 0; m < 4; m++) regs[m] = x4[m], regs[4 + m] = x4t[m];
  for (int m = 0; m < 2; m++) regs[8 + m] = x2[m], regs[10 + m] = x2t[m];
}

}  // namespace

cudaError_t launch_ldmatrix_probe(cudaStream_t s, const uint16_t* src, uint32_t* out) {
  ldmatrix_probe<<<1, 32, 0, s>>>(src, out);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
