// Skyline placement for a total order (Sekiyama et al., "Profile-guided
// memory optimization for deep neural networks", 2018, after Burke et al.'s
// best-fit heuristic for strip packing).
//
// Time runs along x, offsets along y. The skyline is the top of the placed
// blocks over each step. Each round takes the lowest stretch of the skyline
// and places there the unplaced block that fits within the stretch's steps
// and ranks first (`pick`); if none fits, the stretch is raised to its lower
// neighbour, leaving that space unused. Where greedy by size fills gaps
// left by larger blocks, this fills memory from the bottom up in time order,
// which keeps long-lived tensors that are born one after another stacked
// next to each other (the unrolled LSTM's hidden states).
//
// A block is treated as live over its whole span, which is conservative for
// blocks whose members leave holes in time; the interference rows are not
// consulted. Partial orders have no spans that decide interference, so the
// caller runs this only for total orders.
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <numeric>

namespace nnc::alloc::detail {

std::uint64_t skyline_decode(const Blocks& bs, SkylinePick pick, Layout& out) {
  const std::size_t nb = bs.blocks.size();
  out.buffer.assign(nb, 0);
  out.offset.assign(nb, 0);
  out.buffers.clear();
  if (nb == 0) return 0;
  const std::vector<Block>& bl = bs.blocks;
  std::int64_t lo = bl[0].first, hi = bl[0].last;
  for (const Block& b : bl) lo = std::min(lo, b.first), hi = std::max(hi, b.last);

  // Unplaced blocks by first step; a placed one is skipped (and the run
  // start moves past a prefix of placed ones).
  std::vector<std::uint32_t> by_first;
  by_first.reserve(nb);
  for (std::size_t b = 0; b < nb; b++)
    if (bl[b].size > 0) by_first.push_back(static_cast<std::uint32_t>(b));
  std::stable_sort(by_first.begin(), by_first.end(), [&](std::uint32_t x, std::uint32_t y) { return bl[x].first < bl[y].first; });
  std::vector<std::int64_t> firsts(by_first.size());
  for (std::size_t k = 0; k < by_first.size(); k++) firsts[k] = bl[by_first[k]].first;
  std::vector<char> placed(by_first.size(), 0);
  auto ranks_before = [&](std::size_t x, std::size_t y) {
    const Block& p = bl[x];
    const Block& q = bl[y];
    const std::int64_t sp = p.last - p.first, sq = q.last - q.first;
    switch (pick) {
      case SkylinePick::longest:
        if (sp != sq) return sp > sq;
        if (p.size != q.size) return p.size > q.size;
        break;
      case SkylinePick::largest:
        if (p.size != q.size) return p.size > q.size;
        if (sp != sq) return sp > sq;
        break;
      case SkylinePick::area: {
        const unsigned __int128 ap = static_cast<unsigned __int128>(p.size) * static_cast<std::uint64_t>(sp + 1);
        const unsigned __int128 aq = static_cast<unsigned __int128>(q.size) * static_cast<std::uint64_t>(sq + 1);
        if (ap != aq) return ap > aq;
        if (sp != sq) return sp > sq;
        break;
      }
    }
    return x < y;
  };

  struct Seg {
    std::int64_t a, b;  // steps, inclusive
    std::uint64_t h;
  };
  std::vector<Seg> sky{{lo, hi, 0}};
  std::uint64_t arena = 0;
  std::size_t left = by_first.size();
  while (left > 0) {
    std::size_t k = 0;
    for (std::size_t j = 1; j < sky.size(); j++)
      if (sky[j].h < sky[k].h) k = j;
    const Seg s = sky[k];
    std::size_t from = static_cast<std::size_t>(std::lower_bound(firsts.begin(), firsts.end(), s.a) - firsts.begin());
    std::size_t c = kNone, ci = 0;
    for (std::size_t i = from; i < by_first.size() && firsts[i] <= s.b; i++) {
      if (placed[i]) continue;
      const std::size_t b = by_first[i];
      if (bl[b].last > s.b) continue;
      if (c == kNone || ranks_before(b, c)) c = b, ci = i;
    }
    if (c == kNone) {
      // Nothing fits this stretch: raise it to its lower neighbour.
      std::uint64_t h = UINT64_MAX;
      if (k > 0) h = std::min(h, sky[k - 1].h);
      if (k + 1 < sky.size()) h = std::min(h, sky[k + 1].h);
      sky[k].h = h;
      if (k + 1 < sky.size() && sky[k + 1].h == h) {
        sky[k].b = sky[k + 1].b;
        sky.erase(sky.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      }
      if (k > 0 && sky[k - 1].h == h) {
        sky[k - 1].b = sky[k].b;
        sky.erase(sky.begin() + static_cast<std::ptrdiff_t>(k));
      }
      continue;
    }
    const Block& blk = bl[c];
    const std::uint64_t y = align_up(s.h, blk.align), top = y + blk.size;
    out.offset[c] = y;
    arena = std::max(arena, top);
    placed[ci] = 1;
    left--;
    std::vector<Seg> pieces;
    if (blk.first > s.a) pieces.push_back({s.a, blk.first - 1, s.h});
    pieces.push_back({blk.first, blk.last, top});
    if (blk.last < s.b) pieces.push_back({blk.last + 1, s.b, s.h});
    sky.erase(sky.begin() + static_cast<std::ptrdiff_t>(k));
    sky.insert(sky.begin() + static_cast<std::ptrdiff_t>(k), pieces.begin(), pieces.end());
    // The new top may meet a neighbour of the same height.
    const std::size_t m = k + (blk.first > s.a ? 1 : 0);
    if (m + 1 < sky.size() && sky[m + 1].h == top) {
      sky[m].b = sky[m + 1].b;
      sky.erase(sky.begin() + static_cast<std::ptrdiff_t>(m) + 1);
    }
    if (m > 0 && sky[m - 1].h == top) {
      sky[m - 1].b = sky[m].b;
      sky.erase(sky.begin() + static_cast<std::ptrdiff_t>(m));
    }
  }
  out.buffers.push_back(arena);
  return arena;
}

}  // namespace nnc::alloc::detail
