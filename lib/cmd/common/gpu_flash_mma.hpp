// The tensor-core (mma.sync.m16n8k16) FlashAttention-2 BACKWARD for 16F and
// 16BF (cuda/flash_mma_bwd_kernels.cu): geometry, eligibility, work-item maps
// and the fragment index maps, as host + device inline functions (nvcc
// compiles this header into the kernels as it is; test/unit/gpu_flash_mma
// checks them on the CPU). No CUDA headers, no .cpp.
//
// The algorithm is the scalar flash backward's (gpu_flash.hpp: delta = dO . O
// first, then dk / dv per key tile over the query tiles that see it, then dq
// per query tile over the key tiles: no atomics, deterministic), with every
// tile product on tensor cores (fp16 / bf16 operands, fp32 accumulators):
//   dk / dv: one block of kFlashMmaBwdWarps warps per (b, kv head, kFlashMmaBwdKeys
//     keys), warp w owning keys j0 + 16 w .. + 15. For each query head of the
//     group and each tile of kv_q_tile query rows that can see the keys:
//       S^T  (16 keys x q_tile) = K_w Q^T     (A: the warp's K rows, B(d, i) = Q[i][d])
//       dP^T (16 keys x q_tile) = V_w dO^T
//       P^T = exp(S^T scale (+ mask) - lse_i), dS^T = P^T (dP^T - delta_i) scale
//         (attn_score_finish, attn_prob, flash_ds: CPU_REF's causal and mask rules)
//       dV_w += P^T dO,  dK_w += dS^T Q       (A: P^T / dS^T from the accumulators,
//                                              rounded to 16 bits; B(i, d) = dO[i][d], Q[i][d])
//   dq: one block of kFlashMmaBwdWarps warps per (b, h, kFlashMmaBwdRows query rows),
//     warp w owning rows i0 + 16 w .. + 15, over tiles of dq_k_tile keys:
//       S = Q_w K^T, dP = dO_w V^T, dS as above, dQ_w += dS K.
// The accumulators of a product are per lane (documented fragment layout,
// cuda/mma.cuh): lane 4 g + t holds C[g][2t, 2t+1] and C[g+8][2t, 2t+1] of each
// n8 tile, so the softmax and ds are computed element by element with the
// (row, column) known; two adjacent n8 accumulator tiles are the A fragment
// of the next product (flash_mma_c2a_*).
// Shared memory: tiles as 16-bit values (the bits of the input type) with the
// head zero-padded to Dp = D rounded up to 16 (and Dvp), past the sequence
// ends zero; row strides Dp + 8 halves (16 bytes of padding: the fragment
// loads of a warp, 8 rows x 4 words, fall in 32 different banks); lse and
// delta of a dk / dv query tile as floats. More than 48 KiB (heads above 64)
// needs the launch's cudaFuncAttributeMaxDynamicSharedMemorySize opt-in (up
// to 227 KiB on sm_90).
#pragma once

#include <cstdint>
#include <cstring>

#include "cmd/common/gpu_flash.hpp"

namespace nnc::gpu {

// From gpu_flash.hpp (shared with the tensor-core forward): kFlashMmaMaxHead
// (D and Dv up to 128), flash_mma_bucket (the compile-time bucket of the
// register accumulators, 32, 64 or 128 columns of the padded heads) and
// kFlashShmemLimit (48 KiB: what a launch gets without the opt-in).
constexpr int kFlashMmaBwdWarps = 4;
constexpr int kFlashMmaBwdThreads = kFlashMmaBwdWarps * 32;
constexpr int kFlashMmaBwdKeys = 16 * kFlashMmaBwdWarps;      // keys per dk / dv block
constexpr int kFlashMmaBwdRows = 16 * kFlashMmaBwdWarps;      // query rows per dq block
constexpr int64_t kFlashMmaBwdMaxShmem = int64_t{227} << 10;  // sm_90's per-block limit with the opt-in

// A head size rounded up to the k16 of the product.
NNC_HD int flash_mma_bwd_pad(int n) { return (n + 15) / 16 * 16; }
// Query rows per dk / dv tile for a bucket: 64, or 32 for heads above 64
// (the dK and dV accumulators, 2 x 64 floats a lane, leave room for S^T and
// dP^T of 32 rows only).
NNC_HD constexpr int flash_mma_bwd_kv_q_tile(int bucket) { return bucket > 64 ? 32 : 64; }
// Keys per dq tile.
NNC_HD constexpr int flash_mma_bwd_dq_k_tile(int /*bucket*/) { return 64; }

// The shared-memory layouts (byte offsets from the start of the dynamic
// shared memory) and sizes.
struct FlashMmaBwdGeom {
  int D = 0, Dv = 0, Dp = 0, Dvp = 0, bucket = 32;
  int ks = 0, vs = 0;  // row strides in halves of q / k tiles (Dp + 8) and v / dO tiles (Dvp + 8)
  // dq: [kFlashMmaBwdRows] q, dO; [dq_k_tile] k, v.
  int dq_k_tile = 0;
  int dq_q = 0, dq_do = 0, dq_k = 0, dq_v = 0, dq_bytes = 0;
  // dk / dv: [kFlashMmaBwdKeys] k, v; [kv_q_tile] q, dO (halves), lse, delta (floats).
  int kv_q_tile = 0;
  int kv_k = 0, kv_v = 0, kv_q = 0, kv_do = 0, kv_l = 0, kv_dl = 0, kv_bytes = 0;
  // With cp.async (cuda/flash_mma_bwd_kernels.cu, operands with
  // flash_tile16_runs): a second buffer of the tiles loaded per step, after
  // the rest: dq's k and v, dk / dv's q and dO.
  int dq_k1 = 0, dq_v1 = 0, dq_async_bytes = 0;
  int kv_q1 = 0, kv_do1 = 0, kv_async_bytes = 0;
};

NNC_HD int flash_mma_bwd_stride(int padded) { return padded + 8; }

// The geometry for head sizes D, Dv (1 .. kFlashMmaMaxHead); false outside.
inline bool flash_mma_bwd_geometry(int D, int Dv, FlashMmaBwdGeom* g) {
  if (D < 1 || Dv < 1 || D > kFlashMmaMaxHead || Dv > kFlashMmaMaxHead) return false;
  FlashMmaBwdGeom x;
  x.D = D, x.Dv = Dv, x.Dp = flash_mma_bwd_pad(D), x.Dvp = flash_mma_bwd_pad(Dv), x.bucket = flash_mma_bucket(D, Dv);
  x.ks = flash_mma_bwd_stride(x.Dp), x.vs = flash_mma_bwd_stride(x.Dvp);
  x.dq_k_tile = flash_mma_bwd_dq_k_tile(x.bucket);
  x.dq_q = 0;
  x.dq_do = x.dq_q + kFlashMmaBwdRows * x.ks * 2;
  x.dq_k = x.dq_do + kFlashMmaBwdRows * x.vs * 2;
  x.dq_v = x.dq_k + x.dq_k_tile * x.ks * 2;
  x.dq_bytes = x.dq_v + x.dq_k_tile * x.vs * 2;
  x.kv_q_tile = flash_mma_bwd_kv_q_tile(x.bucket);
  x.kv_k = 0;
  x.kv_v = x.kv_k + kFlashMmaBwdKeys * x.ks * 2;
  x.kv_q = x.kv_v + kFlashMmaBwdKeys * x.vs * 2;
  x.kv_do = x.kv_q + x.kv_q_tile * x.ks * 2;
  x.kv_l = x.kv_do + x.kv_q_tile * x.vs * 2;
  x.kv_dl = x.kv_l + x.kv_q_tile * 4;
  x.kv_bytes = x.kv_dl + x.kv_q_tile * 4;
  x.dq_k1 = x.dq_bytes;
  x.dq_v1 = x.dq_k1 + x.dq_k_tile * x.ks * 2;
  x.dq_async_bytes = x.dq_v1 + x.dq_k_tile * x.vs * 2;
  x.kv_q1 = x.kv_bytes;
  x.kv_do1 = x.kv_q1 + x.kv_q_tile * x.ks * 2;
  x.kv_async_bytes = x.kv_do1 + x.kv_q_tile * x.vs * 2;
  if (x.dq_async_bytes > kFlashMmaBwdMaxShmem || x.kv_async_bytes > kFlashMmaBwdMaxShmem) return false;
  *g = x;
  return true;
}

// Work items. dq: (b, h, query tile of kFlashMmaBwdRows) with the query tiles of
// a (b, h) last first (under a causal mask the longest rows start first);
// dk / dv: (b, kv head, key tile of kFlashMmaBwdKeys).
NNC_HD int64_t flash_mma_bwd_row_tiles(const AttnShape& s) { return flash_row_tiles(s, kFlashMmaBwdRows); }
NNC_HD void flash_mma_bwd_row_tile(const AttnShape& s, int64_t w, int* b, int* h, int* i0) {
  flash_row_tile(s, kFlashMmaBwdRows, w, b, h, i0);
}
NNC_HD int64_t flash_mma_bwd_key_tiles(const AttnShape& s) { return flash_key_tiles(s, kFlashMmaBwdKeys); }
NNC_HD void flash_mma_bwd_key_tile(const AttnShape& s, int64_t w, int* b, int* hk, int* j0) {
  flash_key_tile(s, w, b, hk, j0, kFlashMmaBwdKeys);
}

// The fragment layout of mma.m16n8k16 (cuda/mma.cuh) for lane = 4 g + t.
// A (16 x 16): register r (0..3) holds row mma16816_a_row, columns
// mma16816_a_col and + 1.
NNC_HD int mma16816_a_row(int lane, int r) { return (lane >> 2) + 8 * (r & 1); }
NNC_HD int mma16816_a_col(int lane, int r) { return 2 * (lane & 3) + 8 * (r >> 1); }
// B (16 x 8): register r (0..1) holds rows (k) mma16816_b_k and + 1 of
// column (n) mma16816_b_n.
NNC_HD int mma16816_b_k(int lane, int r) { return 2 * (lane & 3) + 8 * r; }
NNC_HD int mma16816_b_n(int lane) { return lane >> 2; }
// C / D (16 x 8): element e (0..3) is (mma16816_c_row, mma16816_c_col).
NNC_HD int mma16816_c_row(int lane, int e) { return (lane >> 2) + 8 * (e >> 1); }
NNC_HD int mma16816_c_col(int lane, int e) { return 2 * (lane & 3) + (e & 1); }
// Accumulators -> A: the 16 x 16 A of k-step kk is the accumulator n8 tiles
// 2 kk and 2 kk + 1 side by side; register r is the pair of elements
// (mma16816_c2a_elem(r), + 1) of tile 2 kk + mma16816_c2a_tile(r) (same lane).
NNC_HD int mma16816_c2a_tile(int r) { return r >> 1; }
NNC_HD int mma16816_c2a_elem(int r) { return 2 * (r & 1); }

// ---- Latency hiding in the tensor-core forward (cuda/flash_mma_kernels.cu) ----
// Where k and v can be copied in 16-byte runs (flash_tile16_runs for both),
// the forward loads them with cp.async (cuda/async_copy.cuh) into two
// buffers: tile j + 1 is in flight while tile j is computed on; and reads
// its fragments with ldmatrix. Other operands (strided along the head,
// another type, unaligned) keep the plain loads into one buffer, as does
// NNC_GPU_ATTN_ASYNC=0 (flash_mma_async_allowed).

// Whether an attention operand x (GpuType xtype, view xv, head size n) of a
// kernel of 16-bit type `type` is copied in runs of 8 values (16 bytes): of
// that type, contiguous along the head, n and every stride multiples of 8
// values, the base 16-byte aligned (cuda/mma_tile.cuh's load_tile16 then
// copies 16 bytes at a time; the forward's cp.async path needs it).
NNC_HD bool flash_tile16_runs(int xtype, int type, const AttnView& xv, int n, const void* x) {
  return xtype == type && xv.sd == 1 && n % 8 == 0 && xv.ss % 8 == 0 && xv.sh % 8 == 0 && xv.sb % 8 == 0 &&
         (reinterpret_cast<uintptr_t>(x) & 15) == 0;
}
// The forward's dynamic shared memory with double-buffered k and v tiles:
// twice flash_mma_shmem_bytes (69632 bytes at the 128 bucket: above
// kFlashShmemLimit, so its launch opts in).
NNC_HD int64_t flash_mma_async_shmem_bytes(int bucket) { return 2 * flash_mma_shmem_bytes(bucket); }
// NNC_GPU_ATTN_ASYNC: "0" keeps the plain loads (one buffer, 32-bit fragment
// reads: the forward as it was); unset or anything else allows cp.async.
inline bool flash_mma_async_allowed(const char* env_value) { return !(env_value && std::strcmp(env_value, "0") == 0); }
// Whether a tensor-core forward of 16-bit type `type` takes the cp.async
// path: allowed (NNC_GPU_ATTN_ASYNC's value `env_value`), k and v in 16-byte
// runs. The host (which picks the block's rows by it: flash_mma_fwd_rows)
// and the launch ask the same question.
inline bool flash_mma_fwd_async(int type, const AttnShape& s, const void* k, const void* v, const char* env_value) {
  return flash_mma_async_allowed(env_value) && flash_tile16_runs(type, type, s.k, s.D, k) &&
         flash_tile16_runs(type, type, s.v, s.Dv, v);
}
// The forward's dynamic shared memory for a block of `rows` pairs: the plain
// loads one k and one v tile of kFlashMmaKeys (q staged in k's: rows 64
// only); cp.async two of each of flash_mma_fwd_keys rows (q staged in the
// second buffer's, 128 rows spanning its k and v), plus q's own tile when its
// fragments are read at every key step (flash_mma_q_in_regs false: 128 rows;
// 55,296 bytes at the 64 bucket, 69,632 at the 128 bucket with 32-key steps).
// (`narrow`: 32-key steps, flash_mma_fwd_keys; 34,816 bytes at the 128
// bucket, q staged in the second buffer's k and v.)
NNC_HD int64_t flash_mma_fwd_shmem_bytes(int bucket, int rows, bool async, bool narrow = false) {
  if (!async) return flash_mma_shmem_bytes(bucket);
  const int64_t st = flash_mma_stride(bucket);
  const int64_t q = flash_mma_q_in_regs(bucket, rows) ? 0 : int64_t{2} * rows * st;
  return int64_t{2} * 4 * flash_mma_fwd_keys(bucket, rows, narrow) * st + q;
}

// ldmatrix .x4 row addresses (cuda/async_copy.cuh: lane l gives row l % 8 of
// matrix l / 8): the (row, column) lane l addresses, relative to a block's
// corner, in a row-major tile of 16-bit values, for
// - the A fragment of a 16 x 16 block (plain), and the B fragments of two n8
//   tiles side by side (columns n0 and n0 + 8) of a 16 x 16 block B(k, n) =
//   m[k][n] (.trans): the matrices are the quarters top left, bottom left,
//   top right, bottom right;
NNC_HD int ldsm_quad_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
NNC_HD int ldsm_quad_col(int lane) { return 8 * (lane >> 4); }
// - the B fragments of two k-steps (k0 and k0 + 16) of an n8 tile B(k, n) =
//   m[n][k] (plain): the matrices are 8 rows by 8 columns each, side by side.
NNC_HD int ldsm_row8_row(int lane) { return lane & 7; }
NNC_HD int ldsm_row8_col(int lane) { return 8 * (lane >> 3); }

}  // namespace nnc::gpu
