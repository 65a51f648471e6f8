// bench-gattn: on GPU 0 through ccv_nnc_cmd_exec (synchronous calls, so the
// figures include the wait), median of 20 after 5 warm-ups:
//   SCALED_DOT_PRODUCT_ATTENTION (GPU_REF) at B 8, H 8, S 512, D 64 (and
//   D 128; and B 2, S 2048, D 64), causal and not, fp32 and fp16 (and bf16
//   at the first shape): forward (o and lse) and backward (dq, dk, dv from
//   the saved lse; the forward not included), each on the fused flash
//   kernels (NNC_GPU_ATTN_FLASH=1: the tensor-core ones for 16F and 16BF
//   where they take the call), on the scalar flash
//   kernels (NNC_GPU_ATTN_MMA=0), on the row kernels
//   (NNC_GPU_ATTN_FLASH=0) and on the flash kernels with plain tile loads
//   (NNC_GPU_ATTN_ASYNC=0: the tensor-core forward without cp.async /
//   ldmatrix) and, for 16-bit forwards, the tensor-core forward in blocks of
//   64 and 128 rows (NNC_GPU_ATTN_FWD_ROWS) side by side, with the ratios to
//   the first; decoding also by key splits (NNC_GPU_ATTN_SPLITS 4 .. 32);
//   CONVOLUTION_TRANSPOSE (GPU_CUDNN, fp32 FMA math, heuristics) for the
//   U-Net decoder's 2x2 / stride-2 up-samplers at batch 16, NHWC and NCHW:
//   forward (with bias) and backward (dx, dw, dbias); beside it the same call
//   through cuDNN's graph API (NNC_CUDNN_GRAPH=2: graph only, "no plan"
//   where it has none) and its ratio to the first (< 1: graph faster).
// tools/bench-gattn/peer.py prints PyTorch's figures for the same calls.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

ccv_nnc_tensor_t* gpu(std::vector<int> d, int datatype, int format = CCV_TENSOR_FORMAT_NHWC) {
  // Bytes 0x3c: 0.0115 in fp32 and bf16, 1.06 in fp16; finite, no denormals.
  return nnc_bench::gpu_tensor(d, datatype, format, 0x3c);
}

bool row(const char* name, ccv_nnc_cmd_t cmd, ccv_nnc_hint_t hint, std::vector<ccv_nnc_tensor_t*> in,
         std::vector<ccv_nnc_tensor_t*> out, bool graph = false) {
  if (!nnc_bench::first_call(name, 44, cmd, hint, in, out)) return false;
  const int is = static_cast<int>(in.size()), os = static_cast<int>(out.size());
  const double ms =
      nnc_bench::gpu_median_ms([&] { ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), is, out.data(), os, nullptr); });
  if (!graph) {
    std::printf("%-44s %12.4f\n", name, ms);
    return true;
  }
  // The same call through cuDNN's graph API only (NNC_CUDNN_GRAPH=2).
  setenv("NNC_CUDNN_GRAPH", "2", 1);
  setenv("NNC_CUDNN_GRAPH_VERBOSE", "1", 1);  // the engine it plans with, once per shape, on stderr
  double g = -1;
  std::string why;
  if (ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), is, out.data(), os, nullptr) == CCV_NNC_EXEC_SUCCESS)
    g = nnc_bench::gpu_median_ms([&] { ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), is, out.data(), os, nullptr); });
  else
    why = ccv_nnc_error_message();
  unsetenv("NNC_CUDNN_GRAPH");
  unsetenv("NNC_CUDNN_GRAPH_VERBOSE");
  if (g > 0) {
    std::printf("%-44s %12.4f %12.4f %8.2f\n", name, ms, g, g / ms);
  } else {
    std::printf("%-44s %12.4f %12s %8s\n", name, ms, "no plan", "-");
    std::printf("  graph API: %.300s\n", why.c_str());
  }
  return true;
}

// The attention call on the flash kernels (NNC_GPU_ATTN_FLASH=1: the
// tensor-core ones where they take the call, 16F and 16BF, with cp.async
// where they can, each knob at its default), on the scalar flash kernels
// (NNC_GPU_ATTN_MMA=0 too), on the row kernels (NNC_GPU_ATTN_FLASH=0), on
// the flash kernels with plain loads (NNC_GPU_ATTN_ASYNC=0: the tensor-core
// forward without cp.async / ldmatrix, 64-row blocks) and, for a 16-bit
// forward (`rows` true), the tensor-core forward in blocks of 64 and of 128
// rows (NNC_GPU_ATTN_FWD_ROWS=64 / 128; 128 at the 128 bucket in 16-key
// steps) and, at the 128 bucket, in 64-row blocks of 32-key steps at three
// blocks an SM (NNC_GPU_ATTN_FWD_KEYS=32): the seven medians (-1: not
// measured), then scalar / flash, rows / flash, plain / flash, r64 / flash,
// r128 / flash and k32 / flash.
struct Variant {
  const char *flash, *mma, *async, *rows, *keys;
};
void attn_row(const char* name, ccv_nnc_cmd_t cmd, std::vector<ccv_nnc_tensor_t*> in,
              std::vector<ccv_nnc_tensor_t*> out, bool rows, bool keys) {
  constexpr int kVariants = 7;
  const Variant var[kVariants] = {{"1", "1", "1", nullptr, nullptr}, {"1", "0", "1", nullptr, nullptr},
                                  {"0", "1", "1", nullptr, nullptr}, {"1", "1", "0", nullptr, nullptr},
                                  {"1", "1", "1", "64", nullptr},    {"1", "1", "1", "128", nullptr},
                                  {"1", "1", "1", "64", "32"}};
  double ms[kVariants];
  const int is = static_cast<int>(in.size()), os = static_cast<int>(out.size());
  for (int m = 0; m < kVariants; m++) {
    ms[m] = -1;
    if ((m >= 4 && !rows) || (m == 6 && !keys)) continue;
    setenv("NNC_GPU_ATTN_FLASH", var[m].flash, 1);
    setenv("NNC_GPU_ATTN_MMA", var[m].mma, 1);
    setenv("NNC_GPU_ATTN_ASYNC", var[m].async, 1);
    if (var[m].rows)
      setenv("NNC_GPU_ATTN_FWD_ROWS", var[m].rows, 1);
    else
      unsetenv("NNC_GPU_ATTN_FWD_ROWS");
    if (var[m].keys)
      setenv("NNC_GPU_ATTN_FWD_KEYS", var[m].keys, 1);
    else
      unsetenv("NNC_GPU_ATTN_FWD_KEYS");
    if (!nnc_bench::first_call(name, 44, cmd, ccv_nnc_no_hint, in, out)) continue;
    ms[m] = nnc_bench::gpu_median_ms(
        [&] { ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), is, out.data(), os, nullptr); });
  }
  for (const char* e :
       {"NNC_GPU_ATTN_FLASH", "NNC_GPU_ATTN_MMA", "NNC_GPU_ATTN_ASYNC", "NNC_GPU_ATTN_FWD_ROWS", "NNC_GPU_ATTN_FWD_KEYS"})
    unsetenv(e);
  auto ratio = [&](int m) { return ms[0] > 0 && ms[m] > 0 ? ms[m] / ms[0] : 0.0; };
  std::printf("%-44s %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", name,
              ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], ms[6], ratio(1), ratio(2), ratio(3), ratio(4), ratio(5), ratio(6));
}

// A decoding forward on the tensor-core kernels with its keys split in
// `splits` runs (NNC_GPU_ATTN_SPLITS; 0: the automatic choice).
double decode_ms(const char* name, ccv_nnc_cmd_t cmd, std::vector<ccv_nnc_tensor_t*> in,
                 std::vector<ccv_nnc_tensor_t*> out, int splits) {
  char v[16];
  std::snprintf(v, sizeof(v), "%d", splits);
  setenv("NNC_GPU_ATTN_FLASH", "1", 1);
  if (splits > 0) setenv("NNC_GPU_ATTN_SPLITS", v, 1);
  double ms = -1;
  const int is = static_cast<int>(in.size()), os = static_cast<int>(out.size());
  if (nnc_bench::first_call(name, 44, cmd, ccv_nnc_no_hint, in, out))
    ms = nnc_bench::gpu_median_ms(
        [&] { ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), is, out.data(), os, nullptr); });
  unsetenv("NNC_GPU_ATTN_FLASH");
  unsetenv("NNC_GPU_ATTN_SPLITS");
  return ms;
}

}  // namespace

int main() {
  if (!nnc_bench::gpu_start()) return 0;
  std::printf("GPU 0: %s; ms per call (median of 20, synchronised)\n", nnc_bench::gpu0_name().c_str());
  std::printf("%-44s %10s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s %8s\n", "attention", "flash ms",
              "scalar ms", "rows ms", "plain ms", "r64 ms", "r128 ms", "k32 ms", "sc/fl", "rows/fl", "pl/fl", "r64/fl",
              "r128/fl", "k32/fl");
  struct Shape {
    int B, H, S, D;
  };
  // NNC_BENCH_GATTN_32F_ONLY=1: the 32F attention rows alone (a second run
  // under other NNC_GPU_ATTN_F32* settings).
  const bool only32 = std::getenv("NNC_BENCH_GATTN_32F_ONLY") && std::getenv("NNC_BENCH_GATTN_32F_ONLY")[0] == '1';
  for (const Shape sh : {Shape{8, 8, 512, 64}, Shape{8, 8, 512, 128}, Shape{2, 8, 2048, 64}})
    for (int dt : {CCV_32F, CCV_16F, CCV_16BF})
      for (int causal : {0, 1}) {
        if (dt == CCV_16BF && !(sh.S == 512 && sh.D == 64)) continue;
        if (only32 && dt != CCV_32F) continue;
        const int B = sh.B, H = sh.H, S = sh.S, D = sh.D;
        ccv_nnc_tensor_t* q = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* k = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* v = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* o = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* lse = gpu({B, H, S}, CCV_32F);
        ccv_nnc_tensor_t* g = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* dq = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* dk = gpu({B, S, H, D}, dt);
        ccv_nnc_tensor_t* dv = gpu({B, S, H, D}, dt);
        ccv_nnc_cmd_param_t p;
        std::memset(&p, 0, sizeof(p));
        p.scaled_dot_product_attention.scale = 1.f / std::sqrt(static_cast<float>(D));
        p.scaled_dot_product_attention.is_causal = causal;
        char name[96];
        const char* tag = dt == CCV_16F ? "16F" : dt == CCV_16BF ? "16BF" : "32F";
        std::snprintf(name, sizeof(name), "attn fwd B%d H%d S%d D%d %s%s", B, H, S, D, tag, causal ? " causal" : "");
        attn_row(name, ccv_nnc_cmd(CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, nullptr, p, 0), {q, k, v}, {o, lse},
                 dt != CCV_32F, dt != CCV_32F && D > 64);
        std::snprintf(name, sizeof(name), "attn bwd B%d H%d S%d D%d %s%s", B, H, S, D, tag, causal ? " causal" : "");
        attn_row(name, ccv_nnc_cmd(CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD, nullptr, p, 0),
                 {g, nullptr, nullptr, q, k, v, nullptr, nullptr, nullptr, o, lse}, {dq, dk, dv}, false, false);
        for (ccv_nnc_tensor_t* t : {q, k, v, o, lse, g, dq, dk, dv}) ccv_nnc_tensor_free(t);
      }
  if (only32) return 0;
  // Decoding: one query row over 4096 cached keys, 32 query heads over 32
  // kv heads (MHA) and over 8 (GQA), 16F, forward only (the tensor-core
  // kernels split the keys over blocks here).
  for (const int Hk : {32, 8}) {
    const int B = 1, H = 32, Sk = 4096, D = 128;
    ccv_nnc_tensor_t* q = gpu({B, 1, H, D}, CCV_16F);
    ccv_nnc_tensor_t* k = gpu({B, Sk, Hk, D}, CCV_16F);
    ccv_nnc_tensor_t* v = gpu({B, Sk, Hk, D}, CCV_16F);
    ccv_nnc_tensor_t* o = gpu({B, 1, H, D}, CCV_16F);
    ccv_nnc_tensor_t* lse = gpu({B, H, 1}, CCV_32F);
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.scaled_dot_product_attention.scale = 1.f / std::sqrt(static_cast<float>(D));
    char name[96];
    std::snprintf(name, sizeof(name), "attn fwd decode B%d H%d/%d Sq1 Sk%d D%d 16F", B, H, Hk, Sk, D);
    const ccv_nnc_cmd_t fwd = ccv_nnc_cmd(CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, nullptr, p, 0);
    attn_row(name, fwd, {q, k, v}, {o, lse}, true, true);
    // The key splits side by side (auto: 8 runs at H32/32, 256 blocks; 32
    // at H32/8).
    double sp[5];
    const int counts[5] = {0, 4, 8, 16, 32};
    for (int x = 0; x < 5; x++) sp[x] = decode_ms(name, fwd, {q, k, v}, {o, lse}, counts[x]);
    std::printf("%-44s auto %.4f  splits 4 %.4f  8 %.4f  16 %.4f  32 %.4f ms\n", "  (same, by key splits)", sp[0], sp[1],
                sp[2], sp[3], sp[4]);
    for (ccv_nnc_tensor_t* t : {q, k, v, o, lse}) ccv_nnc_tensor_free(t);
  }
  std::printf("%-44s %12s %12s %8s\n", "command", "ms", "graph API", "ratio");
  ccv_nnc_hint_t s2;
  std::memset(&s2, 0, sizeof(s2));
  s2.stride.dim[0] = s2.stride.dim[1] = 2;
  const int N = 16;
  struct Up {
    int H, C, K;
  };
  for (int f : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW})
    for (const Up u : {Up{16, 512, 256}, Up{32, 256, 128}, Up{64, 128, 64}}) {
      const bool nhwc = f == CCV_TENSOR_FORMAT_NHWC;
      auto img = [&](int h, int c) { return nhwc ? std::vector<int>{N, h, h, c} : std::vector<int>{N, c, h, h}; };
      const std::vector<int> ws = nhwc ? std::vector<int>{u.C, 2, 2, u.K} : std::vector<int>{u.C, u.K, 2, 2};
      ccv_nnc_tensor_t* x = gpu(img(u.H, u.C), CCV_32F, f);
      ccv_nnc_tensor_t* w = gpu(ws, CCV_32F, f);
      ccv_nnc_tensor_t* b = gpu({u.K}, CCV_32F, f);
      ccv_nnc_tensor_t* y = gpu(img(2 * u.H, u.K), CCV_32F, f);
      ccv_nnc_tensor_t* dx = gpu(img(u.H, u.C), CCV_32F, f);
      ccv_nnc_tensor_t* dw = gpu(ws, CCV_32F, f);
      ccv_nnc_tensor_t* db = gpu({u.K}, CCV_32F, f);
      ccv_nnc_cmd_param_t p;
      std::memset(&p, 0, sizeof(p));
      p.size.dim[0] = p.size.dim[1] = 2, p.size.dim[2] = u.C;
      p.convolution_transpose.count = u.K;
      p.convolution_transpose.groups = 1;
      char name[96];
      const char* fmt = nhwc ? "NHWC" : "NCHW";
      std::snprintf(name, sizeof(name), "convT 2x2/2 fwd N16 %dx%d %d->%d %s", u.H, u.H, u.C, u.K, fmt);
      row(name, ccv_nnc_cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, nullptr, p, 0), s2, {x, w, b}, {y}, true);
      std::snprintf(name, sizeof(name), "convT 2x2/2 bwd N16 %dx%d %d->%d %s", u.H, u.H, u.C, u.K, fmt);
      row(name, ccv_nnc_cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, nullptr, p, 0), s2, {y, x, w}, {dx, dw, db},
          true);
      for (ccv_nnc_tensor_t* t : {x, w, b, y, dx, dw, db}) ccv_nnc_tensor_free(t);
    }
  return 0;
}
