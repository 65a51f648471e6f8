// Tensors held twice for the GPU_REF tests: a CPU copy and a GPU copy of the
// same random values, optionally as views (a window of a larger parent, so
// strides are not packed and the parent's border must stay untouched). A
// command runs on CPU_REF over the CPU side and on GPU_REF over the GPU side;
// then every parent is compared whole.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"

namespace nnc_gpu_test {

struct Spec {
  std::vector<int> dim;
  bool view = false;
  int datatype = CCV_32F;
  int format = CCV_TENSOR_FORMAT_NHWC;
};

inline ccv_nnc_tensor_param_t param_of(const std::vector<int>& dim, int datatype, int format, bool gpu) {
  ccv_nnc_tensor_param_t p{};
  p.type = gpu ? (static_cast<int>(CCV_TENSOR_GPU_MEMORY) | static_cast<int>(CCV_COMPUTE_DEVICE_000))
               : CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < dim.size(); i++) p.dim[i] = dim[i];
  return p;
}

inline ccv_nnc_cmd_t make_cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

// Fills a packed CPU tensor of any float type with uniform values in [lo, hi),
// or of an integer type (32S, 64S, 8U) with integers in [lo, hi].
inline void fill_any(ccv_nnc_tensor_t* t, std::mt19937& rng, float lo, float hi) {
  const int type = CCV_GET_DATA_TYPE(t->info.datatype);
  if (type == CCV_32F) {
    fill(t, rng, lo, hi);
    return;
  }
  // Other types: made as 32F and converted on the CPU (CPU_REF).
  ccv_nnc_tensor_param_t p = t->info;
  p.datatype = CCV_32F;
  if (type == CCV_32S || type == CCV_64S || type == CCV_8U) {
    std::uniform_int_distribution<int> d(static_cast<int>(lo), static_cast<int>(hi));
    for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) {
      const int v = d(rng);
      if (type == CCV_32S) t->data.i32[i] = v;
      if (type == CCV_64S) t->data.i64[i] = v;
      if (type == CCV_8U) t->data.u8[i] = static_cast<unsigned char>(v);
    }
    return;
  }
  Owned f(p);
  fill(f, rng, lo, hi);
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {f.t}, {t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
}

// A packed 32F copy of a CPU tensor of any float type.
inline Owned as_f32(const ccv_nnc_tensor_t* t) {
  ccv_nnc_tensor_param_t p = t->info;
  p.datatype = CCV_32F;
  Owned f(p);
  const int type = CCV_GET_DATA_TYPE(t->info.datatype);
  if (type == CCV_32S || type == CCV_64S || type == CCV_8U) {
    for (size_t i = 0; i < ccv_nnc_tensor_count(p); i++)
      f->data.f32[i] = type == CCV_32S   ? static_cast<float>(t->data.i32[i])
                       : type == CCV_64S ? static_cast<float>(t->data.i64[i])
                                         : static_cast<float>(t->data.u8[i]);
    return f;
  }
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {const_cast<ccv_nnc_tensor_t*>(t)}, {f.t}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  return f;
}

class Both {
 public:
  Both(const Spec& s, std::mt19937& rng, float lo = -1, float hi = 1) : spec_(s) {
    std::vector<int> pdim = s.dim;
    if (s.view)
      for (int& d : pdim) d += 2;  // a border of one on each side
    cpu_parent_ = Owned(param_of(pdim, s.datatype, s.format, false));
    fill_any(cpu_parent_, rng, lo, hi);
    gpu_parent_ = to_gpu(cpu_parent_);
    if (s.view) {
      int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
      int m = 1;
      for (int i = static_cast<int>(pdim.size()) - 1; i >= 0; i--) {
        ofs[i] = 1;
        stride[i] = m;
        m *= pdim[static_cast<size_t>(i)];
      }
      cpu_view_ = ccv_nnc_tensor_view_new(cpu_parent_, param_of(s.dim, s.datatype, s.format, false), ofs, stride);
      gpu_view_ = ccv_nnc_tensor_view_new(gpu_parent_, param_of(s.dim, s.datatype, s.format, true), ofs, stride);
      EXPECT_NE(cpu_view_, nullptr) << ccv_nnc_error_message();
      EXPECT_NE(gpu_view_, nullptr) << ccv_nnc_error_message();
    }
  }
  ~Both() {
    if (cpu_view_) ccv_nnc_tensor_view_free(cpu_view_);
    if (gpu_view_) ccv_nnc_tensor_view_free(gpu_view_);
  }
  Both(const Both&) = delete;
  Both& operator=(const Both&) = delete;

  // The packed CPU parent (to set values by hand), then upload() to copy it
  // to the GPU parent again.
  ccv_nnc_tensor_t* cpu_parent() const { return cpu_parent_.t; }
  ccv_nnc_tensor_t* gpu_parent() const { return gpu_parent_.t; }
  void upload() const {
    EXPECT_EQ(exec(transfer(), ccv_nnc_no_hint, {cpu_parent_.t}, {gpu_parent_.t}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
  }

  ccv_nnc_tensor_t* cpu() const { return cpu_view_ ? reinterpret_cast<ccv_nnc_tensor_t*>(cpu_view_) : cpu_parent_.t; }
  ccv_nnc_tensor_t* gpu() const { return gpu_view_ ? reinterpret_cast<ccv_nnc_tensor_t*>(gpu_view_) : gpu_parent_.t; }

  // The GPU parent against the CPU parent, element by element, as 32F:
  // |gpu - cpu| <= atol + rtol |cpu| (NaN only where both are NaN).
  void expect_close(float rtol, float atol, const std::string& what) const {
    Owned back = to_cpu(gpu_parent_);
    Owned g = as_f32(back), c = as_f32(cpu_parent_);
    const size_t n = ccv_nnc_tensor_count(c->info);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      const float a = g->data.f32[i], b = c->data.f32[i];
      const bool ok = a == b || (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= atol + rtol * std::fabs(b);
      if (!ok && bad++ < 5) ADD_FAILURE() << what << ": parent element " << i << " is " << a << ", expected " << b;
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements differ";
  }

 private:
  Spec spec_;
  Owned cpu_parent_, gpu_parent_;
  ccv_nnc_tensor_view_t* cpu_view_ = nullptr;
  ccv_nnc_tensor_view_t* gpu_view_ = nullptr;
};

using BothPtr = std::unique_ptr<Both>;
inline BothPtr both(const Spec& s, std::mt19937& rng, float lo = -1, float hi = 1) {
  return std::make_unique<Both>(s, rng, lo, hi);
}

// An attention mask (packed, of type dt, both sides): uniform values with
// every `every`-th entry -inf (set as 32F on the CPU parent, converted there,
// then uploaded); NULL for empty dims.
inline BothPtr attn_mask(const std::vector<int>& dims, int dt, std::mt19937& rng, size_t every) {
  if (dims.empty()) return nullptr;
  BothPtr m = both({dims, false, dt}, rng);
  Owned f = as_f32(m->cpu_parent());
  for (size_t i = 0; i < ccv_nnc_tensor_count(f->info); i += every)
    f->data.f32[i] = -std::numeric_limits<float>::infinity();
  ccv_nnc_cmd_t conv = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  conv.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(conv, ccv_nnc_no_hint, {f.t}, {m->cpu_parent()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  m->upload();
  return m;
}

// Runs c on CPU_REF over the CPU sides and on gpu_backend (GPU_REF unless
// named) over the GPU sides (NULL entries stay NULL); both must succeed.
inline void run_both(ccv_nnc_cmd_t c, const std::vector<Both*>& in, const std::vector<Both*>& out,
                     const std::string& what, uint32_t gpu_backend = CCV_NNC_BACKEND_GPU_REF) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) {
    ci.push_back(b ? b->cpu() : nullptr);
    gi.push_back(b ? b->gpu() : nullptr);
  }
  for (Both* b : out) {
    co.push_back(b ? b->cpu() : nullptr);
    go.push_back(b ? b->gpu() : nullptr);
  }
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, ci, co), CCV_NNC_EXEC_SUCCESS)
      << what << " (CPU_REF): " << ccv_nnc_error_message();
  c.backend = gpu_backend;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, gi, go), CCV_NNC_EXEC_SUCCESS)
      << what << " (" << ccv_nnc_cmd_backend_name(gpu_backend) << "): " << ccv_nnc_error_message();
}

}  // namespace nnc_gpu_test
