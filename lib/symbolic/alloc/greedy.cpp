// The baseline: TensorFlow Lite's greedy by size (Pisarchyk & Lee, "Efficient
// Memory Management for Deep Neural Net Inference"). Tensors by size,
// largest first; each goes into the smallest gap between already placed
// tensors whose lifetimes overlap its own, or above all of them (fit_decode
// in fit.cpp places them).
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <numeric>

namespace nnc::alloc::detail {

Layout plan_greedy(const Blocks& bs) {
  const std::size_t nb = bs.blocks.size();
  std::vector<std::size_t> order(nb);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Block& x = bs.blocks[a];
    const Block& y = bs.blocks[b];
    if (x.size != y.size) return x.size > y.size;
    // Longer-lived first among equals: they constrain more.
    return (x.last - x.first) > (y.last - y.first);
  });
  Layout out;
  fit_decode(bs, order, Fit::best, out);
  return out;
}

}  // namespace nnc::alloc::detail
