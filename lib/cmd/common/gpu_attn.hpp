// The index maps and row math of the GPU SCALED_DOT_PRODUCT_ATTENTION
// kernels (cuda/attn_kernels.cu) as host + device inline functions: nvcc
// compiles this header into the kernels as it is, and test/unit/gpu_attn runs
// the same functions over host buffers against CPU_REF (forward, backward,
// the fused projection), so every value a kernel computes is decided by code
// tested without a GPU. Only the reductions across a block's threads and the
// launch geometry live in the .cu file.
//
// The GPU algorithm, per chunk of (batch, kv head) units (scratch: float
// [rows][Sk] per chunk; see attn_row_of):
//   forward, one block per query row (b, h, i): the scores of keys
//     j < attn_key_end(i) (one warp per key: attn_dot_part over the lanes,
//     then attn_score_finish; attn_score_part is the same per thread), the row max m, the sum l of
//     exp(s - m) (attn_exp_part), lse = attn_lse(m, l), the probabilities
//     p = exp(s - lse) (attn_prob_part), then o[d] = sum_j p_j v[j, d]
//     (attn_out) per column d.
//   backward, one block per query row: p_j = exp(s_j - lse) with the saved
//     lse (or a recomputed one), dp_j = dO_i . v_j (one warp per key as
//     above, then attn_bwd_prob_part; attn_bwd_part is the same per thread), the row's
//     delta = sum_j p_j dp_j (= dO_i . O_i, so O is not read), ds_j =
//     p_j (dp_j - delta) scale (attn_ds_part); then one thread per element:
//     dq = sum_j ds_ij k_j (attn_dq), dk_j = sum over the group's heads and
//     rows of ds_ij q_i (attn_dk), dv_j = sum p_ij dO_i (attn_dv).
//   fused unify-head projection (y = O w^T + bias, O as [B * Sq, H * Dv]
//     float rows): attn_proj; backward dO = g w (attn_proj_dx), dw = g^T O
//     (attn_proj_dw), dbias = column sums of g (attn_proj_dbias).
// All accumulation is in float.
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp). Loaders:
// any callable ld(const void* base, int64_t element) -> float.
#pragma once

#include <cmath>
#include <cstdint>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

// Element strides of a [B, S, H, D]-shaped operand (a 3-d one has sh = 0).
struct AttnView {
  int64_t sb = 0, ss = 0, sh = 0, sd = 0;
};
NNC_HD int64_t attn_off(const AttnView& v, int b, int s, int h, int d) {
  return b * v.sb + s * v.ss + h * v.sh + d * v.sd;
}

// A packed [B, S, H, D] buffer's strides, and a packed [B, H, S] lse's
// ((b, h, i) at sb, sh, ss).
NNC_HD AttnView attn_packed(int S, int H, int D) {
  AttnView v;
  v.sd = 1, v.sh = D, v.ss = static_cast<int64_t>(H) * D, v.sb = static_cast<int64_t>(S) * H * D;
  return v;
}
NNC_HD AttnView attn_packed_lse(int S, int H) {
  AttnView v;
  v.ss = 1, v.sh = S, v.sb = static_cast<int64_t>(H) * S, v.sd = 0;
  return v;
}

// One attention call. mask: (b, h, i, j) at mask.sb, .sh, .ss, .sd (0 along
// broadcast axes). lse: (b, h, i) at lse.sb, .sh, .ss.
struct AttnShape {
  int B = 0, Sq = 0, Sk = 0, H = 1, Hk = 1, D = 0, Dv = 0;
  float scale = 1;
  int causal = 0, has_mask = 0;
  AttnView q, k, v, mask, lse;
};

// The kv head query head h reads (Hk divides H).
NNC_HD int attn_kv_head(const AttnShape& s, int h) { return h / (s.H / s.Hk); }

// Query row i sees keys [0, attn_key_end(s, i)): all of them, or causally
// those with j <= i + Sk - Sq (bottom-right aligned); may be 0.
NNC_HD int attn_key_end(const AttnShape& s, int i) {
  if (!s.causal) return s.Sk;
  const int64_t e = static_cast<int64_t>(i) + s.Sk - s.Sq + 1;
  return e < 0 ? 0 : e > s.Sk ? s.Sk : static_cast<int>(e);
}
// Key j is seen by query rows [attn_query_begin(s, j), Sq).
NNC_HD int attn_query_begin(const AttnShape& s, int j) {
  if (!s.causal) return 0;
  const int64_t b = static_cast<int64_t>(j) - (s.Sk - s.Sq);
  return b < 0 ? 0 : b > s.Sq ? s.Sq : static_cast<int>(b);
}

NNC_HD int64_t attn_mask_off(const AttnShape& s, int b, int h, int i, int j) {
  return b * s.mask.sb + h * s.mask.sh + i * s.mask.ss + j * s.mask.sd;
}
NNC_HD int64_t attn_lse_off(const AttnShape& s, int b, int h, int i) {
  return b * s.lse.sb + h * s.lse.sh + i * s.lse.ss;
}

NNC_HD float attn_neg_inf() { return -INFINITY; }

// The scaled, masked score of (query row qrow: D floats of q[b, i, h, :],
// key j); the caller only asks for visible keys.
template <class L>
NNC_HD float attn_score(const AttnShape& s, const float* qrow, const L& ld, const void* k, const void* mask, int b,
                        int h, int i, int j) {
  const int hk = attn_kv_head(s, h);
  const int64_t k0 = attn_off(s.k, b, j, hk, 0);
  float acc = 0;
  for (int d = 0; d < s.D; d++) acc += qrow[d] * ld(k, k0 + d * s.k.sd);
  acc *= s.scale;
  if (s.has_mask) acc += ld(mask, attn_mask_off(s, b, h, i, j));
  return acc;
}

// The same score split for one warp per key: lane `lane` of `lanes` sums
// the products d = lane, lane + lanes, ... of a row (n floats) and the
// operand at base + off0 + d * sd; the lanes' sum, scaled and masked by
// attn_score_finish, is attn_score (and, for dO and v, the backward's dp).
template <class L>
NNC_HD float attn_dot_part(const float* row, const L& ld, const void* base, int64_t off0, int64_t sd, int n, int lane,
                           int lanes) {
  float acc = 0;
  for (int d = lane; d < n; d += lanes) acc += row[d] * ld(base, off0 + d * sd);
  return acc;
}
NNC_HD int64_t attn_key_off(const AttnShape& s, int b, int h, int j) {
  return attn_off(s.k, b, j, attn_kv_head(s, h), 0);
}
NNC_HD int64_t attn_value_off(const AttnShape& s, int b, int h, int j) {
  return attn_off(s.v, b, j, attn_kv_head(s, h), 0);
}
template <class L>
NNC_HD float attn_score_finish(const AttnShape& s, float dot, const L& ld, const void* mask, int b, int h, int i,
                               int j) {
  float v = dot * s.scale;
  if (s.has_mask) v += ld(mask, attn_mask_off(s, b, h, i, j));
  return v;
}

// Scores of keys j = j0, j0 + step, ... below attn_key_end(i) into srow[j];
// returns their max (-inf for none).
template <class L>
NNC_HD float attn_score_part(const AttnShape& s, const float* qrow, const L& ld, const void* k, const void* mask, int b,
                             int h, int i, int j0, int step, float* srow) {
  const int end = attn_key_end(s, i);
  float m = attn_neg_inf();
  for (int j = j0; j < end; j += step) {
    const float v = attn_score(s, qrow, ld, k, mask, b, h, i, j);
    srow[j] = v;
    m = fmaxf(m, v);
  }
  return m;
}

// sum of exp(srow[j] - m) over the part's visible keys (m = the row max;
// -inf scores, from a -inf mask, give 0).
NNC_HD float attn_exp_part(const AttnShape& s, const float* srow, float m, int i, int j0, int step) {
  const int end = attn_key_end(s, i);
  float l = 0;
  if (m == attn_neg_inf()) return 0;
  for (int j = j0; j < end; j += step) l += expf(srow[j] - m);
  return l;
}

// The log-sum-exp from the row max and the sum of exp(s - max): -inf when the
// row sees no key (or every score is -inf).
NNC_HD float attn_lse(float m, float l) { return (m == attn_neg_inf() || !(l > 0)) ? attn_neg_inf() : m + logf(l); }

// One probability: 0 for a hidden key or a row without keys.
NNC_HD float attn_prob(float score, float lse) {
  return (lse == attn_neg_inf() || score == attn_neg_inf()) ? 0.f : expf(score - lse);
}

// srow[j] (scores) -> probabilities for the part's keys; the hidden keys
// (j >= key_end) get 0 so that later loops may run over all Sk.
NNC_HD void attn_prob_part(const AttnShape& s, float* srow, float lse, int i, int j0, int step) {
  const int end = attn_key_end(s, i);
  for (int j = j0; j < s.Sk; j += step) srow[j] = j < end ? attn_prob(srow[j], lse) : 0.f;
}

// Backward, after the scores (prow) and dp = dO_i . v_j (dprow) of the
// visible keys are in place: for the part's keys prow[j] <- p_ij (0 for
// hidden keys and rows without keys), dprow[j] <- dp (0 where hidden);
// returns the part's sum of p dp (the row's delta once summed).
NNC_HD float attn_bwd_prob_part(const AttnShape& s, float* prow, float* dprow, float lse, int i, int j0, int step) {
  const int end = attn_key_end(s, i);
  float delta = 0;
  for (int j = j0; j < s.Sk; j += step) {
    if (j >= end) {
      prow[j] = dprow[j] = 0;
      continue;
    }
    const float p = attn_prob(prow[j], lse);
    prow[j] = p;
    delta += p * dprow[j];
  }
  return delta;
}

// o[b, i, h, d] from the row's probabilities prow: the sum of the parts
// j = j0, j0 + step, ... (attn_out: all keys at once).
template <class L>
NNC_HD float attn_out_part(const AttnShape& s, const float* prow, const L& ld, const void* v, int b, int h, int i,
                           int d, int j0, int step) {
  const int hk = attn_kv_head(s, h), end = attn_key_end(s, i);
  float acc = 0;
  for (int j = j0; j < end; j += step) acc += prow[j] * ld(v, attn_off(s.v, b, j, hk, d));
  return acc;
}
template <class L>
NNC_HD float attn_out(const AttnShape& s, const float* prow, const L& ld, const void* v, int b, int h, int i, int d) {
  return attn_out_part(s, prow, ld, v, b, h, i, d, 0, 1);
}
// How many key parts the o columns of a row split into so that `threads`
// threads all work (each part: Dv threads, one per column); 1 when Dv is
// more than half the threads.
NNC_HD int attn_out_parts(int Dv, int threads) { return Dv * 2 <= threads ? threads / Dv : 1; }

// Backward: for the part's keys, prow[j] = p_ij from the scores already in
// prow (attn_score_part) and the row's lse, and dprow[j] = dO_i . v_j
// (dOrow: Dv floats); returns the part's sum of p_ij dp_ij (the row's delta
// once summed over the parts). Hidden keys get p = dp = 0.
template <class L>
NNC_HD float attn_bwd_part(const AttnShape& s, const float* dOrow, const L& ld, const void* v, int b, int h, int i,
                           float lse, int j0, int step, float* prow, float* dprow) {
  const int hk = attn_kv_head(s, h), end = attn_key_end(s, i);
  float delta = 0;
  for (int j = j0; j < s.Sk; j += step) {
    if (j >= end) {
      prow[j] = dprow[j] = 0;
      continue;
    }
    const float p = attn_prob(prow[j], lse);
    float dp = 0;
    if (p != 0.f) {
      const int64_t v0 = attn_off(s.v, b, j, hk, 0);
      for (int d = 0; d < s.Dv; d++) dp += dOrow[d] * ld(v, v0 + d * s.v.sd);
    }
    prow[j] = p, dprow[j] = dp;
    delta += p * dp;
  }
  return delta;
}

// dprow[j] <- ds_ij = p_ij (dp_ij - delta) scale for the part's keys.
NNC_HD void attn_ds_part(const AttnShape& s, const float* prow, float* dprow, float delta, int j0, int step) {
  for (int j = j0; j < s.Sk; j += step) dprow[j] = prow[j] * (dprow[j] - delta) * s.scale;
}

// Chunks. The rows are processed in chunks of units u = b * Hk + hk (a batch
// and a kv head with its G = H / Hk query heads: G * Sq rows), units
// [u0, u1) at a time, so that a chunk's scratch (Sk floats per row) stays
// bounded whatever B and H are and every dk / dv sum lies in one chunk. Row r
// of a chunk is (b, h, i) with i fastest; its scratch row is
// attn_scratch_row (r itself), b * H + h counting the (b, h) pairs.
NNC_HD void attn_row_of(const AttnShape& s, int64_t u0, int64_t r, int* b, int* h, int* i) {
  const int G = s.H / s.Hk;
  *i = static_cast<int>(r % s.Sq);
  const int64_t bh = u0 * G + r / s.Sq;  // b * H + h
  *b = static_cast<int>(bh / s.H);
  *h = static_cast<int>(bh % s.H);
}
NNC_HD int64_t attn_scratch_row(const AttnShape& s, int64_t u0, int b, int h, int i) {
  return (static_cast<int64_t>(b) * s.H + h - u0 * (s.H / s.Hk)) * s.Sq + i;
}
NNC_HD int64_t attn_chunk_rows(const AttnShape& s, int64_t u0, int64_t u1) { return (u1 - u0) * (s.H / s.Hk) * s.Sq; }
// The gradients' elements of a chunk, d fastest: dq (b, i, h, d) for the
// chunk's query heads, as (unit, h within the group, i, d), count
// attn_chunk_rows * D; dk / dv (b, j, hk, d) as (unit, j, d), count
// (u1 - u0) * Sk * width.
NNC_HD void attn_dq_index(const AttnShape& s, int64_t u0, int64_t e, int* b, int* i, int* h, int* d) {
  *d = static_cast<int>(e % s.D);
  attn_row_of(s, u0, e / s.D, b, h, i);
}
NNC_HD void attn_dkv_index(const AttnShape& s, int64_t u0, int64_t e, int width, int* b, int* j, int* hk, int* d) {
  *d = static_cast<int>(e % width);
  const int64_t x = e / width;
  *j = static_cast<int>(x % s.Sk);
  const int64_t u = u0 + x / s.Sk;
  *b = static_cast<int>(u / s.Hk);
  *hk = static_cast<int>(u % s.Hk);
}

// Per-element gradients. ds and p: the chunk's float scratch (rows as
// above, Sk floats each) of the chunk starting at unit u0; dO: float [B][Sq][H][Dv] packed.
template <class L>
NNC_HD float attn_dq(const AttnShape& s, const float* ds, int64_t u0, const L& ld, const void* k, int b, int i, int h,
                     int d) {
  const int hk = attn_kv_head(s, h), end = attn_key_end(s, i);
  const float* row = ds + attn_scratch_row(s, u0, b, h, i) * s.Sk;
  float acc = 0;
  for (int j = 0; j < end; j++) acc += row[j] * ld(k, attn_off(s.k, b, j, hk, d));
  return acc;
}
template <class L>
NNC_HD float attn_dk(const AttnShape& s, const float* ds, int64_t u0, const L& ld, const void* q, int b, int j, int hk,
                     int d) {
  const int G = s.H / s.Hk, i0 = attn_query_begin(s, j);
  float acc = 0;
  for (int h = hk * G; h < (hk + 1) * G; h++) {
    const float* col = ds + attn_scratch_row(s, u0, b, h, 0) * s.Sk + j;
    for (int i = i0; i < s.Sq; i++) acc += col[static_cast<int64_t>(i) * s.Sk] * ld(q, attn_off(s.q, b, i, h, d));
  }
  return acc;
}
NNC_HD float attn_dv(const AttnShape& s, const float* p, int64_t u0, const float* dO, int b, int j, int hk, int d) {
  const int G = s.H / s.Hk, i0 = attn_query_begin(s, j);
  float acc = 0;
  for (int h = hk * G; h < (hk + 1) * G; h++) {
    const float* col = p + attn_scratch_row(s, u0, b, h, 0) * s.Sk + j;
    for (int i = i0; i < s.Sq; i++)
      acc += col[static_cast<int64_t>(i) * s.Sk] * dO[((static_cast<int64_t>(b) * s.Sq + i) * s.H + h) * s.Dv + d];
  }
  return acc;
}

// The fused projection. O: float [R][C] packed (R = B * Sq rows, C = H * Dv);
// w: (n, c) at n * w_rs + c * w_cs; g, y: (r, n) at (r / Sq) * sb + (r % Sq) * ss + n * sn.
struct AttnProj {
  int R = 0, C = 0, N = 0, Sq = 1;
  int64_t w_rs = 0, w_cs = 0;
  int64_t y_sb = 0, y_ss = 0, y_sn = 0;  // y (forward) or g (backward)
  int64_t bias_stride = 1;
};
NNC_HD int64_t attn_proj_off(const AttnProj& p, int64_t r, int n) {
  return (r / p.Sq) * p.y_sb + (r % p.Sq) * p.y_ss + n * p.y_sn;
}
template <class L>
NNC_HD float attn_proj(const AttnProj& p, const float* O, const L& ld, const void* w, const void* bias, int64_t r,
                       int n) {
  float acc = bias ? ld(bias, n * p.bias_stride) : 0.f;
  const float* row = O + r * p.C;
  for (int c = 0; c < p.C; c++) acc += row[c] * ld(w, n * p.w_rs + c * p.w_cs);
  return acc;
}
template <class L>
NNC_HD float attn_proj_dx(const AttnProj& p, const L& ld, const void* g, const void* w, int64_t r, int c) {
  float acc = 0;
  for (int n = 0; n < p.N; n++) acc += ld(g, attn_proj_off(p, r, n)) * ld(w, n * p.w_rs + c * p.w_cs);
  return acc;
}
template <class L>
NNC_HD float attn_proj_dw(const AttnProj& p, const L& ld, const void* g, const float* O, int n, int c) {
  float acc = 0;
  for (int64_t r = 0; r < p.R; r++) acc += ld(g, attn_proj_off(p, r, n)) * O[r * p.C + c];
  return acc;
}
template <class L>
NNC_HD float attn_proj_dbias(const AttnProj& p, const L& ld, const void* g, int n) {
  float acc = 0;
  for (int64_t r = 0; r < p.R; r++) acc += ld(g, attn_proj_off(p, r, n));
  return acc;
}

}  // namespace nnc::gpu

// ---- host side (gpu_attn.cpp): one call's plan from the family's checked problem ----
#include <string>

namespace nnc::attn {
struct Problem;
}

namespace nnc::gpu {

struct AttnPlan {
  AttnShape s;       // s.lse: the saved lse's strides (when lse_type != 0)
  int datatype = 0;  // CCV_32F, CCV_16F or CCV_16BF: q, k, v, mask, w, bias, o, g and the gradients
  int lse_type = 0;  // the lse tensor's type (CCV_32F / CCV_16F / CCV_16BF), 0 when absent
  bool fused = false;
  AttnProj proj;        // fused: y (forward) or g (backward) and w
  AttnView o;           // the attention result's strides (o, or qkv when fused), when given
  AttnView g;           // backward, not fused: g's strides ([B, Sq, H, Dv])
  AttnView dq, dk, dv;  // backward: the gradients' strides (when asked)
  int64_t dw_rs = 0, dw_cs = 0, dbias_stride = 1;
};

// The plan of a checked problem (attn::problem), or false with the reason
// when the GPU kernels do not take it (types other than 32F / 16F / 16BF).
bool attn_plan(const attn::Problem& p, AttnPlan* plan, std::string* why);

// Units (b, hk) per chunk so that `floats_per_unit` float scratch per unit
// stays within `limit_bytes` (at least 1, at most `units`).
int64_t attn_chunk_units(int64_t units, int64_t floats_per_unit, int64_t limit_bytes);

}  // namespace nnc::gpu
