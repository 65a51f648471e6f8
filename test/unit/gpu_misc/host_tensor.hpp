// A CPU tensor owned by a test of test/unit/gpu_misc, with typed views of
// its data.
#pragma once

#include <cstdint>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace gpu_misc_test {

struct Tensor {
  ccv_nnc_tensor_t* t = nullptr;
  Tensor(int datatype, std::vector<int> dim, int format = CCV_TENSOR_FORMAT_NHWC) {
    ccv_nnc_tensor_param_t p{};
    p.type = CCV_TENSOR_CPU_MEMORY;
    p.format = format;
    p.datatype = datatype;
    for (size_t i = 0; i < dim.size(); i++) p.dim[i] = dim[i];
    t = ccv_nnc_tensor_new(nullptr, p, 0);
  }
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  size_t count() const { return ccv_nnc_tensor_count(t->info); }
  float* f() const { return t->data.f32; }
  uint16_t* h() const { return reinterpret_cast<uint16_t*>(t->data.f16); }
  int* i() const { return t->data.i32; }
};

}  // namespace gpu_misc_test
