// Data-parallel training across processes of a model compiled on a GPU
// (run under mpirun with 2 and 4 processes, and alone), on the pretend GPU
// (test/unit/fakegpu: device memory the host cannot touch, GPU streams that
// run queued work late and in a random order). Each process puts its model on
// pretend device rank % 2.
//
// A small convolutional model (convolution, ReLU, dense; softmax
// cross-entropy; SGD with momentum) trained on N processes, each on its
// B / N rows of every batch of B = 12, beside the same model trained on one
// process on the whole batches (started from the same parameters):
//  - set_comm gives every process rank 0's parameters (the other ranks'
//    are changed first, so the test sees that they were replaced);
//  - six fit steps (on a GPU stream every other step: the bucketed
//    averaging of ccv_nnc_symbolic_graph_data_parallel_comm runs inside
//    the stream's order), then two steps of evaluate (requires_grad) +
//    backward + apply_gradients (the model's own averaging);
//  - the parameters equal one process's to 1e-5 of each tensor's largest
//    magnitude. Both sides run the same fp32 kernels; they differ only in how
//    the batch's gradient sum is split (B rows at once, or N partial sums of
//    B / N rows added by the allreduce and scaled by 1 / N, then by SGD's
//    N / B instead of 1 / B): a few fp32 ulps of the gradient per step,
//    carried by momentum (at most 10x) over 8 steps of rate 0.05: below 1e-6
//    of the parameters. A missing or doubled average (a factor N in the
//    gradient) or a missed synchronisation (a difference of 1 at the start)
//    is 1e-2 or more;
//  - every process ends with bit-identical parameters, and training moved them.
// Then a model whose parameters differ on one process is refused on every
// process, and a model over two devices of a process with a communicator.
#include <cstdint>

#include "gpu_common.hpp"

using namespace gpu_mpi;

namespace {

constexpr int kBatch = 12, kH = 6, kW = 5, kC = 2, kClasses = 4, kFitSteps = 6, kApplySteps = 2;

uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
float uniform(uint64_t* s) { return static_cast<float>((splitmix64(s) >> 40) * (1.0 / 16777216.0)) * 2 - 1; }

ccv_cnnp_model_t* small_net(int classes) {
  int k3[CCV_NNC_MAX_DIM_ALLOC] = {3, 3};
  ccv_nnc_hint_t pad1{};
  pad1.stride.dim[0] = pad1.stride.dim[1] = 1;
  pad1.border.begin[0] = pad1.border.begin[1] = pad1.border.end[0] = pad1.border.end[1] = 1;
  ccv_cnnp_model_t* layers[] = {
      ccv_cnnp_convolution(1, 3, k3, nullptr, 0, pad1, 0, 1, "conv"),
      ccv_cnnp_relu(nullptr),
      ccv_cnnp_flatten(nullptr),
      ccv_cnnp_dense(classes, 0, 0, 1, "fc"),
  };
  return ccv_cnnp_sequential_new(layers, 4, 1, "net");
}

ccv_cnnp_model_t* compiled(int rows, int size, int classes, int device) {
  ccv_cnnp_model_t* m = small_net(classes);
  const ccv_nnc_tensor_param_t x = params(device, CCV_32F, {rows, kH, kW, kC});
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.sgd.rate = 0.05f, p.sgd.scale = static_cast<float>(size) / kBatch, p.sgd.momentum = 0.9f;
  ccv_nnc_cmd_param_t ce;
  std::memset(&ce, 0, sizeof(ce));
  ce.label_smoothing.trim1 = 1;
  ccv_cnnp_model_compile(m, &x, 1, ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, p, 0),
                         ccv_nnc_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, nullptr, ce, 0));
  return m;
}

// Parameter i as a host tensor.
ccv_nnc_tensor_t* parameter(ccv_cnnp_model_t* m, int i) {
  const ccv_cnnp_model_io_t io = ccv_cnnp_model_parameters(m, ALL_PARAMETERS, i);
  ccv_nnc_tensor_param_t hp = ccv_cnnp_model_parameter_tensor_params(m, io);
  hp.type = CCV_TENSOR_CPU_MEMORY;
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, hp, 0);
  ccv_cnnp_model_parameter_copy(m, io, t);
  return t;
}

// Batch `step`: images, labels and (for the backward) output gradients,
// the same on every process; rows [first, first + rows) into GPU tensors.
struct Batch {
  ccv_nnc_tensor_t *x, *labels, *dlogits;  // host, the whole batch
  Batch() {
    x = ccv_nnc_tensor_new(nullptr, params(-1, CCV_32F, {kBatch, kH, kW, kC}), 0);
    labels = ccv_nnc_tensor_new(nullptr, params(-1, CCV_32F, {kBatch}), 0);
    dlogits = ccv_nnc_tensor_new(nullptr, params(-1, CCV_32F, {kBatch, kClasses}), 0);
  }
  ~Batch() {
    ccv_nnc_tensor_free(x);
    ccv_nnc_tensor_free(labels);
    ccv_nnc_tensor_free(dlogits);
  }
  void make(int step) {
    uint64_t s = 0x5eed + static_cast<uint64_t>(step) * 7919;
    for (size_t i = 0; i < ccv_nnc_tensor_count(x->info); i++) x->data.f32[i] = uniform(&s);
    for (int b = 0; b < kBatch; b++) labels->data.f32[b] = static_cast<float>((b * 7 + step) % kClasses);
    for (int i = 0; i < kBatch * kClasses; i++) dlogits->data.f32[i] = uniform(&s);
  }
};

// Rows [first, first + rows) of a host tensor, copied to a new GPU tensor.
ccv_nnc_tensor_t* rows_on_gpu(const ccv_nnc_tensor_t* h, int first, int rows) {
  ccv_nnc_tensor_param_t p = h->info;
  const size_t per_row = ccv_nnc_tensor_count(p) / static_cast<size_t>(p.dim[0]);
  p.dim[0] = rows;
  ccv_nnc_tensor_t part = ccv_nnc_tensor(h->data.f32 + per_row * static_cast<size_t>(first), p, 0);
  p.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (g_device << 8);
  ccv_nnc_tensor_t* g = ccv_nnc_tensor_new(nullptr, p, 0);
  from_cpu(&part, g);
  return g;
}

// One step on rows [first, first + rows): a fit, or evaluate + backward + apply_gradients.
void step(ccv_cnnp_model_t* m, const Batch& b, int first, int rows, bool fit, ccv_nnc_stream_context_t* stream) {
  ccv_nnc_tensor_t* x = rows_on_gpu(b.x, first, rows);
  ccv_nnc_tensor_t* logits = ccv_nnc_tensor_new(nullptr, params(g_device, CCV_32F, {rows, kClasses}), 0);
  if (fit) {
    ccv_nnc_tensor_t* labels = rows_on_gpu(b.labels, first, rows);
    ccv_cnnp_model_fit(m, &x, 1, &labels, 1, &logits, 1, nullptr, stream);
    CHECK(!ccv_nnc_error_message()[0], "fit on rank %d", g_rank);
    if (stream) ccv_nnc_stream_context_wait(stream);
    ccv_nnc_tensor_free(labels);
  } else {
    ccv_nnc_tensor_t* dlogits = rows_on_gpu(b.dlogits, first, rows);
    ccv_cnnp_evaluate_param_t ep{};
    ep.requires_grad = 1;
    ccv_cnnp_model_evaluate(m, ep, &x, 1, &logits, 1, nullptr, nullptr);
    CHECK(!ccv_nnc_error_message()[0], "evaluate on rank %d", g_rank);
    ccv_cnnp_model_backward(m, &dlogits, 1, nullptr, 0, nullptr, nullptr);
    CHECK(!ccv_nnc_error_message()[0], "backward on rank %d", g_rank);
    ccv_cnnp_model_apply_gradients(m, nullptr);
    CHECK(!ccv_nnc_error_message()[0], "apply_gradients on rank %d", g_rank);
    ccv_nnc_tensor_free(dlogits);
  }
  ccv_nnc_tensor_free(x);
  ccv_nnc_tensor_free(logits);
}

// Whether every process holds the same bytes as rank 0 in host tensor t.
bool same_as_rank0(ccv_nnc_comm_t* comm, ccv_nnc_tensor_t* t) {
  ccv_nnc_tensor_t* r0 = ccv_nnc_tensor_new(nullptr, t->info, 0);
  const int r = ccv_nnc_cmd_exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_BROADCAST_FORWARD), comm), ccv_nnc_no_hint, 0, &t, 1, &r0, 1, nullptr);
  CHECK(r == CCV_NNC_EXEC_SUCCESS, "broadcasting a host copy");
  const bool same = std::memcmp(r0->data.u8, t->data.u8, ccv_nnc_tensor_count(t->info) * sizeof(float)) == 0;
  ccv_nnc_tensor_free(r0);
  return same;
}

}  // namespace

int main() {
  ccv_nnc_comm_t* comm = start("gpu_train_dp");
  if (!comm) return failed ? 1 : 0;
  CHECK(kBatch % g_size == 0, "%d processes do not divide the batch", g_size);
  const int rows = kBatch / g_size;
  ccv_cnnp_model_t* single = compiled(kBatch, 1, kClasses, g_device);
  ccv_cnnp_model_t* dp = compiled(rows, g_size, kClasses, g_device);
  CHECK(!ccv_nnc_error_message()[0], "compile");
  const int params_n = ccv_cnnp_model_parameter_count(dp);
  CHECK(params_n == 4, "4 parameters (%d)", params_n);
  for (int i = 0; i < params_n; i++) {
    const ccv_nnc_tensor_param_t p = ccv_cnnp_model_parameter_tensor_params(dp, ccv_cnnp_model_parameters(dp, ALL_PARAMETERS, i));
    CHECK(CCV_TENSOR_GET_MEMORY(p.type) == CCV_TENSOR_GPU_MEMORY && CCV_TENSOR_GET_DEVICE_ID(p.type) == g_device,
          "parameter %d on pretend GPU %d", i, g_device);
  }
  // Ranks other than 0 start elsewhere; set_comm must replace their values.
  if (g_rank != 0)
    for (int i = 0; i < params_n; i++) {
      ccv_nnc_tensor_t* w = parameter(dp, i);
      for (size_t k = 0; k < ccv_nnc_tensor_count(w->info); k++) w->data.f32[k] += 1;
      ccv_cnnp_model_set_parameter(dp, ccv_cnnp_model_parameters(dp, ALL_PARAMETERS, i), w);
      ccv_nnc_tensor_free(w);
    }
  ccv_cnnp_model_set_comm(dp, comm, 256);  // small buckets: several per step
  CHECK(!ccv_nnc_error_message()[0], "set_comm");
  // Every process holds rank 0's values; the single-process model starts there too.
  std::vector<ccv_nnc_tensor_t*> start;
  for (int i = 0; i < params_n; i++) {
    ccv_nnc_tensor_t* w = parameter(dp, i);
    CHECK(same_as_rank0(comm, w), "after set_comm, parameter %d on rank %d is rank 0's", i, g_rank);
    ccv_cnnp_model_set_parameter(single, ccv_cnnp_model_parameters(single, ALL_PARAMETERS, i), w);
    start.push_back(w);
  }
  ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (g_device << 8));
  CHECK(stream, "a GPU stream");
  Batch b;
  for (int s = 0; s < kFitSteps + kApplySteps; s++) {
    nnc_fakegpu::set_stream_order_seed(static_cast<uint32_t>(s * 13 + g_rank));
    b.make(s);
    const bool fit = s < kFitSteps;
    step(single, b, 0, kBatch, fit, nullptr);
    step(dp, b, g_rank * rows, rows, fit, fit && (s % 2) ? stream : nullptr);
  }
  double worst = 0, moved = 0;
  for (int i = 0; i < params_n; i++) {
    ccv_nnc_tensor_t* a = parameter(single, i);
    ccv_nnc_tensor_t* d = parameter(dp, i);
    double diff = 0, mag = 0;
    for (size_t k = 0; k < ccv_nnc_tensor_count(a->info); k++) {
      diff = std::fmax(diff, std::fabs(static_cast<double>(a->data.f32[k]) - d->data.f32[k]));
      mag = std::fmax(mag, std::fabs(static_cast<double>(a->data.f32[k])));
      moved = std::fmax(moved, std::fabs(static_cast<double>(a->data.f32[k]) - start[static_cast<size_t>(i)]->data.f32[k]));
    }
    worst = std::fmax(worst, diff / (mag > 0 ? mag : 1));
    CHECK(same_as_rank0(comm, d), "parameter %d is bit-identical on rank %d and rank 0", i, g_rank);
    ccv_nnc_tensor_free(a);
    ccv_nnc_tensor_free(d);
  }
  CHECK(worst <= 1e-5, "%d processes x %d rows against one process x %d: worst relative difference %g", g_size, rows, kBatch, worst);
  CHECK(moved > 1e-2, "training moved the parameters (by %g)", moved);
  double allreduce_s = 0, waited_s = 0;
  ccv_cnnp_model_comm_time(dp, &allreduce_s, &waited_s);
  CHECK(g_size == 1 || allreduce_s > 0, "the fit graphs averaged through the buckets (%g s)", allreduce_s);
  std::printf("gpu_train_dp: rank %d of %d on pretend GPU %d, %d rows each: %d fit + %d apply_gradients steps; worst relative "
              "difference to one process %.3g, parameters moved by %.3g\n",
              g_rank, g_size, g_device, rows, kFitSteps, kApplySteps, worst, moved);
  for (ccv_nnc_tensor_t* t : start) ccv_nnc_tensor_free(t);
  ccv_nnc_stream_context_free(stream);
  ccv_cnnp_model_free(single);
  ccv_cnnp_model_free(dp);
  // Refusals: different models on one process (on the GPU), on every process.
  if (g_size > 1) {
    ccv_cnnp_model_t* odd = compiled(rows, g_size, g_rank == g_size - 1 ? kClasses + 1 : kClasses, g_device);
    ccv_cnnp_model_set_comm(odd, comm, 0);
    CHECK(std::strstr(ccv_nnc_error_message(), "the processes built different models"), "a mismatch is refused on rank %d", g_rank);
    ccv_cnnp_model_free(odd);
  }
  {
    ccv_cnnp_model_t* two = small_net(kClasses);
    ccv_cnnp_model_set_data_parallel(two, 2);
    ccv_cnnp_model_set_comm(two, comm, 0);
    CHECK(std::strstr(ccv_nnc_error_message(), "across processes too is not supported"), "two devices and a communicator are refused");
    ccv_cnnp_model_free(two);
  }
  CHECK(ccv_nnc_comm_barrier(comm) == CCV_NNC_EXEC_SUCCESS, "barrier");
  ccv_nnc_comm_free(comm);
  std::printf("gpu_train_dp: rank %d of %d: %d failures\n", g_rank, g_size, failed);
  return failed ? 1 : 0;
}
