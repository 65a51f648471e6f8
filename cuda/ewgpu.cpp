// GPU_REF element-wise backends over views and broadcasts: ADD, MUL,
// SCALAR_MUL forward and backward; EWSUM, EWPROD, EWDIV, EWEXP, EWLOG,
// EWSQRT, RELU, SIGMOID, TANH forward and backward; SET_FORWARD;
// FORMAT_TRANSFORM; DATATYPE_CONVERSION; and the device-to-device views of
// DATA_TRANSFER (copy_views, called from transfer.cpp).
//
// The contracts are the CPU_REF ones (lib/cmd/blas/elementwise.cpp,
// lib/cmd/ew/ew.cpp, lib/cmd/ew/math.cpp, lib/cmd/activation, lib/cmd/util):
// the families' validate functions have checked counts, shapes and types
// before a kernel here runs. Every tensor of a call lives on one GPU; any
// strides (views), formats as the CPU takes them; 32F, 16F and 16BF computed
// in float (SET, the copies and the conversions: every type they take).
// A backward's NULL g reads as ones inside the kernels (no tensor of ones is
// made). Index arithmetic: cmd/common/gpu_plan.hpp (tested on the CPU).
#include "cuda/ewgpu.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cmd/util/util.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/kern.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

static_assert(kMaxDim == gpu::kPlanDims, "the GPU plans hold every dimension a tensor has");

// --- shared helpers (ewgpu.hpp) -----------------------------------------

bool on_one_gpu(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
                int* device) {
  int dev = -1;
  auto take = [&](const ccv_nnc_tensor_t* t) {
    if (!t) return true;
    if (CCV_IS_TENSOR_MULTIVIEW(t) || CCV_TENSOR_GET_MEMORY(t->info.type) != CCV_TENSOR_GPU_MEMORY) return false;
    const int d = CCV_TENSOR_GET_DEVICE_ID(t->info.type);
    if (dev >= 0 && d != dev) return false;
    dev = d;
    return true;
  };
  for (int i = 0; i < input_size; i++)
    if (!take(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!take(outputs[i])) return false;
  if (dev < 0) return false;
  if (device) *device = dev;
  return true;
}

GpuType gpu_type(int datatype) {
  switch (CCV_GET_DATA_TYPE(datatype)) {
    case CCV_16F:
      return kF16;
    case CCV_16BF:
      return kBF16;
    case CCV_64F:
      return kF64;
    default:
      return kF32;
  }
}

int device_of(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  int d = 0;
  on_one_gpu(inputs, input_size, outputs, output_size, &d);
  return d;
}

gpu::EwPlan plan_of(const Layout& y, std::initializer_list<const Layout*> xs, const char* what) {
  int64_t st[gpu::kPlanOperands][gpu::kPlanDims] = {};
  const int64_t* sp[gpu::kPlanOperands];
  NNC_CHECK(xs.size() + 1 <= static_cast<size_t>(gpu::kPlanOperands), "%s: too many operands (%zu) for one GPU kernel",
            what, xs.size());
  for (int i = 0; i < y.nd; i++) st[0][i] = y.stride[i];
  sp[0] = st[0];
  int k = 1;
  for (const Layout* x : xs) {
    if (x)
      NNC_CHECK(gpu::broadcast_strides(x->dim.data(), x->stride.data(), x->nd, y.dim.data(), y.nd, st[k]),
                "%s: an operand %s does not broadcast to %s", what, shape_string_n(x->dim.data(), x->nd).c_str(),
                shape_string_n(y.dim.data(), y.nd).c_str());
    sp[k] = st[k];
    k++;
  }
  gpu::EwPlan p;
  NNC_CHECK(gpu::make_plan(p, y.dim.data(), y.nd, k, sp), "%s: cannot plan the kernel", what);
  return p;
}

std::string shape_string_n(const int* dim, int nd) {
  int d[kMaxDim + 1] = {};
  for (int i = 0; i < nd && i < kMaxDim; i++) d[i] = dim[i];
  return shape_string(d);
}

Call::Call(ccv_nnc_stream_context_t* ctx, int device, const char* what_) : stream(ctx), what(what_) {
  s = stream_of(ctx, device, what_);
}
void Call::check(cudaError_t e) const { NNC_CUDA_CHECK(e, what); }
void Call::done() const { finish(stream, s, what); }

DeviceFlag::DeviceFlag(const Call& c, bool needed) : c_(c) {
  if (!needed) return;
  // On a GPU stream context the call cannot wait to read its flag: it gets a
  // slot of the stream's error log, read back when the host next waits for
  // the stream (cuda/stream.hpp: error_slot).
  d_ = error_slot(c.stream, c.what);
  if (d_) return;
  block_ = std::make_unique<StreamBlock>(sizeof(int), c.s, c.what);
  d_ = static_cast<int*>(block_->get());
  NNC_CUDA_CHECK(cudaMemsetAsync(d_, 0, sizeof(int), c.s), c.what);
}

DeviceFlag::~DeviceFlag() = default;

int DeviceFlag::done() {
  // A synchronous call (no stream context, or a CPU stream context's worker,
  // which runs GPU kernels synchronously too) reads its own block back.
  if (block_) NNC_CUDA_CHECK(cudaMemcpyAsync(&host_, d_, sizeof(int), cudaMemcpyDeviceToHost, c_.s), c_.what);
  c_.done();
  block_.reset();  // after the call's work (stream-ordered on a GPU stream)
  d_ = nullptr;
  return host_;
}

// y = x for two views of one shape on one GPU (any element type of one size).
void copy_layout(const Call& c, const Layout& y, const Layout& x) {
  const gpu::EwPlan p = plan_of(y, {&x}, c.what);
  c.check(launch_copy(c.s, p, y.data, x.data, static_cast<int>(y.element_size)));
}

void copy_views(ccv_nnc_stream_context_t* stream, const ccv_nnc_tensor_t* a, ccv_nnc_tensor_t* b, const char* what) {
  const Layout x = layout_of(a, what), y = layout_of(b, what);
  NNC_CHECK(x.element_size == y.element_size && x.count() == y.count(), "%s: cannot copy %s into %s", what,
            shape_string(a->info.dim).c_str(), shape_string(b->info.dim).c_str());
  const Call c(stream, CCV_TENSOR_GET_DEVICE_ID(b->info.type), what);
  if (same_shape(a->info.dim, b->info.dim)) {
    copy_layout(c, y, x);
  } else {  // a reshaping copy of packed tensors (validated)
    NNC_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, x.count() * x.element_size, cudaMemcpyDeviceToDevice, c.s), what);
  }
  c.done();
}

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "element-wise (GPU_REF)";
}

bool same_data(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) { return a && b && a->data.u8 == b->data.u8; }

// Every tensor present on one GPU in one data type (the validate functions
// have checked the types; this keeps other backends' mixes away).
bool accept_gpu(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  return on_one_gpu(inputs, input_size, outputs, output_size, nullptr);
}

void run_ew(const Call& c, const Layout& y, std::initializer_list<const Layout*> xs, std::vector<const void*> ptrs,
            int op, float a, float b) {
  const gpu::EwPlan p = plan_of(y, xs, c.what);
  EwPtrs q;
  q.p[0] = y.data;
  for (size_t i = 0; i < ptrs.size(); i++) q.p[1 + i] = const_cast<void*>(ptrs[i]);
  c.check(launch_ew(c.s, gpu_type(y.datatype), p, q, op, static_cast<int>(xs.size()), a, b));
}

const void* data_or_null(const ccv_nnc_tensor_t* t) { return t ? t->data.ptr : nullptr; }

// --- forward, one input -------------------------------------------------

int unary_op(uint32_t cmd) {
  switch (cmd) {
    case CCV_NNC_EWEXP_FORWARD:
      return kEwExp;
    case CCV_NNC_EWLOG_FORWARD:
      return kEwLog;
    case CCV_NNC_EWSQRT_FORWARD:
      return kEwSqrt;
    case CCV_NNC_RELU_FORWARD:
      return kEwRelu;
    case CCV_NNC_SIGMOID_FORWARD:
      return kEwSigmoid;
    case CCV_NNC_TANH_FORWARD:
      return kEwTanh;
    default:
      return kEwScale;  // SCALAR_MUL
  }
}

NNC_KERNEL(unary) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), y = layout_of(outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  run_ew(c, y, {&x}, {x.data}, unary_op(cmd.cmd), cmd.info.blas.a[0], 0);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- ADD / MUL forward (broadcast) --------------------------------------

NNC_KERNEL(binary) {
  const char* what = name_of(cmd.cmd);
  const Layout a = layout_of(inputs[0], what), b = layout_of(inputs[1], what), y = layout_of(outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  if (cmd.cmd == CCV_NNC_ADD_FORWARD)
    run_ew(c, y, {&a, &b}, {a.data, b.data}, kEwAxpby, cmd.info.blas.a[0], cmd.info.blas.a[1]);
  else
    run_ew(c, y, {&a, &b}, {a.data, b.data}, kEwProd, cmd.info.blas.a[0], 0);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- EWSUM / EWPROD forward (n inputs) ------------------------------------

// Up to kPlanOperands - 1 inputs per pass; inputs that are the output itself go in the first
// pass (later passes read the output as their first operand).
bool accept_nary(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!accept_gpu(cmd, inputs, input_size, outputs, output_size) || output_size < 1 || !outputs[0]) return false;
  int aliased = 0;
  for (int i = 0; i < input_size; i++) {
    if (!inputs[i]) return false;
    if (same_data(inputs[i], outputs[0])) aliased++;
  }
  return aliased < gpu::kPlanOperands - 1;
}

NNC_KERNEL(nary) {
  const char* what = name_of(cmd.cmd);
  const Layout y = layout_of(outputs[0], what);
  std::vector<const ccv_nnc_tensor_t*> order;
  for (int i = 0; i < input_size; i++)
    if (same_data(inputs[i], outputs[0])) order.push_back(inputs[i]);
  for (int i = 0; i < input_size; i++)
    if (!same_data(inputs[i], outputs[0])) order.push_back(inputs[i]);
  const int op = cmd.cmd == CCV_NNC_EWSUM_FORWARD ? kEwSum : kEwProd;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  constexpr size_t kPer = gpu::kPlanOperands - 1;
  size_t next = 0;
  bool first = true;
  while (next < order.size() || first) {
    std::vector<Layout> xs;
    if (!first) xs.push_back(y);  // the running result
    while (xs.size() < kPer && next < order.size()) xs.push_back(layout_of(order[next++], what));
    int64_t st[gpu::kPlanOperands][gpu::kPlanDims] = {};
    const int64_t* sp[gpu::kPlanOperands];
    EwPtrs q;
    q.p[0] = y.data;
    for (int i = 0; i < y.nd; i++) st[0][i] = y.stride[i];
    sp[0] = st[0];
    for (size_t k = 0; k < xs.size(); k++) {
      for (int i = 0; i < y.nd; i++) st[1 + k][i] = xs[k].stride[i];
      sp[1 + k] = st[1 + k];
      q.p[1 + k] = xs[k].data;
    }
    gpu::EwPlan p;
    NNC_CHECK(gpu::make_plan(p, y.dim.data(), y.nd, static_cast<int>(xs.size()) + 1, sp), "%s: cannot plan the kernel",
              what);
    c.check(launch_ew(c.s, gpu_type(y.datatype), p, q, op, static_cast<int>(xs.size()), 1, 0));
    first = false;
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- EWDIV forward: a / b, a NULL a reads 1 -------------------------------

NNC_KERNEL(divide) {
  const char* what = name_of(cmd.cmd);
  const ccv_nnc_tensor_t* at = inputs[0];
  const Layout b = layout_of(inputs[1], what), y = layout_of(outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  if (at) {
    const Layout a = layout_of(at, what);
    run_ew(c, y, {&a, &b}, {a.data, b.data}, kEwDiv, 1, 0);
  } else {
    run_ew(c, y, {&b, &b}, {nullptr, b.data}, kEwDiv, 1, 0);  // operand 1 NULL: 1 / b
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- backward of the one-input functions: |g|x|y| -> |dx| ----------------

// The value a backward reads (x or y) and the op, or false when the call has
// neither (validate has made sure of what the command needs).
bool grad_plan(uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size, const ccv_nnc_tensor_t** v, int* op) {
  const ccv_nnc_tensor_t* x = input_size > 1 ? inputs[1] : nullptr;
  const ccv_nnc_tensor_t* y = input_size > 2 ? inputs[2] : nullptr;
  switch (cmd) {
    case CCV_NNC_RELU_BACKWARD:
      *v = y ? y : x, *op = kEwReluGrad;
      break;
    case CCV_NNC_SIGMOID_BACKWARD:
      *v = y ? y : x, *op = y ? kEwSigmoidGradY : kEwSigmoidGradX;
      break;
    case CCV_NNC_TANH_BACKWARD:
      *v = y ? y : x, *op = y ? kEwTanhGradY : kEwTanhGradX;
      break;
    case CCV_NNC_EWEXP_BACKWARD:
      *v = y, *op = kEwProd;
      break;
    case CCV_NNC_EWLOG_BACKWARD:
      *v = x, *op = kEwDivGrad;
      break;
    case CCV_NNC_EWSQRT_BACKWARD:
      *v = y, *op = kEwSqrtGrad;
      break;
    default:
      return false;
  }
  return *v != nullptr;
}

bool accept_grad(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  const ccv_nnc_tensor_t* v = nullptr;
  int op = 0;
  return output_size >= 1 && outputs[0] && accept_gpu(cmd, inputs, input_size, outputs, output_size) &&
         grad_plan(cmd.cmd, inputs, input_size, &v, &op);
}

NNC_KERNEL(grad) {
  const char* what = name_of(cmd.cmd);
  const ccv_nnc_tensor_t* vt = nullptr;
  int op = 0;
  NNC_CHECK(grad_plan(cmd.cmd, inputs, input_size, &vt, &op), "%s: the input it reads (x or y) is missing", what);
  const Layout v = layout_of(vt, what), dx = layout_of(outputs[0], what);
  const ccv_nnc_tensor_t* gt = inputs[0];
  const Layout g = gt ? layout_of(gt, what) : dx;  // a NULL g reads as ones
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  run_ew(c, dx, {&g, &v}, {data_or_null(gt), v.data}, op, 1, 0);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- EWDIV backward: |g|a|b|y| -> |da|db| ---------------------------------

// da = g / b then db = -g y / b: refused when da is g, b or y and db is wanted.
bool accept_div_grad(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                     ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!accept_gpu(cmd, inputs, input_size, outputs, output_size)) return false;
  const ccv_nnc_tensor_t* da = outputs[0];
  const ccv_nnc_tensor_t* db = output_size > 1 ? outputs[1] : nullptr;
  if (da && db)
    for (int i : {0, 2, 3})
      if (i < input_size && same_data(da, inputs[i])) return false;
  return true;
}

NNC_KERNEL(div_grad) {
  const char* what = name_of(cmd.cmd);
  const ccv_nnc_tensor_t* gt = inputs[0];
  ccv_nnc_tensor_t* da = outputs[0];
  ccv_nnc_tensor_t* db = output_size > 1 ? outputs[1] : nullptr;
  const Layout b = layout_of(inputs[2], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  if (da) {
    const Layout d = layout_of(da, what);
    const Layout g = gt ? layout_of(gt, what) : d;
    run_ew(c, d, {&g, &b}, {data_or_null(gt), b.data}, kEwDivGrad, 1, 0);
  }
  if (db) {
    NNC_CHECK(input_size > 3 && inputs[3], "%s: db needs y (input 3)", what);
    const Layout d = layout_of(db, what), y = layout_of(inputs[3], what);
    const Layout g = gt ? layout_of(gt, what) : d;
    run_ew(c, d, {&g, &y, &b}, {data_or_null(gt), y.data, b.data}, kEwDivGradB, 1, 0);
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- EWPROD backward: |g|x_1..x_n|y| -> |dx_1..dx_n| ----------------------

// dx_i = g prod_{j != i} x_j for up to kPlanOperands - 1 factors; refused when a gradient is
// an input another gradient still reads.
bool accept_prod_grad(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!accept_gpu(cmd, inputs, input_size, outputs, output_size) || output_size > gpu::kPlanOperands - 1) return false;
  const int n = output_size;
  if (input_size < n + 1) return false;
  for (int j = 0; j < n; j++) {
    if (!outputs[j]) continue;
    for (int i = 0; i <= n; i++)
      if (same_data(outputs[j], inputs[i])) return false;
  }
  return true;
}

NNC_KERNEL(prod_grad) {
  const char* what = name_of(cmd.cmd);
  const int n = output_size;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  for (int j = 0; j < n; j++) {
    if (!outputs[j]) continue;
    const Layout d = layout_of(outputs[j], what);
    std::vector<Layout> xs;
    xs.push_back(inputs[0] ? layout_of(inputs[0], what) : d);
    EwPtrs q;
    q.p[0] = d.data;
    q.p[1] = inputs[0] ? inputs[0]->data.ptr : nullptr;
    for (int i = 0; i < n; i++) {
      if (i == j) continue;
      NNC_CHECK(inputs[1 + i], "%s: dx_%d needs x_%d (input %d)", what, j + 1, i + 1, 1 + i);
      xs.push_back(layout_of(inputs[1 + i], what));
      q.p[xs.size()] = inputs[1 + i]->data.ptr;
    }
    int64_t st[gpu::kPlanOperands][gpu::kPlanDims] = {};
    const int64_t* sp[gpu::kPlanOperands];
    for (int i = 0; i < d.nd; i++) st[0][i] = d.stride[i];
    sp[0] = st[0];
    for (size_t k = 0; k < xs.size(); k++) {
      for (int i = 0; i < d.nd; i++) st[1 + k][i] = xs[k].stride[i];
      sp[1 + k] = st[1 + k];
    }
    gpu::EwPlan p;
    NNC_CHECK(gpu::make_plan(p, d.dim.data(), d.nd, static_cast<int>(xs.size()) + 1, sp), "%s: cannot plan the kernel",
              what);
    c.check(launch_ew(c.s, gpu_type(d.datatype), p, q, kEwProd, static_cast<int>(xs.size()), 1, 0));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- EWSUM backward: every dx_i = g (ones when g is NULL) ----------------

NNC_KERNEL(sum_grad) {
  const char* what = name_of(cmd.cmd);
  const ccv_nnc_tensor_t* gt = input_size > 0 ? inputs[0] : nullptr;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    const Layout d = layout_of(outputs[j], what);
    if (gt && same_data(gt, outputs[j]) && !CCV_IS_TENSOR_VIEW(gt) && !CCV_IS_TENSOR_VIEW(outputs[j])) continue;
    if (gt) {
      copy_layout(c, d, layout_of(gt, what));
    } else {
      unsigned char pattern[8];
      util::fill_pattern(1.0, d.datatype, pattern);
      uint64_t v = 0;
      std::memcpy(&v, pattern, 8);
      const gpu::EwPlan p = plan_of(d, {}, what);
      c.check(launch_fill(c.s, p, d.data, v, static_cast<int>(d.element_size)));
    }
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- ADD / MUL / SCALAR_MUL backward: sums over broadcast dimensions -----

// Gradients are computed one after another, so one that is an input a later
// one reads is refused (the CPU backends take that case). 32F, 16F, 16BF,
// every tensor of the call in one type (the family's rule): each gradient
// element is one reduction over g's broadcast axes (launch_reduce_as: loaded
// as float, products and sums in float, scaled and rounded once on store; no
// atomics, so deterministic), where CPU_REF sums in double and rounds once:
// they differ by the float sum's rounding error only.
bool accept_blas_grad(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!accept_gpu(cmd, inputs, input_size, outputs, output_size)) return false;
  const int type = CCV_GET_DATA_TYPE((outputs[0] ? outputs[0] : outputs[output_size - 1])->info.datatype);
  if (type != CCV_32F && type != CCV_16F && type != CCV_16BF) return false;
  for (int i = 0; i < output_size; i++)
    if (outputs[i] && CCV_GET_DATA_TYPE(outputs[i]->info.datatype) != type) return false;
  for (int i = 0; i < input_size; i++)
    if (inputs[i] && CCV_GET_DATA_TYPE(inputs[i]->info.datatype) != type) return false;
  const ccv_nnc_tensor_t* da = outputs[0];
  if (da && output_size > 1 && outputs[1])
    for (int i = 0; i < input_size && i < 3; i++)
      if (same_data(da, inputs[i])) return false;
  return true;
}

NNC_KERNEL(blas_grad) {
  const char* what = name_of(cmd.cmd);
  const uint32_t op = cmd.cmd & ~1u;
  const ccv_nnc_tensor_t* gt = inputs[0];
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  // g's shape: g itself, or the broadcast of the others when g is NULL.
  ccv_nnc_tensor_param_t gp{};
  if (gt) {
    gp = gt->info;
  } else {
    ccv_nnc_tensor_t* const* in = inputs;
    int shape[kMaxDim + 1] = {};
    int nd = 0;
    auto take = [&](const ccv_nnc_tensor_t* t) {
      if (!t) return;
      const int tn = nd_of(t->info.dim);
      const int n = std::max(nd, tn);
      int out[kMaxDim] = {};
      for (int k = 0; k < n; k++) {
        const int a = k < nd ? shape[nd - 1 - k] : 1, b = k < tn ? t->info.dim[tn - 1 - k] : 1;
        out[n - 1 - k] = std::max(a, b);
      }
      nd = n;
      for (int k = 0; k < n; k++) shape[k] = out[k];
    };
    for (int j = 0; j < output_size; j++) take(outputs[j]);
    for (int i = 1; i < input_size; i++) take(in[i]);
    for (int k = 0; k < kMaxDim; k++) gp.dim[k] = k < nd ? shape[k] : 0;
  }
  Layout g;
  if (gt) {
    g = layout_of(gt, what);
  } else {
    g.nd = nd_of(gp.dim);
    for (int i = 0; i < g.nd; i++) g.dim[i] = gp.dim[i];
    packed_strides(g.dim.data(), g.nd, g.stride.data());
  }
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    const Layout d = layout_of(outputs[j], what);
    const float scale = op == CCV_NNC_ADD_FORWARD ? cmd.info.blas.a[j] : cmd.info.blas.a[0];
    int64_t gs[gpu::kPlanDims] = {}, os[gpu::kPlanDims] = {};
    for (int i = 0; i < g.nd; i++) gs[i] = gt ? g.stride[i] : 0;
    const void* other = nullptr;
    int inputs_n = 1;
    if (op == CCV_NNC_MUL_FORWARD) {
      const int k = 2 - j;  // da reads b, db reads a
      NNC_CHECK(k < input_size && inputs[k], "%s: %s needs input %d", what, j ? "db" : "da", k);
      const Layout o = layout_of(inputs[k], what);
      NNC_CHECK(gpu::broadcast_strides(o.dim.data(), o.stride.data(), o.nd, g.dim.data(), g.nd, os),
                "%s: input %d does not broadcast to g", what, k);
      other = o.data;
      inputs_n = 2;
    }
    const int64_t* ins[] = {gs, os};
    gpu::ReducePlan rp;
    NNC_CHECK(gpu::make_reduce_plan(rp, g.dim.data(), g.nd, d.dim.data(), d.stride.data(), d.nd, inputs_n, ins),
              "%s: gradient %d (%s) does not reduce from g %s", what, j, shape_string(outputs[j]->info.dim).c_str(),
              shape_string_n(g.dim.data(), g.nd).c_str());
    const gpu::ReduceLaunch l = gpu::choose_reduce_sliced(rp);
    StreamBlock scratch(static_cast<size_t>(gpu::reduce_scratch_elements(l, rp)) * sizeof(float), c.s, what);
    c.check(launch_reduce_as(c.s, gpu_type(d.datatype), rp, l, d.data, gt ? gt->data.ptr : nullptr, other,
                             inputs_n == 2 ? kRedSumProd : kRedSum, scale, static_cast<float*>(scratch.get())));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- SET_FORWARD: fill every output (any type, views) ---------------------

NNC_KERNEL(set) {
  const char* what = "SET_FORWARD (GPU_REF)";
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    const Layout y = layout_of(outputs[j], what);
    unsigned char pattern[8];
    util::fill_pattern(cmd.info.blas.a[0], y.datatype, pattern);
    uint64_t v = 0;
    std::memcpy(&v, pattern, 8);
    const gpu::EwPlan p = plan_of(y, {}, what);
    c.check(launch_fill(c.s, p, y.data, v, static_cast<int>(y.element_size)));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

bool accept_set(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  return on_one_gpu(nullptr, 0, outputs, output_size, nullptr);
}

// --- FORMAT_TRANSFORM: output dimension j reads input dimension perm[j] ---

bool accept_pairs(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  // Pairs on one GPU; an input may be an output only when it is that same pair's (in place).
  if (input_size < output_size) return false;
  return on_one_gpu(inputs, output_size, outputs, output_size, nullptr);
}

NNC_KERNEL(format) {
  const char* what = "FORMAT_TRANSFORM (GPU_REF)";
  const Call c(stream_context, device_of(inputs, output_size, outputs, output_size), what);
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout x = layout_of(inputs[i], what), y = layout_of(outputs[i], what);
    int perm[kMaxDim];
    NNC_CHECK(util::format_permutation(x.format, y.format, y.nd, perm), "%s: formats %s and %s do not match", what,
              format_name(x.format), format_name(y.format));
    NNC_CHECK(!same_data(inputs[i], outputs[i]) || x.format == y.format, "%s: pair %d cannot be rewritten in place",
              what, i);
    int64_t st[2][gpu::kPlanDims] = {};
    for (int j = 0; j < y.nd; j++) {
      st[0][j] = y.stride[j];
      st[1][j] = x.stride[perm[j]];
    }
    const int64_t* sp[] = {st[0], st[1]};
    gpu::EwPlan p;
    NNC_CHECK(gpu::make_plan(p, y.dim.data(), y.nd, 2, sp), "%s: cannot plan the kernel", what);
    c.check(launch_copy(c.s, p, y.data, x.data, static_cast<int>(y.element_size)));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- DATATYPE_CONVERSION between 16F, 16BF, 32F and 64F -------------------

NNC_KERNEL(convert) {
  const char* what = "DATATYPE_CONVERSION (GPU_REF)";
  const Call c(stream_context, device_of(inputs, output_size, outputs, output_size), what);
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout x = layout_of(inputs[i], what), y = layout_of(outputs[i], what);
    if (x.datatype == y.datatype) {
      if (!same_data(inputs[i], outputs[i])) copy_layout(c, y, x);
      continue;
    }
    NNC_CHECK((x.datatype & types::kFloat) && (y.datatype & types::kFloat), "%s: cannot convert %s to %s", what,
              datatype_name(x.datatype), datatype_name(y.datatype));
    NNC_CHECK(!same_data(inputs[i], outputs[i]), "%s: pair %d converts in place between types of different sizes", what,
              i);
    const gpu::EwPlan p = plan_of(y, {&x}, what);
    c.check(launch_convert(c.s, p, y.data, gpu_type(y.datatype), x.data, gpu_type(x.datatype)));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

bool accept_convert(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                    ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!accept_pairs(cmd, inputs, input_size, outputs, output_size)) return false;
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const int a = CCV_GET_DATA_TYPE(inputs[i]->info.datatype), b = CCV_GET_DATA_TYPE(outputs[i]->info.datatype);
    if (a != b && !((a & types::kFloat) && (b & types::kFloat))) return false;
  }
  return true;
}

}  // namespace

void register_reduce_gpu(Registry& r);
void register_loss_optim_gpu(Registry& r);
void register_index_gpu(Registry& r);
void register_rand_gpu(Registry& r);

// Every GPU_REF backend of this part (element-wise, reductions, losses,
// softmax, optimisers): the one call register_cuda makes.
void register_ewgpu(Registry& r) {
  register_reduce_gpu(r);
  register_loss_optim_gpu(r);
  register_index_gpu(r);
  register_rand_gpu(r);
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF;
  const KernelTraits ew = t.accepting(accept_gpu);
  r.add_kernels(ew, {{CCV_NNC_EWEXP_FORWARD, unary},
                     {CCV_NNC_EWLOG_FORWARD, unary},
                     {CCV_NNC_EWSQRT_FORWARD, unary},
                     {CCV_NNC_RELU_FORWARD, unary},
                     {CCV_NNC_SIGMOID_FORWARD, unary},
                     {CCV_NNC_TANH_FORWARD, unary},
                     {CCV_NNC_SCALAR_MUL_FORWARD, unary},
                     {CCV_NNC_ADD_FORWARD, binary},
                     {CCV_NNC_MUL_FORWARD, binary},
                     {CCV_NNC_EWDIV_FORWARD, divide}});
  r.add_kernels(t.accepting(accept_nary), {{CCV_NNC_EWSUM_FORWARD, nary}, {CCV_NNC_EWPROD_FORWARD, nary}});
  r.add_kernels(t.accepting(accept_grad), {{CCV_NNC_RELU_BACKWARD, grad},
                                           {CCV_NNC_SIGMOID_BACKWARD, grad},
                                           {CCV_NNC_TANH_BACKWARD, grad},
                                           {CCV_NNC_EWEXP_BACKWARD, grad},
                                           {CCV_NNC_EWLOG_BACKWARD, grad},
                                           {CCV_NNC_EWSQRT_BACKWARD, grad}});
  r.add_kernels(t.accepting(accept_div_grad), {{CCV_NNC_EWDIV_BACKWARD, div_grad}});
  r.add_kernels(t.accepting(accept_prod_grad), {{CCV_NNC_EWPROD_BACKWARD, prod_grad}});
  KernelTraits all = t;
  all.datatypes = types::kAll;
  r.add_kernels(all.accepting(accept_gpu), {{CCV_NNC_EWSUM_BACKWARD, sum_grad}});
  r.add_kernels(
      t.accepting(accept_blas_grad),
      {{CCV_NNC_ADD_BACKWARD, blas_grad}, {CCV_NNC_MUL_BACKWARD, blas_grad}, {CCV_NNC_SCALAR_MUL_BACKWARD, blas_grad}});
  r.add_kernels(all.accepting(accept_set), {{CCV_NNC_SET_FORWARD, set}});
  r.add_kernels(all.accepting(accept_pairs),
                {{CCV_NNC_FORMAT_TRANSFORM_FORWARD, format}, {CCV_NNC_FORMAT_TRANSFORM_BACKWARD, format}});
  r.add_kernels(all.accepting(accept_convert),
                {{CCV_NNC_DATATYPE_CONVERSION_FORWARD, convert}, {CCV_NNC_DATATYPE_CONVERSION_BACKWARD, convert}});
}

}  // namespace nnc::cuda
