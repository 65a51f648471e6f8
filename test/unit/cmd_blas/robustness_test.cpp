// Random calls of the element-wise and broadcasting commands with arbitrary
// shapes, data types, NULLs and tensor counts: every call returns success or
// CCV_NNC_EXEC_INVALID with a message, never crashes, and writes nothing
// outside its outputs (ASan run).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"

using namespace cmdtest;

namespace {

TEST(ElementwiseRobustness, RandomCallsNeverCrash) {
  ccv_nnc_init();
  const uint32_t forwards[] = {CCV_NNC_ADD_FORWARD,   CCV_NNC_MUL_FORWARD,   CCV_NNC_SCALAR_MUL_FORWARD,
                               CCV_NNC_EWPROD_FORWARD, CCV_NNC_EWDIV_FORWARD, CCV_NNC_EWEXP_FORWARD,
                               CCV_NNC_EWLOG_FORWARD,  CCV_NNC_EWSQRT_FORWARD, CCV_NNC_CLAMP_FORWARD,
                               CCV_NNC_MIN_FORWARD,    CCV_NNC_MAX_FORWARD,   CCV_NNC_EWSUM_FORWARD};
  const uint32_t backends[] = {0, CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT};
  const int types[] = {CCV_32F, CCV_32F, CCV_32F, CCV_64F, CCV_16F, CCV_32S};
  std::mt19937 rng(99);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  // A small pool of shapes that often broadcast against each other.
  const std::vector<std::vector<int>> shapes = {{1}, {3}, {2, 3}, {2, 1}, {1, 3}, {4, 2, 3}, {4, 1, 1}, {2, 2, 3},
                                                {3, 2}, {1, 1, 1, 3}, {5}, {2, 4, 2, 3}};
  int ok = 0, invalid = 0;
  for (int it = 0; it < 5000; it++) {
    ccv_nnc_cmd_t cmd = command(forwards[pick(12)] | static_cast<uint32_t>(pick(2)), backends[pick(3)], 0.5f);
    cmd.info.blas.a[1] = 2;
    if ((cmd.cmd & ~1u) == CCV_NNC_CLAMP_FORWARD) cmd.info.clamp.min = -0.5f, cmd.info.clamp.max = pick(2) ? 0.5f : NAN;
    const int dt = pick(4) ? CCV_32F : types[pick(6)];
    // Mostly plausible counts, sometimes anything.
    const int nin = pick(3) ? 1 + pick(3) : pick(6), nout = pick(3) ? 1 + pick(2) : pick(4);
    const auto& first = shapes[pick(static_cast<int>(shapes.size()))];
    std::vector<std::unique_ptr<T>> keep;
    std::vector<ccv_nnc_tensor_t*> in, out;
    auto tensor = [&]() -> ccv_nnc_tensor_t* {
      if (pick(10) == 0) return nullptr;
      const int t = pick(8) ? dt : types[pick(6)];
      // Half the tensors share one shape, so that many calls are valid.
      const auto& s = pick(2) ? first : shapes[pick(static_cast<int>(shapes.size()))];
      keep.push_back(std::make_unique<T>(pick(4) ? T(t, s) : T::view(t, s)));
      if (t == CCV_32F || t == CCV_64F) fill_uniform(*keep.back(), rng, 0.1, 2);
      return keep.back()->get();
    };
    for (int i = 0; i < nin; i++) in.push_back(tensor());
    for (int i = 0; i < nout; i++) out.push_back(tensor());
    const int code = run(cmd, in, out);
    ASSERT_TRUE(code == CCV_NNC_EXEC_SUCCESS || code == CCV_NNC_EXEC_INVALID) << code;
    if (code == CCV_NNC_EXEC_INVALID) {
      const char* m = ccv_nnc_error_message();
      ASSERT_TRUE(m && *m) << "no message for command " << cmd.cmd;
      invalid++;
    } else {
      ok++;
    }
    for (const auto& t : keep) ASSERT_TRUE(t->guard_intact()) << "command " << cmd.cmd << " wrote outside a view";
  }
  // Both outcomes were exercised.
  EXPECT_GT(ok, 100);
  EXPECT_GT(invalid, 500);
}

}  // namespace
