// The dynamic graph (Level 4): commands run at once on tensor variables and
// are traced into a symbolic graph (the trace), which the symbolic autodiff
// differentiates on demand.
//
// Memory: a variable's storage is shared between the variable and the trace
// symbol it was written as. The trace keeps a symbol (and its storage) only
// while a later backward may read it: while a live variable names it, or a
// traced command that is still needed reads it. A traced command is needed
// while one of its outputs is; freeing a variable (or writing it again)
// prunes what nothing needs any more, so a training loop that frees its
// temporaries holds flat memory.
#pragma once

#include <cstdint>
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "core/live.hpp"

// Deferred mode: a value a recorded call will produce (its storage is set when the recording runs).
struct ccv_nnc_deferred_value_s {
  ccv_nnc_tensor_param_t info{};
  // Made by a traced call (one a later backward may differentiate), not by a
  // backward or a parameter update.
  bool traced = true;
  // Once a run made it and a variable held it: its storage. The call that
  // made it stays recorded while a live variable can reach it, so a backward
  // recorded later differentiates it; a value not kept is computed again
  // (the variable that held it was freed, and with it the storage).
  std::shared_ptr<ccv_nnc_tensor_t> storage;
  bool parts = false;  // written in parts through aliases (zeros where none is)
  // Made by a command that draws random numbers (or a custom one): never
  // computed again for a backward, so a run keeps it while its call stays recorded.
  bool keep = false;
  // A parameter update's result: written in place into this storage (the
  // parameter's, as immediate mode does), after every read of the value before.
  std::shared_ptr<ccv_nnc_tensor_t> root;
};

struct ccv_nnc_tensor_variable_s {
  ccv_nnc_dynamic_graph_s* graph = nullptr;
  bool alive = false;  // false: freed (the shell is kept for reuse, so a stale handle is reported, not followed)
  ccv_nnc_tensor_param_t info{};
  bool constant = false;
  // A base variable's storage (NULL until computed, allocated or set).
  std::shared_ptr<ccv_nnc_tensor_t> value;
  // An alias: the variable it views, where, and its header over that
  // variable's current storage (remade whenever asked for).
  ccv_nnc_tensor_variable_s* alias_of = nullptr;
  std::vector<ccv_nnc_tensor_variable_s*> aliases;  // of a base: its live aliases
  bool orphan = false;  // an alias whose base was freed: it holds the base's storage in `value` (alias_of is stale)
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
  int stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  std::unique_ptr<ccv_nnc_tensor_view_t> view;
  // The trace symbol this variable's current value is (-1: not traced).
  int symbol = -1;
  // Or the tape value it is (-1: none): traced but not yet in the trace.
  int tape = -1;
  std::vector<std::pair<ccv_nnc_tensor_variable_destructor_f, void*>> destructors;
  // Deferred mode: the recorded value this base variable will hold.
  std::shared_ptr<ccv_nnc_deferred_value_s> pending;
};

struct ccv_nnc_dynamic_graph_s {
  // Storage no variable or symbol holds any more, kept for the next tensor of
  // the same type and size (an eager loop allocates the same shapes every
  // step); ccv_nnc_dynamic_graph_gc gives it back. Declared first: it must
  // outlive everything that returns storage to it.
  std::vector<ccv_nnc_tensor_t*> pool;
  size_t pool_bytes = 0;
  bool dying = false;
  ccv_nnc_symbolic_graph_t* trace = nullptr;
  // Every variable shell made; free ones are reused.
  std::vector<std::unique_ptr<ccv_nnc_tensor_variable_s>> shells;
  std::vector<ccv_nnc_tensor_variable_s*> free_shells;
  // Per trace tensor symbol (indexed like the trace): the storage a backward
  // would read (base symbols), how many live variables name it, and how many
  // traced commands still needed read it (counted on the base).
  struct Symbol {
    std::shared_ptr<ccv_nnc_tensor_t> value;
    int named = 0;
    int readers = 0;
  };
  std::vector<Symbol> symbols;
  // The tape: the latest traced calls, not yet written into the trace (a
  // symbolic graph costs a small call more than the call itself). Anything
  // that reads the trace first moves the tape into it; a call whose outputs
  // are freed while it is on the tape leaves without ever entering it (as a
  // chain of temporaries freed at scope end does). An input is a trace symbol
  // (>= 0) or a tape value (-2 - index); -1 is none.
  static constexpr int kTapeArity = 8;
  struct TapeValue {
    std::shared_ptr<ccv_nnc_tensor_t> value;
    ccv_nnc_tensor_variable_s* owner = nullptr;  // the variable naming it, if any
    int readers = 0;  // live tape entries reading it
    int writer = -1;  // its entry
  };
  struct TapeEntry {
    ccv_nnc_cmd_t cmd{};
    ccv_nnc_hint_t hint{};
    int input_size = 0, output_size = 0;
    int inputs[kTapeArity];
    int outputs[kTapeArity];  // tape value indices, -1 for none
    bool alive = true;
  };
  std::vector<TapeEntry> tape;
  std::vector<TapeValue> tape_values;
  size_t tape_live = 0;  // entries alive
  int no_grad = 0;
  int max_concurrency = 1;
  // Memoisation (ccv_nnc_dynamic_graph_set_memoization): outputs by the
  // 128-bit hash of (command, parameters, hint, input bytes), least recently
  // used first out.
  struct MemoKey {
    uint64_t low = 0, high = 0;
    bool operator==(const MemoKey& o) const { return low == o.low && high == o.high; }
  };
  struct MemoHash {
    size_t operator()(const MemoKey& k) const { return static_cast<size_t>(k.low); }
  };
  struct MemoEntry {
    std::vector<std::shared_ptr<ccv_nnc_tensor_t>> outputs;
    size_t bytes = 0;
    std::list<MemoKey>::iterator age;
  };
  size_t memo_limit = 0, memo_bytes = 0;
  std::unordered_map<MemoKey, MemoEntry, MemoHash> memo;
  std::list<MemoKey> memo_ages;                       // most recent first
  std::unordered_set<const ccv_nnc_tensor_t*> memo_held;  // storage the cache holds
  uint64_t memo_hits = 0, memo_misses = 0;
  // Deferred mode: the calls recorded since the last flush. An input is a
  // value that existed when the call was recorded (kept alive here) or a
  // value an earlier recorded call produces; either may be viewed through
  // an alias's geometry.
  struct Source {
    std::shared_ptr<ccv_nnc_tensor_t> storage;
    std::shared_ptr<ccv_nnc_deferred_value_s> pending;
    bool alias = false;
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
    int stride[CCV_NNC_MAX_DIM_ALLOC] = {};
    ccv_nnc_tensor_param_t info{};  // what the command sees
  };
  // A recorded call, or a recorded backward: its inputs are the f values
  // (f_size of them), then the values to differentiate against; its outputs
  // the gradients, made by the symbolic autodiff over the calls recorded
  // before it when the recording is built.
  struct Record {
    bool backward = false;
    ccv_nnc_cmd_t cmd{};
    ccv_nnc_hint_t hint{};
    int flags = 0;
    std::vector<Source> inputs;  // an empty slot has neither storage nor pending
    std::vector<std::shared_ptr<ccv_nnc_deferred_value_s>> outputs;
    // An output written through an alias: its slot in `outputs` is empty and
    // here (alias set) is the view into the value `pending` (made in parts).
    std::vector<Source> views;
    bool done = false;       // run already (kept for a later backward)
    bool update = false;     // a minimizer: inputs |g|x|aux..|, outputs |x|aux..| (in place where a root is set)
    int f_size = 0;          // backward: how many inputs are f values
    std::vector<Source> df;  // backward: a seed per f (an empty slot: ones)
  };
  int deferred = 0;
  std::vector<Record> records;
  // Calls queued on streams keep their tensors alive until the stream has
  // run them: a callback queued after each call moves its references here,
  // and the graph drops them on its own thread at its next call.
  std::mutex retired_mutex;
  std::vector<std::vector<std::shared_ptr<ccv_nnc_tensor_t>>*> retired;
  std::atomic<bool> any_retired{false};  // lets a call skip the mutex when nothing waits
  // Tensor storage handed out and not yet given back (the pool excluded), and its high-water mark.
  uint64_t in_use = 0, peak = 0;
  // Trace entries dropped since the trace was last compacted (symbols are
  // never renumbered in a symbolic graph, so the trace is rebuilt with only
  // its live entries once most are dead: a long loop's trace stays small).
  size_t dropped = 0;
  ~ccv_nnc_dynamic_graph_s();
  nnc::LiveCounter<CCV_NNC_LIVE_DYNAMIC_GRAPH> live_counter_;  // ccv_nnc_live_object_count
};
