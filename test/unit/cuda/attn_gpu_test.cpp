// GPU_REF SCALED_DOT_PRODUCT_ATTENTION against CPU_REF on random inputs with
// fixed seeds: forward (o, lse; the fused y and qkv) and backward (every
// subset of dq, dk, dv; dw, dbias), 4-d and 3-d, causal (also Sq > Sk: rows
// without keys, o = 0 and lse = -inf), masks of several broadcast shapes with
// -inf entries, fewer kv heads, views (whole parents compared, so nothing
// outside a view is written), fp32 and fp16; the lse layout shared with the
// CPU family (CPU_OPT's backward reads the GPU forward's lse and o); a GPU
// stream context; bit-identical reruns whatever flags / deterministic say;
// the refusals. Skips without a GPU.
//
// Tolerances. CPU_REF computes in double and rounds once. The GPU sums in
// fp32: a dot of D <= 64 terms of magnitude <= 1 and a softmax over Sk <= 61
// keys lose about 1e-6 relative; o is a convex mix of v (|o| <= 1); the
// gradients are sums of Sq * Sk terms each below 1 in magnitude but mostly
// cancelling, |values| of a few units. So fp32: |gpu - cpu| <= 1e-4 + 1e-4
// |cpu| forward, 5e-4 + 5e-4 |cpu| backward; a wrong index (head group, mask
// stride, causal bound by one) moves values by 1e-2 or more. fp16: both sides
// read the same fp16 inputs and round their result to fp16 once (2^-11
// relative, one ulp apart at worst: 2^-10 |cpu|), the GPU's fp32 intermediates
// add ~1e-6, but the backward rounds g w (fused) and the gradients of values
// up to ~4: so 4e-3 |cpu| + 2e-3 (forward) / 4e-3 (backward).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu.hpp"
#include "gpu_pair.hpp"

using namespace nnc_gpu_test;

namespace {

constexpr uint32_t FWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD,
                   BWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD;

struct Case {
  int B, Sq, Sk, H, Hk, D, Dv;
  Case(int b, int sq, int sk, int h, int hk, int d, int dv) : B(b), Sq(sq), Sk(sk), H(h), Hk(hk), D(d), Dv(dv) {}
  bool causal = false, four_d = true, fused = false, bias = true, views = false;
  std::vector<int> mask;
  int Nout = 5;
  std::string name(int dt) const {
    char b[200];
    std::snprintf(b, sizeof(b), "B%d Sq%d Sk%d H%d/%d D%d/%d%s%s%s%s mask nd %d %s", B, Sq, Sk, H, Hk, D, Dv,
                  causal ? " causal" : "", fused ? " fused" : "", four_d ? "" : " 3-d", views ? " views" : "",
                  static_cast<int>(mask.size()), dt == CCV_16F ? "16F" : "32F");
    return b;
  }
  std::vector<int> shape(int S, int h, int d) const {
    return four_d ? std::vector<int>{B, S, h, d} : std::vector<int>{B, S, d};
  }
  std::vector<int> lse_shape() const { return four_d ? std::vector<int>{B, H, Sq} : std::vector<int>{Sq, B}; }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = make_cmd(id);
    c.info.scaled_dot_product_attention.scale = 1.f / std::sqrt(static_cast<float>(D));
    c.info.scaled_dot_product_attention.is_causal = causal;
    return c;
  }
};

std::vector<Case> cases() {
  std::vector<Case> cs;
  cs.push_back(Case(2, 7, 9, 3, 3, 5, 6));
  Case c{2, 9, 9, 4, 2, 7, 5};  // causal, 2 query heads per kv head
  c.causal = true;
  cs.push_back(c);
  Case d{1, 11, 6, 2, 1, 3, 4};  // causal with Sq > Sk: rows 0..4 see no key
  d.causal = true, d.mask = {11, 6};
  cs.push_back(d);
  Case e{3, 5, 13, 6, 3, 9, 7};  // mask [B, 1, Sq, Sk], views
  e.mask = {3, 1, 5, 13}, e.views = true;
  cs.push_back(e);
  Case f{2, 6, 7, 2, 2, 4, 4};  // mask [1, H, 1, Sk], causal Sq < Sk
  f.mask = {1, 2, 1, 7}, f.causal = true;
  cs.push_back(f);
  Case h3{3, 8, 5, 1, 1, 6, 3};  // 3-d, mask [Sk]
  h3.four_d = false, h3.mask = {5};
  cs.push_back(h3);
  Case big{2, 61, 53, 8, 2, 64, 64};  // longer rows than a block (128 threads stride over 53 keys: fine) and D = 64
  big.causal = true, big.mask = {2, 8, 61, 53};
  cs.push_back(big);
  Case fu{2, 5, 7, 3, 1, 4, 3};  // fused with bias, causal, mask [Sq, Sk]
  fu.fused = true, fu.causal = true, fu.mask = {5, 7}, fu.Nout = 7;
  cs.push_back(fu);
  Case fn{2, 6, 6, 2, 2, 5, 5};  // fused without bias, views
  fn.fused = true, fn.bias = false, fn.views = true, fn.Nout = 4;
  cs.push_back(fn);
  Case f3{2, 7, 8, 1, 1, 5, 6};  // fused, 3-d
  f3.fused = true, f3.four_d = false, f3.Nout = 3;
  cs.push_back(f3);
  return cs;
}

// The mask: uniform values with every 4th entry -inf (set on the CPU parent, then uploaded).
BothPtr make_mask(const Case& c, int dt, std::mt19937& rng) { return attn_mask(c.mask, dt, rng, 4); }

struct Inputs {
  BothPtr q, k, v, mask, w, bias;
  Inputs(const Case& c, int dt, std::mt19937& rng) {
    q = both({c.shape(c.Sq, c.H, c.D), c.views, dt}, rng);
    k = both({c.shape(c.Sk, c.Hk, c.D), c.views, dt}, rng);
    v = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, dt}, rng);
    mask = make_mask(c, dt, rng);
    if (c.fused) {
      w = both({{c.Nout, c.H * c.Dv}, false, dt}, rng);
      if (c.bias) bias = both({{c.Nout}, false, dt}, rng);
    }
  }
  std::vector<Both*> list() const { return {q.get(), k.get(), v.get(), mask.get(), w.get(), bias.get()}; }
};

float fwd_atol(int dt) { return dt == CCV_16F ? 2e-3f : 1e-4f; }
float fwd_rtol(int dt) { return dt == CCV_16F ? 4e-3f : 1e-4f; }
float bwd_atol(int dt) { return dt == CCV_16F ? 4e-3f : 5e-4f; }
float bwd_rtol(int dt) { return dt == CCV_16F ? 4e-3f : 5e-4f; }

TEST(AttnGpu, ForwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1941);
  for (int dt : {CCV_32F, CCV_16F})
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name(dt));
      Inputs in(c, dt, rng);
      BothPtr lse = both({c.lse_shape(), false, CCV_32F}, rng);
      if (!c.fused) {
        BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), c.views, dt}, rng);
        run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get(), in.mask.get()}, {o.get(), lse.get()}, c.name(dt));
        o->expect_close(fwd_rtol(dt), fwd_atol(dt), "o");
      } else {
        BothPtr y = both({{c.B, c.Sq, c.Nout}, c.views, dt}, rng);
        BothPtr qkv = both({c.shape(c.Sq, c.H, c.Dv), false, dt}, rng);
        std::vector<Both*> ins = in.list();
        if (!c.bias) ins.pop_back();
        run_both(c.cmd(FWD), ins, {y.get(), lse.get(), qkv.get()}, c.name(dt));
        // y sums H * Dv products of o and w: one more fp16 rounding of a sum up to ~H * Dv / 2 in magnitude.
        y->expect_close(fwd_rtol(dt), fwd_atol(dt) * (dt == CCV_16F ? 4 : 1), "y");
        qkv->expect_close(fwd_rtol(dt), fwd_atol(dt), "qkv");
      }
      lse->expect_close(1e-4f, dt == CCV_16F ? 1e-3f : 1e-4f, "lse");  // -inf rows compare equal
    }
}

// g, and the forward's o / lse (run on each side's own backend) for a backward.
void backward_case(const Case& c, int dt, int outputs, std::mt19937& rng) {
  SCOPED_TRACE(c.name(dt) + " outputs " + std::to_string(outputs));
  Inputs in(c, dt, rng);
  BothPtr lse = both({c.lse_shape(), false, CCV_32F}, rng);
  BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), false, dt}, rng);
  BothPtr y = c.fused ? both({{c.B, c.Sq, c.Nout}, false, dt}, rng) : nullptr;
  std::vector<Both*> fin = in.list();
  if (!c.fused) fin.resize(4);
  if (c.fused && !c.bias) fin.pop_back();
  if (c.fused)
    run_both(c.cmd(FWD), fin, {y.get(), lse.get(), o.get()}, "forward");
  else
    run_both(c.cmd(FWD), fin, {o.get(), lse.get()}, "forward");
  BothPtr g =
      c.fused ? both({{c.B, c.Sq, c.Nout}, c.views, dt}, rng) : both({c.shape(c.Sq, c.H, c.Dv), c.views, dt}, rng);
  BothPtr dq = both({c.shape(c.Sq, c.H, c.D), c.views, dt}, rng),
          dk = both({c.shape(c.Sk, c.Hk, c.D), c.views, dt}, rng),
          dv = both({c.shape(c.Sk, c.Hk, c.Dv), c.views, dt}, rng);
  BothPtr dw = c.fused ? both({{c.Nout, c.H * c.Dv}, false, dt}, rng) : nullptr;
  BothPtr db = c.fused && c.bias ? both({{c.Nout}, false, dt}, rng) : nullptr;
  std::vector<Both*> bin = {g.get(),       nullptr,
                            nullptr,       in.q.get(),
                            in.k.get(),    in.v.get(),
                            in.mask.get(), in.w.get(),
                            in.bias.get(), c.fused ? nullptr : o.get(),
                            lse.get(),     c.fused ? o.get() : nullptr};
  std::vector<Both*> bout = {(outputs & 1) ? dq.get() : nullptr, (outputs & 2) ? dk.get() : nullptr,
                             (outputs & 4) ? dv.get() : nullptr};
  if (c.fused) bout.insert(bout.end(), {nullptr, dw.get(), db.get()});
  run_both(c.cmd(BWD), bin, bout, "backward");
  // Outputs not asked for keep their (equal) initial contents on both sides.
  dq->expect_close(bwd_rtol(dt), bwd_atol(dt), "dq");
  dk->expect_close(bwd_rtol(dt), bwd_atol(dt), "dk");
  dv->expect_close(bwd_rtol(dt), bwd_atol(dt), "dv");
  // dw, dbias: sums over B * Sq rows of g times o (or g): an fp16 rounding of values up to ~B * Sq / 2.
  if (dw) dw->expect_close(bwd_rtol(dt), bwd_atol(dt) * (dt == CCV_16F ? 8 : 1), "dw");
  if (db) db->expect_close(bwd_rtol(dt), bwd_atol(dt) * (dt == CCV_16F ? 8 : 1), "dbias");
}

TEST(AttnGpu, BackwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1942);
  for (int dt : {CCV_32F, CCV_16F})
    for (const Case& c : cases()) backward_case(c, dt, 7, rng);
}

TEST(AttnGpu, BackwardEveryOutputSubset) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1943);
  const std::vector<Case> cs = cases();
  for (int outputs = 1; outputs < 7; outputs++) {
    backward_case(cs[1], CCV_32F, outputs, rng);  // causal GQA
    backward_case(cs[7], CCV_32F, outputs, rng);  // fused (dw, dbias always)
  }
}

// Many chunks: NNC_GPU_ATTN_CHUNK_BYTES=1 makes every (batch, kv head) unit a
// chunk of its own, so the chunk offsets of rows, scratch and gradient
// elements are all exercised (by default these shapes fit one chunk).
TEST(AttnGpu, OneUnitPerChunk) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1949);
  setenv("NNC_GPU_ATTN_CHUNK_BYTES", "1", 1);
  const std::vector<Case> cs = cases();
  for (const Case& c : {cs[1], cs[4], cs[6], cs[7]}) backward_case(c, CCV_32F, 7, rng);
  unsetenv("NNC_GPU_ATTN_CHUNK_BYTES");
}

// Without lse (and o) the GPU backward recomputes them (CPU_REF always does).
TEST(AttnGpu, BackwardWithoutSavedLse) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1944);
  for (const Case& c : {cases()[2], cases()[3]}) {
    SCOPED_TRACE(c.name(CCV_32F));
    Inputs in(c, CCV_32F, rng);
    BothPtr g = both({c.shape(c.Sq, c.H, c.Dv), c.views, CCV_32F}, rng);
    BothPtr dq = both({c.shape(c.Sq, c.H, c.D), false, CCV_32F}, rng),
            dk = both({c.shape(c.Sk, c.Hk, c.D), false, CCV_32F}, rng),
            dv = both({c.shape(c.Sk, c.Hk, c.Dv), false, CCV_32F}, rng);
    run_both(c.cmd(BWD), {g.get(), nullptr, nullptr, in.q.get(), in.k.get(), in.v.get(), in.mask.get()},
             {dq.get(), dk.get(), dv.get()}, "backward without lse");
    dq->expect_close(5e-4f, 5e-4f, "dq");
    dk->expect_close(5e-4f, 5e-4f, "dk");
    dv->expect_close(5e-4f, 5e-4f, "dv");
  }
}

// The lse layout is the CPU family's: CPU_OPT's backward (which reads lse and
// o as saved) run on the GPU forward's lse and o gives CPU_REF's gradients,
// and the GPU backward run on CPU_REF's lse does too.
TEST(AttnGpu, LseIsSharedWithTheCpuFamily) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1945);
  Case c = cases()[1];
  Inputs in(c, CCV_32F, rng);
  BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_32F}, rng), lse = both({c.lse_shape(), false, CCV_32F}, rng);
  run_both(c.cmd(FWD), {in.q.get(), in.k.get(), in.v.get()}, {o.get(), lse.get()}, "forward");
  Owned gpu_o = to_cpu(o->gpu()), gpu_lse = to_cpu(lse->gpu());
  BothPtr g = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_32F}, rng);
  auto grads = [&](ccv_nnc_tensor_t* oo, ccv_nnc_tensor_t* ll, uint32_t backend, bool gpu) {
    std::vector<Owned> out;
    for (const std::vector<int>& s : {c.shape(c.Sq, c.H, c.D), c.shape(c.Sk, c.Hk, c.D), c.shape(c.Sk, c.Hk, c.Dv)})
      out.emplace_back(param_of(s, CCV_32F, CCV_TENSOR_FORMAT_NHWC, gpu));
    ccv_nnc_cmd_t cmd = c.cmd(BWD);
    cmd.backend = backend;
    auto side = [&](const BothPtr& b) { return gpu ? b->gpu() : b->cpu(); };
    EXPECT_EQ(exec(cmd, ccv_nnc_no_hint,
                   {side(g), nullptr, nullptr, side(in.q), side(in.k), side(in.v), nullptr, nullptr, nullptr, oo, ll},
                   {out[0].t, out[1].t, out[2].t}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    return out;
  };
  std::vector<Owned> ref = grads(o->cpu(), lse->cpu(), CCV_NNC_BACKEND_CPU_REF, false);
  std::vector<Owned> opt = grads(gpu_o.t, gpu_lse.t, CCV_NNC_BACKEND_CPU_OPT, false);  // the GPU's saved tensors
  Owned cpu_lse_on_gpu = to_gpu(lse->cpu()), cpu_o_on_gpu = to_gpu(o->cpu());
  std::vector<Owned> gpu = grads(cpu_o_on_gpu.t, cpu_lse_on_gpu.t, CCV_NNC_BACKEND_GPU_REF, true);  // CPU_REF's
  for (int i = 0; i < 3; i++) {
    expect_close(opt[i].t, ref[i].t, 5e-4f, 5e-4f, "CPU_OPT backward on the GPU forward's lse");
    expect_close(gpu[i].t, ref[i].t, 5e-4f, 5e-4f, "GPU backward on CPU_REF's lse");
  }
}

// On a GPU stream context the call returns once queued; the results are there after a wait.
TEST(AttnGpu, OnAStream) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1946);
  Case c = cases()[3];
  Inputs in(c, CCV_32F, rng);
  BothPtr o = both({c.shape(c.Sq, c.H, c.Dv), c.views, CCV_32F}, rng), lse = both({c.lse_shape(), false, CCV_32F}, rng);
  ccv_nnc_cmd_t cmd = c.cmd(FWD);
  cmd.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(cmd, ccv_nnc_no_hint, {in.q->cpu(), in.k->cpu(), in.v->cpu(), in.mask->cpu()}, {o->cpu(), lse->cpu()}),
            CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  cmd.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(
      exec(cmd, ccv_nnc_no_hint, {in.q->gpu(), in.k->gpu(), in.v->gpu(), in.mask->gpu()}, {o->gpu(), lse->gpu()}, s),
      CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  o->expect_close(1e-4f, 1e-4f, "o on a stream");
  lse->expect_close(1e-4f, 1e-4f, "lse on a stream");
}

// No atomics anywhere: two runs give the same bits (libnnc's
// scaled_dot_product_attention.deterministic asks for that; we always are).
// flags (the preferred accumulator) does not change the fp32 accumulation.
TEST(AttnGpu, DeterministicWhateverTheFlags) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1948);
  Case c = cases()[6];  // the long causal GQA case with a full mask
  Inputs in(c, CCV_16F, rng);
  BothPtr g = both({c.shape(c.Sq, c.H, c.Dv), false, CCV_16F}, rng);
  std::vector<Owned> runs;
  for (int flags : {0, 1, 2}) {
    ccv_nnc_cmd_t f = c.cmd(FWD), b = c.cmd(BWD);
    f.info.scaled_dot_product_attention.flags = b.info.scaled_dot_product_attention.flags = flags;
    f.info.scaled_dot_product_attention.deterministic = b.info.scaled_dot_product_attention.deterministic = flags & 1;
    f.backend = b.backend = CCV_NNC_BACKEND_GPU_REF;
    Owned o(param_of(c.shape(c.Sq, c.H, c.Dv), CCV_16F, CCV_TENSOR_FORMAT_NHWC, true));
    Owned lse(param_of(c.lse_shape(), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true));
    Owned dq(param_of(c.shape(c.Sq, c.H, c.D), CCV_16F, CCV_TENSOR_FORMAT_NHWC, true));
    Owned dk(param_of(c.shape(c.Sk, c.Hk, c.D), CCV_16F, CCV_TENSOR_FORMAT_NHWC, true));
    Owned dv(param_of(c.shape(c.Sk, c.Hk, c.Dv), CCV_16F, CCV_TENSOR_FORMAT_NHWC, true));
    ASSERT_EQ(exec(f, ccv_nnc_no_hint, {in.q->gpu(), in.k->gpu(), in.v->gpu(), in.mask->gpu()}, {o.t, lse.t}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ASSERT_EQ(exec(b, ccv_nnc_no_hint,
                   {g->gpu(), nullptr, nullptr, in.q->gpu(), in.k->gpu(), in.v->gpu(), in.mask->gpu(), nullptr, nullptr,
                    o.t, lse.t},
                   {dq.t, dk.t, dv.t}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (Owned* t : {&o, &lse, &dq, &dk, &dv}) runs.push_back(to_cpu(t->t));
  }
  for (size_t r = 1; r < 3; r++)
    for (size_t i = 0; i < 5; i++) {
      const ccv_nnc_tensor_t* a = runs[i].t;
      const ccv_nnc_tensor_t* b = runs[r * 5 + i].t;
      const size_t bytes = ccv_nnc_tensor_count(a->info) * (CCV_GET_DATA_TYPE(a->info.datatype) == CCV_16F ? 2 : 4);
      EXPECT_EQ(std::memcmp(a->data.u8, b->data.u8, bytes), 0) << "run " << r << " output " << i;
    }
}

// Errors, not crashes: the family's checks (with messages) and the GPU's own refusals.
TEST(AttnGpu, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1947);
  ccv_nnc_cmd_t cmd = make_cmd(FWD);
  cmd.info.scaled_dot_product_attention.scale = 0.5f;
  cmd.backend = CCV_NNC_BACKEND_GPU_REF;
  BothPtr q = both({{1, 4, 2, 8}}, rng), k = both({{1, 5, 2, 8}}, rng), v = both({{1, 5, 2, 6}}, rng);
  BothPtr o = both({{1, 4, 2, 6}}, rng);
  // k's head size differs from q's.
  BothPtr kbad = both({{1, 5, 2, 7}}, rng);
  EXPECT_EQ(exec(cmd, ccv_nnc_no_hint, {q->gpu(), kbad->gpu(), v->gpu()}, {o->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("head sizes"), std::string::npos) << ccv_nnc_error_message();
  // 3 kv heads do not divide 2 query heads... (q 2 heads, k 3)
  BothPtr k3 = both({{1, 5, 3, 8}}, rng), v3 = both({{1, 5, 3, 6}}, rng);
  EXPECT_EQ(exec(cmd, ccv_nnc_no_hint, {q->gpu(), k3->gpu(), v3->gpu()}, {o->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("divide"), std::string::npos) << ccv_nnc_error_message();
  // A mask that does not broadcast.
  BothPtr mbad = both({{3, 5}}, rng);
  EXPECT_EQ(exec(cmd, ccv_nnc_no_hint, {q->gpu(), k->gpu(), v->gpu(), mbad->gpu()}, {o->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("broadcast"), std::string::npos) << ccv_nnc_error_message();
  // 64F: no GPU kernel takes it.
  BothPtr qd = both({{1, 4, 2, 8}, false, CCV_64F}, rng), kd = both({{1, 5, 2, 8}, false, CCV_64F}, rng),
          vd = both({{1, 5, 2, 6}, false, CCV_64F}, rng), od = both({{1, 4, 2, 6}, false, CCV_64F}, rng);
  EXPECT_NE(exec(cmd, ccv_nnc_no_hint, {qd->gpu(), kd->gpu(), vd->gpu()}, {od->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A CPU tensor among GPU ones: not taken.
  EXPECT_NE(exec(cmd, ccv_nnc_no_hint, {q->gpu(), k->cpu(), v->gpu()}, {o->gpu()}), CCV_NNC_EXEC_SUCCESS);
}

}  // namespace
