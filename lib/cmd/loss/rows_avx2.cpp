// The probability losses' row loops for AVX2 + FMA (compiled with -mavx2
// -mfma; used only after the CPU check in cpu_opt.cpp).
#include <limits>

#include "cmd/loss/loss.hpp"
#include "core/vmath_avx2.hpp"
#include "core/vmath_scalar.hpp"

namespace nnc::loss {

namespace avx2 {
namespace {
using V = vmath::Avx2;
#include "cmd/loss/rows_body.hpp"
}  // namespace
}  // namespace avx2

const RowLoops kRowLoopsAvx2 = avx2::kRowTable;

}  // namespace nnc::loss
