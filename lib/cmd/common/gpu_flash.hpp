// The fused ("flash") GPU SCALED_DOT_PRODUCT_ATTENTION kernels
// (cuda/flash_kernels.cu): their tile geometry, shared-memory layout,
// eligibility and the online-softmax steps, as host + device inline functions
// (nvcc compiles this header into the kernels as it is) and a host side
// (gpu_flash.cpp). test/unit/gpu_flash replays the tiled algorithm with these
// functions on the CPU against CPU_REF and checks the geometry, so the
// kernels' values and index maps are decided by code tested without a GPU.
//
// FlashAttention-2 in plain scalar CUDA, fp32 accumulation, no O(Sq Sk)
// scratch (cuda/attn_gpu.cpp keeps the row kernels of gpu_attn.hpp as the
// fallback for what this path declines):
//   forward, one block per (b, h, tile of `rows` query rows), the rows'
//     q in shared memory; for each tile of kv_tile keys (k and v in shared
//     memory): the scores (visible keys only: causal bottom-right, the
//     additive mask), per row the new running max m' = max(m, tile max),
//     alpha = flash_alpha(m, m'), p = flash_prob(score, m'), l = l alpha +
//     sum p, acc = acc alpha + p v. At the end o = acc / l (0 for a row
//     without keys) and lse = attn_lse(m, l) in the plan's lse layout.
//   backward: delta_i = dO_i . O_i (one warp per row, float scratch
//     [B, H, Sq]); then one block per (b, kv head, kFlashKeys keys) for dk
//     and dv, looping over the group's query heads and the query tiles
//     (q_tile rows) that can see its keys: p = attn_prob(score, lse_i),
//     dp = dO_i . v_j, ds = flash_ds(p, dp, delta_i, scale); dv_j += p dO_i,
//     dk_j += ds q_i; and one block per (b, h, `rows` query rows) for dq,
//     looping over key tiles: dq_i += ds k_j. Each output element is summed
//     by one thread in a fixed order: no atomics, deterministic.
// Threads: kFlashThreads per block in kFlashGroups groups of kFlashTpr lanes
// (of one warp). Group x serves the query rows x + u kFlashGroups, u <
// flash_rpt(nc) (forward, dq), or key x (dk / dv); lane t of the group its pairs
// with the tile's keys (or query rows) t + k kFlashTpr (a thread's dots
// computed together: each shared-memory k / v element read once for its
// rows, each q element once for its keys) and the output columns
// d = t + c kFlashTpr, c < nc (accumulators in registers).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cmd/common/gpu_attn.hpp"

namespace nnc::gpu {

constexpr int kFlashThreads = 128;
constexpr int kFlashTpr = 8;                             // threads per row (or per key in dk / dv)
constexpr int kFlashGroups = kFlashThreads / kFlashTpr;  // row groups of a block: 16
constexpr int kFlashKeys = kFlashGroups;                 // keys per block (dk / dv): 16
constexpr int kFlashMaxHead = 256;                       // D and Dv up to this
constexpr int64_t kFlashShmemLimit = int64_t{48} << 10;  // the default dynamic shared memory of a launch
constexpr int kFlashMaxGrid = 1 << 20;                   // blocks per launch (grid-stride loops beyond)

// Columns per thread (the register accumulators' compile-time size): 4, 8,
// 16 or 32 (the kernel instantiations), for head sizes up to 32 .. 256.
NNC_HD int flash_cols_bucket(int D, int Dv) {
  const int m = D > Dv ? D : Dv;
  const int c = (m + kFlashTpr - 1) / kFlashTpr;
  return c <= 4 ? 4 : c <= 8 ? 8 : c <= 16 ? 16 : 32;
}
// Query rows per group in the forward and dq kernels for a column bucket:
// 2 for heads up to 64 (each k / v element read from shared memory once for
// two rows), 1 above (the rows' tiles would not leave room for key tiles).
NNC_HD constexpr int flash_rpt(int nc) { return nc <= 8 ? 2 : 1; }

// A shared-memory row stride of n floats: odd, so that the rows read by
// consecutive threads fall in different banks.
NNC_HD int flash_odd(int n) { return n | 1; }

// The kernels' shared-memory layouts (offsets in floats from the start of the
// dynamic shared memory) and tile sizes; flash_geometry picks them.
struct FlashGeom {
  int D = 0, Dv = 0, nc = 4;
  int rows = kFlashGroups;  // query rows per block of the forward and dq: kFlashGroups * flash_rpt(nc)
  int ks = 0, vs = 0;       // row strides of q / k tiles (flash_odd(D)) and v / dO tiles (flash_odd(Dv))
  // Forward: [rows][ks] q, [kv_tile][ks] k, [kv_tile][vs] v, [rows][ps] p.
  int fwd_tile = 0, fwd_ps = 0;
  int fwd_q = 0, fwd_k = 0, fwd_v = 0, fwd_p = 0, fwd_floats = 0;
  // dq: [rows] q, dO, lse, delta; [dq_tile] k, v; [rows][ps] ds.
  int dq_tile = 0, dq_ps = 0;
  int dq_q = 0, dq_do = 0, dq_l = 0, dq_dl = 0, dq_k = 0, dq_v = 0, dq_s = 0, dq_floats = 0;
  // dk / dv: [kFlashKeys] k, v; [kv_q_tile] q, dO, lse, delta; [kv_q_tile][ps] p and ds.
  int kv_q_tile = 0, kv_ps = 0;
  int kv_k = 0, kv_v = 0, kv_q = 0, kv_do = 0, kv_l = 0, kv_dl = 0, kv_p = 0, kv_s = 0, kv_floats = 0;
};

// The padded stride of a [rows][tile] score / probability tile: tile + 8
// (rows r and r + 1 of a warp's four row groups land 8 banks apart).
NNC_HD int flash_ps(int tile) { return tile + 8; }

NNC_HD int flash_fwd_floats(int D, int Dv, int tile, int rows) {
  return rows * flash_odd(D) + tile * flash_odd(D) + tile * flash_odd(Dv) + rows * flash_ps(tile);
}
NNC_HD int flash_dq_floats(int D, int Dv, int tile, int rows) {
  return rows * (flash_odd(D) + flash_odd(Dv) + 2) + tile * (flash_odd(D) + flash_odd(Dv)) + rows * flash_ps(tile);
}
NNC_HD int flash_kv_floats(int D, int Dv, int qtile) {
  return kFlashKeys * (flash_odd(D) + flash_odd(Dv)) + qtile * (flash_odd(D) + flash_odd(Dv) + 2) +
         2 * qtile * flash_ps(kFlashKeys);
}

// The largest tile of {64, 32, 16, 8, 4} whose layout fits `limit` bytes;
// 0 when none does.
template <class F>
inline int flash_pick_tile(const F& floats, int64_t limit) {
  for (int t = 64; t >= 4; t /= 2)
    if (static_cast<int64_t>(floats(t)) * 4 <= limit) return t;
  return 0;
}

// The geometry for head sizes D, Dv (1 .. kFlashMaxHead) within `limit`
// bytes of shared memory per block; false when some kernel does not fit.
// (Host only: the kernels get the result by value.)
inline bool flash_geometry(int D, int Dv, int64_t limit, FlashGeom* g) {
  if (D < 1 || Dv < 1 || D > kFlashMaxHead || Dv > kFlashMaxHead) return false;
  FlashGeom x;
  x.D = D, x.Dv = Dv, x.nc = flash_cols_bucket(D, Dv);
  x.rows = kFlashGroups * flash_rpt(x.nc);
  x.ks = flash_odd(D), x.vs = flash_odd(Dv);
  x.fwd_tile = flash_pick_tile([&](int t) { return flash_fwd_floats(D, Dv, t, x.rows); }, limit);
  x.dq_tile = flash_pick_tile([&](int t) { return flash_dq_floats(D, Dv, t, x.rows); }, limit);
  x.kv_q_tile = flash_pick_tile([&](int t) { return flash_kv_floats(D, Dv, t); }, limit);
  if (!x.fwd_tile || !x.dq_tile || !x.kv_q_tile) return false;
  x.fwd_ps = flash_ps(x.fwd_tile);
  x.fwd_q = 0;
  x.fwd_k = x.fwd_q + x.rows * x.ks;
  x.fwd_v = x.fwd_k + x.fwd_tile * x.ks;
  x.fwd_p = x.fwd_v + x.fwd_tile * x.vs;
  x.fwd_floats = x.fwd_p + x.rows * x.fwd_ps;
  x.dq_ps = flash_ps(x.dq_tile);
  x.dq_q = 0;
  x.dq_do = x.dq_q + x.rows * x.ks;
  x.dq_l = x.dq_do + x.rows * x.vs;
  x.dq_dl = x.dq_l + x.rows;
  x.dq_k = x.dq_dl + x.rows;
  x.dq_v = x.dq_k + x.dq_tile * x.ks;
  x.dq_s = x.dq_v + x.dq_tile * x.vs;
  x.dq_floats = x.dq_s + x.rows * x.dq_ps;
  x.kv_ps = flash_ps(kFlashKeys);
  x.kv_k = 0;
  x.kv_v = x.kv_k + kFlashKeys * x.ks;
  x.kv_q = x.kv_v + kFlashKeys * x.vs;
  x.kv_do = x.kv_q + x.kv_q_tile * x.ks;
  x.kv_l = x.kv_do + x.kv_q_tile * x.vs;
  x.kv_dl = x.kv_l + x.kv_q_tile;
  x.kv_p = x.kv_dl + x.kv_q_tile;
  x.kv_s = x.kv_p + x.kv_q_tile * x.kv_ps;
  x.kv_floats = x.kv_s + x.kv_q_tile * x.kv_ps;
  *g = x;
  return true;
}

// Work items. Forward and dq: (b, h, query tile) with B * H * ceil(Sq /
// rows) items (rows: FlashGeom::rows); the query tiles of a (b, h) are taken last first, so
// that under a causal mask the longest rows start first. dk / dv: (b, kv
// head, key tile) with B * Hk * ceil(Sk / kFlashKeys) items.
NNC_HD int64_t flash_row_tiles(const AttnShape& s, int rows) {
  return static_cast<int64_t>(s.B) * s.H * ((s.Sq + rows - 1) / rows);
}
NNC_HD void flash_row_tile(const AttnShape& s, int rows, int64_t w, int* b, int* h, int* i0) {
  const int64_t nt = (s.Sq + rows - 1) / rows;
  const int64_t bh = w / nt;
  *i0 = static_cast<int>(nt - 1 - w % nt) * rows;
  *b = static_cast<int>(bh / s.H);
  *h = static_cast<int>(bh % s.H);
}
// (`keys`: the key tile; the tensor-core backward's is larger.)
NNC_HD int64_t flash_key_tiles(const AttnShape& s, int keys = kFlashKeys) {
  return static_cast<int64_t>(s.B) * s.Hk * ((s.Sk + keys - 1) / keys);
}
NNC_HD void flash_key_tile(const AttnShape& s, int64_t w, int* b, int* hk, int* j0, int keys = kFlashKeys) {
  const int64_t nt = (s.Sk + keys - 1) / keys;
  const int64_t bh = w / nt;
  *j0 = static_cast<int>(w % nt) * keys;
  *b = static_cast<int>(bh / s.Hk);
  *hk = static_cast<int>(bh % s.Hk);
}
NNC_HD int flash_grid(int64_t items) {
  return static_cast<int>(items < 1 ? 1 : items > kFlashMaxGrid ? kFlashMaxGrid : items);
}

// The keys a tile of query rows [i0, i0 + rows) may see: [0, end) with end
// the largest attn_key_end of its rows (rows past Sq do not count).
NNC_HD int flash_tile_key_end(const AttnShape& s, int i0, int rows) {
  int last = i0 + rows - 1;
  if (last > s.Sq - 1) last = s.Sq - 1;
  return last < i0 ? 0 : attn_key_end(s, last);
}
// The query rows that may see a key tile starting at j0: [begin, Sq).
NNC_HD int flash_tile_query_begin(const AttnShape& s, int j0) { return attn_query_begin(s, j0); }

// Whether row i sees key j (both in range).
NNC_HD bool flash_visible(const AttnShape& s, int i, int j) { return i < s.Sq && j < attn_key_end(s, i); }

// The online softmax. The scale of the old accumulator when the running max
// moves from m to m2 >= m (0 when nothing was accumulated; 1 when the max is
// still -inf, where the accumulator is 0 anyway).
NNC_HD float flash_alpha(float m, float m2) {
  if (m == attn_neg_inf()) return 0.f;
  return expf(m - m2);
}
// An unnormalised probability exp(score - m) against the running max m
// (0 for a hidden key: score -inf).
NNC_HD float flash_prob(float score, float m) { return score == attn_neg_inf() ? 0.f : expf(score - m); }
// The factor turning the accumulator into o: 1 / l, 0 for a row without keys.
NNC_HD float flash_out_scale(float l) { return l > 0 ? 1.f / l : 0.f; }
// The score gradient: ds = p (dp - delta) scale.
NNC_HD float flash_ds(float p, float dp, float delta, float scale) { return p * (dp - delta) * scale; }

// The tensor-core forward (cuda/flash_mma_kernels.cu) for 16F / 16BF q, k, v
// with head sizes D, Dv up to kFlashMmaMaxHead: FlashAttention-2 on
// mma.sync.m16n8k16 (cuda/mma.cuh), fp32 accumulation. A block of 4 warps
// serves kFlashMmaRows (query row, query head) pairs of one kv head's group
// (16 a warp: their q fragments stay in registers; flash_mma_item below)
// over key tiles of kFlashMmaKeys; the k and v tiles are 16-bit
// values in shared memory, rows of the head bucket (D and Dv rounded up to
// 32, 64 or 128, zero-filled) plus 8 (paired loads fall in distinct banks).
// The scores' online softmax runs on the accumulators (a lane knows its rows
// and columns), p is rounded to 16 bits for the p v product (as
// FlashAttention does), l sums p unrounded.
constexpr int kFlashMmaThreads = 128;
constexpr int kFlashMmaRows = 64;
constexpr int kFlashMmaKeys = 64;
constexpr int kFlashMmaMaxHead = 128;
constexpr int kFlashMmaWarps = kFlashMmaThreads / 32;
// The head bucket for D, Dv: 32, 64 or 128; 0 above kFlashMmaMaxHead.
NNC_HD int flash_mma_bucket(int D, int Dv) {
  const int m = D > Dv ? D : Dv;
  return m <= 32 ? 32 : m <= 64 ? 64 : m <= kFlashMmaMaxHead ? 128 : 0;
}
// The tensor-core forward's rows: per (b, kv head), the G Sq (query row, query
// head) pairs of the G = H / Hk query heads that share the kv head, query row
// major: pair v is row v / G of head hk G + v % G. A block takes
// kFlashMmaRows consecutive pairs, so the heads of a group share each k / v
// tile (loaded once for all of them), and a short query (decoding: Sq 1)
// still fills the block's rows. Items: B Hk ceil(G Sq / kFlashMmaRows), the
// tiles of a (b, kv head) last first (under a causal mask the longest rows
// start first).
NNC_HD int flash_mma_group(const AttnShape& s) { return s.H / s.Hk; }
// (`rows`: the block's pairs, kFlashMmaRows or kFlashMmaWideRows: see
// flash_mma_fwd_rows.)
NNC_HD int64_t flash_mma_items(const AttnShape& s, int rows = kFlashMmaRows) {
  const int64_t pairs = static_cast<int64_t>(flash_mma_group(s)) * s.Sq;
  return static_cast<int64_t>(s.B) * s.Hk * ((pairs + rows - 1) / rows);
}
NNC_HD void flash_mma_item(const AttnShape& s, int64_t w, int* b, int* hk, int* v0, int rows = kFlashMmaRows) {
  const int64_t pairs = static_cast<int64_t>(flash_mma_group(s)) * s.Sq;
  const int64_t nt = (pairs + rows - 1) / rows;
  const int64_t bh = w / nt;
  *v0 = static_cast<int>(nt - 1 - w % nt) * rows;
  *b = static_cast<int>(bh / s.Hk);
  *hk = static_cast<int>(bh % s.Hk);
}
// Pair v of kv head hk: its query row and head; false past the G Sq pairs.
NNC_HD bool flash_mma_pair(const AttnShape& s, int hk, int v, int* i, int* h) {
  const int G = flash_mma_group(s);
  if (v >= G * s.Sq) return false;
  *i = v / G, *h = hk * G + v % G;
  return true;
}
// The keys the pairs [v0, v0 + rows) may see: [0, end) (0 when none of them
// is a pair: a warp past the last pair in the kernel).
NNC_HD int flash_mma_key_end(const AttnShape& s, int v0, int rows = kFlashMmaRows) {
  const int G = flash_mma_group(s);
  int last = v0 + rows - 1;
  if (last > G * s.Sq - 1) last = G * s.Sq - 1;
  return last < v0 ? 0 : attn_key_end(s, last / G);
}
// The block's pairs: kFlashMmaRows (64: each warp 16, one m16 tile) or
// kFlashMmaWideRows (128: each warp 32, two m16 tiles, FlashAttention-2's
// 128-row blocks of 4 warps: each k / v fragment read from shared memory
// feeds two products and each k / v tile loaded from global memory serves
// twice the rows; q's fragments are then read from shared memory at each
// key step). Per product a warp reads 256 bytes of shared memory with 64
// rows, 160 with 128 at heads up to 64 (the 128 bucket, whose steps are 16
// keys there for the registers: 256 again). The wide blocks need the
// cp.async path (`async`: k and v with flash_tile16_runs, NNC_GPU_ATTN_ASYNC
// not 0) and no mask (its addressing would make them spill).
// NNC_GPU_ATTN_FWD_ROWS ("64" or "128", `env_value`) asks for one (128 only
// where allowed); otherwise 128 at heads up to 64 when a (b, kv head) has
// more than 64 pairs (prefill: 256 blocks instead of 512 at B 8, H 8, S 512,
// one wave of two blocks an SM on 132 SMs), else 64 (decoding, where the
// second m16 tile would be empty; the 128 bucket).
constexpr int kFlashMmaWideRows = 128;
int flash_mma_fwd_rows(const AttnShape& s, bool async, const char* env_value);
int flash_mma_fwd_rows_from_env(const AttnShape& s, bool async);
// Splitting the keys (flash-decoding): with few work items (a short query
// over long keys, few kv heads) each item's key tiles are cut into
// `splits` runs, each a block of its own writing its unnormalised o and its
// running max m and sum l to float scratch; a second kernel combines the
// runs of a row (o = sum_s o_s e^(m_s - M) / L, L = sum_s l_s e^(m_s - M),
// M = max_s m_s). The splits for `items` items of up to `tiles` key tiles:
// as many blocks as fit in kFlashMmaSplitBlocks (one wave, not a wave and a
// few: the split count is rounded down, at least 2), at most
// kFlashMmaMaxSplits, at most one split a tile; 1 (no split) when the items
// alone are enough (half of kFlashMmaSplitBlocks or more).
constexpr int kFlashMmaSplitBlocks = 264;  // two blocks per SM of an H100 / H200 (132 SMs)
constexpr int kFlashMmaMaxSplits = 32;
NNC_HD int flash_mma_splits(int64_t items, int tiles) {
  if (items <= 0 || tiles <= 1 || 2 * items > kFlashMmaSplitBlocks) return 1;
  int64_t s = kFlashMmaSplitBlocks / items;
  if (s > kFlashMmaMaxSplits) s = kFlashMmaMaxSplits;
  if (s > tiles) s = tiles;
  return static_cast<int>(s);
}
// Split sp's keys of an item whose keys end at kend: [*j0, *j1) in whole
// tiles (empty for a split past the item's tiles).
NNC_HD void flash_mma_split_keys(int kend, int splits, int sp, int* j0, int* j1) {
  const int tiles = (kend + kFlashMmaKeys - 1) / kFlashMmaKeys;
  const int per = (tiles + splits - 1) / splits;
  int a = sp * per * kFlashMmaKeys, e = (sp + 1) * per * kFlashMmaKeys;
  if (a > kend) a = kend;
  if (e > kend) e = kend;
  *j0 = a, *j1 = e;
}
// The scratch a split call needs (floats): for each of the B H Sq rows and
// each split, Dv of o, m and l.
NNC_HD int64_t flash_mma_split_floats(const AttnShape& s, int splits) {
  return splits <= 1 ? 0 : static_cast<int64_t>(s.B) * s.H * s.Sq * splits * (s.Dv + 2);
}
// The row index (b, h, i) of the scratch: ((b H + h) Sq + i).
NNC_HD int64_t flash_mma_row(const AttnShape& s, int b, int h, int i) {
  return (static_cast<int64_t>(b) * s.H + h) * s.Sq + i;
}

// The row stride (16-bit elements) of a shared k / v (and staged q) tile.
NNC_HD int flash_mma_stride(int bucket) { return bucket + 8; }
// Whether the forward keeps the warp's q fragments in registers for the
// whole item (KD 4 registers a lane, up to 32): with one m16 tile a warp;
// with two (128 rows) o and the scores take the registers, q stays in shared
// memory and its fragments are read by ldmatrix at each key tile.
NNC_HD constexpr bool flash_mma_q_in_regs(int /*bucket*/, int rows) { return rows == kFlashMmaRows; }
// The forward's keys a step (k and v tiles): kFlashMmaKeys, but 16 for 128
// rows at the 128 bucket (two m16 tiles of o, 128 floats a lane, leave room
// for 16 keys' scores only), and 32 for 64 rows at the 128 bucket when
// asked (`narrow`: NNC_GPU_ATTN_FWD_KEYS=32, flash_mma_fwd_narrow: half the
// scores' registers, so the kernel fits 168 registers, three blocks an SM
// instead of two, at twice the steps). The split runs (whole kFlashMmaKeys
// tiles) are whole steps either way.
NNC_HD constexpr int flash_mma_fwd_keys(int bucket, int rows, bool narrow = false) {
  return bucket <= 64 ? kFlashMmaKeys
         : rows == kFlashMmaWideRows ? kFlashMmaKeys / 4
         : narrow ? kFlashMmaKeys / 2
                  : kFlashMmaKeys;
}
// NNC_GPU_ATTN_FWD_KEYS ("32", `env_value`): the 32-key steps above, taken
// only by 64-row blocks at the 128 bucket.
bool flash_mma_fwd_narrow(int bucket, int rows, const char* env_value);
bool flash_mma_fwd_narrow_from_env(int bucket, int rows);
// Dynamic shared memory of a block: the k and v tiles (q is staged in k's).
NNC_HD int64_t flash_mma_shmem_bytes(int bucket) {
  return int64_t{2} * kFlashMmaKeys * flash_mma_stride(bucket) * 2;
}

}  // namespace nnc::gpu

// ---- host side (gpu_flash.cpp) ----
#include <string>

namespace nnc::gpu {

// NNC_GPU_ATTN_FLASH: unset or anything else -> kAuto (the flash kernels
// when flash_plan takes the call, else the row kernels); "0" -> kOff (always
// the row kernels); "1" -> kForce (the flash kernels or an error saying why not).
enum class FlashMode { kAuto, kOff, kForce };
FlashMode flash_mode(const char* env_value);
FlashMode flash_mode_from_env();

// NNC_GPU_ATTN_MMA: "0" keeps 16F / 16BF flash calls on the scalar kernels;
// unset or anything else lets the tensor-core (mma.sync) flash kernels take
// the calls they accept.
bool flash_mma_allowed(const char* env_value);
bool flash_mma_allowed_from_env();

// The key splits of a tensor-core forward (flash_mma_splits for the call's
// items of `rows` pairs and key tiles), or NNC_GPU_ATTN_SPLITS when set (1 ..
// kFlashMmaMaxSplits; tests use it to split short sequences).
int flash_mma_splits_for(const AttnShape& s, const char* env_value, int rows = kFlashMmaRows);
int flash_mma_splits_from_env(const AttnShape& s, int rows = kFlashMmaRows);

// Whether the tensor-core forward takes a call flash_plan took, with its
// head bucket; false with the reason otherwise (not 16F / 16BF, a head
// above kFlashMmaMaxHead, NNC_GPU_ATTN_MMA=0 as `allowed` false).
bool flash_mma_forward_plan(const AttnPlan& a, bool allowed, int* bucket, std::string* why);

// Whether the flash kernels take a planned call (gpu_attn.hpp's attn_plan),
// with their geometry; false with the reason otherwise: the fused unify-head
// projection, head sizes outside 1 .. kFlashMaxHead, or a layout that does
// not fit `shmem_limit` bytes.
bool flash_plan(const AttnPlan& a, int64_t shmem_limit, FlashGeom* g, std::string* why);

}  // namespace nnc::gpu
