// Index arithmetic of the GPU_REF RMSNORM and GROUP_NORM kernels
// (cuda/more_kernels.cu) as host code, tested on the CPU (test/unit/gpu_plan)
// against the CPU_REF kernels' own grouping.
//
// Both are "normalise x over some axes of a full shape": RMSNORM over its
// axes of x's shape; GROUP_NORM over x's shape with the group axis of C
// channels split in two, (G, C / G), normalised over the C / G axis and the
// reduce axes. Eight operands have strides over the full shape (0 where they
// do not vary; absent ones all 0): x, y, g, dx, scale, bias (per normalised
// element for RMSNORM, per channel for GROUP_NORM) and the saved mean and
// inv_std (per statistics group).
//   groups:  outer walks the statistics groups (operand 0 unused, 1 + k:
//            operand k at the group's first element), inner the elements of
//            one group (operand k).
//   params:  outer walks the scale elements, inner the elements each one
//            sums over (dscale, dbias).
#pragma once

#include <cstdint>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

enum NormOperand : int {
  kNormX = 0,
  kNormY,
  kNormG,
  kNormDx,
  kNormScale,
  kNormBias,
  kNormMean,
  kNormInv,
  kNormOperands
};

// The kernels' per-element formulas, in double (the statistics are summed
// in double too; each output is rounded once to its storage type on store,
// 32F, 16F or 16BF): y from x and its group's mean and 1 / std (0 and 1 /
// rms for RMSNORM), and dx from h = g scale, x^ = (x - mean) inv and the
// group's means of h (0 for RMSNORM) and of h x^. test/unit/gpu_half checks
// them, with that rounding, against CPU_REF's 16F / 16BF results.
NNC_HD double norm_y(double x, double mean, double inv, double scale, double bias) {
  return (x - mean) * inv * scale + bias;
}
NNC_HD double norm_dx(double inv, double h, double mean_h, double xhat, double mean_hx) {
  return inv * (h - mean_h - xhat * mean_hx);
}

struct NormPlan {
  ReducePlan groups;
  ReducePlan params;
  int64_t group_size = 0;  // elements per statistics group
};

// The strides over x's nd axes of a small tensor (sdim / sstride, snd axes)
// whose extents, once 1s are dropped, are those of want[0..nd) once 1s are
// dropped: 0 on axes where want is 1. False when the extents differ.
bool small_strides(const int* sdim, const int64_t* sstride, int snd, const int* want, int nd, int64_t* out);

// GROUP_NORM's split of x's axes: axis ga (C channels) becomes (G, C / G).
// Strides of an operand indexed by channel (x-like, scale) or by group (the
// statistics: their stride on axis ga steps one group).
void split_dims(const int* dim, int nd, int ga, int groups, int* out);
void split_strides(const int64_t* s, int nd, int ga, int per_group, bool by_group, int64_t* out);

// The plans over dim[0..nd) for strides[kNormOperands] (NULL entries: an
// absent operand); bit i of norm_mask: axis i normalised; of param_mask: the
// scale varies along axis i. False when the shapes do not fit.
bool make_norm_plan(NormPlan& p, const int* dim, int nd, const int64_t* const* strides, unsigned norm_mask,
                    unsigned param_mask);

// --- The row kernels: LAYER_NORM / RMSNORM over the innermost, packed axes ---
//
// The transformer case: each statistics group is one row, the row's elements
// at unit stride in x, y, g and dx, scale and bias packed over the row (the
// same for every row). Rows may sit anywhere (the groups plan's outer walk
// gives each row's start). One warp (rows of up to 128 chunks) or one block
// (128..512 threads) holds a row in registers, `chunks` chunks of `vec_width`
// elements a thread (chunk c of thread t starts at element (c tpr + t)
// vec_width): x (and g) read once from memory, 16-byte loads when every row
// operand's rows start 16-byte aligned, else element loads (same layout).
// Statistics in float (two passes over the registers: the mean, then the
// squared deviations). Rows longer than kNormRowMaxThreads threads x 4 chunks
// go the general way, as does everything else (other axes, strided rows,
// GROUP_NORM, 64F).
struct NormRows {
  bool fast = false;
  int64_t rows = 0, cols = 0;
  int vec_width = 4;        // elements a chunk: 16 bytes (4 for 32F, 8 for 16F / 16BF)
  bool vector = false;      // 16-byte loads and stores (else element by element)
  int threads_per_row = 0;  // 32: a warp a row; 128..512: a block a row
  int rows_per_block = 1;   // warps a block in the warp path (1 in the block path)
  int chunks = 1;           // chunks a thread holds: 1, 2 or 4
  int64_t blocks = 0;       // the grid (capped at kMaxBlocks; the kernels loop)
};
constexpr int kNormRowMaxChunks = 4;
// The block path's most threads a row: the kernels are built for it
// (__launch_bounds__: <= 128 registers a thread, so a block of 512 fits an
// SM's 64 K registers). Rows longer than 512 x 4 chunks (8192 32F elements,
// 16384 16F / 16BF) go the general way.
constexpr int kNormRowMaxThreads = 512;
constexpr int kNormRowWarps = 4;  // rows (warps) a block in the warp path

// p: the call's plan (groups over x, as make_norm_plan); present[k]: operand
// k given; addr[k]: its first element's address (for the alignment test);
// element_size: 4 (32F) or 2 (16F / 16BF; anything else: not fast).
NormRows choose_norm_rows(const NormPlan& p, const bool* present, const uintptr_t* addr, int element_size);

// dscale / dbias of the row case, coalesced over columns: block (x: 32
// columns, y: kNormColRowThreads rows) owns a strip of 32 columns and a slice
// of rows_per_split rows; each thread sums its rows in float, the block's
// threads combine in a fixed order into a float partial per (slice, column);
// a second kernel adds the slices' partials in slice order: no atomics, the
// same bits every run.
struct NormCols {
  int64_t strips = 0, splits = 0, rows_per_split = 0;
};
constexpr int kNormColWidth = 32;
constexpr int kNormColRowThreads = 8;
NormCols choose_norm_cols(int64_t rows, int64_t cols);

}  // namespace nnc::gpu
