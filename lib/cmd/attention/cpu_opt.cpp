// SCALED_DOT_PRODUCT_ATTENTION on CPU_OPT (fp32, any strides, causal, masks,
// grouped kv heads, the fused unify-head projection): the blocked
// FlashAttention-style code of attention_body.hpp (AVX-512 or AVX2 + FMA,
// chosen at run time), threaded on the library's pool under the compute lock
// — the forward over (batch, head, block of 64 query rows), the backward over
// (batch, kv head). The projection and its gradients are three whole-matrix
// sgemms (cmd/common/sgemm.hpp). Without AVX2 the CPU_REF loops run.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "cmd/attention/attention.hpp"
#include "cmd/common/sgemm.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc::attn {

namespace {

const Body* body() {
  const CpuFeatures& f = cpu_features();
  return f.avx512 ? body_avx512() : f.avx2 ? body_avx2() : nullptr;
}

void sgemm(const gemm::Sgemm& g) {
  if (cpu_features().avx512)
    gemm::sgemm_avx512(g);
  else
    gemm::sgemm_avx2(g);
}

View4 packed4(float* data, int Sq, int H, int D) {
  View4 v;
  v.data = reinterpret_cast<unsigned char*>(data);
  v.datatype = CCV_32F;
  v.sd = 1, v.sh = D, v.ss = static_cast<int64_t>(H) * D, v.sb = static_cast<int64_t>(Sq) * H * D;
  return v;
}

// Whether [B, Sq, H, Dv] rows flatten to [B * Sq, H * Dv] with adjacent columns.
bool flat(const View4& v, const Problem& p, int H, int Dv) {
  return v.sd == 1 && (H == 1 || v.sh == Dv) && (p.B == 1 || v.sb == p.Sq * v.ss);
}

void copy4(const View4& from, const View4& to, const Problem& p, int H, int Dv) {
  const float* f = reinterpret_cast<const float*>(from.data);
  float* t = reinterpret_cast<float*>(to.data);
  for (int b = 0; b < p.B; b++)
    for (int s = 0; s < p.Sq; s++)
      for (int h = 0; h < H; h++)
        for (int d = 0; d < Dv; d++) t[to.off(b, s, h, d)] = f[from.off(b, s, h, d)];
}

void run_forward(const Problem& p, const Body* k) {
  const size_t qblocks = (static_cast<size_t>(p.Sq) + kQueryRows - 1) / kQueryRows;
  const size_t tasks = static_cast<size_t>(p.B) * p.H * qblocks;
  const size_t floats = k->forward_scratch(p);
  // Pool threads must not throw: a chunk that runs out of memory says so here.
  std::atomic<bool> failed{false};
  auto chunk = [&](size_t begin, size_t end) {
    try {
      std::vector<float> scratch(floats);
      for (size_t t = begin; t < end && !failed.load(std::memory_order_relaxed); t++) {
        const int qb = static_cast<int>(t % qblocks), h = static_cast<int>(t / qblocks % p.H),
                  b = static_cast<int>(t / qblocks / p.H);
        const int i0 = qb * kQueryRows, i1 = std::min(p.Sq, i0 + kQueryRows);
        if (!k->forward(p, b, h, i0, i1, scratch.data())) failed = true;
      }
    } catch (...) {
      failed = true;
    }
  };
  const double work = static_cast<double>(p.B) * p.H * p.Sq * p.Sk * (p.D + p.Dv);
  if (tasks == 1 || work < (1 << 20))
    chunk(0, tasks);
  else
    parallel_for(tasks, 1, chunk);
  if (failed) throw std::bad_alloc();
}

NNC_KERNEL(forward_opt) {
  const Body* k = body();
  if (!k) return forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  Problem p = problem(cmd, inputs, input_size, outputs, output_size, false, "SCALED_DOT_PRODUCT_ATTENTION_FORWARD");
  auto lock = compute_lock();
  if (!p.fused) {
    run_forward(p, k);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const int HDv = p.H * p.Dv;
  const View4 user_o = p.o;
  std::vector<float> o_scratch;
  if (!p.o.data || !flat(p.o, p, p.H, p.Dv)) {
    o_scratch.resize(static_cast<size_t>(p.B) * p.Sq * HDv);
    p.o = packed4(o_scratch.data(), p.Sq, p.H, p.Dv);
  }
  run_forward(p, k);
  if (user_o.data && !o_scratch.empty()) copy4(p.o, user_o, p, p.H, p.Dv);
  // y = o_flat · wᵀ + bias.
  const int64_t rows = static_cast<int64_t>(p.B) * p.Sq;
  std::vector<float> y_scratch;
  float* y = reinterpret_cast<float*>(p.y.data);
  int64_t ldy = p.y.rs;
  if (!y || p.y.cs != 1) {
    y_scratch.resize(static_cast<size_t>(rows) * p.Nout);
    y = y_scratch.data(), ldy = p.Nout;
  }
  gemm::Sgemm g;
  g.m = static_cast<int>(rows), g.n = p.Nout, g.k = HDv;
  g.a = reinterpret_cast<const float*>(p.o.data), g.ars = p.o.ss, g.acs = 1;
  g.b = reinterpret_cast<const float*>(p.w.data), g.brs = p.w.cs, g.bcs = p.w.rs;
  g.c = y, g.ldc = ldy;
  sgemm(g);
  const float* bias = reinterpret_cast<const float*>(p.bias);
  for (int64_t r = 0; r < rows; r++) {
    float* row = y + r * ldy;
    if (bias)
      for (int n = 0; n < p.Nout; n++) row[n] += bias[n * p.bias_stride];
    if (!y_scratch.empty()) {
      const int b = static_cast<int>(r / p.Sq), s = static_cast<int>(r % p.Sq);
      float* t = reinterpret_cast<float*>(p.y3.data) + b * p.y3.sb + s * p.y3.ss;
      for (int n = 0; n < p.Nout; n++) t[n * p.y3.sd] = row[n];
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_opt) {
  const Body* k = body();
  if (!k) return backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  Problem p = problem(cmd, inputs, input_size, outputs, output_size, true, "SCALED_DOT_PRODUCT_ATTENTION_BACKWARD");
  auto lock = compute_lock();
  const int HDv = p.H * p.Dv;
  const int64_t rows = static_cast<int64_t>(p.B) * p.Sq;
  // The saved statistics and attention result, or recomputed when absent.
  std::vector<float> o_scratch, lse_scratch;
  if (!p.o.data || !p.lse.data || p.lse.datatype != CCV_32F) {
    Problem f = p;
    f.dq = f.dk = f.dv = View4{};
    if (!p.o.data || (p.fused && !flat(p.o, p, p.H, p.Dv))) {
      o_scratch.resize(static_cast<size_t>(rows) * HDv);
      f.o = packed4(o_scratch.data(), p.Sq, p.H, p.Dv);
    } else {
      f.o = View4{};  // the given o stays as it is
    }
    lse_scratch.resize(static_cast<size_t>(p.B) * p.H * p.Sq);
    f.lse.data = reinterpret_cast<unsigned char*>(lse_scratch.data());
    f.lse.datatype = CCV_32F;
    f.lse.sb = static_cast<int64_t>(p.H) * p.Sq, f.lse.sh = p.Sq, f.lse.ss = 1;
    run_forward(f, k);
    if (f.o.data) p.o = f.o;
    p.lse = f.lse;
  }
  View4 g = p.g;
  std::vector<float> dO, o_flat, g_flat;
  if (p.fused) {
    // The projection's gradients: dO = G w, dw = Gᵀ o_flat, dbias = column sums of G.
    if (!flat(p.o, p, p.H, p.Dv)) {
      o_flat.resize(static_cast<size_t>(rows) * HDv);
      const View4 t = packed4(o_flat.data(), p.Sq, p.H, p.Dv);
      copy4(p.o, t, p, p.H, p.Dv);
      p.o = t;
    }
    const float* G = reinterpret_cast<const float*>(p.g.data);
    int64_t grs = p.g.ss, gcs = p.g.sd;
    if (p.B > 1 && p.g.sb != p.Sq * p.g.ss) {
      g_flat.resize(static_cast<size_t>(rows) * p.Nout);
      const View4 t = packed4(g_flat.data(), p.Sq, 1, p.Nout);
      copy4(p.g, t, p, 1, p.Nout);
      G = g_flat.data(), grs = p.Nout, gcs = 1;
    }
    dO.resize(static_cast<size_t>(rows) * HDv);
    gemm::Sgemm a;
    a.m = static_cast<int>(rows), a.n = HDv, a.k = p.Nout;
    a.a = G, a.ars = grs, a.acs = gcs;
    a.b = reinterpret_cast<const float*>(p.w.data), a.brs = p.w.rs, a.bcs = p.w.cs;
    a.c = dO.data(), a.ldc = HDv;
    sgemm(a);
    g = packed4(dO.data(), p.Sq, p.H, p.Dv);
    if (p.dw.data) {
      std::vector<float> dw(static_cast<size_t>(p.Nout) * HDv);
      gemm::Sgemm c;
      c.m = p.Nout, c.n = HDv, c.k = static_cast<int>(rows);
      c.a = G, c.ars = gcs, c.acs = grs;
      c.b = reinterpret_cast<const float*>(p.o.data), c.brs = p.o.ss, c.bcs = 1;
      c.c = dw.data(), c.ldc = HDv;
      sgemm(c);
      float* t = reinterpret_cast<float*>(p.dw.data);
      for (int n = 0; n < p.Nout; n++)
        for (int x = 0; x < HDv; x++) t[n * p.dw.rs + x * p.dw.cs] = dw[static_cast<size_t>(n) * HDv + x];
    }
    if (p.dbias) {
      std::vector<double> db(p.Nout, 0.0);
      for (int64_t r = 0; r < rows; r++)
        for (int n = 0; n < p.Nout; n++) db[n] += G[r * grs + n * gcs];
      float* t = reinterpret_cast<float*>(p.dbias);
      for (int n = 0; n < p.Nout; n++) t[n * p.dbias_stride] = static_cast<float>(db[n]);
    }
  }
  if (!p.dq.data && !p.dk.data && !p.dv.data) return CCV_NNC_EXEC_SUCCESS;
  const size_t tasks = static_cast<size_t>(p.B) * p.Hk;
  const size_t floats = k->backward_scratch(p);
  std::atomic<bool> failed{false};
  auto chunk = [&](size_t begin, size_t end) {
    try {
      std::vector<float> scratch(floats);
      for (size_t t = begin; t < end && !failed.load(std::memory_order_relaxed); t++)
        if (!k->backward(p, g, static_cast<int>(t / p.Hk), static_cast<int>(t % p.Hk), scratch.data())) failed = true;
    } catch (...) {
      failed = true;
    }
  };
  const double work = static_cast<double>(p.B) * p.H * p.Sq * p.Sk * (p.D + p.Dv);
  if (tasks == 1 || work < (1 << 20))
    chunk(0, tasks);
  else
    parallel_for(tasks, 1, chunk);
  if (failed) throw std::bad_alloc();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_opt(Registry& r) {
  r.add_kernels(cpu_opt(CCV_32F).exclusive_use(), {{CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, forward_opt},
                                                   {CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD, backward_opt}});
}

}  // namespace nnc::attn
