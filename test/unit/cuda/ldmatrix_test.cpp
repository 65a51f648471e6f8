// cuda/async_copy.cuh's cp.async and ldmatrix against the PTX ISA's layout
// (cuda/ldmatrix_probe.cu): one warp copies 32 rows of 8 distinct 16-bit
// values into shared memory with cp.async (rows scrambled, padded to 32
// bytes), reads them back, and loads them with ldmatrix .x4 / .x4.trans /
// .x2 / .x2.trans, lane l giving the address of source row l (row r % 8 of
// matrix r / 8). Every value is distinct, so each register must hold
// exactly the pair the ISA names ("ldmatrix": lane l, register m: elements
// (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of matrix m, .trans the
// transpose's; first of the pair in the low half). On a GPU this checks our
// reading of the hardware's layout, which the tensor-core flash forward's
// fragment loads rely on; under CPU emulation, that the emulation follows it.
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/ldmatrix_probe.hpp"
#include "cuda/stream.hpp"
#include "unit/cuda/gpu.hpp"

using namespace nnc_gpu_test;

namespace {

// Element (r, c) of matrix m: distinct, with nonzero halves on both sides.
uint16_t value(int m, int r, int c) { return static_cast<uint16_t>(0x1000 + m * 0x100 + r * 0x10 + c); }

struct Probe {
  std::vector<uint16_t> rows;  // 32 x 8 as read back from shared memory
  std::vector<uint32_t> regs;  // 32 lanes x 12
};

Probe run_probe() {
  std::vector<uint16_t> src(32 * 8);
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 8; c++) src[static_cast<size_t>(r * 8 + c)] = value(r / 8, r % 8, c);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  EXPECT_NE(s, nullptr);
  const cudaStream_t cs = nnc::cuda::stream_of(s, 0, "ldmatrix test");
  void *dsrc = nullptr, *dout = nullptr;
  EXPECT_EQ(cudaMalloc(&dsrc, src.size() * 2), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dout, nnc::cuda::kLdmatrixProbeWords * 4), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dsrc, src.data(), src.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(dout, 0, nnc::cuda::kLdmatrixProbeWords * 4), cudaSuccess);
  // Both are queued on the legacy stream (cudaMemset is asynchronous, and so
  // may be the end of a cudaMemcpy from pageable memory): cs does not wait for it.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(nnc::cuda::launch_ldmatrix_probe(cs, static_cast<const uint16_t*>(dsrc), static_cast<uint32_t*>(dout)),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(cs), cudaSuccess);
  std::vector<uint32_t> out(nnc::cuda::kLdmatrixProbeWords);
  EXPECT_EQ(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dsrc), cudaFree(dout);
  ccv_nnc_stream_context_free(s);
  Probe p;
  for (int w = 0; w < 32 * 4; w++) {
    p.rows.push_back(static_cast<uint16_t>(out[static_cast<size_t>(w)]));
    p.rows.push_back(static_cast<uint16_t>(out[static_cast<size_t>(w)] >> 16));
  }
  p.regs.assign(out.begin() + 32 * 4, out.end());
  return p;
}

uint32_t pair(uint16_t lo, uint16_t hi) { return lo | static_cast<uint32_t>(hi) << 16; }

TEST(LdmatrixLayout, CpAsyncCopiesRows) {
  NNC_REQUIRE_GPU();
  const Probe p = run_probe();
  int bad = 0;
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 8; c++)
      if (p.rows[static_cast<size_t>(r * 8 + c)] != value(r / 8, r % 8, c) && bad++ < 8)
        ADD_FAILURE() << "row " << r << " col " << c << ": " << std::hex << p.rows[static_cast<size_t>(r * 8 + c)];
  EXPECT_EQ(bad, 0);
}

// reg: the register's index in the lane's 12; mats: matrices; trans.
void check_regs(const Probe& p, int first, int mats, bool trans, const char* what) {
  int bad = 0;
  for (int lane = 0; lane < 32; lane++)
    for (int m = 0; m < mats; m++) {
      const int g = lane / 4, t = lane % 4;
      const uint32_t want =
          trans ? pair(value(m, 2 * t, g), value(m, 2 * t + 1, g)) : pair(value(m, g, 2 * t), value(m, g, 2 * t + 1));
      const uint32_t got = p.regs[static_cast<size_t>(lane * 12 + first + m)];
      if (got != want && bad++ < 8)
        ADD_FAILURE() << what << " lane " << lane << " register " << m << ": " << std::hex << got << ", want " << want;
    }
  EXPECT_EQ(bad, 0) << what;
}

TEST(LdmatrixLayout, X4) {
  NNC_REQUIRE_GPU();
  check_regs(run_probe(), 0, 4, false, "x4");
}

TEST(LdmatrixLayout, X4Trans) {
  NNC_REQUIRE_GPU();
  check_regs(run_probe(), 4, 4, true, "x4.trans");
}

TEST(LdmatrixLayout, X2AndX2Trans) {
  NNC_REQUIRE_GPU();
  const Probe p = run_probe();
  check_regs(p, 8, 2, false, "x2");
  check_regs(p, 10, 2, true, "x2.trans");
}

}  // namespace
