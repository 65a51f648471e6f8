// bench-dataframe: a dataframe over 60,000 28x28 u8 images (synthetic,
// deterministic) with an int label each; a map to normalised fp32 tensors
// ((x / 255 - 0.2860) / 0.3530, the reference network's input), a one-hot
// label, and combine_new into batches of 64. Prints rows/s of a full epoch:
//   plain      - next() only, everything computed on the calling thread
//   prefetch   - prefetch(depth) before each next(): the worker computes
//   + consumer - the same two with a stand-in for training work per batch
//                (passes over the batch), to show loading hidden behind it
//   + sleeper  - the same with a consumer that sleeps as long per batch as
//                plain loading takes (a CPU waiting for a GPU): the worker
//                needs no spare core to hide the loading then
//   --train STEPS - the reference network (conv 5x5x32 - pool - conv 5x5x64 -
//                pool - dense 256 - dense 10, SGD) trained STEPS batches on
//                one fixed batch (the model's own images/s), then fed by the
//                iterator without and with prefetch
// Usage: bench-dataframe [epochs=3] [consumer_passes=1] [depth=2]
//        bench-dataframe --train STEPS [depth=2]
#include <chrono>
#include <thread>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

constexpr int kRows = 60000, kSide = 28, kBatch = 64;

struct Image {
  unsigned char pixels[kSide * kSide];
  int label;
};

void normalise(void* const* const* in, int, int n, void** data, void*, ccv_nnc_stream_context_t*) {
  for (int i = 0; i < n; i++) {
    if (!data[i]) {
      ccv_nnc_tensor_param_t p{};
      p.type = CCV_TENSOR_CPU_MEMORY;
      p.format = CCV_TENSOR_FORMAT_NHWC;
      p.datatype = CCV_32F;
      p.dim[0] = kSide;
      p.dim[1] = kSide;
      p.dim[2] = 1;
      data[i] = ccv_nnc_tensor_new(nullptr, p, 0);
    }
    const auto* img = static_cast<const Image*>(in[0][i]);
    float* out = static_cast<ccv_nnc_tensor_t*>(data[i])->data.f32;
    for (int k = 0; k < kSide * kSide; k++) out[k] = (img->pixels[k] * (1.0f / 255) - 0.2860f) * (1.0f / 0.3530f);
  }
}
void free_tensor(void* data, void*) { ccv_nnc_tensor_free(static_cast<ccv_nnc_tensor_t*>(data)); }

volatile float g_sink;

int g_sleep_us = 0;  // > 0: the consumer sleeps this long instead

// Training stand-in: `passes` reads of the batch with a multiply-add each.
void consume(const ccv_nnc_tensor_t* x, int passes) {
  if (g_sleep_us > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(g_sleep_us));
    return;
  }
  const size_t n = static_cast<size_t>(x->info.dim[0]) * kSide * kSide;
  float acc = 0;
  for (int p = 0; p < passes; p++)
    for (size_t k = 0; k < n; k++) acc = acc * 0.999f + x->data.f32[k];
  g_sink = acc;
}

double epoch(ccv_cnnp_dataframe_t* df, ccv_cnnp_dataframe_t* batched, ccv_cnnp_dataframe_iter_t* it, int depth,
             int passes, double* checksum) {
  ccv_cnnp_dataframe_shuffle(df);
  ccv_cnnp_dataframe_iter_set_cursor(it, 0);
  const auto t0 = std::chrono::steady_clock::now();
  void* tuple;
  double sum = 0;
  int rows = 0;
  // Each prefetch call asks for that many more rows: `depth` ahead at the
  // start, then one more per row taken keeps the worker `depth` ahead.
  if (depth) ccv_cnnp_dataframe_iter_prefetch(it, depth, nullptr);
  for (;;) {
    if (ccv_cnnp_dataframe_iter_next(it, &tuple, 1, nullptr) != 0) break;
    if (depth) ccv_cnnp_dataframe_iter_prefetch(it, 1, nullptr);
    auto** t = reinterpret_cast<ccv_nnc_tensor_t**>(tuple);
    sum += t[0]->data.f32[0] + t[1]->data.f32[0];
    rows += t[0]->info.dim[0];
    if (passes) consume(t[0], passes);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)batched;
  if (rows != kRows) std::fprintf(stderr, "bench-dataframe: an epoch gave %d rows, not %d\n", rows, kRows);
  *checksum = sum;
  return s;
}

ccv_nnc_cmd_t command(uint32_t id, ccv_nnc_cmd_param_t p) { return ccv_nnc_cmd(id, nullptr, p, 0); }

ccv_nnc_cmd_param_t no_params() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  return p;
}

ccv_nnc_hint_t hint(int stride, int border) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = h.stride.dim[1] = stride;
  h.border.begin[0] = h.border.begin[1] = h.border.end[0] = h.border.end[1] = border;
  return h;
}

ccv_cnnp_model_t* reference_net() {
  int k5[CCV_NNC_MAX_DIM_ALLOC] = {5, 5}, k2[CCV_NNC_MAX_DIM_ALLOC] = {2, 2}, none[CCV_NNC_MAX_DIM_ALLOC] = {};
  ccv_cnnp_model_t* layers[] = {
      ccv_cnnp_convolution(1, 32, k5, none, 0, hint(1, 2), 0, 1, "conv1"),
      ccv_cnnp_relu(nullptr),
      ccv_cnnp_max_pool(k2, hint(2, 0), nullptr),
      ccv_cnnp_convolution(1, 64, k5, none, 0, hint(1, 2), 0, 1, "conv2"),
      ccv_cnnp_relu(nullptr),
      ccv_cnnp_max_pool(k2, hint(2, 0), nullptr),
      ccv_cnnp_flatten(nullptr),
      ccv_cnnp_dense(256, 0, 0, 1, "fc1"),
      ccv_cnnp_relu(nullptr),
      ccv_cnnp_dense(10, 0, 0, 1, "fc2"),
  };
  return ccv_cnnp_sequential_new(layers, 10, 1, "reference");
}

// STEPS training steps three ways; returns non-zero on failure.
int train(ccv_cnnp_dataframe_t* df, ccv_cnnp_dataframe_t* batched, int steps, int depth) {
  ccv_nnc_tensor_param_t input{};
  input.type = CCV_TENSOR_CPU_MEMORY;
  input.format = CCV_TENSOR_FORMAT_NCHW;
  input.datatype = CCV_32F;
  input.dim[0] = kBatch, input.dim[1] = 1, input.dim[2] = kSide, input.dim[3] = kSide;
  ccv_nnc_tensor_param_t label_params = input;
  label_params.format = CCV_TENSOR_FORMAT_NHWC;
  label_params.dim[1] = label_params.dim[2] = label_params.dim[3] = 0;
  ccv_cnnp_model_t* model = reference_net();
  ccv_nnc_cmd_param_t sgd = no_params();
  sgd.sgd.rate = 0.01f, sgd.sgd.scale = 1.0f / kBatch, sgd.sgd.momentum = 0.9f;
  ccv_nnc_cmd_param_t loss = no_params();
  loss.label_smoothing.trim1 = 1;
  ccv_cnnp_model_compile(model, &input, 1, command(CCV_NNC_SGD_FORWARD, sgd),
                         command(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, loss));
  const int zero = 0;
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, &zero, 1);
  void* tuple;
  if (ccv_cnnp_dataframe_iter_next(it, &tuple, 1, nullptr) != 0) return 1;
  auto** first = reinterpret_cast<ccv_nnc_tensor_t**>(tuple);
  std::vector<float> x0(first[0]->data.f32, first[0]->data.f32 + kBatch * kSide * kSide);
  std::vector<float> y0(first[1]->data.f32, first[1]->data.f32 + kBatch);
  auto fit = [&](float* x, float* y) {
    ccv_nnc_tensor_t xt = ccv_nnc_tensor(x, input, 0), yt = ccv_nnc_tensor(y, label_params, 0);
    ccv_nnc_tensor_t* xs[] = {&xt};
    ccv_nnc_tensor_t* ys[] = {&yt};
    ccv_cnnp_model_fit(model, xs, 1, ys, 1, nullptr, 0, nullptr, nullptr);
  };
  fit(x0.data(), y0.data());  // builds and plans the training graph
  if (const char* m = ccv_nnc_error_message(); m && *m) {
    std::fprintf(stderr, "bench-dataframe: fit failed: %s\n", m);
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; s++) fit(x0.data(), y0.data());
  const double alone = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double fed[2];
  for (int prefetch = 0; prefetch < 2; prefetch++) {
    ccv_cnnp_dataframe_shuffle(df);
    ccv_cnnp_dataframe_iter_set_cursor(it, 0);
    if (prefetch) ccv_cnnp_dataframe_iter_prefetch(it, depth, nullptr);
    t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; s++) {
      if (ccv_cnnp_dataframe_iter_next(it, &tuple, 1, nullptr) != 0) return 1;
      if (prefetch) ccv_cnnp_dataframe_iter_prefetch(it, 1, nullptr);
      auto** t = reinterpret_cast<ccv_nnc_tensor_t**>(tuple);
      fit(t[0]->data.f32, t[1]->data.f32);
    }
    fed[prefetch] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("training the reference network, batch %d, %d steps:\n", kBatch, steps);
  std::printf("%-28s %10s %10s\n", "mode", "s", "images/s");
  std::printf("%-28s %10.3f %10.0f\n", "fixed batch (model alone)", alone, steps * kBatch / alone);
  std::printf("%-28s %10.3f %10.0f\n", "fed by the iterator", fed[0], steps * kBatch / fed[0]);
  std::printf("%-28s %10.3f %10.0f\n", "fed, with prefetch", fed[1], steps * kBatch / fed[1]);
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_model_free(model);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool training = argc > 1 && std::strcmp(argv[1], "--train") == 0;
  if (training) argv++, argc--;
  const int epochs = !training && argc > 1 ? std::atoi(argv[1]) : 3;
  const int passes = !training && argc > 2 ? std::atoi(argv[2]) : 1;
  const int depth = !training && argc > 3 ? std::atoi(argv[3]) : 2;
  ccv_array_t* images = ccv_array_new(sizeof(Image), kRows, 0);
  uint32_t s = 12345;
  for (int r = 0; r < kRows; r++) {
    Image img;
    for (int k = 0; k < kSide * kSide; k++) {
      s = s * 1664525u + 1013904223u;
      img.pixels[k] = static_cast<unsigned char>(s >> 24);
    }
    img.label = r % 10;
    ccv_array_push(images, &img);
  }
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(images);
  const int in = 0;
  const int x = ccv_cnnp_dataframe_map(df, normalise, 0, free_tensor, &in, 1, nullptr, nullptr, "x");
  const int y = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(Image, label), 10, 1, 0, CCV_32F, CCV_TENSOR_FORMAT_NHWC, "y");
  if (training) {
    // NCHW images and class indices (32F), as the model's loss takes them;
    // the short last batch is left out (the model is compiled for 64).
    const int label = ccv_cnnp_dataframe_copy_scalar(df, 0, offsetof(Image, label), CCV_32S, CCV_32F,
                                                     CCV_TENSOR_FORMAT_NHWC, "label");
    const int cols[] = {x, label};
    ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, cols, 2, kBatch, 1, CCV_TENSOR_FORMAT_NCHW);
    const int rc = batched ? train(df, batched, argc > 1 ? std::atoi(argv[1]) : 50, argc > 2 ? std::atoi(argv[2]) : 2) : 1;
    if (rc) std::fprintf(stderr, "bench-dataframe: %s\n", ccv_nnc_error_message());
    ccv_cnnp_dataframe_free(batched);
    ccv_cnnp_dataframe_free(df);
    ccv_array_free(images);
    return rc;
  }
  const int cols[] = {x, y};
  ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, cols, 2, kBatch, 1, CCV_TENSOR_FORMAT_NHWC);
  if (!batched) {
    std::fprintf(stderr, "bench-dataframe: %s\n", ccv_nnc_error_message());
    return 1;
  }
  std::printf("bench-dataframe: %d rows of %dx%d u8 -> fp32 + one-hot, batches of %d, %d epochs (best of), "
              "prefetch depth %d, consumer %d passes per batch\n",
              kRows, kSide, kSide, kBatch, epochs, depth, passes);
  std::printf("%-22s %12s %12s\n", "mode", "s/epoch", "rows/s");
  double plain_consumer = 0, prefetch_consumer = 0, plain_sleeper = 0, prefetch_sleeper = 0, plain_alone = 0;
  for (int consumer = 0; consumer < 3; consumer++)
    for (int prefetch = 0; prefetch < 2; prefetch++) {
      if (consumer == 2) g_sleep_us = static_cast<int>(plain_alone / ((kRows + kBatch - 1) / kBatch) * 1e6);
      const int zero = 0;
      ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, &zero, 1);
      double best = 1e30, checksum = 0;
      for (int e = 0; e < epochs; e++) {
        const double t = epoch(df, batched, it, prefetch ? depth : 0, consumer ? passes : 0, &checksum);
        if (t < best) best = t;
      }
      ccv_cnnp_dataframe_iter_free(it);
      char mode[64];
      std::snprintf(mode, sizeof(mode), "%s%s", prefetch ? "prefetch" : "plain",
                    consumer == 1 ? " + consumer" : consumer == 2 ? " + sleeper" : "");
      std::printf("%-22s %12.4f %12.0f\n", mode, best, kRows / best);
      if (consumer == 0 && !prefetch) plain_alone = best;
      if (consumer == 1) (prefetch ? prefetch_consumer : plain_consumer) = best;
      if (consumer == 2) (prefetch ? prefetch_sleeper : plain_sleeper) = best;
    }
  {
    // The sleeps alone (sleep_for overshoots short sleeps): the bound for
    // fully hidden loading beside the sleeper.
    const auto t0 = std::chrono::steady_clock::now();
    for (int b = 0; b < (kRows + kBatch - 1) / kBatch; b++) std::this_thread::sleep_for(std::chrono::microseconds(g_sleep_us));
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-22s %12.4f %12.0f   (%d us asked per batch)\n", "sleeper alone", t, kRows / t, g_sleep_us);
  }
  g_sleep_us = 0;
  // The consumer alone, for the bound: loading fully hidden gives this time.
  {
    const int zero = 0;
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, &zero, 1);
    void* tuple;
    ccv_cnnp_dataframe_iter_next(it, &tuple, 1, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    for (int b = 0; b < (kRows + kBatch - 1) / kBatch; b++) consume(reinterpret_cast<ccv_nnc_tensor_t**>(tuple)[0], passes);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-22s %12.4f %12.0f\n", "consumer alone", t, kRows / t);
    ccv_cnnp_dataframe_iter_free(it);
  }
  if (prefetch_consumer > 0) std::printf("with a consumer, prefetch / plain time: %.2f\n", prefetch_consumer / plain_consumer);
  if (prefetch_sleeper > 0) std::printf("with a sleeper, prefetch / plain time: %.2f\n", prefetch_sleeper / plain_sleeper);
  ccv_cnnp_dataframe_free(batched);
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(images);
  return 0;
}
