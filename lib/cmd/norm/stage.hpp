// Workspace staging shared by the normalisation CPU_OPT kernels (cpu_opt.cpp,
// gnorm_opt.cpp, rmsnorm.cpp): the loops walk packed rows only, so a view of
// a big tensor (x, y, g, dx) is copied into the workspace behind the kernel's
// own temporaries and copied back at the end; the small per-channel tensors
// go through arrays of the kernel's type. Nothing here allocates.
#pragma once

#include <cstddef>
#include <cstring>

#include "cmd/common/axes.hpp"
#include "cmd/common/copy.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::norm {

inline bool packed_or_null(const ccv_nnc_tensor_t* t) { return !t || is_packed(t); }

inline size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t n = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
  return n;
}
// Elements the workspace must hold for a staged copy of t (0 when packed or NULL).
inline size_t staged(const ccv_nnc_tensor_t* t) { return packed_or_null(t) ? 0 : count_of(t); }

// The kernel's temporaries (`own` bytes) followed by `big` elements of T for staged copies.
template <class T>
T* scratch(ccv_nnc_stream_context_t* stream, size_t own, size_t big, T** stage) {
  own = (own + 63) / 64 * 64;
  unsigned char* w = static_cast<unsigned char*>(workspace(stream, own + big * sizeof(T)));
  *stage = reinterpret_cast<T*>(w + own);
  return reinterpret_cast<T*>(w);
}

template <class T>
const T* stage_in(const ccv_nnc_tensor_t* t, T** buf) {
  if (!t) return nullptr;
  if (is_packed(t)) return reinterpret_cast<const T*>(t->data.u8);
  ccv_nnc_tensor_t packed = tensor_value(*buf, t->info, 0);
  util::opt_copy(t, &packed);
  const T* r = *buf;
  *buf += count_of(t);
  return r;
}

template <class T>
T* stage_out(const ccv_nnc_tensor_t* t, T** buf) {
  if (!t) return nullptr;
  if (is_packed(t)) return reinterpret_cast<T*>(t->data.u8);
  T* r = *buf;
  *buf += count_of(t);
  return r;
}

template <class T>
void unstage(ccv_nnc_tensor_t* t, const T* data) {
  if (!t || is_packed(t)) return;
  const ccv_nnc_tensor_t packed = tensor_value(data, t->info, 0);
  util::opt_copy(&packed, t);
}

// n elements of a small tensor in row-major order (NULL: `fallback` everywhere).
template <class T>
void read_small(const ccv_nnc_tensor_t* t, size_t n, T fallback, T* out) {
  if (!t) {
    for (size_t i = 0; i < n; i++) out[i] = fallback;
    return;
  }
  if (is_packed(t)) {
    std::memcpy(out, t->data.u8, n * sizeof(T));
    return;
  }
  const Layout l = layout_of(t, "parameter");
  for (size_t i = 0; i < n; i++) out[i] = *reinterpret_cast<const T*>(at_linear(l, i));
}

template <class T>
void write_small(ccv_nnc_tensor_t* t, size_t n, const T* v) {
  if (!t) return;
  if (is_packed(t)) {
    std::memcpy(t->data.u8, v, n * sizeof(T));
    return;
  }
  const Layout l = layout_of(t, "output");
  for (size_t i = 0; i < n; i++) *reinterpret_cast<T*>(at_linear(l, i)) = v[i];
}

}  // namespace nnc::norm
