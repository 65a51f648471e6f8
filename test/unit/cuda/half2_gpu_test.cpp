// GPU_REF in 16F and 16BF for the last families that took 32F only: the
// reductions (REDUCE_SUM / MEAN / MAX / MIN / NORM2 forward, SUM / MEAN
// backward; cuda/reduce_gpu.cpp, cuda/more_gpu.cpp), INDEX_SELECT backward
// (cuda/index_gpu.cpp, also 64F), CMUL forward and backward and PAD /
// UPSAMPLE backward (cuda/more_gpu.cpp), each against CPU_REF on the same
// half inputs: odd shapes, long reductions (a block per output) and many short ones (a thread
// per output), views inside larger parents (whole parents compared: a write
// outside a view fails), repeated and never-picked rows, broadcasts, NULL g,
// in place; and 64F refused with a message where GPU_REF computes in float.
// Skips without a GPU (runs under tools/gpu-emu).
//
// Tolerances (ulp_T: one unit in the last place of the storage type at the
// larger magnitude; 16F 2^-10 relative, 16BF 2^-7):
// - MAX, MIN, SUM backward, INDEX_SELECT forward: copies, exact (0).
// - INDEX_SELECT backward, 16F / 16BF: exact (0). GPU_REF sums in a double
//   scratch; these g are halves of magnitude <= 1, integer multiples of
//   2^-24 (16F) or spanning < 40 binades (16BF here), so every partial sum
//   of <= 3000 of them is exact in double on both sides, whatever the
//   atomics' order, and both round the same exact sum once. A float scratch
//   or half atomics round along the way (IndexSelectBackwardSumsExactly
//   builds a sum where that shows).
// - SUM / MEAN / NORM2 forward: GPU_REF sums n terms in float (CPU_REF in
//   double): |error| <= gamma S with gamma = (n + 8) 2^-24 and S the sum of
//   |terms| for this output (computed here by CPU_REF from the same inputs);
//   MEAN divides it by n, NORM2's square root halves its relative error. Then
//   each side rounds once: |gpu - cpu| <= ulp_T + gamma S. And >= 90% of the
//   outputs must be bit-equal (gamma S is far below ulp_T for nearly all): a
//   truncating or double rounding fails that.
// - MEAN backward: g times float(1 / n) in float against g / n in double,
//   each rounded once: at most ulp_T apart, >= 90% bit-equal.
// - PAD / UPSAMPLE backward: see PadUpsampleBackwardMatchCpuRef.
// - CMUL forward: products of halves are exact in double (<= 22 significant
//   bits) and so is their difference (the exponents here span far less than
//   31 binades): both sides round the same exact value once: 0. Backward: a
//   sum of <= 30 such products in double in another order: ulp_T, >= 90%
//   bit-equal.
// A wrong axis, row, pair, conjugate or type is off by many ulps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"
#include "test/unit/cuda/half_util.hpp"

namespace {

using namespace nnc_gpu_test;

// The GPU parent of b against its CPU parent: every element within
// ulp_T(max |.|) + extra[i] (extra empty: 0), and >= min_exact of them
// bit-equal.
void expect_ulp(const Both& b, int type, const std::vector<double>& extra, const std::string& what,
                double min_exact = 0.9) {
  Owned back = to_cpu(b.gpu_parent());
  Owned g = as_f32(back), c = as_f32(b.cpu_parent());
  const size_t n = ccv_nnc_tensor_count(c->info);
  ASSERT_TRUE(extra.empty() || extra.size() == n) << what;
  size_t bad = 0, exact = 0;
  for (size_t i = 0; i < n; i++) {
    const double x = g->data.f32[i], y = c->data.f32[i];
    if (x == y || (std::isnan(x) && std::isnan(y))) {
      exact++;
      continue;
    }
    const double tol = ulp(type, std::fmax(std::fabs(x), std::fabs(y))) + (extra.empty() ? 0.0 : extra[i]);
    if (!(std::fabs(x - y) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": parent element " << i << " is " << x << " on the GPU, " << y << " on CPU_REF (tol "
                    << tol << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements beyond the bound";
  EXPECT_GE(static_cast<double>(exact) + 1, min_exact * static_cast<double>(n))
      << what << ": only " << exact << " of " << n << " elements bit-equal to CPU_REF";
}

// --- reductions -----------------------------------------------------------------

ccv_nnc_cmd_t reduce(uint32_t id, const std::vector<int>& axes) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

std::vector<int> reduced(std::vector<int> d, const std::vector<int>& axes) {
  for (int a : axes) d[static_cast<size_t>(a)] = 1;
  return d;
}

int count_of(const std::vector<int>& d, const std::vector<int>& axes) {
  int n = 1;
  for (int a : axes) n *= d[static_cast<size_t>(a)];
  return n;
}

// Per output of a reduction of x (any view, any float type) over `axes`:
// the sum of |x| (squares: of x^2), by CPU_REF on a packed 32F copy.
std::vector<double> abs_sums(const ccv_nnc_tensor_t* x, const std::vector<int>& dim, const std::vector<int>& axes,
                             bool squares) {
  Owned f = as_f32(x);
  for (size_t i = 0; i < ccv_nnc_tensor_count(f->info); i++)
    f->data.f32[i] = squares ? f->data.f32[i] * f->data.f32[i] : std::fabs(f->data.f32[i]);
  Owned s(param_of(reduced(dim, axes), CCV_32F, CCV_TENSOR_FORMAT_NHWC, false));
  ccv_nnc_cmd_t c = reduce(CCV_NNC_REDUCE_SUM_FORWARD, axes);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {f.t}, {s.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  std::vector<double> out(ccv_nnc_tensor_count(s->info));
  for (size_t i = 0; i < out.size(); i++) out[i] = s->data.f32[i];
  return out;
}

// A NaN at element i of a packed half CPU parent (then uploaded).
void set_nan(Both& b, int type, size_t i) {
  const uint16_t bits = type == CCV_16F ? 0x7e00 : 0x7fc0;
  std::memcpy(b.cpu_parent()->data.u8 + 2 * i, &bits, 2);
  b.upload();
}

struct RedCase {
  std::vector<int> dim, axes;
  bool view;
};
const RedCase kRedCases[] = {
    {{7, 33, 5}, {1}, true},       {{64, 129}, {0}, false},      {{3, 515}, {1}, true}, {{2000, 3}, {1}, false},
    {{5, 6, 7}, {0, 1, 2}, false}, {{3, 5, 7, 9}, {0, 2}, true}, {{1}, {0}, false},
};

TEST(GpuRefHalf2, ReductionsForwardMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3101);
  const uint32_t ids[] = {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD,
                          CCV_NNC_REDUCE_MIN_FORWARD, CCV_NNC_REDUCE_NORM2_FORWARD};
  for (int type : kHalves)
    for (const RedCase& k : kRedCases)
      for (uint32_t id : ids) {
        std::string what = std::string(ccv_nnc_cmd_name(id)) + " " + tname(type) + " x";
        for (int d : k.dim) what.append(" ").append(std::to_string(d));
        what += k.view ? " (view)" : "";
        auto x = both({k.dim, k.view, type}, rng, -2, 2);
        // Outputs packed (the bound is per output); MAX / MIN also into a view.
        const bool extreme = id == CCV_NNC_REDUCE_MAX_FORWARD || id == CCV_NNC_REDUCE_MIN_FORWARD;
        auto y = both({reduced(k.dim, k.axes), extreme && k.view, type}, rng);
        if (extreme && !k.view && ccv_nnc_tensor_count(x->cpu_parent()->info) > 40) set_nan(*x, type, 37);
        run_both(reduce(id, k.axes), {x.get()}, {y.get()}, what);
        if (extreme) {
          y->expect_close(0, 0, what);
          continue;
        }
        const double n = count_of(k.dim, k.axes), gamma = (n + 8) * std::ldexp(1.0, -24);
        std::vector<double> extra = abs_sums(x->cpu(), k.dim, k.axes, id == CCV_NNC_REDUCE_NORM2_FORWARD);
        for (double& e : extra) {
          if (id == CCV_NNC_REDUCE_MEAN_FORWARD)
            e = gamma * e / n;
          else if (id == CCV_NNC_REDUCE_NORM2_FORWARD)
            e = gamma * std::sqrt(e);
          else
            e = gamma * e;
        }
        expect_ulp(*y, type, extra, what);
      }
}

TEST(GpuRefHalf2, ReductionsBackwardMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3109);
  for (int type : kHalves)
    for (const RedCase& k : kRedCases)
      for (uint32_t id : {CCV_NNC_REDUCE_SUM_BACKWARD, CCV_NNC_REDUCE_MEAN_BACKWARD}) {
        const std::string what = std::string(ccv_nnc_cmd_name(id)) + " " + tname(type) + " nd " +
                                 std::to_string(k.dim.size()) + (k.view ? " (views)" : "");
        auto g = both({reduced(k.dim, k.axes), k.view, type}, rng), dx = both({k.dim, k.view, type}, rng);
        run_both(reduce(id, k.axes), {g.get()}, {dx.get()}, what);
        if (id == CCV_NNC_REDUCE_SUM_BACKWARD)
          dx->expect_close(0, 0, what);
        else
          expect_ulp(*dx, type, {}, what);
      }
}

// --- INDEX_SELECT backward -------------------------------------------------------

void set_indices(Both& b, int rows, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, rows - 1);
  ccv_nnc_tensor_t* t = b.cpu_parent();
  for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) {
    if (CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32S)
      t->data.i32[i] = d(rng);
    else
      t->data.i64[i] = d(rng);
  }
  b.upload();
}

TEST(GpuRefHalf2, IndexSelectBackwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3119);
  struct Case {
    std::vector<int> dx;   // dx's shape (x's)
    std::vector<int> ind;  // the indices' shape (their count is g's rows)
    int index_type;
    bool view;
  };
  const Case cases[] = {
      {{13, 7, 5}, {5, 8}, CCV_32S, true},  // 40 picks of 13 rows: repeats and, likely, rows never picked
      {{1023}, {300}, CCV_64S, false},      // 1-d: single elements
      {{3, 5}, {3000}, CCV_32S, false},     // ~1000 additions per element
      {{6, 4}, {2}, CCV_64S, true},         // most rows never picked: zeros
      {{1, 1}, {1}, CCV_32S, false},
  };
  for (int type : {CCV_16F, CCV_16BF, CCV_64F})
    for (const Case& k : cases) {
      std::string what = "INDEX_SELECT_BACKWARD " + tname(type) + " dx";
      for (int d : k.dx) what.append(" ").append(std::to_string(d));
      int n = 1;
      for (int d : k.ind) n *= d;
      std::vector<int> gd = k.dx;
      gd[0] = n;
      auto ind = both({k.ind, false, k.index_type}, rng, 0, 0);
      set_indices(*ind, k.dx[0], rng);
      auto g = both({gd, k.view, type}, rng), x = both({k.dx, false, type}, rng), dx = both({k.dx, k.view, type}, rng);
      run_both(make_cmd(CCV_NNC_INDEX_SELECT_BACKWARD), {g.get(), x.get(), ind.get()}, {dx.get()}, what);
      if (type == CCV_64F)
        dx->expect_close(1e-6f, 1e-6f, what);  // compared as 32F: rows and sums, not the last double bits
      else
        dx->expect_close(0, 0, what);
      // x is not read: NULL gives the same.
      auto dx2 = both({k.dx, false, type}, rng);
      run_both(make_cmd(CCV_NNC_INDEX_SELECT_BACKWARD), {g.get(), nullptr, ind.get()}, {dx2.get()}, what + " NULL x");
      if (type != CCV_64F) dx2->expect_close(0, 0, what + " NULL x");
    }
}

// Sums that a float accumulator would get wrong: 1 then 8999 picks of 2^-24
// (the smallest 16F) into one element, and 2^-24 alone into another. In
// float each 2^-24 added to 1 is a tie that rounds back to 1, so a float
// scratch (or 16F atomics) adding the 1 first ends at 1; the exact sum,
// 1 + 8999 2^-24 = 1.000536, rounds to 1 + 2^-10 in 16F, as CPU_REF has it.
TEST(GpuRefHalf2, IndexSelectBackwardSumsExactly) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3127);
  const int n = 9000;
  auto g = both({{n, 1}, false, CCV_16F}, rng), dx = both({{2, 1}, false, CCV_16F}, rng);
  auto ind = both({{n}, false, CCV_32S}, rng, 0, 0);
  const uint16_t one = 0x3c00, tiny = 0x0001;  // 16F bits of 1 and 2^-24
  for (int i = 0; i < n; i++) {
    std::memcpy(g->cpu_parent()->data.u8 + 2 * i, i == 0 ? &one : &tiny, 2);
    ind->cpu_parent()->data.i32[i] = i == n - 1 ? 1 : 0;
  }
  g->upload();
  ind->upload();
  run_both(make_cmd(CCV_NNC_INDEX_SELECT_BACKWARD), {g.get(), nullptr, ind.get()}, {dx.get()},
           "INDEX_SELECT_BACKWARD 16F exact sums");
  Owned c = as_f32(dx->cpu_parent());
  EXPECT_EQ(c->data.f32[0], 1.f + std::ldexp(1.f, -10)) << "CPU_REF's exact sum, rounded once";
  dx->expect_close(0, 0, "INDEX_SELECT_BACKWARD 16F exact sums");
}

// A bad index in a 16F backward: the error names it, as in 32F.
TEST(GpuRefHalf2, IndexSelectBackwardBadIndexIsAnError) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3121);
  auto g = both({{3, 5}, false, CCV_16F}, rng), dx = both({{6, 5}, false, CCV_16F}, rng);
  auto ind = both({{3}, false, CCV_32S}, rng, 0, 0);
  ind->cpu_parent()->data.i32[0] = 1;
  ind->cpu_parent()->data.i32[1] = 2;
  ind->cpu_parent()->data.i32[2] = 6;  // rows are 0..5
  ind->upload();
  ccv_nnc_cmd_t b = make_cmd(CCV_NNC_INDEX_SELECT_BACKWARD);
  b.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(b, ccv_nnc_no_hint, {g->gpu(), nullptr, ind->gpu()}, {dx->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("indices[2]"), std::string::npos) << ccv_nnc_error_message();
  // g and dx of different types: the family's check, with a message.
  auto dx32 = both({{6, 5}}, rng);
  ind->cpu_parent()->data.i32[2] = 0;
  ind->upload();
  EXPECT_EQ(exec(b, ccv_nnc_no_hint, {g->gpu(), nullptr, ind->gpu()}, {dx32->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("16F"), std::string::npos) << ccv_nnc_error_message();
}

// --- CMUL -------------------------------------------------------------------------

TEST(GpuRefHalf2, CmulMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3131);
  struct Case {
    std::vector<int> a, b, c;
    bool view;
  };
  const Case cases[] = {
      {{2, 5, 3, 8}, {1, 5, 1, 8}, {2, 5, 3, 8}, true},  // rotary: [B, T, H, D] times [1, T, 1, D]
      {{1, 5, 1, 8}, {2, 5, 3, 8}, {2, 5, 3, 8}, false},
      {{7, 3, 10}, {10}, {7, 3, 10}, true},
      {{2}, {2}, {2}, false},
  };
  for (int type : kHalves)
    for (const Case& k : cases) {
      const std::string what = "CMUL " + tname(type) + " nd " + std::to_string(k.c.size()) + (k.view ? " (views)" : "");
      auto a = both({k.a, k.view, type}, rng), b = both({k.b, false, type}, rng), c = both({k.c, k.view, type}, rng);
      run_both(make_cmd(CCV_NNC_CMUL_FORWARD), {a.get(), b.get()}, {c.get()}, what);
      c->expect_close(0, 0, what);
      auto g = both({k.c, !k.view, type}, rng), da = both({k.a, false, type}, rng), db = both({k.b, k.view, type}, rng);
      run_both(make_cmd(CCV_NNC_CMUL_BACKWARD), {g.get(), a.get(), b.get()}, {da.get(), db.get()}, what + " backward");
      expect_ulp(*da, type, {}, what + " da");
      expect_ulp(*db, type, {}, what + " db");
      auto da2 = both({k.a, false, type}, rng), db2 = both({k.b, false, type}, rng);
      run_both(make_cmd(CCV_NNC_CMUL_BACKWARD), {nullptr, a.get(), b.get()}, {da2.get(), db2.get()}, what + " NULL g");
      expect_ulp(*da2, type, {}, what + " NULL g da");
      expect_ulp(*db2, type, {}, what + " NULL g db");
    }
  // In place: c over a (16BF view).
  auto a = both({{3, 4, 6}, true, CCV_16BF}, rng), b = both({{4, 6}, false, CCV_16BF}, rng);
  run_both(make_cmd(CCV_NNC_CMUL_FORWARD), {a.get(), b.get()}, {a.get()}, "CMUL 16BF in place");
  a->expect_close(0, 0, "CMUL 16BF in place");
}

// --- PAD and UPSAMPLE backward ------------------------------------------------------

ccv_nnc_cmd_t pad_backward(int type, const std::vector<int>& begin, const std::vector<int>& end) {
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_PAD_BACKWARD);
  c.info.pad.type = type;
  for (size_t i = 0; i < begin.size(); i++) {
    c.info.size.dim[i] = begin[i];
    c.info.pad.end[i] = end[i];
  }
  return c;
}

ccv_nnc_cmd_t upsample_backward(int type, int align) {
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_UPSAMPLE_BACKWARD);
  c.info.upsample.type = type;
  c.info.upsample.align_corners = align;
  c.info.upsample.width_scale = 2;
  c.info.upsample.height_scale = 2;
  return c;
}

// PAD backward sums g values (replicate / reflect fold several into one dx
// element): exact in double on both sides, so bit-equal (0). UPSAMPLE
// backward sums w g products (w from the taps' geometry, in double on both
// sides, in other orders): one ulp_T, >= 90% bit-equal.
TEST(GpuRefHalf2, PadUpsampleBackwardMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3141);
  struct PadCase {
    std::vector<int> dim, begin, end;
    bool view;
  };
  const PadCase pads[] = {
      {{5, 7}, {1, 2}, {3, 0}, true},
      {{3, 4}, {5, 7}, {6, 2}, false},  // pads longer than the axis: reflect folds 2-3 periods
      {{2, 3, 4, 5}, {0, 1, 2, 3}, {1, 0, 3, 2}, true},
  };
  for (int dt : kHalves)
    for (const PadCase& k : pads)
      for (int type : {CCV_NNC_PAD_ZERO, CCV_NNC_PAD_REPLICATE, CCV_NNC_PAD_REFLECT}) {
        std::vector<int> big = k.dim;
        for (size_t i = 0; i < big.size(); i++) big[i] += k.begin[i] + k.end[i];
        const std::string what = "PAD_BACKWARD " + tname(dt) + " type " + std::to_string(type) + " nd " +
                                 std::to_string(k.dim.size()) + (k.view ? " (views)" : "");
        auto g = both({big, k.view, dt}, rng), x = both({k.dim, false, dt}, rng), dx = both({k.dim, k.view, dt}, rng);
        run_both(pad_backward(type, k.begin, k.end), {g.get(), x.get()}, {dx.get()}, what);
        dx->expect_close(0, 0, what);
      }
  struct UpCase {
    std::vector<int> small, big;
    int format;
    bool view;
  };
  const UpCase ups[] = {
      {{2, 5, 7, 3}, {2, 10, 14, 3}, CCV_TENSOR_FORMAT_NHWC, true},
      {{2, 3, 5, 7}, {2, 3, 11, 6}, CCV_TENSOR_FORMAT_NCHW, false},  // height up, width down
      {{9, 12}, {3, 4}, CCV_TENSOR_FORMAT_NHWC, true},               // a 3x downsample
  };
  for (int dt : kHalves)
    for (const UpCase& k : ups)
      for (int type : {CCV_NNC_UPSAMPLE_NEAREST, CCV_NNC_UPSAMPLE_BILINEAR})
        for (int align : {0, 1}) {
          const std::string what =
              "UPSAMPLE_BACKWARD " + tname(dt) + (type == CCV_NNC_UPSAMPLE_NEAREST ? " nearest" : " bilinear") +
              (align ? " aligned" : "") + " nd " + std::to_string(k.small.size()) + (k.view ? " (views)" : "");
          auto g = both({k.big, !k.view, dt, k.format}, rng), x = both({k.small, false, dt, k.format}, rng),
               y = both({k.big, false, dt, k.format}, rng), dx = both({k.small, k.view, dt, k.format}, rng);
          run_both(upsample_backward(type, align), {g.get(), x.get(), y.get()}, {dx.get()}, what);
          expect_ulp(*dx, dt, {}, what);
        }
}

// --- 64F: refused with a message (GPU_REF computes these in float) -------------------

TEST(GpuRefHalf2, F64IsRefusedWithAMessage) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3137);
  auto x = both({{4, 6}, false, CCV_64F}, rng), y = both({{4, 1}, false, CCV_64F}, rng),
       c = both({{4, 6}, false, CCV_64F}, rng);
  auto expect_f64 = [](ccv_nnc_cmd_t cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
                       const std::string& what) {
    cmd.backend = CCV_NNC_BACKEND_GPU_REF;
    EXPECT_EQ(exec(cmd, ccv_nnc_no_hint, in, out), CCV_NNC_EXEC_NO_KERNEL) << what;
    const std::string msg = ccv_nnc_error_message();
    EXPECT_NE(msg.find("64F"), std::string::npos) << what << ": " << msg;
  };
  Owned before = to_cpu(y->gpu());
  for (uint32_t id : {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD,
                      CCV_NNC_REDUCE_MIN_FORWARD, CCV_NNC_REDUCE_NORM2_FORWARD})
    expect_f64(reduce(id, {1}), {x->gpu()}, {y->gpu()}, ccv_nnc_cmd_name(id));
  Owned after = to_cpu(y->gpu());
  EXPECT_EQ(std::memcmp(before->data.u8, after->data.u8, 4 * sizeof(double)), 0) << "a 64F reduction wrote y";
  expect_f64(reduce(CCV_NNC_REDUCE_SUM_BACKWARD, {1}), {y->gpu()}, {x->gpu()}, "REDUCE_SUM_BACKWARD");
  expect_f64(make_cmd(CCV_NNC_CMUL_FORWARD), {x->gpu(), x->gpu()}, {c->gpu()}, "CMUL_FORWARD");
  expect_f64(make_cmd(CCV_NNC_CMUL_BACKWARD), {x->gpu(), x->gpu(), x->gpu()}, {c->gpu(), nullptr}, "CMUL_BACKWARD");
}

}  // namespace
