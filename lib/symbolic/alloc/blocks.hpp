// Internal to the planner: the problem reduced to blocks (a base tensor with
// its aliases, in-place partners and forced companions) and their
// interference. Both planners and the lower bound work on blocks; the checker
// deliberately does not (it re-derives everything from the Problem).
#pragma once

#include "symbolic/alloc/planner.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nnc::alloc::detail {

// The execution order: for a total order the steps themselves; for a partial
// order a deterministic linearisation (used for the bound and for measuring
// how tightly two tensors follow each other) plus reachability (used for
// interference: two tensors may share memory only if one is finished before
// the other starts in every linearisation).
struct Order {
  bool partial = false;
  std::vector<std::int64_t> pos;            // partial: position of each step
  std::size_t words = 0;                    // partial: 64-bit words per reach row
  std::vector<std::uint64_t> reach;         // partial: row s, bit t: s runs strictly before t
  bool reaches(std::size_t s, std::size_t t) const {
    return (reach[s * words + t / 64] >> (t % 64)) & 1u;
  }
};

// One base tensor's liveness (its aliases folded in).
struct Member {
  std::size_t tensor = kNone;
  std::int64_t first = 0, last = 0;  // positions in the (linearised) order
  std::vector<std::size_t> writes, reads;  // partial order only
};

struct Block {
  std::uint64_t size = 0;   // the largest member
  std::uint64_t align = 1;  // the largest alignment of any tensor in it
  std::vector<Member> members;
  std::int64_t first = 0, last = 0;  // span of all members
};

struct Blocks {
  Order order;
  std::vector<Block> blocks;
  std::vector<std::size_t> block_of;          // per tensor; kNone when external
  std::vector<std::uint64_t> offset_in_block;  // per tensor (alias offsets)
  std::vector<bool> inplace_taken;
  std::size_t words = 0;
  std::vector<std::uint64_t> itf;  // block interference, row-major bitset
  std::uint64_t external_bytes = 0;

  bool interferes(std::size_t a, std::size_t b) const {
    return (itf[a * words + b / 64] >> (b % 64)) & 1u;
  }
  // Every member of a is finished before any member of b starts.
  bool before(std::size_t a, std::size_t b) const;
};

// "" or the first problem found with the caller's input (sub-graphs excluded).
std::string validate(const Problem& problem);

Result<Order> make_order(const Problem& problem);

// Builds blocks. `forced` lists groups of tensors that must share one
// placement (loop carried values after unrolling); the caller guarantees they
// do not interfere.
Result<Blocks> build_blocks(const Problem& problem, const std::vector<std::vector<std::size_t>>& forced);

// The largest total of block bytes live at one position.
std::uint64_t bound_of(const Blocks& blocks);

// A planner's answer for blocks: a buffer and offset per block.
struct Layout {
  std::vector<std::size_t> buffer;
  std::vector<std::uint64_t> offset;
  std::vector<std::uint64_t> buffers;
};

// Which tensors a round of the NNC planner starts from: the most interfering
// (paired with larger companions, libnnc's choice) or the largest (the
// seed's first description).
enum class NncSelection { interference_first, size_first };
Layout plan_nnc(const Blocks& blocks, NncSelection selection);
Layout plan_greedy(const Blocks& blocks);

// Places blocks in `order`, each in the smallest (Fit::best) or lowest
// (Fit::first) gap between the placed blocks it interferes with that fits
// it, else above them all (one buffer). Returns the buffer's size.
enum class Fit { best, first };
// `visited`, when given, gains the number of placed blocks the decoder
// looked at (its work, counted rather than timed so budgets stay deterministic).
std::uint64_t fit_decode(const Blocks& blocks, const std::vector<std::size_t>& order, Fit how, Layout& out,
                         std::uint64_t* visited = nullptr);
// Total orders only: skyline placement (skyline.cpp), each round putting
// into the lowest stretch of the skyline the fitting block that ranks first
// by `pick`. Returns the buffer's size.
enum class SkylinePick { longest, largest, area };
std::uint64_t skyline_decode(const Blocks& blocks, SkylinePick pick, Layout& out);
// The best of fit_decode over several orders (greedy by size's among them,
// and `seed`'s offsets when given), improved by squeaky-wheel reordering.
Layout plan_fit(const Blocks& blocks, const Layout* seed);

// A loop body unrolled until every carried pair can share memory: `unrolled`
// holds `unroll` copies of the body back to back (copy j's tensor t is index
// j * n + t), and `classes` the tensors that are one value across copies.
struct Unrolled {
  unsigned unroll = 1;
  Problem problem;
  std::vector<std::vector<std::size_t>> classes;
};
inline constexpr unsigned kMaxUnroll = 16;
Result<Unrolled> unroll_loop(const Problem& body);

// `a` is a power of two (validate() sees to it).
inline std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace nnc::alloc::detail
