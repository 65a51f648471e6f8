// Shared by the flash attention GPU tests (flash_gpu_test.cpp,
// flash_mma_bwd_test.cpp): the attention cases (shapes,
// causal, masks, views, lse type), their inputs, and check_case: forward then
// backward on CPU_REF and GPU_REF over the same inputs, compared with the
// tolerances argued at the top of flash_gpu_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "env_guard.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"

namespace nnc_gpu_test::flash {

inline constexpr uint32_t FWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD,
                          BWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD;

struct Case {
  int B, Sq, Sk, H, Hk, D, Dv;
  Case(int b, int sq, int sk, int h, int hk, int d, int dv) : B(b), Sq(sq), Sk(sk), H(h), Hk(hk), D(d), Dv(dv) {}
  bool causal = false, four_d = true, views = false, half_lse = false;
  std::vector<int> mask;
  std::string name(int dt) const {
    char b[200];
    std::snprintf(b, sizeof(b), "B%d Sq%d Sk%d H%d/%d D%d/%d%s%s%s mask nd %d %s%s", B, Sq, Sk, H, Hk, D, Dv,
                  causal ? " causal" : "", four_d ? "" : " 3-d", views ? " views" : "", static_cast<int>(mask.size()),
                  dt == CCV_16F    ? "16F"
                  : dt == CCV_16BF ? "16BF"
                                   : "32F",
                  half_lse && dt == CCV_16F ? " lse 16F" : "");
    return b;
  }
  std::vector<int> shape(int S, int h, int d) const {
    return four_d ? std::vector<int>{B, S, h, d} : std::vector<int>{B, S, d};
  }
  std::vector<int> lse_shape() const { return four_d ? std::vector<int>{B, H, Sq} : std::vector<int>{Sq, B}; }
  int lse_type(int dt) const { return half_lse && dt == CCV_16F ? CCV_16F : CCV_32F; }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = make_cmd(id);
    c.info.scaled_dot_product_attention.scale = 1.1f / std::sqrt(static_cast<float>(D));
    c.info.scaled_dot_product_attention.is_causal = causal;
    return c;
  }
};

inline std::vector<Case> cases() {
  std::vector<Case> cs;
  cs.push_back(Case(2, 37, 53, 4, 2, 24, 24));  // over several tiles both ways, 2 query heads per kv head
  Case one{1, 1, 37, 2, 1, 1, 3};               // one query row, D = 1, mask [B, H, 1, Sk], lse 16F
  one.mask = {1, 2, 1, 37}, one.half_lse = true;
  cs.push_back(one);
  Case lc{2, 37, 130, 2, 2, 64, 64};  // causal, Sq < Sk: rows end at different keys within a tile
  lc.causal = true;
  cs.push_back(lc);
  Case sk{1, 40, 23, 3, 3, 7, 9};  // causal with Sq > Sk (rows 0..16 see no key), mask [Sq, Sk], views
  sk.causal = true, sk.mask = {40, 23}, sk.views = true;
  cs.push_back(sk);
  Case t3{2, 19, 19, 1, 1, 96, 64};  // 3-d, causal square, mask [Sk]
  t3.four_d = false, t3.causal = true, t3.mask = {19};
  cs.push_back(t3);
  Case big{1, 17, 33, 2, 1, 128, 128};  // the largest head here, views, mask [B, 1, Sq, Sk]
  big.views = true, big.mask = {1, 1, 17, 33};
  cs.push_back(big);
  return cs;
}

inline BothPtr make_mask(const Case& c, int dt, std::mt19937& rng) { return attn_mask(c.mask, dt, rng, 5); }

struct Inputs {
  BothPtr q, k, v, mask, g;
  Inputs(const Case& c, int dt, std::mt19937& rng) {
    q = both({c.shape(c.Sq, c.H, c.D), c.views, dt}, rng);
    k = both({c.shape(c.Sk, c.Hk, c.D), c.views, dt}, rng);
    v = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, dt}, rng);
    mask = make_mask(c, dt, rng);
    g = both({c.shape(c.Sq, c.H, c.Dv), c.views, dt}, rng);
  }
};

// One GPU forward (GPU_REF, under whatever NNC_GPU_ATTN_* the caller set):
// o and lse on the GPU, and o (as fp32) and lse on the CPU.
struct GpuForward {
  Owned o, lse;
  GpuForward(const Case& c, int dt, const Inputs& in)
      : o(param_of(c.shape(c.Sq, c.H, c.Dv), dt, CCV_TENSOR_FORMAT_NHWC, true)),
        lse(param_of(c.lse_shape(), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true)) {
    ccv_nnc_cmd_t f = c.cmd(FWD);
    f.backend = CCV_NNC_BACKEND_GPU_REF;
    EXPECT_EQ(exec(f, ccv_nnc_no_hint, {in.q->gpu(), in.k->gpu(), in.v->gpu(), in.mask ? in.mask->gpu() : nullptr},
                   {o.t, lse.t}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
  }
  std::vector<Owned> on_cpu() const {
    std::vector<Owned> back;
    back.push_back(as_f32(to_cpu(o.t)));
    back.push_back(to_cpu(lse.t));
    return back;
  }
};

// dq, dk, dv (as packed fp32 CPU tensors) of one GPU backward (GPU_REF,
// under the caller's NNC_GPU_ATTN_*) from the saved o and lse.
inline std::vector<Owned> gpu_backward(const Case& c, int dt, const Inputs& in, const Owned& o, const Owned& lse) {
  std::vector<Owned> out;
  out.emplace_back(param_of(c.shape(c.Sq, c.H, c.D), dt, CCV_TENSOR_FORMAT_NHWC, true));
  out.emplace_back(param_of(c.shape(c.Sk, c.Hk, c.D), dt, CCV_TENSOR_FORMAT_NHWC, true));
  out.emplace_back(param_of(c.shape(c.Sk, c.Hk, c.Dv), dt, CCV_TENSOR_FORMAT_NHWC, true));
  ccv_nnc_cmd_t b = c.cmd(BWD);
  b.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(b, ccv_nnc_no_hint,
                 {in.g->gpu(), nullptr, nullptr, in.q->gpu(), in.k->gpu(), in.v->gpu(),
                  in.mask ? in.mask->gpu() : nullptr, nullptr, nullptr, o.t, lse.t},
                 {out[0].t, out[1].t, out[2].t}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  std::vector<Owned> back;
  for (const Owned& t : out) back.push_back(as_f32(to_cpu(t.t)));
  return back;
}

// (16BF, on the tensor-core kernels both ways: bf16 rounds at 2^-9 relative,
// results that differ by rounding are one ulp, 2^-7, apart; the forward
// rounds p to bf16 before p v (o off by <= 2^-9 of sum p |v|), the backward
// p and ds before their products (each term off by <= 2^-9 of itself: 2^-9
// of the sum of |terms|, a few units here), and the backward's delta comes
// from the bf16-rounded o: o within 1e-2 + 1e-2 |cpu|, gradients within
// 2e-2 + 2e-2 |cpu|; a wrong index moves values by 1e-1 or more.)
inline float fwd_tol(int dt) { return dt == CCV_16F ? 4e-3f : dt == CCV_16BF ? 1e-2f : 1e-4f; }
inline float bwd_tol(int dt) { return dt == CCV_16F ? 1e-2f : dt == CCV_16BF ? 2e-2f : 5e-4f; }

// Forward then backward of one case on both sides (each backward from its
// own side's saved o and lse, or with `saved` false from neither), checked
// against CPU_REF.
inline void check_case(const Case& c, int dt, bool saved, std::mt19937& rng) {
  SCOPED_TRACE(c.name(dt) + (saved ? "" : " (backward without o, lse)"));
  Inputs in(c, dt, rng);
  BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), c.views, dt}, rng);
  BothPtr lse = both({c.lse_shape(), false, c.lse_type(dt)}, rng);
  run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get(), in.mask.get()}, {o.get(), lse.get()}, "forward");
  o->expect_close(fwd_tol(dt), fwd_tol(dt), "o");
  // -inf rows compare equal; a 16F lse is one of two roundings of values up to ~8.
  lse->expect_close(1e-3f, c.lse_type(dt) == CCV_16F ? 4e-3f : 1e-4f, "lse");
  BothPtr dq = both({c.shape(c.Sq, c.H, c.D), c.views, dt}, rng),
          dk = both({c.shape(c.Sk, c.Hk, c.D), c.views, dt}, rng),
          dv = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, dt}, rng);
  run_both(c.cmd(BWD),
           {in.g.get(), nullptr, nullptr, in.q.get(), in.k.get(), in.v.get(), in.mask.get(), nullptr, nullptr,
            saved ? o.get() : nullptr, saved ? lse.get() : nullptr},
           {dq.get(), dk.get(), dv.get()}, "backward");
  dq->expect_close(bwd_tol(dt), bwd_tol(dt), "dq");
  dk->expect_close(bwd_tol(dt), bwd_tol(dt), "dk");
  dv->expect_close(bwd_tol(dt), bwd_tol(dt), "dv");
}

// a against b, both packed fp32 CPU tensors of one count: |a - b| <= tol
// (1 + |b|), equal values (infinities too: rows without keys have lse -inf)
// agreeing. a_is / b_is name the two sides in the failures.
inline void expect_agree(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b, float tol, const char* what,
                         const char* a_is, const char* b_is) {
  const size_t n = ccv_nnc_tensor_count(b->info);
  ASSERT_EQ(ccv_nnc_tensor_count(a->info), n) << what;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const float x = a->data.f32[i], y = b->data.f32[i];
    if (!(x == y || std::fabs(x - y) <= tol * (1 + std::fabs(y))) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << x << " " << a_is << ", " << y << " " << b_is;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements differ";
}

}  // namespace nnc_gpu_test::flash
