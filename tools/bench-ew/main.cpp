// bench-ew: the element-wise and broadcasting CPU_OPT kernels, and a fully
// connected layer, against PyTorch's CPU kernels on the same shapes, both on
// NNC's thread count (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets
// both), with preallocated outputs on both sides.
//
//   bench-ew
//
// 1. ADD_FORWARD(1, 1) of a bias row: x [64, 3136] + b [3136] -> y [64, 3136]
//    (at::add_out(y, x, b)), and its backward's bias gradient, ADD_BACKWARD
//    with g alone -> (NULL, db [3136]) (at::sum_out(db, g, {0})).
// 2. ADD_FORWARD(1, 1) per channel on 32 x 64 x 56 x 56: NCHW with b
//    [1, 64, 1, 1] (at::add_out into a contiguous y), NHWC 32 x 56 x 56 x 64
//    with b [64] (at::add_out into a channels_last y); and the bias gradient,
//    ADD_BACKWARD -> db (at::sum_out over {0, 2, 3}).
// 3. EWPROD_FORWARD of two 32 x 64 x 56 x 56 tensors (at::mul_out).
// 4. Dense 3136 -> 256 at batch 64: GEMM_FORWARD(NO_TRANSPOSE,
//    TRANSPOSE(0, 1)) of x [64, 3136], w [256, 3136], bias [256] -> y [64, 256]
//    (at::addmm_out(y, bias, x, w.t())); GEMM_BACKWARD (g, x, w) -> (dx, dw,
//    dbias) (at::mm_out(dx, g, w), at::mm_out(dw, g.t(), x),
//    at::sum_out(db, g, {0})); then each backward output alone on both sides.
// The two sides run in alternating rounds (see race()) so that load from
// other processes hits both alike. Times are medians of single calls in
// milliseconds; ratio = NNC / PyTorch (below 1: faster).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

ccv_nnc_tensor_param_t param(std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

struct Tensor {
  ccv_nnc_tensor_t* t;
  explicit Tensor(std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC)
      : t(ccv_nnc_tensor_new(nullptr, param(dims, format), 0)) {}
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  operator ccv_nnc_tensor_t*() const { return t; }
  size_t count() const {
    size_t n = 1;
    for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
    return n;
  }
  void fill(std::mt19937& rng) const {
    std::uniform_real_distribution<float> d(-1, 1);
    for (size_t i = 0; i < count(); i++) t->data.f32[i] = d(rng);
  }
};

ccv_nnc_cmd_t cmd_with(uint32_t id, float p, float q) {
  ccv_nnc_cmd_param_t prm;
  std::memset(&prm, 0, sizeof(prm));
  prm.size.dim[0] = prm.size.dim[1] = prm.size.dim[2] = 1;
  prm.blas.a[0] = p, prm.blas.a[1] = q;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, prm, 0);
  c.backend = CCV_NNC_BACKEND_CPU_OPT;
  return c;
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

using Fn = std::function<void()>;

double median(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Milliseconds per call of each side: three rounds, alternating sides, each
// round nnc_bench::time_ms (the median of single calls, as the other bench
// programs report) with a 10 ms sleep after it so that one side's spinning
// workers (libgomp's, OpenBLAS's, the pool's) are idle when the other starts;
// the median of the three round medians. peer may be empty (no libtorch in
// this build: -1).
std::pair<double, double> race(const Fn& ours, const Fn& peer) {
  std::vector<double> a, b;
  for (int r = 0; r < 3; r++)
    for (int side = 0; side < 2; side++) {
      const bool mine = (side == 0) == (r % 2 == 0);
      if (!mine && !peer) continue;
      (mine ? a : b).push_back(nnc_bench::time_ms(mine ? ours : peer, 3, 150, 7, 3000));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  return {median(a), peer ? median(b) : -1};
}

Fn exec(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
        const char* what) {
  return [cmd, in, out, what] {
    check(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                           static_cast<int>(out.size()), nullptr),
          what);
  };
}

void row(nnc_bench::Table& table, const std::string& name, const Fn& ours, const Fn& peer) {
  const auto [o, p] = race(ours, peer);
  table.row(name, o, p);
}

}  // namespace

int main() {
  ccv_nnc_init();
  nnc_bench::header_torch();
#ifdef NNC_HAVE_TORCH
  at::manual_seed(1);
#endif
  std::mt19937 rng(7);
  const ccv_nnc_cmd_t add = cmd_with(CCV_NNC_ADD_FORWARD, 1, 1), add_back = cmd_with(CCV_NNC_ADD_BACKWARD, 1, 1);
  {
    nnc_bench::Table table("ADD with a broadcast bias row, fp32", "PyTorch");
    Tensor x({64, 3136}), b({3136}), y({64, 3136}), db({3136});
    x.fill(rng), b.fill(rng);
    Fn tf, tb;
#ifdef NNC_HAVE_TORCH
    at::Tensor tx = at::rand({64, 3136}), tbias = at::rand({3136}), ty = at::empty({64, 3136}),
               tdb = at::empty({3136});
    tf = [&] { at::add_out(ty, tx, tbias); };
    tb = [&] { at::sum_out(tdb, tx, {0}); };
#endif
    row(table, "(64, 3136) + (3136) forward", exec(add, {x, b}, {y}, "ADD bias"), tf);
    row(table, "  backward db = sum over the batch", exec(add_back, {x}, {nullptr, db}, "ADD_BACKWARD bias"), tb);
  }
  {
    nnc_bench::Table table("ADD per channel on 32x64x56x56, fp32", "PyTorch");
    for (bool nhwc : {false, true}) {
      const int fmt = nhwc ? CCV_TENSOR_FORMAT_NHWC : CCV_TENSOR_FORMAT_NCHW;
      const std::vector<int> shape = nhwc ? std::vector<int>{32, 56, 56, 64} : std::vector<int>{32, 64, 56, 56};
      const std::vector<int> bshape = nhwc ? std::vector<int>{64} : std::vector<int>{1, 64, 1, 1};
      Tensor x(shape, fmt), y(shape, fmt), b(bshape, fmt), db(bshape, fmt);
      x.fill(rng), b.fill(rng);
      Fn tf, tb;
#ifdef NNC_HAVE_TORCH
      const auto mf = nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
      at::Tensor tx = at::rand({32, 64, 56, 56}).contiguous(mf), tbias = at::rand({1, 64, 1, 1});
      at::Tensor ty = at::empty({32, 64, 56, 56}).contiguous(mf), tdb = at::empty({64});
      tf = [&] { at::add_out(ty, tx, tbias); };
      tb = [&] { at::sum_out(tdb, tx, {0, 2, 3}); };
#endif
      const std::string layout = nhwc ? "NHWC (channels_last) + (64)" : "NCHW + (1, 64, 1, 1)";
      row(table, layout + " forward", exec(add, {x, b}, {y}, "ADD per channel"), tf);
      row(table, "  backward db = sum over N, H, W", exec(add_back, {x}, {nullptr, db}, "ADD_BACKWARD per channel"),
          tb);
    }
  }
  {
    nnc_bench::Table table("EWPROD of two 32x64x56x56 fp32 tensors", "PyTorch");
    Tensor a({32, 64, 56, 56}), b({32, 64, 56, 56}), y({32, 64, 56, 56});
    a.fill(rng), b.fill(rng);
    Fn peer;
#ifdef NNC_HAVE_TORCH
    at::Tensor ta = at::rand({32, 64, 56, 56}), tb = at::rand({32, 64, 56, 56}), ty = at::empty({32, 64, 56, 56});
    peer = [&] { at::mul_out(ty, ta, tb); };
#endif
    row(table, "a * b", exec(cmd_with(CCV_NNC_EWPROD_FORWARD, 1, 1), {a, b}, {y}, "EWPROD"), peer);
  }
  {
    nnc_bench::Table table("Dense 3136 -> 256 at batch 64, fp32 (GEMM with bias, w [256, 3136] transposed)",
                           "PyTorch");
    Tensor x({64, 3136}), w({256, 3136}), bias({256}), y({64, 256}), g({64, 256});
    Tensor dx({64, 3136}), dw({256, 3136}), dbias({256});
    x.fill(rng), w.fill(rng), bias.fill(rng), g.fill(rng);
    ccv_nnc_cmd_t fwd = cmd_with(CCV_NNC_GEMM_FORWARD, 1, 1), bwd = cmd_with(CCV_NNC_GEMM_BACKWARD, 1, 1);
    fwd.info.blas.transpose_b[0] = bwd.info.blas.transpose_b[0] = 0;
    fwd.info.blas.transpose_b[1] = bwd.info.blas.transpose_b[1] = 1;
    const Fn nf = exec(fwd, {x, w, bias}, {y}, "GEMM_FORWARD");
    const Fn nb = exec(bwd, {g, x, w}, {dx, dw, dbias}, "GEMM_BACKWARD");
    Fn tf, tb, tdx, tdw, tdb, tt;
#ifdef NNC_HAVE_TORCH
    at::Tensor tx = at::rand({64, 3136}), tw = at::rand({256, 3136}), tbias = at::rand({256}),
               tg = at::rand({64, 256});
    at::Tensor ty = at::empty({64, 256}), tdx_ = at::empty({64, 3136}), tdw_ = at::empty({256, 3136}),
               tdb_ = at::empty({256});
    tf = [&] { at::addmm_out(ty, tbias, tx, tw.t()); };
    tdx = [&] { at::mm_out(tdx_, tg, tw); };
    tdw = [&] { at::mm_out(tdw_, tg.t(), tx); };
    tdb = [&] { at::sum_out(tdb_, tg, {0}); };
    tb = [&] {
      tdx();
      tdw();
      tdb();
    };
    tt = [&] {
      tf();
      tb();
    };
#endif
    row(table, "forward + backward", [&] { nf(), nb(); }, tt);
    row(table, "  forward y = x w^T + bias", nf, tf);
    row(table, "  backward dx, dw, dbias", nb, tb);
    row(table, "    dx = g w alone", exec(bwd, {g, x, w}, {dx, nullptr, nullptr}, "GEMM_BACKWARD dx"), tdx);
    row(table, "    dw = g^T x alone", exec(bwd, {g, x, w}, {nullptr, dw, nullptr}, "GEMM_BACKWARD dw"), tdw);
    row(table, "    dbias = sum of g alone", exec(bwd, {g, x, w}, {nullptr, nullptr, dbias}, "GEMM_BACKWARD dbias"),
        tdb);
  }
  return 0;
}
