// The tensor-core flash forward's block sizes (cuda/flash_mma_kernels.cu,
// gpu::flash_mma_fwd_rows): blocks of 64 (query row, query head) pairs (a
// warp 16, one m16 tile) and of 128 (a warp 32, two m16 tiles sharing each
// k / v fragment, q's fragments read from shared memory at each key step;
// at the 128 bucket steps of 16 keys), each asked for by
// NNC_GPU_ATTN_FWD_ROWS, against CPU_REF and against each other on the same
// inputs. The cases cross the block and key-step edges: pairs not a
// multiple of 128 (a last block with 44 pairs, warps with no pair, a warp
// half full), keys not a multiple of the step (zero rows of the last k / v
// tile), every head bucket (32, 64, 128; Dv padded), causal with Sq < Sk,
// Sq = Sk and Sq > Sk (rows without keys; warps skipping the tiles none of
// their rows sees), GQA (several query heads a block), the keys split over
// blocks (NNC_GPU_ATTN_SPLITS 3), and the calls that keep 64 rows whatever
// the knob says (a mask; operands without 16-byte runs, on the plain loads).
// Tolerances: against CPU_REF fwd_tol (flash_case.hpp); between the two
// block sizes the same products, the 128 bucket's 16-key steps rescaling o
// more often (fp32 roundings, ~1e-6 relative, then o's rounding to 16 bits:
// at most one unit, 2^-8 relative in bf16): 5e-3 (1 + |o|) for o, 1e-5 for
// the fp32 lse. A misplaced m16 tile, a q fragment of the wrong rows or a
// skipped tile a row sees moves o by far more. Skips without a GPU.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "flash_case.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"

using namespace nnc_gpu_test;
using namespace nnc_gpu_test::flash;

namespace {

std::vector<Case> rows_cases() {
  std::vector<Case> cs;
  cs.push_back(Case(1, 150, 133, 4, 2, 64, 64));  // bucket 64, GQA: 300 pairs a kv head (last block 44), 3 key tiles
  Case b{2, 97, 97, 2, 2, 32, 24};                // bucket 32, causal Sq = Sk: 97 pairs, warp 3 has one
  b.causal = true;
  cs.push_back(b);
  Case c{1, 140, 90, 2, 1, 128, 120};  // bucket 128 (16-key steps at 128 rows), causal Sq > Sk: rows without keys
  c.causal = true;
  cs.push_back(c);
  Case d{1, 70, 200, 2, 2, 64, 56};  // bucket 64, causal Sq < Sk, Dv padded
  d.causal = true;
  cs.push_back(d);
  Case e{1, 80, 75, 2, 2, 64, 64};  // a mask [Sq, Sk]: 64 rows whatever the knob
  e.mask = {80, 75};
  cs.push_back(e);
  Case f{1, 70, 65, 2, 1, 32, 32};  // views (no 16-byte runs): the plain loads, 64 rows
  f.views = true;
  cs.push_back(f);
  Case g{1, 45, 100, 2, 2, 128, 128};  // bucket 128, a mask [B, H, Sq, Sk] (32-key steps with a mask), 4 steps
  g.mask = {1, 2, 45, 100};
  cs.push_back(g);
  Case h{1, 33, 70, 2, 1, 96, 112};  // bucket 128, views: 32-key steps on the plain loads
  h.views = true;
  cs.push_back(h);
  return cs;
}

// The forward's variants: NNC_GPU_ATTN_FWD_ROWS and NNC_GPU_ATTN_FWD_KEYS.
struct Variant {
  const char *rows, *keys;
  std::string name() const {
    return std::string("rows ") + rows + (keys ? std::string(", keys ") + keys : std::string());
  }
};
const Variant kVariants[] = {{"64", nullptr}, {"128", nullptr}, {"64", "32"}};

// o (as fp32) and lse of the GPU forward under variant `v` and
// NNC_GPU_ATTN_SPLITS=`splits` (NULL: unset).
std::vector<Owned> forward(const Case& c, int dt, const Inputs& in, const Variant& v, const char* splits) {
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard tc("NNC_GPU_ATTN_MMA", nullptr);
  EnvGuard as("NNC_GPU_ATTN_ASYNC", nullptr);
  EnvGuard r("NNC_GPU_ATTN_FWD_ROWS", v.rows);
  EnvGuard k("NNC_GPU_ATTN_FWD_KEYS", v.keys);
  EnvGuard split("NNC_GPU_ATTN_SPLITS", splits);
  return GpuForward(c, dt, in).on_cpu();
}

TEST(FlashMmaRows, EveryVariantMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  EnvGuard flash("NNC_GPU_ATTN_FLASH", "1");
  EnvGuard as("NNC_GPU_ATTN_ASYNC", nullptr);
  std::mt19937 rng(5151);
  for (const Variant& v : kVariants) {
    EnvGuard r("NNC_GPU_ATTN_FWD_ROWS", v.rows);
    EnvGuard k("NNC_GPU_ATTN_FWD_KEYS", v.keys);
    for (const Case& c : rows_cases()) {
      if (v.keys && c.D <= 64 && c.Dv <= 64) continue;  // 32-key steps: the 128 bucket only (else the 64-row kernel)
      SCOPED_TRACE(v.name());
      check_case(c, CCV_16F, true, rng);  // forward against CPU_REF (and the backward from its o and lse)
    }
  }
}

TEST(FlashMmaRows, VariantsAgreeSplitOrNot) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(5152);
  const std::vector<Case> cs = rows_cases();
  for (size_t n = 0; n < cs.size(); n++) {
    const Case& c = cs[n];
    const int dt = n % 2 ? CCV_16BF : CCV_16F;
    const bool b128 = c.D > 64 || c.Dv > 64;
    for (const char* splits : {"1", "3"}) {
      if (n == 4 || n == 5 || (n >= 6 && splits[0] == '3')) continue;  // 64 rows, not split: FlashMmaAsync's
      SCOPED_TRACE(c.name(dt) + " splits " + splits);
      Inputs in(c, dt, rng);
      const std::vector<Owned> base = forward(c, dt, in, kVariants[0], splits);
      for (int x = 1; x < 3; x++) {
        if (x == 2 && !b128) continue;
        SCOPED_TRACE(kVariants[x].name());
        const std::vector<Owned> other = forward(c, dt, in, kVariants[x], splits);
        expect_agree(other[0].t, base[0].t, 5e-3f, "o", "with this variant", "with 64 rows");
        expect_agree(other[1].t, base[1].t, 1e-5f, "lse", "with this variant", "with 64 rows");
      }
    }
  }
}

}  // namespace
