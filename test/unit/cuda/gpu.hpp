// Helpers for the GPU tests: skip without a GPU, move tensors between host
// and device through DATA_TRANSFER, compare a GPU result with a CPU one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_gpu_test {

inline bool have_gpu() { return ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) > 0; }
#define NNC_REQUIRE_GPU()                        \
  if (!::nnc_gpu_test::have_gpu()) GTEST_SKIP() \
      << "no GPU found (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0): GPU tests skipped"

// A tensor owned by the test, freed at scope exit.
struct Owned {
  ccv_nnc_tensor_t* t = nullptr;
  Owned() = default;
  explicit Owned(ccv_nnc_tensor_param_t p) : t(ccv_nnc_tensor_new(nullptr, p, 0)) {}
  ~Owned() {
    if (t) ccv_nnc_tensor_free(t);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : t(o.t) { o.t = nullptr; }
  Owned& operator=(Owned&& o) noexcept {
    std::swap(t, o.t);
    return *this;
  }
  ccv_nnc_tensor_t* operator->() const { return t; }
  operator ccv_nnc_tensor_t*() const { return t; }
};

// The same parameters with the memory moved to GPU 0 (or to the CPU).
inline ccv_nnc_tensor_param_t on_gpu(ccv_nnc_tensor_param_t p) {
  p.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | static_cast<int>(CCV_COMPUTE_DEVICE_000);
  return p;
}
inline ccv_nnc_tensor_param_t on_cpu(ccv_nnc_tensor_param_t p) {
  p.type = CCV_TENSOR_CPU_MEMORY;
  return p;
}

inline int exec(ccv_nnc_cmd_t c, ccv_nnc_hint_t hint, std::vector<ccv_nnc_tensor_t*> in,
                std::vector<ccv_nnc_tensor_t*> out, ccv_nnc_stream_context_t* stream = nullptr) {
  return ccv_nnc_cmd_exec(c, hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                          stream);
}

inline ccv_nnc_cmd_t transfer() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, p, 0);
}

// A GPU copy of a CPU tensor, and a CPU copy of a GPU tensor.
inline Owned to_gpu(const ccv_nnc_tensor_t* cpu) {
  Owned g(on_gpu(cpu->info));
  EXPECT_EQ(exec(transfer(), ccv_nnc_no_hint, {const_cast<ccv_nnc_tensor_t*>(cpu)}, {g.t}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  return g;
}
inline Owned to_cpu(const ccv_nnc_tensor_t* gpu) {
  Owned c(on_cpu(gpu->info));
  EXPECT_EQ(exec(transfer(), ccv_nnc_no_hint, {const_cast<ccv_nnc_tensor_t*>(gpu)}, {c.t}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  return c;
}

// Fills a packed fp32 CPU tensor with uniform values in [lo, hi).
inline void fill(ccv_nnc_tensor_t* t, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  const size_t n = ccv_nnc_tensor_count(t->info);
  for (size_t i = 0; i < n; i++) t->data.f32[i] = d(rng);
}

// Asserts |gpu - cpu| <= atol + rtol |cpu| element by element (packed fp32);
// gpu may live on the GPU (it is copied back).
inline void expect_close(const ccv_nnc_tensor_t* gpu, const ccv_nnc_tensor_t* cpu, float rtol, float atol,
                         const char* what) {
  Owned back;
  const ccv_nnc_tensor_t* g = gpu;
  if (CCV_TENSOR_GET_MEMORY(gpu->info.type) == CCV_TENSOR_GPU_MEMORY) {
    back = to_cpu(gpu);
    g = back.t;
  }
  const size_t n = ccv_nnc_tensor_count(cpu->info);
  ASSERT_EQ(ccv_nnc_tensor_count(g->info), n) << what;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const float a = g->data.f32[i], b = cpu->data.f32[i];
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected " << b;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements differ";
}

}  // namespace nnc_gpu_test
