// The vector path of the GPU_REF element-wise kernels (cuda/ew_kernels.cu,
// decision: lib/cmd/common/gpu_vec.hpp): 16 bytes per operand per thread for
// packed (and scalar / bias-like broadcast) operands aligned alike, a scalar
// head and tail around the vectors. Every call here runs three times over the
// same inputs: GPU_REF on the scalar kernels (NNC_GPU_EW_VEC=0), GPU_REF as it
// chooses, and CPU_REF. The two GPU results must agree BIT FOR BIT (the vector
// kernels compute each element exactly as the scalar ones), the GPU result
// must be close to CPU_REF, and the vector path must have run exactly when the
// operands' addresses allow it (vec_launches(), checked against an
// expectation computed here from the real device addresses, independently of
// choose_ew_vec). Windows start at element 0, 1 or 3 of their buffers (so
// vectors need a head, or operands misaligned unlike each other must take the
// scalar path) and end at the buffer's end, so under EMU_EXACT_MEMORY a tail
// that reads past the end stops the program; element counts 1, 3, 7, 8, 9,
// 33, 4097 and 2^17 + 5 (around every vector width: 4 for 32F, 8 for 16F /
// 16BF, 2..16 for copies and conversions); in place; every fixed-arity op.
//
// Tolerances against CPU_REF (which computes in double and rounds once): 32F
// as ewgpu_test (rtol 2e-6: a chain of at most four float operations of <= 2
// ulp each; atol 1e-6 near 0); 16F / 16BF round the float result once to the
// half type where CPU_REF rounds the double one: at most one half ulp apart,
// 2^-10 (16F) or 2^-7 (16BF) relative, so rtol 2e-3 / 1.6e-2. Copies, SET and
// the conversions are exact. A wrong element, offset or lane is off by O(1).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cuda/kern.hpp"
#include "test/unit/cuda/env_guard.hpp"
#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"
#include "test/unit/cuda/half_util.hpp"
#include "test/unit/cuda/optim_cases.hpp"

namespace {

using namespace nnc_gpu_test;

int esize(int dt) { return dt == CCV_64F ? 8 : (dt == CCV_16F || dt == CCV_16BF) ? 2 : 4; }

// Elements [start, start + n) of a buffer of start + n elements (start 0: the
// buffer itself, packed), shaped `dim`, on the CPU and on the GPU with the
// same random values; the buffer's first values are kept to restore both.
class Win {
 public:
  Win(const std::vector<int>& dim, int start, int dt, std::mt19937& rng, float lo = -1, float hi = 1) {
    int64_t n = 1;
    for (int d : dim) n *= d;
    n_ = n;
    dt_ = dt;
    cpu_ = Owned(param_of({static_cast<int>(start + n)}, dt, CCV_TENSOR_FORMAT_NHWC, false));
    fill_any(cpu_, rng, lo, hi);
    init_.assign(cpu_->data.u8, cpu_->data.u8 + bytes());
    gpu_ = to_gpu(cpu_);
    if (start > 0 || dim.size() > 1) {
      int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
      int m = 1;
      for (int i = static_cast<int>(dim.size()) - 1; i >= 0; i--) {
        stride[i] = m;
        m *= dim[static_cast<size_t>(i)];
      }
      ofs[dim.size() - 1] = start;
      cv_ = ccv_nnc_tensor_view_new(cpu_, param_of(dim, dt, CCV_TENSOR_FORMAT_NHWC, false), ofs, stride);
      gv_ = ccv_nnc_tensor_view_new(gpu_, param_of(dim, dt, CCV_TENSOR_FORMAT_NHWC, true), ofs, stride);
      EXPECT_NE(cv_, nullptr) << ccv_nnc_error_message();
      EXPECT_NE(gv_, nullptr) << ccv_nnc_error_message();
    }
  }
  ~Win() {
    if (cv_) ccv_nnc_tensor_view_free(cv_);
    if (gv_) ccv_nnc_tensor_view_free(gv_);
  }
  Win(const Win&) = delete;
  Win& operator=(const Win&) = delete;

  ccv_nnc_tensor_t* cpu() const { return cv_ ? reinterpret_cast<ccv_nnc_tensor_t*>(cv_) : cpu_.t; }
  ccv_nnc_tensor_t* gpu() const { return gv_ ? reinterpret_cast<ccv_nnc_tensor_t*>(gv_) : gpu_.t; }
  int64_t n() const { return n_; }
  int dt() const { return dt_; }
  // Element offset of the GPU window's first element modulo w (from its address).
  int64_t mis(int w) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(gpu()->data.u8);
    EXPECT_EQ(a % static_cast<uintptr_t>(esize(dt_)), 0u);
    return static_cast<int64_t>((a / static_cast<uintptr_t>(esize(dt_))) % static_cast<uintptr_t>(w));
  }
  size_t bytes() const { return ccv_nnc_tensor_count(cpu_->info) * static_cast<size_t>(esize(dt_)); }
  void restore() const {
    std::memcpy(cpu_->data.u8, init_.data(), init_.size());
    EXPECT_EQ(exec(transfer(), ccv_nnc_no_hint, {cpu_.t}, {gpu_.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  }
  std::vector<uint8_t> gpu_bytes() const {
    Owned b = to_cpu(gpu_);
    return std::vector<uint8_t>(b->data.u8, b->data.u8 + bytes());
  }
  // The whole GPU buffer against the whole CPU buffer, as 32F.
  void expect_close(float rtol, float atol, const std::string& what) const {
    Owned back = to_cpu(gpu_);
    Owned g = as_f32(back), c = as_f32(cpu_);
    const size_t n = ccv_nnc_tensor_count(c->info);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      const float a = g->data.f32[i], b = c->data.f32[i];
      const bool ok = a == b || std::fabs(a - b) <= atol + rtol * std::fabs(b);
      if (!ok && bad++ < 5) ADD_FAILURE() << what << ": buffer element " << i << " is " << a << ", expected " << b;
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements differ";
  }

 private:
  Owned cpu_, gpu_;
  ccv_nnc_tensor_view_t* cv_ = nullptr;
  ccv_nnc_tensor_view_t* gv_ = nullptr;
  std::vector<uint8_t> init_;
  int64_t n_ = 0;
  int dt_ = CCV_32F;
};

float rtol_of(int dt) { return dt == CCV_16F ? 2e-3f : dt == CCV_16BF ? 1.6e-2f : 2e-6f; }

// Whether a launch over windows `vec` (the operands read or written as
// vectors) of n elements must take the vector path: all misaligned alike
// modulo w = 16 / the largest element size, and one whole vector after the
// head. Two-dimensional plans (inner > 0): no misalignment and inner a
// multiple of w.
bool expect_vec(const std::vector<const Win*>& vec, int64_t n, int64_t inner = 0) {
  int big = 0;
  for (const Win* v : vec) big = std::max(big, esize(v->dt()));
  const int w = 16 / big;
  const int64_t m = vec[0]->mis(w);
  for (const Win* v : vec)
    if (v->mis(w) != m) return false;
  if (inner > 0) return m == 0 && inner % w == 0;
  const int64_t head = (w - m) % w;
  return n - head >= w;
}

// Runs c over the windows three ways (above) and checks what the header says;
// `vec`: how many of the call's launches must take the vector path (the
// calls here make one launch, but EWDIV_BACKWARD with da and db: two).
void check(ccv_nnc_cmd_t c, const std::vector<const Win*>& in, const std::vector<const Win*>& out, int vec,
           const std::string& what, float rtol, float atol = 1e-6f) {
  std::set<const Win*> all(in.begin(), in.end());
  all.insert(out.begin(), out.end());
  all.erase(nullptr);
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (const Win* w : in) {
    ci.push_back(w ? w->cpu() : nullptr);
    gi.push_back(w ? w->gpu() : nullptr);
  }
  for (const Win* w : out) {
    co.push_back(w ? w->cpu() : nullptr);
    go.push_back(w ? w->gpu() : nullptr);
  }
  for (const Win* w : all) w->restore();
  std::vector<std::vector<uint8_t>> scalar;
  {
    EnvGuard off("NNC_GPU_EW_VEC", "0");
    c.backend = CCV_NNC_BACKEND_GPU_REF;
    const uint64_t before = nnc::cuda::vec_launches();
    ASSERT_EQ(exec(c, ccv_nnc_no_hint, gi, go), CCV_NNC_EXEC_SUCCESS) << what << ": " << ccv_nnc_error_message();
    EXPECT_EQ(nnc::cuda::vec_launches(), before) << what << ": NNC_GPU_EW_VEC=0 still took the vector path";
    for (const Win* w : out) scalar.push_back(w->gpu_bytes());
  }
  for (const Win* w : all) w->restore();
  {
    EnvGuard on("NNC_GPU_EW_VEC", nullptr);
    c.backend = CCV_NNC_BACKEND_GPU_REF;
    const uint64_t before = nnc::cuda::vec_launches();
    ASSERT_EQ(exec(c, ccv_nnc_no_hint, gi, go), CCV_NNC_EXEC_SUCCESS) << what << ": " << ccv_nnc_error_message();
    const uint64_t ran = nnc::cuda::vec_launches() - before;
    EXPECT_EQ(ran, static_cast<uint64_t>(vec))
        << what << (vec ? ": the vector path did not run" : ": the vector path ran on operands it must decline");
  }
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, ci, co), CCV_NNC_EXEC_SUCCESS) << what << " (CPU_REF): " << ccv_nnc_error_message();
  for (size_t j = 0; j < out.size(); j++) {
    const std::vector<uint8_t> v = out[j]->gpu_bytes();
    ASSERT_EQ(v.size(), scalar[j].size());
    size_t first = v.size();
    for (size_t b = 0; b < v.size() && first == v.size(); b++)
      if (v[b] != scalar[j][b]) first = b;
    EXPECT_EQ(first, v.size()) << what << ": output " << j << " differs from the scalar kernels' at byte " << first;
    out[j]->expect_close(rtol, atol, what + " output " + std::to_string(j));
  }
  for (const Win* w : all) w->restore();
}

ccv_nnc_cmd_t blas(uint32_t id, float p, float q = 0) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.blas.a[0] = p;
  c.info.blas.a[1] = q;
  return c;
}

std::string name(const char* op, int dt, int64_t n, int sx, int sy) {
  return std::string(op) + " " + tname(dt) + " n=" + std::to_string(n) + " starts " + std::to_string(sx) + "/" +
         std::to_string(sy);
}

constexpr int kTypes[] = {CCV_32F, CCV_16F, CCV_16BF};
constexpr int kCounts[] = {1, 3, 7, 8, 9, 33, 4097};
// (input start, output start): aligned alike, misaligned alike, unlike.
constexpr int kStarts[][2] = {{0, 0}, {1, 1}, {3, 3}, {1, 0}, {0, 3}};

// One-input forwards and the one-input backwards' families, out of place and in place.
TEST(GpuEwVec, UnaryForward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1901);
  const uint32_t ops[] = {CCV_NNC_EWEXP_FORWARD, CCV_NNC_EWLOG_FORWARD, CCV_NNC_EWSQRT_FORWARD,
                          CCV_NNC_RELU_FORWARD,  CCV_NNC_SIGMOID_FORWARD, CCV_NNC_TANH_FORWARD,
                          CCV_NNC_SCALAR_MUL_FORWARD};
  for (int dt : kTypes)
    for (int n : kCounts)
      for (const auto& st : kStarts) {
        for (uint32_t op : ops) {
          const bool positive = op == CCV_NNC_EWLOG_FORWARD || op == CCV_NNC_EWSQRT_FORWARD;
          Win x({n}, st[0], dt, rng, positive ? 0.5f : -2.f, 2.f), y({n}, st[1], dt, rng);
          const ccv_nnc_cmd_t c = op == CCV_NNC_SCALAR_MUL_FORWARD ? blas(op, -1.75f) : make_cmd(op);
          const char* on = ccv_nnc_cmd_name(op);
          check(c, {&x}, {&y}, expect_vec({&x, &y}, n), name(on, dt, n, st[0], st[1]), rtol_of(dt));
          if (st[0] == st[1])
            check(c, {&x}, {&x}, expect_vec({&x}, n), name(on, dt, n, st[0], st[0]) + " in place", rtol_of(dt));
          if (HasFailure()) return;
        }
      }
}

// Two inputs: EWSUM, EWPROD, EWDIV (and 1 / b), ADD (a x + b y), MUL; three
// inputs: EWSUM, EWPROD. Output aliasing the first input too.
TEST(GpuEwVec, BinaryAndTernary) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1902);
  for (int dt : kTypes)
    for (int n : kCounts)
      for (const auto& st : kStarts) {
        Win a({n}, st[0], dt, rng), b({n}, st[1], dt, rng, 0.5f, 1.5f), c3({n}, st[0], dt, rng),
            y({n}, st[1], dt, rng);
        const bool v2 = expect_vec({&a, &b, &y}, n), v3 = expect_vec({&a, &b, &c3, &y}, n);
        const float r = rtol_of(dt);
        check(make_cmd(CCV_NNC_EWSUM_FORWARD), {&a, &b}, {&y}, v2, name("EWSUM", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWPROD_FORWARD), {&a, &b}, {&y}, v2, name("EWPROD", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWDIV_FORWARD), {&a, &b}, {&y}, v2, name("EWDIV", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWDIV_FORWARD), {nullptr, &b}, {&y}, expect_vec({&b, &y}, n),
              name("EWDIV 1/b", dt, n, st[0], st[1]), r);
        check(blas(CCV_NNC_ADD_FORWARD, 0.5f, -2.f), {&a, &b}, {&y}, v2, name("ADD", dt, n, st[0], st[1]), r);
        check(blas(CCV_NNC_MUL_FORWARD, 3.f), {&a, &b}, {&y}, v2, name("MUL", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWSUM_FORWARD), {&a, &b, &c3}, {&y}, v3, name("EWSUM x3", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWPROD_FORWARD), {&a, &b, &c3}, {&y}, v3, name("EWPROD x3", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWSUM_FORWARD), {&a, &b}, {&a}, expect_vec({&a, &b}, n),
              name("EWSUM in place", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_EWDIV_FORWARD), {&a, &b}, {&b}, expect_vec({&a, &b}, n),
              name("EWDIV into b", dt, n, st[0], st[1]), r);
        if (HasFailure()) return;
      }
}

// The backwards: |g|x|y| -> |dx| of RELU, SIGMOID, TANH (from y and from x),
// EWEXP, EWLOG, EWSQRT; EWDIV's |g|a|b|y| -> |da|db| (db: three inputs); a
// NULL g (read as ones); dx in place of g.
TEST(GpuEwVec, Backward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1903);
  for (int dt : kTypes)
    for (int n : kCounts)
      for (const auto& st : kStarts) {
        Win g({n}, st[0], dt, rng), x({n}, st[1], dt, rng, 0.5f, 2.f), yv({n}, st[0], dt, rng, 0.1f, 0.9f),
            dx({n}, st[1], dt, rng), db({n}, st[0], dt, rng);
        const float r = rtol_of(dt);
        const bool v2 = expect_vec({&g, &yv, &dx}, n), vx = expect_vec({&g, &x, &dx}, n);
        struct B {
          uint32_t cmd;
          const char* what;
          bool from_y;
        };
        for (const B& b : {B{CCV_NNC_RELU_BACKWARD, "RELU_BACKWARD", true},
                           B{CCV_NNC_RELU_BACKWARD, "RELU_BACKWARD x", false},
                           B{CCV_NNC_SIGMOID_BACKWARD, "SIGMOID_BACKWARD", true},
                           B{CCV_NNC_SIGMOID_BACKWARD, "SIGMOID_BACKWARD x", false},
                           B{CCV_NNC_TANH_BACKWARD, "TANH_BACKWARD", true},
                           B{CCV_NNC_TANH_BACKWARD, "TANH_BACKWARD x", false},
                           B{CCV_NNC_EWEXP_BACKWARD, "EWEXP_BACKWARD", true},
                           B{CCV_NNC_EWSQRT_BACKWARD, "EWSQRT_BACKWARD", true},
                           B{CCV_NNC_EWLOG_BACKWARD, "EWLOG_BACKWARD", false}}) {
          const std::vector<const Win*> in = b.from_y ? std::vector<const Win*>{&g, nullptr, &yv}
                                                      : std::vector<const Win*>{&g, &x};
          check(make_cmd(b.cmd), in, {&dx}, b.from_y ? v2 : vx, name(b.what, dt, n, st[0], st[1]), r);
        }
        // NULL g, and dx written over g.
        check(make_cmd(CCV_NNC_SIGMOID_BACKWARD), {nullptr, &x, &yv}, {&dx}, expect_vec({&yv, &dx}, n),
              name("SIGMOID_BACKWARD g=1", dt, n, st[0], st[1]), r);
        check(make_cmd(CCV_NNC_SIGMOID_BACKWARD), {&g, nullptr, &yv}, {&g}, expect_vec({&g, &yv}, n),
              name("SIGMOID_BACKWARD into g", dt, n, st[0], st[1]), r);
        // EWDIV backward: da = g / b, db = -g y / b (y = a / b made here).
        check(make_cmd(CCV_NNC_EWDIV_BACKWARD), {&g, &yv, &x, &yv}, {&dx, &db},
              expect_vec({&g, &x, &dx}, n) + expect_vec({&g, &yv, &x, &db}, n),
              name("EWDIV_BACKWARD", dt, n, st[0], st[1]), r);
        if (HasFailure()) return;
      }
}

// Broadcasts: x * s with a one-element s (MUL; scalar operand), x[N, C] + b[C]
// (ADD; bias: a row operand), x[N, C] * s[N, 1] (MUL; a column operand), for C
// a multiple of every width and not; and NCHW's channel scale (three
// dimensions: always scalar).
TEST(GpuEwVec, Broadcast) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1904);
  for (int dt : kTypes) {
    const float r = rtol_of(dt);
    for (int n : {7, 8, 4097}) {
      for (int s : {0, 1}) {
        Win x({n}, s, dt, rng), one({1}, 0, dt, rng), y({n}, s, dt, rng);
        check(blas(CCV_NNC_MUL_FORWARD, 1.f), {&x, &one}, {&y}, expect_vec({&x, &y}, n),
              name("MUL by 1 element", dt, n, s, s), r);
        check(blas(CCV_NNC_MUL_FORWARD, 2.f), {&one, &x}, {&x}, expect_vec({&x}, n),
              name("MUL by 1 element in place", dt, n, s, s), r);
      }
    }
    for (int N : {1, 5, 33})
      for (int C : {8, 24, 96, 9, 4}) {
        for (int s : {0, 2}) {
          Win x({N, C}, s, dt, rng), b({C}, s, dt, rng), col({N, 1}, 0, dt, rng), y({N, C}, s, dt, rng);
          const int64_t n = static_cast<int64_t>(N) * C;
          // N == 1 plans one dimension (b is packed then): the vector path with a head.
          const bool vb = N == 1 ? expect_vec({&x, &b, &y}, n) : expect_vec({&x, &b, &y}, n, C);
          check(blas(CCV_NNC_ADD_FORWARD, 1.f, 1.f), {&x, &b}, {&y}, vb, name("ADD bias", dt, n, s, s) + " C " +
                std::to_string(C), r);
          const bool vc = N == 1 ? expect_vec({&x, &y}, n) : expect_vec({&x, &y}, n, C);
          check(blas(CCV_NNC_MUL_FORWARD, 1.f), {&x, &col}, {&y}, vc, name("MUL column", dt, n, s, s) + " C " +
                std::to_string(C), r);
          check(blas(CCV_NNC_ADD_FORWARD, 1.f, -1.f), {&x, &b}, {&x}, N == 1 ? expect_vec({&x, &b}, n)
                                                                              : expect_vec({&x, &b}, n, C),
                name("ADD bias in place", dt, n, s, s) + " C " + std::to_string(C), r);
        }
      }
    Win x({2, 8, 3, 8}, 0, dt, rng), sc({8, 1, 1}, 0, dt, rng), y({2, 8, 3, 8}, 0, dt, rng);
    check(blas(CCV_NNC_MUL_FORWARD, 1.f), {&x, &sc}, {&y}, false, name("MUL NCHW channel", dt, 384, 0, 0), r);
    if (HasFailure()) return;
  }
}

// Copies (DATA_TRANSFER between GPU windows, DATATYPE_CONVERSION to the same
// type, EWSUM_BACKWARD's dx = g), SET (and EWSUM_BACKWARD's NULL g: ones), and
// DATATYPE_CONVERSION between every pair of 16F, 16BF, 32F, 64F.
TEST(GpuEwVec, CopyFillConvert) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1905);
  const int all[] = {CCV_32F, CCV_16F, CCV_16BF, CCV_64F};
  for (int n : kCounts)
    for (const auto& st : kStarts) {
      for (int dt : all) {
        Win x({n}, st[0], dt, rng, -100.f, 100.f), y({n}, st[1], dt, rng);
        const bool v = expect_vec({&x, &y}, n);
        // Packed to packed is one cudaMemcpyAsync (transfer.cpp): no kernel.
        check(make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {&x}, {&y}, v && (st[0] || st[1]),
              name("DATA_TRANSFER", dt, n, st[0], st[1]), 0, 0);
        check(make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {&x}, {&y}, v,
              name("DATATYPE_CONVERSION same type", dt, n, st[0], st[1]), 0, 0);
        check(blas(CCV_NNC_SET_FORWARD, -3.25f), {}, {&y}, expect_vec({&y}, n), name("SET", dt, n, st[1], st[1]), 0,
              0);
        if (dt != CCV_64F) {
          check(make_cmd(CCV_NNC_EWSUM_BACKWARD), {&x}, {&y}, v, name("EWSUM_BACKWARD", dt, n, st[0], st[1]), 0, 0);
          check(make_cmd(CCV_NNC_EWSUM_BACKWARD), {nullptr}, {&y}, expect_vec({&y}, n),
                name("EWSUM_BACKWARD ones", dt, n, st[1], st[1]), 0, 0);
        }
      }
      for (int from : all)
        for (int to : all) {
          if (from == to) continue;
          // Wide values: 16F saturates to inf past 65504 on both sides alike.
          Win x({n}, st[0], from, rng, -7e4f, 7e4f), y({n}, st[1], to, rng);
          check(make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {&x}, {&y}, expect_vec({&x, &y}, n),
                name((std::string("DATATYPE_CONVERSION ") + tname(from) + " ->").c_str(), to, n, st[0], st[1]), 0, 0);
        }
      if (HasFailure()) return;
    }
}

// The optimisers' step (cuda/loss_optim_kernels.cu, every operand packed and
// aligned alike: vector): SGD (plain; momentum, nesterov, decay), ADAM and
// ADAMW with and without amsgrad, RMSPROP; in place (b = a, state updated
// where it is) and out of place. Tolerance 1e-5 relative for 32F as the
// optimiser tests (CPU_REF's formulas in double, ours in float), one half
// ulp for 16F / 16BF as above.
TEST(GpuEwVec, Optimisers) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1907);
  const std::vector<OptCase> opts = optimiser_cases();
  for (int dt : kTypes)
    for (int n : {1, 7, 9, 4097})
      for (const auto& st : kStarts)
        for (const OptCase& o : opts) {
          const ccv_nnc_cmd_t c = ccv_nnc_cmd(o.id, nullptr, o.p, 0);
          const float r = std::max(1e-5f, rtol_of(dt));
          Win g({n}, st[0], dt, rng), a({n}, st[1], dt, rng);
          std::vector<std::unique_ptr<Win>> state, fresh;
          std::vector<const Win*> in{&g, &a}, out{&a}, out2, vec{&g, &a};
          for (int i = 0; i < o.state; i++) {
            state.push_back(std::make_unique<Win>(std::vector<int>{n}, st[i % 2], dt, rng, i ? 0.f : -1.f, 1.f));
            in.push_back(state.back().get());
            out.push_back(state.back().get());
            vec.push_back(state.back().get());
          }
          check(c, in, out, expect_vec(vec, n), name(o.name, dt, n, st[0], st[1]) + " in place", r);
          for (size_t i = 0; i < out.size(); i++) {
            fresh.push_back(std::make_unique<Win>(std::vector<int>{n}, st[(i + 1) % 2], dt, rng));
            out2.push_back(fresh.back().get());
            vec.push_back(fresh.back().get());
          }
          check(c, in, out2, expect_vec(vec, n), name(o.name, dt, n, st[0], st[1]) + " out of place", r);
          if (HasFailure()) return;
        }
}

// 2^17 + 5 elements: many blocks (and grid-stride rounds under
// EMU_MAX_BLOCKS), a tail of 1 (32F) or 5 (16F / 16BF) elements.
TEST(GpuEwVec, Large) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1906);
  const int n = (1 << 17) + 5;
  for (int dt : kTypes) {
    const float r = rtol_of(dt);
    for (int s : {0, 3}) {
      Win a({n}, s, dt, rng), b({n}, s, dt, rng), y({n}, s, dt, rng);
      const bool v = expect_vec({&a, &b, &y}, n);
      check(make_cmd(CCV_NNC_EWSUM_FORWARD), {&a, &b}, {&y}, v, name("EWSUM", dt, n, s, s), r);
      check(make_cmd(CCV_NNC_RELU_BACKWARD), {&a, nullptr, &b}, {&a}, expect_vec({&a, &b}, n),
            name("RELU_BACKWARD into g", dt, n, s, s), r);
      check(make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {&a}, {&y}, s && expect_vec({&a, &y}, n),
            name("DATA_TRANSFER", dt, n, s, s), 0, 0);
      check(blas(CCV_NNC_SET_FORWARD, 0.5f), {}, {&y}, expect_vec({&y}, n), name("SET", dt, n, s, s), 0, 0);
      Win f({n}, s, dt == CCV_32F ? CCV_16F : CCV_32F, rng);
      check(make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {&a}, {&f}, expect_vec({&a, &f}, n),
            name("DATATYPE_CONVERSION", dt, n, s, s), 0, 0);
      if (HasFailure()) return;
    }
  }
}

}  // namespace
