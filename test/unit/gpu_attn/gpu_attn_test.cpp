// gpu_attn.hpp on the CPU: the GPU attention kernels' algorithm (see the
// header) replayed over host buffers with the header's own functions — the
// per-thread parts with several "threads" (1, 3, 20 and 128) whose partial
// maxima, sums and deltas are combined as the block reductions combine them,
// and the kernels' one-warp-per-key dots (32 lanes, as on the GPU, and 5) —
// against SCALED_DOT_PRODUCT_ATTENTION on CPU_REF (double): o, lse, the fused
// y, dq, dk, dv, dw, dbias. Random shapes with odd sizes, causal rows (also
// Sq > Sk, so some rows see no key), masks of several broadcast shapes with
// -inf entries, fewer kv heads, 3-d operands, views, the fused projection,
// and the backward reading either its own recomputed lse or CPU_REF's.
#include "cmd/common/gpu_attn.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "cmd/attention/attention.hpp"
#include "core/error.hpp"

using namespace cmdtest;
namespace g = nnc::gpu;

namespace {

class GpuAttn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr uint32_t FWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD,
                   BWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD;
constexpr float kInf = std::numeric_limits<float>::infinity();

struct HostLd {
  float operator()(const void* p, int64_t o) const { return static_cast<const float*>(p)[o]; }
};

float* f32(const nnc::attn::View4& v) { return reinterpret_cast<float*>(v.data); }

struct Case {
  int B, Sq, Sk, H, Hk, D, Dv;
  Case(int b, int sq, int sk, int h, int hk, int d, int dv) : B(b), Sq(sq), Sk(sk), H(h), Hk(hk), D(d), Dv(dv) {}
  bool causal = false, four_d = true, fused = false, bias = true, views = false;
  std::vector<int> mask;  // empty: none
  int Nout = 5;
  bool ref_lse = false;  // the backward reads CPU_REF's lse instead of the emulated forward's
  float scale() const { return 1.f / std::sqrt(static_cast<float>(D)) * 1.3f; }
  std::vector<int> shape(int S, int h, int d) const {
    return four_d ? std::vector<int>{B, S, h, d} : std::vector<int>{B, S, d};
  }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    c.info.scaled_dot_product_attention.scale = scale();
    c.info.scaled_dot_product_attention.is_causal = causal;
    return c;
  }
};

T make(const std::vector<int>& s, bool view) { return view ? T::view(CCV_32F, s) : T(CCV_32F, s); }

// The block reductions of the kernels, as a loop over `step` threads. With
// lanes > 0 the scores (and the backward's dp) are computed as the kernels
// do, one "warp" of `lanes` lanes per key, step / lanes warps over the keys,
// the lanes' partial dots summed; else per thread (attn_score_part).
struct Emu {
  const g::AttnPlan& a;
  int step;
  int lanes;
  HostLd ld;

  // Scores of row i's visible keys into prow (warp mode); returns their max.
  float warp_scores(const float* qrow, const void* k, const void* mask, int b, int h, int i, float* prow) const {
    const g::AttnShape& s = a.s;
    const int warps = std::max(step / lanes, 1), end = g::attn_key_end(s, i);
    float m = g::attn_neg_inf();
    for (int w = 0; w < warps; w++)
      for (int j = w; j < end; j += warps) {
        float dot = 0;
        for (int l = lanes - 1; l >= 0; l--)  // the lanes' partials, in another order than one loop
          dot += g::attn_dot_part(qrow, ld, k, g::attn_key_off(s, b, h, j), s.k.sd, s.D, l, lanes);
        prow[j] = g::attn_score_finish(s, dot, ld, mask, b, h, i, j);
        m = std::max(m, prow[j]);
      }
    return m;
  }

  // One query row: its probabilities into prow (Sk floats); returns lse.
  float row_probs(const void* q, const void* k, const void* mask, int b, int h, int i, float* prow) const {
    const g::AttnShape& s = a.s;
    std::vector<float> qrow(s.D);
    for (int d = 0; d < s.D; d++) qrow[d] = ld(q, g::attn_off(s.q, b, i, h, d));
    float m = g::attn_neg_inf();
    if (lanes > 0)
      m = warp_scores(qrow.data(), k, mask, b, h, i, prow);
    else
      for (int t = 0; t < step; t++)
        m = std::max(m, g::attn_score_part(s, qrow.data(), ld, k, mask, b, h, i, t, step, prow));
    float l = 0;
    for (int t = 0; t < step; t++) l += g::attn_exp_part(s, prow, m, i, t, step);
    const float lse = g::attn_lse(m, l);
    for (int t = 0; t < step; t++) g::attn_prob_part(s, prow, lse, i, t, step);
    return lse;
  }
};

struct Result {
  std::vector<float> O;    // [B, Sq, H, Dv]
  std::vector<float> lse;  // [B, H, Sq]
};

Result emulate_forward(const Emu& e, const nnc::attn::Problem& p) {
  const g::AttnShape& s = e.a.s;
  Result r;
  r.O.assign(static_cast<size_t>(s.B) * s.Sq * s.H * s.Dv, 0.f);
  r.lse.assign(static_cast<size_t>(s.B) * s.H * s.Sq, 0.f);
  const g::AttnView ov = g::attn_packed(s.Sq, s.H, s.Dv), lv = g::attn_packed_lse(s.Sq, s.H);
  std::vector<float> prow(s.Sk);
  for (int b = 0; b < s.B; b++)
    for (int h = 0; h < s.H; h++)
      for (int i = 0; i < s.Sq; i++) {
        const float lse = e.row_probs(p.q.data, p.k.data, p.mask.data, b, h, i, prow.data());
        r.lse[b * lv.sb + h * lv.sh + i * lv.ss] = lse;
        // As the kernel: the columns split over key parts when the threads outnumber them.
        const int parts = g::attn_out_parts(s.Dv, e.step);
        for (int d = 0; d < s.Dv; d++) {
          float o = 0;
          for (int k = 0; k < parts; k++) o += g::attn_out_part(s, prow.data(), e.ld, p.v.data, b, h, i, d, k, parts);
          r.O[g::attn_off(ov, b, i, h, d)] = o;
        }
      }
  return r;
}

void expect_near_t(const T& got, const T& want, double tol, const char* what) {
  ASSERT_EQ(got.count(), want.count()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < want.count(); i++) {
    const double a = got.get(i), b = want.get(i);
    const bool ok = (std::isinf(b) && a == b) || std::fabs(a - b) <= tol * (1 + std::fabs(b));
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " element " << i << ": " << a << " vs CPU_REF " << b;
  }
  EXPECT_EQ(bad, 0u) << what;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  cs.push_back(Case(2, 7, 9, 3, 3, 5, 6));  // plain, odd sizes
  Case c{2, 9, 9, 4, 2, 7, 5};              // causal, grouped kv heads
  c.causal = true;
  cs.push_back(c);
  Case d{1, 11, 6, 2, 1, 3, 4};  // causal with Sq > Sk: rows 0..4 see nothing
  d.causal = true, d.mask = {11, 6};
  cs.push_back(d);
  Case e{3, 5, 13, 6, 3, 9, 7};  // mask [B, 1, Sq, Sk], views
  e.mask = {3, 1, 5, 13}, e.views = true;
  cs.push_back(e);
  Case f{2, 6, 7, 2, 2, 4, 4};  // mask [1, H, 1, Sk] with -inf entries, causal Sq < Sk
  f.mask = {1, 2, 1, 7}, f.causal = true;
  cs.push_back(f);
  Case h3{3, 8, 5, 1, 1, 6, 3};  // 3-d, mask [Sk]
  h3.four_d = false, h3.mask = {5};
  cs.push_back(h3);
  Case fu{2, 5, 7, 3, 1, 4, 3};  // fused with bias, causal, mask [Sq, Sk]
  fu.fused = true, fu.causal = true, fu.mask = {5, 7}, fu.Nout = 7;
  cs.push_back(fu);
  Case fn{2, 6, 6, 2, 2, 5, 5};  // fused without bias, 3-d... no: 4-d, views
  fn.fused = true, fn.bias = false, fn.views = true, fn.Nout = 4;
  cs.push_back(fn);
  Case f3{2, 7, 8, 1, 1, 5, 6};  // fused, 3-d
  f3.fused = true, f3.four_d = false, f3.Nout = 3;
  cs.push_back(f3);
  Case big{1, 37, 53, 4, 1, 16, 8};  // longer rows, multi-query
  big.causal = true, big.mask = {1, 1, 37, 53};
  cs.push_back(big);
  return cs;
}

TEST_F(GpuAttn, ForwardAndBackwardRowMathMatchCpuRef) {
  std::mt19937 rng(53);
  int checked = 0;
  for (Case c : cases())
    for (int mode = 0; mode < 4; mode++)
      for (bool ref_lse : {false, true}) {
        // Per thread with 1 or 3 threads; as the kernels (128 threads, warps of 32); 4 warps of 5 lanes.
        const int step = mode == 0 ? 1 : mode == 1 ? 3 : mode == 2 ? 128 : 20;
        const int lanes = mode == 2 ? 32 : mode == 3 ? 5 : 0;
        c.ref_lse = ref_lse;
        SCOPED_TRACE(testing::Message() << "B" << c.B << " Sq" << c.Sq << " Sk" << c.Sk << " H" << c.H << "/" << c.Hk
                                        << " D" << c.D << "/" << c.Dv << (c.causal ? " causal" : "")
                                        << (c.fused ? " fused" : "") << " mask nd " << c.mask.size() << " step " << step
                                        << " lanes " << lanes << (ref_lse ? " CPU_REF lse" : ""));
        T q = make(c.shape(c.Sq, c.H, c.D), c.views), k = make(c.shape(c.Sk, c.Hk, c.D), c.views),
          v = make(c.shape(c.Sk, c.Hk, c.Dv), c.views);
        fill_uniform(q, rng), fill_uniform(k, rng), fill_uniform(v, rng);
        std::unique_ptr<T> mask;
        if (!c.mask.empty()) {
          mask = std::make_unique<T>(CCV_32F, c.mask);
          fill_uniform(*mask, rng);
          for (size_t i = 0; i < mask->count(); i += 4) mask->set(i, -kInf);  // hidden keys
        }
        const int HDv = c.H * c.Dv;
        T w(CCV_32F, {c.Nout, HDv}), bias(CCV_32F, {c.Nout});
        fill_uniform(w, rng), fill_uniform(bias, rng);
        T o = make(c.shape(c.Sq, c.H, c.Dv), false);
        T y(CCV_32F, {c.B, c.Sq, c.Nout});
        T lse = c.four_d ? T(CCV_32F, {c.B, c.H, c.Sq}) : T(CCV_32F, {c.Sq, c.B});
        T qkv(CCV_32F, c.four_d ? std::vector<int>{c.B, c.Sq, c.H, c.Dv} : std::vector<int>{c.B, c.Sq, c.Dv});
        std::vector<ccv_nnc_tensor_t*> in = {q, k, v, mask ? mask->get() : nullptr};
        std::vector<ccv_nnc_tensor_t*> out = {o, lse};
        if (c.fused) {
          in.push_back(w);
          if (c.bias) in.push_back(bias);
          out = {y, lse, qkv};
        }
        ASSERT_EQ(run(c.cmd(FWD), in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        // Forward: the plan, then the kernels' algorithm.
        const nnc::attn::Problem pf = nnc::attn::problem(c.cmd(FWD), in.data(), static_cast<int>(in.size()), out.data(),
                                                         static_cast<int>(out.size()), false, "test");
        g::AttnPlan a;
        std::string why;
        ASSERT_TRUE(g::attn_plan(pf, &a, &why)) << why;
        const Emu e{a, step, lanes, {}};
        const Result r = emulate_forward(e, pf);
        const g::AttnShape& s = a.s;
        // lse through the plan's strides of the CPU_REF tensor.
        for (int b = 0; b < s.B; b++)
          for (int h = 0; h < s.H; h++)
            for (int i = 0; i < s.Sq; i++) {
              const float want = f32(pf.lse)[g::attn_lse_off(s, b, h, i)];
              const float got = r.lse[(static_cast<size_t>(b) * s.H + h) * s.Sq + i];
              if (std::isinf(want))
                ASSERT_EQ(got, want) << "lse " << b << "," << h << "," << i;
              else
                ASSERT_NEAR(got, want, 1e-4 * (1 + std::fabs(want))) << "lse " << b << "," << h << "," << i;
            }
        // O through the plan's strides of o (or qkv).
        for (int b = 0; b < s.B; b++)
          for (int i = 0; i < s.Sq; i++)
            for (int h = 0; h < s.H; h++)
              for (int d = 0; d < s.Dv; d++) {
                const float want = f32(pf.o)[g::attn_off(a.o, b, i, h, d)];
                const float got = r.O[g::attn_off(g::attn_packed(s.Sq, s.H, s.Dv), b, i, h, d)];
                ASSERT_NEAR(got, want, 2e-4 * (1 + std::fabs(want))) << "o " << b << "," << i << "," << h << "," << d;
              }
        if (c.fused) {
          T ye(CCV_32F, {c.B, c.Sq, c.Nout});
          g::AttnPlan ae = a;
          for (int64_t rr = 0; rr < a.proj.R; rr++)
            for (int n = 0; n < a.proj.N; n++)
              f32(pf.y3)[g::attn_proj_off(a.proj, rr, n)] =
                  g::attn_proj(a.proj, r.O.data(), e.ld, pf.w.data, c.bias ? pf.bias : nullptr, rr, n);
          (void)ae;
          // pf.y3 is y itself: compare with a fresh CPU_REF run.
          T y2(CCV_32F, {c.B, c.Sq, c.Nout});
          std::vector<ccv_nnc_tensor_t*> out2 = {y2, nullptr, nullptr};
          ASSERT_EQ(run(c.cmd(FWD), in, out2), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          expect_near_t(y, y2, 2e-4, "fused y");
        }
        // Backward.
        T gr = c.fused ? T(CCV_32F, {c.B, c.Sq, c.Nout}) : make(c.shape(c.Sq, c.H, c.Dv), c.views);
        fill_uniform(gr, rng);
        T dq = make(c.shape(c.Sq, c.H, c.D), c.views), dk = make(c.shape(c.Sk, c.Hk, c.D), c.views),
          dv = make(c.shape(c.Sk, c.Hk, c.Dv), c.views);
        T dw(CCV_32F, {c.Nout, HDv}), db(CCV_32F, {c.Nout});
        std::vector<ccv_nnc_tensor_t*> bin = {gr,
                                              nullptr,
                                              nullptr,
                                              q,
                                              k,
                                              v,
                                              mask ? mask->get() : nullptr,
                                              c.fused ? w.get() : nullptr,
                                              c.fused && c.bias ? bias.get() : nullptr,
                                              c.fused ? nullptr : o.get(),
                                              lse,
                                              c.fused ? qkv.get() : nullptr};
        std::vector<ccv_nnc_tensor_t*> bout = {dq, dk, dv};
        if (c.fused) bout = {dq, dk, dv, nullptr, dw, c.bias ? db.get() : nullptr};
        ASSERT_EQ(run(c.cmd(BWD), bin, bout), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        const nnc::attn::Problem pb = nnc::attn::problem(c.cmd(BWD), bin.data(), static_cast<int>(bin.size()),
                                                         bout.data(), static_cast<int>(bout.size()), true, "test");
        g::AttnPlan ab;
        ASSERT_TRUE(g::attn_plan(pb, &ab, &why)) << why;
        const g::AttnShape& sb = ab.s;
        const int64_t R = static_cast<int64_t>(s.B) * s.Sq;
        // dO: g, or g w when fused; the fused dw, dbias from the recomputed O.
        std::vector<float> dO(static_cast<size_t>(R) * HDv);
        const g::AttnView dov = g::attn_packed(s.Sq, s.H, s.Dv);
        if (c.fused) {
          for (int64_t rr = 0; rr < R; rr++)
            for (int cc = 0; cc < HDv; cc++)
              dO[rr * HDv + cc] = g::attn_proj_dx(ab.proj, e.ld, pb.g.data, pb.w.data, rr, cc);
          T dwe(CCV_32F, {c.Nout, HDv});
          for (int n = 0; n < c.Nout; n++)
            for (int cc = 0; cc < HDv; cc++)
              dwe.set(static_cast<size_t>(n) * HDv + cc, g::attn_proj_dw(ab.proj, e.ld, pb.g.data, r.O.data(), n, cc));
          expect_near_t(dwe, dw, 2e-4, "dw");
          if (c.bias) {
            T dbe(CCV_32F, {c.Nout});
            for (int n = 0; n < c.Nout; n++) dbe.set(n, g::attn_proj_dbias(ab.proj, e.ld, pb.g.data, n));
            expect_near_t(dbe, db, 2e-4, "dbias");
          }
        } else {
          for (int b = 0; b < s.B; b++)
            for (int i = 0; i < s.Sq; i++)
              for (int h = 0; h < s.H; h++)
                for (int d = 0; d < s.Dv; d++)
                  dO[g::attn_off(dov, b, i, h, d)] = f32(pb.g)[g::attn_off(ab.g, b, i, h, d)];
        }
        // As the kernels: chunks of (batch, kv head) units (all at once, or 1, 2, 3 units per chunk), a chunk's
        // rows through attn_row_of into its own P and dS scratch, then its gradient elements through the
        // index maps; every element must be written exactly once. lse: CPU_REF's (through the plan) or the
        // emulated forward's.
        const int64_t units = static_cast<int64_t>(s.B) * s.Hk;
        const int64_t per_chunk = mode == 0 ? units : mode;
        T dqe = make(c.shape(c.Sq, c.H, c.D), false), dke = make(c.shape(c.Sk, c.Hk, c.D), false),
          dve = make(c.shape(c.Sk, c.Hk, c.Dv), false);
        std::vector<int> seen_q(dqe.count(), 0), seen_k(dke.count(), 0), seen_v(dve.count(), 0);
        std::vector<float> qrow(s.D);
        for (int64_t u0 = 0; u0 < units; u0 += per_chunk) {
          const int64_t u1 = std::min(units, u0 + per_chunk);
          const int64_t rows = g::attn_chunk_rows(sb, u0, u1);
          std::vector<float> P(rows * s.Sk, -1.f), DS(rows * s.Sk, -1.f);  // -1: rows the chunk does not write
          for (int64_t rr = 0; rr < rows; rr++) {
            int b, h, i;
            g::attn_row_of(sb, u0, rr, &b, &h, &i);
            ASSERT_EQ(g::attn_scratch_row(sb, u0, b, h, i), rr);
            float* prow = &P[rr * s.Sk];
            float* dsrow = &DS[rr * s.Sk];
            for (int d = 0; d < s.D; d++) qrow[d] = e.ld(pb.q.data, g::attn_off(sb.q, b, i, h, d));
            const float l = ref_lse ? f32(pb.lse)[g::attn_lse_off(sb, b, h, i)]
                                    : r.lse[(static_cast<size_t>(b) * s.H + h) * s.Sq + i];
            const float* dOrow = &dO[g::attn_off(dov, b, i, h, 0)];
            float delta = 0;
            if (lanes > 0) {
              // As the kernel: scores and dp per warp, then the thread parts.
              Emu eb{ab, step, lanes, {}};
              eb.warp_scores(qrow.data(), pb.k.data, pb.mask.data, b, h, i, prow);
              const int warps = std::max(step / lanes, 1), end = g::attn_key_end(sb, i);
              for (int w = 0; w < warps; w++)
                for (int j = w; j < end; j += warps) {
                  float dp = 0;
                  for (int ln = 0; ln < lanes; ln++)
                    dp += g::attn_dot_part(dOrow, e.ld, pb.v.data, g::attn_value_off(sb, b, h, j), sb.v.sd, sb.Dv, ln,
                                           lanes);
                  dsrow[j] = dp;
                }
              for (int t = 0; t < step; t++) delta += g::attn_bwd_prob_part(sb, prow, dsrow, l, i, t, step);
            } else {
              for (int t = 0; t < step; t++)
                g::attn_score_part(sb, qrow.data(), e.ld, pb.k.data, pb.mask.data, b, h, i, t, step, prow);
              for (int t = 0; t < step; t++)
                delta += g::attn_bwd_part(sb, dOrow, e.ld, pb.v.data, b, h, i, l, t, step, prow, dsrow);
            }
            for (int t = 0; t < step; t++) g::attn_ds_part(sb, prow, dsrow, delta, t, step);
          }
          for (int64_t x = 0; x < rows * s.D; x++) {
            int b, i, h, d;
            g::attn_dq_index(sb, u0, x, &b, &i, &h, &d);
            const size_t at = ((static_cast<size_t>(b) * s.Sq + i) * s.H + h) * s.D + d;
            seen_q[at]++;
            dqe.set(at, g::attn_dq(sb, DS.data(), u0, e.ld, pb.k.data, b, i, h, d));
          }
          for (int64_t x = 0; x < (u1 - u0) * s.Sk * s.D; x++) {
            int b, j, hk, d;
            g::attn_dkv_index(sb, u0, x, s.D, &b, &j, &hk, &d);
            const size_t at = ((static_cast<size_t>(b) * s.Sk + j) * s.Hk + hk) * s.D + d;
            seen_k[at]++;
            dke.set(at, g::attn_dk(sb, DS.data(), u0, e.ld, pb.q.data, b, j, hk, d));
          }
          for (int64_t x = 0; x < (u1 - u0) * s.Sk * s.Dv; x++) {
            int b, j, hk, d;
            g::attn_dkv_index(sb, u0, x, s.Dv, &b, &j, &hk, &d);
            const size_t at = ((static_cast<size_t>(b) * s.Sk + j) * s.Hk + hk) * s.Dv + d;
            seen_v[at]++;
            dve.set(at, g::attn_dv(sb, P.data(), u0, dO.data(), b, j, hk, d));
          }
        }
        for (const std::vector<int>* seen : {&seen_q, &seen_k, &seen_v})
          EXPECT_EQ(std::count(seen->begin(), seen->end(), 1), static_cast<std::ptrdiff_t>(seen->size()));
        expect_near_t(dqe, dq, 5e-4, "dq");
        expect_near_t(dke, dk, 5e-4, "dk");
        expect_near_t(dve, dv, 5e-4, "dv");
        checked++;
      }
  EXPECT_EQ(checked, 80);
}

TEST_F(GpuAttn, IndexMaps) {
  g::AttnShape s;
  s.Sq = 3, s.Sk = 5, s.H = 6, s.Hk = 2;
  EXPECT_EQ(g::attn_kv_head(s, 0), 0);
  EXPECT_EQ(g::attn_kv_head(s, 2), 0);
  EXPECT_EQ(g::attn_kv_head(s, 3), 1);
  EXPECT_EQ(g::attn_kv_head(s, 5), 1);
  EXPECT_EQ(g::attn_key_end(s, 0), 5);  // not causal: every key
  s.causal = 1;
  // Bottom-right aligned: the last row sees every key, row i sees j <= i + 2.
  EXPECT_EQ(g::attn_key_end(s, 0), 3);
  EXPECT_EQ(g::attn_key_end(s, 2), 5);
  EXPECT_EQ(g::attn_query_begin(s, 0), 0);
  EXPECT_EQ(g::attn_query_begin(s, 3), 1);
  EXPECT_EQ(g::attn_query_begin(s, 4), 2);
  s.Sq = 7;  // Sq > Sk: rows 0, 1 see nothing
  EXPECT_EQ(g::attn_key_end(s, 0), 0);
  EXPECT_EQ(g::attn_key_end(s, 1), 0);
  EXPECT_EQ(g::attn_key_end(s, 2), 1);
  EXPECT_EQ(g::attn_query_begin(s, 0), 2);
  // The two descriptions agree: j < key_end(i) iff i >= query_begin(j).
  for (int sq : {1, 4, 9})
    for (int sk : {1, 4, 9}) {
      s.Sq = sq, s.Sk = sk;
      for (int i = 0; i < sq; i++)
        for (int j = 0; j < sk; j++) EXPECT_EQ(j < g::attn_key_end(s, i), i >= g::attn_query_begin(s, j));
    }
  EXPECT_EQ(g::attn_lse(g::attn_neg_inf(), 0), g::attn_neg_inf());
  EXPECT_EQ(g::attn_prob(1.f, g::attn_neg_inf()), 0.f);
  EXPECT_FLOAT_EQ(g::attn_prob(1.f, 1.f), 1.f);
  EXPECT_EQ(g::attn_out_parts(64, 128), 2);
  EXPECT_EQ(g::attn_out_parts(5, 128), 25);  // 125 of 128 threads work
  EXPECT_EQ(g::attn_out_parts(65, 128), 1);
  EXPECT_EQ(g::attn_out_parts(200, 128), 1);
  for (int dv = 1; dv <= 300; dv++) EXPECT_LE(g::attn_out_parts(dv, 128) * std::min(dv, 128), 128) << dv;
  EXPECT_EQ(g::attn_chunk_units(8, 1 << 20, int64_t{1} << 30), 8);
  EXPECT_EQ(g::attn_chunk_units(8, int64_t{1} << 28, int64_t{1} << 30), 1);
  EXPECT_EQ(g::attn_chunk_units(8, int64_t{1} << 27, int64_t{1} << 30), 2);
  EXPECT_EQ(g::attn_chunk_units(8, int64_t{1} << 40, int64_t{1} << 30), 1);
  // Chunk rows: units of G query heads; row r of a chunk and its (b, h, i) agree both ways.
  s.causal = 0, s.B = 3, s.Sq = 4, s.H = 6, s.Hk = 2;
  for (int64_t u0 : {0, 1, 5})
    for (int64_t r = 0; r < g::attn_chunk_rows(s, u0, 6); r++) {
      int b, h, i;
      g::attn_row_of(s, u0, r, &b, &h, &i);
      EXPECT_EQ(b * s.Hk + g::attn_kv_head(s, h), u0 + r / (3 * s.Sq)) << r;
      EXPECT_EQ(g::attn_scratch_row(s, u0, b, h, i), r);
    }
}

TEST_F(GpuAttn, PlanRefusesOtherTypes) {
  // 64F is refused; 16BF (like 32F and 16F) is taken, its lse too.
  for (int dt : {CCV_64F, CCV_16BF}) {
    T q(dt, {1, 3, 2, 4}), k(dt, {1, 3, 2, 4}), v(dt, {1, 3, 2, 4}), o(dt, {1, 3, 2, 4}), l(dt, {1, 2, 3});
    std::vector<ccv_nnc_tensor_t*> in = {q, k, v}, out = {o, l};
    Case c{1, 3, 3, 2, 2, 4, 4};
    const nnc::attn::Problem p = nnc::attn::problem(c.cmd(FWD), in.data(), 3, out.data(), 2, false, "test");
    g::AttnPlan a;
    std::string why;
    EXPECT_EQ(g::attn_plan(p, &a, &why), dt == CCV_16BF) << why;
    if (dt == CCV_64F) {
      EXPECT_NE(why.find("32F, 16F or 16BF"), std::string::npos) << why;
    } else {
      EXPECT_EQ(a.datatype, CCV_16BF);
      EXPECT_EQ(a.lse_type, CCV_16BF);
    }
  }
  T q(CCV_16F, {1, 3, 2, 4}), k(CCV_16F, {1, 3, 2, 4}), v(CCV_16F, {1, 3, 2, 4}), o(CCV_16F, {1, 3, 2, 4});
  T lse(CCV_64F, {1, 2, 3});
  std::vector<ccv_nnc_tensor_t*> in = {q, k, v}, out = {o, lse};
  Case c{1, 3, 3, 2, 2, 4, 4};
  const nnc::attn::Problem p = nnc::attn::problem(c.cmd(FWD), in.data(), 3, out.data(), 2, false, "test");
  g::AttnPlan a;
  std::string why;
  EXPECT_FALSE(g::attn_plan(p, &a, &why));
  EXPECT_NE(why.find("lse"), std::string::npos) << why;
  // Head sizes whose rows do not fit a block's shared memory: D + Dv = 12001 refused, 12000 taken.
  for (int dv : {6001, 6000}) {
    T q2(CCV_32F, {1, 2, 1, 6000}), k2(CCV_32F, {1, 3, 1, 6000}), v2(CCV_32F, {1, 3, 1, dv}),
        o2(CCV_32F, {1, 2, 1, dv});
    std::vector<ccv_nnc_tensor_t*> in2 = {q2, k2, v2}, out2 = {o2};
    const nnc::attn::Problem p2 = nnc::attn::problem(c.cmd(FWD), in2.data(), 3, out2.data(), 1, false, "test");
    EXPECT_EQ(g::attn_plan(p2, &a, &why), dv == 6000) << dv;
    if (dv == 6001) {
      EXPECT_NE(why.find("12000"), std::string::npos) << why;
    }
  }
}

}  // namespace
