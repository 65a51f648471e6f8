// The probability losses' row loops for AVX-512 (compiled with the AVX-512 flags;
// used only after the CPU check in cpu_opt.cpp).
#include <limits>

#include "cmd/loss/loss.hpp"
#include "core/vmath_avx512.hpp"
#include "core/vmath_scalar.hpp"

namespace nnc::loss {

namespace avx512 {
namespace {
using V = vmath::Avx512;
#include "cmd/loss/rows_body.hpp"
}  // namespace
}  // namespace avx512

const RowLoops kRowLoopsAvx512 = avx512::kRowTable;

}  // namespace nnc::loss
