// bench-act: the activation family's CPU_OPT kernels against PyTorch 1.13's
// CPU kernels on the same shapes and data, both on NNC's thread count
// (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets both).
//
//   bench-act
//
// Shapes: 32 x 64 x 56 x 56 fp32 (a ResNet's first stage at batch 32, 25.7 MB
// per tensor) and 64 x 256 (an MLP's hidden layer; timed per call over many
// calls). Rows, NNC against libtorch with preallocated outputs:
//   ReLU forward (in place)      RELU_FORWARD |x| -> |x|   at::relu_(x)
//   ReLU backward                RELU_BACKWARD |g|-|y| -> |dx|   at::threshold_backward_out(dx, g, y, 0)
//   GELU fwd+bwd (exact, tanh)   GELU_FORWARD + GELU_BACKWARD |g|x|y|   at::gelu_out + at::gelu_backward_out
//   SIGMOID / TANH / SWISH forward   at::sigmoid_out / at::tanh_out / at::silu_out
// For the two ReLU rows, which only move memory, the note column gives each
// side's bandwidth (the bytes the row must move over its time) and that of a
// hand-written loop on the same tensors: one loop per thread over its share
// of the tensor, on a pthreadpool of NNC's thread count, in the instruction
// set NNC runs (AVX-512, or AVX2 with NNC_NO_AVX512 or on an AVX2-only CPU):
// x = max(x, 0) in place, two vectors a step; dx = y > 0 ? g : 0 with
// streaming stores; no dispatch, no tails. Where NNC matches it, the row is at
// what this machine's memory moves; not printed for the generic loops.
// Each side is sampled 5 times, alternating with the other (a sample: the
// median of repeated runs for the large shape, the mean over 4000 calls for
// the small one); the best sample is printed, in milliseconds.
// Ratio = NNC / PyTorch (below 1: faster).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include <immintrin.h>
#include <pthreadpool.h>
#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

ccv_nnc_tensor_param_t param(const std::vector<int>& dims) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NCHW;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

struct Tensor {
  ccv_nnc_tensor_t* t;
  size_t n = 1;
  explicit Tensor(const std::vector<int>& dims) : t(ccv_nnc_tensor_new(nullptr, param(dims), 0)) {
    for (int d : dims) n *= static_cast<size_t>(d);
  }
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  float* data() const { return t->data.f32; }
  void fill(std::mt19937& rng, float lo, float hi) const {
    std::uniform_real_distribution<float> d(lo, hi);
    for (size_t i = 0; i < n; i++) data()[i] = d(rng);
  }
};

ccv_nnc_cmd_t cmd(uint32_t id, int gelu_tanh = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.gelu.tanh = gelu_tanh;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_OPT;
  return c;
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

void exec(const ccv_nnc_cmd_t& c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
          const char* what) {
  check(ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                         static_cast<int>(out.size()), nullptr),
        what);
}

// Milliseconds of one sample of f: the median of repeated runs for the large
// shape, the best mean over many calls for the small one.
double sample(bool small, const std::function<void()>& f) {
  return small ? nnc_bench::time_us_per_call(f, 4000) / 1000.0 : nnc_bench::time_ms(f, 1, 150, 3, 200);
}

enum Row { kReluF, kReluB, kGelu, kGeluTanh, kSigmoid, kTanh, kSwish, kRows };
const char* kRowNames[] = {"ReLU forward (in place)", "ReLU backward", "GELU exact fwd+bwd", "GELU tanh fwd+bwd",
                           "SIGMOID forward",         "TANH forward",  "SWISH forward"};

// The timed call of a row on NNC's side (tensors owned by `ts`).
std::function<void()> ours(Row row, const std::vector<int>& dims, std::vector<std::unique_ptr<Tensor>>& ts) {
  std::mt19937 rng(7);
  for (int i = 0; i < 4; i++) ts.push_back(std::make_unique<Tensor>(dims));
  Tensor &x = *ts[0], &y = *ts[1], &g = *ts[2], &dx = *ts[3];
  x.fill(rng, -4, 4), g.fill(rng, -1, 1);
  exec(cmd(CCV_NNC_RELU_FORWARD), {x.t}, {y.t}, "RELU_FORWARD");
  switch (row) {
    case kReluF:
      return [&x] { exec(cmd(CCV_NNC_RELU_FORWARD), {x.t}, {x.t}, "RELU_FORWARD"); };
    case kReluB:
      return [&] { exec(cmd(CCV_NNC_RELU_BACKWARD), {g.t, nullptr, y.t}, {dx.t}, "RELU_BACKWARD"); };
    case kGelu:
    case kGeluTanh: {
      const int t = row == kGeluTanh;
      return [&, t] {
        exec(cmd(CCV_NNC_GELU_FORWARD, t), {x.t}, {y.t}, "GELU_FORWARD");
        exec(cmd(CCV_NNC_GELU_BACKWARD, t), {g.t, x.t, y.t}, {dx.t}, "GELU_BACKWARD");
      };
    }
    case kSigmoid:
      return [&] { exec(cmd(CCV_NNC_SIGMOID_FORWARD), {x.t}, {y.t}, "SIGMOID_FORWARD"); };
    case kTanh:
      return [&] { exec(cmd(CCV_NNC_TANH_FORWARD), {x.t}, {y.t}, "TANH_FORWARD"); };
    default:
      return [&] { exec(cmd(CCV_NNC_SWISH_FORWARD), {x.t}, {y.t}, "SWISH_FORWARD"); };
  }
}

// The hand-written ReLU loops (see the top): part i of `parts` of n floats.
struct HandLoop {
  float *x, *g, *dx;
  size_t n;
  size_t parts;
};
// GCC 12 warns that _mm512_max_ps's undefined pass-through may be used
// uninitialized when the intrinsic is reached through a target attribute.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void hand_relu_forward(void* context, size_t i) {
  const HandLoop& h = *static_cast<const HandLoop*>(context);
  const size_t b = h.n * i / h.parts / 32 * 32, e = h.n * (i + 1) / h.parts / 32 * 32;
  float* const x = h.x;
  const __m512 zero = _mm512_setzero_ps();
  for (size_t j = b; j < e; j += 32) {
    const __m512 u = _mm512_max_ps(zero, _mm512_load_ps(x + j)), v = _mm512_max_ps(zero, _mm512_load_ps(x + j + 16));
    _mm512_store_ps(x + j, u), _mm512_store_ps(x + j + 16, v);
  }
}
__attribute__((target("avx512f"))) void hand_relu_backward(void* context, size_t i) {
  const HandLoop& h = *static_cast<const HandLoop*>(context);
  const size_t b = h.n * i / h.parts / 16 * 16, e = h.n * (i + 1) / h.parts / 16 * 16;
  const float *const g = h.g, *const y = h.x;
  float* const dx = h.dx;
  for (size_t j = b; j < e; j += 16) {
    __m512 gv = _mm512_load_ps(g + j);
    __asm__("" : "+v"(gv));  // a plain load and a blend, as NNC's kernel does
    const __mmask16 keep = _mm512_cmp_ps_mask(_mm512_load_ps(y + j), _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_stream_ps(dx + j, _mm512_maskz_mov_ps(keep, gv));
  }
  _mm_sfence();
}
#pragma GCC diagnostic pop
__attribute__((target("avx2"))) void hand_relu_forward_avx2(void* context, size_t i) {
  const HandLoop& h = *static_cast<const HandLoop*>(context);
  const size_t b = h.n * i / h.parts / 16 * 16, e = h.n * (i + 1) / h.parts / 16 * 16;
  float* const x = h.x;
  const __m256 zero = _mm256_setzero_ps();
  for (size_t j = b; j < e; j += 16) {
    const __m256 u = _mm256_max_ps(zero, _mm256_load_ps(x + j)), v = _mm256_max_ps(zero, _mm256_load_ps(x + j + 8));
    _mm256_store_ps(x + j, u), _mm256_store_ps(x + j + 8, v);
  }
}
__attribute__((target("avx2"))) void hand_relu_backward_avx2(void* context, size_t i) {
  const HandLoop& h = *static_cast<const HandLoop*>(context);
  const size_t b = h.n * i / h.parts / 8 * 8, e = h.n * (i + 1) / h.parts / 8 * 8;
  const float *const g = h.g, *const y = h.x;
  float* const dx = h.dx;
  for (size_t j = b; j < e; j += 8) {
    const __m256 keep = _mm256_cmp_ps(_mm256_load_ps(y + j), _mm256_setzero_ps(), _CMP_GT_OQ);
    _mm256_stream_ps(dx + j, _mm256_and_ps(keep, _mm256_load_ps(g + j)));
  }
  _mm_sfence();
}

#ifdef NNC_HAVE_TORCH
// The same row through libtorch, outputs preallocated (tensors kept in `ts`).
std::function<void()> peer(Row row, const std::vector<int>& dims, std::vector<at::Tensor>& ts) {
  std::vector<int64_t> sizes(dims.begin(), dims.end());
  at::manual_seed(7);
  ts = {at::rand(sizes) * 8 - 4, at::rand(sizes) * 2 - 1};
  ts.push_back(at::relu(ts[0]));
  ts.push_back(at::empty_like(ts[0]));
  at::Tensor &x = ts[0], &g = ts[1], &y = ts[2], &dx = ts[3];
  switch (row) {
    case kReluF:
      return [&x] { at::relu_(x); };
    case kReluB:
      return [&] { at::threshold_backward_out(dx, g, y, 0); };
    case kGelu:
    case kGeluTanh: {
      const char* approx = row == kGeluTanh ? "tanh" : "none";
      return [&, approx] {
        at::gelu_out(y, x, approx);
        at::gelu_backward_out(dx, g, x, approx);
      };
    }
    case kSigmoid:
      return [&] { at::sigmoid_out(y, x); };
    case kTanh:
      return [&] { at::tanh_out(y, x); };
    default:
      return [&] { at::silu_out(y, x); };
  }
}
#endif

}  // namespace

int main() {
  ccv_nnc_init();
  const int threads = nnc_bench::header_torch();
  const struct {
    const char* label;
    std::vector<int> dims;
    bool small;
  } shapes[] = {{"32x64x56x56", {32, 64, 56, 56}, false}, {"64x256", {64, 256}, true}};
  for (const auto& s : shapes) {
    nnc_bench::Table table(std::string("activations, fp32 ") + s.label + (s.small ? " (per call)" : ""), "PyTorch");
    for (int r = 0; r < kRows; r++) {
      const Row row = static_cast<Row>(r);
      std::vector<std::unique_ptr<Tensor>> our_tensors;
      const std::function<void()> a = ours(row, s.dims, our_tensors);
      double best_a = INFINITY, best_b = -1;
#ifdef NNC_HAVE_TORCH
      std::vector<at::Tensor> peer_tensors;
      const std::function<void()> b = peer(row, s.dims, peer_tensors);
      best_b = INFINITY;
#endif
      // Samples alternate between the two sides, so that load from other
      // processes on this shared machine hits both alike; each keeps its best.
      for (int round = 0; round < 5; round++) {
        best_a = std::min(best_a, sample(s.small, a));
#ifdef NNC_HAVE_TORCH
        best_b = std::min(best_b, sample(s.small, b));
#endif
      }
      std::string note;
      const std::string isa = nnc_bench::nnc_isa();
      const bool avx512 = isa == "AVX-512", avx2 = isa.rfind("AVX2", 0) == 0;
      if (!s.small && (row == kReluF || row == kReluB) && (avx512 || avx2)) {
        // The hand-written loop on NNC's tensors (x, y as the mask, g, dx).
        const size_t parts = static_cast<size_t>(threads);
        HandLoop h{our_tensors[0]->data(), our_tensors[2]->data(), our_tensors[3]->data(), our_tensors[0]->n, parts};
        if (row == kReluB) h.x = our_tensors[1]->data();
        pthreadpool_t pool = pthreadpool_create(parts);
        const pthreadpool_task_1d_t loop = avx512 ? (row == kReluF ? hand_relu_forward : hand_relu_backward)
                                                  : (row == kReluF ? hand_relu_forward_avx2 : hand_relu_backward_avx2);
        const std::function<void()> f = [&] { pthreadpool_parallelize_1d(pool, loop, &h, parts, 0); };
        double best_f = INFINITY;
        for (int round = 0; round < 5; round++) best_f = std::min(best_f, sample(false, f));
        pthreadpool_destroy(pool);
        const double mb = static_cast<double>(h.n) * 4 * (row == kReluF ? 2 : 3) / 1e6;
        char buf[160];
        std::snprintf(buf, sizeof(buf), " GB/s: NNC %.0f, PyTorch %.0f, hand loop %.0f (%.3f ms)", mb / best_a,
                      best_b > 0 ? mb / best_b : 0.0, mb / best_f, best_f);
        note = buf;
      }
      table.row(kRowNames[r], best_a, best_b, note);
    }
  }
  return 0;
}
