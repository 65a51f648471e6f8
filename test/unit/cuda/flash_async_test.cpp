// The tensor-core flash forward's (and backward's) cp.async / ldmatrix path
// (cuda/flash_mma_kernels.cu, kAsync: k and v double-buffered by cp.async,
// fragments by ldmatrix; taken where k and v copy in 16-byte runs:
// gpu::flash_tile16_runs) against CPU_REF, and against the plain loads
// (NNC_GPU_ATTN_ASYNC=0) on the same inputs, on cases that take the path:
// head sizes that are multiples of 8 in each bucket (32, 64, 128, with the
// head padded: Dv 120 of 128, D 24 of 32), keys over 3 to 5 tiles of 64 with
// a partial last tile (the zero rows), GQA (several query heads per block),
// causal with Sq < Sk, a mask, decoding (Sq 1), and the keys split over
// blocks (NNC_GPU_ATTN_SPLITS 3: an item's first tile is not tile 0, some
// runs have one tile or none), in 16F and 16BF. A tile read before it landed
// (a missing wait or barrier: under the CPU emulation, stale or NaN bytes),
// a buffer overwritten while read, or a misplaced fragment moves o by far
// more than the tolerances. Tolerances: against CPU_REF fwd_tol
// (flash_case.hpp); against the plain loads the products and sums run in the
// same order on the same values (the emulation gives the same bits), so only
// the compiler's contraction of the softmax arithmetic could differ on a
// GPU: fp32 differences ~1e-7 relative, which after o's rounding to 16 bits
// flip at most one unit (2^-8 relative in bf16): 5e-3 (1 + |o|) for o, 1e-5
// for the fp32 lse. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
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

std::vector<Case> async_cases() {
  std::vector<Case> cs;
  cs.push_back(Case(1, 70, 200, 4, 2, 64, 64));  // bucket 64, GQA: 3 items a kv head, 4 key tiles (last: 8 keys)
  Case b{1, 33, 150, 2, 1, 128, 120};            // bucket 128, Dv padded; causal Sq < Sk; 3 key tiles
  b.causal = true;
  cs.push_back(b);
  Case c{2, 1, 300, 8, 2, 32, 40};  // decoding: bucket 64, 5 key tiles, 4 query heads per kv head
  c.mask = {2, 8, 1, 300};
  cs.push_back(c);
  Case d{1, 50, 130, 2, 2, 24, 16};  // bucket 32, D padded; mask [Sq, Sk]; 3 key tiles
  d.mask = {50, 130};
  cs.push_back(d);
  return cs;
}

// o (as fp32) and lse of the GPU forward with NNC_GPU_ATTN_ASYNC=`async`
// and NNC_GPU_ATTN_SPLITS=`splits` (NULL: unset).
std::vector<Owned> forward(const Case& c, int dt, const Inputs& in, const char* async, const char* splits) {
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard tc("NNC_GPU_ATTN_MMA", nullptr);
  EnvGuard as("NNC_GPU_ATTN_ASYNC", async);
  EnvGuard split("NNC_GPU_ATTN_SPLITS", splits);
  return GpuForward(c, dt, in).on_cpu();
}

void expect_near(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b, float tol, const char* what) {
  nnc_gpu_test::flash::expect_agree(a, b, tol, what, "with cp.async", "with plain loads");
}

TEST(FlashMmaAsync, MatchesCpuRefAndThePlainLoads) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard as("NNC_GPU_ATTN_ASYNC", nullptr);
  std::mt19937 rng(4242);
  for (const Case& c : async_cases()) {
    check_case(c, CCV_16F, true, rng);  // forward (cp.async) and backward against CPU_REF
    for (int dt : {CCV_16F, CCV_16BF})
      for (const char* splits : {"1", "3"}) {
        SCOPED_TRACE(c.name(dt) + " splits " + splits);
        Inputs in(c, dt, rng);
        std::vector<Owned> fast = forward(c, dt, in, nullptr, splits), plain = forward(c, dt, in, "0", splits);
        expect_near(fast[0].t, plain[0].t, 5e-3f, "o");
        expect_near(fast[1].t, plain[1].t, 1e-5f, "lse");
      }
  }
}

// dq, dk, dv (as fp32) of the GPU forward then backward (from that o and
// lse) with NNC_GPU_ATTN_ASYNC=`async`.
std::vector<Owned> gradients(const Case& c, int dt, const Inputs& in, const char* async) {
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard tc("NNC_GPU_ATTN_MMA", nullptr);
  EnvGuard as("NNC_GPU_ATTN_ASYNC", async);
  const GpuForward f(c, dt, in);
  return gpu_backward(c, dt, in, f.o, f.lse);
}

// The backward's cp.async path (dq: k and v double-buffered over the key
// tiles; dk / dv: q and dO over the (query head, query tile) steps, across
// heads of a group) against its plain loads, forward included, on the same
// inputs (CPU_REF: check_case above, 16F). The same products in the same
// order (the same bits under emulation); on a GPU a contraction difference
// in the fp32 softmax / ds arithmetic may flip a gradient's last unit after
// the rounding to 16 bits: 5e-3 (1 + |x|) for 16F (one unit: 2^-10
// relative), 2e-2 (1 + |x|) for 16BF (2^-7); a stale or misplaced tile moves
// whole terms, 1e-1 or more.
TEST(FlashMmaAsync, BackwardMatchesThePlainLoads) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(5151);
  const char* names[3] = {"dq", "dk", "dv"};
  const std::vector<Case> cs = async_cases();
  for (size_t k = 0; k < cs.size(); k++)
    for (int dt : {CCV_16F, CCV_16BF}) {
      if (dt == CCV_16BF && k != 0) continue;  // (emulation time: one 16BF case)
      const Case& c = cs[k];
      SCOPED_TRACE(c.name(dt));
      Inputs in(c, dt, rng);
      std::vector<Owned> fast = gradients(c, dt, in, nullptr), plain = gradients(c, dt, in, "0");
      for (int i = 0; i < 3; i++) expect_near(fast[i].t, plain[i].t, dt == CCV_16F ? 5e-3f : 2e-2f, names[i]);
    }
}

// The switch: "0" keeps the plain loads, anything else (or unset) allows
// cp.async; an operand that cannot be copied in 16-byte runs keeps them too
// (tested on the CPU: GpuFlashMma.*). Here: a bf16 call whose heads are not
// multiples of 8 (plain loads) against CPU_REF with the switch unset.
TEST(FlashMmaAsync, OperandsWithoutRunsKeepThePlainLoads) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard as("NNC_GPU_ATTN_ASYNC", nullptr);
  std::mt19937 rng(77);
  Case c{1, 20, 140, 2, 1, 36, 20};  // D 36: runs of 8 do not divide the head
  check_case(c, CCV_16BF, true, rng);
}

}  // namespace
