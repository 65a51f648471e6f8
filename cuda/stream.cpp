// stream_of / finish (stream.hpp). Until GPU stream contexts run on CUDA
// streams of their own, every call uses the device's legacy default stream
// and is synchronous.
#include "cuda/stream.hpp"

#include "cuda/cuda.hpp"

namespace nnc::cuda {

cudaStream_t stream_of(ccv_nnc_stream_context_t*, int device, const char* what) {
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  return cudaStreamLegacy;
}

void finish(ccv_nnc_stream_context_t*, cudaStream_t s, const char* what) {
  NNC_CUDA_CHECK(cudaGetLastError(), what);
  NNC_CUDA_CHECK(cudaStreamSynchronize(s), what);
}

}  // namespace nnc::cuda
