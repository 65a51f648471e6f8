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

// layers_more.cpp
NNC_API ccv_cnnp_model_t* ccv_cnnp_batch_norm(const float momentum, const float epsilon, const int is_trainable, const char* const name) {
  NNC_LAYER(batch_norm(momentum, epsilon, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_layer_norm(const float epsilon, const int axis[CCV_NNC_MAX_DIM_ALLOC], const int axis_count,
                                              const int elementwise_affine, const int is_trainable, const char* const name) {
  NNC_LAYER(layer_norm(epsilon, axis, axis_count, elementwise_affine, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_group_norm(const int group_axis, const int groups, const float epsilon, const int reduce_axis[CCV_NNC_MAX_DIM_ALLOC],
                                              const int axis_count, const int elementwise_affine, const int is_trainable, const char* const name) {
  NNC_LAYER(group_norm(group_axis, groups, epsilon, reduce_axis, axis_count, elementwise_affine, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_rmsnorm(const float epsilon, const int axis[CCV_NNC_MAX_DIM_ALLOC], const int axis_count, const int is_trainable,
                                           const char* const name) {
  NNC_LAYER(rmsnorm(epsilon, axis, axis_count, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_concat(const int axis, const char* const name) { NNC_LAYER(concat(axis, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_chunk(const int n, const int axis, const char* const name) { NNC_LAYER(chunk(n, axis, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_extract(const int index, const char* const name) { NNC_LAYER(extract(index, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_permute(const int index[CCV_NNC_MAX_DIM_ALLOC], const char* const name) { NNC_LAYER(permute(index, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_contiguous(const char* const name) { NNC_LAYER(contiguous(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_pad(const int type, const int begin[CCV_NNC_MAX_DIM_ALLOC], const int end[CCV_NNC_MAX_DIM_ALLOC],
                                       const char* const name) {
  NNC_LAYER(pad(type, begin, end, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_upsample(const int type, const float width_scale, const float height_scale, const int align_corners,
                                            const char* const name) {
  NNC_LAYER(upsample(type, width_scale, height_scale, align_corners, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_cmul(const char* const name) { NNC_LAYER(cmul(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_min(const char* const name) { NNC_LAYER(min_layer(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_max(const char* const name) { NNC_LAYER(max_layer(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_div(const int reciprocal, const char* const name) { NNC_LAYER(div(reciprocal, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_reduce_sum(const int* const axis, const int axis_count, const char* const name) {
  NNC_LAYER(reduce_sum(axis, axis_count, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_reduce_mean(const int* const axis, const int axis_count, const char* const name) {
  NNC_LAYER(reduce_mean(axis, axis_count, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_reduce_max(const int* const axis, const int axis_count, const char* const name) {
  NNC_LAYER(reduce_max(axis, axis_count, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_reduce_min(const int* const axis, const int axis_count, const char* const name) {
  NNC_LAYER(reduce_min(axis, axis_count, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_reduce_norm2(const int* const axis, const int axis_count, const char* const name) {
  NNC_LAYER(reduce_norm2(axis, axis_count, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_argmax(const int axis, const char* const name) { NNC_LAYER(argmax(axis, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_argmin(const int axis, const char* const name) { NNC_LAYER(argmin(axis, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_masked_fill(const float eq, const float fill, const char* const name) { NNC_LAYER(masked_fill(eq, fill, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_index_select(const char* const name) { NNC_LAYER(index_select(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_embedding(const int datatype, const int vocab_size, const int embed_size, const int is_trainable,
                                             const char* const name) {
  NNC_LAYER(embedding(datatype, vocab_size, embed_size, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_matmul(const int transpose_a[2], const int transpose_b[2], const int flags, const char* const name) {
  NNC_LAYER(matmul(transpose_a, transpose_b, flags, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_datatype_conversion(const int datatype, const int ref_to_last, const char* const name) {
  NNC_LAYER(datatype_conversion(datatype, ref_to_last, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_parameter(const ccv_nnc_tensor_param_t params, const float init_bound, const int is_trainable,
                                             const char* const name) {
  NNC_LAYER(parameter(params, init_bound, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_scalar(const int type, const int format, const int datatype, const float value, const char* const name) {
  NNC_LAYER(scalar(type, format, datatype, value, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_variable(const ccv_nnc_tensor_param_t params, const char* const name) { NNC_LAYER(variable(params, name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_move(const char* const name) { NNC_LAYER(move(name)); }
NNC_API ccv_cnnp_model_t* ccv_cnnp_convolution_transpose(const int groups, const int filters, const int kdim[CCV_NNC_MAX_DIM_ALLOC],
                                                         const int dilation[CCV_NNC_MAX_DIM_ALLOC], const int output_padding, const int no_bias,
                                                         ccv_nnc_hint_t hint, const int format, const int is_trainable, const char* const name) {
  NNC_LAYER(convolution_transpose(groups, filters, kdim, dilation, output_padding, no_bias, hint, format, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_scaled_dot_product_attention(const float scale, const int is_causal, const int has_attn_mask, const int flags,
                                                                 const int fused_unify_head_weights, const int no_bias, const int is_trainable,
                                                                 const char* const name) {
  NNC_LAYER(scaled_dot_product_attention(scale, is_causal, has_attn_mask, flags, fused_unify_head_weights, no_bias, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_lstm(const int masked, const int hidden_size, const int proj_size, const int num_layers, const int bias,
                                       const int batch_first, const int bidirectional, const float dropout, const int is_trainable,
                                       const char* const name) {
  NNC_LAYER(lstm(masked, hidden_size, proj_size, num_layers, bias, batch_first, bidirectional, dropout, is_trainable, name));
}

// layers_exec.cpp
NNC_API ccv_cnnp_model_t* ccv_cnnp_cmd_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, const ccv_cnnp_cmd_exec_io_t* const inputs,
                                            const int input_size, const int* const outputs, const int output_size, const int is_trainable,
                                            const char* const name) {
  NNC_LAYER(cmd_exec(cmd, hint, flags, inputs, input_size, outputs, output_size, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_graph(const ccv_nnc_symbolic_graph_t* const graph, const ccv_cnnp_tensor_symbol_param_t* const tensor_symbol_params,
                                         const int tensor_symbol_param_size, ccv_nnc_tensor_symbol_t* const inputs, const int input_size,
                                         ccv_nnc_tensor_symbol_t* const outputs, const int output_size, const int is_trainable,
                                         const char* const name) {
  NNC_LAYER(graph_model(graph, tensor_symbol_params, tensor_symbol_param_size, inputs, input_size, outputs, output_size, is_trainable, name));
}
NNC_API ccv_cnnp_model_t* ccv_cnnp_debug(ccv_cnnp_model_debug_f func, void* const context, ccv_cnnp_model_debug_context_deinit_f deinit,
                                         ccv_cnnp_model_debug_context_copy_f copy, const char* const name) {
  NNC_LAYER(debug(func, context, deinit, copy, name));
}
NNC_API ccv_cnnp_cmd_exec_io_init_state_t ccv_cnnp_cmd_exec_io_copy(const ccv_nnc_tensor_t* const tensor) {
  return guard<ccv_cnnp_cmd_exec_io_init_state_t>({}, [&] { return cmd_exec_io_copy(tensor); });
}
NNC_API ccv_cnnp_cmd_exec_io_init_state_t ccv_cnnp_cmd_exec_io_set_by(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags,
                                                                     const ccv_nnc_tensor_param_t params) {
  return guard<ccv_cnnp_cmd_exec_io_init_state_t>({}, [&] { return cmd_exec_io_set_by(cmd, hint, flags, params); });
}
