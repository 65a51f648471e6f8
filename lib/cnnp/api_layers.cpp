// The exported layer constructors (ccv_cnnp_<layer>): layers*.cpp build them.
#include "cnnp/layers.hpp"
#include "core/error.hpp"
#include "core/export.hpp"

using namespace nnc;
using namespace nnc::cnnp;

#define NNC_LAYER(expr) return guard<ccv_cnnp_model_t*>(nullptr, [&] { return (expr); })

NNC_API ccv_cnnp_model_t* ccv_cnnp_convolution(const int groups, const int filters, const int kdim[CCV_NNC_MAX_DIM_ALLOC],
                                               const int dilation[CCV_NNC_MAX_DIM_ALLOC], const int no_bias, ccv_nnc_hint_t hint, const int format,
                                               const int is_trainable, const char* const name) {
  NNC_LAYER(convolution(groups, filters, kdim, dilation, no_bias, hint, format, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_dense(const int count, const int no_bias, const int flags, const int is_trainable, const char* const name) {
  NNC_LAYER(dense(count, no_bias, flags, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_max_pool(const int kdim[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_hint_t hint, const char* const name) {
  NNC_LAYER(max_pool(kdim, hint, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_average_pool(const int kdim[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_hint_t hint, const char* const name) {
  NNC_LAYER(average_pool(kdim, hint, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_flatten(const char* const name) { NNC_LAYER(flatten(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_relu(const char* const name) { NNC_LAYER(relu(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_sigmoid(const char* const name) { NNC_LAYER(sigmoid(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_tanh(const char* const name) { NNC_LAYER(tanh_layer(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_swish(const char* const name) { NNC_LAYER(swish(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_softmax(const char* const name) { NNC_LAYER(softmax(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_sqrt(const char* const name) { NNC_LAYER(sqrt_layer(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_gelu(const int tanh, const char* const name) { NNC_LAYER(gelu(tanh, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_leaky_relu(const float negative_slope, const char* const name) { NNC_LAYER(leaky_relu(negative_slope, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_scalar_mul(const float a, const char* const name) { NNC_LAYER(scalar_mul(a, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_clamp(const float min, const float max, const char* const name) { NNC_LAYER(clamp(min, max, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_identity(const char* const name) { NNC_LAYER(identity(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_add(const float p, const float q, const char* const name) { NNC_LAYER(add(p, q, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_mul(const float p, const char* const name) { NNC_LAYER(mul(p, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_sum(const char* const name) { NNC_LAYER(sum(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_reshape(const int format, const int dim[CCV_NNC_MAX_DIM_ALLOC], const int ofs[CCV_NNC_MAX_DIM_ALLOC],
                                           const int stride[CCV_NNC_MAX_DIM_ALLOC], const char* const name) {
  NNC_LAYER(reshape(format, dim, ofs, stride, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_transpose(const int axis_a, const int axis_b, const char* const name) { NNC_LAYER(transpose(axis_a, axis_b, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_dropout(const float p, const int entirety, const char* const name) { NNC_LAYER(dropout(p, entirety, name)); }
