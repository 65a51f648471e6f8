// Commands: creation, backend choice, execution, autotune, and hints.
//
// ccv_nnc_cmd_exec is on every hot path (a graph node is one call), so the
// common case allocates nothing: validation walks the tensor arrays once,
// kernel choice walks a short preference-ordered list.
#include "core/cmd.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/declined.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/gpu_stream.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace {

struct NameEntry {
  uint32_t id;
  const char* name;
};

constexpr NameEntry kCommandNames[] = {
#include "cmd/command_names.inc"
};

constexpr NameEntry kBackendNames[] = {
#include "cmd/backend_names.inc"
};

// The generated tables sorted by id at compile time, so that a name lookup
// (which ccv_nnc_cmd does on every call, to reject unknown ids) is a binary
// search rather than a walk over every command.
template <size_t N>
constexpr std::array<NameEntry, N> sorted_by_id(const NameEntry (&table)[N]) {
  std::array<NameEntry, N> out{};
  for (size_t i = 0; i < N; i++) out[i] = table[i];
  std::sort(out.begin(), out.end(), [](const NameEntry& a, const NameEntry& b) { return a.id < b.id; });
  return out;
}
constexpr auto kSortedCommandNames = sorted_by_id(kCommandNames);
constexpr auto kSortedBackendNames = sorted_by_id(kBackendNames);

template <size_t N>
const char* lookup(const std::array<NameEntry, N>& table, uint32_t id) {
  auto it = std::lower_bound(table.begin(), table.end(), id, [](const NameEntry& e, uint32_t x) { return e.id < x; });
  return it != table.end() && it->id == id ? it->name : nullptr;
}

// The registry through a reference cached in this file: its guard check is
// inlined where registry() would be a call on every execution.
inline const Registry& reg() {
  static const Registry& r = registry();
  return r;
}

bool is_special(uint32_t cmd) {
  return cmd == CCV_NNC_NOOP || cmd == CCV_NNC_CUSTOM_FORWARD || cmd == CCV_NNC_CUSTOM_BACKWARD ||
         cmd == CCV_NNC_GRAPH_FORWARD || cmd == CCV_NNC_GRAPH_BACKWARD;
}

const char* describe(uint32_t cmd) {
  const char* name = cmd_name(cmd);
  return name ? name : "an unknown command";
}

// Why a tensor argument failed the quick check, as an Error. Kept out of
// line so that the checks of every execution stay a few instructions without
// spills around the message formatting.
[[noreturn, gnu::noinline, gnu::cold]] void bad_tensor(const ccv_nnc_tensor_t* t, const char* kind, int index, uint32_t cmd) {
  if (CCV_IS_TENSOR_MULTIVIEW(t))
    fail(CCV_NNC_EXEC_INVALID, "%s: %s %d is a multi-view tensor; only graphs can bind those", describe(cmd), kind, index);
  const int nd = nd_of(t->info.dim);
  if (nd == 0) fail(CCV_NNC_EXEC_INVALID, "%s: %s %d has no dimensions", describe(cmd), kind, index);
  if (!datatype_supported(CCV_GET_DATA_TYPE(t->info.datatype)))
    fail(CCV_NNC_EXEC_INVALID, "%s: %s %d has unsupported data type 0x%x", describe(cmd), kind, index,
         t->info.datatype);
  if (!t->data.ptr) fail(CCV_NNC_EXEC_INVALID, "%s: %s %d has no data", describe(cmd), kind, index);
  fail(CCV_NNC_EXEC_INVALID, "%s: %s %d has a bad shape (%s)", describe(cmd), kind, index, shape_string(t->info.dim).c_str());
}

// Check one (non-NULL) tensor argument of an execution.
inline void check_tensor(const ccv_nnc_tensor_t* t, const char* kind, int index, uint32_t cmd) {
  constexpr int kSupported = CCV_8U | CCV_32S | CCV_32F | CCV_64S | CCV_64F | CCV_16F | CCV_16BF;
  const int dt = CCV_GET_DATA_TYPE(t->info.datatype);
  const bool ok = !CCV_IS_TENSOR_MULTIVIEW(t) && t->info.dim[0] > 0 && (dt & kSupported) && !(dt & (dt - 1)) && t->data.ptr;
  if (__builtin_expect(!ok, 0)) bad_tensor(t, kind, index, cmd);
}

[[gnu::always_inline]] inline bool accepts(const Kernel& k, const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
             ccv_nnc_tensor_t* const* outputs, int output_size) {
  auto ok = [&](const ccv_nnc_tensor_t* t) {
    if (!t) return true;
    return (k.tensor_memory & CCV_TENSOR_GET_MEMORY(t->info.type)) && (k.tensor_formats & t->info.format) &&
           (k.tensor_datatypes & CCV_GET_DATA_TYPE(t->info.datatype));
  };
  for (int i = 0; i < input_size; i++)
    if (!ok(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!ok(outputs[i])) return false;
  return !k.accept || k.accept(cmd, inputs, input_size, outputs, output_size);
}

[[noreturn]] void no_kernel(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                            ccv_nnc_tensor_t* const* outputs, int output_size) {
  std::string what;
  auto add = [&](const ccv_nnc_tensor_t* t) {
    if (!what.empty()) what += ", ";
    if (!t) {
      what += "-";
      return;
    }
    what += format("%s %s %s %s", CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY ? "GPU" : "CPU",
                   datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)), format_name(t->info.format),
                   shape_string(t->info.dim).c_str());
  };
  for (int i = 0; i < input_size; i++) add(inputs[i]);
  what += " ->";
  for (int i = 0; i < output_size; i++) add(outputs[i]);
  if (cmd.backend) {
    const char* b = backend_name(cmd.backend);
    fail(CCV_NNC_EXEC_NO_KERNEL, "%s: backend %s cannot run these tensors (%s)", describe(cmd.cmd),
         b ? b : "(unknown backend)", what.c_str());
  }
  fail(CCV_NNC_EXEC_NO_KERNEL, "%s: no backend accepts these tensors (%s)", describe(cmd.cmd), what.c_str());
}

[[gnu::always_inline]] inline const Kernel* choose_kernel(const ccv_nnc_cmd_t& cmd, std::span<const Kernel> kernels, ccv_nnc_tensor_t* const* inputs,
                            int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (cmd.backend) {
    const Kernel* k = nullptr;
    for (const Kernel& c : kernels)
      if (c.backend == cmd.backend) k = &c;
    if (!k) {
      const char* b = backend_name(cmd.backend);
      if (!b) fail(CCV_NNC_EXEC_NO_KERNEL, "%s: unknown backend id 0x%x", describe(cmd.cmd), cmd.backend);
      fail(CCV_NNC_EXEC_NO_KERNEL, "%s: backend %s does not implement it", describe(cmd.cmd), b);
    }
    if (!accepts(*k, cmd, inputs, input_size, outputs, output_size)) no_kernel(cmd, inputs, input_size, outputs, output_size);
    return k;
  }
  for (const Kernel& k : kernels)
    if (accepts(k, cmd, inputs, input_size, outputs, output_size)) return &k;
  no_kernel(cmd, inputs, input_size, outputs, output_size);
}

// After `declined` (one of `kernels`) threw Declined for this call: the next
// kernel in preference order that accepts it. Throws when the caller named the
// backend (the refusal stands) or when no later kernel accepts the call.
[[gnu::noinline, gnu::cold]] const Kernel* next_after_decline(const ccv_nnc_cmd_t& cmd, std::span<const Kernel> kernels,
                                                            const Kernel* declined, const Declined& why,
                                                            ccv_nnc_tensor_t* const* inputs, int input_size,
                                                            ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (cmd.backend) throw why;
  bool after = false;
  for (const Kernel& k : kernels) {
    if (after && accepts(k, cmd, inputs, input_size, outputs, output_size)) return &k;
    if (&k == declined) after = true;
  }
  const char* b = backend_name(declined->backend);
  fail(CCV_NNC_EXEC_NO_KERNEL, "%s: backend %s declined these tensors at run time (%s), and no backend after it accepts them",
       describe(cmd.cmd), b ? b : "(unknown backend)", why.what());
}

// Shared checks of an execution; returns the command's description (NULL for
// the special commands).
[[noreturn, gnu::noinline, gnu::cold]] void bad_arguments(const ccv_nnc_cmd_t& cmd, int flags, ccv_nnc_tensor_t* const* inputs,
                                                          int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  NNC_CHECK(input_size >= 0 && output_size >= 0, "%s: negative tensor count (%d inputs, %d outputs)",
            describe(cmd.cmd), input_size, output_size);
  NNC_CHECK(input_size == 0 || inputs, "%s: %d inputs but the input array is NULL", describe(cmd.cmd), input_size);
  NNC_CHECK(output_size == 0 || outputs, "%s: %d outputs but the output array is NULL", describe(cmd.cmd), output_size);
  NNC_CHECK(!(flags & CCV_NNC_ACCUMULATE_OUTPUT), "%s: CCV_NNC_ACCUMULATE_OUTPUT is not supported", describe(cmd.cmd));
  fail(CCV_NNC_EXEC_INVALID, "%s: bad arguments", describe(cmd.cmd));
}

[[gnu::always_inline]] inline Registry::Lookup validate(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
                            ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                            int output_size) {
  if (__builtin_expect(input_size < 0 || output_size < 0 || (input_size && !inputs) || (output_size && !outputs) ||
                           (flags & CCV_NNC_ACCUMULATE_OUTPUT),
                       0))
    bad_arguments(cmd, flags, inputs, input_size, outputs, output_size);
  for (int i = 0; i < input_size; i++)
    if (inputs[i]) check_tensor(inputs[i], "input", i, cmd.cmd);
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) check_tensor(outputs[i], "output", i, cmd.cmd);
  if (is_special(cmd.cmd)) return {};
  const Registry::Lookup l = reg().lookup(cmd.cmd);
  if (!l.info) {
    if (!cmd_name(cmd.cmd)) fail(CCV_NNC_EXEC_INVALID, "unknown command id 0x%x", cmd.cmd);
    fail(CCV_NNC_EXEC_NO_KERNEL, "%s is not implemented in this build", describe(cmd.cmd));
  }
  if (l.info->validate) l.info->validate(cmd, hint, inputs, input_size, outputs, output_size);
  return l;
}

// Kernels write with streaming stores only outputs of kStreamFloorBytes or
// more (core/parallel.hpp), and parallel_for fences each chunk itself; the
// fence after a kernel is owed only when an output is that big. For small
// commands the fence was a measurable part of a call.
bool may_have_streamed(ccv_nnc_tensor_t* const* outputs, int output_size) {
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t* t = outputs[i];
    if (!t) continue;
    size_t n;
    switch (CCV_GET_DATA_TYPE(t->info.datatype)) {  // validated already: one of these
      case CCV_8U: n = 1; break;
      case CCV_16F: case CCV_16BF: n = 2; break;
      case CCV_32S: case CCV_32F: n = 4; break;
      default: n = 8; break;
    }
    for (int d = 0; d < kMaxDim && t->info.dim[d] > 0; d++) n *= static_cast<size_t>(t->info.dim[d]);
    if (n >= kStreamFloorBytes) return true;
  }
  return false;
}

int run_custom(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* inputs,
               int input_size, ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream) {
  NNC_CHECK(cmd.isa && cmd.isa->exec, "%s: the command has no exec function (isa is NULL)", describe(cmd.cmd));
  const int code = cmd.isa->exec(cmd, hint, flags, inputs, input_size, outputs, output_size, stream);
  if (code != CCV_NNC_EXEC_SUCCESS && error_message().empty())
    set_error_message(format("%s: the custom exec function returned %d", describe(cmd.cmd), code));
  return code;
}

}  // namespace

const char* cmd_name(uint32_t cmd) { return lookup(kSortedCommandNames, cmd); }
const char* backend_name(uint32_t backend) { return lookup(kSortedBackendNames, backend); }

[[gnu::always_inline]] inline int run_kernel(const ccv_nnc_cmd_t& cmd, const Registry::Lookup& l, const ccv_nnc_hint_t& hint, int flags,
               ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
               ccv_nnc_stream_context_t* stream);

ccv_nnc_cmd_t make_cmd(uint32_t cmd, ccv_nnc_cmd_vtab_t* isa, const ccv_nnc_cmd_param_t& params, int flags) {
  (void)flags;
  // Field by field: a memset of the whole 152 bytes (rep stos) was most of
  // this function's time. Every byte outside the fields is still cleared (the
  // padding before info and between info and isa), since commands are
  // compared and hashed as bytes (the graph's command interning).
  ccv_nnc_cmd_t c;
  std::memset(&c, 0, offsetof(ccv_nnc_cmd_t, info));
  constexpr size_t kInfoEnd = offsetof(ccv_nnc_cmd_t, info) + sizeof(ccv_nnc_cmd_param_t);
  std::memset(reinterpret_cast<unsigned char*>(&c) + kInfoEnd, 0, offsetof(ccv_nnc_cmd_t, isa) - kInfoEnd);
  c.info = params;
  c.algorithm = -1;
  c.isa = nullptr;
  c.data = nullptr;
  // Registered commands (every one a program can run) by the registry's hash;
  // the name table only for ids registered nowhere.
  if (!reg().has(cmd) && !cmd_name(cmd)) {
    set_error_message(format("ccv_nnc_cmd: unknown command id 0x%x; made a NOOP instead", cmd));
    c.cmd = CCV_NNC_NOOP;
    return c;
  }
  c.cmd = cmd;
  if (cmd == CCV_NNC_CUSTOM_FORWARD || cmd == CCV_NNC_CUSTOM_BACKWARD) c.isa = isa;
  return c;
}

int cmd_exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& given_hint, int flags, ccv_nnc_tensor_t* const* inputs, int input_size,
             ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream) {
  if (stream) stream_take_held(stream);  // a failure the last wait reported comes back here, once
  const Registry::Lookup l = validate(cmd, given_hint, flags, inputs, input_size, outputs, output_size);
  const CommandInfo* info = l.info;
  const ccv_nnc_hint_t& hint = given_hint;
  if (cmd.cmd == CCV_NNC_NOOP) return CCV_NNC_EXEC_SUCCESS;
  if (cmd.cmd == CCV_NNC_GRAPH_FORWARD || cmd.cmd == CCV_NNC_GRAPH_BACKWARD)
    fail(CCV_NNC_EXEC_INVALID, "%s runs only inside a graph", describe(cmd.cmd));
  if (!info) {  // custom command
    NNC_CHECK(cmd.isa && cmd.isa->exec, "%s: the command has no exec function (isa is NULL)", describe(cmd.cmd));
    if (!stream) return run_custom(cmd, hint, flags, inputs, input_size, outputs, output_size, nullptr);
    if (is_gpu_stream(stream)) {
      const int code = gpu_stream_exec(stream, cmd.isa->exec, false, cmd, hint, flags, inputs, input_size, outputs, output_size);
      if (code != CCV_NNC_EXEC_SUCCESS && error_message().empty())
        set_error_message(format("%s: the custom exec function returned %d", describe(cmd.cmd), code));
      return code;
    }
    stream_enqueue_command(stream, cmd.isa->exec, 0, cmd, hint, flags, inputs, input_size, outputs, output_size);
    return CCV_NNC_EXEC_SUCCESS;
  }
  if (info->windowed && is_no_hint(hint) && input_size > 0 && output_size > 0 && inputs[0] && outputs[0]) {
    const ccv_nnc_hint_t derived = hint_auto(cmd.info, inputs[0]->info, outputs[0]->info);
    return run_kernel(cmd, l, derived, flags, inputs, input_size, outputs, output_size, stream);
  }
  return run_kernel(cmd, l, hint, flags, inputs, input_size, outputs, output_size, stream);
}

inline int run_kernel(const ccv_nnc_cmd_t& cmd, const Registry::Lookup& l, const ccv_nnc_hint_t& hint, int flags,
               ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
               ccv_nnc_stream_context_t* stream) {
  const Kernel* k = choose_kernel(cmd, l.kernels, inputs, input_size, outputs, output_size);
  if (!stream) {
    int code;
    for (;;) {
      try {
        code = k->exec(cmd, hint, flags, inputs, input_size, outputs, output_size, nullptr);
        break;
      } catch (const Declined& why) {
        k = next_after_decline(cmd, l.kernels, k, why, inputs, input_size, outputs, output_size);
      }
    }
    if (may_have_streamed(outputs, output_size)) store_fence();
    if (code != CCV_NNC_EXEC_SUCCESS && error_message().empty())
      set_error_message(format("%s: backend %s failed with %d", describe(cmd.cmd), backend_name(k->backend), code));
    return code;
  }
  if (is_gpu_stream(stream)) {
    int code;
    for (;;) {
      try {
        const bool device_kernel = (k->tensor_memory & CCV_TENSOR_GPU_MEMORY) != 0;
        code = gpu_stream_exec(stream, k->exec, device_kernel, cmd, hint, flags, inputs, input_size, outputs, output_size);
        break;
      } catch (const Declined& why) {
        k = next_after_decline(cmd, l.kernels, k, why, inputs, input_size, outputs, output_size);
      }
    }
    if (code != CCV_NNC_EXEC_SUCCESS && error_message().empty())
      set_error_message(format("%s: backend %s failed with %d", describe(cmd.cmd), backend_name(k->backend), code));
    return code;
  }
  stream_enqueue_command(stream, k->exec, k->backend, cmd, hint, flags, inputs, input_size, outputs, output_size);
  return CCV_NNC_EXEC_SUCCESS;
}

PreparedExec prepare_exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* inputs,
                          int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const Registry::Lookup l = validate(cmd, hint, flags, inputs, input_size, outputs, output_size);
  PreparedExec p;
  p.hint = hint;
  if (cmd.cmd == CCV_NNC_NOOP) return p;
  if (cmd.cmd == CCV_NNC_GRAPH_FORWARD || cmd.cmd == CCV_NNC_GRAPH_BACKWARD)
    fail(CCV_NNC_EXEC_INVALID, "%s runs only inside a graph", describe(cmd.cmd));
  if (!l.info) {  // custom command
    NNC_CHECK(cmd.isa && cmd.isa->exec, "%s: the command has no exec function (isa is NULL)", describe(cmd.cmd));
    p.exec = cmd.isa->exec;
    return p;
  }
  if (l.info->windowed && is_no_hint(hint) && input_size > 0 && output_size > 0 && inputs[0] && outputs[0])
    p.hint = hint_auto(cmd.info, inputs[0]->info, outputs[0]->info);
  const Kernel* k = choose_kernel(cmd, l.kernels, inputs, input_size, outputs, output_size);
  p.exec = k->exec;
  p.backend = k->backend;
  p.exclusive = k->exclusive;
  p.device = (k->tensor_memory & CCV_TENSOR_GPU_MEMORY) != 0;
  return p;
}

PreparedExec prepare_exec_after_decline(const ccv_nnc_cmd_t& cmd, const PreparedExec& declined, const Declined& why,
                                        ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                        int output_size) {
  const std::span<const Kernel> kernels = reg().lookup(cmd.cmd).kernels;
  const Kernel* d = nullptr;
  for (const Kernel& k : kernels)
    if (k.backend == declined.backend) d = &k;
  if (!d || cmd.backend) throw why;
  const Kernel* k = next_after_decline(cmd, kernels, d, why, inputs, input_size, outputs, output_size);
  PreparedExec p = declined;
  p.exec = k->exec;
  p.backend = k->backend;
  p.exclusive = k->exclusive;
  p.device = (k->tensor_memory & CCV_TENSOR_GPU_MEMORY) != 0;
  return p;
}

uint32_t find_backend(const ccv_nnc_cmd_t& cmd, int memory, int formats, int datatypes) {
  static const int kLastGpu = backend_rank(CCV_NNC_BACKEND_MPS);
  for (const Kernel& k : registry().kernels(cmd.cmd)) {
    // A GPU backend that also takes CPU tensors (the COMM_ commands across
    // processes, for pairs with one side in each) is not the answer for CPU
    // memory alone, as in libnnc.
    if (!(memory & CCV_TENSOR_GPU_MEMORY) && backend_rank(k.backend) <= kLastGpu) continue;
    if ((k.tensor_memory & memory) == memory && (k.tensor_formats & formats) == formats &&
        (k.tensor_datatypes & datatypes) == datatypes)
      return k.backend;
  }
  return CCV_NNC_NO_BACKEND;
}

ccv_nnc_cmd_t cmd_autotune(const ccv_nnc_cmd_t& cmd, size_t max_workspace_size, const ccv_nnc_hint_t& hint, int flags,
                           ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                           int output_size, ccv_nnc_stream_context_t* stream) {
  const CommandInfo* info = validate(cmd, hint, flags, inputs, input_size, outputs, output_size).info;
  if (!info) return cmd;
  ccv_nnc_hint_t h = hint;
  if (info->windowed && is_no_hint(h) && input_size > 0 && output_size > 0 && inputs[0] && outputs[0])
    h = hint_auto(cmd.info, inputs[0]->info, outputs[0]->info);
  // Timing runs overwrite the outputs; if an output is also an input, running
  // more than once would change the inputs of later runs. Keep the default.
  for (int i = 0; i < output_size; i++)
    for (int j = 0; j < input_size; j++)
      if (outputs[i] && inputs[j] && outputs[i]->data.ptr == inputs[j]->data.ptr) return cmd;
  if (stream) stream_wait(stream);
  ccv_nnc_cmd_t best = cmd;
  double best_time = std::numeric_limits<double>::infinity();
  for (const Kernel& k : registry().kernels(cmd.cmd)) {
    if (cmd.backend && k.backend != cmd.backend) continue;
    if (!accepts(k, cmd, inputs, input_size, outputs, output_size)) continue;
    ccv_nnc_cmd_t candidate = cmd;
    candidate.backend = k.backend;
    if (k.autotune) {
      candidate.algorithm = k.autotune(candidate, max_workspace_size, h, flags, inputs, input_size, outputs, output_size, nullptr);
    }
    const int first = k.autotune ? candidate.algorithm : 0;
    const int last = k.autotune ? candidate.algorithm : std::max(k.algorithms, 1) - 1;
    for (int a = first; a <= last; a++) {
      candidate.algorithm = a;
      // Kernels throw on what they cannot run (core/kernel.hpp): a candidate
      // that fails is skipped, not the whole search.
      const auto trial = [&] {
        return guard_code([&] { return k.exec(candidate, h, flags, inputs, input_size, outputs, output_size, nullptr); });
      };
      if (trial() != CCV_NNC_EXEC_SUCCESS) continue;
      double t = std::numeric_limits<double>::infinity();
      for (int rep = 0; rep < 3; rep++) {
        const auto start = std::chrono::steady_clock::now();
        trial();
        t = std::min(t, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      if (t < best_time) {
        best_time = t;
        best = candidate;
      }
    }
  }
  clear_error_message();
  store_fence();  // the timing runs' streaming stores
  return best;
}

int cmd_bitmask(const ccv_nnc_cmd_t& cmd, int input_size, int output_size, const uint64_t* input_bitmasks,
                int input_bitmask_size, const uint64_t* output_bitmasks, int output_bitmask_size) {
  NNC_CHECK(input_size >= 0 && output_size >= 0 && input_bitmask_size >= 0 && output_bitmask_size >= 0,
            "ccv_nnc_cmd_bitmask: negative sizes");
  NNC_CHECK(input_bitmask_size == 0 || input_bitmasks, "ccv_nnc_cmd_bitmask: input_bitmasks is NULL");
  NNC_CHECK(output_bitmask_size == 0 || output_bitmasks, "ccv_nnc_cmd_bitmask: output_bitmasks is NULL");
  if (cmd.cmd == CCV_NNC_NOOP || cmd.cmd == CCV_NNC_CUSTOM_FORWARD || cmd.cmd == CCV_NNC_CUSTOM_BACKWARD) return 1;
  const CommandInfo* info = registry().command(cmd.cmd);
  if (!info) return 0;
  if (info->bitmask)
    return info->bitmask(cmd.info, input_size, output_size, input_bitmasks, input_bitmask_size, output_bitmasks,
                         output_bitmask_size) ? 1 : 0;
  for (int i = 0; i < input_size; i++)
    if (!bit(input_bitmasks, input_bitmask_size, i)) return 0;
  for (int i = 0; i < output_size; i++)
    if (!bit(output_bitmasks, output_bitmask_size, i)) return 0;
  return 1;
}

int cmd_inplace(const ccv_nnc_cmd_t& cmd, int input_idx, int input_size, int output_idx, int output_size, bool enforce) {
  if (input_idx < 0 || input_idx >= input_size || output_idx < 0 || output_idx >= output_size) return 0;
  const CommandInfo* info = registry().command(cmd.cmd);
  if (!info) return 0;
  const InplaceFn f = enforce ? info->enforce_inplace : info->allow_inplace;
  return f && f(cmd.info, input_idx, input_size, output_idx, output_size) ? 1 : 0;
}

void hint_tensor_auto(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_param_t* inputs, int input_size,
                      const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size) {
  NNC_CHECK(input_size >= 0 && output_size >= 0, "ccv_nnc_hint_tensor_auto: negative sizes");
  NNC_CHECK(input_size == 0 || inputs, "ccv_nnc_hint_tensor_auto: inputs is NULL");
  NNC_CHECK(output_size == 0 || outputs, "ccv_nnc_hint_tensor_auto: outputs is NULL");
  if (output_size == 0) return;
  // Compute into a scratch copy so a failure leaves the outputs untouched.
  std::vector<ccv_nnc_tensor_param_t> out(outputs, outputs + output_size);
  if (cmd.cmd == CCV_NNC_CUSTOM_FORWARD || cmd.cmd == CCV_NNC_CUSTOM_BACKWARD) {
    if (cmd.isa && cmd.isa->tensor_auto)
      cmd.isa->tensor_auto(cmd, inputs, input_size, hint, out.data(), output_size);
    else
      shape::same_as_first_input(cmd.info, inputs, input_size, hint, out.data(), output_size);
  } else if (cmd.cmd == CCV_NNC_NOOP) {
    return;
  } else {
    const CommandInfo* info = registry().command(cmd.cmd);
    NNC_CHECK(info || cmd_name(cmd.cmd), "ccv_nnc_hint_tensor_auto: unknown command id 0x%x", cmd.cmd);
    const TensorAutoFn f = info && info->tensor_auto ? info->tensor_auto : shape::same_as_first_input;
    f(cmd.info, inputs, input_size, hint, out.data(), output_size);
  }
  std::copy(out.begin(), out.end(), outputs);
}

bool is_no_hint(const ccv_nnc_hint_t& hint) {
  static const ccv_nnc_hint_t zero = {};
  return std::memcmp(&hint, &zero, sizeof(hint)) == 0;
}

int spatial_offset(const ccv_nnc_tensor_param_t& params, int* count) {
  const int nd = nd_of(params.dim);
  *count = 0;
  switch (params.format) {
    case CCV_TENSOR_FORMAT_NHWC:  // [N,] H, W, C
      if (nd < 2) return -1;
      *count = std::min(nd - 1, CCV_NNC_MAX_DIM);
      return nd - 1 - *count;
    case CCV_TENSOR_FORMAT_NCHW:  // [N,] C, H, W
      if (nd < 2) return -1;
      *count = std::min(nd - 1, CCV_NNC_MAX_DIM);
      return nd - *count;
    case CCV_TENSOR_FORMAT_CHWN:  // C, H, W, N
      if (nd < 3) return -1;
      *count = std::min(nd - 2, CCV_NNC_MAX_DIM);
      return 1;
  }
  return -1;
}

ccv_nnc_hint_t hint_auto(const ccv_nnc_cmd_param_t& cmd, const ccv_nnc_tensor_param_t& a,
                         const ccv_nnc_tensor_param_t& b) {
  ccv_nnc_hint_t hint;
  std::memset(&hint, 0, sizeof(hint));
  int na = 0, nb = 0;
  const int oa = spatial_offset(a, &na);
  const int ob = spatial_offset(b, &nb);
  if (oa < 0 || ob < 0 || na != nb) return hint;
  for (int i = 0; i < na; i++) {
    const int x = a.dim[oa + i], y = b.dim[ob + i];
    const int k = cmd.size.dim[i] > 0 ? cmd.size.dim[i] : 1;
    if (x <= 0 || y <= 0) return ccv_nnc_hint_t{};
    // The smallest stride for which some padding below the window size gives
    // exactly y outputs: (x + pad - k) / stride + 1 == y. The padding is the
    // least that reaches y, split evenly with the odd one at the end. In
    // closed form (64-bit, so huge shapes neither overflow nor loop long):
    // with no padding the strides in ((x - k) / y, (x - k) / (y - 1)] work,
    // with padding those in ((x - k) / (y - 1), (x - 1) / (y - 1)]; the
    // smallest of either is one of the candidates below.
    const int64_t X = x, Y = y, K = k;
    auto pad_for = [&](int64_t stride) -> int64_t {
      if (stride < 1) return -1;
      const int64_t pad = std::max<int64_t>(0, (Y - 1) * stride + K - X);
      if (pad > K - 1 || X + pad - K < 0 || (X + pad - K) / stride + 1 != Y) return -1;
      return pad;
    };
    int64_t candidates[3] = {1, 1, 1};
    if (Y == 1) {
      candidates[1] = std::max<int64_t>(X - K, 0) + 1;
    } else if (X >= K) {
      candidates[1] = (X - K) / Y + 1;
      candidates[2] = (X - K) / (Y - 1) + 1;
    }
    std::sort(candidates, candidates + 3);
    int found = 0;
    for (int64_t stride : candidates) {
      const int64_t pad = pad_for(stride);
      if (pad < 0 || stride > INT32_MAX || pad > INT32_MAX) continue;
      hint.stride.dim[i] = static_cast<int>(stride);
      hint.border.begin[i] = static_cast<int>(pad / 2);
      hint.border.end[i] = static_cast<int>(pad - pad / 2);
      found = 1;
      break;
    }
    if (!found) return ccv_nnc_hint_t{};
  }
  return hint;
}

int hint_verify(const ccv_nnc_hint_t& hint, const ccv_nnc_cmd_param_t& cmd, const ccv_nnc_tensor_param_t& a,
                const ccv_nnc_tensor_param_t& b) {
  int na = 0, nb = 0;
  const int oa = spatial_offset(a, &na);
  const int ob = spatial_offset(b, &nb);
  if (oa < 0 || ob < 0 || na != nb) return 0;
  for (int i = 0; i < na; i++) {
    const int stride = hint.stride.dim[i] > 0 ? hint.stride.dim[i] : 1;
    const int begin = hint.border.begin[i], end = hint.border.end[i];
    const int k = cmd.size.dim[i] > 0 ? cmd.size.dim[i] : 1;
    if (begin < 0 || end < 0 || hint.stride.dim[i] < 0) return 0;
    const int64_t span = static_cast<int64_t>(a.dim[oa + i]) + begin + end - k;
    if (span < 0 || span / stride + 1 != b.dim[ob + i]) return 0;
  }
  return 1;
}

void copy_tensor(ccv_nnc_tensor_t* src, ccv_nnc_tensor_t* dst, const char* what) {
  ccv_nnc_cmd_param_t params;
  std::memset(&params, 0, sizeof(params));
  const ccv_nnc_cmd_t transfer = make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, params, 0);
  NNC_CHECK(same_shape(src->info, dst->info) && src->info.datatype == dst->info.datatype,
            "%s: %s %s and %s %s differ in shape or type", what, datatype_name(src->info.datatype),
            shape_string(src->info.dim).c_str(), datatype_name(dst->info.datatype), shape_string(dst->info.dim).c_str());
  const int code = cmd_exec(transfer, ccv_nnc_no_hint, 0, &src, 1, &dst, 1, nullptr);
  if (code != CCV_NNC_EXEC_SUCCESS) fail(code, "%s: %s", what, error_message().c_str());
}

}  // namespace nnc
