// GPU_REF losses, softmax and optimisers, with the CPU_REF contracts:
//   SOFTMAX_CROSSENTROPY forward / backward (lib/cmd/softmax/softmax.cpp):
//     class-index labels (32S or a float type) or dense labels, label smoothing
//     (trim0 / trim1), either forward output NULL, NULL g read as ones,
//     NULL g_softmax, d labels NULL;
//   CATEGORICAL_CROSSENTROPY forward / backward (lib/cmd/loss/loss.cpp);
//   SOFTMAX forward / backward (plain rows; NULL g read as ones);
//   SGD, ADAM, ADAMW (amsgrad too) and RMSPROP steps (lib/cmd/optim).
// 32F, 16F or 16BF tensors (one type per call, as CPU_REF; class indices
// also 32S) on one GPU, any strides, computed in float and rounded once on
// store; 64F is refused with a message (GPU_REF computes in float). A class
// index outside [0, classes) or not whole fails with CCV_NNC_EXEC_INVALID on
// a synchronous call (the kernel flags it; the call reads the flag back); on
// a GPU stream the call cannot wait for that, and such a row's targets are
// all trim0.
#include <cstring>
#include <vector>

#include "cmd/common/gpu_optim_args.hpp"
#include "cmd/common/rows.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/rows.hpp"

namespace nnc::cuda {

// The rows and per-row items of a row kernel (cuda/rows.hpp).
// Row tensor k of the call (NULL: absent); all present ones share a shape.
void set_rows(RowArgs& a, std::initializer_list<const ccv_nnc_tensor_t*> ts, const char* what) {
  const ccv_nnc_tensor_t* first = nullptr;
  for (const ccv_nnc_tensor_t* t : ts)
    if (t && !first) first = t;
  NNC_CHECK(first, "%s: no row tensor", what);
  const Layout f = layout_of(first, what);
  const int lead = f.nd > 0 ? f.nd - 1 : 0;
  a.row_type = gpu_type(f.datatype);
  a.cols = f.nd > 0 ? f.dim[f.nd - 1] : 1;
  int64_t st[gpu::kPlanOperands][gpu::kPlanDims] = {};
  const int64_t* sp[gpu::kPlanOperands];
  int k = 0;
  for (const ccv_nnc_tensor_t* t : ts) {
    sp[k] = st[k];
    if (t) {
      const Layout l = layout_of(t, what);
      NNC_CHECK(same_shape(t->info.dim, first->info.dim), "%s: %s and %s rows differ", what,
                shape_string(t->info.dim).c_str(), shape_string(first->info.dim).c_str());
      for (int i = 0; i < lead; i++) st[k][i] = l.stride[i];
      NNC_CHECK(l.datatype == f.datatype,
                "%s: row tensors of %s and %s in one call; GPU_REF takes one type (as CPU_REF)", what,
                datatype_name(l.datatype), datatype_name(f.datatype));
      a.col_stride[k] = f.nd > 0 ? l.stride[f.nd - 1] : 1;
      a.row_ptr[k] = l.data;
    }
    k++;
  }
  if (lead == 0) {  // one row
    const int one[] = {1};
    NNC_CHECK(gpu::make_plan(a.rows, one, 1, k, sp), "%s: cannot plan the rows", what);
  } else {
    NNC_CHECK(gpu::make_plan(a.rows, f.dim.data(), lead, k, sp), "%s: cannot plan the rows", what);
  }
}

void set_item(RowArgs& a, int k, const ccv_nnc_tensor_t* t, const char* what) {
  if (!t) return;
  const Layout l = layout_of(t, what);
  const int64_t* sp[] = {l.stride.data()};
  NNC_CHECK(gpu::make_plan(a.item[k], l.dim.data(), l.nd, 1, sp), "%s: cannot plan the items", what);
  NNC_CHECK(a.item[k].count == a.rows.count, "%s: %s holds %lld values for %lld rows", what,
            shape_string(t->info.dim).c_str(), static_cast<long long>(a.item[k].count),
            static_cast<long long>(a.rows.count));
  a.item_ptr[k] = l.data;
  a.item_int[k] = l.datatype == CCV_32S;
  a.item_type[k] = gpu_type(l.datatype);
}

void refuse_f64(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
                const char* what) {
  bool f64 = false;
  for (int i = 0; i < input_size; i++)
    f64 = f64 || (inputs[i] && CCV_GET_DATA_TYPE(inputs[i]->info.datatype) == CCV_64F);
  for (int i = 0; i < output_size; i++)
    f64 = f64 || (outputs[i] && CCV_GET_DATA_TYPE(outputs[i]->info.datatype) == CCV_64F);
  if (f64)
    fail(CCV_NNC_EXEC_NO_KERNEL,
         "%s: GPU_REF computes in float (32F, 16F and 16BF storage); it refuses 64F rather than narrow it silently "
         "(run 64F on the CPU)",
         what);
}

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

void check_labels(const Call& c, int flag) {
  NNC_CHECK(flag == 0, "%s: the label of row %d is not a class index in [0, classes)", c.what, flag - 1);
}

// 64F passes the accept functions so that the kernel refuses it with a
// message (refuse_f64); GPU_REF is the last GPU backend in preference order.
bool float_or_absent(const ccv_nnc_tensor_t* t) {
  return !t || (CCV_GET_DATA_TYPE(t->info.datatype) & (CCV_32F | CCV_16F | CCV_16BF | CCV_64F));
}
bool index_type(const ccv_nnc_tensor_t* t) {
  return t && (CCV_GET_DATA_TYPE(t->info.datatype) & (CCV_32S | CCV_32F | CCV_16F | CCV_16BF | CCV_64F));
}

// Every row tensor 32F, 16F or 16BF, labels also 32S, all on one GPU.
bool accept_rows(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  int labels = -1;
  switch (cmd.cmd) {
    case CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD:
    case CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD:
      labels = 1;
      break;
    case CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD:
      labels = 3;
      break;
    case CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD:
      labels = 2;
      break;
    default:
      break;
  }
  for (int i = 0; i < input_size; i++)
    if (i != labels && !float_or_absent(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!float_or_absent(outputs[i])) return false;
  if (labels >= 0 && (labels >= input_size || !index_type(inputs[labels]))) return false;
  // SOFTMAX_CROSSENTROPY's d labels is not computed (as CPU_REF).
  if (cmd.cmd == CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD && output_size > 1 && outputs[1]) return false;
  return true;
}

bool dense_labels(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* labels) {
  return rows::label_kind(x->info, labels->info) == rows::LabelKind::kDense;
}

NNC_KERNEL(softmax_crossentropy) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const ccv_nnc_tensor_t* z = inputs[0];
  const ccv_nnc_tensor_t* labels = inputs[1];
  ccv_nnc_tensor_t* loss = outputs[0];
  ccv_nnc_tensor_t* s = output_size > 1 ? outputs[1] : nullptr;
  const bool dense = dense_labels(z, labels);
  RowArgs a;
  set_rows(a, {z, s, dense ? labels : nullptr}, what);
  set_item(a, 0, loss, what);
  if (!dense) set_item(a, 1, labels, what);
  a.trim0 = cmd.info.label_smoothing.trim0;
  a.trim1 = cmd.info.label_smoothing.trim1;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, !dense);
  c.check(launch_softmax_crossentropy(c.s, a, bad.device()));
  check_labels(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(softmax_crossentropy_backward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const ccv_nnc_tensor_t* g = inputs[0];
  const ccv_nnc_tensor_t* gs = input_size > 1 ? inputs[1] : nullptr;
  NNC_CHECK(input_size > 5 && inputs[3] && inputs[5], "%s: needs the labels (input 3) and the softmax (input 5)", what);
  const ccv_nnc_tensor_t* labels = inputs[3];
  const ccv_nnc_tensor_t* s = inputs[5];
  const bool dense = dense_labels(s, labels);
  RowArgs a;
  set_rows(a, {s, gs, dense ? labels : nullptr, outputs[0]}, what);
  set_item(a, 0, g, what);
  if (!dense) set_item(a, 1, labels, what);
  a.trim0 = cmd.info.label_smoothing.trim0;
  a.trim1 = cmd.info.label_smoothing.trim1;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, !dense);
  c.check(launch_softmax_crossentropy_backward(c.s, a, bad.device()));
  check_labels(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(categorical_crossentropy) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  const ccv_nnc_tensor_t* p = inputs[0];
  const ccv_nnc_tensor_t* labels = inputs[1];
  const bool dense = dense_labels(p, labels);
  RowArgs a;
  set_rows(a, {p, nullptr, dense ? labels : nullptr}, what);
  set_item(a, 0, outputs[0], what);
  if (!dense) set_item(a, 1, labels, what);
  a.trim0 = cmd.info.label_smoothing.trim0;
  a.trim1 = cmd.info.label_smoothing.trim1;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, !dense);
  c.check(launch_categorical_crossentropy(c.s, a, bad.device()));
  check_labels(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(categorical_crossentropy_backward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  NNC_CHECK(input_size > 2 && inputs[1] && inputs[2], "%s: needs p (input 1) and the labels (input 2)", what);
  const ccv_nnc_tensor_t* p = inputs[1];
  const ccv_nnc_tensor_t* labels = inputs[2];
  const bool dense = dense_labels(p, labels);
  ccv_nnc_tensor_t* dp = outputs[0];
  ccv_nnc_tensor_t* dl = output_size > 1 ? outputs[1] : nullptr;
  NNC_CHECK(!dl || dense, "%s: d labels is only defined for dense labels", what);
  RowArgs a;
  set_rows(a, {p, nullptr, dense ? labels : nullptr, dp, dl}, what);
  set_item(a, 0, inputs[0], what);
  if (!dense) set_item(a, 1, labels, what);
  a.trim0 = cmd.info.label_smoothing.trim0;
  a.trim1 = cmd.info.label_smoothing.trim1;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, !dense);
  c.check(launch_categorical_crossentropy_backward(c.s, a, bad.device()));
  check_labels(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(softmax_forward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  RowArgs a;
  set_rows(a, {inputs[0], outputs[0]}, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_softmax(c.s, a));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(softmax_backward) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  NNC_CHECK(input_size > 2 && inputs[2], "%s: needs y (input 2)", what);
  RowArgs a;
  set_rows(a, {inputs[0], inputs[2], outputs[0]}, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_softmax_backward(c.s, a));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- optimisers ---------------------------------------------------------------

bool accept_optim(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size + output_size > gpu::kPlanOperands) return false;
  for (int i = 0; i < input_size; i++)
    if (!inputs[i] || !float_or_absent(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!outputs[i] || !float_or_absent(outputs[i])) return false;
  return on_one_gpu(inputs, input_size, outputs, output_size, nullptr);
}

NNC_KERNEL(optim_step) {
  const char* what = name_of(cmd.cmd);
  refuse_f64(inputs, input_size, outputs, output_size, what);
  OptimArgs o;
  if (!gpu::optim_args_of(cmd, &o)) fail(CCV_NNC_EXEC_NO_KERNEL, "%s: GPU_REF has no kernel for this optimiser", what);
  const int n = input_size + output_size;
  NNC_CHECK(n <= gpu::kPlanOperands, "%s: %d tensors", what, n);
  const int type = CCV_GET_DATA_TYPE(inputs[1]->info.datatype);
  for (int i = 0; i < input_size; i++)
    NNC_CHECK(CCV_GET_DATA_TYPE(inputs[i]->info.datatype) == type,
              "%s: input %d is %s but a is %s (one type, as CPU_REF)", what, i,
              datatype_name(CCV_GET_DATA_TYPE(inputs[i]->info.datatype)), datatype_name(type));
  for (int i = 0; i < output_size; i++)
    NNC_CHECK(CCV_GET_DATA_TYPE(outputs[i]->info.datatype) == type,
              "%s: output %d is %s but a is %s (one type, as CPU_REF)", what, i,
              datatype_name(CCV_GET_DATA_TYPE(outputs[i]->info.datatype)), datatype_name(type));
  std::vector<Layout> ls;
  for (int i = 0; i < input_size; i++) ls.push_back(layout_of(inputs[i], what));
  for (int i = 0; i < output_size; i++) ls.push_back(layout_of(outputs[i], what));
  const Layout& a = ls[1];
  int64_t st[gpu::kPlanOperands][gpu::kPlanDims] = {};
  const int64_t* sp[gpu::kPlanOperands];
  EwPtrs q;
  for (int k2 = 0; k2 < n; k2++) {
    NNC_CHECK(ls[static_cast<size_t>(k2)].nd == a.nd, "%s: tensor %d has another rank than a", what, k2);
    for (int i = 0; i < a.nd; i++) st[k2][i] = ls[static_cast<size_t>(k2)].stride[i];
    sp[k2] = st[k2];
    q.p[k2] = ls[static_cast<size_t>(k2)].data;
  }
  gpu::EwPlan p;
  NNC_CHECK(gpu::make_plan(p, a.dim.data(), a.nd, n, sp), "%s: cannot plan the kernel", what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_optim(c.s, gpu_type(type), p, q, o));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_loss_optim_gpu(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  // 32S: class indices only (accept_rows); 64F reaches the kernels only to be
  // refused with a message (refuse_f64).
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF | CCV_64F | CCV_32S;
  r.add_kernels(t.accepting(accept_rows),
                {{CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, softmax_crossentropy},
                 {CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, softmax_crossentropy_backward},
                 {CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, categorical_crossentropy},
                 {CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, categorical_crossentropy_backward},
                 {CCV_NNC_SOFTMAX_FORWARD, softmax_forward},
                 {CCV_NNC_SOFTMAX_BACKWARD, softmax_backward}});
  KernelTraits f = t;
  f.datatypes = CCV_32F | CCV_16F | CCV_16BF | CCV_64F;
  r.add_kernels(f.accepting(accept_optim), {{CCV_NNC_SGD_FORWARD, optim_step},
                                            {CCV_NNC_ADAM_FORWARD, optim_step},
                                            {CCV_NNC_ADAMW_FORWARD, optim_step},
                                            {CCV_NNC_RMSPROP_FORWARD, optim_step}});
}

}  // namespace nnc::cuda
