// The activation loops for AVX2 + FMA (compiled with -mavx2 -mfma; used only
// after the CPU check in cpu_opt.cpp).
#include <algorithm>
#include <cstdint>

#include "cmd/activation/activation.hpp"
#include "core/parallel.hpp"
#include "core/vmath_avx2.hpp"

namespace nnc::activation {

namespace avx2 {
namespace {
using V = vmath::Avx2;
constexpr const char* kTableName = "avx2";
#include "cmd/activation/loops_body.hpp"
}  // namespace
}  // namespace avx2

const Loops kLoopsAvx2 = avx2::kTable;

}  // namespace nnc::activation
