// Element-wise families on the GPU (GPU_REF): EWSUM, EWPROD, EWDIV, EWEXP,
// EWLOG, EWSQRT, RELU, SIGMOID, TANH and SCALAR_MUL forward, over packed fp32
// tensors of one element count in device memory, and the backward of the
// one-input functions. Broadcasting, views, other types and the other
// backward commands are the next step of issue 19.
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/stream.hpp"
#include "nnc/ccv_nnc_easy.h"

namespace nnc::cuda {

cudaError_t launch_unary(const float* x, float* y, long long n, int op, float a, cudaStream_t s);
cudaError_t launch_binary(const float* a, const float* b, float* y, long long n, int op, cudaStream_t s);
cudaError_t launch_grad(const float* g, const float* v, float* dx, long long n, int op, cudaStream_t s);

namespace {

long long count_of(const ccv_nnc_tensor_t* t) { return static_cast<long long>(ccv_nnc_tensor_count(t->info)); }

bool gpu_f32(const ccv_nnc_tensor_t* t) {
  return t && !CCV_IS_TENSOR_VIEW(t) && !CCV_IS_TENSOR_MULTIVIEW(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY &&
         CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32F;
}

// Every tensor present is packed fp32 on the GPU with the output's element count.
bool accept_same_count(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                       int output_size) {
  if (output_size < 1 || !gpu_f32(outputs[0])) return false;
  const long long n = count_of(outputs[0]);
  bool any = false;
  for (int i = 0; i < input_size; i++) {
    if (!inputs[i]) continue;
    if (!gpu_f32(inputs[i]) || count_of(inputs[i]) != n) return false;
    any = true;
  }
  return any;
}


int unary_op(uint32_t cmd) {
  switch (cmd) {
    case CCV_NNC_EWEXP_FORWARD: return 0;
    case CCV_NNC_EWLOG_FORWARD: return 1;
    case CCV_NNC_EWSQRT_FORWARD: return 2;
    case CCV_NNC_RELU_FORWARD: return 3;
    case CCV_NNC_SIGMOID_FORWARD: return 4;
    case CCV_NNC_TANH_FORWARD: return 5;
    default: return 6;  // SCALAR_MUL
  }
}

NNC_KERNEL(unary) {
  static const char* what = "element-wise (GPU_REF)";
  const ccv_nnc_tensor_t* x = inputs[0];
  ccv_nnc_tensor_t* y = outputs[0];
  NNC_CHECK(x, "%s: the input is NULL", what);
  const cudaStream_t s = stream_of(stream_context, CCV_TENSOR_GET_DEVICE_ID(y->info.type), what);
  NNC_CUDA_CHECK(launch_unary(x->data.f32, y->data.f32, count_of(y), unary_op(cmd.cmd), cmd.info.blas.a[0], s), what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// EWSUM / EWPROD over any number of inputs: the first two, then each next one into the output.
NNC_KERNEL(reduce_inputs) {
  static const char* what = "EWSUM / EWPROD (GPU_REF)";
  ccv_nnc_tensor_t* y = outputs[0];
  const int op = cmd.cmd == CCV_NNC_EWSUM_FORWARD ? 0 : 1;
  const long long n = count_of(y);
  const cudaStream_t s = stream_of(stream_context, CCV_TENSOR_GET_DEVICE_ID(y->info.type), what);
  std::vector<const ccv_nnc_tensor_t*> in;
  for (int i = 0; i < input_size; i++)
    if (inputs[i]) in.push_back(inputs[i]);
  NNC_CHECK(!in.empty(), "%s: no input", what);
  if (in.size() == 1) {
    if (in[0]->data.f32 != y->data.f32)
      NNC_CUDA_CHECK(cudaMemcpyAsync(y->data.f32, in[0]->data.f32, static_cast<size_t>(n) * 4, cudaMemcpyDeviceToDevice, s), what);
    finish(stream_context, s, what);
    return CCV_NNC_EXEC_SUCCESS;
  }
  NNC_CUDA_CHECK(launch_binary(in[0]->data.f32, in[1]->data.f32, y->data.f32, n, op, s), what);
  for (size_t i = 2; i < in.size(); i++) NNC_CUDA_CHECK(launch_binary(y->data.f32, in[i]->data.f32, y->data.f32, n, op, s), what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// EWDIV: a / b, or 1 / b when a is absent.
NNC_KERNEL(divide) {
  static const char* what = "EWDIV (GPU_REF)";
  ccv_nnc_tensor_t* y = outputs[0];
  const ccv_nnc_tensor_t* a = input_size > 0 ? inputs[0] : nullptr;
  const ccv_nnc_tensor_t* b = input_size > 1 ? inputs[1] : nullptr;
  NNC_CHECK(b, "%s: the divisor (input 1) is NULL", what);
  const cudaStream_t s = stream_of(stream_context, CCV_TENSOR_GET_DEVICE_ID(y->info.type), what);
  if (a)
    NNC_CUDA_CHECK(launch_binary(a->data.f32, b->data.f32, y->data.f32, count_of(y), 2, s), what);
  else
    NNC_CUDA_CHECK(launch_unary(b->data.f32, y->data.f32, count_of(y), 7, 0, s), what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// SET: every output filled with the command's value (what compile's
// INIT_ZEROS / INIT_ONES initialisers run).
bool accept_set(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const* outputs, int output_size) {
  for (int j = 0; j < output_size; j++)
    if (outputs[j] && !gpu_f32(outputs[j])) return false;
  return output_size > 0;
}

NNC_KERNEL(set) {
  static const char* what = "SET (GPU_REF)";
  for (int j = 0; j < output_size; j++) {
    ccv_nnc_tensor_t* y = outputs[j];
    if (!y) continue;
    // Each output on its own device's stream; a synchronous call waits for each.
    const cudaStream_t s = stream_of(stream_context, CCV_TENSOR_GET_DEVICE_ID(y->info.type), what);
    NNC_CUDA_CHECK(launch_unary(y->data.f32, y->data.f32, count_of(y), 8, cmd.info.blas.a[0], s), what);
    finish(stream_context, s, what);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

// Backward |g|x|y| -> |dx|: which value each command reads (y, or x for
// EWLOG; RELU takes x when y is absent), and the gradient op in kernels.cu.
struct Grad {
  int op;
  bool reads_y;
};
Grad grad_of(uint32_t cmd) {
  switch (cmd) {
    case CCV_NNC_RELU_BACKWARD: return {0, true};
    case CCV_NNC_SIGMOID_BACKWARD: return {1, true};
    case CCV_NNC_TANH_BACKWARD: return {2, true};
    case CCV_NNC_EWEXP_BACKWARD: return {3, true};
    case CCV_NNC_EWLOG_BACKWARD: return {4, false};
    default: return {5, true};  // EWSQRT_BACKWARD
  }
}
const ccv_nnc_tensor_t* grad_value(uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size) {
  const ccv_nnc_tensor_t* x = input_size > 1 ? inputs[1] : nullptr;
  const ccv_nnc_tensor_t* y = input_size > 2 ? inputs[2] : nullptr;
  if (!grad_of(cmd).reads_y) return x;
  if (y) return y;
  return cmd == CCV_NNC_RELU_BACKWARD ? x : nullptr;  // RELU's test is the same on x
}

bool accept_grad(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                 int output_size) {
  if (output_size < 1 || !gpu_f32(outputs[0]) || input_size < 2 || !gpu_f32(inputs[0])) return false;
  const ccv_nnc_tensor_t* v = grad_value(cmd.cmd, inputs, input_size);
  const long long n = count_of(outputs[0]);
  return gpu_f32(v) && count_of(v) == n && count_of(inputs[0]) == n;
}

NNC_KERNEL(grad) {
  static const char* what = "element-wise backward (GPU_REF)";
  ccv_nnc_tensor_t* dx = outputs[0];
  const ccv_nnc_tensor_t* v = grad_value(cmd.cmd, inputs, input_size);
  const cudaStream_t s = stream_of(stream_context, CCV_TENSOR_GET_DEVICE_ID(dx->info.type), what);
  NNC_CUDA_CHECK(launch_grad(inputs[0]->data.f32, v->data.f32, dx->data.f32, count_of(dx), grad_of(cmd.cmd).op, s), what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_ew(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.datatypes = CCV_32F;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  const KernelTraits traits = t.accepting(accept_same_count);
  r.add_kernels(traits, {{CCV_NNC_EWEXP_FORWARD, unary},
                         {CCV_NNC_EWLOG_FORWARD, unary},
                         {CCV_NNC_EWSQRT_FORWARD, unary},
                         {CCV_NNC_RELU_FORWARD, unary},
                         {CCV_NNC_SIGMOID_FORWARD, unary},
                         {CCV_NNC_TANH_FORWARD, unary},
                         {CCV_NNC_SCALAR_MUL_FORWARD, unary},
                         {CCV_NNC_EWSUM_FORWARD, reduce_inputs},
                         {CCV_NNC_EWPROD_FORWARD, reduce_inputs},
                         {CCV_NNC_EWDIV_FORWARD, divide}});
  r.add_kernels(t.accepting(accept_set), {{CCV_NNC_SET_FORWARD, set}});
  r.add_kernels(t.accepting(accept_grad), {{CCV_NNC_RELU_BACKWARD, grad},
                                           {CCV_NNC_SIGMOID_BACKWARD, grad},
                                           {CCV_NNC_TANH_BACKWARD, grad},
                                           {CCV_NNC_EWEXP_BACKWARD, grad},
                                           {CCV_NNC_EWLOG_BACKWARD, grad},
                                           {CCV_NNC_EWSQRT_BACKWARD, grad}});
}

}  // namespace nnc::cuda
