// Bodies of the Level-1 command API.
#pragma once

#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

const char* cmd_name(uint32_t cmd);
const char* backend_name(uint32_t backend);
ccv_nnc_cmd_t make_cmd(uint32_t cmd, ccv_nnc_cmd_vtab_t* isa, const ccv_nnc_cmd_param_t& params, int flags);
int cmd_exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* inputs, int input_size,
             ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream);
ccv_nnc_cmd_t cmd_autotune(const ccv_nnc_cmd_t& cmd, size_t max_workspace_size, const ccv_nnc_hint_t& hint, int flags,
                           ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                           int output_size, ccv_nnc_stream_context_t* stream);
uint32_t find_backend(const ccv_nnc_cmd_t& cmd, int memory, int formats, int datatypes);
int cmd_bitmask(const ccv_nnc_cmd_t& cmd, int input_size, int output_size, const uint64_t* input_bitmasks,
                int input_bitmask_size, const uint64_t* output_bitmasks, int output_bitmask_size);
int cmd_inplace(const ccv_nnc_cmd_t& cmd, int input_idx, int input_size, int output_idx, int output_size, bool enforce);
void hint_tensor_auto(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_param_t* inputs, int input_size,
                      const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size);
ccv_nnc_hint_t hint_auto(const ccv_nnc_cmd_param_t& cmd, const ccv_nnc_tensor_param_t& a,
                         const ccv_nnc_tensor_param_t& b);
int hint_verify(const ccv_nnc_hint_t& hint, const ccv_nnc_cmd_param_t& cmd, const ccv_nnc_tensor_param_t& a,
                const ccv_nnc_tensor_param_t& b);
bool is_no_hint(const ccv_nnc_hint_t& hint);
// Copies src's contents into dst (same shape and type) with DATA_TRANSFER, so
// either may be on a GPU; throws nnc::Error naming `what` on failure.
void copy_tensor(ccv_nnc_tensor_t* src, ccv_nnc_tensor_t* dst, const char* what);

// An execution validated once and reusable while its tensors keep their
// shapes and types (what a graph node caches between runs): the function to
// call and the hint to pass it. exec is NULL for a NOOP.
struct PreparedExec {
  ccv_nnc_cmd_exec_f exec = nullptr;
  ccv_nnc_hint_t hint{};
  uint32_t backend = 0;  // 0 for custom commands and NOOP
  bool exclusive = false;  // the kernel's Kernel::exclusive
  bool device = false;     // a GPU kernel (accepts GPU memory): on a GPU stream it only queues work
};
// Does every check ccv_nnc_cmd_exec does and chooses the kernel; throws
// nnc::Error like it.
PreparedExec prepare_exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* inputs,
                          int input_size, ccv_nnc_tensor_t* const* outputs, int output_size);

class Declined;  // core/declined.hpp
// After `declined` (what prepare_exec chose) threw Declined: the same call on
// the next kernel in preference order that accepts it. Throws like
// ccv_nnc_cmd_exec does (the refusal itself when the caller named the backend).
PreparedExec prepare_exec_after_decline(const ccv_nnc_cmd_t& cmd, const PreparedExec& declined, const Declined& why,
                                        ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                        int output_size);

// Spatial (H, W, …) dimensions of an image-shaped tensor: the index of the
// first spatial dimension in dim[] and how many there are, or -1 if the
// shape is not image-like for its format.
int spatial_offset(const ccv_nnc_tensor_param_t& params, int* count);

}  // namespace nnc
