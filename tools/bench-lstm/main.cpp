// bench-lstm: LSTM_FORWARD / LSTM_BACKWARD on CPU_OPT against PyTorch 1.13's
// torch::nn::LSTM (libtorch's module, the same at::lstm kernels as Python's
// torch.nn.LSTM), both on NNC's thread count (nnc_bench::header_torch();
// NNC_NUM_THREADS=n sets both).
//
//   bench-lstm [--min | --cpu]
//
// --min reports each side's fastest sample instead of the median (on a busy
// machine the median measures the other processes as much as the kernels).
// --cpu reports the process's CPU time per run (fastest sample): with
// NNC_NUM_THREADS=1 the work each side does, whatever else the machine runs
// (with more threads it also counts time spent spinning at barriers).
//
// fp32, time-major, input 256, hidden 512, batch 32, with bias, h0 = c0 = 0:
// sequence 64 with 1 and 2 layers, sequence 32 with 2 layers (the issue's
// row), and sequence 64 bidirectional. "forward" is one forward pass
// (PyTorch under NoGradGuard; NNC writes its reserve all the same);
// "forward+backward" is a forward that keeps what the backward needs and the
// backward to the input and every weight (PyTorch: y.backward(g) with x and
// the parameters requiring gradients; NNC: LSTM_BACKWARD giving dx and dw).
// Both sides start from the same weights (NNC's packed order is torch's
// _flat_weights order) and the check line prints the largest difference of
// y between them. Times are medians in milliseconds; ratio = NNC / PyTorch
// (below 1: faster).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#ifdef NNC_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

struct Shape {
  int T, B, F, H, L;
  bool bidir;
};

ccv_nnc_tensor_t* tensor(std::vector<int> dims, int datatype = CCV_32F) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return ccv_nnc_tensor_new(nullptr, p, 0);
}
size_t count(const ccv_nnc_tensor_t* t) {
  size_t n = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
  return n;
}
void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

ccv_nnc_cmd_t lstm(const Shape& s, bool backward) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.rnn.hidden_size = s.H;
  p.rnn.num_layers = s.L;
  p.rnn.bias = 1;
  p.rnn.bidirectional = s.bidir;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(backward ? CCV_NNC_LSTM_BACKWARD : CCV_NNC_LSTM_FORWARD, nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_OPT;
  return c;
}

bool g_best = false;  // --min

// Median (fastest with --min) milliseconds of f: nnc_bench::time_ms's
// pause and warm-up, samples for about 1.5 s (5 to 60).
bool g_cpu = false;  // --cpu

double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double time_ms(const std::function<void()>& f) {
  if (g_cpu) {  // the process's CPU time, fastest sample: what waiting for a core does not count
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    f(), f();
    double best = INFINITY, spent = 0;
    for (int i = 0; i < 30 && (i < 5 || spent < 1500); i++) {
      const double c0 = cpu_ms();
      f();
      const double ms = cpu_ms() - c0;
      best = std::min(best, ms);
      spent += ms;
    }
    return best;
  }
  if (!g_best) return nnc_bench::time_ms(f, 2, 1500, 5, 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  f(), f();
  double best = INFINITY, spent = 0;
  for (int i = 0; i < 60 && (i < 5 || spent < 1500); i++) {
    const auto s = std::chrono::steady_clock::now();
    f();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
    best = std::min(best, ms);
    spent += ms;
  }
  return best;
}

struct Result {
  double fwd = -1, fwdbwd = -1;
};

// The weights both sides use, in the packed order.
std::vector<float> weights(const Shape& s) {
  const int D = s.bidir ? 2 : 1;
  size_t n = 0;
  for (int l = 0; l < s.L; l++) n += D * (4ull * s.H * (l ? D * s.H : s.F) + 4ull * s.H * s.H + 8ull * s.H);
  std::vector<float> w(n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1 / std::sqrt(float(s.H)), 1 / std::sqrt(float(s.H)));
  for (float& v : w) v = d(rng);
  return w;
}
std::vector<float> input(const Shape& s) {
  std::vector<float> x(size_t(s.T) * s.B * s.F);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& v : x) v = d(rng);
  return x;
}

Result nnc_lstm(const Shape& s, std::vector<float>* y_out) {
  const int D = s.bidir ? 2 : 1;
  const std::vector<float> wv = weights(s), xv = input(s);
  ccv_nnc_tensor_t *x = tensor({s.T, s.B, s.F}), *w = tensor({int(wv.size())}), *xs = tensor({s.B}, CCV_32S);
  ccv_nnc_tensor_t *hx = tensor({s.L * D, s.B, s.H}), *cx = tensor({s.L * D, s.B, s.H});
  std::memcpy(x->data.f32, xv.data(), sizeof(float) * xv.size());
  std::memcpy(w->data.f32, wv.data(), sizeof(float) * wv.size());
  for (int b = 0; b < s.B; b++) xs->data.i32[b] = s.T;
  std::memset(hx->data.f32, 0, sizeof(float) * count(hx));
  std::memset(cx->data.f32, 0, sizeof(float) * count(cx));
  ccv_nnc_tensor_param_t in[5] = {x->info, xs->info, hx->info, cx->info, w->info}, out[4];
  ccv_nnc_hint_tensor_auto(lstm(s, false), in, 5, ccv_nnc_no_hint, out, 4);
  ccv_nnc_tensor_t *y = ccv_nnc_tensor_new(nullptr, out[0], 0), *r = ccv_nnc_tensor_new(nullptr, out[3], 0);
  ccv_nnc_tensor_t *g = ccv_nnc_tensor_new(nullptr, out[0], 0), *dx = tensor({s.T, s.B, s.F}),
                   *dw = tensor({int(wv.size())});
  for (size_t i = 0; i < count(g); i++) g->data.f32[i] = std::sin(0.001f * i);
  ccv_nnc_tensor_t* fin[5] = {x, xs, hx, cx, w};
  ccv_nnc_tensor_t* fout[4] = {y, nullptr, nullptr, r};
  ccv_nnc_tensor_t* bin[13] = {g, nullptr, nullptr, nullptr, x, xs, hx, cx, w, y, nullptr, nullptr, r};
  ccv_nnc_tensor_t* bout[5] = {dx, nullptr, nullptr, nullptr, dw};
  const ccv_nnc_cmd_t f = lstm(s, false), b = lstm(s, true);
  Result res;
  res.fwd = time_ms([&] { check(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, fin, 5, fout, 4, nullptr), "forward"); });
  res.fwdbwd = time_ms([&] {
    check(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, fin, 5, fout, 4, nullptr), "forward");
    check(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, bin, 13, bout, 5, nullptr), "backward");
  });
  y_out->assign(y->data.f32, y->data.f32 + count(y));
  for (ccv_nnc_tensor_t* t : {x, w, xs, hx, cx, y, r, g, dx, dw}) ccv_nnc_tensor_free(t);
  return res;
}

#ifdef NNC_HAVE_TORCH
Result torch_lstm(const Shape& s, std::vector<float>* y_out) {
  torch::nn::LSTM m(torch::nn::LSTMOptions(s.F, s.H).num_layers(s.L).bidirectional(s.bidir));
  const std::vector<float> wv = weights(s), xv = input(s);
  {
    torch::NoGradGuard no_grad;
    size_t off = 0;
    for (auto& p : m->all_weights()) {  // _flat_weights order: per layer and direction w_ih, w_hh, b_ih, b_hh
      std::memcpy(p.data_ptr<float>(), wv.data() + off, sizeof(float) * p.numel());
      off += p.numel();
    }
  }
  at::Tensor x = torch::from_blob(const_cast<float*>(xv.data()), {s.T, s.B, s.F}).clone();
  Result res;
  {
    torch::NoGradGuard no_grad;
    res.fwd = time_ms([&] { (void)m->forward(x); });
    at::Tensor y = std::get<0>(m->forward(x)).contiguous();
    y_out->assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
  }
  at::Tensor xg = x.clone().requires_grad_(true);
  at::Tensor g =
      at::sin(at::arange(int64_t(y_out->size()), at::kFloat) * 0.001f).reshape({s.T, s.B, (s.bidir ? 2 : 1) * s.H});
  res.fwdbwd = time_ms([&] {
    m->zero_grad();
    at::Tensor y = std::get<0>(m->forward(xg));
    y.backward(g);
  });
  return res;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (std::strcmp(argv[i], "--min") == 0)
      g_best = true;
    else if (std::strcmp(argv[i], "--cpu") == 0)
      g_cpu = true;
  ccv_nnc_init();
  nnc_bench::header_torch();
  const Shape shapes[] = {{64, 32, 256, 512, 1, false},
                          {64, 32, 256, 512, 2, false},
                          {32, 32, 256, 512, 2, false},
                          {64, 32, 256, 512, 1, true}};
  nnc_bench::Table table(std::string("LSTM fp32, batch 32, input 256, hidden 512 (CPU_OPT vs torch::nn::LSTM), ") +
                             (g_cpu    ? "process CPU time, fastest sample"
                              : g_best ? "fastest sample"
                                       : "median"),
                         "PyTorch");
  for (const Shape& s : shapes) {
    std::vector<float> ny, ty;
    const Result n = nnc_lstm(s, &ny);
    Result t;
#ifdef NNC_HAVE_TORCH
    t = torch_lstm(s, &ty);
#endif
    const std::string name = "seq " + std::to_string(s.T) + ", " + std::to_string(s.L) + " layer" +
                             (s.L > 1 ? "s" : "") + (s.bidir ? ", bidirectional" : "");
    table.row(name + ", forward", n.fwd, t.fwd);
    table.row(name + ", forward+backward", n.fwdbwd, t.fwdbwd);
    if (!ty.empty()) {
      double worst = 0;
      for (size_t i = 0; i < ny.size() && i < ty.size(); i++) worst = std::max(worst, double(std::fabs(ny[i] - ty[i])));
      std::printf("  check: largest |y_NNC - y_PyTorch| = %.2g\n", worst);
    }
  }
  return 0;
}
