// GPU_REF under CPU emulation (design: CMakeLists.txt here): the part of
// cuBLAS and cuBLASLt that the module calls, computed on the calling thread
// as the emulated runtime runs everything (emu_runtime.cpp), so that
// GPU_CUBLAS's host code (cuda/gemm.cpp: planning, descriptors, the
// cuBLASLt bias epilogue and its fallbacks, dbias kernels) runs here as it
// is, and the GPU tests that reach a GEMM run in CI.
//
// The products: column-major D = alpha op(A) op(B) + beta C (+ bias per row
// for CUBLASLT_EPILOGUE_BIAS), for fp32, fp64, fp16 and bf16 storage, summed
// in the compute type in plain k order (cuBLAS sums in another order;
// COMPUTE_16F rounds each partial sum to fp16; COMPUTE_32F_FAST_TF32 rounds
// the operands to TF32's 10-bit mantissa first), with one rounding to the
// storage type at the end. beta = 0: C is not read. Anything else cuBLAS
// offers answers CUBLAS_STATUS_NOT_SUPPORTED. cuBLASLt's heuristic finds one
// algorithm for every call and asks for no workspace.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "emu_hooks.hpp"
#include "emu_numbers.hpp"

namespace {

struct Token {
  int kind;
  cudaStream_t stream = nullptr;  // a cuBLAS handle's (cublasSetStream)
};

emu::Elem elem(cudaDataType_t t) {
  return t == CUDA_R_64F ? emu::Elem::kF64 : t == CUDA_R_16F ? emu::Elem::kF16 : t == CUDA_R_16BF ? emu::Elem::kBF16 : emu::Elem::kF32;
}
double load(cudaDataType_t t, const void* p, int64_t i) { return emu::load(elem(t), p, i); }
void store(cudaDataType_t t, void* p, int64_t i, double v) { emu::store(elem(t), p, i, v); }
bool storage_ok(cudaDataType_t t) {
  return t == CUDA_R_32F || t == CUDA_R_64F || t == CUDA_R_16F || t == CUDA_R_16BF;
}

using emu::tf32;

// A product's description, from either API.
struct Product {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  cudaDataType_t ta_type = CUDA_R_32F, tb_type = CUDA_R_32F, tc_type = CUDA_R_32F, td_type = CUDA_R_32F;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
  int batch = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  const void* alpha = nullptr;
  const void* beta = nullptr;
  const void* bias = nullptr;  // one value per row of D (the BIAS epilogue)
  cudaDataType_t bias_type = CUDA_R_32F;
  int64_t stride_bias = 0;
  cudaStream_t stream = nullptr;  // for the launch counts
};

double scalar(cudaDataType_t t, const void* p) { return load(t, p, 0); }
void product(const Product& p, double alpha, double beta);

cublasStatus_t run(const Product& p) {
  if (p.m < 0 || p.n < 0 || p.k < 0 || p.batch < 0 || !p.alpha || !p.beta) return CUBLAS_STATUS_INVALID_VALUE;
  for (cudaDataType_t t : {p.ta_type, p.tb_type, p.tc_type, p.td_type})
    if (!storage_ok(t)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const int64_t rows_a = p.ta ? p.k : p.m, rows_b = p.tb ? p.n : p.k;
  if (p.lda < (rows_a > 1 ? rows_a : 1) || p.ldb < (rows_b > 1 ? rows_b : 1) || p.ldc < (p.m > 1 ? p.m : 1) ||
      p.ldd < (p.m > 1 ? p.m : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  // alpha and beta are read now (host pointers, as cuBLAS's default
  // pointer mode), the rest when the stream's work runs.
  const double alpha = scalar(p.scale, p.alpha), beta = scalar(p.scale, p.beta);
  emu::library_call(p.stream, [p, alpha, beta] { product(p, alpha, beta); });
  return CUBLAS_STATUS_SUCCESS;
}

// D = alpha op(A) op(B) + beta C (+ bias), as the stream's work.
void product(const Product& p, double alpha, double beta) {
  // op(A) as m rows of k and op(B) as n rows of k, loaded once (TF32
  // rounding applied there): every sum then walks two contiguous rows.
  // Every storage type is exact in double, and but for 64F also in float.
  const bool wide = p.compute == CUBLAS_COMPUTE_64F, tf = p.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  auto operand = [&](double v) { return tf ? tf32(static_cast<float>(v)) : v; };
  std::vector<double> a(static_cast<size_t>(p.m * p.k)), b(static_cast<size_t>(p.n * p.k));
  for (int bi = 0; bi < p.batch; bi++) {
    const int64_t oa = bi * p.stride_a, ob = bi * p.stride_b, oc = bi * p.stride_c, od = bi * p.stride_d;
    for (int64_t i = 0; i < p.m; i++)
      for (int64_t q = 0; q < p.k; q++)
        a[static_cast<size_t>(i * p.k + q)] = operand(load(p.ta_type, p.a, oa + (p.ta ? q + i * p.lda : i + q * p.lda)));
    for (int64_t j = 0; j < p.n; j++)
      for (int64_t q = 0; q < p.k; q++)
        b[static_cast<size_t>(j * p.k + q)] = operand(load(p.tb_type, p.b, ob + (p.tb ? j + q * p.ldb : q + j * p.ldb)));
    for (int64_t j = 0; j < p.n; j++)
      for (int64_t i = 0; i < p.m; i++) {
        const double *x = &a[static_cast<size_t>(i * p.k)], *y = &b[static_cast<size_t>(j * p.k)];
        double acc = 0;
        if (wide) {
          for (int64_t q = 0; q < p.k; q++) acc += x[q] * y[q];
        } else if (p.compute == CUBLAS_COMPUTE_16F) {
          __half h = __float2half(0.f);
          for (int64_t q = 0; q < p.k; q++)
            h = __float2half(__half2float(h) + static_cast<float>(x[q]) * static_cast<float>(y[q]));
          acc = __half2float(h);
        } else {
          float f = 0;
          for (int64_t q = 0; q < p.k; q++) f += static_cast<float>(x[q]) * static_cast<float>(y[q]);
          acc = f;
        }
        double v = alpha * acc;
        if (beta != 0) v += beta * load(p.tc_type, p.c, oc + i + j * p.ldc);
        if (p.bias) v += load(p.bias_type, p.bias, bi * p.stride_bias + i);
        if (!wide) v = static_cast<float>(v);
        store(p.td_type, p.d, od + i + j * p.ldd, v);
      }
  }
}

cublasStatus_t op(cublasOperation_t o, bool* t) {
  if (o != CUBLAS_OP_N && o != CUBLAS_OP_T) return CUBLAS_STATUS_NOT_SUPPORTED;
  *t = o == CUBLAS_OP_T;
  return CUBLAS_STATUS_SUCCESS;
}

// The scale type cuBLAS's *Ex calls take for a compute type.
cudaDataType_t scale_of(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_64F ? CUDA_R_64F : c == CUBLAS_COMPUTE_16F ? CUDA_R_16F : CUDA_R_32F;
}

// cuBLASLt's descriptors: ours, behind its pointer types.
struct MatmulDesc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;  // -1: D's type
  int64_t bias_stride = 0;
};
struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};

template <class T>
cublasStatus_t set(T* field, const void* buf, size_t bytes) {
  if (!buf || bytes != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

// cublasGemmStridedBatchedEx's product (cublasGemmEx's with one batch).
cublasStatus_t strided_ex(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                          const void* alpha, const void* A, cudaDataType Atype, int lda, long long strideA,
                          const void* B, cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C,
                          cudaDataType Ctype, int ldc, long long strideC, int batchCount,
                          cublasComputeType_t computeType) {
  Product p;
  if (op(transa, &p.ta) != CUBLAS_STATUS_SUCCESS || op(transb, &p.tb) != CUBLAS_STATUS_SUCCESS)
    return CUBLAS_STATUS_INVALID_VALUE;
  p.m = m, p.n = n, p.k = k, p.alpha = alpha, p.beta = beta;
  p.a = A, p.b = B, p.c = C, p.d = C;
  p.ta_type = Atype, p.tb_type = Btype, p.tc_type = p.td_type = Ctype;
  p.lda = lda, p.ldb = ldb, p.ldc = p.ldd = ldc;
  p.stride_a = strideA, p.stride_b = strideB, p.stride_c = p.stride_d = strideC, p.batch = batchCount;
  p.compute = computeType, p.scale = scale_of(computeType);
  if (h) p.stream = reinterpret_cast<Token*>(h)->stream;
  return run(p);
}

}  // namespace

extern "C" {

// cuda/stream.cpp keeps a cuBLAS handle per stream: a token here.
cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* h) {
  EMU_API_CALL();
  *h = reinterpret_cast<cublasHandle_t>(new Token{3});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t h) {
  EMU_API_CALL();
  delete reinterpret_cast<Token*>(h);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  EMU_API_CALL();
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<Token*>(h)->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t, cublasMath_t* mode) {
  EMU_API_CALL();
  *mode = CUBLAS_DEFAULT_MATH;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t, cublasMath_t) {
  EMU_API_CALL();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t, void*, size_t) {
  EMU_API_CALL();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                           int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                                           const float* beta, float* C, int ldc) {
  EMU_API_CALL();
  Product p;
  if (op(ta, &p.ta) != CUBLAS_STATUS_SUCCESS || op(tb, &p.tb) != CUBLAS_STATUS_SUCCESS)
    return CUBLAS_STATUS_INVALID_VALUE;
  p.m = m, p.n = n, p.k = k, p.alpha = alpha, p.beta = beta;
  p.a = A, p.b = B, p.c = C, p.d = C, p.lda = lda, p.ldb = ldb, p.ldc = p.ldd = ldc;
  if (h) p.stream = reinterpret_cast<Token*>(h)->stream;
  return run(p);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                                       cublasOperation_t transb, int m, int n, int k,
                                                       const void* alpha, const void* A, cudaDataType Atype, int lda,
                                                       long long int strideA, const void* B, cudaDataType Btype,
                                                       int ldb, long long int strideB, const void* beta, void* C,
                                                       cudaDataType Ctype, int ldc, long long int strideC,
                                                       int batchCount, cublasComputeType_t computeType,
                                                       cublasGemmAlgo_t) {
  EMU_API_CALL();
  return strided_ex(h, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
                    ldc, strideC, batchCount, computeType);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int m,
                                         int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                         const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
                                         cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t) {
  EMU_API_CALL();
  return strided_ex(h, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1,
                    computeType);
}

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* h) {
  EMU_API_CALL();
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = reinterpret_cast<cublasLtHandle_t>(new Token{4});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t h) {
  EMU_API_CALL();
  delete reinterpret_cast<Token*>(h);
  return CUBLAS_STATUS_SUCCESS;
}
const char* CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS (gpu-emu)";
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                                     cudaDataType_t scale) {
  EMU_API_CALL();
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(new MatmulDesc{compute, scale});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  EMU_API_CALL();
  delete reinterpret_cast<MatmulDesc*>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                           cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                           size_t bytes) {
  EMU_API_CALL();
  MatmulDesc* d = reinterpret_cast<MatmulDesc*>(desc);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return set(&d->trans_a, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return set(&d->trans_b, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return set(&d->epilogue, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return set(&d->bias, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return set(&d->bias_type, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      return set(&d->bias_stride, buf, bytes);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  EMU_API_CALL();
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  EMU_API_CALL();
  delete reinterpret_cast<Layout*>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                             cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                             size_t bytes) {
  EMU_API_CALL();
  Layout* l = reinterpret_cast<Layout*>(layout);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return set(&l->batch, buf, bytes);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return set(&l->stride, buf, bytes);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  EMU_API_CALL();
  if (!p) return CUBLAS_STATUS_INVALID_VALUE;
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Token{5});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  EMU_API_CALL();
  delete reinterpret_cast<Token*>(p);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                                 cublasLtMatmulPreferenceAttributes_t, const void* buf,
                                                                 size_t) {
  EMU_API_CALL();
  return p && buf ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                                           cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                           cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                           cublasLtMatmulPreference_t pref, int requested,
                                                           cublasLtMatmulHeuristicResult_t results[], int* found) {
  EMU_API_CALL();
  if (!h || !desc || !pref || requested < 1 || !results || !found) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                                           const void* A, cublasLtMatrixLayout_t la, const void* B,
                                           cublasLtMatrixLayout_t lb, const void* beta, const void* C,
                                           cublasLtMatrixLayout_t lc, void* D, cublasLtMatrixLayout_t ld,
                                           const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  EMU_API_CALL();
  const MatmulDesc* d = reinterpret_cast<const MatmulDesc*>(desc);
  const Layout *a = reinterpret_cast<const Layout*>(la), *b = reinterpret_cast<const Layout*>(lb),
               *c = reinterpret_cast<const Layout*>(lc), *o = reinterpret_cast<const Layout*>(ld);
  if (!h || !d || !a || !b || !c || !o) return CUBLAS_STATUS_INVALID_VALUE;
  if (d->epilogue != CUBLASLT_EPILOGUE_DEFAULT && d->epilogue != CUBLASLT_EPILOGUE_BIAS)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  Product p;
  if (op(static_cast<cublasOperation_t>(d->trans_a), &p.ta) != CUBLAS_STATUS_SUCCESS ||
      op(static_cast<cublasOperation_t>(d->trans_b), &p.tb) != CUBLAS_STATUS_SUCCESS)
    return CUBLAS_STATUS_INVALID_VALUE;
  p.m = static_cast<int64_t>(o->rows), p.n = static_cast<int64_t>(o->cols);
  p.k = static_cast<int64_t>(p.ta ? a->rows : a->cols);
  // The four layouts must agree on the product's shape and batch.
  if (static_cast<int64_t>(p.ta ? a->cols : a->rows) != p.m ||
      static_cast<int64_t>(p.tb ? b->cols : b->rows) != p.k ||
      static_cast<int64_t>(p.tb ? b->rows : b->cols) != p.n || c->rows != o->rows || c->cols != o->cols ||
      a->batch != o->batch || b->batch != o->batch || c->batch != o->batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  p.a = A, p.b = B, p.c = C, p.d = D, p.alpha = alpha, p.beta = beta;
  p.ta_type = a->type, p.tb_type = b->type, p.tc_type = c->type, p.td_type = o->type;
  p.lda = a->ld, p.ldb = b->ld, p.ldc = c->ld, p.ldd = o->ld;
  p.stride_a = a->stride, p.stride_b = b->stride, p.stride_c = c->stride, p.stride_d = o->stride;
  p.batch = o->batch;
  p.compute = d->compute, p.scale = d->scale;
  p.stream = stream;
  if (d->epilogue == CUBLASLT_EPILOGUE_BIAS) {
    if (!d->bias) return CUBLAS_STATUS_INVALID_VALUE;
    p.bias = d->bias;
    p.bias_type = d->bias_type < 0 ? o->type : static_cast<cudaDataType_t>(d->bias_type);
    p.stride_bias = d->bias_stride;
  }
  return run(p);
}

}  // extern "C"
