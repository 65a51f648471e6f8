// A CUDA build without cuDNN (cuda/cudnn.cmake found none): no GPU_CUDNN
// backend; convolution, pooling and softmax on the GPU go to other backends.
#include "core/registry.hpp"

namespace nnc::cuda {

void register_cudnn(Registry&) {}

}  // namespace nnc::cuda
