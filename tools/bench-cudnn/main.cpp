// bench-cudnn: the reference network's convolution and pooling commands at
// batch 64 on GPU 0 through ccv_nnc_cmd_exec (GPU_CUDNN), fp32 (no TF32), in
// NHWC and NCHW: once with cuDNN's heuristics, once with the command that
// ccv_nnc_cmd_autotune returns. Each call synchronises (NNC's synchronous
// calls do), so the figures include it. Median of 20 after 5 warm-ups. The
// 32 -> 64 layer also in 16F and 16BF (cuDNN HALF / BFLOAT16 storage, fp32
// compute, tensor-op math). Convolution rows add a third timing: the same
// call through cuDNN's graph API (NNC_CUDNN_GRAPH=2: graph only, so a shape
// it has no plan for says so instead of timing the legacy calls), and its
// ratio to the heuristics' (< 1: the graph API faster).
// tools/bench-cudnn/peer.py prints PyTorch's figures for the same calls.
// Then LAYER_NORM / RMSNORM over the last axis of [8192, 1024] and
// [4096, 4096], forward and backward (dx, dscale, dbias), 32F / 16F / 16BF:
// GPU_REF (the row kernels), GPU_CUDNN where it takes the call (32F), and
// PyTorch's F.layer_norm / rms_norm on the same GPU (peer.py --norm, run
// from here when python3 and torch are there), with ratios and GPU_REF's
// effective bandwidth (the bytes a single pass must move).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

int g_type = CCV_32F;  // the datatype of the tensors gpu() makes
ccv_nnc_tensor_t* gpu(std::vector<int> d, int format) { return nnc_bench::gpu_tensor(d, g_type, format, 0); }

std::vector<int> img(int n, int h, int w, int c, int format) {
  return format == CCV_TENSOR_FORMAT_NHWC ? std::vector<int>{n, h, w, c} : std::vector<int>{n, c, h, w};
}

ccv_nnc_hint_t pad(int p, int s) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = h.stride.dim[1] = s;
  h.border.begin[0] = h.border.begin[1] = h.border.end[0] = h.border.end[1] = p;
  return h;
}

// ms per call of cmd through cuDNN's graph API (NNC_CUDNN_GRAPH=2 for the
// call); negative when it has no plan (*why: the message).
double graph_ms(ccv_nnc_cmd_t cmd, ccv_nnc_hint_t hint, std::vector<ccv_nnc_tensor_t*>& in,
                std::vector<ccv_nnc_tensor_t*>& out, std::string* why) {
  const int is = static_cast<int>(in.size()), os = static_cast<int>(out.size());
  setenv("NNC_CUDNN_GRAPH", "2", 1);
  setenv("NNC_CUDNN_GRAPH_VERBOSE", "1", 1);  // the engine it plans with, once per shape, on stderr
  double ms = -1;
  if (ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), is, out.data(), os, nullptr) == CCV_NNC_EXEC_SUCCESS)
    ms = nnc_bench::gpu_median_ms([&] { ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), is, out.data(), os, nullptr); });
  else
    *why = ccv_nnc_error_message();
  unsetenv("NNC_CUDNN_GRAPH");
  unsetenv("NNC_CUDNN_GRAPH_VERBOSE");
  return ms;
}

void row(const char* name, ccv_nnc_cmd_t cmd, ccv_nnc_hint_t hint, std::vector<ccv_nnc_tensor_t*> in,
         std::vector<ccv_nnc_tensor_t*> out, bool graph = false) {
  if (!nnc_bench::first_call(name, 34, cmd, hint, in, out)) return;
  const int is = static_cast<int>(in.size()), os = static_cast<int>(out.size());
  const double heur =
      nnc_bench::gpu_median_ms([&] { ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), is, out.data(), os, nullptr); });
  const ccv_nnc_cmd_t tuned = ccv_nnc_cmd_autotune(cmd, 0, hint, 0, in.data(), is, out.data(), os, nullptr);
  const double tune =
      nnc_bench::gpu_median_ms([&] { ccv_nnc_cmd_exec(tuned, hint, 0, in.data(), is, out.data(), os, nullptr); });
  if (!graph) {
    std::printf("%-34s %12.4f %12.4f %10d\n", name, heur, tune, tuned.algorithm);
    return;
  }
  std::string why;
  const double g = graph_ms(cmd, hint, in, out, &why);
  if (g > 0) {
    std::printf("%-34s %12.4f %12.4f %10d %12.4f %10.2f\n", name, heur, tune, tuned.algorithm, g, g / heur);
  } else {
    std::printf("%-34s %12.4f %12.4f %10d %12s %10s\n", name, heur, tune, tuned.algorithm, "no plan", "-");
    std::printf("  graph API: %.300s\n", why.c_str());
  }
}

// PyTorch's norm rows (peer.py --norm: "name ms" lines), by name; empty
// when python3, torch or the GPU is not there for it.
std::map<std::string, double> norm_peer() {
  std::map<std::string, double> m;
  const char* py = std::getenv("NNC_BENCH_PYTHON");
  const std::string cmd = std::string(py ? py : "python3") + " tools/bench-cudnn/peer.py --norm 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof(line), f)) {
    std::string l(line);
    const size_t bar = l.find('|');
    if (bar == std::string::npos) continue;
    m[l.substr(0, bar)] = std::atof(l.c_str() + bar + 1);
  }
  pclose(f);
  return m;
}

ccv_nnc_tensor_t* zeros(std::vector<int> d, int dt) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_GPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = dt;
  for (size_t i = 0; i < d.size(); i++) p.dim[i] = d[i];
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
  if (t) cudaMemset(t->data.u8, 0, ccv_nnc_tensor_count(p) * (dt == CCV_32F ? 4 : 2));
  return t;
}

// ms per call of cmd on `backend`; negative when it does not take the call.
double norm_ms(ccv_nnc_cmd_t cmd, int backend, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  cmd.backend = backend;
  const int is = static_cast<int>(in.size()), os = static_cast<int>(out.size());
  if (ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), is, out.data(), os, nullptr) != CCV_NNC_EXEC_SUCCESS)
    return -1;
  return nnc_bench::gpu_median_ms(
      [&] { ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), is, out.data(), os, nullptr); });
}

void norm_rows() {
  const std::map<std::string, double> peer = norm_peer();
  std::printf(
      "\nLAYER_NORM / RMSNORM over the last axis; ms per call (median of 20, synchronised); ratios: the other "
      "over GPU_REF (> 1: GPU_REF faster)%s\n",
      peer.empty() ? "; PyTorch: not run (python3 / torch / tools/bench-cudnn/peer.py not found)" : "");
  std::printf("%-30s %10s %8s %10s %8s %10s %8s\n", "command", "GPU_REF", "GB/s", "GPU_CUDNN", "ratio", "PyTorch",
              "ratio");
  struct Shape {
    int rows, cols;
  };
  for (const Shape sh : {Shape{8192, 1024}, Shape{4096, 4096}})
    for (int dt : {CCV_32F, CCV_16F, CCV_16BF})
      for (int rms : {0, 1}) {
        const char* tn = dt == CCV_32F ? "32F" : dt == CCV_16F ? "16F" : "16BF";
        const int es = dt == CCV_32F ? 4 : 2;
        const std::vector<int> xd = {sh.rows, sh.cols}, sd = {1, sh.cols}, md = {sh.rows, 1};
        ccv_nnc_tensor_t *x = zeros(xd, dt), *y = zeros(xd, dt), *g = zeros(xd, dt), *dx = zeros(xd, dt);
        ccv_nnc_tensor_t *sc = zeros(sd, dt), *bi = zeros(sd, dt), *ds = zeros(sd, dt), *db = zeros(sd, dt);
        ccv_nnc_tensor_t *mean = zeros(md, dt), *inv = zeros(md, dt);
        ccv_nnc_cmd_param_t cp;
        std::memset(&cp, 0, sizeof(cp));
        ccv_nnc_cmd_t f, b;
        std::vector<ccv_nnc_tensor_t*> fi, fo, bi_, bo;
        if (rms) {
          cp.rmsnorm.count = 1, cp.rmsnorm.axis[0] = 1, cp.rmsnorm.epsilon = 1e-5f;
          f = ccv_nnc_cmd(CCV_NNC_RMSNORM_FORWARD, nullptr, cp, 0);
          b = ccv_nnc_cmd(CCV_NNC_RMSNORM_BACKWARD, nullptr, cp, 0);
          fi = {x, sc}, fo = {y, inv}, bi_ = {g, nullptr, x, sc, y, inv}, bo = {dx, ds};
        } else {
          cp.lnorm.count = 1, cp.lnorm.axis[0] = 1, cp.lnorm.epsilon = 1e-5f, cp.lnorm.elementwise_affine = 1;
          f = ccv_nnc_cmd(CCV_NNC_LAYER_NORM_FORWARD, nullptr, cp, 0);
          b = ccv_nnc_cmd(CCV_NNC_LAYER_NORM_BACKWARD, nullptr, cp, 0);
          fi = {x, sc, bi}, fo = {y, mean, inv}, bi_ = {g, nullptr, nullptr, x, sc, bi, y, mean, inv},
          bo = {dx, ds, db};
        }
        for (int back : {0, 1}) {
          char name[64];
          std::snprintf(name, sizeof(name), "%s %s %dx%d %s", rms ? "RMSNORM" : "LAYER_NORM", back ? "bwd" : "fwd",
                        sh.rows, sh.cols, tn);
          const ccv_nnc_cmd_t c = back ? b : f;
          const double ref = norm_ms(c, CCV_NNC_BACKEND_GPU_REF, back ? bi_ : fi, back ? bo : fo);
          const double cud =
              dt == CCV_32F ? norm_ms(c, CCV_NNC_BACKEND_GPU_CUDNN, back ? bi_ : fi, back ? bo : fo) : -1;
          // One pass: forward reads x, writes y; backward reads g and x, writes dx.
          const double bytes = static_cast<double>(sh.rows) * sh.cols * es * (back ? 3 : 2);
          const auto it = peer.find(name);
          const double pt = it == peer.end() ? -1 : it->second;
          std::printf("%-30s", name);
          if (ref > 0)
            std::printf(" %10.4f %8.0f", ref, bytes / (ref * 1e6));
          else
            std::printf(" %10s %8s", "failed", "-");
          if (cud > 0 && ref > 0)
            std::printf(" %10.4f %8.2f", cud, cud / ref);
          else
            std::printf(" %10s %8s", "-", "-");
          if (pt > 0 && ref > 0)
            std::printf(" %10.4f %8.2f\n", pt, pt / ref);
          else
            std::printf(" %10s %8s\n", "-", "-");
        }
        for (ccv_nnc_tensor_t* t : {x, y, g, dx, sc, bi, ds, db, mean, inv})
          if (t) ccv_nnc_tensor_free(t);
      }
}

}  // namespace

int main() {
  if (!nnc_bench::gpu_start()) return 0;
  std::printf("GPU 0: %s; GPU_CUDNN, fp32 (and 16F / 16BF rows); ms per call (median of 20, synchronised)\n",
              nnc_bench::gpu0_name().c_str());
  std::printf("%-34s %12s %12s %10s %12s %10s\n", "command (batch 64)", "heuristics", "autotuned", "algorithm", "graph",
              "graph/heur");
  const int N = 64;
  for (int dt : {CCV_32F, CCV_16F, CCV_16BF}) {
    for (int f : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW}) {
      g_type = dt;
      const char* fmt = dt == CCV_32F   ? (f == CCV_TENSOR_FORMAT_NHWC ? "NHWC" : "NCHW")
                        : dt == CCV_16F ? (f == CCV_TENSOR_FORMAT_NHWC ? "NHWC 16F" : "NCHW 16F")
                                        : (f == CCV_TENSOR_FORMAT_NHWC ? "NHWC 16BF" : "NCHW 16BF");
      struct Layer {
        int H, C, K;
      };
      for (const Layer l : {Layer{28, 1, 32}, Layer{14, 32, 64}}) {
        if (dt != CCV_32F && l.C == 1) continue;  // 16-bit rows: the 32 -> 64 layer only (a short run)
        ccv_nnc_tensor_t* x = gpu(img(N, l.H, l.H, l.C, f), f);
        ccv_nnc_tensor_t* w =
            gpu(f == CCV_TENSOR_FORMAT_NHWC ? std::vector<int>{l.K, 5, 5, l.C} : std::vector<int>{l.K, l.C, 5, 5}, f);
        ccv_nnc_tensor_t* b = gpu({l.K}, f);
        ccv_nnc_tensor_t* y = gpu(img(N, l.H, l.H, l.K, f), f);
        ccv_nnc_tensor_t* dx = gpu(img(N, l.H, l.H, l.C, f), f);
        ccv_nnc_tensor_t* dw =
            gpu(f == CCV_TENSOR_FORMAT_NHWC ? std::vector<int>{l.K, 5, 5, l.C} : std::vector<int>{l.K, l.C, 5, 5}, f);
        ccv_nnc_tensor_t* db = gpu({l.K}, f);
        ccv_nnc_tensor_t* p = gpu(img(N, l.H / 2, l.H / 2, l.K, f), f);
        ccv_nnc_tensor_t* dy = gpu(img(N, l.H, l.H, l.K, f), f);
        if (!x || !w || !b || !y || !dx || !dw || !db || !p || !dy) {
          std::printf("allocation failed: %s\n", ccv_nnc_error_message());
          return 1;
        }
        ccv_nnc_cmd_param_t cp;
        std::memset(&cp, 0, sizeof(cp));
        cp.size.dim[0] = cp.size.dim[1] = 5, cp.size.dim[2] = l.C;
        cp.convolution.count = l.K;
        cp.convolution.groups = 1;
        const ccv_nnc_cmd_t fwd = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_FORWARD, nullptr, cp, 0);
        const ccv_nnc_cmd_t bwd = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_BACKWARD, nullptr, cp, 0);
        char name[64];
        std::snprintf(name, sizeof(name), "conv fwd %d->%d %s", l.C, l.K, fmt);
        row(name, fwd, pad(2, 1), {x, w, b}, {y}, true);
        std::snprintf(name, sizeof(name), "conv bwd %s %d->%d %s", l.C == 1 ? "dw db" : "dx dw db", l.C, l.K, fmt);
        if (l.C == 1)
          row(name, bwd, pad(2, 1), {y, x, nullptr}, {nullptr, dw, db}, true);
        else
          row(name, bwd, pad(2, 1), {y, x, w}, {dx, dw, db}, true);
        ccv_nnc_cmd_param_t pp;
        std::memset(&pp, 0, sizeof(pp));
        pp.size.dim[0] = pp.size.dim[1] = 2, pp.size.dim[2] = 1;
        std::snprintf(name, sizeof(name), "max pool fwd %d %s", l.K, fmt);
        row(name, ccv_nnc_cmd(CCV_NNC_MAX_POOL_FORWARD, nullptr, pp, 0), pad(0, 2), {y}, {p});
        std::snprintf(name, sizeof(name), "max pool bwd %d %s", l.K, fmt);
        row(name, ccv_nnc_cmd(CCV_NNC_MAX_POOL_BACKWARD, nullptr, pp, 0), pad(0, 2), {p, y, p}, {dy});
        for (ccv_nnc_tensor_t* t : {x, w, b, y, dx, dw, db, p, dy}) ccv_nnc_tensor_free(t);
      }
    }
  }
  norm_rows();
  return 0;
}
