// The fused (flash) GPU_REF SCALED_DOT_PRODUCT_ATTENTION kernels
// (cuda/flash_kernels.cu) against CPU_REF on random inputs with fixed seeds,
// with NNC_GPU_ATTN_FLASH=1 so that a call the flash kernels decline fails
// instead of quietly running the row kernels (that this mode errors out is
// itself tested below, so a passing run proves the flash kernels ran):
// forward o and lse, backward dq, dk, dv (from each side's own saved o and
// lse, and without them: recomputed), on lengths that are not multiples of
// the tiles (1, 19, 37, 40, 53, 130, 300), heads D / Dv of 1 .. 128, causal
// (Sq < Sk, Sq > Sk with rows that see no key, square), masks of several
// broadcast shapes with -inf entries, fewer kv heads, 3-d operands, views
// (whole parents compared: nothing outside a view is written), 32F and 16F
// (lse 32F and 16F); the flash kernels against the row kernels
// (NNC_GPU_ATTN_FLASH=0, which must still match CPU_REF) on the same inputs;
// the fallback for what the flash kernels decline (head sizes above 256, the
// fused projection) and its message under NNC_GPU_ATTN_FLASH=1; bit-identical
// reruns. Skips without a GPU.
//
// Tolerances. CPU_REF computes in double and rounds once. The flash kernels
// sum in fp32 (FMA): a score is a dot of D <= 128 terms of magnitude <= 1
// (error ~ D 2^-24 relative to sum |terms|, ~1e-5), the online softmax
// rescales the running sums once per key tile (a relative ~1e-7 each), o is a
// convex mix of v (|o| <= 1). So fp32 forward: 1e-4 + 1e-4 |cpu|. The
// gradients are sums over up to Sq * H / Hk (or Sk) terms of products of
// values below ~1, partly cancelling, with delta = dO . O taken from the
// forward's fp32 o: 5e-4 + 5e-4 |cpu|. A wrong index (a head group, a tile
// edge, the causal bound by one, a mask stride) moves values by 1e-2 or more.
// fp16: both sides read the same fp16 inputs and round their results to fp16
// once (2^-11 relative, one ulp apart at worst: 2^-10 |cpu|); in the backward
// the GPU's delta uses the fp16-rounded o (CPU_REF: its exact row sums; the
// difference, ~2^-11 |dO| |o| sqrt(Dv), passes into ds scaled by p), and lse
// when saved as fp16 is one of two roundings (up to 2^-8 absolute for lse
// in [4, 8), i.e. p off by 0.4%): so 4e-3 + 4e-3 |cpu| forward and
// 1e-2 + 1e-2 |cpu| backward (gradients up to a few units). The 16F backward
// runs on the tensor-core kernels (flash_mma_bwd_test.cpp), which round p and
// ds to fp16 before their products: at most 2^-11 of each term more, i.e.
// 2^-11 of the sum of |terms| (a few units here: ~1e-3, random in sign).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flash_case.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"

using namespace nnc_gpu_test;
using namespace nnc_gpu_test::flash;

namespace {

TEST(FlashGpu, MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  std::mt19937 rng(3001);
  for (int dt : {CCV_32F, CCV_16F})
    for (const Case& c : cases()) check_case(c, dt, true, rng);
}

TEST(FlashGpu, BackwardWithoutSavedOutputs) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  std::mt19937 rng(3002);
  const std::vector<Case> cs = cases();
  for (const Case& c : {cs[0], cs[3]}) check_case(c, CCV_32F, false, rng);
}

// A longer causal sequence: many key tiles per row tile and many query tiles
// per key tile; one kv head for 3 query heads.
TEST(FlashGpu, LongerCausalSequence) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  std::mt19937 rng(3003);
  Case c{1, 300, 300, 3, 1, 16, 8};
  c.causal = true;
  check_case(c, CCV_32F, true, rng);
}

// Each of dq, dk, dv alone (the others stay as they were, equal on both sides).
TEST(FlashGpu, EachGradientAlone) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  std::mt19937 rng(3004);
  const Case c = cases()[3];
  for (int which = 0; which < 3; which++) {
    SCOPED_TRACE(which);
    Inputs in(c, CCV_32F, rng);
    BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_32F}, rng), lse = both({c.lse_shape(), false, CCV_32F}, rng);
    run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get(), in.mask.get()}, {o.get(), lse.get()}, "forward");
    BothPtr dq = both({c.shape(c.Sq, c.H, c.D), false, CCV_32F}, rng),
            dk = both({c.shape(c.Sk, c.Hk, c.D), false, CCV_32F}, rng),
            dv = both({c.shape(c.Sk, c.Hk, c.Dv), false, CCV_32F}, rng);
    run_both(c.cmd(BWD),
             {in.g.get(), nullptr, nullptr, in.q.get(), in.k.get(), in.v.get(), in.mask.get(), nullptr, nullptr,
              o.get(), lse.get()},
             {which == 0 ? dq.get() : nullptr, which == 1 ? dk.get() : nullptr, which == 2 ? dv.get() : nullptr},
             "backward");
    dq->expect_close(5e-4f, 5e-4f, "dq");
    dk->expect_close(5e-4f, 5e-4f, "dk");
    dv->expect_close(5e-4f, 5e-4f, "dv");
  }
}

// GPU results of one call under NNC_GPU_ATTN_FLASH=`mode`.
std::vector<Owned> gpu_run(const Case& c, int dt, const Inputs& in, const char* mode) {
  EnvGuard flash("NNC_GPU_ATTN_FLASH", mode);
  std::vector<Owned> out;
  out.emplace_back(param_of(c.shape(c.Sq, c.H, c.Dv), dt, CCV_TENSOR_FORMAT_NHWC, true));
  out.emplace_back(param_of(c.lse_shape(), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true));
  out.emplace_back(param_of(c.shape(c.Sq, c.H, c.D), dt, CCV_TENSOR_FORMAT_NHWC, true));
  out.emplace_back(param_of(c.shape(c.Sk, c.Hk, c.D), dt, CCV_TENSOR_FORMAT_NHWC, true));
  out.emplace_back(param_of(c.shape(c.Sk, c.Hk, c.Dv), dt, CCV_TENSOR_FORMAT_NHWC, true));
  ccv_nnc_cmd_t f = c.cmd(FWD), b = c.cmd(BWD);
  f.backend = b.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {in.q->gpu(), in.k->gpu(), in.v->gpu(), in.mask ? in.mask->gpu() : nullptr},
                 {out[0].t, out[1].t}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(exec(b, ccv_nnc_no_hint,
                 {in.g->gpu(), nullptr, nullptr, in.q->gpu(), in.k->gpu(), in.v->gpu(),
                  in.mask ? in.mask->gpu() : nullptr, nullptr, nullptr, out[0].t, out[1].t},
                 {out[2].t, out[3].t, out[4].t}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  std::vector<Owned> back;
  for (const Owned& t : out) back.push_back(to_cpu(t.t));
  return back;
}

// The flash kernels' results against the row kernels' (flash_case.hpp's expect_agree).
void expect_agree(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b, float tol, const char* what) {
  nnc_gpu_test::flash::expect_agree(a, b, tol, what, "on the flash kernels", "on the rows");
}

// The flash kernels and the row kernels agree on the same inputs (fp32: only
// the order of the fp32 sums differs), and the row kernels, now the
// fallback, still match CPU_REF (also one unit per chunk). Two flash runs give the same bits.
TEST(FlashGpu, AgreesWithTheRowKernels) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3005);
  const char* names[5] = {"o", "lse", "dq", "dk", "dv"};
  const std::vector<Case> cs = cases();
  // (The row kernels run a block per query row: the emulation is slow on the
  // longer cases, so these four.)
  for (const Case& c : {cs[0], cs[1], cs[3], cs[4]}) {
    SCOPED_TRACE(c.name(CCV_32F));
    Inputs in(c, CCV_32F, rng);
    std::vector<Owned> flash = gpu_run(c, CCV_32F, in, "1"), rows = gpu_run(c, CCV_32F, in, "0"),
                       again = gpu_run(c, CCV_32F, in, "1");
    for (int i = 0; i < 5; i++) {
      expect_agree(flash[i].t, rows[i].t, 1e-4f, names[i]);
      const size_t bytes = ccv_nnc_tensor_count(flash[i]->info) * sizeof(float);
      EXPECT_EQ(std::memcmp(flash[i]->data.u8, again[i]->data.u8, bytes), 0) << names[i] << ": reruns differ";
    }
  }
  EnvGuard off("NNC_GPU_ATTN_FLASH", "0");
  check_case(cs[1], CCV_32F, true, rng);
  // The row kernels' chunks (which the AttnGpu tests now only reach through
  // the fused cases): one (batch, kv head) unit per chunk.
  EnvGuard chunk("NNC_GPU_ATTN_CHUNK_BYTES", "1");
  check_case(cs[3], CCV_32F, true, rng);  // 3 units
}

// What the flash kernels decline runs on the row kernels by default; with
// NNC_GPU_ATTN_FLASH=1 it fails with a message saying why (so the tests
// above, which run with =1, ran the flash kernels).
TEST(FlashGpu, DeclinedCallsFallBackOrFailWhenForced) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3006);
  Case wide{1, 5, 6, 1, 1, 300, 4};  // D above 256
  {
    EnvGuard flash("NNC_GPU_ATTN_FLASH", nullptr);
    check_case(wide, CCV_32F, true, rng);
  }
  {
    EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
    Inputs in(wide, CCV_32F, rng);
    Owned o(param_of(wide.shape(wide.Sq, wide.H, wide.Dv), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true));
    ccv_nnc_cmd_t f = wide.cmd(FWD);
    f.backend = CCV_NNC_BACKEND_GPU_REF;
    EXPECT_NE(exec(f, ccv_nnc_no_hint, {in.q->gpu(), in.k->gpu(), in.v->gpu()}, {o.t}), CCV_NNC_EXEC_SUCCESS);
    const std::string msg = ccv_nnc_error_message();
    EXPECT_NE(msg.find("NNC_GPU_ATTN_FLASH=1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("256"), std::string::npos) << msg;
    // The fused unify-head projection: declined too.
    Case fc{1, 5, 6, 2, 2, 8, 4};
    Inputs fi(fc, CCV_32F, rng);
    BothPtr w = both({{3, fc.H * fc.Dv}, false, CCV_32F}, rng);
    Owned y(param_of({fc.B, fc.Sq, 3}, CCV_32F, CCV_TENSOR_FORMAT_NHWC, true));
    Owned lse(param_of(fc.lse_shape(), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true));
    Owned qkv(param_of(fc.shape(fc.Sq, fc.H, fc.Dv), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true));
    ccv_nnc_cmd_t ff = fc.cmd(FWD);
    ff.backend = CCV_NNC_BACKEND_GPU_REF;
    EXPECT_NE(
        exec(ff, ccv_nnc_no_hint, {fi.q->gpu(), fi.k->gpu(), fi.v->gpu(), nullptr, w->gpu()}, {y.t, lse.t, qkv.t}),
        CCV_NNC_EXEC_SUCCESS);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("fused"), std::string::npos) << ccv_nnc_error_message();
  }
}

// Longer rows (Sk 257: five key tiles of 64, the last one key long) with the
// row kernels' scratch limit at one byte: the flash kernels (forced) take no
// O(Sq Sk) scratch and do not read the limit; the result matches CPU_REF.
TEST(FlashGpu, LongRowsIgnoreTheRowKernelsScratchLimit) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard chunk("NNC_GPU_ATTN_CHUNK_BYTES", "1");
  std::mt19937 rng(3007);
  Case c{1, 130, 257, 1, 1, 8, 8};
  c.mask = {130, 257};
  check_case(c, CCV_32F, true, rng);
}

// ---- the tensor-core forward (flash_mma_kernels.cu) ----
// It takes the 16F / 16BF forward calls with heads up to 128 unless
// NNC_GPU_ATTN_MMA=0. Besides the fp32 sums it rounds p to the input type
// before the p v product (fp16: 2^-11 relative, so o moves by at most
// 2^-11 |o| <= 5e-4): within fwd_tol of CPU_REF, and of the scalar flash
// kernels (fp32 p), which round o once as it does.

std::vector<Case> mma_cases() {
  std::vector<Case> cs;
  cs.push_back(Case(2, 70, 130, 4, 2, 40, 24));  // two row tiles, three key tiles, GQA; D padded to the 64 bucket
  Case b{1, 130, 75, 2, 1, 100, 72};            // bucket 128; causal with Sq > Sk (rows without keys); a mask
  b.causal = true, b.mask = {1, 2, 130, 75};
  cs.push_back(b);
  Case c{1, 19, 200, 3, 3, 8, 16};  // bucket 32; causal with Sq < Sk; views
  c.causal = true, c.views = true;
  cs.push_back(c);
  Case d{2, 64, 64, 1, 1, 128, 128};  // whole tiles, the largest head, 3-d, mask [Sk]
  d.four_d = false, d.mask = {64};
  cs.push_back(d);
  Case e{2, 1, 70, 8, 2, 64, 64};  // decoding: one query row, 4 query heads per kv head share a block
  e.mask = {2, 8, 1, 70};
  cs.push_back(e);
  Case f{1, 21, 30, 12, 3, 32, 16};  // 84 (row, head) pairs a kv head: two blocks, causal, rows split between them
  f.causal = true;
  cs.push_back(f);
  return cs;
}

// o (as fp32) and lse of the GPU forward under NNC_GPU_ATTN_MMA=`mma` and
// NNC_GPU_ATTN_SPLITS=`splits` (NULL: chosen by the call's size).
std::vector<Owned> gpu_forward(const Case& c, int dt, const Inputs& in, const char* mma,
                               const char* splits = nullptr) {
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard tc("NNC_GPU_ATTN_MMA", mma);
  EnvGuard split("NNC_GPU_ATTN_SPLITS", splits);
  return GpuForward(c, dt, in).on_cpu();
}

// Against CPU_REF (forward, and the backward from the saved o and lse), then
// against the scalar flash kernels on the same inputs (which must differ in
// some bits: else the tensor-core kernel did not run), and a rerun giving
// the same bits.
TEST(FlashMma, ForwardMatchesCpuRefAndTheScalarKernels) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  std::mt19937 rng(3101);
  for (int dt : {CCV_16F})
    for (const Case& c : mma_cases()) {
      check_case(c, dt, true, rng);
      SCOPED_TRACE(c.name(dt) + " (tensor cores against the scalar kernels)");
      Inputs in(c, dt, rng);
      std::vector<Owned> tc = gpu_forward(c, dt, in, nullptr), scalar = gpu_forward(c, dt, in, "0"),
                         again = gpu_forward(c, dt, in, nullptr);
      expect_agree(tc[0].t, scalar[0].t, fwd_tol(dt), "o");
      expect_agree(tc[1].t, scalar[1].t, 1e-4f, "lse");
      const size_t bytes = ccv_nnc_tensor_count(tc[0]->info) * sizeof(float);
      EXPECT_NE(std::memcmp(tc[0]->data.u8, scalar[0]->data.u8, bytes), 0) << "o: the same bits as the scalar kernels";
      for (int i = 0; i < 2; i++)
        EXPECT_EQ(std::memcmp(tc[i]->data.u8, again[i]->data.u8, ccv_nnc_tensor_count(tc[i]->info) * sizeof(float)), 0)
            << "reruns differ";
      // The keys unsplit and split in 2 and 5 runs (combined afterwards;
      // runs past a row's keys, and under the causal mask runs without a
      // visible key, count for nothing): the same up to fp32 rounding and
      // the output's.
      std::vector<Owned> whole = gpu_forward(c, dt, in, nullptr, "1");
      for (const char* n : {"2", "5"}) {
        SCOPED_TRACE(std::string("splits ") + n);
        std::vector<Owned> split = gpu_forward(c, dt, in, nullptr, n);
        expect_agree(split[0].t, whole[0].t, fwd_tol(dt), "o");
        expect_agree(split[1].t, whole[1].t, 1e-5f, "lse");
      }
    }
}

}  // namespace
