// cuda/mma.cuh's tensor-core product against a double product: one warp
// computes D = A B (16 x 16 by 16 x 8) through mma_16816 with its operands
// gathered into fragments by the PTX ISA's documented layout
// (cuda/mma_probe.cu). The entries are multiples of 1/64 in [-2, 2], exact
// in fp16 and bf16, so every product and every partial sum is exact in
// float: D must equal the double product exactly. A misplaced fragment
// element (a swapped half of a register, g and t exchanged, rows 8 apart)
// changes some sum. On a GPU this checks our reading of the hardware's
// layout, which the flash attention forward's tensor-core kernel relies on;
// under CPU emulation, that the emulation computes by the same layout.
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/mma_probe.hpp"
#include "cuda/stream.hpp"
#include "unit/cuda/gpu.hpp"

using namespace nnc_gpu_test;

namespace {

uint16_t to_bits(float v, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return static_cast<uint16_t>(u >> 16);  // exact: v has at most 8 significant bits
  }
  uint16_t h;
  ccv_float_to_half_precision(&v, &h, 1);
  return h;
}

void check_product(bool bf16) {
  std::mt19937 rng(bf16 ? 29 : 17);
  std::uniform_int_distribution<int> k(-128, 128);
  std::vector<float> A(16 * 16), B(16 * 8);
  for (auto& x : A) x = k(rng) / 64.f;
  for (auto& x : B) x = k(rng) / 64.f;
  std::vector<uint16_t> a(A.size()), b(B.size());
  for (size_t i = 0; i < A.size(); i++) a[i] = to_bits(A[i], bf16);
  for (size_t i = 0; i < B.size(); i++) b[i] = to_bits(B[i], bf16);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr);
  const cudaStream_t cs = nnc::cuda::stream_of(s, 0, "mma test");
  void *da = nullptr, *db = nullptr, *dd = nullptr;
  ASSERT_EQ(cudaMalloc(&da, a.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dd, 16 * 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  // cudaMemcpy from pageable memory may return before its copy lands, on the
  // legacy stream, which the non-blocking stream cs does not wait for.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(nnc::cuda::launch_mma_probe(cs, bf16, da, db, static_cast<float*>(dd)), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(cs), cudaSuccess);
  std::vector<float> D(16 * 8, -1.f);
  ASSERT_EQ(cudaMemcpy(D.data(), dd, D.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(da), cudaFree(db), cudaFree(dd);
  ccv_nnc_stream_context_free(s);
  int bad = 0;
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 8; c++) {
      double want = 0;
      for (int x = 0; x < 16; x++) want += static_cast<double>(A[r * 16 + x]) * B[x * 8 + c];
      if (D[r * 8 + c] != static_cast<float>(want) && bad++ < 8)
        ADD_FAILURE() << (bf16 ? "bf16" : "fp16") << " D[" << r << "][" << c << "] = " << D[r * 8 + c]
                      << ", want " << want;
    }
  EXPECT_EQ(bad, 0);
}

TEST(MmaLayout, Fp16ProductIsExact) {
  NNC_REQUIRE_GPU();
  check_product(false);
}

TEST(MmaLayout, Bf16ProductIsExact) {
  NNC_REQUIRE_GPU();
  check_product(true);
}

}  // namespace
