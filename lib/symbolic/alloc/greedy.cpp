// The baseline: TensorFlow Lite's greedy by size (Pisarchyk & Lee, "Efficient
// Memory Management for Deep Neural Net Inference"). Tensors by size,
// largest first; each goes into the smallest gap between already placed
// tensors whose lifetimes overlap its own, or above all of them.
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <numeric>

namespace nnc::alloc::detail {

Layout plan_greedy(const Blocks& bs) {
  const std::size_t nb = bs.blocks.size();
  Layout out;
  out.buffer.assign(nb, 0);
  out.offset.assign(nb, 0);
  std::vector<std::size_t> order(nb);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Block& x = bs.blocks[a];
    const Block& y = bs.blocks[b];
    if (x.size != y.size) return x.size > y.size;
    // Longer-lived first among equals: they constrain more.
    return (x.last - x.first) > (y.last - y.first);
  });
  std::vector<std::uint64_t> placed(bs.words, 0);  // bitset: which blocks have offsets
  std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;  // [offset, end) of interfering placed blocks
  std::uint64_t arena = 0;
  for (std::size_t b : order) {
    const Block& blk = bs.blocks[b];
    busy.clear();
    // Placed neighbours in the interference graph, a word of the bitsets at a time.
    for (std::size_t w = 0; w < bs.words; w++) {
      std::uint64_t bits = bs.itf[b * bs.words + w] & placed[w];
      while (bits) {
        const std::size_t q = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        bits &= bits - 1;
        busy.emplace_back(out.offset[q], out.offset[q] + bs.blocks[q].size);
      }
    }
    std::sort(busy.begin(), busy.end());
    std::uint64_t best = 0, best_gap = UINT64_MAX, prev_end = 0;
    bool found = false;
    for (const auto& [lo, hi] : busy) {
      const std::uint64_t start = align_up(prev_end, blk.align);
      if (lo >= start && lo - start >= blk.size) {
        const std::uint64_t gap = lo - prev_end;
        if (gap < best_gap) best_gap = gap, best = start, found = true;
      }
      prev_end = std::max(prev_end, hi);
    }
    if (!found) best = align_up(prev_end, blk.align);
    out.offset[b] = best;
    arena = std::max(arena, best + blk.size);
    placed[b / 64] |= std::uint64_t{1} << (b % 64);
  }
  if (nb > 0) out.buffers.push_back(arena);
  return out;
}

}  // namespace nnc::alloc::detail
