// GEMM_BACKWARD's bias gradient of a tall g on the GPU (GPU_CUBLAS; dbias by
// our reduction kernels): with few bias elements over many rows it takes the
// sliced launch (gpu::choose_reduce_sliced: runs of rows per thread, the
// partials added in order), in 32F / 16F / 64F, against CPU_REF. Skips
// without a GPU; not emulated (cuBLAS).
//
// Tolerances: g in [-1, 1), so a dbias element is a sum of 3000 terms below 1:
// float partial sums err by at most ~3000 * 2^-24 * 3000 relative to the
// terms' size (1e-6 * n, as the reduction tests); 16F adds one rounding of
// the result (2^-11 relative) and the inputs' own 16F values on both sides.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

TEST(GemmGpu, BiasGradientOfATallG) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(233);
  const int rows = 3000, in = 20, out = 33;
  for (int dt : {CCV_32F, CCV_16F, CCV_64F}) {
    const std::string what = std::string("GEMM_BACKWARD dbias over ") + std::to_string(rows) + " rows, " +
                             (dt == CCV_32F ? "32F" : dt == CCV_16F ? "16F" : "64F");
    // y = x w^T + b: g [rows, out], x [rows, in], w [out, in] -> dx, dw, dbias [out].
    auto g = both({{rows, out}, false, dt}, rng), x = both({{rows, in}, false, dt}, rng);
    auto w = both({{out, in}, false, dt}, rng);
    auto dx = both({{rows, in}, false, dt}, rng), dw = both({{out, in}, false, dt}, rng);
    auto db = both({{out}, false, dt}, rng);
    ccv_nnc_cmd_t back = make_cmd(CCV_NNC_GEMM_BACKWARD);
    back.info.blas.transpose_b[0] = 0, back.info.blas.transpose_b[1] = 1;
    run_both(back, {g.get(), x.get(), w.get()}, {dx.get(), dw.get(), db.get()}, what, CCV_NNC_BACKEND_GPU_CUBLAS);
    const float rtol = dt == CCV_16F ? 4e-3f : 1e-5f;
    db->expect_close(rtol, (dt == CCV_16F ? 2e-3f : 1e-6f) * rows, what + " dbias");
    dw->expect_close(rtol, (dt == CCV_16F ? 2e-3f : 1e-6f) * rows, what + " dw");
    dx->expect_close(rtol, (dt == CCV_16F ? 2e-3f : 1e-6f) * out, what + " dx");
  }
}

}  // namespace
