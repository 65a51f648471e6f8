// GPU_REF DROPOUT, RANDOM_UNIFORM and RANDOM_NORMAL (cuda/rand_gpu.cpp)
// against CPU_REF under one seed (the default generator reseeded before each
// side): the counter-based words are the same, so masks and values must be
// equal — exactly for DROPOUT and RANDOM_UNIFORM (the same double arithmetic,
// one rounding), within 1e-6 relative for RANDOM_NORMAL (the device's double
// log / sqrt / cos / sin may differ from libm in the last bit before the
// rounding to float). Plus the keep rate of a large dropout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

// Runs c on CPU_REF and on GPU_REF, each right after seeding the default generator with `seed`.
void run_seeded(ccv_nnc_cmd_t c, uint32_t seed, const std::vector<Both*>& in, const std::vector<Both*>& out,
                const std::string& what) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  ccv_nnc_stream_context_set_seed(nullptr, seed);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, ci, co), CCV_NNC_EXEC_SUCCESS)
      << what << " (CPU_REF): " << ccv_nnc_error_message();
  ccv_nnc_stream_context_set_seed(nullptr, seed);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, gi, go), CCV_NNC_EXEC_SUCCESS)
      << what << " (GPU_REF): " << ccv_nnc_error_message();
}

ccv_nnc_cmd_t dropout(uint32_t id, float p, int entirety) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.dropout.p = p;
  c.info.dropout.entirety = entirety;
  return c;
}

TEST(GpuRefRand, DropoutMatchesCpuRefUnderOneSeed) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(503);
  struct Case {
    std::vector<int> x;
    bool view, shaped_mask;
    float p;
    int entirety;
  };
  const Case cases[] = {
      {{7, 33}, true, true, 0.3f, 0},    {{1023}, false, false, 0.5f, 0}, {{130, 5}, false, false, 0.1f, 0},
      {{5, 3, 7}, true, false, 0.9f, 0}, {{7, 33}, false, true, 0.5f, 1}, {{7, 33}, false, false, 0.5f, 1},
  };
  uint32_t seed = 11;
  for (const Case& k : cases) {
    std::vector<int> md;
    int mt = CCV_8U;
    if (k.entirety && !k.shaped_mask) {
      md = {1};
    } else if (k.shaped_mask) {
      md = k.x;
    } else {  // libnnc's reserved space in x's type: [128 / 4, ceil(d0 / 128) * d1 * ...]
      int line = (k.x[0] + 127) / 128;
      for (size_t i = 1; i < k.x.size(); i++) line *= k.x[i];
      md = {32, line};
      mt = CCV_32F;
    }
    for (int rep = 0; rep < 3; rep++, seed += 7) {
      auto x = both({k.x, k.view}, rng), y = both({k.x, !k.view}, rng), m = both({md, false, mt}, rng, 0, 1);
      const std::string what = "DROPOUT p " + std::to_string(k.p) + (k.entirety ? " entirety" : "");
      run_seeded(dropout(CCV_NNC_DROPOUT_FORWARD, k.p, k.entirety), seed, {x.get()}, {y.get(), m.get()}, what);
      y->expect_close(0, 0, what + " y");
      m->expect_close(0, 0, what + " mask");
      auto g = both({k.x, false}, rng), dx = both({k.x, k.view}, rng);
      run_seeded(dropout(CCV_NNC_DROPOUT_BACKWARD, k.p, k.entirety), seed,
                 {g.get(), nullptr, x.get(), y.get(), m.get()}, {dx.get()}, what + " backward");
      dx->expect_close(0, 0, what + " backward");
    }
  }
}

TEST(GpuRefRand, DropoutKeepRate) {
  NNC_REQUIRE_GPU();
  // 2^20 elements at p = 0.3: the kept fraction is 0.7 within 10 standard
  // deviations (sqrt(0.21 / 2^20) = 4.5e-4), and kept values are x / 0.7.
  constexpr int n = 1 << 20;
  Owned x(on_gpu(param_of({n}, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false))), y(x->info);
  Owned m(on_gpu(param_of({n}, CCV_8U, CCV_TENSOR_FORMAT_NHWC, false)));
  ccv_nnc_cmd_t set = make_cmd(CCV_NNC_SET_FORWARD);
  set.info.blas.a[0] = 1.4f;
  set.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(exec(set, ccv_nnc_no_hint, {}, {x.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ccv_nnc_cmd_t d = dropout(CCV_NNC_DROPOUT_FORWARD, 0.3f, 0);
  d.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(exec(d, ccv_nnc_no_hint, {x.t}, {y.t, m.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  Owned hy = to_cpu(y), hm = to_cpu(m);
  size_t kept = 0;
  for (int i = 0; i < n; i++) {
    if (hm->data.u8[i]) {
      kept++;
      ASSERT_FLOAT_EQ(hy->data.f32[i], 2.f) << i;
    } else {
      ASSERT_EQ(hy->data.f32[i], 0.f) << i;
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.0045);
}

TEST(GpuRefRand, UniformAndNormalMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(509);
  for (const Spec& s : {Spec{{1023}}, Spec{{7, 33}, true}, Spec{{1}}}) {
    auto u = both(s, rng), z = both(s, rng);
    ccv_nnc_cmd_t cu = make_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD);
    cu.info.blas.a[0] = -2.f, cu.info.blas.a[1] = 3.f;
    run_seeded(cu, 77, {}, {u.get()}, "RANDOM_UNIFORM");
    u->expect_close(0, 0, "RANDOM_UNIFORM");
    ccv_nnc_cmd_t cn = make_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD);
    cn.info.blas.a[0] = 0.5f, cn.info.blas.a[1] = 1.f;
    run_seeded(cn, 78, {}, {z.get()}, "RANDOM_NORMAL");
    z->expect_close(1e-6f, 1e-7f, "RANDOM_NORMAL");
  }
}

}  // namespace
