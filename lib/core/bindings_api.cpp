// Exported functions for language bindings (ccv_nnc.h, "Bindings support"):
// the ABI version and struct sizes, live-object counts, and function forms of
// what C programs get from macros and inline helpers. Each command
// constructor fills the same fields, and only those, that its CMD_*_FORWARD()
// macro names; test/c/bindings_api.c compares the bytes.
#include <atomic>
#include <cstring>

#include "core/error.hpp"
#include "core/export.hpp"
#include "core/live.hpp"
#include "core/tensor.hpp"

namespace nnc {
std::atomic<int64_t> g_live_objects[CCV_NNC_LIVE_KIND_COUNT];
}

using namespace nnc;

namespace {

ccv_nnc_cmd_t zero_cmd() noexcept {
  ccv_nnc_cmd_t c;
  std::memset(&c, 0, sizeof(c));
  return c;
}

// ccv_nnc_cmd(id, 0, params, 0) as the macros produce it: every byte the
// designated initialisers do not name is zero.
ccv_nnc_cmd_t make_cmd(uint32_t id, const ccv_nnc_cmd_param_t& params) noexcept {
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, 0, params, 0);
  return c;
}

ccv_nnc_cmd_param_t zero_params() noexcept {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return p;
}

// The {.size={.dim={1,1,1}}} most macros start from.
ccv_nnc_cmd_param_t unit_params() noexcept {
  ccv_nnc_cmd_param_t p = zero_params();
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  return p;
}

// A command whose parameters may be rejected: on an exception the all-zero
// command, with the message set.
template <class F>
ccv_nnc_cmd_t checked_cmd(F&& f) noexcept {
  return guard_else([]() noexcept { return zero_cmd(); }, std::forward<F>(f));
}

void copy_axes(int* to, int count, const int* axis, const char* what) {
  NNC_CHECK(count >= 0 && count <= CCV_NNC_MAX_DIM_ALLOC, "%s: axis_count %d is outside 0..%d", what, count,
            CCV_NNC_MAX_DIM_ALLOC);
  NNC_CHECK(count == 0 || axis, "%s: axis is NULL with axis_count %d", what, count);
  for (int i = 0; i < count; i++) to[i] = axis[i];
}

// Element (row-major index) i of a layout, as a pointer.
void copy_elements(const Layout& l, unsigned char* host, int host_dt, bool to_tensor) {
  const size_t hsize = datatype_size(host_dt);
  size_t i = 0;
  if (l.packed() && l.datatype == host_dt) {
    const size_t bytes = l.count() * hsize;
    if (to_tensor)
      std::memcpy(l.data, host, bytes);
    else
      std::memcpy(host, l.data, bytes);
    return;
  }
  for_each_index(l.dim.data(), l.nd, [&](const int* index) {
    unsigned char* t = l.at(index);
    unsigned char* h = host + i * hsize;
    if (to_tensor)
      store_double(t, l.datatype, load_double(h, host_dt));
    else
      store_double(h, host_dt, load_double(t, l.datatype));
    i++;
  });
}

Layout host_layout(const ccv_nnc_tensor_t* tensor, const void* values, int datatype, size_t count, const char* what) {
  NNC_CHECK(tensor, "%s: tensor is NULL", what);
  NNC_CHECK(values, "%s: values is NULL", what);
  const Layout l = layout_of(tensor, what);
  NNC_CHECK(l.memory == CCV_TENSOR_CPU_MEMORY, "%s: the tensor is not in CPU memory", what);
  NNC_CHECK(l.data || l.count() == 0, "%s: the tensor has no data", what);
  NNC_CHECK(datatype_supported(l.datatype), "%s: the tensor's data type 0x%x is not supported", what, l.datatype);
  const int dt = CCV_GET_DATA_TYPE(datatype);
  NNC_CHECK(dt == datatype && datatype_supported(dt), "%s: datatype 0x%x is not one of CCV_32F, CCV_64F, CCV_16F, CCV_16BF, CCV_32S, CCV_64S, CCV_8U",
            what, datatype);
  NNC_CHECK(count == l.count(), "%s: count %zu differs from the tensor's %zu elements (%s)", what, count, l.count(),
            shape_string(tensor->info.dim).c_str());
  return l;
}

}  // namespace

extern "C" {

NNC_API int ccv_nnc_abi_version(void) { return CCV_NNC_ABI_VERSION; }

NNC_API size_t ccv_nnc_type_size(const int type) {
  return guard<size_t>(0, [&]() -> size_t {
    switch (type) {
      case CCV_NNC_TYPE_TENSOR_PARAM: return sizeof(ccv_nnc_tensor_param_t);
      case CCV_NNC_TYPE_CMD_PARAM: return sizeof(ccv_nnc_cmd_param_t);
      case CCV_NNC_TYPE_CMD: return sizeof(ccv_nnc_cmd_t);
      case CCV_NNC_TYPE_HINT: return sizeof(ccv_nnc_hint_t);
      case CCV_NNC_TYPE_TENSOR: return sizeof(ccv_nnc_tensor_t);
      case CCV_NNC_TYPE_TENSOR_VIEW: return sizeof(ccv_nnc_tensor_view_t);
      case CCV_NNC_TYPE_TENSOR_SYMBOL: return sizeof(ccv_nnc_tensor_symbol_t);
      case CCV_NNC_TYPE_GRAPH_EXEC_SYMBOL: return sizeof(ccv_nnc_graph_exec_symbol_t);
      case CCV_NNC_TYPE_GRAPH_EXEC: return sizeof(ccv_nnc_graph_exec_t);
      case CCV_NNC_TYPE_TENSOR_SYMBOL_MAP: return sizeof(ccv_nnc_tensor_symbol_map_t);
      case CCV_NNC_TYPE_TENSOR_BIND: return sizeof(ccv_nnc_tensor_bind_t);
      case CCV_NNC_TYPE_EVALUATE_PARAM: return sizeof(ccv_cnnp_evaluate_param_t);
      case CCV_NNC_TYPE_TENSOR_IO_OPTION: return sizeof(ccv_nnc_tensor_io_option_t);
      case CCV_NNC_TYPE_COLUMN_DATA: return sizeof(ccv_cnnp_column_data_t);
    }
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_type_size: %d is not a CCV_NNC_TYPE_* identifier", type);
  });
}

NNC_API int64_t ccv_nnc_live_object_count(const int kind) {
  return guard<int64_t>(-1, [&]() -> int64_t {
    NNC_CHECK(kind < CCV_NNC_LIVE_KIND_COUNT, "ccv_nnc_live_object_count: %d is not a CCV_NNC_LIVE_* kind (0..%d)", kind,
              CCV_NNC_LIVE_KIND_COUNT - 1);
    if (kind >= 0) return g_live_objects[kind].load(std::memory_order_relaxed);
    int64_t sum = 0;
    for (const auto& c : g_live_objects) sum += c.load(std::memory_order_relaxed);
    return sum;
  });
}

/* Tensor parameters and access */

NNC_API ccv_nnc_tensor_param_t ccv_nnc_tensor_param_make(const int type, const int format, const int datatype, const int rank,
                                                         const int* const dims) {
  return guard_else(
      []() noexcept {
        ccv_nnc_tensor_param_t p;
        std::memset(&p, 0, sizeof(p));
        return p;
      },
      [&] {
        static const char* what = "ccv_nnc_tensor_param_make";
        NNC_CHECK(rank >= 0 && rank <= CCV_NNC_MAX_DIM_ALLOC, "%s: rank %d is outside 0..%d", what, rank, CCV_NNC_MAX_DIM_ALLOC);
        NNC_CHECK(rank == 0 || dims, "%s: dims is NULL with rank %d", what, rank);
        ccv_nnc_tensor_param_t p;
        std::memset(&p, 0, sizeof(p));
        p.type = type;
        p.format = format;
        p.datatype = datatype;
        for (int i = 0; i < rank; i++) {
          NNC_CHECK(dims[i] > 0, "%s: dimension %d is %d; every dimension must be > 0", what, i, dims[i]);
          p.dim[i] = dims[i];
        }
        return p;
      });
}

NNC_API int ccv_nnc_tensor_param_rank(const ccv_nnc_tensor_param_t* const params) {
  return guard<int>(-1, [&] {
    NNC_CHECK(params, "ccv_nnc_tensor_param_rank: params is NULL");
    return nd_of(params->dim);
  });
}

NNC_API size_t ccv_nnc_tensor_param_count(const ccv_nnc_tensor_param_t* const params) {
  return params ? ccv_nnc_tensor_count(*params) : 0;
}

NNC_API size_t ccv_nnc_tensor_param_data_size(const ccv_nnc_tensor_param_t* const params) {
  return params ? ccv_nnc_tensor_data_size(*params) : 0;
}

NNC_API int ccv_nnc_tensor_get_params(const ccv_nnc_tensor_t* const tensor, ccv_nnc_tensor_param_t* const params_out) {
  return guard<int>(-1, [&] {
    NNC_CHECK(tensor, "ccv_nnc_tensor_get_params: tensor is NULL");
    NNC_CHECK(params_out, "ccv_nnc_tensor_get_params: params_out is NULL");
    // A plain tensor keeps the dense-matrix step in a spare dim entry: hand
    // back the shape only.
    *params_out = normalized_params(tensor->info);
    return 0;
  });
}

NNC_API void* ccv_nnc_tensor_data_ptr(const ccv_nnc_tensor_t* const tensor) {
  return guard<void*>(nullptr, [&] {
    NNC_CHECK(tensor, "ccv_nnc_tensor_data_ptr: tensor is NULL");
    return static_cast<void*>(tensor->data.u8);
  });
}

NNC_API int ccv_nnc_tensor_is_view(const ccv_nnc_tensor_t* const tensor) {
  return guard<int>(-1, [&] {
    NNC_CHECK(tensor, "ccv_nnc_tensor_is_view: tensor is NULL");
    return CCV_IS_TENSOR_VIEW(tensor) ? 1 : 0;
  });
}

NNC_API int ccv_nnc_tensor_get_strides(const ccv_nnc_tensor_t* const tensor, int stride[CCV_NNC_MAX_DIM_ALLOC]) {
  return guard<int>(-1, [&] {
    NNC_CHECK(stride, "ccv_nnc_tensor_get_strides: stride is NULL");
    const Layout l = layout_of(tensor, "ccv_nnc_tensor_get_strides: tensor");
    int out[CCV_NNC_MAX_DIM_ALLOC] = {};
    for (int i = 0; i < l.nd; i++) out[i] = static_cast<int>(l.stride[i]);
    std::memcpy(stride, out, sizeof(out));
    return 0;
  });
}

NNC_API int ccv_nnc_tensor_copy_from(ccv_nnc_tensor_t* const tensor, const void* const values, const int datatype, const size_t count) {
  return guard<int>(-1, [&] {
    const Layout l = host_layout(tensor, values, datatype, count, "ccv_nnc_tensor_copy_from");
    copy_elements(l, static_cast<unsigned char*>(const_cast<void*>(values)), datatype, true);
    return 0;
  });
}

NNC_API int ccv_nnc_tensor_copy_to(const ccv_nnc_tensor_t* const tensor, void* const values, const int datatype, const size_t count) {
  return guard<int>(-1, [&] {
    const Layout l = host_layout(tensor, values, datatype, count, "ccv_nnc_tensor_copy_to");
    copy_elements(l, static_cast<unsigned char*>(values), datatype, false);
    return 0;
  });
}

/* Hints */

NNC_API ccv_nnc_hint_t ccv_nnc_hint_make(const int rank, const int* const stride, const int* const border_begin,
                                         const int* const border_end) {
  return guard_else([]() noexcept { return ccv_nnc_no_hint; },
                    [&] {
                      NNC_CHECK(rank >= 0 && rank <= CCV_NNC_MAX_DIM_ALLOC, "ccv_nnc_hint_make: rank %d is outside 0..%d", rank,
                                CCV_NNC_MAX_DIM_ALLOC);
                      ccv_nnc_hint_t h;
                      std::memset(&h, 0, sizeof(h));
                      for (int i = 0; i < rank; i++) {
                        h.stride.dim[i] = stride ? stride[i] : 0;
                        h.border.begin[i] = border_begin ? border_begin[i] : 0;
                        h.border.end[i] = border_end ? border_end[i] : 0;
                      }
                      return h;
                    });
}

NNC_API ccv_nnc_hint_t ccv_nnc_hint_auto_p(const ccv_nnc_cmd_t* const cmd, const ccv_nnc_tensor_param_t* const a,
                                           const ccv_nnc_tensor_param_t* const b) {
  if (!cmd || !a || !b) {
    guard_void([] { fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_hint_auto_p: cmd, a and b must not be NULL"); });
    return ccv_nnc_no_hint;
  }
  return ccv_nnc_hint_auto(cmd->info, *a, *b);
}

/* Typed command constructors */

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_gemm_forward(const int* const transpose_a, const int* const transpose_b) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.blas.a[0] = p.blas.a[1] = 1;
  if (transpose_a) p.blas.transpose_a[0] = transpose_a[0], p.blas.transpose_a[1] = transpose_a[1];
  if (transpose_b) p.blas.transpose_b[0] = transpose_b[0], p.blas.transpose_b[1] = transpose_b[1];
  return make_cmd(CCV_NNC_GEMM_FORWARD, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_convolution_forward(const int groups, const int count, const int kernel_rank,
                                                      const int* const kernel_dims) {
  return checked_cmd([&] {
    static const char* what = "ccv_nnc_cmd_convolution_forward";
    NNC_CHECK(kernel_rank >= 1 && kernel_rank <= CCV_NNC_MAX_DIM_ALLOC, "%s: kernel_rank %d is outside 1..%d", what, kernel_rank,
              CCV_NNC_MAX_DIM_ALLOC);
    NNC_CHECK(kernel_dims, "%s: kernel_dims is NULL", what);
    ccv_nnc_cmd_param_t p = zero_params();
    for (int i = 0; i < kernel_rank; i++) p.size.dim[i] = kernel_dims[i];
    p.convolution.count = count;
    p.convolution.groups = groups;
    return make_cmd(CCV_NNC_CONVOLUTION_FORWARD, p);
  });
}

static ccv_nnc_cmd_t pool_cmd(uint32_t id, int rows, int cols) {
  ccv_nnc_cmd_param_t p = zero_params();
  p.size.dim[0] = rows;
  p.size.dim[1] = cols;
  p.size.dim[2] = 1;
  return make_cmd(id, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_max_pool_forward(const int rows, const int cols) { return pool_cmd(CCV_NNC_MAX_POOL_FORWARD, rows, cols); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_average_pool_forward(const int rows, const int cols) {
  return pool_cmd(CCV_NNC_AVERAGE_POOL_FORWARD, rows, cols);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_relu_forward(void) { return make_cmd(CCV_NNC_RELU_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_sigmoid_forward(void) { return make_cmd(CCV_NNC_SIGMOID_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_tanh_forward(void) { return make_cmd(CCV_NNC_TANH_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_swish_forward(void) { return make_cmd(CCV_NNC_SWISH_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_softmax_forward(void) { return make_cmd(CCV_NNC_SOFTMAX_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_ewsum_forward(void) { return make_cmd(CCV_NNC_EWSUM_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_ewprod_forward(void) { return make_cmd(CCV_NNC_EWPROD_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_ewdiv_forward(void) { return make_cmd(CCV_NNC_EWDIV_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_ewexp_forward(void) { return make_cmd(CCV_NNC_EWEXP_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_ewlog_forward(void) { return make_cmd(CCV_NNC_EWLOG_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_ewsqrt_forward(void) { return make_cmd(CCV_NNC_EWSQRT_FORWARD, ccv_nnc_cmd_auto); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_data_transfer_forward(void) { return make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, ccv_nnc_cmd_auto); }

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_gelu_forward(const int tanh_approximation) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.gelu.tanh = tanh_approximation;
  return make_cmd(CCV_NNC_GELU_FORWARD, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_leaky_relu_forward(const float negative_slope) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.leaky_relu.negative_slope = negative_slope;
  return make_cmd(CCV_NNC_LEAKY_RELU_FORWARD, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_softmax_crossentropy_forward(const float trim0, const float trim1) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.label_smoothing.trim0 = trim0;
  p.label_smoothing.trim1 = trim1;
  return make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_mse_forward(const int reduce_op) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.mse.reduce_op = reduce_op;
  return make_cmd(CCV_NNC_MSE_FORWARD, p);
}

static ccv_nnc_cmd_t blas_cmd(uint32_t id, float a0, float a1) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.blas.a[0] = a0;
  p.blas.a[1] = a1;
  return make_cmd(id, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_add_forward(const float p, const float q) { return blas_cmd(CCV_NNC_ADD_FORWARD, p, q); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_mul_forward(const float p) { return blas_cmd(CCV_NNC_MUL_FORWARD, p, 0); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_scalar_mul_forward(const float a) { return blas_cmd(CCV_NNC_SCALAR_MUL_FORWARD, a, 0); }
NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_set_forward(const float value) { return blas_cmd(CCV_NNC_SET_FORWARD, value, 0); }

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_batch_norm_forward(const float epsilon, const int is_test, const float momentum, const int axis_count,
                                                     const int* const axis) {
  return checked_cmd([&] {
    ccv_nnc_cmd_param_t p = unit_params();
    copy_axes(p.bnorm.axis, axis_count, axis, "ccv_nnc_cmd_batch_norm_forward");
    p.bnorm.count = axis_count;
    p.bnorm.epsilon = epsilon;
    p.bnorm.is_test = is_test;
    p.bnorm.momentum = momentum;
    return make_cmd(CCV_NNC_BATCH_NORM_FORWARD, p);
  });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_layer_norm_forward(const float epsilon, const int elementwise_affine, const int axis_count,
                                                     const int* const axis) {
  return checked_cmd([&] {
    ccv_nnc_cmd_param_t p = unit_params();
    copy_axes(p.lnorm.axis, axis_count, axis, "ccv_nnc_cmd_layer_norm_forward");
    p.lnorm.count = axis_count;
    p.lnorm.epsilon = epsilon;
    p.lnorm.elementwise_affine = elementwise_affine;
    return make_cmd(CCV_NNC_LAYER_NORM_FORWARD, p);
  });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_sgd_forward(const int nesterov, const float rate, const float scale, const float decay,
                                              const float momentum, const float dampening) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.sgd.nesterov = nesterov;
  p.sgd.rate = rate;
  p.sgd.scale = scale;
  p.sgd.decay = decay;
  p.sgd.momentum = momentum;
  p.sgd.dampening = dampening;
  return make_cmd(CCV_NNC_SGD_FORWARD, p);
}

static ccv_nnc_cmd_t adam_cmd(uint32_t id, int step, float rate, float beta1, float beta2, float decay, float epsilon, int amsgrad) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.adam.step = step;
  p.adam.rate = rate;
  p.adam.scale = 1;
  p.adam.beta1 = beta1;
  p.adam.beta2 = beta2;
  p.adam.decay = decay;
  p.adam.epsilon = epsilon;
  p.adam.amsgrad = amsgrad;
  return make_cmd(id, p);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_adam_forward(const int step, const float rate, const float beta1, const float beta2, const float decay,
                                               const float epsilon, const int amsgrad) {
  return adam_cmd(CCV_NNC_ADAM_FORWARD, step, rate, beta1, beta2, decay, epsilon, amsgrad);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_adamw_forward(const int step, const float rate, const float beta1, const float beta2, const float decay,
                                                const float epsilon, const int amsgrad) {
  return adam_cmd(CCV_NNC_ADAMW_FORWARD, step, rate, beta1, beta2, decay, epsilon, amsgrad);
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_transpose_forward(const int axis_a, const int axis_b) {
  ccv_nnc_cmd_param_t p = unit_params();
  p.transpose.axis[0] = axis_a;
  p.transpose.axis[1] = axis_b;
  return make_cmd(CCV_NNC_TRANSPOSE_FORWARD, p);
}

static ccv_nnc_cmd_t reduce_cmd(uint32_t id, int axis_count, const int* axis, const char* what) {
  return checked_cmd([&] {
    ccv_nnc_cmd_param_t p = unit_params();
    copy_axes(p.reduce.axis, axis_count, axis, what);
    p.reduce.count = axis_count;
    return make_cmd(id, p);
  });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_reduce_sum_forward(const int axis_count, const int* const axis) {
  return reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, axis_count, axis, "ccv_nnc_cmd_reduce_sum_forward");
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_reduce_mean_forward(const int axis_count, const int* const axis) {
  return reduce_cmd(CCV_NNC_REDUCE_MEAN_FORWARD, axis_count, axis, "ccv_nnc_cmd_reduce_mean_forward");
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_make(const uint32_t cmd_id, const ccv_nnc_cmd_param_t* const params) {
  return make_cmd(cmd_id, params ? *params : ccv_nnc_cmd_auto);
}

/* Pointer-taking variants */

NNC_API int ccv_nnc_cmd_exec_p(const ccv_nnc_cmd_t* const cmd, const ccv_nnc_hint_t* const hint, const int flags,
                               ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs,
                               const int output_size, ccv_nnc_stream_context_t* const stream_context) {
  if (__builtin_expect(!cmd, 0))
    return guard_code([]() -> int { fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_cmd_exec_p: cmd is NULL"); });
  return ccv_nnc_cmd_exec(*cmd, hint ? *hint : ccv_nnc_no_hint, flags, inputs, input_size, outputs, output_size, stream_context);
}

}  // extern "C"
