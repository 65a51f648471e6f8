// The activation loops for AVX-512 (compiled with the AVX-512 flags; used only
// after the CPU check in cpu_opt.cpp).
#include <algorithm>
#include <cstdint>

#include "cmd/activation/activation.hpp"
#include "core/parallel.hpp"
#include "core/vmath_avx512.hpp"

namespace nnc::activation {

namespace avx512 {
namespace {
using V = vmath::Avx512;
constexpr const char* kTableName = "avx512";
#include "cmd/activation/loops_body.hpp"
}  // namespace
}  // namespace avx512

const Loops kLoopsAvx512 = avx512::kTable;

}  // namespace nnc::activation
