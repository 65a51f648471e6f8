// The attention family inside. attention.cpp describes
// SCALED_DOT_PRODUCT_ATTENTION (semantics, shapes, checks) and registers the
// kernels; cpu_ref.cpp holds the loops in double, cpu_opt.cpp the blocked fp32
// path whose per-block code (attention_body.hpp) is compiled for AVX-512 and
// for AVX2 + FMA.
//
//   const Problem p = problem(cmd, inputs, input_size, outputs, output_size, false, "…");
//   // p.q, p.k, p.v: element views [B, S, H, D]; p.o the attention result.
#pragma once

#include <cstdint>

#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::attn {

// An element view of a [B, S, H, D]-shaped operand (3-d tensors: H = 1).
struct View4 {
  unsigned char* data = nullptr;
  int datatype = 0;
  int64_t sb = 0, ss = 0, sh = 0, sd = 0;
  int64_t off(int b, int s, int h, int d) const { return b * sb + s * ss + h * sh + d * sd; }
};

// A 2-d element view (rows, columns).
struct View2 {
  unsigned char* data = nullptr;
  int datatype = 0;
  int rows = 0, cols = 0;
  int64_t rs = 0, cs = 0;
};

struct Problem {
  int B = 0, Sq = 0, Sk = 0, H = 1, Hk = 1, D = 0, Dv = 0;
  bool four_d = true;
  float scale = 1;
  bool causal = false;
  int datatype = 0;
  View4 q, k, v;
  View4 o;                   // the attention result: output 0, or (fused) output 2 — data NULL if absent
  View4 mask;                // [B, H, Sq, Sk] broadcast (stride 0 on broadcast axes); data NULL if none
  View4 lse;                 // [B, H, Sq, -]: (b, h, i) at lse.sb, lse.sh, lse.ss; data NULL if absent
  bool fused = false;        // the unify-head projection: y = o_flat · wᵀ + bias
  int Nout = 0;              // y's last extent
  View2 w;                   // [Nout, H * Dv]
  unsigned char* bias = nullptr;
  int64_t bias_stride = 1;
  View2 y;                   // [B * Sq, Nout] when it flattens, else y3 below
  View4 y3;                  // y as [B, Sq, 1, Nout]
  // Backward only.
  View4 g;                   // the gradient of output 0 (non-fused: [B, Sq, H, Dv]; fused: y3-shaped)
  View4 dq, dk, dv;
  View2 dw;
  unsigned char* dbias = nullptr;
  int64_t dbias_stride = 1;
};

// The problem of one call, checked (throws nnc::Error naming the problem).
// `backward`: inputs |g|-|-|q|k|v|mask|w|bias|o|lse|qkv|, outputs
// |dq|dk|dv|-|dw|dbias|; else inputs |q|k|v|mask|w|bias|, outputs |o|lse|qkv|.
Problem problem(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size, bool backward, const char* name);

// Whether key j is visible from query i (causal: bottom-right aligned, as in
// FlashAttention: i may see j <= i + Sk - Sq).
inline bool visible(const Problem& p, int i, int j) { return !p.causal || j <= i + p.Sk - p.Sq; }

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

void register_cpu_opt(Registry& r);

// Query rows per forward task of the CPU_OPT kernels.
constexpr int kQueryRows = 64;

// Per-block code of the CPU_OPT kernels (attention_body.hpp), fp32, packed
// scratch. A task is one (b, h) pair and a range of query rows.
struct Body {
  // Forward for query rows [i0, i1) of head h of batch b: o rows (fp32 view)
  // and lse (may be NULL views). Returns false when out of memory.
  bool (*forward)(const Problem& p, int b, int h, int i0, int i1, float* scratch);
  size_t (*forward_scratch)(const Problem& p);
  // Backward for all heads sharing kv head hk of batch b: dq rows, dk / dv
  // (fp32 views; NULL data where not asked for); `o` and `lse` as given or
  // recomputed; `g` the gradient of the attention result.
  bool (*backward)(const Problem& p, const View4& g, int b, int hk, float* scratch);
  size_t (*backward_scratch)(const Problem& p);
};
const Body* body_avx512();
const Body* body_avx2();

}  // namespace nnc::attn
