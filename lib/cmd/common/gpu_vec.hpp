// Which element-wise launches of the GPU_REF kernels (cuda/ew_kernels.cu,
// cuda/loss_optim_kernels.cu) move 16 bytes per operand per thread instead of
// one element, as host code: built in every configuration and tested on the
// CPU (test/unit/gpu_vec), so the decision a kernel trusts (alignment, head,
// tail, which operand reads how) is checked without a GPU.
//
//   const uint64_t addr[] = {(uint64_t)y, (uint64_t)x};       // element 0 of each operand
//   const int size[] = {2, 2};                                // bytes per element
//   const EwVec v = choose_ew_vec(plan, addr, size);          // plan: gpu_plan.hpp, operand 0 the output
//   if (v.width) { ... elements [0, head) and [head + vectors * width, count) one at a time,
//                  vector j covers [head + j * width, head + (j + 1) * width) ... }
//
// Taken: plans of one merged dimension (every operand packed, or a broadcast
// scalar: stride 0, or a NULL operand, which the kernels read as 1), and
// plans of two dimensions [outer, inner] where each operand is packed
// (strides inner, 1), a row broadcast over the outer dimension (0, 1: a bias
// b[C] added to x[N, C]), a column broadcast (1, 0: s[N, 1] times x[N, C]) or
// a scalar (0, 0), with inner a multiple of the width. Every operand read as
// a vector must start (after the head) at a multiple of width x its element
// size; the output must be packed. Anything else: width 0 (the plan's scalar
// path).
//
// C++17 without CUDA or NNC includes, so nvcc compiles it into the kernels.
#pragma once

#include <cstdint>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

constexpr int kVecBytes = 16;  // one 128-bit access per operand per thread

// How operand k of a vector launch is addressed at element i (0 <= i < count).
enum VecMode : int {
  kVecPacked = 0,  // i                 (a vector per step)
  kVecScalar = 1,  // 0                 (one value for the whole vector; also a NULL operand)
  kVecRow = 2,     // i % inner         (a vector per step: inner is a multiple of the width)
  kVecCol = 3,     // i / inner         (one value per vector: a vector never crosses a row)
};

struct EwVec {
  int width = 0;         // elements per vector; 0: take the scalar path
  int operands = 0;
  int64_t count = 0;     // elements in all
  int64_t inner = 1;     // row length for kVecRow / kVecCol (count when one dimension)
  int64_t head = 0;      // elements before the first vector (a common misalignment), < width
  int64_t vectors = 0;   // whole vectors from head on
  int mode[kPlanOperands] = {};
  EwLaunch launch;       // threads and blocks (each thread: one vector, or one head / tail element, per step)

  // The scalar elements before and after the vectors, and where element i of
  // operand k lies (in elements from the operand's element 0).
  NNC_HD int64_t tail_start() const { return head + vectors * width; }
  NNC_HD int64_t scalars() const { return head + (count - tail_start()); }
  NNC_HD int64_t scalar_index(int64_t t) const { return t < head ? t : tail_start() + (t - head); }
  NNC_HD int64_t offset(int k, int64_t i) const {
    switch (mode[k]) {
      case kVecScalar:
        return 0;
      case kVecRow:
        return i % inner;
      case kVecCol:
        return i / inner;
      default:
        return i;
    }
  }
};

// The vector launch of `plan` (p.operands operands, operand 0 the output)
// whose operand k starts at byte address addr[k] (0: a NULL operand, read as
// 1 by the element-wise kernels; only inputs may be NULL) with elements of
// element_size[k] bytes (1, 2, 4 or 8). The width is kVecBytes / the largest
// element size among the operands read as vectors. width == 0 when the plan
// is not one of the shapes above, an address is misaligned for its elements,
// the vector operands are not all misaligned alike (by the same number of
// elements modulo the width; two dimensions: not aligned at all), or not one
// whole vector follows the head.
EwVec choose_ew_vec(const EwPlan& p, const uint64_t* addr, const int* element_size);

// The same with every operand's elements of one size.
EwVec choose_ew_vec(const EwPlan& p, const uint64_t* addr, int element_size);

// NNC_GPU_EW_VEC=0 keeps every launch on the scalar path (benchmarks compare
// the two; tests check they agree bit for bit). Any other value, or none: allowed.
bool ew_vec_allowed(const char* value);
bool ew_vec_allowed_from_env();

}  // namespace nnc::gpu
