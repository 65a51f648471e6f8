// Small helpers shared by the GoogleTest suites.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_test {

// Tensor parameters without compound literals (C++ cannot use the C macros).
inline ccv_nnc_tensor_param_t cpu_param(int datatype, std::initializer_list<int> dims,
                                        int format = CCV_TENSOR_FORMAT_NHWC) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  int i = 0;
  for (int d : dims) p.dim[i++] = d;
  return p;
}

inline ccv_nnc_cmd_param_t no_params() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  return p;
}

// Owns a tensor for the length of a test.
struct Tensor {
  ccv_nnc_tensor_t* t = nullptr;
  explicit Tensor(ccv_nnc_tensor_param_t p) : t(ccv_nnc_tensor_new(nullptr, p, 0)) {}
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  operator ccv_nnc_tensor_t*() const { return t; }
  ccv_nnc_tensor_t* operator->() const { return t; }
  float* f32() const { return t->data.f32; }
};

inline void fill_uniform(float* p, size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  for (size_t i = 0; i < n; i++) p[i] = d(rng);
}

}  // namespace nnc_test
