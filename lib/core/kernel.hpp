// The one kernel adaptor: how a command family writes and registers its
// backends' kernels. A family file states only what is its own (the command
// descriptions, the exec functions, the formats and data types each backend
// takes); the signature, the error handling and the registration record are
// here.
//
//   NNC_KERNEL(forward_ref) {          // the ccv_nnc_cmd_exec_f signature
//     const Layout x = layout_of(inputs[0], "RELU x");   // may throw nnc::Error
//     ...
//     return CCV_NNC_EXEC_SUCCESS;
//   }
//
//   r.add_kernels(cpu_ref(types::kFloat), {{CCV_NNC_RELU_FORWARD, forward_ref}, ...});
//   r.add_kernels(cpu_opt(CCV_32F).accepting(packed_only), {...});
//
// Errors: a kernel throws nnc::Error (fail / NNC_CHECK) or returns a code.
// It does not catch: every caller of Kernel::exec does, once (the exported
// call's guard, a stream's worker, a graph run's node, autotune's trials),
// so a kernel needs no guard of its own.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "nnc/ccv_nnc.h"

// A kernel's definition or declaration: the arguments of ccv_nnc_cmd_exec_f,
// under the names every kernel body uses, each allowed to go unused.
#define NNC_KERNEL(name)                                                                                    \
  int name([[maybe_unused]] const ccv_nnc_cmd_t cmd, [[maybe_unused]] const ccv_nnc_hint_t hint,            \
           [[maybe_unused]] const int flags, [[maybe_unused]] ccv_nnc_tensor_t* const* inputs,              \
           [[maybe_unused]] const int input_size, [[maybe_unused]] ccv_nnc_tensor_t* const* outputs,        \
           [[maybe_unused]] const int output_size, [[maybe_unused]] ccv_nnc_stream_context_t* const stream_context)

namespace nnc {

// Tensor formats a kernel takes.
namespace formats {
inline constexpr int kAll = CCV_TENSOR_FORMAT_NHWC | CCV_TENSOR_FORMAT_NCHW | CCV_TENSOR_FORMAT_CHWN;
inline constexpr int kImage = CCV_TENSOR_FORMAT_NHWC | CCV_TENSOR_FORMAT_NCHW;  // windows: no CHWN
}  // namespace formats

// Data types a kernel takes.
namespace types {
inline constexpr int kFloat = CCV_32F | CCV_64F | CCV_16F | CCV_16BF;  // every floating-point type
inline constexpr int kWide = CCV_32F | CCV_64F;                        // the optimised loops' types
inline constexpr int kAll = kFloat | CCV_32S | CCV_64S | CCV_8U;
}  // namespace types

// What one backend's kernels of a family share: the backend, what tensors they
// take, and how they run. Built with cpu_ref() / cpu_opt() and refined.
struct KernelTraits {
  uint32_t backend = 0;
  int datatypes = 0;
  int formats = formats::kAll;
  int memory = CCV_TENSOR_CPU_MEMORY;
  int algorithms = 1;
  ccv_nnc_cmd_autotune_f autotune = nullptr;
  // Extra acceptance test (see Kernel::accept in registry.hpp).
  bool (*accept)(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) = nullptr;
  bool exclusive = false;  // runs under compute_lock() using every core (OpenBLAS)

  constexpr KernelTraits accepting(decltype(accept) a) const {
    KernelTraits t = *this;
    t.accept = a;
    return t;
  }
  constexpr KernelTraits with_algorithms(int n, ccv_nnc_cmd_autotune_f tune = nullptr) const {
    KernelTraits t = *this;
    t.algorithms = n;
    t.autotune = tune;
    return t;
  }
  constexpr KernelTraits exclusive_use() const {
    KernelTraits t = *this;
    t.exclusive = true;
    return t;
  }
};

constexpr KernelTraits cpu_ref(int datatypes, int formats = formats::kAll) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_CPU_REF;
  t.datatypes = datatypes;
  t.formats = formats;
  return t;
}
constexpr KernelTraits cpu_opt(int datatypes, int formats = formats::kAll) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_CPU_OPT;
  t.datatypes = datatypes;
  t.formats = formats;
  return t;
}

// (command, exec) pairs registered under one KernelTraits.
using KernelList = std::initializer_list<std::pair<uint32_t, ccv_nnc_cmd_exec_f>>;

}  // namespace nnc
