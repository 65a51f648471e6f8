// What the GPU_CUBLAS GEMM (cuda/gemm.cpp) hands to cuBLAS, worked out on the
// host without any CUDA header so that the ordinary build compiles it and CPU
// tests check it (test/unit/gemm_plan): for a GEMM_FORWARD or GEMM_BACKWARD
// and its tensors (any batch, broadcast, transpose and view that our CPU_REF
// GEMM accepts, see cmd/blas/gemm.hpp), the column-major calls
//
//   C' = op(A') op(B') (+ C' when accumulating)       m x n, inner k
//
// one cublasGemmStridedBatchedEx (or cublasLtMatmul) per entry of `bases`,
// each over `batch` matrices `stride_*` elements apart — or the reason cuBLAS
// cannot take them (the backend then declines, and the next backend runs or
// the caller sees "no kernel").
//
//   gemm_plan::Forward f;
//   std::string why;
//   if (!gemm_plan::forward(cmd, inputs, input_size, outputs, output_size, &f, &why)) ... // declined: why
//   if (f.bias == gemm_plan::BiasMode::fill) ... // fill b with the bias (f.fill), then accumulate
//   for (const auto& base : f.gemm.bases) ... // one strided batched call at a + base.a, b + base.b, ...
//
// Row-major products become column-major ones by transposition: our
// C = A B (row-major, element strides rs, cs) is cuBLAS's C^T = B^T A^T with
// the operands swapped (`swapped`), or, when C's columns are unit-stride
// rather than its rows, C = A B as it stands. Each operand then needs one
// unit stride (rows or columns); the other one is its leading dimension.
//
// Batches: dimensions of size 1 are dropped and neighbours that step evenly
// in every operand are merged; a batch that is one run of matrices times a
// shared operand folds into one bigger GEMM (the fully connected layer over a
// [B, T, k] input is one GEMM of B·T rows; the gradient of a shared weight is
// one GEMM over B·T inner rows). Otherwise the largest merged group whose
// output is not shared is the strided batch and the others loop (`bases`).
// An output shared by several batch indices (the gradient of a broadcast
// operand) is summed by calls in sequence: the first writes, the later ones
// accumulate.
//
// Bad input (shapes that do not fit, mixed types) is the family's validation
// (validate_forward / validate_backward), checked before a backend is chosen;
// these functions assume it passed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cmd/common/gpu_plan.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::gemm_plan {

// Element offsets of one strided batched call's first matrices.
struct Base {
  int64_t a = 0, b = 0, c = 0, bias = 0;
  bool accumulate = false;  // beta = 1: C' keeps what it holds (a bias fill, an earlier partial sum)
};

// One column-major GEMM shape, repeated over `batch` and over `bases`. a, b,
// c point at the tensors the operands come from (as given: host or device);
// offsets and strides count elements of the common datatype.
struct Call {
  const unsigned char* a = nullptr;
  const unsigned char* b = nullptr;
  unsigned char* c = nullptr;
  bool trans_a = false, trans_b = false;  // cuBLAS's transa / transb
  int m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_bias = 0;
  int batch = 1;
  bool swapped = false;     // A' comes from our B, B' from our A (C' = C^T)
  std::vector<Base> bases;  // empty: nothing to compute (an empty output)
  int64_t calls() const { return static_cast<int64_t>(bases.size()); }
};

// How a forward bias reaches b.
enum class BiasMode {
  none,
  // cuBLASLt's CUBLASLT_EPILOGUE_BIAS: a vector of m (= our n) elements at
  // bias + base.bias (+ i · stride_bias for batch member i), added to every
  // column of C'.
  epilogue,
  // b is first filled with the bias broadcast to it (`fill`: operand 0 is b,
  // operand 1 the bias), then every call accumulates. (`fill` is planned in
  // epilogue mode too: the fallback where cuBLASLt has no algorithm; every
  // call then accumulates.)
  fill,
};

struct Forward {
  Call gemm;
  BiasMode bias = BiasMode::none;
  const unsigned char* bias_data = nullptr;
  gpu::EwPlan fill;
};

// dbias = g summed over the dimensions the bias was broadcast along:
// reduce.outer operand 0 is dbias, operand 1 is g; reduce.inner operand 0 is g.
struct Backward {
  bool da = false, dw = false, dbias = false;
  Call da_gemm, dw_gemm;
  gpu::ReducePlan reduce;
  unsigned char* dbias_data = nullptr;
  const unsigned char* g_data = nullptr;
};

// Options for how the calls are laid out (tests turn them off to reach the
// general paths; the backend uses the defaults).
struct Options {
  bool fold = true;      // fold a batch into one bigger GEMM where it can
  bool epilogue = true;  // prefer the cuBLASLt bias epilogue
};

// The plans, or false and the reason in *why. Inputs and outputs as the
// command takes them (libnnc's slots: forward |a|w|bias| -> |b|; backward
// |g|a|w|bias|b| -> |da|dw|dbias|, NULLs allowed where the family allows).
bool forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
             ccv_nnc_tensor_t* const* outputs, int output_size, Forward* out, std::string* why,
             const Options& opt = Options());
bool backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
              ccv_nnc_tensor_t* const* outputs, int output_size, Backward* out, std::string* why,
              const Options& opt = Options());

// Partial sums in fp32 scratch (fp16 / bf16 storage with fp32 accumulation,
// when a call sums several products into one output): each distinct output
// offset of `c` gets a slot of batch column-major m x n matrices (ld m, m·n
// apart) in the scratch; the calls write their slot (base i: slot[i]), and
// `store` then rounds a slot into its output (operand 0: the output at
// c.c + offset, operand 1: the slot).
struct ScratchSums {
  int64_t per_slot = 0;                              // elements per slot
  std::vector<int64_t> slot;                         // per base of c
  std::vector<std::pair<int64_t, int64_t>> outputs;  // (output offset, slot), once each
  gpu::EwPlan store;
};
bool has_partial_sums(const Call& c);
ScratchSums scratch_sums(const Call& c);

// The compute mode a command asks for (cmd.info.blas.flags, libnnc's
// CCV_NNC_GEMM_*) at a storage datatype: fp32 accumulation unless
// CCV_NNC_GEMM_16F allows fp16 accumulation of fp16 storage; TF32 products for
// fp32 storage only with CCV_NNC_GEMM_32TF.
enum class Compute { f32, f32_tf32, f16, f64 };
Compute compute_of(int flags, int datatype);

}  // namespace nnc::gemm_plan
