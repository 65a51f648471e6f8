// The channels-inner batch-norm loops for AVX-512F (norm_avx512.hpp).
#include <immintrin.h>

#include "cmd/norm/norm_avx512.hpp"
#include "core/vmath_avx512.hpp"

namespace nnc::norm {

namespace {

using V = vmath::Avx512;
// 32 registers of 16 floats: the sums keep up to 8 registers of channels, the
// stream loops a row's coefficients up to 64 channels (16 registers of
// coefficients).
constexpr int kMaxVectors = 8;
constexpr size_t kAffineRegK = 64;
constexpr size_t kAxpbypcRegK = 64;

}  // namespace

#include "cmd/norm/norm_body.hpp"

}  // namespace nnc::norm
