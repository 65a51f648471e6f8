// CPU_OPT kernels of the optimisers over packed fp32 / fp64 tensors: one fused
// pass over memory (two for LAMB, whose trust ratio needs the norms first),
// split over the thread pool, with AVX2 + FMA loops for fp32 SGD and
// ADAM / ADAMW. Views and 16-bit types go to the reference kernel. The only
// scratch memory (LAMB's per-block partial norms) comes from the workspace.
#include <algorithm>
#include <cstdint>

#include "cmd/common/strided.hpp"
#include "cmd/optim/optim.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::optim {

namespace {

// Below this many elements the update stays on the calling thread.
constexpr size_t kParallel = size_t{1} << 15;
constexpr size_t kGrain = size_t{1} << 14;
// LAMB's partial norms are summed per block of this many elements, in block
// order, so the result does not depend on the number of threads.
constexpr size_t kNormBlock = size_t{1} << 14;

template <class T>
void sgd_span(const Coef& c, const T* g, const T* a, const T* m, T* b, T* n, size_t count) {
  if constexpr (sizeof(T) == 4) {
    if (cpu_features().avx2) {
      sgd_f32_avx2(c, g, a, m, b, n, count);
      return;
    }
  }
  for (size_t i = 0; i < count; i++) sgd_step<T>(c, g[i], a[i], m[i], b[i], n[i]);
}

template <class T>
void adam_span(const Coef& c, const T* g, const T* a, const T* m, const T* v, const T* vm, T* b, T* n, T* u, T* um,
               size_t count) {
  if constexpr (sizeof(T) == 4) {
    if (cpu_features().avx2) {
      adam_f32_avx2(c, g, a, m, v, vm, b, n, u, um, count);
      return;
    }
  }
  T dummy = 0;
  for (size_t i = 0; i < count; i++)
    adam_step<T>(c, g[i], a[i], m[i], v[i], vm ? vm[i] : T(0), b[i], n[i], u[i], um ? um[i] : dummy);
}

template <class T>
int run(const Coef& c, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
        ccv_nnc_stream_context_t* stream) {
  const T* x[5] = {};
  T* y[4] = {};
  for (int i = 0; i < input_size; i++) x[i] = reinterpret_cast<const T*>(inputs[i]->data.u8);
  for (int i = 0; i < input_size - 1; i++) y[i] = reinterpret_cast<T*>(outputs[i]->data.u8);
  size_t count = 1;
  for (int d = 0; d < kMaxDim && inputs[1]->info.dim[d]; d++) count *= static_cast<size_t>(inputs[1]->info.dim[d]);
  switch (c.kind) {
    case Kind::kSgd:
      range_parallel(count, kParallel, kGrain, [&](size_t s, size_t e) {
        sgd_span<T>(c, x[0] + s, x[1] + s, x[2] + s, y[0] + s, y[1] + s, e - s);
      });
      break;
    case Kind::kAdam:
    case Kind::kAdamW:
      range_parallel(count, kParallel, kGrain, [&](size_t s, size_t e) {
        adam_span<T>(c, x[0] + s, x[1] + s, x[2] + s, x[3] + s, c.amsgrad ? x[4] + s : nullptr, y[0] + s, y[1] + s,
                     y[2] + s, c.amsgrad ? y[3] + s : nullptr, e - s);
      });
      break;
    case Kind::kRmsprop:
      range_parallel(count, kParallel, kGrain, [&](size_t s, size_t e) {
        for (size_t i = s; i < e; i++)
          rmsprop_step<T>(c, x[0][i], x[1][i], x[2][i], x[3][i], y[0][i], y[1][i], y[2][i]);
      });
      break;
    case Kind::kLamb: {
      const size_t blocks = (count + kNormBlock - 1) / kNormBlock;
      double* partial = static_cast<double*>(workspace(stream, blocks * 2 * sizeof(double)));
      parallel_for(blocks, 1, [&](size_t bs, size_t be) {
        for (size_t blk = bs; blk < be; blk++) {
          const size_t s = blk * kNormBlock, e = std::min(count, s + kNormBlock);
          T a2 = 0, r2 = 0;
          for (size_t i = s; i < e; i++) {
            lamb_moments<T>(c, x[0][i], x[2][i], x[3][i], y[1][i], y[2][i]);
            const T r = lamb_direction<T>(c, x[1][i], y[1][i], y[2][i]);
            a2 += x[1][i] * x[1][i];
            r2 += r * r;
          }
          partial[2 * blk] = a2, partial[2 * blk + 1] = r2;
        }
      });
      double a2 = 0, r2 = 0;
      for (size_t blk = 0; blk < blocks; blk++) a2 += partial[2 * blk], r2 += partial[2 * blk + 1];
      const T k = T(c.rate * lamb_trust(a2, r2));
      range_parallel(count, kParallel, kGrain, [&](size_t s, size_t e) {
        for (size_t i = s; i < e; i++) y[0][i] = x[1][i] - k * lamb_direction<T>(c, x[1][i], y[1][i], y[2][i]);
      });
      break;
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

NNC_KERNEL(optim_opt) {
  bool packed = true;
  for (int i = 0; i < input_size && packed; i++) packed = CCV_IS_TENSOR_CONTIGUOUS(inputs[i]);
  for (int i = 0; i < output_size && packed; i++) packed = CCV_IS_TENSOR_CONTIGUOUS(outputs[i]);
  const int type = CCV_GET_DATA_TYPE(inputs[1]->info.datatype);
  if (!packed || (type != CCV_32F && type != CCV_64F))
    return optim_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Coef c = coef_of(cmd);
  if (type == CCV_64F) return run<double>(c, inputs, input_size, outputs, stream_context);
  return run<float>(c, inputs, input_size, outputs, stream_context);
}

}  // namespace nnc::optim
