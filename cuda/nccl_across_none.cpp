// A CUDA build without NCCL (and the CPU emulation, tools/gpu-emu): no NCCL
// across processes; GPU tensors across processes are staged through the host
// (lib/cmd/comm/across.cpp).
namespace nnc::cuda {

void install_nccl_across() {}

}  // namespace nnc::cuda
