// GPU_REF SCALED_DOT_PRODUCT_ATTENTION in 16BF against CPU_REF on the same
// bf16 inputs (random, fixed seeds): forward o and lse (lse 32F, and 16BF in
// one case), backward dq, dk, dv (from each side's own saved o and lse, and
// without them: recomputed), on the flash kernels (NNC_GPU_ATTN_FLASH=1 with
// NNC_GPU_ATTN_MMA=0: the scalar flash kernels, and a call they decline fails
// instead of falling back) and on the row kernels (NNC_GPU_ATTN_FLASH=0, also
// one unit per chunk); causal with Sq < Sk and Sq > Sk (rows that see no key),
// masks of several broadcast shapes with -inf entries, fewer kv heads, 3-d
// operands, views (whole parents compared: nothing outside a view is
// written), lengths 1, 19 and 70 (across the flash kernels' row and key tiles
// and the row kernels' 128 threads); the fused unify-head projection (row
// kernels only) forward (y, qkv) and backward (dq, dk, dv, dw, dbias); and
// refusals (mixed types, 64F). Skips without a GPU.
//
// Tolerances. bf16 has 8 significant bits: one rounding is off by at most
// 2^-9 relative, and two results that differ only by rounding are at most one
// ulp apart, i.e. 2^-7 |x| at worst (2^-8 at best within a binade). Both
// sides read the same bf16 inputs, compute in high precision (CPU_REF double,
// GPU fp32: a score is a dot of D <= 24 terms below 1, softmax sums over <= 70
// keys, gradient sums over <= 70 rows: ~1e-6 relative to the sum of |terms|)
// and round each result to bf16 once, so they are one ulp apart at most:
// rtol 1e-2 (> 2^-7 = 7.8e-3), with atol 1e-4 for results whose magnitude
// is near 0 (where the fp32 noise, not the rounding, dominates). lse 32F is
// not rounded: 1e-4. The backward on the flash kernels takes delta = dO . o
// from the saved bf16 o (CPU_REF recomputes o in double): o is off by
// 2^-9 |o| per element, delta by at most 2^-9 sum_d |dO_d o_d| <= 2^-9 * 16 *
// 0.5 ~ 0.016 worst case, random in sign so ~1e-3 typically; it reaches dq and
// dk scaled by p and by the scale (~0.3): atol 5e-3 for the gradients. A
// saved 16BF lse (one case) is off by half an ulp, 2^-7 absolute for lse in
// [2, 4) (asserted on CPU_REF's lse), so the backward's probabilities are all
// off by a factor e^(+-2^-7) (0.8%), ds by up to twice that, then one ulp of
// output rounding: rtol 3e-2, atol 2e-2 there. A wrong index (a head group, a
// tile edge, the causal bound by one, a mask stride) or a wrong storage type
// moves values by 1e-1 or more.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "env_guard.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"

using namespace nnc_gpu_test;

namespace {

constexpr uint32_t FWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD,
                   BWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD;
constexpr int BF = CCV_16BF;

struct Case {
  int B, Sq, Sk, H, Hk, D, Dv;
  Case(int b, int sq, int sk, int h, int hk, int d, int dv) : B(b), Sq(sq), Sk(sk), H(h), Hk(hk), D(d), Dv(dv) {}
  bool causal = false, four_d = true, views = false, bf16_lse = false, fused = false, bias = true;
  std::vector<int> mask;
  int Nout = 5;
  std::string name() const {
    char b[200];
    std::snprintf(b, sizeof(b), "B%d Sq%d Sk%d H%d/%d D%d/%d%s%s%s%s%s mask nd %d", B, Sq, Sk, H, Hk, D, Dv,
                  causal ? " causal" : "", four_d ? "" : " 3-d", views ? " views" : "", bf16_lse ? " lse 16BF" : "",
                  fused ? (bias ? " fused+bias" : " fused") : "", static_cast<int>(mask.size()));
    return b;
  }
  std::vector<int> shape(int S, int h, int d) const {
    return four_d ? std::vector<int>{B, S, h, d} : std::vector<int>{B, S, d};
  }
  std::vector<int> lse_shape() const { return four_d ? std::vector<int>{B, H, Sq} : std::vector<int>{Sq, B}; }
  int lse_type() const { return bf16_lse ? BF : CCV_32F; }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = make_cmd(id);
    c.info.scaled_dot_product_attention.scale = 1.1f / std::sqrt(static_cast<float>(D));
    c.info.scaled_dot_product_attention.is_causal = causal;
    return c;
  }
};

// Cases both paths take.
std::vector<Case> cases() {
  std::vector<Case> cs;
  // Causal, Sq < Sk: rows end at different keys, past one key tile; 2 heads per kv head.
  Case a{1, 19, 70, 2, 1, 16, 16};
  a.causal = true;
  cs.push_back(a);
  Case b{2, 70, 19, 2, 2, 8, 12};  // causal, Sq > Sk (rows 0..50 see no key), mask [Sq, Sk], views
  b.causal = true, b.mask = {70, 19}, b.views = true;
  cs.push_back(b);
  Case c{1, 1, 19, 3, 1, 5, 7};  // one query row, mask [B, H, 1, Sk], lse 16BF
  c.mask = {1, 3, 1, 19}, c.bf16_lse = true;
  cs.push_back(c);
  Case d{2, 19, 19, 1, 1, 24, 8};  // 3-d, causal square, mask [Sk]
  d.four_d = false, d.causal = true, d.mask = {19};
  cs.push_back(d);
  return cs;
}

// The fused unify-head projection: the row kernels only.
std::vector<Case> fused_cases() {
  std::vector<Case> cs;
  Case a{2, 7, 19, 2, 1, 8, 6};  // with bias, causal Sq < Sk, mask [Sq, Sk]
  a.fused = true, a.causal = true, a.mask = {7, 19}, a.Nout = 5;
  cs.push_back(a);
  Case b{1, 19, 1, 2, 2, 4, 4};  // without bias, one key, views
  b.fused = true, b.bias = false, b.views = true, b.Nout = 3;
  cs.push_back(b);
  return cs;
}

// A mask of uniform values with every 5th entry -inf (set as 32F on the CPU
// parent, converted to 16BF there, then uploaded).
BothPtr make_mask(const Case& c, std::mt19937& rng) { return attn_mask(c.mask, BF, rng, 5); }

struct Inputs {
  BothPtr q, k, v, mask, w, bias;
  Inputs(const Case& c, std::mt19937& rng) {
    q = both({c.shape(c.Sq, c.H, c.D), c.views, BF}, rng);
    k = both({c.shape(c.Sk, c.Hk, c.D), c.views, BF}, rng);
    v = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, BF}, rng);
    mask = make_mask(c, rng);
    if (c.fused) {
      w = both({{c.Nout, c.H * c.Dv}, false, BF}, rng);
      if (c.bias) bias = both({{c.Nout}, false, BF}, rng);
    }
  }
};

// The largest finite |lse| CPU_REF wrote.
float max_finite_lse(const Both& lse) {
  Owned f = as_f32(lse.cpu_parent());
  float m = 0;
  for (size_t i = 0; i < ccv_nnc_tensor_count(f->info); i++)
    if (std::isfinite(f->data.f32[i])) m = std::max(m, std::fabs(f->data.f32[i]));
  return m;
}

// Forward, then backward (each side from its own saved o / qkv and lse, or
// with `saved` false from neither) of one case on both backends, checked
// against CPU_REF. The environment picks the GPU path.
void check_case(const Case& c, bool saved, std::mt19937& rng) {
  SCOPED_TRACE(c.name() + (saved ? "" : " (backward without o, lse)"));
  Inputs in(c, rng);
  BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), c.views && !c.fused, BF}, rng);  // o, or qkv when fused
  BothPtr lse = both({c.lse_shape(), false, c.lse_type()}, rng);
  BothPtr y = c.fused ? both({{c.B, c.Sq, c.Nout}, c.views, BF}, rng) : nullptr;
  if (c.fused) {
    std::vector<Both*> fin = {in.q.get(), in.k.get(), in.v.get(), in.mask.get(), in.w.get(), in.bias.get()};
    if (!c.bias) fin.pop_back();
    run_both(c.cmd(FWD), fin, {y.get(), lse.get(), o.get()}, "forward");
    // y sums H Dv products of o and w plus bias, rounded once.
    y->expect_close(1e-2f, 1e-3f, "y");
  } else {
    run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get(), in.mask.get()}, {o.get(), lse.get()}, "forward");
  }
  o->expect_close(1e-2f, 1e-4f, c.fused ? "qkv" : "o");
  lse->expect_close(c.bf16_lse ? 1e-2f : 1e-4f, 1e-4f, "lse");  // -inf rows compare equal
  float rtol = 1e-2f, atol = 5e-3f;
  if (c.bf16_lse && saved) {
    ASSERT_LT(max_finite_lse(*lse), 4.f) << "the tolerance's argument needs lse in [-4, 4)";
    rtol = 3e-2f, atol = 2e-2f;
  }
  BothPtr g =
      c.fused ? both({{c.B, c.Sq, c.Nout}, c.views, BF}, rng) : both({c.shape(c.Sq, c.H, c.Dv), c.views, BF}, rng);
  BothPtr dq = both({c.shape(c.Sq, c.H, c.D), c.views, BF}, rng),
          dk = both({c.shape(c.Sk, c.Hk, c.D), c.views, BF}, rng),
          dv = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, BF}, rng);
  BothPtr dw = c.fused ? both({{c.Nout, c.H * c.Dv}, false, BF}, rng) : nullptr;
  BothPtr db = c.fused && c.bias ? both({{c.Nout}, false, BF}, rng) : nullptr;
  Both* so = saved ? o.get() : nullptr;
  // g, -, -, q, k, v, mask, w, bias, o, lse, qkv.
  std::vector<Both*> bin = {g.get(), nullptr, nullptr, in.q.get(), in.k.get(), in.v.get(), in.mask.get(), in.w.get()};
  bin.insert(bin.end(), {in.bias.get(), c.fused ? nullptr : so, saved ? lse.get() : nullptr, c.fused ? so : nullptr});
  std::vector<Both*> bout = {dq.get(), dk.get(), dv.get()};
  if (c.fused) bout.insert(bout.end(), {nullptr, dw.get(), db.get()});
  run_both(c.cmd(BWD), bin, bout, "backward");
  dq->expect_close(rtol, atol, "dq");
  dk->expect_close(rtol, atol, "dk");
  dv->expect_close(rtol, atol, "dv");
  // dw, dbias: sums over B Sq rows of g times o (or of g), rounded once.
  if (dw) dw->expect_close(1e-2f, 1e-3f, "dw");
  if (db) db->expect_close(1e-2f, 1e-3f, "dbias");
}

TEST(AttnBf16Gpu, FlashKernelsMatchCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", "0");
  std::mt19937 rng(4101);
  for (const Case& c : cases()) {
    check_case(c, true, rng);
    check_case(c, false, rng);
  }
}

TEST(AttnBf16Gpu, RowKernelsMatchCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "0");
  std::mt19937 rng(4102);
  for (const Case& c : cases()) {
    check_case(c, true, rng);
    check_case(c, false, rng);
  }
  // One (batch, kv head) unit per chunk: the chunk offsets of rows, scratch
  // and gradient elements.
  EnvGuard chunk("NNC_GPU_ATTN_CHUNK_BYTES", "1");
  check_case(cases()[1], true, rng);
}

TEST(AttnBf16Gpu, FusedProjectionOnTheRowKernels) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", nullptr);  // the default: the fused call falls back to the row kernels
  std::mt19937 rng(4103);
  for (const Case& c : fused_cases()) {
    check_case(c, true, rng);
    check_case(c, false, rng);
  }
}

// The default flash path of a 16BF forward: the tensor-core kernels
// (flash_mma_kernels.cu; heads up to 128), which round p to bf16 before the
// p v product: o moves by at most 2^-9 sum_j p_j |v_j| <= 2^-9 (~2e-3) before
// its own rounding, so o gets atol 4e-3 here; lse and the backward (the scalar
// flash kernels, from this forward's o and lse) as above. The tensor-core
// results differ in some bits from the scalar kernels' (so they ran).
TEST(AttnBf16Gpu, TensorCoreForward) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", nullptr);
  std::mt19937 rng(4105);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name());
    Inputs in(c, rng);
    BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), c.views, BF}, rng);
    BothPtr lse = both({c.lse_shape(), false, c.lse_type()}, rng);
    run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get(), in.mask.get()}, {o.get(), lse.get()}, "forward");
    o->expect_close(1e-2f, 4e-3f, "o");
    lse->expect_close(c.bf16_lse ? 1e-2f : 1e-4f, 1e-4f, "lse");
    // The scalar kernels' o on the same inputs.
    Owned scalar(param_of(c.shape(c.Sq, c.H, c.Dv), BF, CCV_TENSOR_FORMAT_NHWC, true));
    {
      EnvGuard off("NNC_GPU_ATTN_MMA", "0");
      ccv_nnc_cmd_t f = c.cmd(FWD);
      f.backend = CCV_NNC_BACKEND_GPU_REF;
      ASSERT_EQ(exec(f, ccv_nnc_no_hint, {in.q->gpu(), in.k->gpu(), in.v->gpu(), in.mask ? in.mask->gpu() : nullptr},
                     {scalar.t}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
    }
    Owned a = as_f32(to_cpu(scalar.t)), mma_o = to_cpu(o->gpu_parent());
    Owned m = as_f32(mma_o);
    // Compare the view's elements: the packed scalar o against o's window.
    size_t differ = 0;
    const std::vector<int> dim = c.shape(c.Sq, c.H, c.Dv);
    const size_t n = ccv_nnc_tensor_count(a->info);
    for (size_t e = 0; e < n; e++) {
      // The parent index of packed element e (a border of one when o is a view).
      size_t x = e, pe = 0, mul = 1;
      for (int d = static_cast<int>(dim.size()) - 1; d >= 0; d--) {
        const size_t sz = static_cast<size_t>(dim[static_cast<size_t>(d)]);
        pe += ((x % sz) + (c.views ? 1 : 0)) * mul;
        mul *= sz + (c.views ? 2 : 0);
        x /= sz;
      }
      if (a->data.f32[e] != m->data.f32[pe]) differ++;
    }
    if (c.Sq > 1) {
      EXPECT_GT(differ, 0u) << "the tensor-core forward gave the scalar kernels' bits: did it run?";
    }
    BothPtr g = both({c.shape(c.Sq, c.H, c.Dv), c.views, BF}, rng);
    BothPtr dq = both({c.shape(c.Sq, c.H, c.D), c.views, BF}, rng),
            dk = both({c.shape(c.Sk, c.Hk, c.D), c.views, BF}, rng),
            dv = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, BF}, rng);
    run_both(c.cmd(BWD),
             {g.get(), nullptr, nullptr, in.q.get(), in.k.get(), in.v.get(), in.mask.get(), nullptr, nullptr, o.get(),
              lse.get()},
             {dq.get(), dk.get(), dv.get()}, "backward");
    if (c.bf16_lse) {
      ASSERT_LT(max_finite_lse(*lse), 4.f) << "the tolerance's argument needs lse in [-4, 4)";
    }
    const float rtol = c.bf16_lse ? 3e-2f : 1e-2f, atol = c.bf16_lse ? 2e-2f : 5e-3f;
    dq->expect_close(rtol, atol, "dq");
    dk->expect_close(rtol, atol, "dk");
    dv->expect_close(rtol, atol, "dv");
  }
}

// Errors with messages, not crashes: mixed types (the family's check), 64F
// (no GPU kernel: the registry's message names the tensors' types), the
// fused projection when the flash kernels are forced.
TEST(AttnBf16Gpu, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4104);
  Case c{1, 4, 5, 2, 2, 8, 6};
  ccv_nnc_cmd_t f = c.cmd(FWD);
  f.backend = CCV_NNC_BACKEND_GPU_REF;
  BothPtr q = both({c.shape(c.Sq, c.H, c.D), false, BF}, rng), k = both({c.shape(c.Sk, c.Hk, c.D), false, BF}, rng),
          v = both({c.shape(c.Sk, c.Hk, c.Dv), false, BF}, rng), o = both({c.shape(c.Sq, c.H, c.Dv), false, BF}, rng);
  // 16BF q with a 16F k.
  BothPtr k16 = both({c.shape(c.Sk, c.Hk, c.D), false, CCV_16F}, rng);
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {q->gpu(), k16->gpu(), v->gpu()}, {o->gpu()}), CCV_NNC_EXEC_INVALID);
  std::string msg = ccv_nnc_error_message();
  EXPECT_NE(msg.find("16BF"), std::string::npos) << msg;
  EXPECT_NE(msg.find("16F"), std::string::npos) << msg;
  // 16BF q with a 32F o.
  BothPtr o32 = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_32F}, rng);
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {q->gpu(), k->gpu(), v->gpu()}, {o32->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("32F"), std::string::npos) << ccv_nnc_error_message();
  // The backward: a 16F g with 16BF q, k, v.
  ccv_nnc_cmd_t b = c.cmd(BWD);
  b.backend = CCV_NNC_BACKEND_GPU_REF;
  BothPtr g16 = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_16F}, rng),
          dq = both({c.shape(c.Sq, c.H, c.D), false, BF}, rng);
  EXPECT_EQ(exec(b, ccv_nnc_no_hint, {g16->gpu(), nullptr, nullptr, q->gpu(), k->gpu(), v->gpu()}, {dq->gpu()}),
            CCV_NNC_EXEC_INVALID);
  msg = ccv_nnc_error_message();
  EXPECT_NE(msg.find("16F"), std::string::npos) << msg;
  EXPECT_NE(msg.find("16BF"), std::string::npos) << msg;
  // A 64F lse beside 16BF q, k, v: no GPU kernel (CPU_REF takes it).
  BothPtr lse64 = both({c.lse_shape(), false, CCV_64F}, rng);
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {q->gpu(), k->gpu(), v->gpu()}, {o->gpu(), lse64->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  msg = ccv_nnc_error_message();
  EXPECT_NE(msg.find("GPU_REF"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64F"), std::string::npos) << msg;
  // 64F throughout.
  BothPtr qd = both({c.shape(c.Sq, c.H, c.D), false, CCV_64F}, rng),
          kd = both({c.shape(c.Sk, c.Hk, c.D), false, CCV_64F}, rng),
          vd = both({c.shape(c.Sk, c.Hk, c.Dv), false, CCV_64F}, rng),
          od = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_64F}, rng);
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {qd->gpu(), kd->gpu(), vd->gpu()}, {od->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // The fused projection in 16BF with the flash kernels forced: declined, saying why.
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", "0");
  const Case fc = fused_cases()[0];
  Inputs fi(fc, rng);
  Owned y(param_of({fc.B, fc.Sq, fc.Nout}, BF, CCV_TENSOR_FORMAT_NHWC, true));
  ccv_nnc_cmd_t ff = fc.cmd(FWD);
  ff.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(ff, ccv_nnc_no_hint,
                 {fi.q->gpu(), fi.k->gpu(), fi.v->gpu(), fi.mask->gpu(), fi.w->gpu(), fi.bias->gpu()}, {y.t}),
            CCV_NNC_EXEC_NO_KERNEL);
  msg = ccv_nnc_error_message();
  EXPECT_NE(msg.find("NNC_GPU_ATTN_FLASH=1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fused"), std::string::npos) << msg;
}

}  // namespace
