// GEMM on cuBLAS (GPU_CUBLAS): fp32 products of packed row-major 2-d
// operands in device memory, either operand transposed (libnnc's
// TRANSPOSE(0, 1)), with an optional bias row of N. A row-major product is
// the column-major product of the transposes, so C^T = op(B)^T op(A)^T is
// one cublasSgemm over the tensors as they lie. Other shapes (batched,
// other types, views, scales) are the next step of issue 19.
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

cudaError_t launch_column_sums(const float* g, float* out, int rows, int cols, cudaStream_t s);

namespace {

bool transposed(const int* t) { return t[0] != t[1]; }

bool plain2d(const ccv_nnc_tensor_t* t) {
  return t && !CCV_IS_TENSOR_VIEW(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY &&
         CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32F && nd_of(t->info.dim) == 2;
}

bool accept_gemm(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                 int output_size) {
  if (input_size < 2 || output_size < 1 || !plain2d(inputs[0]) || !plain2d(inputs[1]) || !plain2d(outputs[0])) return false;
  if (cmd.info.blas.a[0] != 1 || cmd.info.blas.a[1] != 1) return false;
  const int* ta = cmd.info.blas.transpose_a;
  const int* tb = cmd.info.blas.transpose_b;
  if ((transposed(ta) && !((ta[0] == 0 && ta[1] == 1) || (ta[0] == 1 && ta[1] == 0))) ||
      (transposed(tb) && !((tb[0] == 0 && tb[1] == 1) || (tb[0] == 1 && tb[1] == 0))))
    return false;
  if (input_size > 2 && inputs[2]) {
    const ccv_nnc_tensor_t* bias = inputs[2];
    if (CCV_IS_TENSOR_VIEW(bias) || CCV_TENSOR_GET_MEMORY(bias->info.type) != CCV_TENSOR_GPU_MEMORY ||
        CCV_GET_DATA_TYPE(bias->info.datatype) != CCV_32F || nd_of(bias->info.dim) != 1)
      return false;
  }
  return true;
}

NNC_KERNEL(gemm) {
  static const char* what = "GEMM_FORWARD (GPU_CUBLAS)";
  const ccv_nnc_tensor_t* a = inputs[0];
  const ccv_nnc_tensor_t* b = inputs[1];
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  ccv_nnc_tensor_t* c = outputs[0];
  const bool ta = transposed(cmd.info.blas.transpose_a), tb = transposed(cmd.info.blas.transpose_b);
  const int M = ta ? a->info.dim[1] : a->info.dim[0], K = ta ? a->info.dim[0] : a->info.dim[1];
  const int N = tb ? b->info.dim[0] : b->info.dim[1], Kb = tb ? b->info.dim[1] : b->info.dim[0];
  NNC_CHECK(K == Kb, "%s: a is %s and b is %s; their inner dimensions %d and %d differ", what, shape_string(a->info.dim).c_str(),
            shape_string(b->info.dim).c_str(), K, Kb);
  NNC_CHECK(c->info.dim[0] == M && c->info.dim[1] == N, "%s: the output is %s but the product is %dx%d", what,
            shape_string(c->info.dim).c_str(), M, N);
  NNC_CHECK(!bias || bias->info.dim[0] == N, "%s: the bias has %d elements for %d columns", what, bias ? bias->info.dim[0] : 0, N);
  const int device = CCV_TENSOR_GET_DEVICE_ID(c->info.type);
  const cudaStream_t s = stream_of(stream_context, device, what);
  cublasHandle_t h = cublas_handle(stream_context, device, s, what);
  const float alpha = 1;
  float beta = 0;
  if (bias) {
    broadcast_rows(c->data.f32, bias->data.f32, M, N, s);
    beta = 1;
  }
  NNC_CUDA_CHECK(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                             b->data.f32, b->info.dim[1], a->data.f32, a->info.dim[1], &beta, c->data.f32, N),
                 what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// C [m, n] = op(X) op(Y) over row-major storage (x_cols, y_cols: the stored
// widths), as one column-major cublasSgemm of the transposes.
void rm_gemm(cublasHandle_t h, bool tx, bool ty, int m, int n, int k, const float* x, int x_cols, const float* y, int y_cols, float* c,
             const char* what) {
  const float alpha = 1, beta = 0;
  NNC_CUDA_CHECK(cublasSgemm(h, ty ? CUBLAS_OP_T : CUBLAS_OP_N, tx ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, y, y_cols, x, x_cols, &beta, c, n),
                 what);
}

bool accept_gemm_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                          int output_size) {
  if (input_size < 3 || output_size < 1 || !plain2d(inputs[0])) return false;
  const ccv_nnc_tensor_t* da = outputs[0];
  const ccv_nnc_tensor_t* dw = output_size > 1 ? outputs[1] : nullptr;
  const ccv_nnc_tensor_t* db = output_size > 2 ? outputs[2] : nullptr;
  if (!da && !dw && !db) return false;
  if (da && (!plain2d(da) || !plain2d(inputs[2]))) return false;
  if (dw && (!plain2d(dw) || !plain2d(inputs[1]))) return false;
  if (db && (CCV_IS_TENSOR_VIEW(db) || CCV_TENSOR_GET_MEMORY(db->info.type) != CCV_TENSOR_GPU_MEMORY ||
             CCV_GET_DATA_TYPE(db->info.datatype) != CCV_32F || nd_of(db->info.dim) != 1))
    return false;
  if (cmd.info.blas.a[0] != 1 || cmd.info.blas.a[1] != 1) return false;
  return true;
}

// libnnc's |g|a|w| -> |da|dw|dbias|, for C = op(A) op(B) + bias.
NNC_KERNEL(gemm_backward) {
  static const char* what = "GEMM_BACKWARD (GPU_CUBLAS)";
  const ccv_nnc_tensor_t* g = inputs[0];
  const ccv_nnc_tensor_t* a = inputs[1];
  const ccv_nnc_tensor_t* b = inputs[2];
  ccv_nnc_tensor_t* da = outputs[0];
  ccv_nnc_tensor_t* dw = output_size > 1 ? outputs[1] : nullptr;
  ccv_nnc_tensor_t* dbias = output_size > 2 ? outputs[2] : nullptr;
  const bool ta = transposed(cmd.info.blas.transpose_a), tb = transposed(cmd.info.blas.transpose_b);
  const int M = g->info.dim[0], N = g->info.dim[1];
  const int device = CCV_TENSOR_GET_DEVICE_ID(g->info.type);
  const cudaStream_t s = stream_of(stream_context, device, what);
  cublasHandle_t h = cublas_handle(stream_context, device, s, what);
  if (da) {
    const int K = ta ? da->info.dim[0] : da->info.dim[1];
    NNC_CHECK(b && (tb ? b->info.dim[1] : b->info.dim[0]) == K, "%s: da is %s but w is %s", what, shape_string(da->info.dim).c_str(),
              b ? shape_string(b->info.dim).c_str() : "missing");
    if (!ta)
      rm_gemm(h, false, !tb, M, K, N, g->data.f32, N, b->data.f32, b->info.dim[1], da->data.f32, what);  // G opB^T
    else
      rm_gemm(h, tb, true, K, M, N, b->data.f32, b->info.dim[1], g->data.f32, N, da->data.f32, what);  // (G opB^T)^T = opB G^T
  }
  if (dw) {
    const int K = tb ? dw->info.dim[1] : dw->info.dim[0];
    NNC_CHECK(a && (ta ? a->info.dim[0] : a->info.dim[1]) == K, "%s: dw is %s but a is %s", what, shape_string(dw->info.dim).c_str(),
              a ? shape_string(a->info.dim).c_str() : "missing");
    if (!tb)
      rm_gemm(h, !ta, false, K, N, M, a->data.f32, a->info.dim[1], g->data.f32, N, dw->data.f32, what);  // opA^T G
    else
      rm_gemm(h, true, ta, N, K, M, g->data.f32, N, a->data.f32, a->info.dim[1], dw->data.f32, what);  // (opA^T G)^T = G^T opA
  }
  if (dbias) {
    NNC_CHECK(dbias->info.dim[0] == N, "%s: dbias has %d elements for %d columns", what, dbias->info.dim[0], N);
    NNC_CUDA_CHECK(launch_column_sums(g->data.f32, dbias->data.f32, M, N, s), what);
  }
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_gemm(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_CUBLAS;
  t.datatypes = CCV_32F;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  r.add_kernels(t.accepting(accept_gemm), {{CCV_NNC_GEMM_FORWARD, gemm}});
  r.add_kernels(t.accepting(accept_gemm_backward), {{CCV_NNC_GEMM_BACKWARD, gemm_backward}});
}

}  // namespace nnc::cuda
