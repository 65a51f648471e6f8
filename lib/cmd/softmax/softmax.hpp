// The softmax family inside. softmax.cpp describes SOFTMAX and
// SOFTMAX_CROSSENTROPY (shapes, checks, backward needs) and registers the
// kernels; cpu_ref.cpp holds the double-precision loops over any layout,
// cpu_opt.cpp the threaded fp32 paths, whose row loops live in
// cpu_opt_avx2.cpp / cpu_opt_avx512.cpp (picked at run time) with a scalar
// fallback.
#pragma once

#include <cstddef>

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::softmax {

NNC_KERNEL(softmax_forward_ref);
NNC_KERNEL(softmax_backward_ref);
NNC_KERNEL(crossentropy_forward_ref);
NNC_KERNEL(crossentropy_backward_ref);
NNC_KERNEL(softmax_forward_opt);
NNC_KERNEL(softmax_backward_opt);
NNC_KERNEL(crossentropy_forward_opt);
NNC_KERNEL(crossentropy_backward_opt);

// CPU_OPT's accept test: fp32 tensors whose last dimension is unit-stride.
bool opt_accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size);

// The fp32 loops over one contiguous row of n > 0 elements.
struct RowKernels {
  const char* name;
  // y[i] = exp(x[i]) for i < n (accurate to a few ulp; 0 below about -87.3).
  void (*exp)(const float* x, float* y, size_t n);
  float (*max)(const float* x, int n);
  // Returns sum exp(x[i] - m); stores the terms into y unless y is NULL.
  float (*exp_sum)(const float* x, float m, float* y, int n);
  void (*scale)(float* y, float a, int n);
  // dx = y * (g - <g, y>)  (the softmax backward of one row).
  void (*softmax_backward)(const float* g, const float* y, float* dx, int n);
  // dz = s * (a + gs - <gs, s>) - b - c * lab, where gs and lab may be NULL
  // (read as 0): softmax cross-entropy's backward of one row.
  void (*crossentropy_backward)(const float* s, const float* gs, const float* lab, float* dz, int n, float a, float b,
                                float c);
};

// The best loops for this CPU (AVX-512, AVX2 or scalar).
const RowKernels& row_kernels();
// Each implementation, for tests (nullptr when the CPU lacks it).
const RowKernels* row_kernels_scalar();
const RowKernels* row_kernels_avx2();
const RowKernels* row_kernels_avx512();

// Defined in the ISA files; call only when cpu_features() has the ISA.
extern const RowKernels kRowKernelsAvx2;
extern const RowKernels kRowKernelsAvx512;

}  // namespace nnc::softmax
