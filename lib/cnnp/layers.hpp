// Layer constructors (layers*.cpp); api.cpp exports them as ccv_cnnp_*.
// Each throws nnc::Error with a message on bad arguments.
#pragma once

#include "cnnp/model.hpp"

namespace nnc::cnnp {

ccv_nnc_cmd_t command(uint32_t id, const ccv_nnc_cmd_param_t& p);
ccv_nnc_cmd_t command(uint32_t id);
int dims_of(const ccv_nnc_tensor_param_t& p);

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

// Composition (model.cpp).
Model* make_sequential(Model* const* models, int size, int is_trainable, const char* name);
Model* make_functional(const ccv_cnnp_model_io_t* inputs, int input_size, const ccv_cnnp_model_io_t* outputs, int output_size,
                       int is_trainable, const char* name);
Model* make_dynamic(ccv_cnnp_model_dynamic_f func, void* context, const char* name);
Io* make_input();
Io* apply(Model* m, const ccv_cnnp_model_io_t* inputs, int size);

}  // namespace nnc::cnnp
