// CPU_OPT kernels of the util family. Packed tensors take flat loops (memcpy,
// typed fills, F16C conversions); views go through a Walk, which merges
// whatever dimensions are contiguous so most views become a few long rows.
// Large problems are split over the thread pool. Nothing allocates.
#include <algorithm>
#include <cstring>

#include "cmd/common/strided.hpp"
#include "cmd/common/transpose_avx512.hpp"
#include "cmd/util/convert.hpp"
#include "cmd/util/util.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::util {

namespace {

// Below these many elements a kernel stays on the calling thread.
constexpr size_t kParallelCopy = size_t{1} << 18;
constexpr size_t kParallelConvert = size_t{1} << 16;

size_t element_count(const ccv_nnc_tensor_t* t) {
  size_t c = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) c *= static_cast<size_t>(t->info.dim[i]);
  return c;
}

// --- fills ------------------------------------------------------------------

template <class T>
void fill_row(unsigned char* p, int64_t stride, size_t n, const unsigned char* pattern) {
  T v;
  std::memcpy(&v, pattern, sizeof(T));
  T* q = reinterpret_cast<T*>(p);
  if (stride == 1) {
    std::fill_n(q, n, v);
  } else {
    for (size_t i = 0; i < n; i++) q[static_cast<int64_t>(i) * stride] = v;
  }
}

void fill_any(unsigned char* p, int64_t stride, size_t n, const unsigned char* pattern, size_t esize) {
  switch (esize) {
    case 1: fill_row<uint8_t>(p, stride, n, pattern); break;
    case 2: fill_row<uint16_t>(p, stride, n, pattern); break;
    case 4: fill_row<uint32_t>(p, stride, n, pattern); break;
    case 8: fill_row<uint64_t>(p, stride, n, pattern); break;
  }
}

void set_one(ccv_nnc_tensor_t* t, double value) {
  const int datatype = CCV_GET_DATA_TYPE(t->info.datatype);
  const size_t esize = datatype_size(datatype);
  unsigned char pattern[8];
  fill_pattern(value, datatype, pattern);
  unsigned char* base = t->data.u8;
  if (CCV_IS_TENSOR_CONTIGUOUS(t)) {
    const size_t n = element_count(t);
    range_parallel(n, kParallelCopy, kParallelCopy / 4, [&](size_t b, size_t e) { fill_any(base + b * esize, 1, e - b, pattern, esize); });
    return;
  }
  const Layout y = layout_of(t);
  Walk w;
  const int64_t* strides[] = {y.stride.data()};
  make_walk(w, y.dim.data(), y.nd, 1, strides);
  walk_parallel(w, kParallelCopy, [&](const int64_t* off, size_t n) {
    fill_any(base + off[0] * static_cast<int64_t>(esize), w.inner_stride(0), n, pattern, esize);
  });
}

// --- copies -----------------------------------------------------------------

template <class T>
void copy_row(unsigned char* d, int64_t ds, const unsigned char* s, int64_t ss, size_t n) {
  T* q = reinterpret_cast<T*>(d);
  const T* p = reinterpret_cast<const T*>(s);
  for (size_t i = 0; i < n; i++) q[static_cast<int64_t>(i) * ds] = p[static_cast<int64_t>(i) * ss];
}

void copy_any(unsigned char* d, int64_t ds, const unsigned char* s, int64_t ss, size_t n, size_t esize) {
  if (ds == 1 && ss == 1) {
    std::memmove(d, s, n * esize);
    return;
  }
  switch (esize) {
    case 1: copy_row<uint8_t>(d, ds, s, ss, n); break;
    case 2: copy_row<uint16_t>(d, ds, s, ss, n); break;
    case 4: copy_row<uint32_t>(d, ds, s, ss, n); break;
    case 8: copy_row<uint64_t>(d, ds, s, ss, n); break;
  }
}

// Tiles of a 2-d transpose: y[t][i] (i contiguous in y) = x[t][i] (t contiguous in x).
template <class T>
void transpose_tile(unsigned char* yb, int64_t ys_t, const unsigned char* xb, int64_t xs_i, int t0, int t1, int i0,
                    int i1) {
  T* y = reinterpret_cast<T*>(yb);
  const T* x = reinterpret_cast<const T*>(xb);
  for (int t = t0; t < t1; t++)
    for (int i = i0; i < i1; i++) y[t * ys_t + i] = x[t + i * xs_i];
}

// Copy x into y, where x is described in y's dimension order (strides
// permuted). Picks a tiled transpose when the innermost dimension of y is
// strided in x but another dimension of x is contiguous.
struct Copy {
  Walk w;  // operand 0: y, operand 1: x
  unsigned char* y;
  const unsigned char* x;
  size_t esize;
};

void strided_copy(Copy& c, size_t parallel_from) {
  const Walk& w = c.w;
  const int nd = w.nd;
  int t_dim = -1;
  if (nd >= 2 && w.inner_stride(0) == 1 && w.inner_stride(1) != 1)
    for (int d = 0; d < nd - 1; d++)
      if (w.stride[1][d] == 1) t_dim = d;
  if (t_dim < 0) {
    walk_parallel(w, parallel_from, [&](const int64_t* off, size_t n) {
      copy_any(c.y + off[0] * static_cast<int64_t>(c.esize), w.inner_stride(0),
               c.x + off[1] * static_cast<int64_t>(c.esize), w.inner_stride(1), n, c.esize);
    });
    return;
  }
  // Transpose in 32x32 tiles over (t_dim, innermost); the other dimensions are batches.
  constexpr int kTile = 32;
  int odim[kMaxDim], on = 0;
  int64_t oys[kMaxDim], oxs[kMaxDim];
  for (int d = 0; d < nd - 1; d++) {
    if (d == t_dim) continue;
    odim[on] = w.dim[d];
    oys[on] = w.stride[0][d];
    oxs[on] = w.stride[1][d];
    on++;
  }
  size_t batches = 1;
  for (int d = 0; d < on; d++) batches *= static_cast<size_t>(odim[d]);
  const int T = w.dim[t_dim], I = w.dim[nd - 1];
  const int tiles_t = (T + kTile - 1) / kTile;
  const int64_t ys_t = w.stride[0][t_dim], xs_i = w.inner_stride(1);
  const bool avx512 = cpu_features().avx512;
  auto body = [&](size_t b, size_t e) {
    for (size_t job = b; job < e; job++) {
      size_t batch = job / static_cast<size_t>(tiles_t);
      const int t0 = static_cast<int>(job % static_cast<size_t>(tiles_t)) * kTile;
      int64_t oy = 0, ox = 0;
      for (int d = on - 1; d >= 0; d--) {
        const int64_t idx = static_cast<int64_t>(batch % static_cast<size_t>(odim[d]));
        batch /= static_cast<size_t>(odim[d]);
        oy += idx * oys[d];
        ox += idx * oxs[d];
      }
      unsigned char* yb = c.y + oy * static_cast<int64_t>(c.esize);
      const unsigned char* xb = c.x + ox * static_cast<int64_t>(c.esize);
      const int t1 = std::min(T, t0 + kTile);
      for (int i0 = 0; i0 < I; i0 += kTile) {
        const int i1 = std::min(I, i0 + kTile);
        switch (c.esize) {
          case 1: transpose_tile<uint8_t>(yb, ys_t, xb, xs_i, t0, t1, i0, i1); break;
          case 2: transpose_tile<uint16_t>(yb, ys_t, xb, xs_i, t0, t1, i0, i1); break;
          case 4:
            if (avx512)  // bit copies through float lanes: no arithmetic, payloads kept
              transpose_f32_avx512(reinterpret_cast<const float*>(xb) + t0 + i0 * xs_i, xs_i, i1 - i0, t1 - t0,
                                         reinterpret_cast<float*>(yb) + t0 * ys_t + i0, ys_t);
            else
              transpose_tile<uint32_t>(yb, ys_t, xb, xs_i, t0, t1, i0, i1);
            break;
          case 8: transpose_tile<uint64_t>(yb, ys_t, xb, xs_i, t0, t1, i0, i1); break;
        }
      }
    }
  };
  const size_t jobs = batches * static_cast<size_t>(tiles_t);
  const size_t per_job = static_cast<size_t>(kTile) * static_cast<size_t>(I);
  const size_t work = jobs * per_job;
  if (work >= parallel_from)
    range_parallel(jobs, 0, std::max<size_t>(1, parallel_from / 4 / per_job), body);
  else
    body(size_t{0}, jobs);
}

// Copy `x` into `y` (same shape, or a packed reshape), any strides.
void copy_tensor(const ccv_nnc_tensor_t* xt, ccv_nnc_tensor_t* yt) {
  const size_t esize = datatype_size(CCV_GET_DATA_TYPE(yt->info.datatype));
  if (CCV_IS_TENSOR_CONTIGUOUS(xt) && CCV_IS_TENSOR_CONTIGUOUS(yt)) {
    const size_t bytes = element_count(yt) * esize;
    unsigned char* d = yt->data.u8;
    const unsigned char* s = xt->data.u8;
    if (d == s) return;
    if (d < s + bytes && s < d + bytes) {  // partial overlap: one memmove, in order
      std::memmove(d, s, bytes);
      return;
    }
    range_parallel(bytes, kParallelCopy * 4, kParallelCopy, [&](size_t b, size_t e) { std::memcpy(d + b, s + b, e - b); });
    return;
  }
  Copy c;
  const Layout x = layout_of(xt), y = layout_of(yt);
  const int64_t* strides[] = {y.stride.data(), x.stride.data()};
  make_walk(c.w, y.dim.data(), y.nd, 2, strides);
  c.y = y.data;
  c.x = x.data;
  c.esize = esize;
  if (c.y == c.x) {
    bool same = true;
    for (int d = 0; d < c.w.nd; d++) same = same && c.w.stride[0][d] == c.w.stride[1][d];
    if (same) return;
  }
  strided_copy(c, kParallelCopy);
}

// --- conversions ------------------------------------------------------------

// n packed elements from src (type `from`) to dst (type `to`), from != to.
void convert_packed(const unsigned char* src, int from, unsigned char* dst, int to, size_t n) {
  const CpuFeatures& cpu = cpu_features();
  if (from == CCV_32F && to == CCV_16F && cpu.avx2) {
    f32_to_f16_f16c(reinterpret_cast<const float*>(src), reinterpret_cast<uint16_t*>(dst), n);
  } else if (from == CCV_16F && to == CCV_32F && cpu.avx2) {
    f16_to_f32_f16c(reinterpret_cast<const uint16_t*>(src), reinterpret_cast<float*>(dst), n);
  } else if (from == CCV_32F && to == CCV_64F) {
    const float* s = reinterpret_cast<const float*>(src);
    double* d = reinterpret_cast<double*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = s[i];
  } else if (from == CCV_64F && to == CCV_32F) {
    const double* s = reinterpret_cast<const double*>(src);
    float* d = reinterpret_cast<float*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = static_cast<float>(s[i]);
  } else if (from == CCV_16BF && to == CCV_32F) {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
    float* d = reinterpret_cast<float*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = from_bf16(s[i]);
  } else {
    convert_strided(src, from, 1, dst, to, 1, n);
  }
}

void convert_tensor(const ccv_nnc_tensor_t* xt, ccv_nnc_tensor_t* yt) {
  const int from = CCV_GET_DATA_TYPE(xt->info.datatype), to = CCV_GET_DATA_TYPE(yt->info.datatype);
  if (from == to) {
    copy_tensor(xt, yt);
    return;
  }
  const size_t fs = datatype_size(from), ts = datatype_size(to);
  if (CCV_IS_TENSOR_CONTIGUOUS(xt) && CCV_IS_TENSOR_CONTIGUOUS(yt)) {
    const unsigned char* s = xt->data.u8;
    unsigned char* d = yt->data.u8;
    range_parallel(element_count(yt), kParallelConvert, kParallelConvert / 4,
                   [&](size_t b, size_t e) { convert_packed(s + b * fs, from, d + b * ts, to, e - b); });
    return;
  }
  const Layout x = layout_of(xt), y = layout_of(yt);
  Walk w;
  const int64_t* strides[] = {y.stride.data(), x.stride.data()};
  make_walk(w, y.dim.data(), y.nd, 2, strides);
  walk_parallel(w, kParallelConvert, [&](const int64_t* off, size_t n) {
    const unsigned char* s = x.data + off[1] * static_cast<int64_t>(fs);
    unsigned char* d = y.data + off[0] * static_cast<int64_t>(ts);
    if (w.inner_stride(0) == 1 && w.inner_stride(1) == 1)
      convert_packed(s, from, d, to, n);
    else
      convert_strided(s, from, w.inner_stride(1), d, to, w.inner_stride(0), n);
  });
}

}  // namespace

void opt_copy(const ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y) { copy_tensor(x, y); }
void opt_fill(ccv_nnc_tensor_t* y, double value) { set_one(y, value); }

NNC_KERNEL(set_opt) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) set_one(outputs[i], cmd.info.blas.a[0]);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(transfer_opt) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) copy_tensor(inputs[i], outputs[i]);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(format_opt) {
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout x = layout_of(inputs[i], "FORMAT_TRANSFORM input");
    const Layout y = layout_of(outputs[i], "FORMAT_TRANSFORM output");
    int perm[kMaxDim];
    NNC_CHECK(format_permutation(x.format, y.format, y.nd, perm), "FORMAT_TRANSFORM: formats %s and %s do not match",
              format_name(x.format), format_name(y.format));
    // x read in y's dimension order.
    int64_t xs[kMaxDim];
    for (int j = 0; j < y.nd; j++) xs[j] = x.stride[perm[j]];
    Copy c;
    const int64_t* strides[] = {y.stride.data(), xs};
    make_walk(c.w, y.dim.data(), y.nd, 2, strides);
    c.y = y.data;
    c.x = x.data;
    c.esize = y.element_size;
    strided_copy(c, kParallelCopy);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(convert_opt) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) convert_tensor(inputs[i], outputs[i]);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::util
