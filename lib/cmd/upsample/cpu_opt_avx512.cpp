// The UPSAMPLE loops compiled for AVX512 (called only after cpu_features().avx512).
#include "cmd/upsample/upsample.hpp"

namespace nnc::upsample::avx512 {

#include "cmd/upsample/upsample_body.hpp"

}  // namespace nnc::upsample::avx512
