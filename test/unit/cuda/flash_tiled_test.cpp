// The register-tiled scalar flash kernels (cuda/flash_tiled_kernels.cu,
// the default for 32F attention with heads up to 128, and for 16F / 16BF
// kept off the tensor cores) against CPU_REF, and against the old scalar
// flash kernels (NNC_GPU_ATTN_F32=old) on the same inputs. Shapes cross the
// kernels' 64-row / 64-key tiles with remainders both ways (Sq, Sk of 65 ..
// 130, not multiples of 64, Sq != Sk), heads D / Dv of 64, 96, 128 and odd
// ones (33, 80: padded columns), causal both ways (Sq < Sk; Sq > Sk with rows
// that see no key), masks of several broadcast shapes with -inf entries,
// fewer kv heads (a dk / dv block sums over its query heads), 3-d operands
// and views. NNC_GPU_ATTN_FLASH=1, so a declined call fails. Skips without a
// GPU.
//
// Tolerances (flash_gpu_test.cpp's argument, unchanged: the tiled kernels
// sum the same fp32 products in another order, with exp2 of scores scaled
// by log2 e instead of exp: a relative ~1e-7 per step): fp32 o within
// 1e-4 + 1e-4 |cpu|, gradients 5e-4 + 5e-4 |cpu|; against the old kernels
// 1e-4 (only the summation order differs). A wrong tile edge, swizzle, row
// group or head moves values by 1e-2 or more (checked by breaking the
// kernel on purpose: the online rescale, the row of delta in dk).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flash_case.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"

using namespace nnc_gpu_test;
using namespace nnc_gpu_test::flash;

namespace {

std::vector<Case> tiled_cases() {
  std::vector<Case> cs;
  cs.push_back(Case(1, 70, 130, 4, 2, 64, 64));  // 2 row tiles (the last 6 rows), 3 key tiles (the last 2 keys), GQA
  Case a{1, 65, 129, 2, 1, 96, 80};              // causal, Sq < Sk; D 96 in the 128 bucket; mask [Sq, Sk]
  a.causal = true, a.mask = {65, 129};
  cs.push_back(a);
  Case b{1, 100, 67, 1, 1, 128, 128};  // causal, Sq > Sk: rows 0..32 see no key; views
  b.causal = true, b.views = true;
  cs.push_back(b);
  Case c{2, 66, 65, 1, 1, 33, 128};  // 3-d, D 33 (padded to 40 in the products), mask [Sk]
  c.four_d = false, c.mask = {65};
  cs.push_back(c);
  Case d{1, 3, 140, 6, 2, 64, 48};  // a short query over three key tiles, 3 query heads a kv head, mask [B, H, Sq, Sk]
  d.mask = {1, 6, 3, 140};
  cs.push_back(d);
  return cs;
}

TEST(FlashTiled, MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard f32("NNC_GPU_ATTN_F32", nullptr);
  std::mt19937 rng(3301);
  for (const Case& c : tiled_cases()) check_case(c, CCV_32F, true, rng);
  // The backward recomputing o and lse (on the tiled forward).
  check_case(tiled_cases()[1], CCV_32F, false, rng);
}

// 16F and 16BF off the tensor cores (NNC_GPU_ATTN_MMA=0) run on the tiled
// kernels too (typed loads, fp32 sums, one rounding of each output).
TEST(FlashTiled, HalfTypesOffTheTensorCores) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard mma("NNC_GPU_ATTN_MMA", "0");
  std::mt19937 rng(3302);
  const std::vector<Case> cs = tiled_cases();
  check_case(cs[0], CCV_16F, true, rng);
  Case h = cs[1];
  h.half_lse = true;
  check_case(h, CCV_16F, true, rng);
  check_case(cs[2], CCV_16BF, true, rng);
}

// o, lse, dq, dk, dv under NNC_GPU_ATTN_F32=`f32` (NULL: the default).
std::vector<Owned> run_f32(const Case& c, const Inputs& in, const char* f32) {
  EnvGuard mode("NNC_GPU_ATTN_F32", f32);
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  GpuForward f(c, CCV_32F, in);
  std::vector<Owned> out = f.on_cpu();
  for (Owned& g : gpu_backward(c, CCV_32F, in, f.o, f.lse)) out.push_back(std::move(g));
  return out;
}

// The tiled kernels against the old scalar ones on the same inputs (which
// must differ in some bits, else the tiled kernels did not run), a rerun of
// the tiled ones giving the same bits, and the mixed modes =fwd / =bwd.
TEST(FlashTiled, AgreesWithTheOldKernels) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3303);
  const char* names[5] = {"o", "lse", "dq", "dk", "dv"};
  const std::vector<Case> cs = tiled_cases();
  for (const Case& c : {cs[0], cs[2]}) {
    SCOPED_TRACE(c.name(CCV_32F));
    Inputs in(c, CCV_32F, rng);
    std::vector<Owned> tiled = run_f32(c, in, nullptr), old = run_f32(c, in, "old"), again = run_f32(c, in, "tiled");
    bool differ = false;
    for (int i = 0; i < 5; i++) {
      expect_agree(tiled[i].t, old[i].t, 1e-4f, names[i], "on the tiled kernels", "on the old kernels");
      const size_t bytes = ccv_nnc_tensor_count(tiled[i]->info) * sizeof(float);
      differ = differ || std::memcmp(tiled[i]->data.u8, old[i]->data.u8, bytes) != 0;
      EXPECT_EQ(std::memcmp(tiled[i]->data.u8, again[i]->data.u8, bytes), 0) << names[i] << ": reruns differ";
    }
    EXPECT_TRUE(differ) << "the same bits as the old kernels: NNC_GPU_ATTN_F32 chose nothing";
    // =fwd: the tiled forward (its bits) and the old backward; =bwd: the
    // old forward (its bits) and the tiled backward.
    std::vector<Owned> fwd = run_f32(c, in, "fwd"), bwd = run_f32(c, in, "bwd");
    for (int i = 0; i < 2; i++) {
      const size_t bytes = ccv_nnc_tensor_count(tiled[i]->info) * sizeof(float);
      EXPECT_EQ(std::memcmp(fwd[i]->data.u8, tiled[i]->data.u8, bytes), 0)
          << names[i] << ": =fwd not on the tiled forward";
      EXPECT_EQ(std::memcmp(bwd[i]->data.u8, old[i]->data.u8, bytes), 0) << names[i] << ": =bwd not on the old forward";
    }
    for (int i = 2; i < 5; i++) {
      expect_agree(fwd[i].t, old[i].t, 1e-4f, names[i], "with =fwd", "on the old kernels");
      expect_agree(bwd[i].t, tiled[i].t, 1e-4f, names[i], "with =bwd", "on the tiled kernels");
    }
  }
}

// NNC_GPU_ATTN_F32_ASYNC=1 (the forward's k / v tiles and, at heads up to
// 64, dk / dv's q / dO tiles double-buffered by cp.async) computes the same
// products in the same order as =0 (plain loads): the same bits, o, lse,
// dq, dk, dv, on every case (causal keys ending mid-tile, one key tile,
// several; query heads sharing a kv head: the pairs of one dk / dv block run
// over two heads); the default (async at heads up to 64) as well; and the
// backward without saved outputs still matches CPU_REF.
TEST(FlashTiled, AsyncCopiesGiveTheSameBits) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3305);
  const char* names[5] = {"o", "lse", "dq", "dk", "dv"};
  for (const Case& c : tiled_cases()) {
    SCOPED_TRACE(c.name(CCV_32F));
    Inputs in(c, CCV_32F, rng);
    std::vector<Owned> plain, async, dflt;
    {
      EnvGuard as("NNC_GPU_ATTN_F32_ASYNC", "0");
      plain = run_f32(c, in, nullptr);
    }
    {
      EnvGuard as("NNC_GPU_ATTN_F32_ASYNC", "1");
      async = run_f32(c, in, nullptr);
    }
    {
      EnvGuard as("NNC_GPU_ATTN_F32_ASYNC", nullptr);
      dflt = run_f32(c, in, nullptr);
    }
    for (int i = 0; i < 5; i++) {
      const size_t bytes = ccv_nnc_tensor_count(plain[i]->info) * sizeof(float);
      EXPECT_EQ(std::memcmp(plain[i]->data.u8, async[i]->data.u8, bytes), 0) << names[i] << ": =1 differs from =0";
      EXPECT_EQ(std::memcmp(plain[i]->data.u8, dflt[i]->data.u8, bytes), 0) << names[i] << ": the default differs";
    }
  }
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard as("NNC_GPU_ATTN_F32_ASYNC", "1");
  const std::vector<Case> cs = tiled_cases();
  check_case(cs[0], CCV_32F, false, rng);
  check_case(cs[2], CCV_32F, false, rng);
}

// Heads above 128 stay on the old scalar kernels (still right).
TEST(FlashTiled, WideHeadsKeepTheOldKernels) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  std::mt19937 rng(3304);
  Case w{1, 9, 70, 2, 1, 160, 8};
  w.causal = true;
  check_case(w, CCV_32F, true, rng);
}

}  // namespace
