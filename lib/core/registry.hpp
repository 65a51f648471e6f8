// The command registry: what each command is (described by data, in one
// place per family) and which backends run it.
//
// A family folder under lib/cmd/<family>/ defines one register_<family>()
// function that adds its commands (forward and backward) and its kernels.
// lib/cmd/families.cpp calls every register_ function explicitly from
// ccv_nnc_init: no static-initialiser registration, which static libraries
// silently drop.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

// Output shapes from input shapes (the body of ccv_nnc_hint_tensor_auto).
using TensorAutoFn = void (*)(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                              const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size);
// Whether a pattern of present inputs/outputs can run (ccv_nnc_cmd_bitmask).
using BitmaskFn = bool (*)(const ccv_nnc_cmd_param_t& params, int input_size, int output_size, const uint64_t* inputs,
                           int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size);
// Whether output `output_idx` may (or must) share memory with input `input_idx`.
using InplaceFn = bool (*)(const ccv_nnc_cmd_param_t& params, int input_idx, int input_size, int output_idx,
                           int output_size);
// Check the tensors of one execution before any backend runs; throws nnc::Error
// (CCV_NNC_EXEC_INVALID) with a message naming what is wrong.
using ValidateFn = void (*)(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                            int input_size, ccv_nnc_tensor_t* const* outputs, int output_size);

// One command (a forward or a backward id).
struct CommandInfo {
  uint32_t cmd = 0;
  int attributes = 0;                  // CCV_NNC_CMD_ATTR_*
  TensorAutoFn tensor_auto = nullptr;  // nullptr: every output takes the first input's shape
  BitmaskFn bitmask = nullptr;         // nullptr: every input and output must be present
  InplaceFn allow_inplace = nullptr;   // nullptr: never
  InplaceFn enforce_inplace = nullptr; // nullptr: never
  ValidateFn validate = nullptr;       // nullptr: no checks beyond the kernels' own
  bool windowed = false;               // a window command: a missing hint is derived from the shapes
};

// Extra acceptance test of a kernel beyond formats / data types / memory,
// e.g. "only packed tensors" or "only 2-d". Returns true if it can run them.
using AcceptFn = bool (*)(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                          ccv_nnc_tensor_t* const* outputs, int output_size);

// One backend's implementation of one command.
struct Kernel {
  uint32_t cmd = 0;
  uint32_t backend = 0;
  int tensor_formats = 0;    // or-ed CCV_TENSOR_FORMAT_*
  int tensor_datatypes = 0;  // or-ed CCV_8U | CCV_32F | ...
  int tensor_memory = 0;     // or-ed CCV_TENSOR_CPU_MEMORY | CCV_TENSOR_GPU_MEMORY
  int algorithms = 1;        // algorithms 0 .. algorithms-1, tried by autotune
  ccv_nnc_cmd_exec_f exec = nullptr;
  ccv_nnc_cmd_autotune_f autotune = nullptr;  // optional: the backend picks its own algorithm
  AcceptFn accept = nullptr;                  // optional
  void* aux = nullptr;
  // Runs under compute_lock() using every core (OpenBLAS-backed kernels):
  // two such nodes never overlap, so graph schedules keep them on one stream.
  bool exclusive = false;
};

class Registry {
 public:
  void add_command(const CommandInfo& info);
  // Kernels of one command are kept in backend preference order (GPU before
  // CPU, optimised before reference), whatever order they are added in.
  void add_kernel(const Kernel& kernel);
  // Each (command, exec) pair as a kernel of `traits` (core/kernel.hpp): the
  // one way a family registers its kernels.
  void add_kernels(const KernelTraits& traits, KernelList execs);

  const CommandInfo* command(uint32_t cmd) const;
  // Kernels of a command in preference order (empty if none).
  std::span<const Kernel> kernels(uint32_t cmd) const;
  const Kernel* kernel(uint32_t cmd, uint32_t backend) const;
  // The command and its kernels in one search.
  struct Lookup {
    const CommandInfo* info = nullptr;
    std::span<const Kernel> kernels;
  };
  Lookup lookup(uint32_t cmd) const {
    const Entry* e = find_fast(cmd);
    if (!e) return {};
    return {&e->info, std::span<const Kernel>(e->kernels)};
  }

 private:
  struct Entry {
    CommandInfo info;
    std::vector<Kernel> kernels;
  };
  Entry* find(uint32_t cmd);
  const Entry* find(uint32_t cmd) const;
  // find, with the frozen table's probe inlined at the caller (the path of every execution).
  const Entry* find_fast(uint32_t cmd) const {
    if (slots_.empty()) return find(cmd);
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot_of(cmd);; i = (i + 1) & mask) {
      const int32_t e = slots_[i];
      if (e < 0) return nullptr;
      if (entries_[static_cast<size_t>(e)].info.cmd == cmd) return &entries_[static_cast<size_t>(e)];
    }
  }

 public:
  // Every registered command id.
  std::vector<uint32_t> commands() const;

  // Whether the command is registered (inline: ccv_nnc_cmd asks on every call).
  bool has(uint32_t cmd) const { return find_fast(cmd) != nullptr; }

 private:
  std::vector<Entry> entries_;  // sorted by id after freeze
  bool sorted_ = true;
  // After freeze: an open-addressing table of indices into entries_ (-1 empty),
  // so the lookup every execution does is one or two probes, not a binary search.
  std::vector<int32_t> slots_;
  unsigned slot_shift_ = 32;
  size_t slot_of(uint32_t cmd) const { return static_cast<size_t>((cmd * 0x9E3779B1u) >> slot_shift_); }
  friend const Registry& registry();
  void freeze();
};

// The registry, filled on first use (ccv_nnc_init calls it too).
const Registry& registry();

// Rank of a backend in the preference order (lower is preferred).
int backend_rank(uint32_t backend);

// Every family's registration function, called once by registry().
void register_all_families(Registry& registry);

// A registration run after every family's and before the registry is frozen,
// for test harnesses (test/fakegpu). Must be set before the first use of the
// registry (ccv_nnc_init); later calls have no effect and return false.
bool set_late_registration(void (*late)(Registry& registry));

// Helpers for family descriptions.
namespace shape {
// Every output gets the first input's parameters.
void same_as_first_input(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size);
// Output i gets input i's parameters (backward commands whose gradients mirror inputs use their own).
void same_as_input_i(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                     const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size);
}  // namespace shape

namespace inplace {
bool always(const ccv_nnc_cmd_param_t&, int, int, int, int);
bool same_index(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int);
}  // namespace inplace

// The first word of a bitmask array (0 when there is none): inputs / outputs 0..63.
inline uint64_t word0(const uint64_t* mask, int size) { return size > 0 ? mask[0] : 0; }

// Is bit i set in a bitmask array of `size` words?
inline bool bit(const uint64_t* mask, int size, int i) {
  return i / 64 < size && (mask[i / 64] >> (i % 64)) & 1u;
}

}  // namespace nnc
