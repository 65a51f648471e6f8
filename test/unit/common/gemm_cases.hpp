// What the GEMM tests share (test/unit/cmd_blas, test/unit/gemm_plan,
// test/unit/cuda/gemm_gpu_test.cpp): owned tensors, tensor parameters, fp16 /
// bf16 conversions written here (not the library's), the GEMM command, and
// the random GEMM case generator — odd sizes 1, 3, 17, 129; every transpose;
// 2-d, 3-d and 4-d products; batch broadcast both ways; a 1-d a; every bias
// shape; each operand plain, a padded view or a column-major view — with the
// view layout that goes with it. Headers only: every target that includes it
// has ${PROJECT_SOURCE_DIR}/test among its include directories.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_test_gemm {

using Dims = std::vector<int>;

// ---------------------------------------------------------------------------
// Tensors

struct TensorDeleter {
  void operator()(ccv_nnc_tensor_t* t) const {
    if (t && CCV_IS_TENSOR_VIEW(t))
      ccv_nnc_tensor_view_free(reinterpret_cast<ccv_nnc_tensor_view_t*>(t));
    else
      ccv_nnc_tensor_free(t);
  }
};
using Tensor = std::unique_ptr<ccv_nnc_tensor_t, TensorDeleter>;

// NHWC parameters of the given shape, on the CPU or on GPU 0.
inline ccv_nnc_tensor_param_t params(int datatype, const Dims& dims, bool gpu = false) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = gpu ? (static_cast<int>(CCV_TENSOR_GPU_MEMORY) | static_cast<int>(CCV_COMPUTE_DEVICE_000))
               : CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

inline size_t count(const Dims& d) {
  size_t c = 1;
  for (int x : d) c *= static_cast<size_t>(x);
  return c;
}

inline std::string str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) {
    if (i) s += ',';
    s += std::to_string(d[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------------------
// fp16 and bf16, round to nearest even (no care for infinities or values
// below fp16's normal range but 0: the tests never make them).

inline uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  const uint32_t mant = x & 0x7fffff;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return static_cast<uint16_t>(h);
}
inline float from_half(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const uint32_t x = sign | (static_cast<uint32_t>(exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}
inline float from_bf16(uint16_t h) {
  const uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---------------------------------------------------------------------------
// The command

// GEMM_FORWARD or GEMM_BACKWARD with a = b = 1 (no scaling), the given
// transposes (pairs of axes) and flags, on the given backend.
inline ccv_nnc_cmd_t gemm_cmd(uint32_t id, const int ta[2], const int tb[2], int flags = 0,
                              uint32_t backend = CCV_NNC_BACKEND_CPU_REF) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = p.blas.a[1] = 1;
  p.blas.transpose_a[0] = ta[0], p.blas.transpose_a[1] = ta[1];
  p.blas.transpose_b[0] = tb[0], p.blas.transpose_b[1] = tb[1];
  p.blas.flags = flags;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(id, nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

// ---------------------------------------------------------------------------
// Views: a tensor, a view into a parent padded by 2 in every dimension (offset
// 1 in each), or such a view whose last two dimensions are stored
// column-major (row stride 1). A 1-d column-major operand is made padded.

enum class Kind { plain, padded, colmajor };

struct Layout {
  Kind kind = Kind::plain;
  Dims parent;  // the parent buffer's shape
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
};

inline Layout layout(const Dims& dims, Kind kind) {
  Layout l;
  const int nd = static_cast<int>(dims.size());
  l.kind = nd < 2 && kind == Kind::colmajor ? Kind::padded : kind;
  l.parent = dims;
  if (l.kind == Kind::plain) return l;
  for (int& x : l.parent) x += 2;
  if (l.kind == Kind::colmajor) std::swap(l.parent[nd - 1], l.parent[nd - 2]);
  int acc = 1;
  for (int i = nd; i-- > 0;) l.stride[i] = acc, acc *= l.parent[i];
  for (int i = 0; i < nd; i++) l.ofs[i] = 1;
  if (l.kind == Kind::colmajor) std::swap(l.stride[nd - 1], l.stride[nd - 2]);
  return l;
}

// ---------------------------------------------------------------------------
// The random GEMM case: b = a · w (+ bias), each with a batch of its own.

struct Case {
  int ta[2] = {0, 0}, tb[2] = {0, 0};  // the transposed axes, {0, 0}: none
  int m = 0, n = 0, k = 0;
  size_t batch = 1;    // the output's batch count
  Dims a, w, b, bias;  // bias empty: none
  Kind ka = Kind::plain, kw = Kind::plain, kb = Kind::plain, kbias = Kind::plain;
  std::string text;  // the case in words, for failure messages
};

// Draws from rng (the pick / coin draws of every caller go through these).
struct Draw {
  std::mt19937& rng;
  template <class List>
  int pick(const List& xs) {
    return *(std::begin(xs) + std::uniform_int_distribution<int>(0, static_cast<int>(std::size(xs)) - 1)(rng));
  }
  int pick(std::initializer_list<int> xs) { return pick<std::initializer_list<int>>(xs); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
};

// A random case with count(batch) m n k at most budget. bias_picks: the bias
// shapes to draw from, with repeats as weights — 0 none, 1 [n], 2 [1, n],
// 3 b's shape, 4 [m, n] (with a batch, else none), 5 b's shape with 1 rows
// (per batch, per column; 3-d and more, else none).
inline Case random_case(std::mt19937& rng, size_t budget, const std::vector<int>& bias_picks) {
  Draw d{rng};
  Case c;
  for (;;) {
    const int m = d.pick({1, 3, 17, 129}), n = d.pick({1, 3, 17, 129}), k = d.pick({1, 3, 17, 129});
    const int bnd = d.pick({0, 1, 1, 2, 2});
    Dims batch;
    for (int i = 0; i < bnd; i++) batch.push_back(d.pick({1, 2, 3}));
    if (count(batch) * m * n * k > budget) continue;
    // Each operand's batch: all of it, none, some dimensions 1, or fewer leading ones.
    auto operand_batch = [&]() {
      Dims o = batch;
      switch (d.pick({0, 0, 1, 2, 3})) {
        case 1:
          return Dims{};
        case 2:
          for (int& x : o) x = d.coin(0.5) ? 1 : x;
          return o;
        case 3:
          if (!o.empty()) o.erase(o.begin());
          return o;
        default:
          return o;
      }
    };
    Dims ab = operand_batch(), wb = operand_batch();
    // The output's batch is the broadcast: where neither has the full extent, give it to a.
    for (int i = 0; i < bnd; i++) {
      const int ai = i - (bnd - static_cast<int>(ab.size())), wi = i - (bnd - static_cast<int>(wb.size()));
      const int ax = ai < 0 ? 1 : ab[ai], wx = wi < 0 ? 1 : wb[wi];
      if (ax != batch[i] && wx != batch[i]) {
        if (ai < 0)
          ab = batch;
        else
          ab[ai] = batch[i];
      }
    }
    const bool ta = d.coin(0.5), tb = d.coin(0.5);
    c.m = m, c.n = n, c.k = k, c.batch = count(batch);
    c.a = ab, c.w = wb;
    c.a.push_back(ta ? k : m), c.a.push_back(ta ? m : k);
    c.w.push_back(tb ? n : k), c.w.push_back(tb ? k : n);
    const int and_ = static_cast<int>(c.a.size()), wnd = static_cast<int>(c.w.size());
    if (ta) c.ta[0] = and_ - 2, c.ta[1] = and_ - 1;
    if (tb) c.tb[0] = wnd - 1, c.tb[1] = wnd - 2;  // either order names the same swap
    // A 1-d a (one row) against a 2-d w gives a 1-d b.
    if (!ta && m == 1 && ab.empty() && wb.empty() && d.coin(0.3)) c.a = Dims{k};
    c.b = batch;
    c.b.push_back(m), c.b.push_back(n);
    if (c.a.size() == 1) c.b = Dims{n};
    switch (d.pick(bias_picks)) {
      case 1:
        c.bias = Dims{n};
        break;
      case 2:
        c.bias = Dims{1, n};
        break;
      case 3:
        c.bias = c.b;
        break;
      case 4:
        if (c.b.size() >= 2) c.bias = Dims{m, n};
        break;
      case 5:
        if (c.b.size() >= 3) {
          c.bias = c.b;
          c.bias[c.bias.size() - 2] = 1;  // per batch, per column
        }
        break;
      default:
        break;
    }
    auto kind = [&]() { return static_cast<Kind>(d.pick({0, 0, 0, 1, 2})); };
    c.ka = kind(), c.kw = kind(), c.kb = kind(), c.kbias = kind();
    c.text = "a " + str(c.a) + (ta ? "^T" : "") + " w " + str(c.w) + (tb ? "^T" : "") + " b " + str(c.b) + " bias " +
             str(c.bias) + " views " + std::to_string(int(c.ka)) + std::to_string(int(c.kw)) +
             std::to_string(int(c.kb)) + std::to_string(int(c.kbias));
    return c;
  }
}

}  // namespace nnc_test_gemm
