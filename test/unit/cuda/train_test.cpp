// The reference network (the demo's: two 5x5 convolutions with ReLU and 2x2
// max pooling, two dense layers, softmax cross-entropy, SGD with momentum)
// trained on the GPU through the model API, against the same model trained on
// the CPU from the same parameters on the same batches. The data: 28x28
// images whose class a fixed random teacher decides, so the loss can fall.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tools/bench-gpu-train/reference_net.hpp"
#include "unit/cuda/gpu.hpp"

namespace {

using nnc_gpu_test::Owned;

using nnc_bench::reference_net;  // tools/bench-gpu-train/reference_net.hpp

ccv_nnc_cmd_t sgd(float rate, float scale, float momentum) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.sgd.rate = rate, p.sgd.scale = scale, p.sgd.momentum = momentum;
  return ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, p, 0);
}

ccv_nnc_cmd_t crossentropy() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.label_smoothing.trim1 = 1;
  return ccv_nnc_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, nullptr, p, 0);
}

// Mean softmax cross-entropy of logits [n, 10] against labels, in double.
double mean_loss(const ccv_nnc_tensor_t* logits, const std::vector<float>& labels) {
  const int n = logits->info.dim[0];
  double total = 0;
  for (int i = 0; i < n; i++) {
    const float* z = logits->data.f32 + i * 10;
    double m = z[0];
    for (int k = 1; k < 10; k++) m = std::max(m, static_cast<double>(z[k]));
    double s = 0;
    for (int k = 0; k < 10; k++) s += std::exp(z[k] - m);
    total += std::log(s) + m - z[static_cast<int>(labels[i])];
  }
  return total / n;
}

// Trains the three copies (CPU, GPU, GPU stream) side by side for `steps`
// steps of batch N. Every step's logits agree with the CPU's for the first
// `close_steps` steps (the same function of nearly the same parameters); with
// `learns`, the loss falls alike on every side over the run.
void train_alongside(int N, int steps, int close_steps, bool learns) {
  ccv_nnc_tensor_param_t xp{};
  xp.type = CCV_TENSOR_CPU_MEMORY;
  xp.format = CCV_TENSOR_FORMAT_NHWC;
  xp.datatype = CCV_32F;
  xp.dim[0] = N, xp.dim[1] = 28, xp.dim[2] = 28, xp.dim[3] = 1;
  const ccv_nnc_tensor_param_t gxp = nnc_gpu_test::on_gpu(xp);
  ccv_cnnp_model_t* cpu = reference_net();
  ccv_cnnp_model_t* gpu = reference_net();
  // A third copy trains on a GPU stream: each step queued there (the copy of
  // the batch, the step, the copy of the logits) and run through a static
  // schedule over the device's streams.
  ccv_cnnp_model_t* gpu_streamed = reference_net();
  ccv_cnnp_model_compile(cpu, &xp, 1, sgd(0.01f, 1.0f / N, 0.9f), crossentropy());
  ccv_cnnp_model_compile(gpu, &gxp, 1, sgd(0.01f, 1.0f / N, 0.9f), crossentropy());
  ccv_cnnp_model_compile(gpu_streamed, &gxp, 1, sgd(0.01f, 1.0f / N, 0.9f), crossentropy());
  ccv_cnnp_model_set_max_concurrency(gpu_streamed, 4);
  ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(stream, nullptr) << ccv_nnc_error_message();
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  for (int i = 0; i < 8; i++) {
    ccv_cnnp_model_io_t pc = ccv_cnnp_model_parameters(cpu, ALL_PARAMETERS, i);
    Owned t(ccv_cnnp_model_parameter_tensor_params(cpu, pc));
    ccv_cnnp_model_parameter_copy(cpu, pc, t);
    ccv_cnnp_model_set_parameter(gpu, ccv_cnnp_model_parameters(gpu, ALL_PARAMETERS, i), t);
    ccv_cnnp_model_set_parameter(gpu_streamed, ccv_cnnp_model_parameters(gpu_streamed, ALL_PARAMETERS, i), t);
  }
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  // The teacher: a fixed random linear map of 7x7 average-pooled images.
  std::mt19937 rng(2026);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> teacher(10 * 49);
  for (float& v : teacher) v = normal(rng);
  Owned x(xp), labels(nnc_gpu_test::on_cpu(gxp)), logits_cpu, logits_gpu_back;
  {
    ccv_nnc_tensor_param_t lp = xp;
    lp.dim[1] = lp.dim[2] = lp.dim[3] = 0;
    labels = Owned(lp);
    ccv_nnc_tensor_param_t op = xp;
    op.dim[1] = 10, op.dim[2] = op.dim[3] = 0;
    logits_cpu = Owned(op);
  }
  ccv_nnc_tensor_param_t op = logits_cpu->info;
  Owned gx(gxp), glabels(nnc_gpu_test::on_gpu(labels->info)), glogits(nnc_gpu_test::on_gpu(op));
  Owned sx(gxp), slabels(nnc_gpu_test::on_gpu(labels->info)), slogits(nnc_gpu_test::on_gpu(op)), slogits_back(op);
  std::vector<double> loss_cpu, loss_gpu, loss_streamed;
  for (int step = 0; step < steps; step++) {
    std::vector<float> lab(N);
    for (int n = 0; n < N; n++) {
      float pooled[49] = {};
      for (int i = 0; i < 28 * 28; i++) {
        const float v = normal(rng);
        x->data.f32[n * 784 + i] = v;
        pooled[(i / 28 / 4) * 7 + (i % 28) / 4] += v / 16;
      }
      int best = 0;
      double best_v = -1e30;
      for (int k = 0; k < 10; k++) {
        double s = 0;
        for (int j = 0; j < 49; j++) s += teacher[k * 49 + j] * pooled[j];
        if (s > best_v) best_v = s, best = k;
      }
      lab[n] = static_cast<float>(best);
      labels->data.f32[n] = lab[n];
    }
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {x, labels}, {gx, glabels}), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_tensor_t *ci[] = {x}, *cf[] = {labels}, *co[] = {logits_cpu};
    ccv_nnc_tensor_t *gi[] = {gx}, *gf[] = {glabels}, *go[] = {glogits};
    ccv_cnnp_model_fit(cpu, ci, 1, cf, 1, co, 1, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "CPU, step " << step;
    ccv_cnnp_model_fit(gpu, gi, 1, gf, 1, go, 1, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "GPU, step " << step;
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {x, labels}, {sx, slabels}, stream), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_tensor_t *si[] = {sx}, *sf[] = {slabels}, *so[] = {slogits};
    ccv_cnnp_model_fit(gpu_streamed, si, 1, sf, 1, so, 1, nullptr, stream);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "GPU stream, step " << step;
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {slogits}, {slogits_back}, stream), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_stream_context_wait(stream);
    loss_streamed.push_back(mean_loss(slogits_back, lab));
    Owned back = nnc_gpu_test::to_cpu(glogits);
    loss_cpu.push_back(mean_loss(logits_cpu, lab));
    loss_gpu.push_back(mean_loss(back, lab));
    // In the first steps both sides compute the same function of the same
    // (then nearly the same) parameters: fp32 with different summation
    // orders (cuDNN, cuBLAS).
    if (step < close_steps) {
      for (int i = 0; i < N * 10; i++) {
        ASSERT_NEAR(back->data.f32[i], logits_cpu->data.f32[i], 1e-3f + 1e-3f * std::fabs(logits_cpu->data.f32[i])) << i;
        ASSERT_NEAR(slogits_back->data.f32[i], logits_cpu->data.f32[i], 1e-3f + 1e-3f * std::fabs(logits_cpu->data.f32[i])) << i;
      }
    }
  }
  if (!learns) {
    ccv_cnnp_model_free(cpu);
    ccv_cnnp_model_free(gpu);
    ccv_cnnp_model_free(gpu_streamed);
    ccv_nnc_stream_context_free(stream);
    return;
  }
  // Training moves both alike: the mean loss of the last 20 steps is well
  // below the first 20 on each side, and the two sides agree within 5 %.
  auto mean = [](const std::vector<double>& v, size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; i++) s += v[i];
    return s / static_cast<double>(to - from);
  };
  const double c0 = mean(loss_cpu, 0, 20), c1 = mean(loss_cpu, steps - 20, steps);
  const double g0 = mean(loss_gpu, 0, 20), g1 = mean(loss_gpu, steps - 20, steps);
  const double s0 = mean(loss_streamed, 0, 20), s1 = mean(loss_streamed, steps - 20, steps);
  std::printf("on a GPU stream over up to 4 streams: %.4f / %.4f\n", s0, s1);
  EXPECT_LT(s1, 0.8 * s0);
  EXPECT_NEAR(s1, c1, 0.05 * c1);
  std::printf("mean loss, steps 1-20 / %d-%d: CPU %.4f / %.4f, GPU %.4f / %.4f\n", steps - 19, steps, c0, c1, g0, g1);
  EXPECT_LT(c1, 0.8 * c0);
  EXPECT_LT(g1, 0.8 * g0);
  EXPECT_NEAR(g1, c1, 0.05 * c1);
  ccv_cnnp_model_free(cpu);
  ccv_cnnp_model_free(gpu);
  ccv_cnnp_model_free(gpu_streamed);
  ccv_nnc_stream_context_free(stream);
}

TEST(CudaTrain, ReferenceNetworkTrainsOnTheGpuAsOnTheCpu) {
  NNC_REQUIRE_GPU();
  train_alongside(64, 200, 1, true);
}

// Short enough for the emulated GPU (CI): four steps of batch 6, every
// step's logits on the GPU, synchronous and on a stream, as the CPU's.
TEST(CudaTrain, FirstStepsMatchTheCpuStepByStep) {
  NNC_REQUIRE_GPU();
  train_alongside(6, 4, 4, false);
}

}  // namespace
