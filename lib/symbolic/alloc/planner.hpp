// The memory planner: a pure module that knows nothing about graphs (DESIGN §5).
//
// Usage:
//
//   nnc::alloc::Problem p;
//   p.tensors = {{.size = 1024, .first = 0, .last = 1},   // live at steps 0..1
//                {.size = 1024, .first = 1, .last = 2},
//                {.size = 1024, .first = 2, .last = 3}};
//   auto r = nnc::alloc::plan(p);            // the default: better of NNC / greedy
//   if (!r) { puts(r.error().c_str()); return; }
//   const nnc::alloc::Plan& plan = r.value();
//   // plan.arena == 2048; plan.arena_offset(2) == plan.arena_offset(0)
//   auto verdict = nnc::alloc::check(p, plan); // independent verifier
//
// The caller (the symbolic-graph compiler) turns its graph into a Problem:
// tensor sizes and alignments, liveness over an execution order (or accesses
// over a partial order of steps), alias / in-place facts, loop carried pairs
// and nested sub-graphs. Every entry point reports bad input as an error
// value; nothing here aborts on caller input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nnc::alloc {

inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// A value or a readable message. (std::expected is C++23; GCC 12 lacks it.)
template <class T>
class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  static Result failure(std::string message) {
    Result r;
    r.error_ = std::move(message);
    return r;
  }
  explicit operator bool() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const std::string& error() const { return error_; }

private:
  Result() = default;
  std::optional<T> value_;
  std::string error_;
};

// One tensor. Signed sizes so that a negative size from a caller is reported,
// not silently wrapped.
struct TensorSpec {
  std::int64_t size = 0;       // bytes
  std::int64_t alignment = 1;  // power of two; the placement's address is a multiple of it
  // Total order (Problem::partial_order == false): live from the step that
  // writes it (first) through the last step that reads it (last), inclusive.
  std::int64_t first = 0;
  std::int64_t last = 0;
  // Partial order: the steps that write / read it (indices into Problem::steps).
  std::vector<std::size_t> writes;
  std::vector<std::size_t> reads;
  // A view into another tensor: it occupies base bytes [alias_offset,
  // alias_offset + size) and keeps its base alive while it is live.
  std::size_t alias_of = kNone;
  std::int64_t alias_offset = 0;
  // Lives outside the arena (parameters, their gradients, optimiser state,
  // graph inputs): not placed, reported in Plan::external_bytes.
  bool external = false;
};

// An output that may take its input's place (an in-place safe command).
struct InPlace {
  std::size_t output = kNone;
  std::size_t input = kNone;
};

// A loop fact: what `output` holds at the end of iteration c is what `input`
// holds at the start of iteration c + 1. Inputs are live from the start of an
// iteration; outputs stay live to its end.
struct Carried {
  std::size_t output = kNone;
  std::size_t input = kNone;
};

struct Problem;

// A nested graph run by one step of its parent: a while loop (one case whose
// Problem carries Carried facts) or a case..of (several cases, of which one
// runs, so they share the same memory). It appears to the parent as one
// buffer-sized tensor, index tensors.size() + k for the k-th sub-graph.
struct SubGraph {
  std::int64_t step = 0;  // the parent step that runs it (a step index for partial orders)
  std::vector<Problem> cases;
};

enum class Planner {
  best,    // the best of nnc and fit (ties go to nnc): what the compiler uses
  nnc,     // nnc-tensor-allocation.txt: allocation graph with partial reuse, largest first
  greedy,  // TFLite's greedy by size (the baseline)
  // Skyline placement (total orders), then best and first fit in several
  // orders (greedy by size's, by breadth at the peak, the NNC plan's
  // offsets), then squeaky-wheel reordering of the blocks that end above
  // the lower bound, within a fixed work budget. Never worse than greedy.
  fit,
  // The NNC planner with libnnc's candidate choice (most interfering first,
  // paired with larger companions). Kept for comparison: on real networks it
  // starts many narrow buffers and lands well above the bound.
  nnc_interference,
};

struct Problem {
  std::vector<TensorSpec> tensors;
  bool partial_order = false;
  // Partial order only: number of steps and the "runs before" edges.
  std::size_t steps = 0;
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  // Total order only, optional: the number of steps (0: one past the largest
  // `last`). A loop body's iteration ends at step steps - 1.
  std::int64_t total_steps = 0;
  std::vector<InPlace> inplace;
  std::vector<Carried> carried;  // non-empty: this Problem is a loop body
  std::vector<SubGraph> subgraphs;
};

struct Placement {
  std::size_t buffer = kNone;  // kNone: external (not in the arena)
  std::uint64_t offset = 0;    // within the buffer
};

struct Plan {
  Planner planner = Planner::nnc;           // which planner made this plan
  std::vector<std::uint64_t> buffers;       // sizes
  std::vector<std::uint64_t> buffer_base;   // where each buffer starts in one arena
  std::uint64_t arena = 0;                  // all buffers back to back
  std::vector<Placement> placements;        // per tensor, then per sub-graph
  std::vector<bool> inplace_taken;          // per Problem::inplace entry
  std::uint64_t lower_bound = 0;            // of the order given / chosen
  std::uint64_t external_bytes = 0;
  // Loop bodies: the body is unrolled `unroll` times (1: carried pairs are
  // co-allocated); iterations[c % unroll][t] is tensor t's placement in
  // iteration c, which multi-view tensors bind. placements == iterations[0].
  unsigned unroll = 1;
  std::vector<std::vector<Placement>> iterations;
  // Per sub-graph, per case: the nested plans, with offsets relative to the
  // sub-graph's own placement in this plan.
  std::vector<std::vector<Plan>> subplans;

  std::uint64_t arena_offset(std::size_t tensor) const {
    const Placement& p = placements.at(tensor);
    return buffer_base.at(p.buffer) + p.offset;
  }
};

const char* planner_name(Planner p);

// Plans `problem` with `which`. Deterministic: the same Problem gives the same
// Plan. Debug builds run check() on the result and report a violation as an
// error.
Result<Plan> plan(const Problem& problem, Planner which = Planner::best);

// The independent verifier: no two interfering tensors overlap, every tensor
// lies inside its buffer, alignment holds, aliases sit inside their base,
// carried pairs share memory, nested plans fit their buffers. Returns "" when
// the plan is valid, else the first violation found.
std::string check(const Problem& problem, const Plan& plan);

// The largest total of bytes live at any one step of the (given or chosen)
// order, aliases counted as their base, no in-place pair taken. Plan::lower_bound
// is the same with the plan's taken in-place pairs counted once.
Result<std::uint64_t> lower_bound(const Problem& problem);

// Sum of the sizes of every arena tensor (no reuse at all).
std::uint64_t no_reuse_bytes(const Problem& problem);

// The nnc-plan text format: one tensor per line, "id bytes first_step
// last_step"; '#' starts a comment line. Errors name the line number.
struct LifetimeList {
  std::vector<std::int64_t> ids;  // as written, per tensor
  Problem problem;
};
Result<LifetimeList> parse_lifetimes(const std::string& text);
std::string format_lifetimes(const LifetimeList& list);

}  // namespace nnc::alloc
