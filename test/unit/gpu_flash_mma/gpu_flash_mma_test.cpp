// gpu_flash_mma.hpp on the CPU (no GPU needed): the tensor-core flash
// backward's shared-memory layouts for every head pair D, Dv in 1 .. 128
// (padded heads, disjoint 4-byte-aligned regions within sm_90's 227 KiB, and
// within the default 48 KiB up to heads of 64), its refusals, the work items
// (each query row and key in exactly one), and the fragment index maps: equal
// to the PTX ISA's documented mma.m16n8k16 layout (written out here from the
// documentation, independently of the header), each matrix element held by
// exactly one (lane, register, half), the accumulator -> A conversion taking
// the same element, a CPU replay of a 16 x 16 x 16 product through the maps,
// and the shared-memory fragment loads of a warp free of bank conflicts for
// every padded stride. The forward's cp.async / ldmatrix path (GpuFlashMma.*):
// the ldmatrix row addresses give exactly the fragments of the maps above
// (ldmatrix's layout written out here from the PTX ISA), without bank
// conflicts; which operands take it, the switch, the shared memory.
#include "cmd/common/gpu_flash_mma.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace g = nnc::gpu;

namespace {

TEST(GpuFlashMmaBwd, GeometryForEveryHeadPair) {
  for (int D = 1; D <= g::kFlashMmaMaxHead; D++)
    for (int Dv = 1; Dv <= g::kFlashMmaMaxHead; Dv++) {
      g::FlashMmaBwdGeom x;
      ASSERT_TRUE(g::flash_mma_bwd_geometry(D, Dv, &x)) << D << " " << Dv;
      ASSERT_EQ(x.Dp % 16, 0);
      ASSERT_TRUE(x.Dp >= D && x.Dp < D + 16);
      ASSERT_EQ(x.Dvp % 16, 0);
      ASSERT_TRUE(x.Dvp >= Dv && x.Dvp < Dv + 16);
      ASSERT_TRUE(x.bucket >= x.Dp && x.bucket >= x.Dvp) << D << " " << Dv;  // the register tiles cover the heads
      ASSERT_TRUE(x.bucket == 32 || x.bucket == 64 || x.bucket == 128);
      ASSERT_EQ(x.ks % 2, 0);  // rows start 4-byte aligned (paired loads)
      ASSERT_EQ(x.vs % 2, 0);
      ASSERT_GE(x.ks, x.Dp);
      ASSERT_GE(x.vs, x.Dvp);
      // dq: q, dO [64 rows], k, v [dq_k_tile rows], in order, disjoint, aligned.
      const int dq[5] = {x.dq_q, x.dq_do, x.dq_k, x.dq_v, x.dq_bytes};
      const int dq_len[4] = {g::kFlashMmaBwdRows * x.ks * 2, g::kFlashMmaBwdRows * x.vs * 2, x.dq_k_tile * x.ks * 2,
                             x.dq_k_tile * x.vs * 2};
      ASSERT_EQ(dq[0], 0);
      for (int r = 0; r < 4; r++) {
        ASSERT_EQ(dq[r] % 16, 0) << r;
        ASSERT_EQ(dq[r + 1], dq[r] + dq_len[r]) << r;
      }
      const int kv[7] = {x.kv_k, x.kv_v, x.kv_q, x.kv_do, x.kv_l, x.kv_dl, x.kv_bytes};
      const int kv_len[6] = {g::kFlashMmaBwdKeys * x.ks * 2,
                             g::kFlashMmaBwdKeys * x.vs * 2,
                             x.kv_q_tile * x.ks * 2,
                             x.kv_q_tile * x.vs * 2,
                             x.kv_q_tile * 4,
                             x.kv_q_tile * 4};
      ASSERT_EQ(kv[0], 0);
      for (int r = 0; r < 6; r++) {
        ASSERT_EQ(kv[r] % 16, 0) << r;
        ASSERT_EQ(kv[r + 1], kv[r] + kv_len[r]) << r;
      }
      // cp.async's second buffers (dq: k, v; dk / dv: q, dO) after the rest, 16-byte aligned.
      const int dq1[3] = {x.dq_k1, x.dq_v1, x.dq_async_bytes};
      const int kv1[3] = {x.kv_q1, x.kv_do1, x.kv_async_bytes};
      ASSERT_EQ(dq1[0], x.dq_bytes);
      ASSERT_EQ(kv1[0], x.kv_bytes);
      for (int r = 0; r < 2; r++) {
        ASSERT_EQ(dq1[r] % 16, 0) << r;
        ASSERT_EQ(kv1[r] % 16, 0) << r;
        ASSERT_EQ(dq1[r + 1], dq1[r] + dq_len[2 + r]) << r;
        ASSERT_EQ(kv1[r + 1], kv1[r] + kv_len[2 + r]) << r;
      }
      // Two blocks an SM (228 KiB, 1 KiB reserved per block) with either.
      ASSERT_LE(2 * (x.dq_async_bytes + 1024), 228 << 10) << D << " " << Dv;
      ASSERT_LE(2 * (x.kv_async_bytes + 1024), 228 << 10) << D << " " << Dv;
      ASSERT_LE(x.dq_bytes, g::kFlashMmaBwdMaxShmem);
      ASSERT_LE(x.kv_bytes, g::kFlashMmaBwdMaxShmem);
      if (x.bucket <= 64) {  // no opt-in needed
        ASSERT_LE(x.dq_bytes, g::kFlashShmemLimit) << D << " " << Dv;
        ASSERT_LE(x.kv_bytes, g::kFlashShmemLimit) << D << " " << Dv;
      }
      // The products' tiles: k steps of 16 along the query / key tiles.
      ASSERT_EQ(x.kv_q_tile % 16, 0);
      ASSERT_EQ(x.dq_k_tile % 16, 0);
    }
  g::FlashMmaBwdGeom x;
  EXPECT_FALSE(g::flash_mma_bwd_geometry(0, 8, &x));
  EXPECT_FALSE(g::flash_mma_bwd_geometry(8, 0, &x));
  EXPECT_FALSE(g::flash_mma_bwd_geometry(129, 8, &x));
  EXPECT_FALSE(g::flash_mma_bwd_geometry(8, 129, &x));
  EXPECT_TRUE(g::flash_mma_bwd_geometry(128, 128, &x));
  EXPECT_EQ(x.dq_bytes, 4 * 64 * 136 * 2);  // 69632: needs the opt-in
  EXPECT_EQ(x.kv_bytes, 2 * 64 * 136 * 2 + 2 * 32 * 136 * 2 + 2 * 32 * 4);
}

TEST(GpuFlashMmaBwd, WorkItemsCoverEachRowAndKeyOnce) {
  for (const auto& dims : std::vector<std::vector<int>>{
           {1, 1, 1, 1, 1}, {2, 70, 130, 4, 2}, {3, 64, 64, 1, 1}, {1, 129, 65, 3, 3}, {2, 1, 200, 2, 1}}) {
    g::AttnShape s;
    s.B = dims[0], s.Sq = dims[1], s.Sk = dims[2], s.H = dims[3], s.Hk = dims[4];
    std::vector<int> rows(static_cast<size_t>(s.B) * s.H * s.Sq, 0), keys(static_cast<size_t>(s.B) * s.Hk * s.Sk, 0);
    for (int64_t w = 0; w < g::flash_mma_bwd_row_tiles(s); w++) {
      int b, h, i0;
      g::flash_mma_bwd_row_tile(s, w, &b, &h, &i0);
      ASSERT_TRUE(b >= 0 && b < s.B && h >= 0 && h < s.H && i0 >= 0 && i0 < s.Sq && i0 % g::kFlashMmaBwdRows == 0);
      for (int i = i0; i < i0 + g::kFlashMmaBwdRows && i < s.Sq; i++)
        rows[(static_cast<size_t>(b) * s.H + h) * s.Sq + i]++;
    }
    for (int64_t w = 0; w < g::flash_mma_bwd_key_tiles(s); w++) {
      int b, hk, j0;
      g::flash_mma_bwd_key_tile(s, w, &b, &hk, &j0);
      ASSERT_TRUE(b >= 0 && b < s.B && hk >= 0 && hk < s.Hk && j0 >= 0 && j0 < s.Sk && j0 % g::kFlashMmaBwdKeys == 0);
      for (int j = j0; j < j0 + g::kFlashMmaBwdKeys && j < s.Sk; j++)
        keys[(static_cast<size_t>(b) * s.Hk + hk) * s.Sk + j]++;
    }
    for (int c : rows) ASSERT_EQ(c, 1);
    for (int c : keys) ASSERT_EQ(c, 1);
  }
}

// The PTX ISA's layout for mma.m16n8k16 with .f16 / .bf16 A, B and .f32 C / D
// ("Matrix Fragments for mma.m16n8k16 with floating point type"), lane =
// 4 groupID + threadID_in_group: A: row = groupID for a0, a1, a4, a5 and
// groupID + 8 for a2, a3, a6, a7; col = 2 threadID + (i & 1) for a0..a3 and
// + 8 for a4..a7 (ai: the i-th 16-bit element, two per register). B: row
// (k) = 2 threadID + (i & 1) for b0, b1 and + 8 for b2, b3; col (n) = groupID.
// C: row = groupID for c0, c1, groupID + 8 for c2, c3; col = 2 threadID + (i & 1).
TEST(GpuFlashMmaBwd, FragmentMapsFollowThePtxLayout) {
  for (int lane = 0; lane < 32; lane++) {
    const int gid = lane >> 2, tid = lane & 3;
    for (int i = 0; i < 8; i++) {  // A's 16-bit elements: register i / 2, half i % 2
      const int r = i / 2, h = i % 2;
      const int row = (i == 2 || i == 3 || i == 6 || i == 7) ? gid + 8 : gid;
      const int col = 2 * tid + (i & 1) + (i >= 4 ? 8 : 0);
      EXPECT_EQ(g::mma16816_a_row(lane, r), row) << lane << " " << i;
      EXPECT_EQ(g::mma16816_a_col(lane, r) + h, col) << lane << " " << i;
    }
    for (int i = 0; i < 4; i++) {
      EXPECT_EQ(g::mma16816_b_k(lane, i / 2) + i % 2, 2 * tid + (i & 1) + (i >= 2 ? 8 : 0));
      EXPECT_EQ(g::mma16816_b_n(lane), gid);
      EXPECT_EQ(g::mma16816_c_row(lane, i), i < 2 ? gid : gid + 8);
      EXPECT_EQ(g::mma16816_c_col(lane, i), 2 * tid + (i & 1));
    }
  }
}

TEST(GpuFlashMmaBwd, EachElementHeldOnceAndAccumulatorsBecomeA) {
  std::set<int> a, b, c;
  for (int lane = 0; lane < 32; lane++) {
    for (int r = 0; r < 4; r++)
      for (int h = 0; h < 2; h++) a.insert(g::mma16816_a_row(lane, r) * 16 + g::mma16816_a_col(lane, r) + h);
    for (int r = 0; r < 2; r++)
      for (int h = 0; h < 2; h++) b.insert((g::mma16816_b_k(lane, r) + h) * 8 + g::mma16816_b_n(lane));
    for (int e = 0; e < 4; e++) c.insert(g::mma16816_c_row(lane, e) * 8 + g::mma16816_c_col(lane, e));
    // A of k-step kk from accumulator tiles 2 kk, 2 kk + 1 (16 x 8 each, side
    // by side = 16 x 16): register r, half h of the lane is the lane's own
    // element c2a_elem(r) + h of tile 2 kk + c2a_tile(r) at the same (row, column).
    for (int r = 0; r < 4; r++)
      for (int h = 0; h < 2; h++) {
        const int tile = g::mma16816_c2a_tile(r), e = g::mma16816_c2a_elem(r) + h;
        ASSERT_TRUE(tile == 0 || tile == 1);
        ASSERT_TRUE(e >= 0 && e < 4);
        EXPECT_EQ(g::mma16816_c_row(lane, e), g::mma16816_a_row(lane, r)) << lane << " " << r;
        EXPECT_EQ(8 * tile + g::mma16816_c_col(lane, e), g::mma16816_a_col(lane, r) + h) << lane << " " << r;
      }
  }
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(b.size(), 128u);
  EXPECT_EQ(c.size(), 128u);
}

// C = A B (16 x 16 by 16 x 16, two n8 tiles) through the maps, as a warp of
// mma.m16n8k16 would compute it: gather A and B from the lanes' fragments,
// each lane's accumulators; then the two accumulator tiles become the A of
// a second product (the kernels' P -> dV step) E = C F.
TEST(GpuFlashMmaBwd, ProductReplayedThroughTheMaps) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> u(-8, 8);
  float A[16][16], B[16][16], F[16][8];
  for (auto& r : A)
    for (float& x : r) x = u(rng) / 8.f;
  for (auto& r : B)
    for (float& x : r) x = u(rng) / 8.f;
  for (auto& r : F)
    for (float& x : r) x = u(rng) / 8.f;
  // Fragments per lane (floats instead of 16-bit pairs).
  auto mma = [](const float (&af)[32][8], const float (&bf)[32][4], float (&cf)[32][4]) {
    float a[16][16], b[16][8];
    for (int lane = 0; lane < 32; lane++) {
      for (int r = 0; r < 4; r++)
        for (int h = 0; h < 2; h++) a[g::mma16816_a_row(lane, r)][g::mma16816_a_col(lane, r) + h] = af[lane][2 * r + h];
      for (int r = 0; r < 2; r++)
        for (int h = 0; h < 2; h++) b[g::mma16816_b_k(lane, r) + h][g::mma16816_b_n(lane)] = bf[lane][2 * r + h];
    }
    for (int lane = 0; lane < 32; lane++)
      for (int e = 0; e < 4; e++) {
        float s = cf[lane][e];
        for (int k = 0; k < 16; k++) s += a[g::mma16816_c_row(lane, e)][k] * b[k][g::mma16816_c_col(lane, e)];
        cf[lane][e] = s;
      }
  };
  float af[32][8], bf[2][32][4], cf[2][32][4] = {}, ff[32][4], ef[32][4] = {}, caf[32][8];
  for (int lane = 0; lane < 32; lane++) {
    for (int r = 0; r < 4; r++)
      for (int h = 0; h < 2; h++) af[lane][2 * r + h] = A[g::mma16816_a_row(lane, r)][g::mma16816_a_col(lane, r) + h];
    for (int nt = 0; nt < 2; nt++)
      for (int r = 0; r < 2; r++)
        for (int h = 0; h < 2; h++)
          bf[nt][lane][2 * r + h] = B[g::mma16816_b_k(lane, r) + h][8 * nt + g::mma16816_b_n(lane)];
    for (int r = 0; r < 2; r++)
      for (int h = 0; h < 2; h++) ff[lane][2 * r + h] = F[g::mma16816_b_k(lane, r) + h][g::mma16816_b_n(lane)];
  }
  for (int nt = 0; nt < 2; nt++) mma(af, bf[nt], cf[nt]);
  for (int lane = 0; lane < 32; lane++)
    for (int r = 0; r < 4; r++)
      for (int h = 0; h < 2; h++) caf[lane][2 * r + h] = cf[g::mma16816_c2a_tile(r)][lane][g::mma16816_c2a_elem(r) + h];
  mma(caf, ff, ef);
  double C[16][16] = {}, E[16][8] = {};
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++)
      for (int k = 0; k < 16; k++) C[i][j] += static_cast<double>(A[i][k]) * B[k][j];
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++)
      for (int k = 0; k < 16; k++) E[i][j] += C[i][k] * F[k][j];
  for (int lane = 0; lane < 32; lane++)
    for (int e = 0; e < 4; e++) {
      const int row = g::mma16816_c_row(lane, e), col = g::mma16816_c_col(lane, e);
      for (int nt = 0; nt < 2; nt++) EXPECT_EQ(cf[nt][lane][e], C[row][8 * nt + col]);  // exact: multiples of 1/64
      EXPECT_EQ(ef[lane][e], E[row][col]);
    }
}

// The kernels' 32-bit fragment loads from a row-major 16-bit tile with row
// stride `stride` halves: A (row, col pair) and the transposed B (n row,
// k pair) touch word row * stride / 2 + col / 2; for each register the 32
// lanes hit 32 different banks for every padded stride of the geometry.
TEST(GpuFlashMmaBwd, FragmentLoadsAreFreeOfBankConflicts) {
  for (int padded = 16; padded <= g::kFlashMmaMaxHead; padded += 16) {
    const int stride = g::flash_mma_bwd_stride(padded);
    for (int r = 0; r < 4; r++) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; lane++)
        banks.insert(((g::mma16816_a_row(lane, r) * stride + g::mma16816_a_col(lane, r)) / 2) % 32);
      EXPECT_EQ(banks.size(), 32u) << "A, stride " << stride << ", register " << r;
    }
    for (int r = 0; r < 2; r++) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; lane++)
        banks.insert(((g::mma16816_b_n(lane) * stride + g::mma16816_b_k(lane, r)) / 2) % 32);
      EXPECT_EQ(banks.size(), 32u) << "B, stride " << stride << ", register " << r;
    }
  }
}

// ldmatrix by the PTX ISA ("ldmatrix"): lane l gives the address of row
// l % 8 of matrix l / 8; register m of lane l holds elements (l / 4, 2 (l % 4))
// and (l / 4, 2 (l % 4) + 1) of matrix m, or with .trans (2 (l % 4), l / 4)
// and (2 (l % 4) + 1, l / 4); low half first. tile: ids, row-major, `stride`;
// addr(l): the (row, column) lane l addresses.
template <class Addr>
std::vector<std::array<uint32_t, 4>> ldmatrix_x4(const std::vector<uint32_t>& tile, int stride, bool trans, Addr addr) {
  std::vector<std::array<uint32_t, 4>> regs(32);
  for (int l = 0; l < 32; l++)
    for (int m = 0; m < 4; m++) {
      auto at = [&](int r, int c) {
        const auto [row, col] = addr(8 * m + r);
        return tile[static_cast<size_t>(row * stride + col + c)];
      };
      const int g = l / 4, t = l % 4;
      regs[static_cast<size_t>(l)][static_cast<size_t>(m)] =
          trans ? (at(2 * t, g) | at(2 * t + 1, g) << 16) : (at(g, 2 * t) | at(g, 2 * t + 1) << 16);
    }
  return regs;
}

TEST(GpuFlashMma, LdmatrixAddressesGiveTheMmaFragments) {
  // A 32 x 40 tile of ids (< 2^16): element (r, c) is r * 40 + c + 1.
  const int stride = 40, rows = 32;
  std::vector<uint32_t> tile(static_cast<size_t>(rows * stride));
  for (size_t i = 0; i < tile.size(); i++) tile[i] = static_cast<uint32_t>(i + 1);
  auto id = [&](int r, int c) { return tile[static_cast<size_t>(r * stride + c)]; };
  for (int r0 : {0, 16})
    for (int c0 : {0, 8, 16}) {
      // A of the 16 x 16 block at (r0, c0): plain x4 at the quad addresses.
      auto a = ldmatrix_x4(tile, stride, false, [&](int l) {
        return std::pair<int, int>{r0 + g::ldsm_quad_row(l), c0 + g::ldsm_quad_col(l)};
      });
      // B(k, n) = m[n0 + n][k0 + k] of k-steps k0 = c0 and c0 + 16 (n0 = r0): plain x4 at the row8 addresses.
      auto bnk = ldmatrix_x4(tile, stride, false, [&](int l) {
        return std::pair<int, int>{r0 + g::ldsm_row8_row(l), c0 + g::ldsm_row8_col(l)};
      });
      // B(k, n) = m[k0 + k][n0 + n] of n-tiles n0 = c0 and c0 + 8 (k0 = r0): .trans x4 at the quad addresses.
      auto bkn = ldmatrix_x4(tile, stride, true, [&](int l) {
        return std::pair<int, int>{r0 + g::ldsm_quad_row(l), c0 + g::ldsm_quad_col(l)};
      });
      for (int lane = 0; lane < 32; lane++) {
        const auto L = static_cast<size_t>(lane);
        for (int r = 0; r < 4; r++) {
          const int row = r0 + g::mma16816_a_row(lane, r), col = c0 + g::mma16816_a_col(lane, r);
          EXPECT_EQ(a[L][static_cast<size_t>(r)], id(row, col) | id(row, col + 1) << 16)
              << "A lane " << lane << " r " << r;
        }
        for (int step = 0; step < 2; step++)
          for (int r = 0; r < 2; r++) {
            const int n = r0 + g::mma16816_b_n(lane), k = c0 + 16 * step + g::mma16816_b_k(lane, r);
            EXPECT_EQ(bnk[L][static_cast<size_t>(2 * step + r)], id(n, k) | id(n, k + 1) << 16)
                << "B nk lane " << lane << " k-step " << step << " r " << r;
          }
        for (int nt = 0; nt < 2; nt++)
          for (int r = 0; r < 2; r++) {
            const int k = r0 + g::mma16816_b_k(lane, r), n = c0 + 8 * nt + g::mma16816_b_n(lane);
            EXPECT_EQ(bkn[L][static_cast<size_t>(2 * nt + r)], id(k, n) | id(k + 1, n) << 16)
                << "B kn lane " << lane << " n-tile " << nt << " r " << r;
          }
      }
    }
}

// ldmatrix reads one 8 x 8 matrix (8 rows of 16 bytes) per phase: the rows
// of the forward's k / v tiles (stride bucket + 8 halves) fall in 32
// different banks for each address map.
TEST(GpuFlashMma, LdmatrixRowsAreFreeOfBankConflicts) {
  for (int bucket : {32, 64, 128}) {
    const int stride = g::flash_mma_stride(bucket);
    for (int map = 0; map < 2; map++)
      for (int m = 0; m < 4; m++) {
        std::set<int> banks;
        for (int l = 8 * m; l < 8 * m + 8; l++) {
          const int row = map ? g::ldsm_row8_row(l) : g::ldsm_quad_row(l);
          const int col = map ? g::ldsm_row8_col(l) : g::ldsm_quad_col(l);
          const int word = (row * stride + col) / 2;  // 4-byte words
          for (int w = 0; w < 4; w++) banks.insert((word + w) % 32);
          EXPECT_EQ((row * stride + col) % 8, 0) << "row address not 16-byte aligned";
        }
        EXPECT_EQ(banks.size(), 32u) << "bucket " << bucket << " map " << map << " matrix " << m;
      }
  }
}

TEST(GpuFlashMma, AsyncPathOperandsSwitchAndSharedMemory) {
  const g::AttnView packed{8 * 64 * 3, 64 * 3, 64, 1};  // [B, S, 3 heads, 64]
  alignas(16) static uint16_t buf[64];
  const int f16 = 1, bf16 = 2;
  EXPECT_TRUE(g::flash_tile16_runs(f16, f16, packed, 64, buf));
  EXPECT_TRUE(g::flash_tile16_runs(f16, f16, packed, 40, buf));       // a view of the first 40 of 64
  EXPECT_FALSE(g::flash_tile16_runs(bf16, f16, packed, 64, buf));     // another type: converted
  EXPECT_FALSE(g::flash_tile16_runs(f16, f16, packed, 36, buf));      // the head not in runs of 8
  EXPECT_FALSE(g::flash_tile16_runs(f16, f16, packed, 64, buf + 4));  // 8-byte aligned only
  g::AttnView v = packed;
  v.sd = 2;
  EXPECT_FALSE(g::flash_tile16_runs(f16, f16, v, 32, buf));  // strided along the head
  for (int64_t g::AttnView::* st : {&g::AttnView::ss, &g::AttnView::sh, &g::AttnView::sb}) {
    v = packed;
    v.*st += 4;
    EXPECT_FALSE(g::flash_tile16_runs(f16, f16, v, 64, buf));  // a row not 16-byte aligned
  }
  EXPECT_TRUE(g::flash_mma_async_allowed(nullptr));
  EXPECT_TRUE(g::flash_mma_async_allowed("1"));
  EXPECT_TRUE(g::flash_mma_async_allowed(""));
  EXPECT_FALSE(g::flash_mma_async_allowed("0"));
  // Two buffers of k and v; above the default 48 KiB only at the 128 bucket
  // (the launch opts in), and two blocks still fit an SM's 228 KiB.
  for (int bucket : {32, 64, 128}) {
    const int64_t bytes = g::flash_mma_async_shmem_bytes(bucket);
    EXPECT_EQ(bytes, 2 * 2 * 2 * g::kFlashMmaKeys * int64_t{bucket + 8});
    EXPECT_EQ(bytes > g::kFlashShmemLimit, bucket == 128);
    EXPECT_LE(2 * (bytes + 1024), int64_t{228} << 10);
    EXPECT_LE(bytes, g::kFlashMmaBwdMaxShmem);
  }
}

}  // namespace
