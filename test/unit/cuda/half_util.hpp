// Helpers of the half-type GPU_REF tests (half2_gpu_test, half3_gpu_test):
// the two half types, a type's name, and one unit in the last place of a
// half-type value (the rounding step at v's magnitude; subnormals share the
// smallest normal's step).
#pragma once

#include <cmath>
#include <string>

#include "nnc/ccv_nnc.h"

namespace nnc_gpu_test {

constexpr int kHalves[] = {CCV_16F, CCV_16BF};

inline std::string tname(int type) {
  switch (type) {
    case CCV_16F:
      return "16F";
    case CCV_16BF:
      return "16BF";
    case CCV_64F:
      return "64F";
    default:
      return "32F";
  }
}

inline double ulp(int type, double v) {
  const int mant = type == CCV_16F ? 10 : 7;
  const int emin = type == CCV_16F ? -14 : -126;
  const double a = std::fabs(v);
  int e = a > 0 ? static_cast<int>(std::floor(std::log2(a))) : emin;
  if (e < emin) e = emin;
  return std::ldexp(1.0, e - mant);
}

}  // namespace nnc_gpu_test
