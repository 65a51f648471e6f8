// The UPSAMPLE loops compiled for AVX2 (called only after cpu_features().avx2).
#include "cmd/upsample/upsample.hpp"

namespace nnc::upsample::avx2 {

#include "cmd/upsample/upsample_body.hpp"

}  // namespace nnc::upsample::avx2
