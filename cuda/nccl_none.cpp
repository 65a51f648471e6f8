// A CUDA build without NCCL: no GPU_NCCL backend (the collectives across GPUs
// then have no kernel, and say so when asked).
#include "core/registry.hpp"

namespace nnc::cuda {

void register_nccl(Registry&) {}

}  // namespace nnc::cuda
