// bench-softmax: the softmax family's CPU_OPT kernels against PyTorch 1.13's
// CPU kernels on the same shapes and data, both on NNC's thread count
// (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets both).
//
//   bench-softmax
//
// 1. SOFTMAX forward / backward on 256 x 1000 fp32 (a classifier head over
//    ImageNet's classes): ccv_nnc_cmd_exec against at::_softmax_out /
//    at::_softmax_backward_data_out (milliseconds, median of many runs).
// 2. Softmax cross-entropy, forward + backward, class-index labels, per-row
//    losses (no reduction) and a gradient of ones per row: ours is
//    SOFTMAX_CROSSENTROPY_FORWARD (loss + softmax) then _BACKWARD (g NULL =
//    ones); PyTorch computes the same thing in its training path's pieces:
//    at::_log_softmax_out, at::nll_loss_forward_out (reduction none), then
//    at::nll_loss_backward_out with a ones gradient and
//    at::_log_softmax_backward_data_out. All outputs preallocated; the
//    64 x 10 case (the reference network's loss, one batch) is a tiny
//    operation timed per call in microseconds.
// 3. The binary losses of a multi-label head, 256 x 1000 fp32, forward +
//    backward, per-row losses and a gradient of ones: BINARY_CROSSENTROPY
//    (x in (0, 1)) against at::binary_cross_entropy_out (reduction none),
//    at::sum_out over each row and at::binary_cross_entropy_backward_out;
//    SIGMOID_BINARY_CROSSENTROPY (backward from the logits) against
//    at::binary_cross_entropy_with_logits (reduction none), at::sum_out, and
//    the backward PyTorch 1.13's autograd runs for it, (sigmoid(z) - y) * g,
//    through at::sigmoid_out, at::sub_out and at::mul_out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

ccv_nnc_tensor_param_t param(int datatype, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

ccv_nnc_cmd_t command(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.label_smoothing.trim1 = 1;
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

// ccv_nnc_cmd_exec with brace lists (TENSOR_LIST is C only); nothing allocated.
int exec(const ccv_nnc_cmd_t& cmd, std::initializer_list<ccv_nnc_tensor_t*> in,
         std::initializer_list<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.begin(), static_cast<int>(in.size()), out.begin(),
                          static_cast<int>(out.size()), nullptr);
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

struct Problem {
  int rows, cols;
  ccv_nnc_tensor_t *x, *y, *g, *dx, *label, *loss;
  std::vector<int64_t> label64;
  Problem(int r, int c, std::mt19937& rng) : rows(r), cols(c) {
    x = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    y = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    g = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    dx = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    label = ccv_nnc_tensor_new(nullptr, param(CCV_32S, {r}), 0);
    loss = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, 1}), 0);
    std::normal_distribution<float> n(0, 3);
    std::uniform_int_distribution<int> k(0, c - 1);
    for (int i = 0; i < r * c; i++) x->data.f32[i] = n(rng), g->data.f32[i] = n(rng);
    for (int i = 0; i < r; i++) label64.push_back(label->data.i32[i] = k(rng));
  }
  ~Problem() {
    for (ccv_nnc_tensor_t* t : {x, y, g, dx, label, loss}) ccv_nnc_tensor_free(t);
  }
};

void print_us_header(const char* title) {
  std::printf("\n%s\n%-44s %12s %12s %8s\n", title, "case", "NNC us", "PyTorch us", "ratio");
}
void print_us_row(const char* name, double ours, double peer) {
  if (peer > 0)
    std::printf("%-44s %12.3f %12.3f %7.3fx\n", name, ours, peer, ours / peer);
  else
    std::printf("%-44s %12.3f %12s %8s\n", name, ours, "-", "-");
  std::fflush(stdout);
}

}  // namespace

int main() {
  ccv_nnc_init();
  nnc_bench::header_torch();
#ifdef NNC_HAVE_TORCH
  const bool peer = true;
#else
  const bool peer = false;
  std::printf("(built without libtorch: no PyTorch peer; configure with -DNNC_BENCH_TORCH=ON)\n");
#endif
  std::mt19937 rng(42);
  const ccv_nnc_cmd_t sf = command(CCV_NNC_SOFTMAX_FORWARD), sb = command(CCV_NNC_SOFTMAX_BACKWARD);
  const ccv_nnc_cmd_t cf = command(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  const ccv_nnc_cmd_t cb = command(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD);

  // --- 1. SOFTMAX on 256 x 1000 --------------------------------------------
  {
    nnc_bench::Table table("SOFTMAX fp32 (PyTorch: at::_softmax_out / at::_softmax_backward_data_out)", "PyTorch");
    Problem p(256, 1000, rng);
    auto fwd = [&] { check(exec(sf, {p.x}, {p.y}), "SOFTMAX"); };
    auto bwd = [&] { check(exec(sb, {p.g, nullptr, p.y}, {p.dx}), "SOFTMAX_BACKWARD"); };
    double tf = -1, tb = -1;
#ifdef NNC_HAVE_TORCH
    at::Tensor x = at::from_blob(p.x->data.f32, {256, 1000}, at::kFloat);
    at::Tensor g = at::from_blob(p.g->data.f32, {256, 1000}, at::kFloat);
    at::Tensor y = at::empty({256, 1000}, at::kFloat), dx = at::empty({256, 1000}, at::kFloat);
    tf = nnc_bench::time_ms([&] { at::_softmax_out(y, x, 1, false); });
    tb = nnc_bench::time_ms([&] { at::_softmax_backward_data_out(dx, g, y, 1, at::kFloat); });
    fwd();
    double worst = 0;
    for (int i = 0; i < 256 * 1000; i++)
      worst = std::max(worst, static_cast<double>(std::fabs(p.y->data.f32[i] - y.data_ptr<float>()[i])));
    std::printf("(max |ours - PyTorch| on the softmax: %.3g)\n", worst);
#endif
    table.row("softmax forward 256x1000", nnc_bench::time_ms(fwd), tf);
    table.row("softmax backward 256x1000", nnc_bench::time_ms(bwd), tb);
  }

  // --- 2. softmax cross-entropy, forward + backward --------------------------
  print_us_header(
      "softmax cross-entropy fwd+bwd, index labels, per-row loss, g = 1 (PyTorch: _log_softmax + "
      "nll_loss_forward, nll_loss_backward + _log_softmax_backward_data)");
  for (const auto& shape : {std::pair<int, int>{64, 10}, std::pair<int, int>{256, 1000}}) {
    Problem p(shape.first, shape.second, rng);
    auto ours = [&] {
      check(exec(cf, {p.x, p.label}, {p.loss, p.y}), "SOFTMAX_CROSSENTROPY_FORWARD");
      check(exec(cb, {nullptr, nullptr, nullptr, p.label, nullptr, p.y}, {p.dx}), "SOFTMAX_CROSSENTROPY_BACKWARD");
    };
    const long calls = shape.second > 100 ? 200 : 20000;
    double t_peer = -1;
#ifdef NNC_HAVE_TORCH
    const int64_t r = p.rows, c = p.cols;
    at::Tensor x = at::from_blob(p.x->data.f32, {r, c}, at::kFloat);
    at::Tensor target = at::from_blob(p.label64.data(), {r}, at::kLong);
    at::Tensor ls = at::empty({r, c}, at::kFloat), loss = at::empty({r}, at::kFloat), tw = at::empty({}, at::kFloat);
    at::Tensor ones = at::ones({r}, at::kFloat), gls = at::empty({r, c}, at::kFloat),
               dx = at::empty({r, c}, at::kFloat);
    const c10::optional<at::Tensor> no_weight;
    auto theirs = [&] {
      at::_log_softmax_out(ls, x, 1, false);
      at::nll_loss_forward_out(loss, tw, ls, target, no_weight, at::Reduction::None, -100);
      at::nll_loss_backward_out(gls, ones, ls, target, no_weight, at::Reduction::None, -100, tw);
      at::_log_softmax_backward_data_out(dx, gls, ls, 1, at::kFloat);
    };
    t_peer = nnc_bench::time_us_per_call(theirs, calls);
    ours();
    double worst_loss = 0, worst_dx = 0;
    for (int i = 0; i < p.rows; i++)
      worst_loss =
          std::max(worst_loss, static_cast<double>(std::fabs(p.loss->data.f32[i] - loss.data_ptr<float>()[i])));
    for (int i = 0; i < p.rows * p.cols; i++)
      worst_dx = std::max(worst_dx, static_cast<double>(std::fabs(p.dx->data.f32[i] - dx.data_ptr<float>()[i])));
    std::printf("(%dx%d: max |ours - PyTorch| loss %.3g, d logits %.3g)\n", p.rows, p.cols, worst_loss, worst_dx);
#endif
    char name[64];
    std::snprintf(name, sizeof(name), "softmax-CE fwd+bwd %dx%d", p.rows, p.cols);
    print_us_row(name, nnc_bench::time_us_per_call(ours, calls), t_peer);
  }
  // --- 3. binary cross-entropy losses, forward + backward ------------------------
  {
    nnc_bench::Table table("binary cross-entropy fwd+bwd 256x1000, per-row loss, g = 1", "PyTorch");
    const int r = 256, c = 1000;
    std::uniform_real_distribution<float> u(0.01f, 0.99f), n(-4, 4);
    ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    ccv_nnc_tensor_t* z = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    ccv_nnc_tensor_t* dx = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, c}), 0);
    ccv_nnc_tensor_t* loss = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {r, 1}), 0);
    for (int i = 0; i < r * c; i++) x->data.f32[i] = u(rng), z->data.f32[i] = n(rng), y->data.f32[i] = u(rng) > 0.5f;
    ccv_nnc_cmd_t bf = command(CCV_NNC_BINARY_CROSSENTROPY_FORWARD), bb = command(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD);
    ccv_nnc_cmd_t zf = command(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD);
    ccv_nnc_cmd_t zb = command(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD);
    for (ccv_nnc_cmd_t* k : {&bf, &bb, &zf, &zb}) k->info.binary_crossentropy.pos_weight = 1;
    auto bce = [&] {
      check(exec(bf, {x, y}, {loss}), "BINARY_CROSSENTROPY_FORWARD");
      check(exec(bb, {nullptr, x, y}, {dx}), "BINARY_CROSSENTROPY_BACKWARD");
    };
    auto sbce = [&] {
      check(exec(zf, {z, y}, {loss}), "SIGMOID_BINARY_CROSSENTROPY_FORWARD");
      check(exec(zb, {nullptr, nullptr, z, y}, {dx}), "SIGMOID_BINARY_CROSSENTROPY_BACKWARD");
    };
    double t_bce = -1, t_sbce = -1;
#ifdef NNC_HAVE_TORCH
    at::Tensor tx = at::from_blob(x->data.f32, {r, c}, at::kFloat), tz = at::from_blob(z->data.f32, {r, c}, at::kFloat);
    at::Tensor ty = at::from_blob(y->data.f32, {r, c}, at::kFloat);
    at::Tensor el = at::empty({r, c}, at::kFloat), rl = at::empty({r}, at::kFloat), g = at::ones({r, c}, at::kFloat);
    at::Tensor tdx = at::empty({r, c}, at::kFloat), ts = at::empty({r, c}, at::kFloat);
    const c10::optional<at::Tensor> none;
    t_bce = nnc_bench::time_ms([&] {
      at::binary_cross_entropy_out(el, tx, ty, none, at::Reduction::None);
      at::sum_out(rl, el, {1});
      at::binary_cross_entropy_backward_out(tdx, g, tx, ty, none, at::Reduction::None);
    });
    t_sbce = nnc_bench::time_ms([&] {
      el = at::binary_cross_entropy_with_logits(tz, ty, none, none, at::Reduction::None);
      at::sum_out(rl, el, {1});
      at::sigmoid_out(ts, tz);
      at::sub_out(tdx, ts, ty);
      at::mul_out(tdx, tdx, g);
    });
    sbce();
    double worst_loss = 0, worst_dz = 0;
    for (int i = 0; i < r; i++)
      worst_loss = std::max(worst_loss, static_cast<double>(std::fabs(loss->data.f32[i] - rl.data_ptr<float>()[i]) /
                                                            std::max(1.0f, std::fabs(rl.data_ptr<float>()[i]))));
    for (int i = 0; i < r * c; i++)
      worst_dz = std::max(worst_dz, static_cast<double>(std::fabs(dx->data.f32[i] - tdx.data_ptr<float>()[i])));
    std::printf("(sigmoid BCE: max relative |ours - PyTorch| loss %.3g, max |ours - PyTorch| dz %.3g)\n", worst_loss,
                worst_dz);
#endif
    table.row("BINARY_CROSSENTROPY fwd+bwd", nnc_bench::time_ms(bce), t_bce);
    table.row("SIGMOID_BINARY_CROSSENTROPY fwd+bwd", nnc_bench::time_ms(sbce), t_sbce);
    for (ccv_nnc_tensor_t* t : {x, z, y, dx, loss}) ccv_nnc_tensor_free(t);
  }
  (void)peer;
  return 0;
}
