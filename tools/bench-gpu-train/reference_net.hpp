// The reference network (the demo's): two 5x5 convolutions with ReLU and 2x2
// max pooling, dense 256, ReLU, dense 10. bench-gpu-train times its training
// step on a GPU; host-cost-emu (tools/gpu-emu) measures that step's host side.
#pragma once

#include <random>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_bench {

inline ccv_cnnp_model_t* reference_net() {
  int k5[CCV_NNC_MAX_DIM_ALLOC] = {5, 5}, k2[CCV_NNC_MAX_DIM_ALLOC] = {2, 2};
  ccv_nnc_hint_t pad2{}, stride2{};
  pad2.stride.dim[0] = pad2.stride.dim[1] = 1;
  pad2.border.begin[0] = pad2.border.begin[1] = pad2.border.end[0] = pad2.border.end[1] = 2;
  stride2.stride.dim[0] = stride2.stride.dim[1] = 2;
  ccv_cnnp_model_t* layers[] = {
      ccv_cnnp_convolution(1, 32, k5, nullptr, 0, pad2, 0, 1, "conv1"), ccv_cnnp_relu(nullptr),
      ccv_cnnp_max_pool(k2, stride2, nullptr),
      ccv_cnnp_convolution(1, 64, k5, nullptr, 0, pad2, 0, 1, "conv2"), ccv_cnnp_relu(nullptr),
      ccv_cnnp_max_pool(k2, stride2, nullptr),
      ccv_cnnp_flatten(nullptr),
      ccv_cnnp_dense(256, 0, 0, 1, "fc1"), ccv_cnnp_relu(nullptr),
      ccv_cnnp_dense(10, 0, 0, 1, "fc2"),
  };
  return ccv_cnnp_sequential_new(layers, 10, 1, "reference");
}

// Compiled for GPU 0 at this batch (28x28x1 fp32 NHWC images, labels as
// floats): SGD lr 0.01, momentum 0.9, loss scaled by 1 / batch; softmax
// cross-entropy.
inline ccv_cnnp_model_t* compiled_reference_net(int batch, ccv_nnc_tensor_param_t* input) {
  ccv_cnnp_model_t* net = reference_net();
  ccv_nnc_tensor_param_t xp{};
  xp.type = CCV_TENSOR_GPU_MEMORY;  // device 0
  xp.format = CCV_TENSOR_FORMAT_NHWC;
  xp.datatype = CCV_32F;
  xp.dim[0] = batch, xp.dim[1] = 28, xp.dim[2] = 28, xp.dim[3] = 1;
  ccv_nnc_cmd_param_t sgd{};
  sgd.sgd.rate = 0.01f, sgd.sgd.scale = 1.0f / batch, sgd.sgd.momentum = 0.9f;
  ccv_nnc_cmd_param_t ce{};
  ce.label_smoothing.trim1 = 1;
  ccv_cnnp_model_compile(net, &xp, 1, ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, sgd, 0),
                         ccv_nnc_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, nullptr, ce, 0));
  *input = xp;
  return net;
}

// One batch of random images and labels on GPU 0 and the compiled network:
// step() is one ccv_cnnp_model_fit, queued on a GPU stream when on_stream
// (the model's static schedule then spreads it over up to 4 streams), and
// wait() waits for that stream. error() is the library's message after the
// last call ("" when none).
class ReferenceStep {
 public:
  ReferenceStep(int batch, bool on_stream) {
    ccv_nnc_tensor_param_t xp;
    net_ = compiled_reference_net(batch, &xp);
    ccv_nnc_tensor_param_t lp = xp;
    lp.dim[1] = lp.dim[2] = lp.dim[3] = 0;
    ccv_nnc_tensor_param_t hx = xp, hl = lp;
    hx.type = hl.type = CCV_TENSOR_CPU_MEMORY;
    x_ = ccv_nnc_tensor_new(nullptr, hx, 0);
    l_ = ccv_nnc_tensor_new(nullptr, hl, 0);
    gx_ = ccv_nnc_tensor_new(nullptr, xp, 0);
    gl_ = ccv_nnc_tensor_new(nullptr, lp, 0);
    std::mt19937 rng(0);
    std::normal_distribution<float> normal(0, 1);
    for (int i = 0; i < batch * 784; i++) x_->data.f32[i] = normal(rng);
    for (int i = 0; i < batch; i++) l_->data.f32[i] = static_cast<float>(rng() % 10);
    ccv_nnc_tensor_t* in[] = {x_, l_};
    ccv_nnc_tensor_t* out[] = {gx_, gl_};
    ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_param_t{}, 0), ccv_nnc_no_hint, 0,
                     in, 2, out, 2, nullptr);
    if (on_stream) {
      stream_ = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
      ccv_cnnp_model_set_max_concurrency(net_, 4);
    }
  }
  ReferenceStep(const ReferenceStep&) = delete;
  ReferenceStep& operator=(const ReferenceStep&) = delete;
  ~ReferenceStep() {
    if (stream_) ccv_nnc_stream_context_free(stream_);
    for (ccv_nnc_tensor_t* t : {x_, l_, gx_, gl_}) ccv_nnc_tensor_free(t);
    ccv_cnnp_model_free(net_);
  }
  void step() {
    ccv_nnc_tensor_t* fi[] = {gx_};
    ccv_nnc_tensor_t* ff[] = {gl_};
    ccv_cnnp_model_fit(net_, fi, 1, ff, 1, nullptr, 0, nullptr, stream_);
  }
  void wait() {
    if (stream_) ccv_nnc_stream_context_wait(stream_);
  }
  bool on_stream() const { return stream_ != nullptr; }
  static const char* error() { return ccv_nnc_error_message(); }

 private:
  ccv_cnnp_model_t* net_ = nullptr;
  ccv_nnc_tensor_t *x_ = nullptr, *l_ = nullptr, *gx_ = nullptr, *gl_ = nullptr;
  ccv_nnc_stream_context_t* stream_ = nullptr;
};

}  // namespace nnc_bench
