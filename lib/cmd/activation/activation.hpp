// The activation family inside. activation.cpp describes the commands
// (shapes, checks, backward needs) and registers the kernels; cpu_ref.cpp
// holds the double-precision loops over any layout and float type;
// cpu_opt.cpp the fp32 kernels, which run the per-instruction-set loop tables
// below (loops_body.hpp, compiled once per ISA by cpu_opt_avx2.cpp and
// cpu_opt_avx512.cpp, and once without vector flags as the scalar table).
#pragma once

#include <cstddef>

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::activation {

enum Op { kRelu, kLeakyRelu, kSigmoid, kTanh, kGelu, kGeluTanh, kSwish, kOpCount };

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);
NNC_KERNEL(forward_opt);
NNC_KERNEL(backward_opt);

// The op a command id (forward or backward) and its parameters stand for.
Op op_of(const ccv_nnc_cmd_t& cmd);
// Which forward tensor the backward reads: for kRelu, kLeakyRelu, kSigmoid,
// kTanh the output y when given (else x), for kGelu, kGeluTanh, kSwish x.
bool backward_uses_output(Op op);

// CPU_OPT's accept test: every tensor fp32 with a unit-stride last dimension,
// and (backward of SIGMOID / TANH) the output y given.
bool opt_accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size);

// Contiguous fp32 loops of one instruction set. forward: y = f(x) over n
// elements (a = leaky_relu.negative_slope); backward: dx = g f'(.) where t is
// y or x as backward_uses_output says; backward_xy: GELU and SWISH with both
// x and y (F(x) read as y / x, see loops_body.hpp). math: the vmath functions over arrays
// (exp, log, tanh, sigmoid, erf, ncdf), for the tests. Outputs may alias
// their inputs exactly.
enum MathFn { kExp, kLog, kTanhFn, kSigmoidFn, kErf, kNcdf, kMathCount };
struct Loops {
  const char* name;
  void (*forward[kOpCount])(const float* x, float* y, size_t n, float a);
  void (*backward[kOpCount])(const float* g, const float* t, float* dx, size_t n, float a);
  // GELU (both forms) and SWISH from x and their output y (NULL for the others).
  void (*backward_xy[kOpCount])(const float* g, const float* x, const float* y, float* dx, size_t n, float a);
  void (*math[kMathCount])(const float* x, float* y, size_t n);
};
extern const Loops kLoopsScalar;
extern const Loops kLoopsAvx2;
extern const Loops kLoopsAvx512;
// The table CPU_OPT uses on this CPU (AVX-512, AVX2 with FMA, or scalar).
const Loops& loops();
// The tables this CPU can run (the scalar one always), for tests.
const Loops* loops_avx2_if_supported();
const Loops* loops_avx512_if_supported();

// Constants of the tanh form of GELU: u = kGeluK0 (x + kGeluK1 x^3).
constexpr double kGeluK0 = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluK1 = 0.044715;

}  // namespace nnc::activation
