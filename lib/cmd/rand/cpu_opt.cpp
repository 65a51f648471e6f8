// CPU_OPT kernels of the random family over packed fp32 / fp64 tensors: the
// same per-element values as CPU_REF (rand.hpp), generated a 64-bit word at a
// time and split over the thread pool by whole words, so the result is the
// same whatever the split. Views and 16-bit types go to the reference kernels.
#include <algorithm>

#include "cmd/common/copy.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/rand/rand.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::rand {

namespace {

// Below this many 64-bit words a kernel stays on the calling thread.
constexpr size_t kParallel = size_t{1} << 14;
constexpr size_t kGrain = size_t{1} << 13;

size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t c = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) c *= static_cast<size_t>(t->info.dim[i]);
  return c;
}

bool is_type(const ccv_nnc_tensor_t* t, int type) { return CCV_GET_DATA_TYPE(t->info.datatype) == type; }

// Uniform over n elements of y (fp32: two per word; fp64: one per word).
template <class T>
void uniform_fill(T* y, size_t n, const Counter& ctr, double lb, double range) {
  if constexpr (sizeof(T) == 8) {
    range_parallel(n, kParallel, kGrain, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; i++) y[i] = uniform_wide(ctr.word64(i), lb, range);
    });
  } else {
    const size_t words = (n + 1) / 2;
    range_parallel(words, kParallel, kGrain, [&](size_t s, size_t e) {
      const size_t full = std::min(e, n / 2);
      size_t k0 = s;
      if (s < full && cpu_features().avx2) k0 = uniform_f32_avx2(y, s, full, ctr.key, lb, range);
      for (size_t k = k0; k < full; k++) {
        const uint64_t h = ctr.word64(k);
        y[2 * k] = static_cast<float>(uniform_narrow(static_cast<uint32_t>(h), lb, range));
        y[2 * k + 1] = static_cast<float>(uniform_narrow(static_cast<uint32_t>(h >> 32), lb, range));
      }
      if (e > full && full >= s) y[2 * full] = static_cast<float>(uniform_narrow(ctr.word32(2 * full), lb, range));
    });
  }
}

template <class T>
void normal_fill(T* y, size_t n, const Counter& ctr, double mean, double std_dev) {
  const size_t words = (n + 1) / 2;
  range_parallel(words, kParallel / 4, kGrain / 4, [&](size_t s, size_t e) {
    double z[2];
    for (size_t k = s; k < e; k++) {
      normal_pair(ctr.word64(k), mean, std_dev, z);
      y[2 * k] = static_cast<T>(z[0]);
      if (2 * k + 1 < n) y[2 * k + 1] = static_cast<T>(z[1]);
    }
  });
}

template <class T>
void dropout_fill(const T* x, T* y, unsigned char* mask, size_t n, const Counter& ctr, uint64_t t, double scale,
                  bool entirety) {
  if (entirety) {
    const bool keep = ctr.word32(0) >= t;
    *mask = keep;
    range_parallel(n, kParallel, kGrain, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; i++) y[i] = keep ? static_cast<T>(static_cast<double>(x[i]) * scale) : T(0);
    });
    return;
  }
  const size_t words = (n + 1) / 2;
  range_parallel(words, kParallel, kGrain, [&](size_t s, size_t e) {
    size_t k0 = s;
    if constexpr (sizeof(T) == 4) {
      const size_t full = std::min(e, n / 2);
      if (s < full && t < (uint64_t{1} << 32) && cpu_features().avx2)
        k0 = dropout_f32_avx2(x, y, mask, s, full, ctr.key, t, scale);
    }
    for (size_t k = k0; k < e; k++) {
      const uint64_t h = ctr.word64(k);
      const size_t i = 2 * k;
      const bool k0 = static_cast<uint32_t>(h) >= t;
      y[i] = k0 ? static_cast<T>(static_cast<double>(x[i]) * scale) : T(0);
      mask[i] = k0;
      if (i + 1 < n) {
        const bool k1 = (h >> 32) >= t;
        y[i + 1] = k1 ? static_cast<T>(static_cast<double>(x[i + 1]) * scale) : T(0);
        mask[i + 1] = k1;
      }
    }
  });
}

template <class T>
void dropout_grad(const T* g, const unsigned char* mask, T* dx, size_t n, double scale, bool entirety) {
  const bool all = entirety && *mask;
  range_parallel(n, kParallel, kGrain, [&](size_t s, size_t e) {
    for (size_t i = s; i < e; i++) {
      const bool keep = entirety ? all : mask[i] != 0;
      dx[i] = keep ? static_cast<T>(static_cast<double>(g[i]) * scale) : T(0);
    }
  });
}

}  // namespace

NNC_KERNEL(uniform_opt) {
  ccv_nnc_tensor_t* y = outputs[0];
  if (!CCV_IS_TENSOR_CONTIGUOUS(y) || !(is_type(y, CCV_32F) || is_type(y, CCV_64F)))
    return uniform_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Counter ctr(draw_seed(stream_context));
  const double lb = cmd.info.blas.a[0], range = double(cmd.info.blas.a[1]) - lb;
  if (is_type(y, CCV_64F))
    uniform_fill(y->data.f64, count_of(y), ctr, lb, range);
  else
    uniform_fill(y->data.f32, count_of(y), ctr, lb, range);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(normal_opt) {
  ccv_nnc_tensor_t* y = outputs[0];
  if (!CCV_IS_TENSOR_CONTIGUOUS(y) || !(is_type(y, CCV_32F) || is_type(y, CCV_64F)))
    return normal_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Counter ctr(draw_seed(stream_context));
  const double std_dev = cmd.info.blas.a[0], mean = cmd.info.blas.a[1];
  if (is_type(y, CCV_64F))
    normal_fill(y->data.f64, count_of(y), ctr, mean, std_dev);
  else
    normal_fill(y->data.f32, count_of(y), ctr, mean, std_dev);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(dropout_forward_opt) {
  ccv_nnc_tensor_t* x = inputs[0];
  ccv_nnc_tensor_t* y = outputs[0];
  ccv_nnc_tensor_t* mask = outputs[1];
  if (!CCV_IS_TENSOR_CONTIGUOUS(x) || !CCV_IS_TENSOR_CONTIGUOUS(y) || !CCV_IS_TENSOR_CONTIGUOUS(mask) ||
      !(is_type(x, CCV_32F) || is_type(x, CCV_64F)))
    return dropout_forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const Counter ctr(draw_seed(stream_context));
  const uint64_t t = dropout_threshold(cmd.info.dropout.p);
  const double scale = dropout_scale(cmd.info.dropout.p);
  const bool entirety = cmd.info.dropout.entirety != 0;
  if (is_type(x, CCV_64F))
    dropout_fill(x->data.f64, y->data.f64, mask->data.u8, count_of(x), ctr, t, scale, entirety);
  else
    dropout_fill(x->data.f32, y->data.f32, mask->data.u8, count_of(x), ctr, t, scale, entirety);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(dropout_backward_opt) {
  ccv_nnc_tensor_t* g = inputs[0];
  ccv_nnc_tensor_t* mask = inputs[4];
  ccv_nnc_tensor_t* dx = outputs[0];
  if (!CCV_IS_TENSOR_CONTIGUOUS(g) || !CCV_IS_TENSOR_CONTIGUOUS(dx) || !CCV_IS_TENSOR_CONTIGUOUS(mask) ||
      !(is_type(g, CCV_32F) || is_type(g, CCV_64F)))
    return dropout_backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const double scale = dropout_scale(cmd.info.dropout.p);
  const bool entirety = cmd.info.dropout.entirety != 0;
  if (is_type(g, CCV_64F))
    dropout_grad(g->data.f64, mask->data.u8, dx->data.f64, count_of(g), scale, entirety);
  else
    dropout_grad(g->data.f32, mask->data.u8, dx->data.f32, count_of(g), scale, entirety);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::rand
