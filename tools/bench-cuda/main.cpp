// bench-cuda: GEMM on GPU 0 through ccv_nnc_cmd_exec (GPU_CUBLAS) beside
// cuBLAS called directly on the same buffers and PyTorch on the same GPU
// (peer.py, run first in its own process). Rows: square 4096 in fp32 (TF32
// off, then allowed by CCV_NNC_GEMM_32TF), fp16 and bf16 (fp32 accumulation);
// attention-shaped batched products (Q K^T and P V, 8 x 16 heads, T = 512,
// d = 64, fp16); and the reference network's dense layers at batch 64
// (3136 -> 256 and 256 -> 10 with their bias, and the backward of the first:
// dx, dW, dbias). The direct cuBLAS side makes the same GEMM calls without
// the bias (so its ratio shows what the bias epilogue / dbias cost on top).
// Each call is followed by a device synchronisation on every side (NNC's
// kernel synchronises before returning), so the figures include it. Median
// of 20 after 5 warm-ups.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

ccv_nnc_tensor_param_t gpu(int datatype, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_GPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

cudaDataType_t cuda_type(int datatype) {
  return datatype == CCV_16F ? CUDA_R_16F : datatype == CCV_16BF ? CUDA_R_16BF : CUDA_R_32F;
}

struct Tensors {
  std::vector<ccv_nnc_tensor_t*> ts;
  ccv_nnc_tensor_t* add(int datatype, std::vector<int> dims) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, gpu(datatype, dims), 0);
    if (!t) {
      std::printf("allocation failed: %s\n", ccv_nnc_error_message());
      std::exit(1);
    }
    cudaMemset(t->data.u8, 0, ccv_nnc_tensor_data_size(t->info));
    ts.push_back(t);
    return t;
  }
  ~Tensors() {
    for (auto* t : ts) ccv_nnc_tensor_free(t);
  }
};

ccv_nnc_cmd_t gemm(uint32_t id, bool ta_last2, int nd_a, bool tb_last2, int nd_b, int flags) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = p.blas.a[1] = 1;
  if (ta_last2) p.blas.transpose_a[0] = nd_a - 2, p.blas.transpose_a[1] = nd_a - 1;
  if (tb_last2) p.blas.transpose_b[0] = nd_b - 2, p.blas.transpose_b[1] = nd_b - 1;
  p.blas.flags = flags;
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

struct Row {
  std::string name;
  double flop;
  std::function<void()> nnc, cublas;
};

}  // namespace

int main() {
  if (!nnc_bench::gpu_start()) return 0;
  // PyTorch first, in its own process, so the two never share the GPU.
  const std::map<std::string, double> torch_ms = nnc_bench::run_peer(NNC_BENCH_PEER, "tools/bench-cuda/peer.py");
  std::printf("GPU 0: %s; ms per call (median of 20), device synchronised after each\n",
              nnc_bench::gpu0_name().c_str());
  cublasHandle_t h;
  cublasCreate(&h);
  Tensors T;
  std::vector<Row> rows;
  const float one = 1, zero = 0;

  // C [M, N] = A [M, K] B [K, N], row-major: column-major C^T = B^T A^T.
  for (const auto& [dt, flags, label] : {std::tuple<int, int, const char*>{CCV_32F, 0, "fp32"},
                                         {CCV_32F, CCV_NNC_GEMM_32TF, "fp32-tf32"},
                                         {CCV_16F, 0, "fp16"},
                                         {CCV_16BF, 0, "bf16"}}) {
    const int n = 4096;
    ccv_nnc_tensor_t* a = T.add(dt, {n, n});
    ccv_nnc_tensor_t* b = T.add(dt, {n, n});
    ccv_nnc_tensor_t* c = T.add(dt, {n, n});
    const ccv_nnc_cmd_t cmd = gemm(CCV_NNC_GEMM_FORWARD, false, 2, false, 2, flags);
    const cublasComputeType_t compute = (flags & CCV_NNC_GEMM_32TF) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cudaDataType_t ty = cuda_type(dt);
    rows.push_back({std::string("square4096-") + label, 2.0 * n * n * n,
                    [=] {
                      ccv_nnc_tensor_t* in[2] = {a, b};
                      ccv_nnc_tensor_t* out[1] = {c};
                      ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr);
                    },
                    [=] {
                      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b->data.u8, ty, n, a->data.u8, ty, n,
                                   &zero, c->data.u8, ty, n, compute, CUBLAS_GEMM_DEFAULT);
                      cudaDeviceSynchronize();
                    }});
  }
  {  // attention, fp16: S = Q K^T, O = P V over 8 x 16 heads
    const int B = 8, H = 16, L = 512, D = 64, batch = B * H;
    ccv_nnc_tensor_t* q = T.add(CCV_16F, {B, H, L, D});
    ccv_nnc_tensor_t* k = T.add(CCV_16F, {B, H, L, D});
    ccv_nnc_tensor_t* s = T.add(CCV_16F, {B, H, L, L});
    ccv_nnc_tensor_t* v = T.add(CCV_16F, {B, H, L, D});
    ccv_nnc_tensor_t* o = T.add(CCV_16F, {B, H, L, D});
    // z = x · op(y) per head, row-major: cuBLAS computes z^T = op(y)^T x^T
    // column-major, y as A and x as B; z is L x m, the inner dimension kk.
    // Q K^T: x Q, y K (transposed), m L, kk D. P V: x P, y V, m D, kk L.
    auto attention = [&](const char* name, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y, bool trans_y, ccv_nnc_tensor_t* z,
                         int m, int kk) {
      const ccv_nnc_cmd_t cmd = gemm(CCV_NNC_GEMM_FORWARD, false, 4, trans_y, 4, 0);
      const long long sy = static_cast<long long>(m) * kk, sx = static_cast<long long>(L) * kk,
                      sz = static_cast<long long>(L) * m;
      rows.push_back({name, 2.0 * batch * L * L * D,
                      [=] {
                        ccv_nnc_tensor_t* in[2] = {x, y};
                        ccv_nnc_tensor_t* out[1] = {z};
                        ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr);
                      },
                      [=] {
                        cublasGemmStridedBatchedEx(h, trans_y ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, m, L, kk, &one,
                                                   y->data.u8, CUDA_R_16F, trans_y ? kk : m, sy, x->data.u8, CUDA_R_16F,
                                                   kk, sx, &zero, z->data.u8, CUDA_R_16F, m, sz, batch,
                                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                        cudaDeviceSynchronize();
                      }});
    };
    attention("attn-QKt-fp16", q, k, true, s, L, D);
    attention("attn-PV-fp16", s, v, false, o, D, L);
  }
  // The reference network's dense layers, batch 64, fp32: y = x W^T + b.
  for (const auto& [in_f, out_f] : {std::pair<int, int>{3136, 256}, {256, 10}}) {
    const int M = 64, K = in_f, N = out_f;
    ccv_nnc_tensor_t* x = T.add(CCV_32F, {M, K});
    ccv_nnc_tensor_t* w = T.add(CCV_32F, {N, K});
    ccv_nnc_tensor_t* bias = T.add(CCV_32F, {N});
    ccv_nnc_tensor_t* y = T.add(CCV_32F, {M, N});
    const ccv_nnc_cmd_t fc = gemm(CCV_NNC_GEMM_FORWARD, false, 2, true, 2, 0);
    char name[64];
    std::snprintf(name, sizeof name, "dense%d-%d-fwd", K, N);
    rows.push_back({name, 2.0 * M * N * K,
                    [=] {
                      ccv_nnc_tensor_t* in[3] = {x, w, bias};
                      ccv_nnc_tensor_t* out[1] = {y};
                      ccv_nnc_cmd_exec(fc, ccv_nnc_no_hint, 0, in, 3, out, 1, nullptr);
                    },
                    [=] {
                      cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w->data.f32, K, x->data.f32, K, &zero,
                                  y->data.f32, N);
                      cudaDeviceSynchronize();
                    }});
    if (K != 3136) continue;
    ccv_nnc_tensor_t* g = T.add(CCV_32F, {M, N});
    ccv_nnc_tensor_t* dx = T.add(CCV_32F, {M, K});
    ccv_nnc_tensor_t* dw = T.add(CCV_32F, {N, K});
    ccv_nnc_tensor_t* db = T.add(CCV_32F, {N});
    const ccv_nnc_cmd_t back = gemm(CCV_NNC_GEMM_BACKWARD, false, 2, true, 2, 0);
    std::snprintf(name, sizeof name, "dense%d-%d-bwd", K, N);
    rows.push_back({name, 4.0 * M * N * K,
                    [=] {
                      ccv_nnc_tensor_t* in[3] = {g, x, w};
                      ccv_nnc_tensor_t* out[3] = {dx, dw, db};
                      ccv_nnc_cmd_exec(back, ccv_nnc_no_hint, 0, in, 3, out, 3, nullptr);
                    },
                    [=] {
                      // dx = g W: dx^T = W^T g^T; dW = g^T x: dW^T = x^T g.
                      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, K, M, N, &one, w->data.f32, K, g->data.f32, N, &zero,
                                  dx->data.f32, K);
                      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, K, N, M, &one, x->data.f32, K, g->data.f32, N, &zero,
                                  dw->data.f32, K);
                      cudaDeviceSynchronize();
                    }});
  }

  std::printf("%-26s %10s %10s %10s %9s %9s %10s\n", "row", "NNC ms", "cuBLAS ms", "torch ms", "/cuBLAS", "/torch",
              "NNC TF/s");
  for (const Row& r : rows) {
    const double ours = nnc_bench::gpu_median_ms(r.nnc);
    const double direct = nnc_bench::gpu_median_ms(r.cublas);
    const auto it = torch_ms.find(r.name);
    char tcol[32] = "-", tratio[32] = "-";
    if (it != torch_ms.end()) {
      std::snprintf(tcol, sizeof tcol, "%.4f", it->second);
      std::snprintf(tratio, sizeof tratio, "%.2f", ours / it->second);
    }
    std::printf("%-26s %10.4f %10.4f %10s %9.2f %9s %10.1f\n", r.name.c_str(), ours, direct, tcol, ours / direct,
                tratio, r.flop / (ours * 1e-3) / 1e12);
  }
  cublasDestroy(h);
  return 0;
}
