// Layer constructors (layers*.cpp); api.cpp exports them as ccv_cnnp_*.
// Each throws nnc::Error with a message on bad arguments.
#pragma once

#include "cnnp/model.hpp"

namespace nnc::cnnp {

ccv_nnc_cmd_t command(uint32_t id, const ccv_nnc_cmd_param_t& p);
ccv_nnc_cmd_t command(uint32_t id);
int dims_of(const ccv_nnc_tensor_param_t& p);
// x's type and format (or `format`, when not -1) with the dimensions given (nothing past them).
ccv_nnc_tensor_param_t with_dims(const ccv_nnc_tensor_param_t& x, const std::vector<int>& dims, int format = -1);
// A layer with its trainability set (-1 inherits).
Model* finish(Layer* l, int is_trainable = -1);

Model* convolution(int groups, int filters, const int* kdim, const int* dilation, int no_bias, ccv_nnc_hint_t hint, int format,
                   int is_trainable, const char* name);
Model* dense(int count, int no_bias, int flags, int is_trainable, const char* name);
Model* max_pool(const int* kdim, ccv_nnc_hint_t hint, const char* name);
Model* average_pool(const int* kdim, ccv_nnc_hint_t hint, const char* name);
Model* flatten(const char* name);
Model* relu(const char* name);
Model* sigmoid(const char* name);
Model* tanh_layer(const char* name);
Model* swish(const char* name);
Model* softmax(const char* name);
Model* sqrt_layer(const char* name);
Model* gelu(int tanh, const char* name);
Model* leaky_relu(float slope, const char* name);
Model* scalar_mul(float a, const char* name);
Model* clamp(float min, float max, const char* name);
Model* identity(const char* name);
Model* add(float p, float q, const char* name);
Model* mul(float p, const char* name);
Model* sum(const char* name);
Model* reshape(int format, const int* dim, const int* ofs, const int* stride, const char* name);
Model* transpose(int axis_a, int axis_b, const char* name);
Model* dropout(float p, int entirety, const char* name);

// layers_more.cpp
Model* batch_norm(float momentum, float epsilon, int is_trainable, const char* name);
Model* layer_norm(float epsilon, const int* axis, int axis_count, int elementwise_affine, int is_trainable, const char* name);
Model* group_norm(int group_axis, int groups, float epsilon, const int* reduce_axis, int axis_count, int elementwise_affine, int is_trainable,
                  const char* name);
Model* rmsnorm(float epsilon, const int* axis, int axis_count, int is_trainable, const char* name);
Model* concat(int axis, const char* name);
Model* chunk(int n, int axis, const char* name);
Model* extract(int index, const char* name);
Model* permute(const int* index, const char* name);
Model* contiguous(const char* name);
Model* pad(int type, const int* begin, const int* end, const char* name);
Model* upsample(int type, float width_scale, float height_scale, int align_corners, const char* name);
Model* cmul(const char* name);
Model* min_layer(const char* name);
Model* max_layer(const char* name);
Model* div(int reciprocal, const char* name);
Model* reduce_sum(const int* axis, int count, const char* name);
Model* reduce_mean(const int* axis, int count, const char* name);
Model* reduce_max(const int* axis, int count, const char* name);
Model* reduce_min(const int* axis, int count, const char* name);
Model* reduce_norm2(const int* axis, int count, const char* name);
Model* argmax(int axis, const char* name);
Model* argmin(int axis, const char* name);
Model* masked_fill(float eq, float fill, const char* name);
Model* index_select(const char* name);
Model* embedding(int datatype, int vocab_size, int embed_size, int is_trainable, const char* name);
Model* matmul(const int* transpose_a, const int* transpose_b, int flags, const char* name);
Model* datatype_conversion(int datatype, int ref_to_last, const char* name);
Model* parameter(const ccv_nnc_tensor_param_t& params, float init_bound, int is_trainable, const char* name);
Model* scalar(int type, int format, int datatype, float value, const char* name);
Model* variable(const ccv_nnc_tensor_param_t& params, const char* name);
Model* move(const char* name);
// Families without a kernel yet (the first run fails naming the command).
Model* convolution_transpose(int groups, int filters, const int* kdim, const int* dilation, int output_padding, int no_bias, ccv_nnc_hint_t hint,
                             int format, int is_trainable, const char* name);
Model* scaled_dot_product_attention(float scale, int is_causal, int has_attn_mask, int flags, int fused_unify_head_weights, int no_bias,
                                    int is_trainable, const char* name);
// The LSTM command with its packed weights as one parameter (layers_more.cpp).
Model* lstm(int masked, int hidden_size, int proj_size, int num_layers, int bias, int batch_first, int bidirectional, float dropout, int is_trainable,
            const char* name);

// layers_exec.cpp: models over a caller's command, symbolic graph or debug function.
Model* cmd_exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, const ccv_cnnp_cmd_exec_io_t* inputs, int input_size,
                const int* outputs, int output_size, int is_trainable, const char* name);
Model* graph_model(const ccv_nnc_symbolic_graph_t* graph, const ccv_cnnp_tensor_symbol_param_t* params, int param_size,
                   const ccv_nnc_tensor_symbol_t* inputs, int input_size, const ccv_nnc_tensor_symbol_t* outputs, int output_size, int is_trainable,
                   const char* name);
Model* debug(ccv_cnnp_model_debug_f func, void* context, ccv_cnnp_model_debug_context_deinit_f deinit, ccv_cnnp_model_debug_context_copy_f copy,
             const char* name);
ccv_cnnp_cmd_exec_io_init_state_t cmd_exec_io_copy(const ccv_nnc_tensor_t* tensor);
ccv_cnnp_cmd_exec_io_init_state_t cmd_exec_io_set_by(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
                                                     const ccv_nnc_tensor_param_t& params);

// Composition (model.cpp).
Model* make_sequential(Model* const* models, int size, int is_trainable, const char* name);
Model* make_functional(const ccv_cnnp_model_io_t* inputs, int input_size, const ccv_cnnp_model_io_t* outputs, int output_size,
                       int is_trainable, const char* name);
Model* make_dynamic(ccv_cnnp_model_dynamic_f func, void* context, const char* name);
Io* make_input();
Io* apply(Model* m, const ccv_cnnp_model_io_t* inputs, int size);

}  // namespace nnc::cnnp
