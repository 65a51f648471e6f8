// The explicit list of command families (DESIGN §4): each family folder
// defines its register_<family> function; ccv_nnc_init reaches them all
// through here, so nothing depends on static initialisers.
#include "core/registry.hpp"

namespace nnc {

void register_blas(Registry& r);        // lib/cmd/blas: GEMM, ADD, MUL, SCALAR_MUL
void register_ew(Registry& r);          // lib/cmd/ew: EWSUM, EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, CLAMP, MIN, MAX
void register_util(Registry& r);        // lib/cmd/util: SET, DATA_TRANSFER, FORMAT_TRANSFORM, DATATYPE_CONVERSION, TRANSPOSE
void register_activation(Registry& r);  // lib/cmd/activation: RELU, LEAKY_RELU, SIGMOID, TANH, GELU, SWISH
void register_softmax(Registry& r);     // lib/cmd/softmax: SOFTMAX, SOFTMAX_CROSSENTROPY
void register_loss(Registry& r);        // lib/cmd/loss: CATEGORICAL_, BINARY_, SIGMOID_BINARY_CROSSENTROPY, MSE, SMOOTH_L1
void register_convolution(Registry& r); // lib/cmd/convolution: CONVOLUTION
void register_pool(Registry& r);        // lib/cmd/pool: MAX_POOL, AVERAGE_POOL
void register_norm(Registry& r);        // lib/cmd/norm: BATCH_NORM, LAYER_NORM, GROUP_NORM, RMSNORM
void register_reduce(Registry& r);      // lib/cmd/reduce: REDUCE_SUM / MEAN / MAX / MIN / NORM2, ARGMAX, ARGMIN
void register_rand(Registry& r);        // lib/cmd/rand: RANDOM_UNIFORM, RANDOM_NORMAL, DROPOUT
void register_optim(Registry& r);       // lib/cmd/optim: SGD, ADAM, ADAMW, RMSPROP, LAMB
void register_pad(Registry& r);         // lib/cmd/pad: PAD
void register_upsample(Registry& r);    // lib/cmd/upsample: UPSAMPLE
void register_index(Registry& r);       // lib/cmd/index: INDEX_SELECT
void register_isnan(Registry& r);       // lib/cmd/isnan: REDUCE_ISNAN
void register_masked_fill(Registry& r); // lib/cmd/masked_fill: MASKED_FILL
void register_cmul(Registry& r);        // lib/cmd/cmul: CMUL
void register_convolution_transpose(Registry& r);  // lib/cmd/convolution_transpose: CONVOLUTION_TRANSPOSE
void register_attention(Registry& r);  // lib/cmd/attention: SCALED_DOT_PRODUCT_ATTENTION
void register_nms(Registry& r);         // lib/cmd/nms: NMS
void register_roi_align(Registry& r);   // lib/cmd/roi: ROI_ALIGN
void register_histogram(Registry& r);   // lib/cmd/histogram: HISTOGRAM
void register_comm(Registry& r);        // lib/cmd/comm: COMM_ALLREDUCE, COMM_BROADCAST, COMM_REDUCE (one device)
void register_lssc(Registry& r);        // lib/cmd/compression: COMPRESSION_LSSC
void register_rnn(Registry& r);         // lib/cmd/rnn: LSTM

#if NNC_HAVE_CUDA
void register_cuda(Registry& r);  // cuda/: GPU memory, DATA_TRANSFER and GEMM on the GPU
#endif

void register_all_families(Registry& r) {
  register_blas(r);
  register_ew(r);
  register_util(r);
  register_activation(r);
  register_softmax(r);
  register_loss(r);
  register_convolution(r);
  register_pool(r);
  register_norm(r);
  register_reduce(r);
  register_rand(r);
  register_optim(r);
#if NNC_HAVE_CUDA
  register_cuda(r);
#endif
  register_pad(r);
  register_upsample(r);
  register_index(r);
  register_isnan(r);
  register_masked_fill(r);
  register_cmul(r);
  register_convolution_transpose(r);
  register_attention(r);
  register_nms(r);
  register_roi_align(r);
  register_histogram(r);
  register_comm(r);
  register_lssc(r);
  register_rnn(r);
}

}  // namespace nnc
