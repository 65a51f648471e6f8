// gpu_attn.hpp's host side: the GPU attention kernels' plan from the
// attention family's checked problem (cmd/attention/attention.hpp), so that
// a call means on the GPU what it means on CPU_REF.
#include "cmd/common/gpu_attn.hpp"

#include <algorithm>

#include "cmd/attention/attention.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::gpu {

namespace {

AttnView from(const attn::View4& v) {
  AttnView a;
  a.sb = v.sb, a.ss = v.ss, a.sh = v.sh, a.sd = v.sd;
  return a;
}

bool gpu_type(int dt) { return dt == CCV_32F || dt == CCV_16F || dt == CCV_16BF; }

}  // namespace

int64_t attn_chunk_units(int64_t units, int64_t floats_per_unit, int64_t limit_bytes) {
  const int64_t most = std::max<int64_t>(units, 1);
  if (floats_per_unit <= 0) return most;
  const int64_t n = limit_bytes / (floats_per_unit * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(n, 1, most);
}

bool attn_plan(const attn::Problem& p, AttnPlan* plan, std::string* why) {
  auto refuse = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  if (!gpu_type(p.datatype)) return refuse("the GPU kernels take 32F, 16F or 16BF q, k, v (one type)");
  if (p.lse.data && !gpu_type(p.lse.datatype)) return refuse("the GPU kernels take a 32F, 16F or 16BF lse");
  // The row kernels keep a query row and a dO row in shared memory: D + Dv
  // floats beside their static 640 bytes within the 48 KiB a launch gets.
  if (static_cast<int64_t>(p.D) + p.Dv > 12000) return refuse("the GPU kernels take head sizes D + Dv up to 12000");
  AttnPlan a;
  AttnShape& s = a.s;
  s.B = p.B, s.Sq = p.Sq, s.Sk = p.Sk, s.H = p.H, s.Hk = p.Hk, s.D = p.D, s.Dv = p.Dv;
  s.scale = p.scale;
  s.causal = p.causal ? 1 : 0;
  s.has_mask = p.mask.data ? 1 : 0;
  s.q = from(p.q), s.k = from(p.k), s.v = from(p.v), s.mask = from(p.mask);
  // attn::View4 keeps lse's (b, h, i) strides in sb, sh, ss.
  if (p.lse.data) {
    s.lse = from(p.lse);
    a.lse_type = p.lse.datatype;
  }
  a.datatype = p.datatype;
  a.fused = p.fused;
  if (p.o.data) a.o = from(p.o);
  if (p.g.data && !p.fused) a.g = from(p.g);
  if (p.fused) {
    AttnProj& j = a.proj;
    j.R = p.B * p.Sq, j.C = p.H * p.Dv, j.N = p.Nout, j.Sq = p.Sq;
    j.w_rs = p.w.rs, j.w_cs = p.w.cs;
    const attn::View4& y = p.g.data ? p.g : p.y3;  // backward: g (y-shaped); forward: y
    j.y_sb = y.sb, j.y_ss = y.ss, j.y_sn = y.sd;
    j.bias_stride = p.bias_stride;
    if (!p.w.data) return refuse("w's strides do not walk as a matrix");
  }
  if (p.dq.data) a.dq = from(p.dq);
  if (p.dk.data) a.dk = from(p.dk);
  if (p.dv.data) a.dv = from(p.dv);
  if (p.dw.data) a.dw_rs = p.dw.rs, a.dw_cs = p.dw.cs;
  a.dbias_stride = p.dbias_stride;
  *plan = a;
  return true;
}

}  // namespace nnc::gpu
