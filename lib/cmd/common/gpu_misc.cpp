// Host-side parameters of the GPU_REF HISTOGRAM kernel (cmd/common/gpu_misc.hpp).
#include "cmd/common/gpu_misc.hpp"

#include <cmath>

namespace nnc::gpu {

HistArgs hist_args(int mode, float min, float max, int bins, float rate, int u, int m) {
  HistArgs a;
  a.mode = mode;
  a.m = m;
  a.lo = min;
  a.hi = max;
  a.bins = bins;
  if (mode == kHistEven) a.w = (a.hi - a.lo) / bins;  // as CPU_REF: (hi - lo) / bins in double
  if (mode == kHistLog) {
    a.u = u;
    a.log_rate = std::log(static_cast<double>(rate));
  }
  return a;
}

void hist_log_edges(float min, float rate, int u, double* out) {
  const double lo = min, r = rate;
  for (int k = 0; k < u; k++) out[k] = lo * std::pow(r, k);
}

}  // namespace nnc::gpu
