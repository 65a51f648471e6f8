// What the GPU_CUDNN backends (cuda/cudnn.cpp) hand to cuDNN, worked out on
// the host without any CUDA or cuDNN header so that the ordinary build compiles
// it and CPU tests check it (test/unit/cmd_cudnn_plan): for a command, its
// tensors and its hint, the numbers of cuDNN's Nd descriptors — dims and
// element strides in the (n, c, h, w) order cuDNN wants whatever the memory
// format (views keep their strides), the filter layout, pads, strides,
// dilations, groups, the pooling window and mode — or the reason cuDNN cannot
// take the call (the backend then declines it and the next backend runs).
//
//   cudnn_plan::Conv p;
//   std::string why;
//   if (!cudnn_plan::conv_forward(cmd, hint, x, w, bias, y, &p, &why)) ... // declined: why
//   // p.x.dim = {N, C, H, W}, p.x.stride = {sn, sc, sh, sw}; p.w.dim = {K, C/groups, KH, KW} ...
//
// Bad input (shapes that do not fit, wrong types) throws nnc::Error as the
// families' own checks do; a refusal only says cuDNN has no equivalent.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

#include "nnc/ccv_nnc.h"

namespace nnc::cudnn_plan {

// A tensor as cudnnSetTensorNdDescriptor takes it: dims and element strides
// in (n, c, h, w) order (4 entries; a softmax's rows are {rows, cols, 1, 1}).
struct Tensor4 {
  int dim[4] = {0, 0, 0, 0};
  int stride[4] = {0, 0, 0, 0};
};

// A filter as cudnnSetFilterNdDescriptor takes it: dim = {K, C/groups, KH, KW}
// always; nhwc: the memory is K, KH, KW, C/groups (CUDNN_TENSOR_NHWC, libnnc's
// NHWC weights), else K, C/groups, KH, KW (CUDNN_TENSOR_NCHW).
struct Filter {
  int dim[4] = {0, 0, 0, 0};
  bool nhwc = false;
};

// One convolution (forward, or backward with y = g).
// Types: 32F, 16F or 16BF, every tensor of a call one type (the plans refuse
// others, saying so). cuDNN stores 16F as CUDNN_DATA_HALF and 16BF as
// CUDNN_DATA_BFLOAT16 and computes in fp32 (convolutions: fp32 compute type,
// tensor-core math allowed for the 16-bit types; 32F stays on FMA math).
struct Conv {
  int datatype = 0;  // CCV_32F, CCV_16F or CCV_16BF
  Tensor4 x, y;      // y: the output, or g for the backward
  Filter w;
  int pad[2] = {0, 0};  // symmetric (cuDNN has no other), rows then cols
  int stride[2] = {1, 1};
  int dilation[2] = {1, 1};
  int groups = 1;
  bool has_bias = false;  // forward bias / backward dbias
  Tensor4 bias;           // {1, K, 1, 1} with the bias's stride
};

// The backward's outputs: which are asked, and their descriptors (dx shares
// x's shape, dw must be packed like w: a filter has no strides).
struct ConvBackward {
  Conv conv;  // conv.has_bias / conv.bias: dbias
  bool dx = false, dw = false, dbias = false;
  Tensor4 dx_desc;
  // dbias alone needs neither x nor w: then only conv.y (g) and conv.bias are set.
  bool bias_only = false;
};

// The checks that need no hint (accept functions get none): the types, the
// weights' format and packing. The full plans below repeat them.
bool conv_forward_tensors(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias,
                          const ccv_nnc_tensor_t* y, std::string* why);
bool conv_backward_tensors(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                           int output_size, std::string* why);
bool pool_tensors(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* y, std::string* why);

bool conv_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y, Conv* plan,
                  std::string* why);
// inputs |g|x|w|bias|y|, outputs |dx|dw|dbias| (libnnc's slots, any subset of outputs).
bool conv_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                   int input_size, ccv_nnc_tensor_t* const* outputs, int output_size, ConvBackward* plan,
                   std::string* why);

// CONVOLUTION_TRANSPOSE as the convolution whose data gradient it is. That
// convolution reads NNC's output y (or the backward's g: K channels, OH x OW)
// and produces NNC's input x (C channels, H x W), with NNC's weights as its
// filter {C, K/groups, KH, KW}: libnnc's NHWC weights [C, KH, KW, K/groups]
// are cuDNN's NHWC (KRSC) filter, NCHW weights [C, K/groups, KH, KW] its
// KCRS one. So NNC's forward is cudnnConvolutionBackwardData(w, dy = x) into
// dx = y, dx is cudnnConvolutionForward(g, w) into x's shape, dw is
// cudnnConvolutionBackwardFilter(g, dy = x). The pad is NNC's leading one;
// output_padding rows / columns (the bottom / right of y) get no term.
// 32F, 16F or 16BF, every tensor one type (16-bit data runs with fp32 accumulation).
struct ConvTranspose {
  Conv conv;  // conv.x: y (forward) or g (backward); conv.y: x; conv.w: w as that filter; conv.bias: bias / dbias
  bool dx = false, dw = false, dbias = false;
  bool bias_only = false;  // backward with dbias alone: only conv.x (g) and conv.bias are set
  Tensor4 dx_desc;         // backward: dx (x's shape: cuDNN's forward output)
};
// Hint-free checks (types, the weights' format and packing), for accept functions.
bool conv_transpose_forward_tensors(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias,
                                    const ccv_nnc_tensor_t* y, std::string* why);
bool conv_transpose_backward_tensors(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                     int output_size, std::string* why);
// Forward |x|w|bias| -> |y|; backward |g|x|w|bias|y| -> |dx|dw|dbias| (any subset libnnc allows).
bool conv_transpose_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                            const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y,
                            ConvTranspose* plan, std::string* why);
bool conv_transpose_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                             int input_size, ccv_nnc_tensor_t* const* outputs, int output_size, ConvTranspose* plan,
                             std::string* why);

enum class PoolMode { kMax, kAverageExcludePadding };

// One pooling: x the input (or dx), y the pooled side (the output or g).
struct Pool {
  int datatype = 0;
  PoolMode mode = PoolMode::kMax;
  Tensor4 x, y;
  int window[2] = {1, 1};
  int pad[2] = {0, 0};
  int stride[2] = {1, 1};
};

// MAX_POOL / AVERAGE_POOL, forward (|x| -> |y|) or backward (|g|x|y| -> |dx|):
// pass the input side (x, or dx) and the pooled side (y, or g).
bool pool(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* y,
          Pool* plan, std::string* why);

// SOFTMAX over the last dimension: a tensor as {rows, cols, 1, 1} (cuDNN's
// INSTANCE mode over c, h, w). 32F, 16F or 16BF (one_type checks the
// operands agree).
bool softmax_rows(const ccv_nnc_tensor_t* t, Tensor4* desc, std::string* why);

// BATCH_NORM as cuDNN's SPATIAL mode: the kept (channel) axes fold into c and
// the reduced axes, in runs of nested axes, fill n, h and w, so statistics
// over (n, h, w) per c are NNC's per kept index (packed NHWC images become
// {N*H*W, C, 1, 1}, NCHW ones {N, C, H*W, 1}, views {N, C, H, W}). The per-channel tensors
// are packed {1, C, 1, 1}. cuDNN takes one layout for x, y (forward) and x, g,
// dx (backward): others are declined, as are views of per-channel tensors,
// axes that do not fold, inference-mode backward and dmean / dvar.
// Types: x's (32F, 16F or 16BF); NNC keeps the per-channel tensors (scale,
// bias, running and saved statistics, their gradients) in x's type too, while
// cuDNN wants them in fp32 for 16-bit data: the backend converts them through
// float scratch (datatype != CCV_32F).
struct BatchNorm {
  int datatype = CCV_32F;
  Tensor4 x;      // x, and y or g / dx (laid out alike)
  Tensor4 param;  // {1, C, 1, 1}, packed
  int channels = 0;
  long long per_channel = 0;  // elements behind each statistic
  double epsilon = 0;
  bool training = true;
  // The running statistics' update from cuDNN's batch mean m and unbiased
  // variance u (what cuDNN's running variance takes): out_mean = keep * mean +
  // take_mean * m, out_var = keep * var + take_var * u (take_var turns u into
  // the biased variance NNC's rule blends in).
  float keep = 0, take_mean = 0, take_var = 0;
};
// inputs |x|scale|bias|mean|var|, outputs |y|mean|var|saved_mean|saved_inv_std| (libnnc's slots).
bool batch_norm_forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                        ccv_nnc_tensor_t* const* outputs, int output_size, BatchNorm* plan, std::string* why);
// inputs |g|-|-|-|-|x|scale|bias|mean|var|y|mean|var|saved_mean|saved_inv_std|, outputs |dx|dscale|dbias|dmean|dvar|.
bool batch_norm_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size, BatchNorm* plan, std::string* why);

// LAYER_NORM (32F only: 16F / 16BF are refused with the reason, GPU_REF runs
// them) as cuDNN's SPATIAL batch norm with the rows as channels: the
// kept axes (the statistics' index) fold into c, the normalised ones fill h,
// w (then n), so (rows, features) becomes {1, R, F, 1}; cuDNN's per-c scale
// and bias are 1 and 0, and the per-feature affine is applied after through
// `feature` (x's slots with c = 1 and the strides of the packed normalised
// shape: scale, bias, dscale, dbias). Same layout rules as batch norm.
struct LayerNorm {
  Tensor4 x;          // x, and y or g / dx (laid out alike)
  Tensor4 feature;    // scale / bias, broadcast over c
  Tensor4 row_param;  // {1, R, 1, 1}: saved_mean, saved_inv_std
  int rows = 0;
  long long features = 0;
  double epsilon = 0;
};
// inputs |x|scale|bias| or |x|, outputs |y|saved_mean|saved_inv_std|.
bool layer_norm_forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                        ccv_nnc_tensor_t* const* outputs, int output_size, LayerNorm* plan, std::string* why);
// inputs |g|-|-|x|scale|bias|y|saved_mean|saved_inv_std| (or without scale, bias), outputs |dx|dscale|dbias|.
bool layer_norm_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size, LayerNorm* plan, std::string* why);

// A convolution's algorithm number (ccv_nnc_cmd_t.algorithm, what
// ccv_nnc_cmd_autotune picks): -1 lets cuDNN's heuristics choose; forward, the
// cuDNN forward algorithm; backward, data and filter algorithms packed as
// (filter + 1) * 16 + (data + 1), either part 0 for "the heuristics'".
constexpr int kAlgorithmsPerPart = 16;
int pack_backward_algorithms(int data, int filter);
int backward_data_algorithm(int packed);    // -1: none chosen
int backward_filter_algorithm(int packed);  // -1: none chosen

// Every tensor given (NULLs skipped) 32F, 16F or 16BF and of one type
// (softmax's operands).
bool one_type(std::initializer_list<const ccv_nnc_tensor_t*> ts, std::string* why);

// Same dims and strides.
bool same_desc(const Tensor4& a, const Tensor4& b);
// Two image tensors (or views) with the same element strides, dimension by
// dimension (cuDNN's backward calls want x like dx and y like dy).
bool same_strides(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b);
// Elements from the first to one past the last that a descriptor addresses
// (what scratch laid out by it needs).
size_t extent(const Tensor4& t);
// t's dims packed NHWC (strides {H W C, 1, W C, C}) or NCHW ({C H W, H W,
// W, 1}), as the plans describe packed tensors. cuDNN's legacy convolutions
// refuse strided views but take either packed layout (the filter's layout
// must match), so GPU_CUDNN stages views into this.
Tensor4 packed_as(const Tensor4& t, bool nhwc);
// t is packed_as(t, nhwc) over the dimensions whose extent is not 1.
bool is_packed(const Tensor4& t, bool nhwc);

}  // namespace nnc::cudnn_plan
