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

namespace nnc::cuda {

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
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  const float alpha = 1;
  float beta = 0;
  if (bias) {
    broadcast_rows(c->data.f32, bias->data.f32, M, N);
    beta = 1;
  }
  NNC_CUDA_CHECK(cublasSgemm(cublas_handle(device), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                             b->data.f32, b->info.dim[1], a->data.f32, a->info.dim[1], &beta, c->data.f32, N),
                 what);
  NNC_CUDA_CHECK(cudaDeviceSynchronize(), what);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_gemm(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_CUBLAS;
  t.datatypes = CCV_32F;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  r.add_kernels(t.accepting(accept_gemm), {{CCV_NNC_GEMM_FORWARD, gemm}});
}

}  // namespace nnc::cuda
