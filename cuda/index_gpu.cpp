// GPU_REF INDEX_SELECT and MASKED_FILL, with the CPU_REF contracts
// (lib/cmd/index/index.cpp, lib/cmd/masked_fill/masked_fill.cpp):
//   INDEX_SELECT_FORWARD |x|indices| -> |y|: rows (axis 0) gathered, any
//     element type, views; indices 32S or 64S of any shape (row-major). An
//     index outside x fails with CCV_NNC_EXEC_INVALID on a synchronous call
//     (on a GPU stream its row is zeroed and no error can be reported).
//   INDEX_SELECT_BACKWARD |g|x|indices| -> |dx|: g's rows added into their
//     rows of dx (0 for rows nothing picked); 32F, 16F, 16BF and 64F, g and
//     dx of one type (the family's check). How the sums are made:
//     index_select_backward.
//   MASKED_FILL forward |x|mask| -> |y| and backward |g|x|mask| -> |dx|dmask|
//     (dmask zeroed): x 32F / 16F / 16BF, the mask 32F / 16F / 32S / 8U
//     broadcast to x.
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"

namespace nnc::cuda {

namespace {

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

bool index_typed(const ccv_nnc_tensor_t* t) {
  return t && (CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32S || CCV_GET_DATA_TYPE(t->info.datatype) == CCV_64S);
}

bool accept_index(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr) || output_size < 1 || !outputs[0]) return false;
  if (cmd.cmd == CCV_NNC_INDEX_SELECT_FORWARD) return input_size >= 2 && index_typed(inputs[1]);
  if (output_size > 1 && outputs[1]) return false;
  // Every float type CPU_REF takes (the family checks that g and dx agree).
  return input_size >= 3 && index_typed(inputs[2]) && inputs[0] &&
         (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) & types::kFloat) &&
         (CCV_GET_DATA_TYPE(outputs[0]->info.datatype) & types::kFloat);
}

// The plans of one gather / scatter: the axes after 0 of big (x or dx) and
// picked (y or g), and the indices in row-major order.
struct Rows {
  gpu::EwPlan inner, idx;
  int64_t n = 0;
};
Rows rows_of(const Layout& picked, const Layout& big, const Layout& ind, const char* what) {
  NNC_CHECK(picked.nd == big.nd && picked.nd >= 1, "%s: the tensors' ranks differ", what);
  Rows r;
  r.n = picked.dim[0];
  const int64_t* sp[] = {picked.stride.data() + 1, big.stride.data() + 1};
  if (picked.nd == 1) {
    const int one[] = {1};
    const int64_t z[] = {0};
    const int64_t* zp[] = {z, z};
    NNC_CHECK(gpu::make_plan(r.inner, one, 1, 2, zp), "%s: cannot plan the rows", what);
  } else {
    NNC_CHECK(gpu::make_plan(r.inner, picked.dim.data() + 1, picked.nd - 1, 2, sp), "%s: cannot plan the rows", what);
  }
  const int64_t* ip[] = {ind.stride.data()};
  NNC_CHECK(gpu::make_plan(r.idx, ind.dim.data(), ind.nd, 1, ip), "%s: cannot plan the indices", what);
  NNC_CHECK(r.idx.count == r.n, "%s: %lld indices for %lld rows", what, static_cast<long long>(r.idx.count),
            static_cast<long long>(r.n));
  return r;
}

void check_indices(const Call& c, int flag) {
  NNC_CHECK(flag == 0, "%s: indices[%d] is outside the rows", c.what, flag - 1);
}

NNC_KERNEL(index_select) {
  const char* what = name_of(cmd.cmd);
  const Layout x = layout_of(inputs[0], what), ind = layout_of(inputs[1], what), y = layout_of(outputs[0], what);
  const Rows r = rows_of(y, x, ind, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  DeviceFlag bad(c, true);
  c.check(launch_gather(c.s, r.inner, r.idx, ind.data, ind.datatype == CCV_64S, x.dim[0], r.n, y.data, y.stride[0],
                        x.data, x.stride[0], static_cast<int>(y.element_size), bad.device()));
  check_indices(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

// Rows picked several times sum with atomic additions, in no fixed order:
//  - 32F: float atomics straight into the zeroed dx (as before: the order
//    moves a sum by float roundings, ~1e-7 relative per addition);
//  - 64F: double atomics straight into dx;
//  - 16F / 16BF: double atomics into a packed double scratch (a StreamBlock
//    of 8 bytes per dx element, zeroed), then one conversion into dx that
//    rounds each sum once, as CPU_REF (double sums, one rounding) does.
//    Why double and not a float scratch or half atomics: every 16F value is
//    an integer multiple of 2^-24 below 2^16, so a double (53 bits) holds any
//    sum of them EXACTLY while its partial sums stay below 2^29 (8192 rows
//    of the largest 16F, or 2^29 rows of |g| <= 1): the atomics' order then
//    cannot change a bit, the result is deterministic and bit-equal to
//    CPU_REF's. A float scratch would round (16F sums need up to 40 bits) and
//    so depend on the order; 16F / 16BF atomics would round at every
//    addition (an error growing with the rows picked). 16BF spans more
//    binades: its double sums are exact while one element's addends span
//    fewer than ~45 binades and otherwise off by ~2^-53 relative, far below
//    16BF's rounding step (2^-8), so equal to CPU_REF's bar a near-tie. The
//    cost: the scratch, native double atomics (sm_60+), one extra pass.
NNC_KERNEL(index_select_backward) {
  const char* what = name_of(cmd.cmd);
  const Layout g = layout_of(inputs[0], what), ind = layout_of(inputs[2], what), dx = layout_of(outputs[0], what);
  NNC_CHECK(g.datatype == dx.datatype, "%s: g is %s but dx is %s", what, datatype_name(g.datatype),
            datatype_name(dx.datatype));
  const GpuType type = gpu_type(dx.datatype);
  const bool scratch = type == kF16 || type == kBF16;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  // The accumulator: dx itself, or the packed double scratch of dx's shape.
  StreamBlock block(scratch ? dx.count() * sizeof(double) : 0, c.s, what);
  Layout acc = dx;
  if (scratch) {
    acc.data = static_cast<unsigned char*>(block.get());
    acc.datatype = CCV_64F;
    acc.element_size = sizeof(double);
    packed_strides(dx.dim.data(), dx.nd, acc.stride.data());
  }
  const Rows r = rows_of(g, acc, ind, what);
  // rows_of's inner plan has operands (g, acc); the scatter wants (acc, g).
  const int64_t* sp[] = {acc.stride.data() + 1, g.stride.data() + 1};
  gpu::EwPlan inner = r.inner;
  if (g.nd > 1) NNC_CHECK(gpu::make_plan(inner, g.dim.data() + 1, g.nd - 1, 2, sp), "%s: cannot plan the rows", what);
  const gpu::EwPlan all = plan_of(acc, {}, what);
  if (all.count) c.check(launch_fill(c.s, all, acc.data, 0, static_cast<int>(acc.element_size)));
  DeviceFlag bad(c, true);
  c.check(launch_scatter_add(c.s, type, inner, r.idx, ind.data, ind.datatype == CCV_64S, dx.dim[0], r.n, acc.data,
                             acc.stride[0], g.data, g.stride[0], bad.device()));
  if (scratch) {
    const gpu::EwPlan conv = plan_of(dx, {&acc}, what);
    if (conv.count) c.check(launch_convert(c.s, conv, dx.data, type, acc.data, kF64));
  }
  check_indices(c, bad.done());
  return CCV_NNC_EXEC_SUCCESS;
}

int mask_type(const ccv_nnc_tensor_t* m) {
  switch (CCV_GET_DATA_TYPE(m->info.datatype)) {
    case CCV_32F:
      return kMaskF32;
    case CCV_16F:
      return kMaskF16;
    case CCV_32S:
      return kMaskI32;
    case CCV_8U:
      return kMaskU8;
    default:
      return -1;
  }
}

bool accept_masked(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                   ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr) || output_size < 1 || !outputs[0]) return false;
  const bool fwd = cmd.cmd == CCV_NNC_MASKED_FILL_FORWARD;
  const ccv_nnc_tensor_t* x = inputs[0];
  const ccv_nnc_tensor_t* m = input_size > (fwd ? 1 : 2) ? inputs[fwd ? 1 : 2] : nullptr;
  if (!x || !m || mask_type(m) < 0) return false;
  const int t = CCV_GET_DATA_TYPE(x->info.datatype);
  if (t != CCV_32F && t != CCV_16F && t != CCV_16BF) return false;
  if (!fwd && output_size > 1 && outputs[1] && mask_type(outputs[1]) < 0) return false;
  return true;
}

NNC_KERNEL(masked_fill) {
  const char* what = name_of(cmd.cmd);
  const bool fwd = cmd.cmd == CCV_NNC_MASKED_FILL_FORWARD;
  const Layout x = layout_of(inputs[0], what), m = layout_of(inputs[fwd ? 1 : 2], what),
               y = layout_of(outputs[0], what);
  const gpu::EwPlan p = plan_of(y, {&x, &m}, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  // Backward: dx = g where the mask differs from eq, 0 where the fill went.
  c.check(launch_masked_fill(c.s, gpu_type(y.datatype), p, y.data, x.data, m.data, mask_type(inputs[fwd ? 1 : 2]),
                             cmd.info.blas.a[0], fwd ? cmd.info.blas.a[1] : 0.f));
  if (!fwd && output_size > 1 && outputs[1]) {
    const Layout d = layout_of(outputs[1], what);
    c.check(launch_fill(c.s, plan_of(d, {}, what), d.data, 0, static_cast<int>(d.element_size)));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_index_gpu(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = types::kAll;
  r.add_kernels(t.accepting(accept_index),
                {{CCV_NNC_INDEX_SELECT_FORWARD, index_select}, {CCV_NNC_INDEX_SELECT_BACKWARD, index_select_backward}});
  r.add_kernels(t.accepting(accept_masked),
                {{CCV_NNC_MASKED_FILL_FORWARD, masked_fill}, {CCV_NNC_MASKED_FILL_BACKWARD, masked_fill}});
}

}  // namespace nnc::cuda
