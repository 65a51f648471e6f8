// MAX_POOL and AVERAGE_POOL on CPU_OPT (fp32, NHWC and NCHW, any strides).
//
// Two shapes of work (cpu_opt_avx2.cpp has the loops; cpu_opt_avx512.cpp
// takes the channels-inner max pooling where the CPU has AVX-512):
//   channels inner — x, y (g) and dx all with unit-stride channels (NHWC):
//     eight channels per AVX2 vector. Forward tasks are output rows (n, oh);
//     backward tasks are (n, block of channels), so that overlapping windows
//     of one task add into dx without racing another task.
//   planes — anything else (NCHW above all, and views): one (n, c) plane a
//     task, scalar over the window, with AVX2 cases for 2x2 stride-2 max
//     pooling along unit-stride rows (forward, and backward when the windows
//     tile the image).
// Results equal CPU_REF's up to fp32 rounding of sums: the max routes by the
// same first-maximum / first-NaN rule. Tasks are spread over the library's
// pool (under the compute lock) once a problem is big enough; nothing is
// allocated. Without AVX2 the REF kernels run.
#include <algorithm>

#include "cmd/pool/pool.hpp"
#include "cmd/pool/pool_opt.hpp"
#include "core/parallel.hpp"
#include "core/registry.hpp"

namespace nnc::pool {

namespace {

using opt::Op;
using opt::Task;

// Problems below this many elements (input + output) stay on the calling thread.
constexpr size_t kThreadedFrom = size_t{1} << 15;
// Channels per backward task on the channels-inner path.
constexpr int kChannelBlock = 64;

bool channels_inner(const Image& a, const Image& b) { return a.sc == 1 && b.sc == 1 && a.nhwc; }

void run(Op op, const Geometry& g, const Image& dx) {
  const bool inner = channels_inner(g.x, g.y) && dx.sc == 1;
  const bool backward = op == Op::kMaxBackward || op == Op::kAvgBackward;
  const int cblocks = (g.C + kChannelBlock - 1) / kChannelBlock;
  const size_t tasks = !inner ? static_cast<size_t>(g.N) * g.C
                       : backward ? static_cast<size_t>(g.N) * cblocks
                                  : static_cast<size_t>(g.N) * g.OH;
  const bool avx512 = cpu_features().avx512;
  auto body = [&](size_t b, size_t e) {
    for (size_t i = b; i < e; i++) {
      Task t{inner, 0, 0, 0};
      if (!inner) {
        t.n = static_cast<int>(i / g.C), t.a = static_cast<int>(i % g.C);
      } else if (backward) {
        t.n = static_cast<int>(i / cblocks);
        t.a = static_cast<int>(i % cblocks) * kChannelBlock;
        t.b = std::min(g.C, t.a + kChannelBlock);
      } else {
        t.n = static_cast<int>(i / g.OH), t.a = static_cast<int>(i % g.OH);
      }
      if (!avx512 || !opt::run_avx512(op, g, dx, t)) opt::run_avx2(op, g, dx, t);
    }
  };
  const size_t elements = static_cast<size_t>(g.N) * g.C * (static_cast<size_t>(g.H) * g.W + g.OH * g.OW);
  if (elements < kThreadedFrom || tasks < 2) {
    body(0, tasks);
    return;
  }
  auto lock = compute_lock();
  parallel_for(tasks, 1, body);
}

bool have_avx2() { return cpu_features().avx2; }

NNC_KERNEL(max_forward_opt) {
  if (!have_avx2()) return max_forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Geometry g = geometry(cmd, hint, inputs[0], outputs[0], "MAX_POOL_FORWARD");
  run(Op::kMaxForward, g, g.x);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(avg_forward_opt) {
  if (!have_avx2()) return avg_forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Geometry g = geometry(cmd, hint, inputs[0], outputs[0], "AVERAGE_POOL_FORWARD");
  run(Op::kAvgForward, g, g.x);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(max_backward_opt) {
  if (!have_avx2()) return max_backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Geometry g = geometry(cmd, hint, inputs[1], inputs[0], "MAX_POOL_BACKWARD");
  // dx may alias neither x nor g: it is written while the maxima are read.
  run(Op::kMaxBackward, g, image_of(outputs[0]));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(avg_backward_opt) {
  if (!have_avx2()) return avg_backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Geometry g = geometry(cmd, hint, outputs[0], inputs[0], "AVERAGE_POOL_BACKWARD");
  run(Op::kAvgBackward, g, g.x);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_opt(Registry& r) {
  r.add_kernels(cpu_opt(CCV_32F, formats::kImage), {{CCV_NNC_MAX_POOL_FORWARD, max_forward_opt},
                                                     {CCV_NNC_MAX_POOL_BACKWARD, max_backward_opt},
                                                     {CCV_NNC_AVERAGE_POOL_FORWARD, avg_forward_opt},
                                                     {CCV_NNC_AVERAGE_POOL_BACKWARD, avg_backward_opt}});
}

}  // namespace nnc::pool
