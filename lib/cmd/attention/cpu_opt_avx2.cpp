// The SCALED_DOT_PRODUCT_ATTENTION blocks compiled for AVX2 + FMA (called only
// after cpu_features().avx2).
#include <algorithm>
#include <cmath>

#include "cmd/attention/attention.hpp"
#include "cmd/common/sgemm.hpp"
#include "core/vmath_avx2.hpp"

namespace nnc::attn {

namespace avx2 {
using V = vmath::Avx2;
inline bool kSgemm(const gemm::Sgemm& s) { return gemm::sgemm_avx2_serial(s); }
#include "cmd/attention/attention_body.hpp"
}  // namespace avx2

const Body* body_avx2() { return &avx2::kBody; }

}  // namespace nnc::attn
