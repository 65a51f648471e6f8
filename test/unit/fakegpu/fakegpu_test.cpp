// GPU placement on the pretend GPU (fakegpu.hpp): tensors, transfers, kernels,
// compiled graphs, models and dataframes put their data in GPU memory on the
// device asked for, and give the CPU's results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "fakegpu.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

const bool g_installed = nnc_fakegpu::install(2);

ccv_nnc_tensor_param_t gpu(int device, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (device << 8);
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

ccv_nnc_tensor_param_t cpu(std::vector<int> dims) {
  ccv_nnc_tensor_param_t p = gpu(0, dims);
  p.type = CCV_TENSOR_CPU_MEMORY;
  return p;
}

ccv_nnc_cmd_t cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

int exec(ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), nullptr);
}

void fill(ccv_nnc_tensor_t* t, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) t->data.f32[i] = d(rng);
}

TEST(FakeGpu, InstalledBeforeTheRegistry) {
  ASSERT_TRUE(g_installed);
  EXPECT_EQ(ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), 2);
}

TEST(FakeGpu, TensorsLiveOnTheirDevice) {
  const size_t before0 = nnc_fakegpu::bytes_in_use(0), before1 = nnc_fakegpu::bytes_in_use(1);
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, gpu(1, {3, 5}), 0);
  ASSERT_NE(t, nullptr) << ccv_nnc_error_message();
  // Padded like host data (the CUDA module's allocator, when these tests run
  // on the emulated GPU: tools/gpu-emu, rounds to 512 bytes).
  EXPECT_GE(nnc_fakegpu::bytes_in_use(1), before1 + 60);
  EXPECT_LE(nnc_fakegpu::bytes_in_use(1), before1 + 512);
  EXPECT_EQ(nnc_fakegpu::bytes_in_use(0), before0);
  ccv_nnc_tensor_free(t);
  EXPECT_EQ(nnc_fakegpu::bytes_in_use(1), before1);
  // A device that does not exist is refused with a message.
  EXPECT_EQ(ccv_nnc_tensor_new(nullptr, gpu(2, {3}), 0), nullptr);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "device 2"), nullptr) << ccv_nnc_error_message();
}

// The harness itself: host code that touches GPU memory crashes.
TEST(FakeGpuDeathTest, HostReadOfGpuMemoryCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, gpu(0, {4}), 0);
  ASSERT_NE(t, nullptr);
  EXPECT_DEATH({ volatile float x = t->data.f32[1]; (void)x; }, "");
  ccv_nnc_tensor_free(t);
}

TEST(FakeGpu, TransfersAndKernelsMatchTheCpu) {
  std::mt19937 rng(11);
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, cpu({7, 9}), 0);
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, cpu({7, 9}), 0);
  ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(nullptr, cpu({7, 9}), 0);
  ccv_nnc_tensor_t* back = ccv_nnc_tensor_new(nullptr, cpu({7, 9}), 0);
  fill(a, rng), fill(b, rng);
  ccv_nnc_tensor_t* ga = ccv_nnc_tensor_new(nullptr, gpu(1, {7, 9}), 0);
  ccv_nnc_tensor_t* gb = ccv_nnc_tensor_new(nullptr, gpu(1, {7, 9}), 0);
  ccv_nnc_tensor_t* gc = ccv_nnc_tensor_new(nullptr, gpu(1, {7, 9}), 0);
  const size_t kernels = nnc_fakegpu::kernels_run();
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {a, b}, {ga, gb}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(exec(cmd(CCV_NNC_EWSUM_FORWARD), {ga, gb}, {gc}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gc}, {back}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // On the device: three on the pretend GPU (a transfer a kernel), four on
  // the emulated one (tools/gpu-emu: a copy a tensor, one EWSUM kernel).
  EXPECT_GE(nnc_fakegpu::kernels_run(), kernels + 3);
  ASSERT_EQ(exec(cmd(CCV_NNC_EWSUM_FORWARD), {a, b}, {c}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 63; i++) EXPECT_EQ(back->data.f32[i], c->data.f32[i]) << i;
  // A CPU and a GPU operand in one element-wise command is refused, as on a real GPU.
  EXPECT_NE(exec(cmd(CCV_NNC_EWSUM_FORWARD), {a, gb}, {gc}), CCV_NNC_EXEC_SUCCESS);
  for (ccv_nnc_tensor_t* t : {a, b, c, back, ga, gb, gc}) ccv_nnc_tensor_free(t);
}

ccv_cnnp_model_t* small_net() {
  int k3[CCV_NNC_MAX_DIM_ALLOC] = {3, 3}, k2[CCV_NNC_MAX_DIM_ALLOC] = {2, 2};
  ccv_nnc_hint_t pad1{}, stride2{};
  pad1.stride.dim[0] = pad1.stride.dim[1] = 1;
  pad1.border.begin[0] = pad1.border.begin[1] = pad1.border.end[0] = pad1.border.end[1] = 1;
  stride2.stride.dim[0] = stride2.stride.dim[1] = 2;
  ccv_cnnp_model_t* layers[] = {
      ccv_cnnp_convolution(1, 3, k3, nullptr, 0, pad1, 0, 1, "conv"),
      ccv_cnnp_relu(nullptr),
      ccv_cnnp_max_pool(k2, stride2, nullptr),
      ccv_cnnp_flatten(nullptr),
      ccv_cnnp_dense(4, 0, 0, 1, "fc"),
  };
  return ccv_cnnp_sequential_new(layers, 5, 1, "net");
}

ccv_nnc_cmd_t sgd(float rate, float momentum) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.sgd.rate = rate, p.sgd.scale = 1, p.sgd.momentum = momentum;
  return ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, p, 0);
}

ccv_nnc_cmd_t crossentropy() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.label_smoothing.trim1 = 1;
  return ccv_nnc_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, nullptr, p, 0);
}

// `to` gets `from`'s parameters (through host tensors).
void copy_parameters(ccv_cnnp_model_t* from, ccv_cnnp_model_t* to) {
  for (int i = 0; i < ccv_cnnp_model_parameter_count(from); i++) {
    ccv_cnnp_model_io_t pf = ccv_cnnp_model_parameters(from, ALL_PARAMETERS, i), pt = ccv_cnnp_model_parameters(to, ALL_PARAMETERS, i);
    ccv_nnc_tensor_param_t hp = ccv_cnnp_model_parameter_tensor_params(from, pf);
    hp.type = CCV_TENSOR_CPU_MEMORY;
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, hp, 0);
    ccv_cnnp_model_parameter_copy(from, pf, t);
    ccv_cnnp_model_set_parameter(to, pt, t);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "parameter " << i;
    ccv_nnc_tensor_free(t);
  }
}

// Every parameter of `b` within `tol` of `a`'s.
void expect_same_parameters(ccv_cnnp_model_t* a, ccv_cnnp_model_t* b, float tol) {
  for (int i = 0; i < ccv_cnnp_model_parameter_count(a); i++) {
    ccv_cnnp_model_io_t pa = ccv_cnnp_model_parameters(a, ALL_PARAMETERS, i), pb = ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i);
    ccv_nnc_tensor_param_t hp = ccv_cnnp_model_parameter_tensor_params(a, pa);
    hp.type = CCV_TENSOR_CPU_MEMORY;
    ccv_nnc_tensor_t* ta = ccv_nnc_tensor_new(nullptr, hp, 0);
    ccv_nnc_tensor_t* tb = ccv_nnc_tensor_new(nullptr, hp, 0);
    ccv_cnnp_model_parameter_copy(a, pa, ta);
    ccv_cnnp_model_parameter_copy(b, pb, tb);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    for (size_t e = 0; e < ccv_nnc_tensor_count(hp); e++)
      EXPECT_NEAR(tb->data.f32[e], ta->data.f32[e], tol) << "parameter " << i << " element " << e;
    ccv_nnc_tensor_free(ta);
    ccv_nnc_tensor_free(tb);
  }
}

// The reference network's shape of model (convolution, ReLU, max pool,
// dense, softmax cross-entropy, SGD with momentum), trained a few steps with
// its inputs, parameters and minimiser state on GPU 1, against the same
// model on the CPU from the same parameters.
// Five SGD steps of the same model on the CPU and on GPU 1, from the same
// parameters. With a GPU stream the batch is copied in, the step queued and
// the logits copied out on it (the model's graph then runs on a static
// schedule over up to `concurrency` streams of its device).
void train_beside_the_cpu(int stream_type, int concurrency) {
  const int N = 6, C = 2, H = 6, W = 5;
  ccv_nnc_tensor_param_t xp = cpu({N, C, H, W});
  xp.format = CCV_TENSOR_FORMAT_NCHW;
  ccv_nnc_tensor_param_t gxp = xp;
  gxp.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (1 << 8);
  ccv_cnnp_model_t* on_cpu = small_net();
  ccv_cnnp_model_t* on_gpu = small_net();
  ccv_cnnp_model_compile(on_cpu, &xp, 1, sgd(0.05f, 0.9f), crossentropy());
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  const size_t before = nnc_fakegpu::bytes_in_use(1);
  ccv_cnnp_model_compile(on_gpu, &gxp, 1, sgd(0.05f, 0.9f), crossentropy());
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_set_max_concurrency(on_gpu, concurrency);
  ccv_nnc_stream_context_t* stream = stream_type > 0 ? ccv_nnc_stream_context_new(stream_type) : nullptr;
  ASSERT_TRUE(stream_type <= 0 || stream) << ccv_nnc_error_message();
  // stream_type < 0: the copies go on the model's default stream, fit gets none.
  ccv_nnc_stream_context_t* copies = stream_type < 0 ? ccv_cnnp_model_default_stream(on_gpu) : stream;
  ASSERT_TRUE(stream_type >= 0 || copies) << ccv_nnc_error_message();
  ASSERT_EQ(ccv_cnnp_model_parameter_count(on_gpu), 4);
  for (int i = 0; i < 4; i++) {
    const ccv_nnc_tensor_param_t gp = ccv_cnnp_model_parameter_tensor_params(on_gpu, ccv_cnnp_model_parameters(on_gpu, ALL_PARAMETERS, i));
    EXPECT_EQ(CCV_TENSOR_GET_MEMORY(gp.type), CCV_TENSOR_GPU_MEMORY) << "parameter " << i;
    EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(gp.type), 1) << "parameter " << i;
  }
  copy_parameters(on_cpu, on_gpu);  // the same starting point
  std::mt19937 rng(5);
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, xp, 0);
  ccv_nnc_tensor_t* labels = ccv_nnc_tensor_new(nullptr, cpu({N}), 0);
  ccv_nnc_tensor_t* logits = ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0);
  ccv_nnc_tensor_t* glogits_back = ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0);
  // From pinned memory a pretend stream's copy runs late, as a GPU's may.
  if (stream_type < 0)
    for (ccv_nnc_tensor_t* t : {x, labels}) ASSERT_EQ(ccv_nnc_tensor_pin_memory(t), 0) << ccv_nnc_error_message();
  ccv_nnc_tensor_t* gx = ccv_nnc_tensor_new(nullptr, gxp, 0);
  ccv_nnc_tensor_t* glabels = ccv_nnc_tensor_new(nullptr, gpu(1, {N}), 0);
  ccv_nnc_tensor_t* glogits = ccv_nnc_tensor_new(nullptr, gpu(1, {N, 4}), 0);
  const size_t kernels = nnc_fakegpu::kernels_run(), queued = nnc_fakegpu::kernels_queued();
  for (int step = 0; step < 5; step++) {
    nnc_fakegpu::set_stream_order_seed(static_cast<uint32_t>(step));
    fill(x, rng);
    for (int n = 0; n < N; n++) labels->data.f32[n] = static_cast<float>((n * 7 + step) % 4);
    ccv_nnc_tensor_t *in[] = {x, labels}, *out[] = {gx, glabels};
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, in, 2, out, 2, copies), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_tensor_t *cx[] = {x}, *cf[] = {labels}, *co[] = {logits};
    ccv_nnc_tensor_t *gxs[] = {gx}, *gf[] = {glabels}, *go[] = {glogits};
    ccv_cnnp_model_fit(on_cpu, cx, 1, cf, 1, co, 1, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ccv_cnnp_model_fit(on_gpu, gxs, 1, gf, 1, go, 1, nullptr, stream);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << step;
    ccv_nnc_tensor_t* back = glogits_back;
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &glogits, 1, &back, 1, copies), CCV_NNC_EXEC_SUCCESS);
    if (copies) ccv_nnc_stream_context_wait(copies);
    // The GPU side runs the reference kernels, the CPU side the optimised
    // ones: they agree to fp32 rounding of sums of a few dozen terms.
    for (int i = 0; i < N * 4; i++)
      EXPECT_NEAR(glogits_back->data.f32[i], logits->data.f32[i], 1e-4f) << "step " << step << " logit " << i;
  }
  EXPECT_GT(nnc_fakegpu::bytes_in_use(1), before);  // parameters, momenta and the arena
  // Forward, backward and a minimiser per parameter each step, on the GPU.
  EXPECT_GT(nnc_fakegpu::kernels_run(), kernels + 5 * 12);
  // The steps went through the pretend streams (queued, run late): the
  // model's schedule, behind the caller's stream or on its own.
  EXPECT_GT(nnc_fakegpu::kernels_queued(), queued + 5 * 12);
  expect_same_parameters(on_cpu, on_gpu, 1e-4f);
  for (ccv_nnc_tensor_t* t : {x, labels, logits, glogits_back, gx, glabels, glogits}) ccv_nnc_tensor_free(t);
  ccv_cnnp_model_free(on_cpu);
  ccv_cnnp_model_free(on_gpu);
  if (stream) ccv_nnc_stream_context_free(stream);
}

TEST(FakeGpu, ModelTrainsOnTheGpuAsOnTheCpu) { train_beside_the_cpu(0, 0); }

// ccv_cnnp_model_default_stream: none before compile or for a model on the
// CPU; for a model on GPU 1 a GPU stream of that device, the same each time.
// Batches copied in on it, then fit given no stream: the fit waits for the
// copies (the pretend streams run them late), so it trains as on the CPU.
TEST(FakeGpu, ModelDefaultStream) {
  ccv_cnnp_model_t* m = small_net();
  EXPECT_EQ(ccv_cnnp_model_default_stream(m), nullptr);
  ccv_nnc_tensor_param_t xp = cpu({6, 2, 6, 5});
  xp.format = CCV_TENSOR_FORMAT_NCHW;
  ccv_cnnp_model_compile(m, &xp, 1, sgd(0.05f, 0.9f), crossentropy());
  EXPECT_EQ(ccv_cnnp_model_default_stream(m), nullptr);
  ccv_cnnp_model_free(m);
  m = small_net();
  xp.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (1 << 8);
  ccv_cnnp_model_compile(m, &xp, 1, sgd(0.05f, 0.9f), crossentropy());
  ccv_nnc_stream_context_t* s = ccv_cnnp_model_default_stream(m);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_stream_context_type(s), static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (1 << 8));
  EXPECT_EQ(ccv_cnnp_model_default_stream(m), s);
  ccv_cnnp_model_free(m);
  EXPECT_EQ(ccv_cnnp_model_default_stream(nullptr), nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("NULL"), std::string::npos) << ccv_nnc_error_message();
  train_beside_the_cpu(-1, 0);
}

TEST(FakeGpu, ModelTrainsOnAGpuStreamAsOnTheCpu) {
  const int type = static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (1 << 8);  // GPU 1, the model's
  for (int concurrency : {1, 3, 0}) {
    SCOPED_TRACE(concurrency);
    train_beside_the_cpu(type, concurrency);
  }
}

// Steps in flight: fit queued on a GPU stream returns without waiting, so
// the host queues step after step while the device works. Each batch comes
// from pinned host memory of its own (copied in on the stream, as the
// logits are copied out), and nothing waits until the end. Then:
// - nothing ran while the steps were queued (the host never waited);
// - reading the parameters without waiting for the stream first waits for
//   the queued steps (they equal the CPU model's after the same steps);
// - an evaluate on a second stream, queued right behind two more fits on the
//   first, sees their updates (it waits for them on the device);
// and every step's logits equal the CPU model's.
TEST(FakeGpu, ModelStepsInFlightOnGpuStreams) {
  const int N = 6, C = 2, H = 6, W = 5, K = 6;
  ccv_nnc_tensor_param_t xp = cpu({N, C, H, W});
  xp.format = CCV_TENSOR_FORMAT_NCHW;
  ccv_nnc_tensor_param_t gxp = xp;
  gxp.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (1 << 8);
  for (int concurrency : {1, 3}) {
    SCOPED_TRACE(concurrency);
    ccv_cnnp_model_t* on_cpu = small_net();
    ccv_cnnp_model_t* on_gpu = small_net();
    ccv_cnnp_model_compile(on_cpu, &xp, 1, sgd(0.05f, 0.9f), crossentropy());
    ccv_cnnp_model_compile(on_gpu, &gxp, 1, sgd(0.05f, 0.9f), crossentropy());
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ccv_cnnp_model_set_max_concurrency(on_gpu, concurrency);
    copy_parameters(on_cpu, on_gpu);
    const int type = static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (1 << 8);
    ccv_nnc_stream_context_t* a = ccv_nnc_stream_context_new(type);
    ccv_nnc_stream_context_t* b = ccv_nnc_stream_context_new(type);
    ASSERT_TRUE(a && b) << ccv_nnc_error_message();
    std::mt19937 rng(21);
    std::vector<ccv_nnc_tensor_t*> xs, ls, backs, cpu_logits, owned;
    for (int k = 0; k < K + 2; k++) {
      xs.push_back(ccv_nnc_tensor_new(nullptr, xp, 0));
      ls.push_back(ccv_nnc_tensor_new(nullptr, cpu({N}), 0));
      backs.push_back(ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0));
      cpu_logits.push_back(ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0));
      fill(xs.back(), rng);
      for (int n = 0; n < N; n++) ls.back()->data.f32[n] = static_cast<float>((n * 5 + k) % 4);
      for (ccv_nnc_tensor_t* t : {xs.back(), ls.back(), backs.back()}) ASSERT_EQ(ccv_nnc_tensor_pin_memory(t), 0) << ccv_nnc_error_message();
    }
    ccv_nnc_tensor_t* gx = ccv_nnc_tensor_new(nullptr, gxp, 0);
    ccv_nnc_tensor_t* glabels = ccv_nnc_tensor_new(nullptr, gpu(1, {N}), 0);
    ccv_nnc_tensor_t* glogits = ccv_nnc_tensor_new(nullptr, gpu(1, {N, 4}), 0);
    ccv_nnc_tensor_t* gx2 = ccv_nnc_tensor_new(nullptr, gxp, 0);
    ccv_nnc_tensor_t* gout2 = ccv_nnc_tensor_new(nullptr, gpu(1, {N, 4}), 0);
    auto queue_step = [&](int k) {
      ccv_nnc_tensor_t *in[] = {xs[k], ls[k]}, *out[] = {gx, glabels};
      ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, in, 2, out, 2, a), CCV_NNC_EXEC_SUCCESS);
      ccv_nnc_tensor_t *gxs[] = {gx}, *gf[] = {glabels}, *go[] = {glogits};
      ccv_cnnp_model_fit(on_gpu, gxs, 1, gf, 1, go, 1, nullptr, a);
      ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << k;
      ccv_nnc_tensor_t* back = backs[k];
      ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &glogits, 1, &back, 1, a), CCV_NNC_EXEC_SUCCESS);
    };
    auto cpu_step = [&](int k) {
      ccv_nnc_tensor_t *cx[] = {xs[k]}, *cf[] = {ls[k]}, *co[] = {cpu_logits[k]};
      ccv_cnnp_model_fit(on_cpu, cx, 1, cf, 1, co, 1, nullptr, nullptr);
      ASSERT_STREQ(ccv_nnc_error_message(), "");
    };
    // The first step compiles fit's graph (the host waits for nothing queued yet).
    nnc_fakegpu::set_stream_order_seed(static_cast<uint32_t>(concurrency));
    queue_step(0);
    ccv_nnc_stream_context_wait(a);
    const size_t ran = nnc_fakegpu::kernels_run();
    for (int k = 1; k < K; k++) queue_step(k);
    EXPECT_EQ(nnc_fakegpu::kernels_run(), ran) << "the host waited for a step while queueing the next";
    for (int k = 0; k < K; k++) cpu_step(k);
    // Parameters read without waiting for the stream: the read waits for the steps.
    expect_same_parameters(on_cpu, on_gpu, 1e-4f);
    ccv_nnc_stream_context_wait(a);
    for (int k = 0; k < K; k++)
      for (int i = 0; i < N * 4; i++)
        ASSERT_NEAR(backs[k]->data.f32[i], cpu_logits[k]->data.f32[i], 1e-4f) << "step " << k << " logit " << i;
    // Two more fits on a, then at once an evaluate on b (another input
    // tensor, so only the parameters tie it to the fits). Its graph is made
    // first (making a graph waits for queued work).
    ccv_cnnp_evaluate_param_t warm{};
    warm.is_test = 1;
    ccv_nnc_tensor_t *wi[] = {gx2}, *wo[] = {gout2};
    ccv_cnnp_model_evaluate(on_gpu, warm, wi, 1, wo, 1, nullptr, b);
    ccv_nnc_stream_context_wait(b);
    const size_t ran2 = nnc_fakegpu::kernels_run();
    for (int k = K; k < K + 2; k++) queue_step(k);
    {
      ccv_nnc_tensor_t *in[] = {xs[0]}, *out[] = {gx2};
      ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, in, 1, out, 1, b), CCV_NNC_EXEC_SUCCESS);
      ccv_cnnp_evaluate_param_t ep{};
      ep.is_test = 1;
      ccv_nnc_tensor_t *gi[] = {gx2}, *go[] = {gout2};
      ccv_cnnp_model_evaluate(on_gpu, ep, gi, 1, go, 1, nullptr, b);
      ASSERT_STREQ(ccv_nnc_error_message(), "");
      ccv_nnc_tensor_t* back = backs[0];
      ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &gout2, 1, &back, 1, b), CCV_NNC_EXEC_SUCCESS);
    }
    EXPECT_EQ(nnc_fakegpu::kernels_run(), ran2) << "nothing waited yet, so nothing ran";
    ccv_nnc_stream_context_wait(b);  // b only
    for (int k = K; k < K + 2; k++) cpu_step(k);
    ccv_nnc_tensor_t* want = ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0);
    {
      ccv_cnnp_evaluate_param_t ep{};
      ep.is_test = 1;
      ccv_nnc_tensor_t *ci[] = {xs[0]}, *co[] = {want};
      ccv_cnnp_model_evaluate(on_cpu, ep, ci, 1, co, 1, nullptr, nullptr);
      ASSERT_STREQ(ccv_nnc_error_message(), "");
    }
    for (int i = 0; i < N * 4; i++) EXPECT_NEAR(backs[0]->data.f32[i], want->data.f32[i], 1e-4f) << "logit " << i;
    ccv_nnc_stream_context_wait(a);
    for (int k = K; k < K + 2; k++)
      for (int i = 0; i < N * 4; i++)
        ASSERT_NEAR(backs[k]->data.f32[i], cpu_logits[k]->data.f32[i], 1e-4f) << "step " << k << " logit " << i;
    expect_same_parameters(on_cpu, on_gpu, 1e-4f);
    // Freed with work queued: the model waits for it first.
    queue_step(1);
    ccv_cnnp_model_free(on_gpu);
    ccv_cnnp_model_free(on_cpu);
    ccv_nnc_stream_context_free(a);
    ccv_nnc_stream_context_free(b);
    for (ccv_nnc_tensor_t* t : {gx, glabels, glogits, gx2, gout2, want}) ccv_nnc_tensor_free(t);
    for (auto* v : {&xs, &ls, &backs, &cpu_logits})
      for (ccv_nnc_tensor_t* t : *v) ccv_nnc_tensor_free(t);
  }
}

TEST(FakeGpu, TensorZeroRunsOnTheDevice) {
  std::mt19937 rng(3);
  ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(nullptr, cpu({5, 3}), 0);
  fill(h, rng);
  ccv_nnc_tensor_t* g = ccv_nnc_tensor_new(nullptr, gpu(0, {5, 3}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {h}, {g}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_tensor_zero(g);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {g}, {h}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 15; i++) EXPECT_EQ(h->data.f32[i], 0.0f) << i;
  ccv_nnc_tensor_free(h);
  ccv_nnc_tensor_free(g);
}

// The dynamic graph with its variables on GPU 1: y = a * b + a, and the
// gradients of sum(y) by backward, against the closed forms on the host.
TEST(FakeGpu, DynamicGraphOnTheGpu) {
  std::mt19937 rng(9);
  ccv_nnc_tensor_t* ha = ccv_nnc_tensor_new(nullptr, cpu({4, 6}), 0);
  ccv_nnc_tensor_t* hb = ccv_nnc_tensor_new(nullptr, cpu({4, 6}), 0);
  fill(ha, rng), fill(hb, rng);
  ccv_nnc_dynamic_graph_t* graph = ccv_nnc_dynamic_graph_new();
  ccv_nnc_tensor_variable_t a = ccv_nnc_tensor_variable_new(graph, gpu(1, {4, 6}));
  ccv_nnc_tensor_variable_t b = ccv_nnc_tensor_variable_new(graph, gpu(1, {4, 6}));
  ccv_nnc_tensor_variable_t ab = ccv_nnc_tensor_variable_new(graph);
  ccv_nnc_tensor_variable_t y = ccv_nnc_tensor_variable_new(graph);
  ccv_nnc_tensor_t* ta = ccv_nnc_tensor_from_variable(graph, a);
  ccv_nnc_tensor_t* tb = ccv_nnc_tensor_from_variable(graph, b);
  ASSERT_NE(ta, nullptr);
  ASSERT_EQ(CCV_TENSOR_GET_MEMORY(ta->info.type), CCV_TENSOR_GPU_MEMORY);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {ha, hb}, {ta, tb}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_tensor_variable_t in1[] = {a, b}, out1[] = {ab};
  ASSERT_EQ(ccv_nnc_dynamic_graph_exec(graph, cmd(CCV_NNC_EWPROD_FORWARD), ccv_nnc_no_hint, 0, in1, 2, out1, 1, 0, nullptr),
            CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ccv_nnc_tensor_variable_t in2[] = {ab, a}, out2[] = {y};
  ASSERT_EQ(ccv_nnc_dynamic_graph_exec(graph, cmd(CCV_NNC_EWSUM_FORWARD), ccv_nnc_no_hint, 0, in2, 2, out2, 1, 0, nullptr),
            CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ccv_nnc_tensor_t* ty = ccv_nnc_tensor_from_variable(graph, y);
  ASSERT_NE(ty, nullptr);
  EXPECT_EQ(CCV_TENSOR_GET_MEMORY(ty->info.type), CCV_TENSOR_GPU_MEMORY);
  EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(ty->info.type), 1);
  ccv_nnc_tensor_t* hy = ccv_nnc_tensor_new(nullptr, cpu({4, 6}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {ty}, {hy}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 24; i++) EXPECT_FLOAT_EQ(hy->data.f32[i], ha->data.f32[i] * hb->data.f32[i] + ha->data.f32[i]) << i;
  // d sum(y) / da = b + 1, / db = a (the seed gradient of ones is made on the device).
  ccv_nnc_tensor_variable_t da = ccv_nnc_tensor_variable_new(graph), db = ccv_nnc_tensor_variable_new(graph);
  ccv_nnc_tensor_variable_t f[] = {y}, wrt[] = {a, b}, grads[] = {da, db};
  ccv_nnc_dynamic_graph_backward(graph, f, 1, nullptr, wrt, 2, grads, 2, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_nnc_tensor_t* tda = ccv_nnc_tensor_from_variable(graph, da);
  ccv_nnc_tensor_t* tdb = ccv_nnc_tensor_from_variable(graph, db);
  ASSERT_NE(tda, nullptr);
  ASSERT_NE(tdb, nullptr);
  EXPECT_EQ(CCV_TENSOR_GET_MEMORY(tda->info.type), CCV_TENSOR_GPU_MEMORY);
  ccv_nnc_tensor_t* hda = ccv_nnc_tensor_new(nullptr, cpu({4, 6}), 0);
  ccv_nnc_tensor_t* hdb = ccv_nnc_tensor_new(nullptr, cpu({4, 6}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {tda, tdb}, {hda, hdb}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 24; i++) {
    EXPECT_FLOAT_EQ(hda->data.f32[i], hb->data.f32[i] + 1) << i;
    EXPECT_FLOAT_EQ(hdb->data.f32[i], ha->data.f32[i]) << i;
  }
  ccv_nnc_dynamic_graph_free(graph);
  for (ccv_nnc_tensor_t* t : {ha, hb, hy, hda, hdb}) ccv_nnc_tensor_free(t);
}

// evaluate with requires_grad, backward, the gradients' NaN check and
// 2-norm clipping (to 0.05, so it scales) and apply_gradients on GPU 1 (no
// output gradient given: the seed is ones, made on the device), against the
// same calls on the CPU from the same parameters.
TEST(FakeGpu, ModelBackwardAndApplyGradientsOnTheGpu) {
  const int N = 4, C = 2, H = 6, W = 5;
  ccv_nnc_tensor_param_t xp = cpu({N, C, H, W});
  xp.format = CCV_TENSOR_FORMAT_NCHW;
  ccv_nnc_tensor_param_t gxp = xp;
  gxp.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (1 << 8);
  ccv_cnnp_model_t* c = small_net();
  ccv_cnnp_model_t* g = small_net();
  ccv_cnnp_model_compile(c, &xp, 1, sgd(0.1f, 0), crossentropy());
  ccv_cnnp_model_compile(g, &gxp, 1, sgd(0.1f, 0), crossentropy());
  copy_parameters(c, g);
  std::mt19937 rng(12);
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, xp, 0);
  fill(x, rng);
  ccv_nnc_tensor_t* gx = ccv_nnc_tensor_new(nullptr, gxp, 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {x}, {gx}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0);
  ccv_nnc_tensor_t* gy = ccv_nnc_tensor_new(nullptr, gpu(1, {N, 4}), 0);
  ccv_nnc_tensor_t* dx = ccv_nnc_tensor_new(nullptr, xp, 0);
  ccv_nnc_tensor_t* gdx = ccv_nnc_tensor_new(nullptr, gxp, 0);
  ccv_cnnp_evaluate_param_t ep{};
  ep.requires_grad = 1;
  ccv_nnc_tensor_t *ci[] = {x}, *co[] = {y}, *cdx[] = {dx};
  ccv_nnc_tensor_t *gi[] = {gx}, *go[] = {gy}, *gdxs[] = {gdx};
  ccv_cnnp_model_evaluate(c, ep, ci, 1, co, 1, nullptr, nullptr);
  ccv_cnnp_model_backward(c, nullptr, 0, cdx, 1, nullptr, nullptr);
  ccv_cnnp_model_parameters_clip_grad_norm(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, ALL_PARAMETERS), 2, 0.05f, nullptr);
  ccv_cnnp_model_apply_gradients(c, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_evaluate(g, ep, gi, 1, go, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_backward(g, nullptr, 0, gdxs, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  // The gradients on the GPU are read (NaN check) and clipped (scaled on the device) as on the CPU.
  EXPECT_EQ(ccv_cnnp_model_parameter_gradients_isnan(g, ccv_cnnp_model_parameters(g, ALL_PARAMETERS, ALL_PARAMETERS), nullptr), 0)
      << ccv_nnc_error_message();
  ccv_cnnp_model_parameters_clip_grad_norm(g, ccv_cnnp_model_parameters(g, ALL_PARAMETERS, ALL_PARAMETERS), 2, 0.05f, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_apply_gradients(g, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_nnc_tensor_t* back = ccv_nnc_tensor_new(nullptr, xp, 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gdx}, {back}), CCV_NNC_EXEC_SUCCESS);
  for (size_t e = 0; e < ccv_nnc_tensor_count(xp); e++) EXPECT_NEAR(back->data.f32[e], dx->data.f32[e], 1e-4f) << "dx " << e;
  expect_same_parameters(c, g, 1e-4f);
  for (ccv_nnc_tensor_t* t : {x, gx, y, gy, dx, gdx, back}) ccv_nnc_tensor_free(t);
  ccv_cnnp_model_free(c);
  ccv_cnnp_model_free(g);
}

// ccv_nnc_dynamic_graph_minimize with SGD and momentum on GPU 1 (its
// momentum starts as a fresh zero tensor on the device), two steps of
// f = sum(w * x): w moves by the closed form of momentum SGD.
TEST(FakeGpu, DynamicGraphMinimizeOnTheGpu) {
  std::mt19937 rng(17);
  ccv_nnc_tensor_t* hx = ccv_nnc_tensor_new(nullptr, cpu({6}), 0);
  ccv_nnc_tensor_t* hw = ccv_nnc_tensor_new(nullptr, cpu({6}), 0);
  fill(hx, rng), fill(hw, rng);
  ccv_nnc_dynamic_graph_t* graph = ccv_nnc_dynamic_graph_new();
  ccv_nnc_tensor_variable_t w = ccv_nnc_tensor_variable_new(graph, gpu(1, {6}));
  ccv_nnc_tensor_variable_t x = ccv_nnc_tensor_constant_new(graph, gpu(1, {6}));
  ccv_nnc_tensor_t* tw = ccv_nnc_tensor_from_variable(graph, w);
  ccv_nnc_tensor_t* tx = ccv_nnc_tensor_from_variable(graph, x);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {hw, hx}, {tw, tx}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_tensor_variable_t momentum = ccv_nnc_tensor_variable_new(graph);
  const float rate = 0.1f, mu = 0.9f;
  for (int step = 0; step < 2; step++) {
    ccv_nnc_tensor_variable_t y = ccv_nnc_tensor_variable_new(graph);
    ccv_nnc_tensor_variable_t in[] = {w, x}, out[] = {y};
    ASSERT_EQ(ccv_nnc_dynamic_graph_exec(graph, cmd(CCV_NNC_EWPROD_FORWARD), ccv_nnc_no_hint, 0, in, 2, out, 1, 0, nullptr),
              CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ccv_nnc_tensor_variable_t ws[] = {w}, aux[] = {momentum};
    ccv_nnc_dynamic_graph_minimize(graph, sgd(rate, mu), &y, 1, nullptr, ws, 1, aux, 0, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << step;
    ccv_nnc_tensor_variable_free(graph, y);
  }
  // Gradient x each step; momentum m1 = x, m2 = mu x + x; w2 = w0 - rate (m1 + m2).
  ccv_nnc_tensor_t* back = ccv_nnc_tensor_new(nullptr, cpu({6}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {ccv_nnc_tensor_from_variable(graph, w)}, {back}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 6; i++)
    EXPECT_NEAR(back->data.f32[i], hw->data.f32[i] - rate * (hx->data.f32[i] + (mu + 1) * hx->data.f32[i]), 1e-5f) << i;
  ccv_nnc_dynamic_graph_free(graph);
  for (ccv_nnc_tensor_t* t : {hx, hw, back}) ccv_nnc_tensor_free(t);
}

// A GPU model's parameters written to SQLite and read into a CPU model, and
// back into a second GPU model: the values survive both ways.
TEST(FakeGpu, ModelParametersPersistFromAndToTheGpu) {
  const int N = 2, C = 2, H = 6, W = 5;
  ccv_nnc_tensor_param_t xp = cpu({N, C, H, W});
  xp.format = CCV_TENSOR_FORMAT_NCHW;
  ccv_nnc_tensor_param_t gxp = xp;
  gxp.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (1 << 8);
  ccv_cnnp_model_t* g1 = small_net();
  ccv_cnnp_model_t* c = small_net();
  ccv_cnnp_model_t* g2 = small_net();
  ccv_cnnp_model_compile(g1, &gxp, 1, sgd(0.05f, 0.9f), crossentropy());
  ccv_cnnp_model_compile(c, &xp, 1, sgd(0.05f, 0.9f), crossentropy());
  ccv_cnnp_model_compile(g2, &gxp, 1, sgd(0.05f, 0.9f), crossentropy());
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  char path[] = "/tmp/nnc-fakegpu-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ccv_cnnp_model_write_to_file(g1, path, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_read_from_file(path, nullptr, c);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_read_from_file(path, nullptr, g2);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  unlink(path);
  for (int i = 0; i < 4; i++) {
    const ccv_nnc_tensor_param_t p = ccv_cnnp_model_parameter_tensor_params(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, i));
    ccv_nnc_tensor_t* v1 = ccv_nnc_tensor_new(nullptr, p, 0);
    ccv_nnc_tensor_t* vc = ccv_nnc_tensor_new(nullptr, p, 0);
    ccv_nnc_tensor_t* v2 = ccv_nnc_tensor_new(nullptr, p, 0);
    ccv_cnnp_model_parameter_copy(g1, ccv_cnnp_model_parameters(g1, ALL_PARAMETERS, i), v1);
    ccv_cnnp_model_parameter_copy(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, i), vc);
    ccv_cnnp_model_parameter_copy(g2, ccv_cnnp_model_parameters(g2, ALL_PARAMETERS, i), v2);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    bool nonzero = false;
    for (size_t e = 0; e < ccv_nnc_tensor_count(p); e++) {
      EXPECT_EQ(vc->data.f32[e], v1->data.f32[e]) << "parameter " << i << " element " << e;
      EXPECT_EQ(v2->data.f32[e], v1->data.f32[e]) << "parameter " << i << " element " << e;
      nonzero |= v1->data.f32[e] != 0;
    }
    if (i % 2 == 0) {
      EXPECT_TRUE(nonzero) << "weights are drawn at random, not zero";
    }
    for (ccv_nnc_tensor_t* t : {v1, vc, v2}) ccv_nnc_tensor_free(t);
  }
  ccv_cnnp_model_free(g1);
  ccv_cnnp_model_free(c);
  ccv_cnnp_model_free(g2);
}

ccv_nnc_cmd_t gemm_wt() {  // y = x w^T + b
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = p.blas.a[1] = 1;
  p.blas.transpose_b[0] = 0, p.blas.transpose_b[1] = 1;
  return ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, nullptr, p, 0);
}

// ccv_nnc_symbolic_graph_data_parallel over the two devices: y = x w^T + b
// and its backward, each device on half the batch; w and b broadcast from
// device 0, dw and db allreduced. Each device's y is its rows of the whole
// batch's y, and every device's summed gradients are the whole batch's.
TEST(FakeGpu, SymbolicGraphDataParallelOverTwoDevices) {
  const int N = 6, K = 5, M = 3, H = N / 2;
  std::mt19937 rng(21);
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  const ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(sg, gpu(0, {H, K}), "x");
  const ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, gpu(0, {M, K}), "w");
  const ccv_nnc_tensor_symbol_t b = ccv_nnc_tensor_symbol_new(sg, gpu(0, {M}), "b");
  const ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(sg, gpu(0, {H, M}), "y");
  const ccv_nnc_tensor_symbol_t xwb[] = {x, w, b};
  ccv_nnc_graph_exec_symbol_new(sg, gemm_wt(), xwb, 3, &y, 1, "fc");
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_t wrt[] = {w, b};
  ccv_nnc_symbolic_graph_backward(sg, &y, 1, wrt, 2, SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  const ccv_nnc_tensor_symbol_t dy = ccv_nnc_tensor_symbol_for_backward(sg, y);
  const ccv_nnc_tensor_symbol_t grads[] = {ccv_nnc_tensor_symbol_for_backward(sg, w), ccv_nnc_tensor_symbol_for_backward(sg, b)};
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_tensor_symbol_t summed[2];
  ccv_nnc_symbolic_graph_data_parallel(sg, 2, wrt, 2, grads, 2, summed, nullptr, 0, nullptr, CCV_NNC_PARALLEL_REDUCE_OP_SUM,
                                       SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  const ccv_nnc_tensor_symbol_t x1 = ccv_nnc_tensor_symbol_copy(sg, x, 1), dy1 = ccv_nnc_tensor_symbol_copy(sg, dy, 1);
  const ccv_nnc_tensor_symbol_t y1 = ccv_nnc_tensor_symbol_copy(sg, y, 1);
  const ccv_nnc_tensor_symbol_t summed1[] = {ccv_nnc_tensor_symbol_copy(sg, summed[0], 1), ccv_nnc_tensor_symbol_copy(sg, summed[1], 1)};
  ASSERT_GE(x1.d, 0);
  ASSERT_GE(dy1.d, 0);
  ASSERT_GE(summed1[0].d, 0);
  EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(ccv_nnc_tensor_symbol_params(sg, x1).type), 1);
  EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(ccv_nnc_tensor_symbol_params(sg, summed1[1]).type), 1);
  // The whole batch on the host.
  ccv_nnc_tensor_t* hx = ccv_nnc_tensor_new(nullptr, cpu({N, K}), 0);
  ccv_nnc_tensor_t* hdy = ccv_nnc_tensor_new(nullptr, cpu({N, M}), 0);
  ccv_nnc_tensor_t* hw = ccv_nnc_tensor_new(nullptr, cpu({M, K}), 0);
  ccv_nnc_tensor_t* hb = ccv_nnc_tensor_new(nullptr, cpu({M}), 0);
  fill(hx, rng), fill(hdy, rng), fill(hw, rng), fill(hb, rng);
  // Each device's half, bound; w and b on device 0 only (the broadcast fills device 1's).
  ccv_nnc_tensor_t* gx[2];
  ccv_nnc_tensor_t* gdy[2];
  for (int k = 0; k < 2; k++) {
    ccv_nnc_tensor_t* hxk = ccv_nnc_tensor_new(hx->data.f32 + k * H * K, cpu({H, K}), 0);
    ccv_nnc_tensor_t* hdyk = ccv_nnc_tensor_new(hdy->data.f32 + k * H * M, cpu({H, M}), 0);
    gx[k] = ccv_nnc_tensor_new(nullptr, gpu(k, {H, K}), 0);
    gdy[k] = ccv_nnc_tensor_new(nullptr, gpu(k, {H, M}), 0);
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {hxk, hdyk}, {gx[k], gdy[k]}), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_tensor_free(hxk);
    ccv_nnc_tensor_free(hdyk);
  }
  ccv_nnc_tensor_t* gw = ccv_nnc_tensor_new(nullptr, gpu(0, {M, K}), 0);
  ccv_nnc_tensor_t* gb = ccv_nnc_tensor_new(nullptr, gpu(0, {M}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {hw, hb}, {gw, gb}), CCV_NNC_EXEC_SUCCESS);
  const ccv_nnc_tensor_bind_t binds[] = {{x, gx[0]}, {x1, gx[1]}, {dy, gdy[0]}, {dy1, gdy[1]}, {w, gw}, {b, gb}};
  const ccv_nnc_tensor_symbol_t outs[] = {summed[0], summed[1], summed1[0], summed1[1], y, y1};
  ccv_nnc_graph_t* graph = nullptr;
  ccv_nnc_tensor_arena_t* arena = nullptr;
  ccv_nnc_graph_exec_arena_t* exec_arena = nullptr;
  const size_t before1 = nnc_fakegpu::bytes_in_use(1);
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, binds, 6, outs, 6, SYMBOLIC_GRAPH_SOURCES(sg),
                                 SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &arena, &exec_arena);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ASSERT_NE(graph, nullptr);
  EXPECT_GT(nnc_fakegpu::bytes_in_use(1), before1);  // device 1 has an arena of its own
  // Without a stream the run queues its nodes on one pretend stream per
  // device (run late, in a random order between the two) and waits at the end.
  const size_t queued = nnc_fakegpu::kernels_queued();
  ASSERT_EQ(ccv_nnc_graph_run(graph, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_GE(nnc_fakegpu::kernels_queued(), queued + 8);
  // The references, in double over the whole batch.
  std::vector<double> ydw(M * K, 0), ydb(M, 0), yy(N * M, 0);
  for (int n = 0; n < N; n++)
    for (int m = 0; m < M; m++) {
      double v = hb->data.f32[m];
      for (int k = 0; k < K; k++) v += static_cast<double>(hx->data.f32[n * K + k]) * hw->data.f32[m * K + k];
      yy[n * M + m] = v;
      const double g = hdy->data.f32[n * M + m];
      ydb[m] += g;
      for (int k = 0; k < K; k++) ydw[m * K + k] += g * hx->data.f32[n * K + k];
    }
  auto back = [&](ccv_nnc_tensor_symbol_t s, std::vector<int> dims) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(arena, s);
    EXPECT_NE(t, nullptr);
    ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(nullptr, cpu(dims), 0);
    EXPECT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {t}, {h}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    return h;
  };
  for (int k = 0; k < 2; k++) {
    ccv_nnc_tensor_t* dw = back(k ? summed1[0] : summed[0], {M, K});
    ccv_nnc_tensor_t* db = back(k ? summed1[1] : summed[1], {M});
    ccv_nnc_tensor_t* yk = back(k ? y1 : y, {H, M});
    for (int i = 0; i < M * K; i++) EXPECT_NEAR(dw->data.f32[i], ydw[i], 1e-5) << "device " << k << " dw " << i;
    for (int i = 0; i < M; i++) EXPECT_NEAR(db->data.f32[i], ydb[i], 1e-5) << "device " << k << " db " << i;
    for (int i = 0; i < H * M; i++) EXPECT_NEAR(yk->data.f32[i], yy[k * H * M + i], 1e-5) << "device " << k << " y " << i;
    for (ccv_nnc_tensor_t* t : {dw, db, yk}) ccv_nnc_tensor_free(t);
  }
  ccv_nnc_graph_free(graph);
  ccv_nnc_tensor_arena_free(arena);
  ccv_nnc_graph_exec_arena_free(exec_arena);
  ccv_nnc_symbolic_graph_free(sg);
  for (ccv_nnc_tensor_t* t : {hx, hdy, hw, hb, gx[0], gx[1], gdy[0], gdy[1], gw, gb}) ccv_nnc_tensor_free(t);
}

// What the pass refuses, with the graph left as it was.
TEST(FakeGpu, SymbolicGraphDataParallelRefusals) {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  const ccv_nnc_tensor_symbol_t a = ccv_nnc_tensor_symbol_new(sg, gpu(0, {4}), "a");
  const ccv_nnc_tensor_symbol_t h = ccv_nnc_tensor_symbol_new(sg, cpu({4}), "h");
  const ccv_nnc_tensor_symbol_t z = ccv_nnc_tensor_symbol_new(sg, gpu(0, {4}), "z");
  ccv_nnc_graph_exec_symbol_new(sg, cmd(CCV_NNC_EWEXP_FORWARD), &a, 1, &z, 1, "exp");
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  // More devices than there are.
  ccv_nnc_symbolic_graph_data_parallel(sg, 3, nullptr, 0, nullptr, 0, nullptr, nullptr, 0, nullptr, CCV_NNC_PARALLEL_REDUCE_OP_SUM,
                                       SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "3 devices asked for, 2 GPUs found"), nullptr) << ccv_nnc_error_message();
  // A broadcast symbol the range does not use.
  ccv_nnc_symbolic_graph_data_parallel(sg, 2, &h, 1, nullptr, 0, nullptr, nullptr, 0, nullptr, CCV_NNC_PARALLEL_REDUCE_OP_SUM,
                                       SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "is not used between"), nullptr) << ccv_nnc_error_message();
  // A CPU tensor in the range.
  const ccv_nnc_tensor_symbol_t hz = ccv_nnc_tensor_symbol_new(sg, cpu({4}), "hz");
  ccv_nnc_graph_exec_symbol_new(sg, cmd(CCV_NNC_EWEXP_FORWARD), &h, 1, &hz, 1, "host exp");
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_symbolic_graph_data_parallel(sg, 2, nullptr, 0, nullptr, 0, nullptr, nullptr, 0, nullptr, CCV_NNC_PARALLEL_REDUCE_OP_SUM,
                                       SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "is in CPU memory"), nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_tensor_symbol_copy(sg, a, 1).d, CCV_NNC_NO_TENSOR_SYMBOL);  // nothing was copied
  ccv_nnc_symbolic_graph_free(sg);
}

// ccv_cnnp_model_set_data_parallel(2): fit takes one group of tensors per
// device (device 0's first), each half the batch; four SGD steps with
// momentum (a parameter set and the momenta reset after the second) give the
// parameters one device reaches on the whole batch, on both devices, and
// evaluate gives each device its rows.
// Two copies of the small net from the same parameters: `one` on GPU 0 for
// batches `whole` (N NCHW images), `two` over GPUs 0 and 1 for halves (`part`).
void one_and_two(int N, int C, int H, int W, ccv_cnnp_model_t** one, ccv_cnnp_model_t** two, ccv_nnc_tensor_param_t* whole,
                 ccv_nnc_tensor_param_t* part) {
  *whole = gpu(0, {N, C, H, W}), *part = gpu(0, {N / 2, C, H, W});
  whole->format = part->format = CCV_TENSOR_FORMAT_NCHW;
  *one = small_net();
  *two = small_net();
  ccv_cnnp_model_compile(*one, whole, 1, sgd(0.05f, 0.9f), crossentropy());
  ccv_cnnp_model_compile(*two, part, 1, sgd(0.05f, 0.9f), crossentropy());
  ccv_cnnp_model_set_data_parallel(*two, 2);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  copy_parameters(*one, *two);  // the same start
}

TEST(FakeGpu, ModelDataParallelOverTwoDevices) {
  const int N = 8, C = 2, H = 6, W = 5, half = N / 2;
  ccv_cnnp_model_t *one, *two;
  ccv_nnc_tensor_param_t whole, part;
  ASSERT_NO_FATAL_FAILURE(one_and_two(N, C, H, W, &one, &two, &whole, &part));
  std::mt19937 rng(8);
  ccv_nnc_tensor_param_t hx = whole;
  hx.type = CCV_TENSOR_CPU_MEMORY;
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, hx, 0);
  ccv_nnc_tensor_t* labels = ccv_nnc_tensor_new(nullptr, cpu({N}), 0);
  ccv_nnc_tensor_t* gx = ccv_nnc_tensor_new(nullptr, whole, 0);
  ccv_nnc_tensor_t* gl = ccv_nnc_tensor_new(nullptr, gpu(0, {N}), 0);
  ccv_nnc_tensor_t* gxs[2];
  ccv_nnc_tensor_t* gls[2];
  ccv_nnc_tensor_t* gys[2];
  for (int k = 0; k < 2; k++) {
    ccv_nnc_tensor_param_t pk = part;
    pk.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (k << 8);
    gxs[k] = ccv_nnc_tensor_new(nullptr, pk, 0);
    gls[k] = ccv_nnc_tensor_new(nullptr, gpu(k, {half}), 0);
    gys[k] = ccv_nnc_tensor_new(nullptr, gpu(k, {half, 4}), 0);
  }
  ccv_nnc_tensor_t* gy = ccv_nnc_tensor_new(nullptr, gpu(0, {N, 4}), 0);
  auto load = [&]() {
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {x, labels}, {gx, gl}), CCV_NNC_EXEC_SUCCESS);
    for (int k = 0; k < 2; k++) {
      ccv_nnc_tensor_param_t hk = hx;
      hk.dim[0] = half;
      ccv_nnc_tensor_t* xk = ccv_nnc_tensor_new(x->data.f32 + k * half * C * H * W, hk, 0);
      ccv_nnc_tensor_t* lk = ccv_nnc_tensor_new(labels->data.f32 + k * half, cpu({half}), 0);
      ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {xk, lk}, {gxs[k], gls[k]}), CCV_NNC_EXEC_SUCCESS);
      ccv_nnc_tensor_free(xk);
      ccv_nnc_tensor_free(lk);
    }
  };
  for (int step = 0; step < 4; step++) {
    if (step == 2) {
      // Host writes between steps: a parameter set anew and the momenta
      // reset. The parameter copies on device 1 are kept equal by equal
      // updates, not by a broadcast every step, so they must be refreshed
      // after such writes (device 1's outputs below show whether they were).
      ccv_cnnp_model_io_t p1 = ccv_cnnp_model_parameters(one, ALL_PARAMETERS, 0), p2 = ccv_cnnp_model_parameters(two, ALL_PARAMETERS, 0);
      ccv_nnc_tensor_param_t hp = ccv_cnnp_model_parameter_tensor_params(one, p1);
      hp.type = CCV_TENSOR_CPU_MEMORY;
      ccv_nnc_tensor_t* w = ccv_nnc_tensor_new(nullptr, hp, 0);
      fill(w, rng);
      ccv_cnnp_model_set_parameter(one, p1, w);
      ccv_cnnp_model_set_parameter(two, p2, w);
      ccv_nnc_tensor_free(w);
      ccv_cnnp_model_set_minimizer(one, sgd(0.05f, 0.9f), 1, nullptr, 0);
      ccv_cnnp_model_set_minimizer(two, sgd(0.05f, 0.9f), 1, nullptr, 0);
      ASSERT_STREQ(ccv_nnc_error_message(), "");
    }
    fill(x, rng);
    for (int n = 0; n < N; n++) labels->data.f32[n] = static_cast<float>((n * 3 + step) % 4);
    load();
    ccv_nnc_tensor_t *i1[] = {gx}, *f1[] = {gl}, *o1[] = {gy};
    ccv_cnnp_model_fit(one, i1, 1, f1, 1, o1, 1, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ccv_nnc_tensor_t *i2[] = {gxs[0], gxs[1]}, *f2[] = {gls[0], gls[1]}, *o2[] = {gys[0], gys[1]};
    ccv_cnnp_model_fit(two, i2, 2, f2, 2, o2, 2, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << step;
  }
  // The parameters: device 0's through the model, device 1's by evaluating on it.
  expect_same_parameters(one, two, 2e-5f);
  // Evaluate: each device's outputs are its half of the one-device outputs.
  fill(x, rng);
  load();
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_nnc_tensor_t *i1[] = {gx}, *o1[] = {gy};
  ccv_cnnp_model_evaluate(one, ep, i1, 1, o1, 1, nullptr, nullptr);
  ccv_nnc_tensor_t *i2[] = {gxs[0], gxs[1]}, *o2[] = {gys[0], gys[1]};
  ccv_cnnp_model_evaluate(two, ep, i2, 2, o2, 2, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_nnc_tensor_t* y1 = ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gy}, {y1}), CCV_NNC_EXEC_SUCCESS);
  for (int k = 0; k < 2; k++) {
    ccv_nnc_tensor_t* yk = ccv_nnc_tensor_new(nullptr, cpu({half, 4}), 0);
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gys[k]}, {yk}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < half * 4; i++) EXPECT_NEAR(yk->data.f32[i], y1->data.f32[k * half * 4 + i], 1e-4f) << "device " << k << " " << i;
    ccv_nnc_tensor_free(yk);
  }
  // One group of inputs where two are due is refused with a message.
  ccv_cnnp_model_fit(two, i2, 1, nullptr, 0, nullptr, 0, nullptr, nullptr);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "runs on 2 devices"), nullptr) << ccv_nnc_error_message();
  // More devices than there are.
  ccv_cnnp_model_set_data_parallel(two, 3);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "3 devices asked for, 2 GPUs found"), nullptr) << ccv_nnc_error_message();
  for (ccv_nnc_tensor_t* t : {x, labels, gx, gl, gy, y1, gxs[0], gxs[1], gls[0], gls[1], gys[0], gys[1]}) ccv_nnc_tensor_free(t);
  ccv_cnnp_model_free(one);
  ccv_cnnp_model_free(two);
}

// evaluate with requires_grad, backward and apply_gradients over two devices,
// each half the batch, against one device with the whole batch: the outputs
// and input gradients are the halves of the one-device ones, the parameter
// gradients are summed over the devices, so three steps end at the same
// parameters.
TEST(FakeGpu, ModelBackwardDataParallelOverTwoDevices) {
  const int N = 8, C = 2, H = 6, W = 5, half = N / 2, per = half * C * H * W;
  ccv_cnnp_model_t *one, *two;
  ccv_nnc_tensor_param_t whole, part;
  ASSERT_NO_FATAL_FAILURE(one_and_two(N, C, H, W, &one, &two, &whole, &part));
  std::mt19937 rng(21);
  ccv_nnc_tensor_param_t hx = whole;
  hx.type = CCV_TENSOR_CPU_MEMORY;
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, hx, 0);
  ccv_nnc_tensor_t* back = ccv_nnc_tensor_new(nullptr, hx, 0);
  ccv_nnc_tensor_t* gx = ccv_nnc_tensor_new(nullptr, whole, 0);
  ccv_nnc_tensor_t* gdx = ccv_nnc_tensor_new(nullptr, whole, 0);
  ccv_nnc_tensor_t* gy = ccv_nnc_tensor_new(nullptr, gpu(0, {N, 4}), 0);
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, cpu({N, 4}), 0);
  ccv_nnc_tensor_t *xs[2], *dxs[2], *ys[2], *hdx[2], *hy[2];
  for (int k = 0; k < 2; k++) {
    ccv_nnc_tensor_param_t pk = part;
    pk.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (k << 8);
    xs[k] = ccv_nnc_tensor_new(nullptr, pk, 0);
    dxs[k] = ccv_nnc_tensor_new(nullptr, pk, 0);
    ys[k] = ccv_nnc_tensor_new(nullptr, gpu(k, {half, 4}), 0);
    ccv_nnc_tensor_param_t hk = hx;
    hk.dim[0] = half;
    hdx[k] = ccv_nnc_tensor_new(nullptr, hk, 0);
    hy[k] = ccv_nnc_tensor_new(nullptr, cpu({half, 4}), 0);
  }
  ccv_cnnp_evaluate_param_t ep{};
  ep.requires_grad = 1;
  for (int step = 0; step < 3; step++) {
    fill(x, rng);
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {x}, {gx}), CCV_NNC_EXEC_SUCCESS);
    for (int k = 0; k < 2; k++) {
      ccv_nnc_tensor_param_t hk = hx;
      hk.dim[0] = half;
      ccv_nnc_tensor_t* xk = ccv_nnc_tensor_new(x->data.f32 + k * per, hk, 0);
      ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {xk}, {xs[k]}), CCV_NNC_EXEC_SUCCESS);
      ccv_nnc_tensor_free(xk);
    }
    ccv_nnc_tensor_t *i1[] = {gx}, *o1[] = {gy}, *d1[] = {gdx};
    ccv_cnnp_model_evaluate(one, ep, i1, 1, o1, 1, nullptr, nullptr);
    ccv_cnnp_model_backward(one, nullptr, 0, d1, 1, nullptr, nullptr);
    ccv_cnnp_model_apply_gradients(one, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ccv_nnc_tensor_t *i2[] = {xs[0], xs[1]}, *o2[] = {ys[0], ys[1]}, *d2[] = {dxs[0], dxs[1]};
    ccv_cnnp_model_evaluate(two, ep, i2, 2, o2, 2, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << step;
    ccv_cnnp_model_backward(two, nullptr, 0, d2, 2, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << step;
    ccv_cnnp_model_apply_gradients(two, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "step " << step;
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gy, gdx}, {y, back}), CCV_NNC_EXEC_SUCCESS);
    for (int k = 0; k < 2; k++) {
      ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {ys[k], dxs[k]}, {hy[k], hdx[k]}), CCV_NNC_EXEC_SUCCESS);
      for (int i = 0; i < half * 4; i++)
        ASSERT_NEAR(hy[k]->data.f32[i], y->data.f32[k * half * 4 + i], 1e-4f) << "step " << step << " device " << k << " output " << i;
      for (int i = 0; i < per; i++)
        ASSERT_NEAR(hdx[k]->data.f32[i], back->data.f32[k * per + i], 1e-4f) << "step " << step << " device " << k << " dx " << i;
    }
  }
  expect_same_parameters(one, two, 2e-5f);
  // Gradients in one group where two are due: refused with a message.
  ccv_cnnp_model_evaluate(two, ep, xs, 2, ys, 2, nullptr, nullptr);
  ccv_nnc_tensor_t* d_one[] = {dxs[0]};
  ccv_cnnp_model_backward(two, nullptr, 0, d_one, 1, nullptr, nullptr);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "runs on 2 devices"), nullptr) << ccv_nnc_error_message();
  for (ccv_nnc_tensor_t* t : {x, back, gx, gdx, gy, y, xs[0], xs[1], dxs[0], dxs[1], ys[0], ys[1], hdx[0], hdx[1], hy[0], hy[1]})
    ccv_nnc_tensor_free(t);
  ccv_cnnp_model_free(one);
  ccv_cnnp_model_free(two);
}

// ccv_cnnp_dataframe_copy_to_gpu: a column of (one-hot label, weight) tuples
// copied to GPU 1, row by row; the GPU tensors hold the host values.
TEST(FakeGpu, DataframeCopiesTuplesToTheGpu) {
  struct Row {
    int label;
    float weight;
  };
  ccv_array_t* rows = ccv_array_new(sizeof(Row), 5, 0);
  for (int i = 0; i < 5; i++) {
    const Row r{(i * 3) % 4, 0.5f + i};
    ccv_array_push(rows, &r);
  }
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(rows);
  const int hot = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(Row, label), 4, 1, 0, CCV_32F, CCV_TENSOR_FORMAT_NHWC, "hot");
  const int w = ccv_cnnp_dataframe_copy_scalar(df, 0, offsetof(Row, weight), CCV_32F, CCV_32F, CCV_TENSOR_FORMAT_NHWC, "w");
  const int cols[] = {hot, w};
  const int tuple = ccv_cnnp_dataframe_make_tuple(df, cols, 2, "tuple");
  const int on_gpu = ccv_cnnp_dataframe_copy_to_gpu(df, tuple, 0, 2, 1, "on gpu");
  ASSERT_GE(on_gpu, 0) << ccv_nnc_error_message();
  // Only the second tensor, to GPU 0.
  const int weight_only = ccv_cnnp_dataframe_copy_to_gpu(df, tuple, 1, 1, 0, "weight on gpu 0");
  ASSERT_GE(weight_only, 0) << ccv_nnc_error_message();
  const int iter_cols[] = {on_gpu, weight_only};
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, iter_cols, 2);
  ASSERT_NE(it, nullptr);
  ccv_nnc_tensor_t* h4 = ccv_nnc_tensor_new(nullptr, cpu({4}), 0);
  ccv_nnc_tensor_t* h1 = ccv_nnc_tensor_new(nullptr, cpu({1}), 0);
  for (int i = 0; i < 5; i++) {
    void* v[2] = {nullptr, nullptr};
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0) << ccv_nnc_error_message();
    ccv_nnc_tensor_t** t = static_cast<ccv_nnc_tensor_t**>(v[0]);
    ccv_nnc_tensor_t** t0 = static_cast<ccv_nnc_tensor_t**>(v[1]);
    ASSERT_EQ(CCV_TENSOR_GET_MEMORY(t[0]->info.type), CCV_TENSOR_GPU_MEMORY);
    EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(t[0]->info.type), 1);
    EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(t[1]->info.type), 1);
    EXPECT_EQ(CCV_TENSOR_GET_DEVICE_ID(t0[0]->info.type), 0);
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {t[0], t[1]}, {h4, h1}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (int k = 0; k < 4; k++) EXPECT_EQ(h4->data.f32[k], k == (i * 3) % 4 ? 1.0f : 0.0f) << "row " << i << " class " << k;
    EXPECT_EQ(h1->data.f32[0], 0.5f + i) << "row " << i;
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {t0[0]}, {h1}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(h1->data.f32[0], 0.5f + i) << "row " << i;
  }
  ccv_cnnp_dataframe_iter_free(it);
  // Refusals: a device that does not exist, tensors outside the tuple, a column of no tuples.
  EXPECT_EQ(ccv_cnnp_dataframe_copy_to_gpu(df, tuple, 0, 2, 2, nullptr), -1);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "device 2, but 2 GPUs found"), nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_cnnp_dataframe_copy_to_gpu(df, tuple, 1, 2, 0, nullptr), -1);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "outside"), nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_cnnp_dataframe_copy_to_gpu(df, hot, 0, 1, 0, nullptr), -1);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "does not hold tuples"), nullptr) << ccv_nnc_error_message();
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(rows);
  ccv_nnc_tensor_free(h4);
  ccv_nnc_tensor_free(h1);
}

}  // namespace

namespace {

// ccv_nnc_tensor_pin_memory through the device-memory hook: the data is
// pinned until the tensor is freed (or moves with a resize); a transfer
// between pinned host memory and the GPU on a stream is queued like device
// work, one with pageable memory happens at once.
TEST(FakeGpu, PinnedHostMemory) {
  ccv_nnc_init();  // the pretend device memory is installed with the commands
  const size_t before = nnc_fakegpu::pinned_bytes();
  ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(nullptr, cpu({7, 3}), 0);
  ASSERT_EQ(ccv_nnc_tensor_pin_memory(h), 0) << ccv_nnc_error_message();
  EXPECT_NE(h->type & CCV_TENSOR_PINNED_MEM, 0);
  EXPECT_EQ(nnc_fakegpu::pinned_bytes(), before + h->data_size);
  ASSERT_EQ(ccv_nnc_tensor_pin_memory(h), 0);  // twice is once
  EXPECT_EQ(nnc_fakegpu::pinned_bytes(), before + h->data_size);
  ccv_nnc_tensor_t* g = ccv_nnc_tensor_new(nullptr, gpu(0, {7, 3}), 0);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  for (int i = 0; i < 21; i++) h->data.f32[i] = -1;
  ccv_nnc_cmd_param_t p{};
  p.blas.a[0] = 2.5f;
  ASSERT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, 0, nullptr, 0, &g, 1, s), 0)
      << ccv_nnc_error_message();
  ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &g, 1, &h, 1, s), 0);
  EXPECT_EQ(h->data.f32[4], -1.0f);  // queued, not done
  ccv_nnc_stream_context_wait(s);
  for (int i = 0; i < 21; i++) ASSERT_EQ(h->data.f32[i], 2.5f) << i;
  // Pageable memory: the copy waits for the stream and is done on return.
  ccv_nnc_tensor_t* pageable = ccv_nnc_tensor_new(nullptr, cpu({7, 3}), 0);
  p.blas.a[0] = -4;
  ASSERT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, 0, nullptr, 0, &g, 1, s), 0);
  ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &g, 1, &pageable, 1, s), 0);
  EXPECT_EQ(pageable->data.f32[20], -4.0f);
  // A resize that moves the data pins the new memory.
  h = ccv_nnc_tensor_resize(h, cpu({50, 50}));
  ASSERT_NE(h, nullptr) << ccv_nnc_error_message();
  EXPECT_NE(h->type & CCV_TENSOR_PINNED_MEM, 0);
  EXPECT_EQ(nnc_fakegpu::pinned_bytes(), before + h->data_size);
  ccv_nnc_tensor_free(h);
  EXPECT_EQ(nnc_fakegpu::pinned_bytes(), before);
  // Refusals: NULL, GPU memory, a view.
  EXPECT_EQ(ccv_nnc_tensor_pin_memory(nullptr), -1);
  EXPECT_EQ(ccv_nnc_tensor_pin_memory(g), -1);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "GPU memory"), nullptr) << ccv_nnc_error_message();
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {3, 1};
  ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(pageable, cpu({2, 3}), ofs, stride);
  EXPECT_EQ(ccv_nnc_tensor_pin_memory(reinterpret_cast<ccv_nnc_tensor_t*>(v)), -1);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "view"), nullptr) << ccv_nnc_error_message();
  ccv_nnc_tensor_view_free(v);
  ccv_nnc_tensor_free(pageable);
  ccv_nnc_tensor_free(g);
  ccv_nnc_stream_context_free(s);
}

// ---- Run-time refusals (core/declined.hpp) ----
// A kernel that accepted a call and then finds its library refusing it
// (cuDNN answering NOT_SUPPORTED) throws nnc::Declined before doing anything:
// the call goes on to the next backend that accepts it. The pretend
// GPU_CUDNN and GPU_REF kernels of EWSUM / the convolutions refuse on demand.

struct Declining {  // refusals of one command, undone at the end of a scope
  uint32_t cmd;
  ~Declining() {
    nnc_fakegpu::set_declining(cmd, 0, CCV_NNC_BACKEND_GPU_CUDNN);
    nnc_fakegpu::set_declining(cmd, 0, CCV_NNC_BACKEND_GPU_REF);
  }
};

TEST(FakeGpu, ARefusedCallRunsOnTheNextBackend) {
  std::mt19937 rng(31);
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, cpu({5, 7}), 0);
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, cpu({5, 7}), 0);
  ccv_nnc_tensor_t* zero = ccv_nnc_tensor_new(nullptr, cpu({5, 7}), 0);
  ccv_nnc_tensor_t* back = ccv_nnc_tensor_new(nullptr, cpu({5, 7}), 0);
  fill(a, rng), fill(b, rng);
  std::memset(zero->data.f32, 0, 35 * sizeof(float));
  ccv_nnc_tensor_t* ga = ccv_nnc_tensor_new(nullptr, gpu(0, {5, 7}), 0);
  ccv_nnc_tensor_t* gb = ccv_nnc_tensor_new(nullptr, gpu(0, {5, 7}), 0);
  ccv_nnc_tensor_t* gc = ccv_nnc_tensor_new(nullptr, gpu(0, {5, 7}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {a, b}, {ga, gb}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // gc starts at zero each time, so a result can only come from the call checked.
  auto clear = [&] { ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {zero}, {gc}), CCV_NNC_EXEC_SUCCESS); };
  auto expect_sum = [&](bool summed, const char* where) {
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gc}, {back}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (int i = 0; i < 35; i++)
      ASSERT_EQ(back->data.f32[i], summed ? a->data.f32[i] + b->data.f32[i] : 0.f) << where << ", element " << i;
  };
  const Declining undo{CCV_NNC_EWSUM_FORWARD};
  const size_t d0 = nnc_fakegpu::declines(), k0 = nnc_fakegpu::kernels_run();
  // Refused by GPU_CUDNN (the preferred backend), run by GPU_REF: no error.
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, -1);
  clear();
  ASSERT_EQ(exec(cmd(CCV_NNC_EWSUM_FORWARD), {ga, gb}, {gc}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 1);
  expect_sum(true, "no stream");
  // The same on a GPU stream: refused when queued, then queued on GPU_REF.
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  clear();
  ccv_nnc_tensor_t *in[] = {ga, gb}, *out[] = {gc};
  ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_EWSUM_FORWARD), ccv_nnc_no_hint, 0, in, 2, out, 1, s), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 2);
  ccv_nnc_stream_context_wait(s);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  expect_sum(true, "on a GPU stream");
  // A caller who names the refusing backend gets its refusal.
  clear();
  ccv_nnc_cmd_t named = cmd(CCV_NNC_EWSUM_FORWARD);
  named.backend = CCV_NNC_BACKEND_GPU_CUDNN;
  EXPECT_EQ(exec(named, {ga, gb}, {gc}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "GPU_CUDNN: refused at run time"), nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 3);
  expect_sum(false, "after the named backend refused");
  // Both refuse: nothing after GPU_REF takes GPU tensors.
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, -1, CCV_NNC_BACKEND_GPU_REF);
  EXPECT_EQ(exec(cmd(CCV_NNC_EWSUM_FORWARD), {ga, gb}, {gc}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "backend CCV_NNC_BACKEND_GPU_REF declined these tensors at run time (fake GPU_REF: refused"), nullptr)
      << ccv_nnc_error_message();
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "no backend after it accepts them"), nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 5);
  expect_sum(false, "after both refused");
  // A single refusal: the next call runs on GPU_CUDNN again.
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, 0, CCV_NNC_BACKEND_GPU_REF);
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, 1);
  for (int round = 0; round < 2; round++) {
    clear();
    ASSERT_EQ(exec(cmd(CCV_NNC_EWSUM_FORWARD), {ga, gb}, {gc}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    expect_sum(true, round ? "second call" : "first call");
  }
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 6);
  EXPECT_GT(nnc_fakegpu::kernels_run(), k0);
  ccv_nnc_stream_context_free(s);
  for (ccv_nnc_tensor_t* t : {a, b, zero, back, ga, gb, gc}) ccv_nnc_tensor_free(t);
}

// In a graph the node that fell back keeps its new backend until its tensors
// change: the refusing backend is asked once per node, not once per run.
TEST(FakeGpu, AGraphNodeKeepsTheBackendItFellBackTo) {
  std::mt19937 rng(32);
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, cpu({3, 11}), 0);
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, cpu({3, 11}), 0);
  ccv_nnc_tensor_t* back = ccv_nnc_tensor_new(nullptr, cpu({3, 11}), 0);
  fill(a, rng), fill(b, rng);
  ccv_nnc_tensor_t* ga = ccv_nnc_tensor_new(nullptr, gpu(1, {3, 11}), 0);
  ccv_nnc_tensor_t* gb = ccv_nnc_tensor_new(nullptr, gpu(1, {3, 11}), 0);
  ccv_nnc_tensor_t* gc = ccv_nnc_tensor_new(nullptr, gpu(1, {3, 11}), 0);
  ccv_nnc_tensor_t* gd = ccv_nnc_tensor_new(nullptr, gpu(1, {3, 11}), 0);
  ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {a, b}, {ga, gb}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const Declining undo{CCV_NNC_EWSUM_FORWARD};
  // c = a + b, then d = c + a (gb is overwritten by d's inputs never).
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  ccv_nnc_tensor_t *i0[] = {ga, gb}, *o0[] = {gc}, *i1[] = {gc, ga}, *o1[] = {gd};
  const ccv_nnc_graph_exec_t n0 = ccv_nnc_graph_exec_new(g, cmd(CCV_NNC_EWSUM_FORWARD), ccv_nnc_no_hint, i0, 2, o0, 1);
  const ccv_nnc_graph_exec_t n1 = ccv_nnc_graph_exec_new(g, cmd(CCV_NNC_EWSUM_FORWARD), ccv_nnc_no_hint, i1, 2, o1, 1);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n0, n1), 0);
  auto expect_d = [&](const char* where) {
    ASSERT_EQ(exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gd}, {back}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (int i = 0; i < 33; i++) {
      const float c = a->data.f32[i] + b->data.f32[i];
      ASSERT_EQ(back->data.f32[i], c + a->data.f32[i]) << where << ", element " << i;
    }
  };
  const size_t d0 = nnc_fakegpu::declines();
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, -1);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 2) << "each node refused once";
  expect_d("first run");
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(nnc_fakegpu::declines(), d0 + 2) << "the nodes stayed on GPU_REF";
  expect_d("second run");
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (1 << 8));
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  // A run on a GPU stream goes through a schedule of its own (its own
  // prepared steps): each node is refused once there too, then no more.
  for (int round = 0; round < 2; round++) {
    ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ccv_nnc_stream_context_wait(s);
    EXPECT_STREQ(ccv_nnc_error_message(), "");
    EXPECT_EQ(nnc_fakegpu::declines(), d0 + 4) << "round " << round;
    expect_d("on a GPU stream");
  }
  // Now GPU_REF refuses as well: the run fails, naming the node and both refusals' end.
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, -1, CCV_NNC_BACKEND_GPU_REF);
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "node 0"), nullptr) << ccv_nnc_error_message();
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "no backend after it accepts them"), nullptr) << ccv_nnc_error_message();
  nnc_fakegpu::set_declining(CCV_NNC_EWSUM_FORWARD, 0, CCV_NNC_BACKEND_GPU_REF);
  ccv_nnc_graph_free(g);
  // A node that names the refusing backend fails with its refusal.
  ccv_nnc_graph_t* h = ccv_nnc_graph_new();
  ccv_nnc_cmd_t named = cmd(CCV_NNC_EWSUM_FORWARD);
  named.backend = CCV_NNC_BACKEND_GPU_CUDNN;
  (void)ccv_nnc_graph_exec_new(h, named, ccv_nnc_no_hint, i0, 2, o0, 1);
  const size_t d1 = nnc_fakegpu::declines();
  EXPECT_EQ(ccv_nnc_graph_run(h, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "GPU_CUDNN: refused at run time"), nullptr) << ccv_nnc_error_message();
  EXPECT_NE(std::strstr(ccv_nnc_error_message(), "node 0"), nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(nnc_fakegpu::declines(), d1 + 1);
  ccv_nnc_graph_free(h);
  ccv_nnc_stream_context_free(s);
  for (ccv_nnc_tensor_t* t : {a, b, back, ga, gb, gc, gd}) ccv_nnc_tensor_free(t);
}

// A model whose convolutions the preferred backend refuses at run time
// trains as on the CPU, on GPU_REF.
TEST(FakeGpu, ModelTrainsWhenItsConvolutionsAreRefused) {
  const Declining forward{CCV_NNC_CONVOLUTION_FORWARD}, backward{CCV_NNC_CONVOLUTION_BACKWARD};
  nnc_fakegpu::set_declining(CCV_NNC_CONVOLUTION_FORWARD, -1);
  nnc_fakegpu::set_declining(CCV_NNC_CONVOLUTION_BACKWARD, -1);
  const size_t d0 = nnc_fakegpu::declines();
  const int type = static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (1 << 8);
  train_beside_the_cpu(type, 1);
  EXPECT_GE(nnc_fakegpu::declines(), d0 + 2) << "the forward and the backward were each refused";
}

}  // namespace
