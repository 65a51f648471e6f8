// CPU_REF kernel of HISTOGRAM: every value of x in double, its bin found by
// a first guess (floor, logarithm, binary search) corrected against the
// edges themselves, so that a value on an edge always lands above it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cmd/histogram/histogram.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::histogram {

namespace {

std::vector<double> values_of(const ccv_nnc_tensor_t* t, const char* what) {
  const Layout l = layout_of(t, what);
  std::vector<double> v;
  v.reserve(l.count());
  for_each_index(l.dim.data(), l.nd, [&](const int* i) { v.push_back(load_double(l.at(i), l.datatype)); });
  return v;
}

// Index k in [0, n) with edge(k) <= v < edge(k + 1) (edge(0) <= v assumed;
// the last bin unbounded), starting from a guess.
template <class Edge>
int settle(double v, long long guess, int n, Edge&& edge) {
  int k = static_cast<int>(std::clamp<long long>(guess, 0, n - 1));
  while (k > 0 && v < edge(k)) k--;
  while (k < n - 1 && v >= edge(k + 1)) k++;
  return k;
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const auto& p = cmd.info.histogram;
  const std::vector<double> x = values_of(inputs[0], "x");
  const Layout h = layout_of(outputs[0], "h");
  std::vector<int64_t> count(static_cast<size_t>(h.dim[0]), 0);
  const size_t nan_slot = count.size() - 1;
  switch (p.type) {
    case CCV_NNC_HISTOGRAM_EVEN: {
      const double lo = p.min, hi = p.max, w = (hi - lo) / p.bins;
      auto edge = [&](int i) { return lo + i * w; };
      for (double v : x) {
        if (std::isnan(v))
          count[nan_slot]++;
        else if (v < lo)
          count[0]++;
        else if (v >= hi)
          count[static_cast<size_t>(p.bins) + 1]++;
        else
          count[1 + settle(v, static_cast<long long>(std::floor((v - lo) / w)), p.bins, edge)]++;
      }
      break;
    }
    case CCV_NNC_HISTOGRAM_LOGARITHMIC: {
      const int u = log_range(cmd.info);
      const double lo = p.min, rate = p.rate, log_rate = std::log(rate);
      auto edge = [&](int k) { return lo * std::pow(rate, k); };
      for (double v : x) {
        if (std::isnan(v)) {
          count[nan_slot]++;
          continue;
        }
        const double a = std::fabs(v);
        if (a < lo) {
          count[u]++;
          continue;
        }
        const double guess = std::isinf(a) ? u : std::floor(std::log(a / lo) / log_rate);
        const int k = settle(a, static_cast<long long>(std::min<double>(guess, u)), u, edge);
        count[v < 0 ? u - 1 - k : u + 1 + k]++;
      }
      break;
    }
    default: {
      std::vector<double> edges = values_of(inputs[1], "edges");
      for (size_t i = 0; i < edges.size(); i++) {
        NNC_CHECK(!std::isnan(edges[i]), "HISTOGRAM_FORWARD: edges[%zu] is NaN", i);
        NNC_CHECK(i == 0 || edges[i - 1] <= edges[i], "HISTOGRAM_FORWARD: edges must ascend (edges[%zu] %g > edges[%zu] %g)",
                  i - 1, edges[i - 1], i, edges[i]);
      }
      for (double v : x) {
        if (std::isnan(v))
          count[nan_slot]++;
        else
          count[static_cast<size_t>(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin())]++;
      }
    }
  }
  for (int i = 0; i < h.dim[0]; i++) *reinterpret_cast<int32_t*>(h.at(&i)) = static_cast<int32_t>(count[i]);
  if (output_size > 1 && outputs[1]) {
    const Layout s = layout_of(outputs[1], "stats");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    double mn = nan, mx = nan, sum = 0, sq = 0;
    for (double v : x) {
      if (std::isnan(v)) continue;
      mn = std::isnan(mn) ? v : std::min(mn, v);
      mx = std::isnan(mx) ? v : std::max(mx, v);
      sum += v, sq += v * v;
    }
    const double st[4] = {mn, mx, sum, sq};
    for (int i = 0; i < 4; i++) store_double(s.at(&i), s.datatype, st[i]);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::histogram
