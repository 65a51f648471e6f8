// CPU_OPT kernels of RMSNORM for fp32 / fp64, on the layer-norm row loops of
// red::Loops with a mean of 0: rows of the normalised (trailing) axes, one
// pass for the sum of squares and one for the output; the backward sums
// h * xhat and dscale in one pass and writes dx in a second. Rows split over
// the pool; dscale is summed per part and combined at the end.
#include <algorithm>
#include <cmath>

#include "cmd/common/axes.hpp"
#include "cmd/common/reduce_loops.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/norm/stage.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::norm {

namespace {

constexpr size_t kParallelFrom = size_t{1} << 14;

// K rows of I normalised elements, or false when a kept axis follows a normalised one.
bool rows_of(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, size_t* K, size_t* I) {
  const int nd = nd_of(x->info.dim);
  const auto& p = cmd.info.rmsnorm;
  if (p.count < 1 || p.count > nd) return false;
  unsigned mask = 0;
  for (int i = 0; i < p.count; i++) {
    if (p.axis[i] < 0 || p.axis[i] >= nd) return false;
    mask |= 1u << p.axis[i];
  }
  size_t O = 1;
  if (!split3(x->info.dim, nd, mask, &O, K, I)) return false;
  if (*K == 1) {  // everything normalised: one row
    *I *= O;
    O = 1;
  }
  return O == 1;
}

template <class T>
int rms_forward(const ccv_nnc_cmd_t& cmd, const RmsNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  size_t K = 1, I = 1;
  rows_of(cmd, io.x, &K, &I);
  T* buf;
  T* w = scratch<T>(stream, (K + I) * sizeof(T) + 64, staged(io.x) + staged(io.y), &buf);
  T *inv = w, *sc = w + K;
  read_small<T>(io.scale, I, T(1), sc);
  const T* x = stage_in<T>(io.x, &buf);
  T* y = stage_out<T>(io.y, &buf);
  const double eps = cmd.info.rmsnorm.epsilon, n = static_cast<double>(I);
  range_parallel(K, K * I >= kParallelFrom ? 0 : K + 1, std::max<size_t>(1, 4096 / I), [&](size_t b, size_t e) {
    for (size_t k = b; k < e; k++) {
      const T* xr = x + k * I;
      const double ms = static_cast<double>(L.row_reduce(red::kSumSq, xr, I)) / n;
      const T iv = static_cast<T>(1.0 / std::sqrt(ms + eps));
      inv[k] = iv;
      L.ln_forward(xr, y + k * I, I, T(0), T(0), iv, io.scale ? sc : nullptr, nullptr);
    }
  });
  write_small(io.saved_inv_std, K, inv);
  unstage(io.y, y);
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int rms_backward(const ccv_nnc_cmd_t& cmd, const RmsNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  size_t K = 1, I = 1;
  rows_of(cmd, io.x, &K, &I);
  const bool parallel = K * I >= kParallelFrom && thread_count() > 1;
  const size_t parts = parallel ? std::min<size_t>(K, 4 * thread_count()) : 1;
  const bool params = io.dscale != nullptr;
  T* buf;
  // db is summed too (ln_backward_sums fuses its passes only with both) and dropped.
  T* w = scratch<T>(stream, (K + I + (params ? 2 * parts * I : 0)) * sizeof(T) + 64,
                    staged(io.x) + staged(io.g) + staged(io.dx), &buf);
  T *inv = w, *sc = w + K, *pds = w + K + I, *pdb = pds + parts * I;
  read_small<T>(io.saved_inv_std, K, T(1), inv);
  read_small<T>(io.scale, I, T(1), sc);
  const T* scale = io.scale ? sc : nullptr;
  if (params) std::fill(pds, pds + 2 * parts * I, T(0));
  const T* x = stage_in<T>(io.x, &buf);
  const T* g = stage_in<T>(io.g, &buf);
  T* dx = stage_out<T>(io.dx, &buf);
  const size_t rows = (K + parts - 1) / parts;
  range_parallel(parts, parallel ? 0 : parts + 1, 1, [&](size_t b, size_t e) {
    for (size_t q = b; q < e; q++) {
      T* ds = params ? pds + q * I : nullptr;
      T* db = params ? pdb + q * I : nullptr;
      for (size_t k = q * rows; k < std::min(K, (q + 1) * rows); k++) {
        T sh = 0, shx = 0;
        L.ln_backward_sums(g + k * I, x + k * I, I, T(0), inv[k], scale, &sh, &shx, ds, db);
        if (dx)
          L.ln_backward_dx(g + k * I, x + k * I, dx + k * I, I, T(0), inv[k], scale, T(0), shx / static_cast<T>(I));
      }
    }
  });
  if (params) {
    for (size_t q = 1; q < parts; q++)
      for (size_t j = 0; j < I; j++) pds[j] += pds[q * I + j];
    write_small(io.dscale, I, pds);
  }
  unstage(io.dx, dx);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

bool rmsnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool forward = cmd.cmd == CCV_NNC_RMSNORM_FORWARD;
  const RmsNormIo io = forward ? rmsnorm_forward_io(inputs, input_size, outputs, output_size)
                               : rmsnorm_backward_io(inputs, input_size, outputs, output_size);
  if (!io.x || (forward && !io.y)) return false;
  size_t K, I;
  return rows_of(cmd, io.x, &K, &I);
}

NNC_KERNEL(rmsnorm_forward_opt) {
  const RmsNormIo io = rmsnorm_forward_io(inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return rms_forward<double>(cmd, io, stream_context);
  return rms_forward<float>(cmd, io, stream_context);
}

NNC_KERNEL(rmsnorm_backward_opt) {
  const RmsNormIo io = rmsnorm_backward_io(inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return rms_backward<double>(cmd, io, stream_context);
  return rms_backward<float>(cmd, io, stream_context);
}

}  // namespace nnc::norm
