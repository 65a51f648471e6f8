// The tensor-core flash attention backward (cuda/flash_mma_bwd_kernels.cu:
// mma.sync.m16n8k16, 16F and 16BF operands, fp32 accumulation), which
// attn_gpu.cpp's flash backward runs for 16F / 16BF inputs unless
// NNC_GPU_ATTN_MMA=0. Runs under the CPU emulation in CI (tools/gpu-emu, which
// emulates mma.sync from the lanes' fragments); skips without a GPU.
//
// 1. Through the command (16F and 16BF), with NNC_GPU_ATTN_FLASH=1 (a
//    declined call fails): against CPU_REF on the same inputs (flash_case.hpp's
//    check_case and its tolerances, argued in flash_gpu_test.cpp and
//    flash_case.hpp: 1e-2 + 1e-2 |cpu| for fp16 gradients, 2e-2 + 2e-2 |cpu|
//    for bf16), and against
//    the scalar flash kernels (NNC_GPU_ATTN_MMA=0) on the same inputs and
//    saved o / lse. Lengths 1, 19, 37, 70, 130 (across the 64-row / 64-key
//    tiles), heads 8, 40, 64, 80, 128 (padded to 16 in the kernels), causal
//    with Sq < Sk and Sq > Sk (rows that see no key), masks with -inf,
//    fewer kv heads, views, lse 16F, with and without saved o / lse; heads
//    above 128 fall back to the scalar kernels.
// 2. The launch functions directly (16F and 16BF; dq, dk, dv written as 32F
//    so that only the kernels' own error remains) against a double reference
//    computed here from the same rounded inputs, and the scalar kernels
//    against the same reference (checking this harness).
//
// Tolerances for 2. The tensor-core kernels compute S = Q K^T and dP = dO V^T
// from exact 16-bit inputs (products exact in fp32, fp32 sums: ~1e-6
// relative), P and dS in fp32, then round P (for dV += P^T dO) and dS (for
// dK += dS^T Q, dQ += dS K) to the input type once: each term of those sums
// is off by at most u |term|, u the unit roundoff (fp16 2^-11, bf16 2^-8).
// So |gpu - ref| <= u A + 1e-4 (A + |ref|) + 1e-6 per element, A the sum of
// the absolute terms (sum_i |p_ij dO_i| for dv_j, sum_i |ds_ij q_i| for dk_j,
// sum_j |ds_ij k_j| for dq_i, computed with the reference); the scalar kernels
// (fp32 throughout) within 1e-4 (A + |ref|) + 1e-6. A misplaced fragment
// element, a wrong tile edge or a causal bound off by one moves whole terms
// (far more than u of the sum).
#include "cuda/flash_mma_bwd.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/stream.hpp"
#include "flash_case.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"

using namespace nnc_gpu_test;
using namespace nnc_gpu_test::flash;

namespace {

// ---- 1. through the command, 16F ----

std::vector<Case> mma_cases() {
  std::vector<Case> cs;
  cs.push_back(Case(1, 70, 70, 2, 1, 64, 64));  // two row / key tiles, 2 query heads per kv head
  Case lc{1, 19, 130, 2, 2, 40, 8};             // causal, Sq < Sk, mask [Sq, Sk]; D 40 -> 48, Dv 8 -> 16
  lc.causal = true, lc.mask = {19, 130};
  cs.push_back(lc);
  Case sk{1, 130, 19, 1, 1, 80, 40};  // causal, Sq > Sk (rows 0..110 see no key), views; bucket 128
  sk.causal = true, sk.views = true;
  cs.push_back(sk);
  Case one{2, 1, 19, 2, 1, 8, 8};  // one query row, mask [B, H, 1, Sk], lse 16F
  one.mask = {2, 2, 1, 19}, one.half_lse = true;
  cs.push_back(one);
  Case big{1, 37, 70, 1, 1, 128, 128};  // the largest heads, views, mask [B, 1, Sq, Sk]
  big.views = true, big.mask = {1, 1, 37, 70};
  cs.push_back(big);
  return cs;
}

TEST(FlashMmaBwd, F16MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", nullptr);
  std::mt19937 rng(4101);
  for (const Case& c : mma_cases()) check_case(c, CCV_16F, true, rng);
}

TEST(FlashMmaBwd, F16WithoutSavedOutputs) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", nullptr);
  std::mt19937 rng(4102);
  const std::vector<Case> cs = mma_cases();
  for (const Case& c : {cs[1], cs[2]}) check_case(c, CCV_16F, false, rng);  // o, lse recomputed as fp32
}

// 16BF through the command (forward and backward both on the tensor cores).
TEST(FlashMmaBwd, Bf16MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", nullptr);
  std::mt19937 rng(4108);
  const std::vector<Case> cs = mma_cases();
  for (const Case& c : cs) check_case(c, CCV_16BF, true, rng);
  check_case(cs[2], CCV_16BF, false, rng);  // o, lse recomputed as fp32
}

// Heads above 128: the tensor-core kernels decline, the scalar ones run.
TEST(FlashMmaBwd, WideHeadsFallBackToTheScalarKernels) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", nullptr);
  std::mt19937 rng(4103);
  EXPECT_FALSE(nnc::gpu::flash_mma_bwd_geometry(160, 16, nullptr));
  check_case(Case(1, 19, 23, 1, 1, 160, 16), CCV_16F, true, rng);
}

// Each of dq, dk, dv alone (the others stay as they were, equal on both
// sides): the dq kernel alone, or the dk / dv kernel storing one of the two.
TEST(FlashMmaBwd, F16EachGradientAlone) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", nullptr);
  std::mt19937 rng(4107);
  const Case c = mma_cases()[1];
  const int dt = CCV_16F;
  const float tol = bwd_tol(dt);
  for (int which = 0; which < 3; which++) {
    SCOPED_TRACE(which);
    Inputs in(c, dt, rng);
    BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), false, dt}, rng), lse = both({c.lse_shape(), false, CCV_32F}, rng);
    run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get(), in.mask.get()}, {o.get(), lse.get()}, "forward");
    BothPtr dq = both({c.shape(c.Sq, c.H, c.D), false, dt}, rng), dk = both({c.shape(c.Sk, c.Hk, c.D), false, dt}, rng),
            dv = both({c.shape(c.Sk, c.Hk, c.Dv), false, dt}, rng);
    run_both(c.cmd(BWD),
             {in.g.get(), nullptr, nullptr, in.q.get(), in.k.get(), in.v.get(), in.mask.get(), nullptr, nullptr,
              o.get(), lse.get()},
             {which == 0 ? dq.get() : nullptr, which == 1 ? dk.get() : nullptr, which == 2 ? dv.get() : nullptr},
             "backward");
    dq->expect_close(tol, tol, "dq");
    dk->expect_close(tol, tol, "dk");
    dv->expect_close(tol, tol, "dv");
  }
}

// dq, dk, dv of one backward (type dt) from the given saved o / lse under
// NNC_GPU_ATTN_MMA=`mma`, as packed 32F CPU tensors.
std::vector<Owned> backward_run(const Case& c, int dt, const Inputs& in, const Owned& o, const Owned& lse,
                                const char* mma) {
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard m("NNC_GPU_ATTN_MMA", mma);
  return gpu_backward(c, dt, in, o, lse);
}

// The tensor-core and the scalar kernels on the same inputs and saved o /
// lse: both read the same 16-bit values; the tensor-core kernels round p and
// ds to the type (2^-11 relative for fp16, 2^-9 for bf16) before their
// products, and both round the gradients once (one ulp apart at worst:
// 2^-10 / 2^-7): within 4e-3 (1 + |x|) for 16F, 2e-2 (1 + |x|) for 16BF,
// where a wrong index moves values by 1e-1 or more. Some element must differ
// in its bits (so two different kernels did run), and a rerun gives the same
// bits (no atomics).
void agree_with_scalar(int dt, std::mt19937& rng) {
  const float tol = dt == CCV_16F ? 4e-3f : 2e-2f;
  const char* names[3] = {"dq", "dk", "dv"};
  const std::vector<Case> cs = mma_cases();
  for (const Case& c : {cs[0], cs[1], cs[3]}) {
    SCOPED_TRACE(c.name(dt));
    Inputs in(c, dt, rng);
    EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
    const GpuForward f(c, dt, in);
    ASSERT_FALSE(::testing::Test::HasFailure());
    std::vector<Owned> mma = backward_run(c, dt, in, f.o, f.lse, nullptr),
                       scalar = backward_run(c, dt, in, f.o, f.lse, "0"), again = backward_run(c, dt, in, f.o, f.lse, "1");
    size_t differ = 0;
    for (int x = 0; x < 3; x++) {
      const size_t n = ccv_nnc_tensor_count(mma[x]->info);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) {
        const float a = mma[x]->data.f32[i], b = scalar[x]->data.f32[i];
        differ += a != b;
        if (!(std::fabs(a - b) <= tol * (1 + std::fabs(b))) && bad++ < 5)
          ADD_FAILURE() << names[x] << ": element " << i << " is " << a << " on tensor cores, " << b << " scalar";
      }
      EXPECT_EQ(bad, 0u) << names[x];
      EXPECT_EQ(std::memcmp(mma[x]->data.f32, again[x]->data.f32, n * sizeof(float)), 0)
          << names[x] << ": reruns differ";
    }
    EXPECT_GT(differ, 0u) << "the tensor-core and the scalar kernels gave the same bits everywhere: did both run?";
  }
}

TEST(FlashMmaBwd, F16AgreesWithTheScalarKernels) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4104);
  agree_with_scalar(CCV_16F, rng);
}

TEST(FlashMmaBwd, Bf16AgreesWithTheScalarKernels) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4109);
  agree_with_scalar(CCV_16BF, rng);
}

// ---- 2. the launch functions directly, 16F and 16BF, against double ----

namespace cu = nnc::cuda;
namespace g = nnc::gpu;

uint16_t bits_of(float v, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(u >> 16);
  }
  uint16_t h;
  ccv_float_to_half_precision(&v, &h, 1);
  return h;
}
float float_of(uint16_t b, bool bf16) {
  if (bf16) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  }
  float v;
  ccv_half_precision_to_float(&b, &v, 1);
  return v;
}

struct Direct {
  int B, Sq, Sk, H, Hk, D, Dv;
  bool causal = false, mask = false, bhsd = false;  // bhsd: operands [B, H, S, D + 3] (gaps of NaN bits)
};

// An operand [B, S, Hx, Dx] in its layout: strides, element count, values
// (rounded to the type, NaN bits in the gaps) and their floats.
struct Operand {
  g::AttnView view;
  std::vector<uint16_t> bits;
  std::vector<float> val;
  int B, S, Hx, Dx;
  Operand(const Direct& t, int S, int Hx, int Dx, bool bf16, std::mt19937& rng) : B(t.B), S(S), Hx(Hx), Dx(Dx) {
    if (t.bhsd) {
      const int row = Dx + 3;
      view.sd = 1, view.ss = row, view.sh = static_cast<int64_t>(S) * row, view.sb = static_cast<int64_t>(Hx) * S * row;
    } else {
      view = g::attn_packed(S, Hx, Dx);
    }
    const size_t n = static_cast<size_t>(view.sb) * B;
    bits.assign(n, 0x7fff), val.assign(n, std::numeric_limits<float>::quiet_NaN());
    std::uniform_real_distribution<float> u(-1, 1);
    for (int b = 0; b < B; b++)
      for (int s = 0; s < S; s++)
        for (int h = 0; h < Hx; h++)
          for (int d = 0; d < Dx; d++) {
            const int64_t o = g::attn_off(view, b, s, h, d);
            bits[o] = bits_of(u(rng), bf16);
            val[o] = float_of(bits[o], bf16);
          }
  }
  double at(int b, int s, int h, int d) const { return val[g::attn_off(view, b, s, h, d)]; }
};

template <class V>
void* upload(const std::vector<V>& v) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, v.size() * sizeof(V)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice), cudaSuccess);
  // From pageable memory the copy may still be landing, on the legacy
  // stream, which the kernels' non-blocking stream does not wait for.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return p;
}

// gpu (packed [B, S, Hx, Dx] floats) against ref, with abs the sums of
// absolute terms: |gpu - ref| <= u abs + 1e-4 (abs + |ref|) + 1e-6.
void expect_within(const std::vector<float>& gpu, const std::vector<double>& ref, const std::vector<double>& abs,
                   double u, const char* what) {
  size_t bad = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    const double tol = u * abs[i] + 1e-4 * (abs[i] + std::fabs(ref[i])) + 1e-6;
    if (!(std::fabs(gpu[i] - ref[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << gpu[i] << ", want " << ref[i] << " (tolerance " << tol
                    << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << ref.size() << " elements off";
}

void check_direct(const Direct& t, bool bf16, std::mt19937& rng) {
  SCOPED_TRACE(std::string(bf16 ? "16BF" : "16F") + " B" + std::to_string(t.B) + " Sq" + std::to_string(t.Sq) + " Sk" +
               std::to_string(t.Sk) + " H" + std::to_string(t.H) + "/" + std::to_string(t.Hk) + " D" +
               std::to_string(t.D) + "/" + std::to_string(t.Dv) + (t.causal ? " causal" : "") +
               (t.mask ? " mask" : "") + (t.bhsd ? " [B, H, S, D+3]" : ""));
  const Operand q(t, t.Sq, t.H, t.D, bf16, rng), k(t, t.Sk, t.Hk, t.D, bf16, rng), v(t, t.Sk, t.Hk, t.Dv, bf16, rng),
      dO(t, t.Sq, t.H, t.Dv, bf16, rng);
  // The mask: [Sq, Sk] broadcast over B and H, every 7th entry -inf.
  std::vector<uint16_t> mbits(static_cast<size_t>(t.Sq) * t.Sk);
  std::vector<float> mval(mbits.size());
  {
    std::uniform_real_distribution<float> u(-1, 1);
    for (size_t i = 0; i < mbits.size(); i++) {
      mbits[i] = bits_of(i % 7 == 3 ? -std::numeric_limits<float>::infinity() : u(rng), bf16);
      mval[i] = float_of(mbits[i], bf16);
    }
  }
  g::AttnShape s;
  s.B = t.B, s.Sq = t.Sq, s.Sk = t.Sk, s.H = t.H, s.Hk = t.Hk, s.D = t.D, s.Dv = t.Dv;
  s.scale = 1.1f / std::sqrt(static_cast<float>(t.D));
  s.causal = t.causal, s.has_mask = t.mask;
  s.q = q.view, s.k = k.view, s.v = v.view;
  s.mask.ss = t.Sk, s.mask.sd = 1;
  s.lse = g::attn_packed_lse(t.Sq, t.H);
  // The reference, in double: lse, O (given to the kernels as 32F), dq, dk, dv and their absolute sums.
  const g::AttnView pq = g::attn_packed(t.Sq, t.H, t.D), pk = g::attn_packed(t.Sk, t.Hk, t.D),
                    pv = g::attn_packed(t.Sk, t.Hk, t.Dv), po = g::attn_packed(t.Sq, t.H, t.Dv);
  const size_t nq = static_cast<size_t>(t.B) * t.Sq * t.H * t.D, nk = static_cast<size_t>(t.B) * t.Sk * t.Hk * t.D,
               nv = static_cast<size_t>(t.B) * t.Sk * t.Hk * t.Dv, no = static_cast<size_t>(t.B) * t.Sq * t.H * t.Dv;
  std::vector<float> lse(static_cast<size_t>(t.B) * t.H * t.Sq), O(no);
  std::vector<double> dq(nq), dk(nk), dv(nv), aq(nq), ak(nk), av(nv);
  for (int b = 0; b < t.B; b++)
    for (int h = 0; h < t.H; h++) {
      const int hk = g::attn_kv_head(s, h);
      for (int i = 0; i < t.Sq; i++) {
        const int end = g::attn_key_end(s, i);
        std::vector<double> sc(t.Sk, -INFINITY), p(t.Sk, 0.0), dp(t.Sk, 0.0);
        double m = -INFINITY;
        for (int j = 0; j < end; j++) {
          double x = 0;
          for (int d = 0; d < t.D; d++) x += q.at(b, i, h, d) * k.at(b, j, hk, d);
          x *= s.scale;
          if (t.mask) x += mval[static_cast<size_t>(i) * t.Sk + j];
          sc[j] = x;
          m = std::max(m, x);
        }
        double l = 0;
        if (m != -INFINITY)
          for (int j = 0; j < end; j++) l += std::exp(sc[j] - m);
        const double L = l > 0 ? m + std::log(l) : -INFINITY;
        lse[(static_cast<size_t>(b) * t.H + h) * t.Sq + i] = static_cast<float>(L);
        double delta = 0;
        for (int j = 0; j < end; j++) {
          if (L == -INFINITY || sc[j] == -INFINITY) continue;
          p[j] = std::exp(sc[j] - L);
          for (int d = 0; d < t.Dv; d++) dp[j] += dO.at(b, i, h, d) * v.at(b, j, hk, d);
        }
        for (int d = 0; d < t.Dv; d++) {
          double o = 0;
          for (int j = 0; j < end; j++) o += p[j] * v.at(b, j, hk, d);
          O[g::attn_off(po, b, i, h, d)] = static_cast<float>(o);
          delta += o * dO.at(b, i, h, d);
        }
        for (int j = 0; j < end; j++) {
          if (p[j] == 0) continue;
          const double ds = p[j] * (dp[j] - delta) * s.scale;
          for (int d = 0; d < t.D; d++) {
            const int64_t oq = g::attn_off(pq, b, i, h, d), ok = g::attn_off(pk, b, j, hk, d);
            dq[oq] += ds * k.at(b, j, hk, d), aq[oq] += std::fabs(ds * k.at(b, j, hk, d));
            dk[ok] += ds * q.at(b, i, h, d), ak[ok] += std::fabs(ds * q.at(b, i, h, d));
          }
          for (int d = 0; d < t.Dv; d++) {
            const int64_t ov = g::attn_off(pv, b, j, hk, d);
            dv[ov] += p[j] * dO.at(b, i, h, d), av[ov] += std::fabs(p[j] * dO.at(b, i, h, d));
          }
        }
      }
    }
  ccv_nnc_stream_context_t* sc = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(sc, nullptr);
  const cudaStream_t st = cu::stream_of(sc, 0, "flash mma test");
  cu::FlashArgs a;
  a.s = s;
  a.type = bf16 ? cu::kBF16 : cu::kF16;
  a.q = upload(q.bits), a.k = upload(k.bits), a.v = upload(v.bits);
  a.mask = t.mask ? upload(mbits) : nullptr;
  a.lse = upload(lse), a.lse_type = cu::kF32;
  a.dO = upload(dO.bits), a.dO_view = dO.view, a.dO_type = a.type;
  a.O = upload(O), a.O_view = po, a.O_type = cu::kF32;
  a.delta = static_cast<float*>(upload(std::vector<float>(lse.size(), 0.f)));
  a.dq_view = pq, a.dk_view = pk, a.dv_view = pv;
  a.out_type = cu::kF32;
  const double u = bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  for (int mma = 1; mma >= 0; mma--) {
    SCOPED_TRACE(mma ? "tensor-core kernels" : "scalar kernels");
    // Outputs start as NaN: an element not written fails.
    a.dq = upload(std::vector<float>(nq, NAN)), a.dk = upload(std::vector<float>(nk, NAN));
    a.dv = upload(std::vector<float>(nv, NAN));
    if (mma) {
      g::FlashMmaBwdGeom mg;
      ASSERT_TRUE(g::flash_mma_bwd_geometry(t.D, t.Dv, &mg));
      ASSERT_EQ(cu::launch_flash_mma_backward(st, a, mg), cudaSuccess);
    } else {
      ASSERT_TRUE(g::flash_geometry(t.D, t.Dv, g::kFlashShmemLimit, &a.g));
      ASSERT_EQ(cu::launch_flash_backward(st, a), cudaSuccess);
    }
    ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    std::vector<float> gq(nq), gk(nk), gv(nv);
    ASSERT_EQ(cudaMemcpy(gq.data(), a.dq, nq * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gk.data(), a.dk, nk * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gv.data(), a.dv, nv * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    expect_within(gq, dq, aq, mma ? u : 0.0, "dq");
    expect_within(gk, dk, ak, mma ? u : 0.0, "dk");
    expect_within(gv, dv, av, mma ? u : 0.0, "dv");
    cudaFree(a.dq), cudaFree(a.dk), cudaFree(a.dv);
  }
  // Not 16F / 16BF: refused.
  cu::FlashArgs f32 = a;
  f32.type = cu::kF32;
  g::FlashMmaBwdGeom mg;
  ASSERT_TRUE(g::flash_mma_bwd_geometry(t.D, t.Dv, &mg));
  EXPECT_EQ(cu::launch_flash_mma_backward(st, f32, mg), cudaErrorInvalidValue);
  for (const void* p :
       {a.q, a.k, a.v, a.mask, static_cast<const void*>(a.lse), a.dO, a.O, static_cast<const void*>(a.delta)})
    if (p) cudaFree(const_cast<void*>(p));
  ccv_nnc_stream_context_free(sc);
}

std::vector<Direct> direct_cases() {
  std::vector<Direct> cs;
  Direct a{1, 70, 130, 2, 1, 40, 24};  // causal Sq < Sk, mask, fewer kv heads, [B, H, S, D + 3]
  a.causal = true, a.mask = true, a.bhsd = true;
  cs.push_back(a);
  Direct b{2, 130, 19, 1, 1, 128, 80};  // causal Sq > Sk: rows without keys; bucket 128
  b.causal = true;
  cs.push_back(b);
  Direct c{1, 1, 19, 3, 3, 8, 64};  // one query row, mask
  c.mask = true;
  cs.push_back(c);
  Direct d{1, 37, 70, 2, 2, 64, 16};  // not causal, two key tiles, [B, H, S, D + 3]
  d.bhsd = true;
  cs.push_back(d);
  return cs;
}

TEST(FlashMmaBwd, DirectF16AgainstDouble) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4105);
  for (const Direct& t : direct_cases()) check_direct(t, false, rng);
}

TEST(FlashMmaBwd, DirectBf16AgainstDouble) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(4106);
  for (const Direct& t : direct_cases()) check_direct(t, true, rng);
}

}  // namespace
