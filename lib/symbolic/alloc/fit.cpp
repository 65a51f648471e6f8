// Best-fit and first-fit placement in a given order (the decoder behind
// greedy by size), and the "fit" planner: the decoder run on several orders,
// then improved by squeaky-wheel reordering.
//
// The decoder keeps the placed blocks sorted by offset (in chunks, so an
// insertion moves little) and walks them once per block. Where blocks are
// single intervals of a total order it tests their spans four at a time;
// otherwise one bit of the block's interference row per placed block. O(n^2)
// cheap tests with no sorting, where collecting and sorting each block's
// placed neighbours cost several times more on dense lists.
//
// Candidates: the skyline placement by area (total orders; skyline.cpp),
// then the decoder on greedy by size's order (best fit, so this planner is
// never worse than greedy by size, then first fit) and, on lists of up to
// about a thousand blocks, by breadth (the most bytes live at any step of the
// block's span, so the blocks that meet at the peak are stacked first), the
// seed layout's offsets (the NNC plan's, when the caller has one), and
// breadth with longer-lived first. The best result is then reworked: blocks
// that end above the lower bound gain priority in proportion to how far above
// they end, and the decoder runs again (Joslin & Clements' squeaky wheel
// optimisation). Rounds are bounded by a count and, on larger lists, by the
// decoder's counted work, never by a clock, so the same problem always gives
// the same plan; nothing more runs once a plan meets the bound.
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <climits>
#include <numeric>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace nnc::alloc::detail {

namespace {

// Lists whose decode costs at most kSmallRound placed blocks visited (n^2 / 2
// for n blocks: up to about a thousand) get every order and kMaxWheelRounds
// rounds of the wheel, a walk that improves in jumps (the thousand-tensor
// random DAG drops from 1.0124x to 1.0043x at round 92, the unrolled LSTM
// inference list reaches its bound after round 48). Larger lists get greedy
// by size's order (best and first fit) and then the wheel while the
// decoder's visits stay within kLargeWork (some 40 ms on one core; the
// 3000-tensor random DAG gets to 1.0099x, 1.0104x with 16M, 1.0093x with 32M).
constexpr std::uint64_t kSmallRound = std::uint64_t{1} << 19;
constexpr unsigned kMaxWheelRounds = 100;
constexpr std::uint64_t kLargeWork = std::uint64_t{20} << 20;

// Total orders where every block is one tensor's interval: two blocks
// interfere exactly when their spans overlap, which a chunk tests four at a
// time from two arrays instead of one bit lookup per placed block.
bool spans_decide(const Blocks& bs) {
  if (bs.order.partial) return false;
  for (const Block& b : bs.blocks)
    if (b.members.size() != 1 || b.first < INT32_MIN || b.last > INT32_MAX) return false;
  return true;
}

// The positions k < m with first[k] <= last && last_of[k] >= first, in order.
std::size_t span_hits(const std::int32_t* first_of, const std::int32_t* last_of, std::size_t m, std::int32_t first,
                      std::int32_t last, std::uint32_t* hits) {
  std::size_t h = 0, k = 0;
#ifdef __SSE2__
  const __m128i vl = _mm_set1_epi32(last), vf = _mm_set1_epi32(first);
  for (; k + 4 <= m; k += 4) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(first_of + k));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(last_of + k));
    const __m128i apart = _mm_or_si128(_mm_cmpgt_epi32(a, vl), _mm_cmpgt_epi32(vf, b));
    for (unsigned mask = ~static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(apart))) & 0xFu; mask; mask &= mask - 1)
      hits[h++] = static_cast<std::uint32_t>(k + static_cast<std::size_t>(__builtin_ctz(mask)));
  }
#endif
  for (; k < m; k++) {
    hits[h] = static_cast<std::uint32_t>(k);
    h += (first_of[k] <= last) & (last_of[k] >= first);
  }
  return h;
}

}  // namespace

std::uint64_t fit_decode(const Blocks& bs, const std::vector<std::size_t>& order, Fit how, Layout& out, std::uint64_t* visited) {
  const std::size_t nb = bs.blocks.size();
  out.buffer.assign(nb, 0);
  out.offset.assign(nb, 0);
  out.buffers.clear();
  // Placed blocks by offset, in chunks of at most kChunk so that an
  // insertion moves little; a chunk holds parallel arrays for a tight scan.
  constexpr std::size_t kChunk = 128;
  struct Chunk {
    std::vector<std::uint64_t> lo, hi;
    std::vector<std::uint32_t> id;
    std::vector<std::int32_t> first, last;  // spans, when they decide interference
  };
  const bool by_span = spans_decide(bs);
  std::vector<Chunk> chunks(1);
  std::vector<std::uint32_t> hits(kChunk);
  std::uint64_t arena = 0, seen = 0;
  for (std::size_t b : order) {
    const Block& blk = bs.blocks[b];
    const std::uint64_t* row = &bs.itf[b * bs.words];
    std::uint64_t best = 0, best_gap = UINT64_MAX, prev_end = 0;
    bool found = false;
    for (const Chunk& c : chunks) {
      // Branch-free: the positions of the placed blocks b interferes with.
      const std::size_t m = c.id.size();
      seen += m;
      std::size_t h = 0;
      if (by_span) {
        h = span_hits(c.first.data(), c.last.data(), m, static_cast<std::int32_t>(blk.first), static_cast<std::int32_t>(blk.last),
                      hits.data());
      } else {
        for (std::size_t k = 0; k < m; k++) {
          const std::uint32_t q = c.id[k];
          hits[h] = static_cast<std::uint32_t>(k);
          h += (row[q >> 6] >> (q & 63)) & 1u;
        }
      }
      for (std::size_t j = 0; j < h; j++) {
        const std::size_t k = hits[j];
        const std::uint64_t start = align_up(prev_end, blk.align);
        if (c.lo[k] >= start && c.lo[k] - start >= blk.size) {
          // Best fit: the smallest gap; first fit: the lowest.
          const std::uint64_t gap = how == Fit::best ? c.lo[k] - prev_end : start;
          if (gap < best_gap) best_gap = gap, best = start, found = true;
        }
        prev_end = std::max(prev_end, c.hi[k]);
      }
      if (found && how == Fit::first) break;
    }
    if (!found) best = align_up(prev_end, blk.align);
    out.offset[b] = best;
    arena = std::max(arena, best + blk.size);
    // After any equal offsets: ties keep placement order, as a stable sort would.
    std::size_t ci = 0;
    while (ci + 1 < chunks.size() && !chunks[ci + 1].lo.empty() && chunks[ci + 1].lo.front() <= best) ci++;
    Chunk& c = chunks[ci];
    const auto at = std::upper_bound(c.lo.begin(), c.lo.end(), best) - c.lo.begin();
    c.lo.insert(c.lo.begin() + at, best);
    c.hi.insert(c.hi.begin() + at, best + blk.size);
    c.id.insert(c.id.begin() + at, static_cast<std::uint32_t>(b));
    if (by_span) {
      c.first.insert(c.first.begin() + at, static_cast<std::int32_t>(blk.first));
      c.last.insert(c.last.begin() + at, static_cast<std::int32_t>(blk.last));
    }
    if (c.id.size() == kChunk) {
      Chunk upper;
      const auto half = static_cast<std::ptrdiff_t>(kChunk / 2);
      upper.lo.assign(c.lo.begin() + half, c.lo.end());
      upper.hi.assign(c.hi.begin() + half, c.hi.end());
      upper.id.assign(c.id.begin() + half, c.id.end());
      c.lo.resize(kChunk / 2), c.hi.resize(kChunk / 2), c.id.resize(kChunk / 2);
      if (by_span) {
        upper.first.assign(c.first.begin() + half, c.first.end());
        upper.last.assign(c.last.begin() + half, c.last.end());
        c.first.resize(kChunk / 2), c.last.resize(kChunk / 2);
      }
      chunks.insert(chunks.begin() + static_cast<std::ptrdiff_t>(ci) + 1, std::move(upper));
    }
  }
  if (nb > 0) out.buffers.push_back(arena);
  if (visited) *visited += seen;
  return arena;
}

Layout plan_fit(const Blocks& bs, const Layout* seed) {
  const std::size_t nb = bs.blocks.size();
  Layout best;
  if (nb == 0) return best;
  const std::uint64_t bound = bound_of(bs);
  std::uint64_t best_arena = UINT64_MAX;
  std::vector<std::size_t> best_order;
  Fit best_how = Fit::best;
  Layout lay;
  // Nothing more runs once a plan meets the bound (none can be smaller).
  const std::uint64_t per_round = static_cast<std::uint64_t>(nb) * nb / 2;
  const bool small = per_round <= kSmallRound;
  std::uint64_t visited = 0;
  auto more = [&] { return best_arena > bound && (small || visited < kLargeWork); };
  auto run = [&](const std::vector<std::size_t>& order, Fit how) {
    if (!more() && !best_order.empty()) return;
    if (best_arena == bound) return;
    const std::uint64_t a = fit_decode(bs, order, how, lay, &visited);
    if (a < best_arena) {
      best_arena = a, best = lay, best_order = order, best_how = how;
    } else if (best_order.empty()) {
      best_order = order, best_how = how;  // the wheel's start when a skyline plan is best
    }
  };
  if (!bs.order.partial) {
    // Cheaper than a decode: first, so that a plan at the bound (the
    // unrolled LSTM's training list) ends the search early. Of the picks,
    // largest area first was the only one that ever won on the benchmark
    // lists.
    best_arena = skyline_decode(bs, SkylinePick::area, best);
  }

  std::vector<std::int64_t> span(nb);
  std::vector<std::uint64_t> breadth(nb, 0);
  for (std::size_t b = 0; b < nb; b++) span[b] = bs.blocks[b].last - bs.blocks[b].first;
  {
    // Bytes live per position (a block counts over its whole span), then the
    // most over each block's span.
    std::int64_t lo = bs.blocks[0].first, hi = bs.blocks[0].last;
    for (const Block& b : bs.blocks) lo = std::min(lo, b.first), hi = std::max(hi, b.last);
    const std::size_t steps = static_cast<std::size_t>(hi - lo) + 1;
    std::vector<std::int64_t> delta(steps + 1, 0);
    for (const Block& b : bs.blocks) {
      delta[static_cast<std::size_t>(b.first - lo)] += static_cast<std::int64_t>(b.size);
      delta[static_cast<std::size_t>(b.last - lo) + 1] -= static_cast<std::int64_t>(b.size);
    }
    std::vector<std::uint64_t> live(steps);
    std::int64_t c = 0;
    for (std::size_t s = 0; s < steps; s++) live[s] = static_cast<std::uint64_t>(c += delta[s]);
    // A sparse table answers each span's maximum in O(1).
    std::vector<std::vector<std::uint64_t>> table{live};
    for (std::size_t w = 1; 2 * w <= steps; w *= 2) {
      const std::vector<std::uint64_t>& prev = table.back();
      std::vector<std::uint64_t> next(steps - 2 * w + 1);
      for (std::size_t s = 0; s < next.size(); s++) next[s] = std::max(prev[s], prev[s + w]);
      table.push_back(std::move(next));
    }
    for (std::size_t b = 0; b < nb; b++) {
      const std::size_t x = static_cast<std::size_t>(bs.blocks[b].first - lo);
      const std::size_t len = static_cast<std::size_t>(span[b]) + 1;
      const std::size_t k = static_cast<std::size_t>(63 - __builtin_clzll(len));
      breadth[b] = std::max(table[k][x], table[k][x + len - (std::size_t{1} << k)]);
    }
  }
  auto size_of = [&](std::size_t b) { return bs.blocks[b].size; };
  std::vector<std::size_t> base(nb);
  std::iota(base.begin(), base.end(), 0);
  auto sorted = [&](auto less) {
    std::vector<std::size_t> o = base;
    std::stable_sort(o.begin(), o.end(), less);
    return o;
  };
  const auto by_size = sorted([&](std::size_t a, std::size_t b) {
    if (size_of(a) != size_of(b)) return size_of(a) > size_of(b);
    return span[a] > span[b];
  });
  const auto by_breadth = sorted([&](std::size_t a, std::size_t b) {
    if (breadth[a] != breadth[b]) return breadth[a] > breadth[b];
    if (size_of(a) != size_of(b)) return size_of(a) > size_of(b);
    return span[a] > span[b];
  });
  std::vector<std::size_t> by_seed;
  if (seed) {
    // The seed's blocks from the bottom up: each drops to the best gap below.
    by_seed = sorted([&](std::size_t a, std::size_t b) {
      if (seed->buffer[a] != seed->buffer[b]) return seed->buffer[a] < seed->buffer[b];
      return seed->offset[a] < seed->offset[b];
    });
  }
  // Most useful first, as far as the budget goes. Greedy by size's own
  // decode always runs, so this planner is never worse than it.
  run(by_size, Fit::best);
  run(by_size, Fit::first);
  if (small) {
    run(by_breadth, Fit::best);
    if (seed) run(by_seed, Fit::best);
    run(by_breadth, Fit::first);
    if (seed) run(by_seed, Fit::first);
  }
  const auto by_breadth_span = sorted([&](std::size_t a, std::size_t b) {
    if (breadth[a] != breadth[b]) return breadth[a] > breadth[b];
    if (span[a] != span[b]) return span[a] > span[b];
    return size_of(a) > size_of(b);
  });
  if (small) {
    run(by_breadth_span, Fit::best);
    run(by_breadth_span, Fit::first);
  }

  if (more()) {
    // Priorities from the best order's ranks; the wheel adds to them.
    std::vector<double> prio(nb);
    for (std::size_t k = 0; k < nb; k++) prio[best_order[k]] = static_cast<double>(nb - k);
    std::vector<std::size_t> order = best_order;
    Layout cur = best;
    std::uint64_t arena = best_arena;
    for (unsigned r = 0; r < kMaxWheelRounds && more(); r++) {
      const double above = static_cast<double>(arena - bound);
      for (std::size_t b = 0; b < nb; b++) {
        const std::uint64_t end = cur.offset[b] + bs.blocks[b].size;
        if (end > bound) prio[b] += 0.05 * static_cast<double>(nb) * static_cast<double>(end - bound) / above;
      }
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return prio[a] > prio[b]; });
      arena = fit_decode(bs, order, best_how, cur, &visited);
      if (arena < best_arena) best_arena = arena, best = cur;
    }
  }
  return best;
}

}  // namespace nnc::alloc::detail
