// The SCALED_DOT_PRODUCT_ATTENTION blocks compiled for AVX-512 (called only
// after cpu_features().avx512).
#include <algorithm>
#include <cmath>

#include "cmd/attention/attention.hpp"
#include "cmd/common/sgemm.hpp"
#include "core/vmath_avx512.hpp"

namespace nnc::attn {

namespace avx512 {
using V = vmath::Avx512;
inline bool kSgemm(const gemm::Sgemm& s) { return gemm::sgemm_avx512_serial(s); }
#include "cmd/attention/attention_body.hpp"
}  // namespace avx512

const Body* body_avx512() { return &avx512::kBody; }

}  // namespace nnc::attn
