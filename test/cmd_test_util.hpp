// Helpers for the command-family suites (test/unit/cmd_*): tensors and views
// owned for a test, element access through any strides, command runs, and the
// two generic checks every family uses: backends against CPU_REF, and
// backward commands against central finite differences.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <algorithm>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace cmdtest {

inline ccv_nnc_tensor_param_t param(int datatype, std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

inline ccv_nnc_cmd_t command(uint32_t id, uint32_t backend = 0, float a0 = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.blas.a[0] = a0;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

inline int run(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), nullptr);
}

inline size_t esize(int datatype) {
  switch (datatype) {
    case CCV_8U: return 1;
    case CCV_16F:
    case CCV_16BF: return 2;
    case CCV_32S:
    case CCV_32F: return 4;
    default: return 8;
  }
}

// Independent decoders (not the library's) for checking results.
inline double half_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = man ? NAN : INFINITY;
  else if (exp == 0)
    v = std::ldexp(man, -24);
  else
    v = std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}
inline double bf16_value(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Bits of a double that is exactly a binary16 value (tests feed only those).
inline uint16_t half_exact(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | 0x7e00);
  if (std::isinf(v)) return static_cast<uint16_t>(sign | 0x7c00);
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint16_t h;
  if (e - 1 >= -14)
    h = static_cast<uint16_t>(((e - 1 + 15) << 10) | static_cast<int>(m * 2048 - 1024));
  else
    h = static_cast<uint16_t>(std::ldexp(a, 24));
  EXPECT_EQ(half_value(h), a) << "not a binary16 value: " << v;
  return sign | h;
}

// A tensor, or a view into a larger parent tensor filled with a guard value.
class T {
 public:
  // A packed tensor.
  T(int datatype, std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC) {
    t_ = ccv_nnc_tensor_new(nullptr, param(datatype, dims, format), 0);
    EXPECT_NE(t_, nullptr) << ccv_nnc_error_message();
    cache();
  }
  // A view of `dims` at offset 1 in every dimension of a parent that is
  // (dim + pad) big, so every row is strided.
  static T view(int datatype, std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC, int pad = 3) {
    std::vector<int> big = dims;
    for (int& d : big) d += pad;
    T t(datatype, big, format);
    std::memset(t.t_->data.u8, 0x5a, t.t_->data_size);  // guard bytes
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
    for (size_t i = 0; i < dims.size(); i++) ofs[i] = 1;
    ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(t.t_, param(datatype, dims, format), ofs, nullptr);
    EXPECT_NE(v, nullptr) << ccv_nnc_error_message();
    t.parent_ = t.t_;
    t.t_ = reinterpret_cast<ccv_nnc_tensor_t*>(v);
    t.cache();
    return t;
  }
  T(T&& o) noexcept
      : t_(o.t_), parent_(o.parent_), nd_(o.nd_), dt_(o.dt_), es_(o.es_), count_(o.count_), dims_(std::move(o.dims_)),
        strides_(std::move(o.strides_)) {
    o.t_ = o.parent_ = nullptr;
  }
  T(const T&) = delete;
  T& operator=(const T&) = delete;
  ~T() {
    if (parent_) {
      ccv_nnc_tensor_view_free(reinterpret_cast<ccv_nnc_tensor_view_t*>(t_));
      ccv_nnc_tensor_free(parent_);
    } else {
      ccv_nnc_tensor_free(t_);
    }
  }
  operator ccv_nnc_tensor_t*() const { return t_; }
  ccv_nnc_tensor_t* get() const { return t_; }
  bool is_view() const { return parent_ != nullptr; }

  int nd() const { return nd_; }
  int datatype() const { return dt_; }
  size_t count() const { return count_; }
  // Element strides (packed for a tensor, the view's own otherwise).
  const std::vector<int64_t>& strides() const { return strides_; }
  // Row-major linear index -> address.
  unsigned char* at(size_t linear) const {
    int64_t off = 0;
    for (int i = nd_ - 1; i >= 0; i--) {
      off += static_cast<int64_t>(linear % dims_[i]) * strides_[i];
      linear /= dims_[i];
    }
    return t_->data.u8 + off * es_;
  }
  unsigned char* at(std::initializer_list<int> index) const {
    int64_t off = 0;
    int i = 0;
    for (int x : index) off += x * strides_[i++];
    return t_->data.u8 + off * es_;
  }
  // Value of element `linear` as a double (exact for every type here).
  double get(size_t linear) const { return decode(at(linear), datatype()); }
  // Store v rounded by the C++ conversions (tests only feed exactly representable values to 16F/16BF).
  void set(size_t linear, double v) const { encode(at(linear), datatype(), v); }
  uint64_t bits(size_t linear) const {
    uint64_t b = 0;
    std::memcpy(&b, at(linear), esize(datatype()));
    return b;
  }

  static double decode(const unsigned char* p, int dt) {
    switch (dt) {
      case CCV_8U: return *p;
      case CCV_32S: { int32_t v; std::memcpy(&v, p, 4); return v; }
      case CCV_64S: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
      case CCV_32F: { float v; std::memcpy(&v, p, 4); return v; }
      case CCV_64F: { double v; std::memcpy(&v, p, 8); return v; }
      case CCV_16F: { uint16_t v; std::memcpy(&v, p, 2); return half_value(v); }
      case CCV_16BF: { uint16_t v; std::memcpy(&v, p, 2); return bf16_value(v); }
    }
    return NAN;
  }
  static void encode(unsigned char* p, int dt, double v) {
    switch (dt) {
      case CCV_8U: *p = static_cast<unsigned char>(v); break;
      case CCV_32S: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
      case CCV_64S: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
      case CCV_32F: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
      case CCV_64F: std::memcpy(p, &v, 8); break;
      case CCV_16F: {
        const uint16_t h = half_exact(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case CCV_16BF: {
        float f = static_cast<float>(v);
        uint32_t b;
        std::memcpy(&b, &f, 4);
        uint16_t h = static_cast<uint16_t>(b >> 16);
        std::memcpy(p, &h, 2);
        break;
      }
    }
  }

  // Guard bytes of the parent outside the view are untouched.
  bool guard_intact() const {
    if (!parent_) return true;
    std::vector<bool> inside(parent_->data_size, false);
    const size_t es = esize(datatype());
    for (size_t i = 0; i < count(); i++) {
      const size_t off = static_cast<size_t>(at(i) - parent_->data.u8);
      for (size_t b = 0; b < es; b++) inside[off + b] = true;
    }
    for (size_t b = 0; b < parent_->data_size; b++)
      if (!inside[b] && parent_->data.u8[b] != 0x5a) return false;
    return true;
  }

 private:
  T() = default;
  void cache() {
    nd_ = 0;
    while (nd_ < CCV_NNC_MAX_DIM_ALLOC && t_->info.dim[nd_]) nd_++;
    dt_ = CCV_GET_DATA_TYPE(t_->info.datatype);
    es_ = static_cast<int64_t>(esize(dt_));
    dims_.assign(t_->info.dim, t_->info.dim + nd_);
    count_ = 1;
    for (int d : dims_) count_ *= static_cast<size_t>(d);
    strides_.assign(nd_, 0);
    if (parent_) {
      for (int i = 0; i < nd_; i++) strides_[i] = reinterpret_cast<ccv_nnc_tensor_view_t*>(t_)->stride[i];
    } else {
      int64_t k = 1;
      for (int i = nd_ - 1; i >= 0; i--) {
        strides_[i] = k;
        k *= dims_[i];
      }
    }
  }
  ccv_nnc_tensor_t* t_ = nullptr;
  ccv_nnc_tensor_t* parent_ = nullptr;
  int nd_ = 0;
  int dt_ = 0;
  int64_t es_ = 1;
  size_t count_ = 0;
  std::vector<int> dims_;
  std::vector<int64_t> strides_;
};

// Random values in [-8, 8] exact in the tensor's type, so that sums of three are exact too:
// multiples of 1/64 (1/8 for 16BF), or integers for the integer types.
inline void fill_random(const T& t, std::mt19937& rng) {
  const int dt = t.datatype();
  if (dt == CCV_8U || dt == CCV_32S || dt == CCV_64S) {
    std::uniform_int_distribution<int> d(dt == CCV_8U ? 0 : -1000, dt == CCV_8U ? 255 : 1000);
    for (size_t i = 0; i < t.count(); i++) t.set(i, d(rng));
    return;
  }
  // bfloat16 keeps 8 significant bits: multiples of 1/8 there.
  const int scale = dt == CCV_16BF ? 8 : 64;
  std::uniform_int_distribution<int> d(-8 * scale, 8 * scale);
  for (size_t i = 0; i < t.count(); i++) t.set(i, d(rng) / static_cast<double>(scale));
}

// Full-precision random floats for fp32 / fp64 tensors.
inline void fill_uniform(const T& t, std::mt19937& rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (size_t i = 0; i < t.count(); i++) t.set(i, d(rng));
}

inline bool message_has(const char* needle) {
  const char* m = ccv_nnc_error_message();
  return m && std::strstr(m, needle) != nullptr;
}

// Run `cmd` with an explicit hint.
inline int run_hint(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, std::vector<ccv_nnc_tensor_t*> in,
                    std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), nullptr);
}

// Largest |a - b| / max(1, |b|) over two tensors of one shape.
inline double max_rel_diff(const T& a, const T& b) {
  EXPECT_EQ(a.count(), b.count());
  double worst = 0;
  for (size_t i = 0; i < a.count() && i < b.count(); i++) {
    const double x = a.get(i), y = b.get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::fabs(x - y) / std::max(1.0, std::fabs(y));
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  return worst;
}

// Run `cmd` on CPU_REF and on `backend` with the same inputs; each output list
// gets its own tensors of the given shapes (NULL where shape is empty). Every
// output must agree within `tol` (relative, floored at 1). Returns false on a
// failed run so a caller can stop early.
inline bool expect_backends_agree(ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t& hint, const std::vector<ccv_nnc_tensor_t*>& in,
                                  const std::vector<std::vector<int>>& out_shapes, int datatype, uint32_t backend,
                                  double tol, int format = CCV_TENSOR_FORMAT_NHWC) {
  std::vector<std::unique_ptr<T>> ref, opt;
  std::vector<ccv_nnc_tensor_t*> ref_ptrs, opt_ptrs;
  for (const auto& shape : out_shapes) {
    if (shape.empty()) {
      ref.emplace_back(), opt.emplace_back();
      ref_ptrs.push_back(nullptr), opt_ptrs.push_back(nullptr);
      continue;
    }
    ref.push_back(std::make_unique<T>(datatype, shape, format));
    opt.push_back(std::make_unique<T>(datatype, shape, format));
    ref_ptrs.push_back(ref.back()->get()), opt_ptrs.push_back(opt.back()->get());
  }
  cmd.backend = CCV_NNC_BACKEND_CPU_REF;
  const int a = run_hint(cmd, hint, in, ref_ptrs);
  EXPECT_EQ(a, CCV_NNC_EXEC_SUCCESS) << "CPU_REF: " << ccv_nnc_error_message();
  cmd.backend = backend;
  const int b = run_hint(cmd, hint, in, opt_ptrs);
  EXPECT_EQ(b, CCV_NNC_EXEC_SUCCESS) << ccv_nnc_cmd_backend_name(backend) << ": " << ccv_nnc_error_message();
  if (a != CCV_NNC_EXEC_SUCCESS || b != CCV_NNC_EXEC_SUCCESS) return false;
  bool ok = true;
  for (size_t i = 0; i < ref.size(); i++) {
    if (!ref[i]) continue;
    const double d = max_rel_diff(*opt[i], *ref[i]);
    EXPECT_LE(d, tol) << "output " << i << " differs between CPU_REF and " << ccv_nnc_cmd_backend_name(backend);
    ok = ok && d <= tol;
  }
  return ok;
}

// Check a backward command against central differences, in fp64.
//
// With forward outputs y_j = f_j(x) and fixed random weights r_j, the scalar
// L = sum_j <r_j, y_j> has dL/dx_i = backward(g = r)_i. The backward command
// is called the libnnc way: inputs (g_0..g_{m-1}, x_0..x_{n-1}, y_0..y_{m-1}),
// outputs (dx_0..dx_{n-1}), with NULL for the x_i not in `differentiable`.
// `inputs` are fp64 tensors; `out_shapes` the forward outputs' shapes.
inline void expect_gradients_match(const ccv_nnc_cmd_t& forward, const ccv_nnc_cmd_t& backward,
                                   const ccv_nnc_hint_t& hint, const std::vector<T*>& inputs,
                                   const std::vector<std::vector<int>>& out_shapes,
                                   const std::vector<bool>& differentiable, std::mt19937& rng, double eps = 1e-6,
                                   double tol = 1e-6, int format = CCV_TENSOR_FORMAT_NHWC) {
  std::vector<ccv_nnc_tensor_t*> xs;
  for (T* x : inputs) xs.push_back(x ? x->get() : nullptr);
  std::vector<std::unique_ptr<T>> ys, rs;
  std::vector<ccv_nnc_tensor_t*> y_ptrs, r_ptrs;
  for (const auto& shape : out_shapes) {
    ys.push_back(std::make_unique<T>(CCV_64F, shape, format));
    rs.push_back(std::make_unique<T>(CCV_64F, shape, format));
    fill_uniform(*rs.back(), rng);
    y_ptrs.push_back(ys.back()->get());
    r_ptrs.push_back(rs.back()->get());
  }
  auto loss = [&]() {
    EXPECT_EQ(run_hint(forward, hint, xs, y_ptrs), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    double l = 0;
    for (size_t j = 0; j < ys.size(); j++)
      for (size_t k = 0; k < ys[j]->count(); k++) l += ys[j]->get(k) * rs[j]->get(k);
    return l;
  };
  loss();  // forward outputs for the backward call
  std::vector<std::unique_ptr<T>> dxs;
  std::vector<ccv_nnc_tensor_t*> dx_ptrs;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (!inputs[i] || !differentiable[i]) {
      dxs.emplace_back();
      dx_ptrs.push_back(nullptr);
      continue;
    }
    std::vector<int> shape(inputs[i]->get()->info.dim, inputs[i]->get()->info.dim + inputs[i]->nd());
    dxs.push_back(std::make_unique<T>(CCV_64F, shape, format));
    dx_ptrs.push_back(dxs.back()->get());
  }
  std::vector<ccv_nnc_tensor_t*> bin = r_ptrs;
  bin.insert(bin.end(), xs.begin(), xs.end());
  bin.insert(bin.end(), y_ptrs.begin(), y_ptrs.end());
  ASSERT_EQ(run_hint(backward, hint, bin, dx_ptrs), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (size_t i = 0; i < inputs.size(); i++) {
    if (!dxs[i]) continue;
    T& x = *inputs[i];
    for (size_t k = 0; k < x.count(); k++) {
      const double v = x.get(k);
      x.set(k, v + eps);
      const double up = loss();
      x.set(k, v - eps);
      const double down = loss();
      x.set(k, v);
      const double numeric = (up - down) / (2 * eps);
      const double analytic = dxs[i]->get(k);
      EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::fabs(numeric)))
          << "d/d input " << i << " element " << k;
    }
  }
}

// expect_gradients_match for commands whose extra outputs are statistics, not
// differentiable results (BATCH_NORM's running and saved statistics,
// LAYER_NORM's saved mean / inv_std): only the outputs j with in_loss[j] enter
// L, and the backward call gets NULL for the gradients of the others. Every
// input (differentiable or not) is passed to the backward command as given.
inline void expect_gradients_match_some(const ccv_nnc_cmd_t& forward, const ccv_nnc_cmd_t& backward,
                                        const ccv_nnc_hint_t& hint, const std::vector<T*>& inputs,
                                        const std::vector<std::vector<int>>& out_shapes,
                                        const std::vector<bool>& in_loss, const std::vector<bool>& differentiable,
                                        std::mt19937& rng, double eps = 1e-6, double tol = 1e-6,
                                        int format = CCV_TENSOR_FORMAT_NHWC) {
  std::vector<ccv_nnc_tensor_t*> xs;
  for (T* x : inputs) xs.push_back(x ? x->get() : nullptr);
  std::vector<std::unique_ptr<T>> ys, rs;
  std::vector<ccv_nnc_tensor_t*> y_ptrs, r_ptrs;
  for (size_t j = 0; j < out_shapes.size(); j++) {
    ys.push_back(std::make_unique<T>(CCV_64F, out_shapes[j], format));
    rs.push_back(std::make_unique<T>(CCV_64F, out_shapes[j], format));
    fill_uniform(*rs.back(), rng);
    y_ptrs.push_back(ys.back()->get());
    r_ptrs.push_back(in_loss[j] ? rs.back()->get() : nullptr);
  }
  auto loss = [&]() {
    EXPECT_EQ(run_hint(forward, hint, xs, y_ptrs), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    double l = 0;
    for (size_t j = 0; j < ys.size(); j++)
      if (in_loss[j])
        for (size_t k = 0; k < ys[j]->count(); k++) l += ys[j]->get(k) * rs[j]->get(k);
    return l;
  };
  loss();
  std::vector<std::unique_ptr<T>> dxs;
  std::vector<ccv_nnc_tensor_t*> dx_ptrs;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (!inputs[i] || !differentiable[i]) {
      dxs.emplace_back();
      dx_ptrs.push_back(nullptr);
      continue;
    }
    std::vector<int> shape(inputs[i]->get()->info.dim, inputs[i]->get()->info.dim + inputs[i]->nd());
    dxs.push_back(std::make_unique<T>(CCV_64F, shape, format));
    dx_ptrs.push_back(dxs.back()->get());
  }
  // Trailing NULL gradients are dropped, as a caller would.
  while (!dx_ptrs.empty() && !dx_ptrs.back()) dx_ptrs.pop_back();
  std::vector<ccv_nnc_tensor_t*> bin = r_ptrs;
  bin.insert(bin.end(), xs.begin(), xs.end());
  bin.insert(bin.end(), y_ptrs.begin(), y_ptrs.end());
  ASSERT_EQ(run_hint(backward, hint, bin, dx_ptrs), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (size_t i = 0; i < inputs.size(); i++) {
    if (!dxs[i]) continue;
    T& x = *inputs[i];
    for (size_t k = 0; k < x.count(); k++) {
      const double v = x.get(k);
      x.set(k, v + eps);
      const double up = loss();
      x.set(k, v - eps);
      const double down = loss();
      x.set(k, v);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(dxs[i]->get(k), numeric, tol * std::max(1.0, std::fabs(numeric)))
          << "d/d input " << i << " element " << k;
    }
  }
}

}  // namespace cmdtest
