// The exported Level 0-1 functions: thin shims that check C arguments, call
// the C++ code and map exceptions to libnnc's return conventions.
#include <atomic>
#include <chrono>
#include <cstring>

#include "core/cmd.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/live.hpp"
#include "core/palettize.hpp"
#include "core/registry.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc_easy.h"
#include "nnc/ccv_nnc_version.h"

using namespace nnc;

namespace {
std::atomic<uint64_t> g_flags{0};
}

extern "C" {

const int ccv_nnc_no_ofs[CCV_NNC_MAX_DIM_ALLOC] = {0};
const ccv_nnc_hint_t ccv_nnc_no_hint = {};
const ccv_nnc_cmd_param_t ccv_nnc_cmd_auto = {};
const ccv_nnc_tensor_param_t ccv_nnc_tensor_auto = {};

/* Level 0 */

NNC_API void ccv_nnc_init(void) {
  guard_void([] { (void)registry(); });
}

NNC_API void ccv_nnc_enable_flag(uint64_t flag) { g_flags.fetch_or(flag); }
NNC_API void ccv_nnc_disable_flag(uint64_t flag) { g_flags.fetch_and(~flag); }
NNC_API uint64_t ccv_nnc_flags(void) { return g_flags.load(); }

const char* ccv_nnc_error_message(void) { return error_message().c_str(); }
NNC_API void ccv_nnc_error_clear(void) { clear_error_message(); }
const char* ccv_nnc_version(void) { return NNC_VERSION_STRING; }

/* Level 1: tensors */

NNC_API ccv_nnc_tensor_t* ccv_nnc_tensor_new(const void* const ptr, const ccv_nnc_tensor_param_t params, const int flags) {
  return guard<ccv_nnc_tensor_t*>(nullptr, [&] { return tensor_new(ptr, params, flags); });
}

NNC_API ccv_nnc_tensor_t* ccv_nnc_tensor_new_from_file(const ccv_nnc_tensor_param_t params, const char* const filename,
                                                       const off_t offset, const int flags) {
  return guard<ccv_nnc_tensor_t*>(nullptr, [&] { return tensor_new_from_file(params, filename, offset, flags); });
}

NNC_API ccv_nnc_tensor_t ccv_nnc_tensor(const void* const ptr, const ccv_nnc_tensor_param_t params, const int flags) {
  // The zero header comes from the failure path itself: assigning into a
  // zeroed local let GCC build the result in place and drop the zeroing.
  return guard_else(
      []() noexcept {
        ccv_nnc_tensor_t t;
        std::memset(&t, 0, sizeof(t));
        return t;
      },
      [&] { return tensor_value(ptr, params, flags); });
}

NNC_API ccv_nnc_tensor_t* ccv_nnc_tensor_resize(ccv_nnc_tensor_t* const tensor, const ccv_nnc_tensor_param_t params) {
  return guard<ccv_nnc_tensor_t*>(nullptr, [&] { return tensor_resize(tensor, params); });
}

NNC_API int ccv_nnc_tensor_pin_memory(ccv_nnc_tensor_t* const tensor) {
  return guard<int>(-1, [&]() -> int {
    tensor_pin(tensor);
    return 0;
  });
}

NNC_API void ccv_nnc_tensor_free(ccv_nnc_tensor_t* const tensor) {
  guard_void([&] {
    if (tensor) NNC_CHECK(!CCV_IS_TENSOR_VIEW(tensor), "ccv_nnc_tensor_free: this is a view; use ccv_nnc_tensor_view_free");
    tensor_free(tensor);
  });
}

NNC_API ccv_nnc_tensor_view_t* ccv_nnc_tensor_view_new(const ccv_nnc_tensor_t* const tensor, const ccv_nnc_tensor_param_t params,
                                                       const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC]) {
  return guard<ccv_nnc_tensor_view_t*>(nullptr, [&] {
    ccv_nnc_tensor_view_t view;
    view_fill(&view, tensor, params, ofs, stride);
    auto* out = static_cast<ccv_nnc_tensor_view_t*>(std::malloc(sizeof(ccv_nnc_tensor_view_t)));
    if (!out) throw std::bad_alloc();
    *out = view;
    live_add(CCV_NNC_LIVE_TENSOR, 1);
    return out;
  });
}

NNC_API ccv_nnc_tensor_view_t ccv_nnc_tensor_view(const ccv_nnc_tensor_t* const tensor, const ccv_nnc_tensor_param_t params,
                                                  const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC]) {
  return guard_else(
      []() noexcept {
        ccv_nnc_tensor_view_t view;
        std::memset(&view, 0, sizeof(view));
        return view;
      },
      [&] {
        ccv_nnc_tensor_view_t view;
        view_fill(&view, tensor, params, ofs, stride);
        return view;
      });
}

NNC_API void ccv_nnc_tensor_view_free(ccv_nnc_tensor_view_t* const tensor_view) {
  guard_void([&] {
    if (!tensor_view) return;
    NNC_CHECK(CCV_IS_TENSOR_VIEW(tensor_view), "ccv_nnc_tensor_view_free: this is not a view; use ccv_nnc_tensor_free");
    std::free(tensor_view);
    live_add(CCV_NNC_LIVE_TENSOR, -1);
  });
}

NNC_API void ccv_nnc_tensor_zero(void* const tensor) {
  guard_void([&] { tensor_zero(tensor); });
}

NNC_API int ccv_nnc_tensor_eq(const ccv_nnc_tensor_t* const a, const ccv_nnc_tensor_t* const b) {
  return guard<int>(-1, [&] { return tensor_eq(a, b); });
}

NNC_API char* ccv_nnc_tensor_format_new(const ccv_nnc_tensor_t* const a) {
  return guard<char*>(nullptr, [&] {
    const std::string s = tensor_format(a);
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (!out) throw std::bad_alloc();
    std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
  });
}

/* Level 1: commands */

NNC_API uint64_t ccv_nnc_cmd_mono_time(void) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

const char* ccv_nnc_cmd_name(const uint32_t cmd) { return cmd_name(cmd); }
const char* ccv_nnc_cmd_backend_name(const uint32_t backend) { return backend_name(backend); }

NNC_API int ccv_nnc_cmd_ok(const uint32_t cmd, const uint32_t backend) {
  return guard<int>(0, [&] { return registry().kernel(cmd, backend) ? 1 : 0; });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd(const uint32_t cmd, ccv_nnc_cmd_vtab_t* const isa, const ccv_nnc_cmd_param_t params, const int flags) {
  // An unknown id formats a message (which may throw bad_alloc): inside the guard.
  return guard_else(
      [&]() noexcept {
        ccv_nnc_cmd_t noop;
        std::memset(&noop, 0, sizeof(noop));
        noop.info = params;
        noop.algorithm = -1;
        return noop;
      },
      [&] { return make_cmd(cmd, isa, params, flags); });
}

NNC_API int ccv_nnc_hint_verify(const ccv_nnc_hint_t hint, const ccv_nnc_cmd_param_t cmd, const ccv_nnc_tensor_param_t a,
                                const ccv_nnc_tensor_param_t b) {
  return hint_verify(hint, cmd, a, b);
}

NNC_API ccv_nnc_hint_t ccv_nnc_hint_auto(const ccv_nnc_cmd_param_t cmd, const ccv_nnc_tensor_param_t a, const ccv_nnc_tensor_param_t b) {
  return hint_auto(cmd, a, b);
}

NNC_API void ccv_nnc_hint_tensor_auto(const ccv_nnc_cmd_t cmd, const ccv_nnc_tensor_param_t* const inputs, const int input_size,
                                      const ccv_nnc_hint_t hint, ccv_nnc_tensor_param_t* const outputs, const int output_size) {
  guard_void([&] { hint_tensor_auto(cmd, inputs, input_size, hint, outputs, output_size); });
}

NNC_API uint32_t ccv_nnc_cmd_find_backend(const ccv_nnc_cmd_t cmd, const int tensor_memory, const int tensor_formats,
                                          const int tensor_datatypes) {
  return guard<uint32_t>(CCV_NNC_NO_BACKEND, [&] { return find_backend(cmd, tensor_memory, tensor_formats, tensor_datatypes); });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_autotune(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint,
                                           const int flags, ccv_nnc_tensor_t* const* const inputs, const int input_size,
                                           ccv_nnc_tensor_t* const* const outputs, const int output_size,
                                           ccv_nnc_stream_context_t* const stream_context) {
  return guard<ccv_nnc_cmd_t>(cmd, [&] {
    return cmd_autotune(cmd, max_workspace_size, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  });
}

NNC_API int ccv_nnc_cmd_bitmask(const ccv_nnc_cmd_t cmd, const int input_size, const int output_size,
                                const uint64_t* const input_bitmasks, const int input_bitmask_size,
                                const uint64_t* const output_bitmasks, const int output_bitmask_size) {
  return guard<int>(0, [&] {
    return cmd_bitmask(cmd, input_size, output_size, input_bitmasks, input_bitmask_size, output_bitmasks, output_bitmask_size);
  });
}

NNC_API void* ccv_nnc_cmd_aux(const ccv_nnc_cmd_t cmd) {
  return guard<void*>(nullptr, [&]() -> void* {
    const Kernel* k = registry().kernel(cmd.cmd, cmd.backend);
    return k ? k->aux : nullptr;
  });
}

NNC_API int ccv_nnc_cmd_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const inputs,
                             const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size,
                             ccv_nnc_stream_context_t* const stream_context) {
  const int code =
      guard_code([&] { return cmd_exec(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context); });
  if (__builtin_expect(memory_efficient(), 0) && GuardScope::outside()) release_thread_workspace();
  return code;
}

NNC_API int ccv_nnc_cmd_is_forward(const ccv_nnc_cmd_t cmd) {
  return cmd.cmd != CCV_NNC_NOOP && !(cmd.cmd & 1u) ? 1 : 0;
}

NNC_API int ccv_nnc_cmd_is_backward(const ccv_nnc_cmd_t cmd) { return (cmd.cmd & 1u) ? 1 : 0; }

NNC_API int ccv_nnc_cmd_attr(const ccv_nnc_cmd_t cmd, const int flags) {
  return guard<int>(0, [&] {
    const CommandInfo* info = registry().command(cmd.cmd);
    return info && flags && (info->attributes & flags) == flags ? 1 : 0;
  });
}

NNC_API int ccv_nnc_cmd_allow_inplace(const ccv_nnc_cmd_t cmd, const int input_idx, const int input_size, const int output_idx,
                                      const int output_size) {
  return guard<int>(0, [&] { return cmd_inplace(cmd, input_idx, input_size, output_idx, output_size, false); });
}

NNC_API int ccv_nnc_cmd_enforce_inplace(const ccv_nnc_cmd_t cmd, const int input_idx, const int input_size, const int output_idx,
                                        const int output_size) {
  return guard<int>(0, [&] { return cmd_inplace(cmd, input_idx, input_size, output_idx, output_size, true); });
}

NNC_API void ccv_nnc_set_profiler(int state) { (void)state; }
NNC_API void ccv_nnc_set_memory_efficient(int state) { set_memory_efficient(state != 0); }

NNC_API size_t ccv_nnc_palettize(const void* input, const int datatype, const int memory_type, const size_t input_length,
                                 const int qbits, const int number_in_blocks, void* output, const size_t output_length) {
  return guard<size_t>(0, [&] {
    return palettize(input, datatype, memory_type, input_length, qbits, number_in_blocks, output, output_length);
  });
}

NNC_API void ccv_nnc_depalettize(const void* input, const int datatype, const int memory_type, const size_t input_length,
                                 const int qbits, const int number_in_blocks, void* output, const size_t output_length) {
  guard_void([&] {
    depalettize(input, datatype, memory_type, input_length, qbits, number_in_blocks, output, output_length);
  });
}

NNC_API int ccv_nnc_is_no_hint(const ccv_nnc_hint_t hint) { return is_no_hint(hint) ? 1 : 0; }

NNC_API int ccv_nnc_is_cmd_auto(const ccv_nnc_cmd_param_t params) {
  return std::memcmp(&params, &ccv_nnc_cmd_auto, sizeof(params)) == 0 ? 1 : 0;
}

NNC_API int ccv_nnc_is_tensor_auto(const ccv_nnc_tensor_param_t params) {
  return std::memcmp(&params, &ccv_nnc_tensor_auto, sizeof(params)) == 0 ? 1 : 0;
}

/* Level 1: streams */

NNC_API ccv_nnc_stream_context_t* ccv_nnc_stream_context_new(const int type) {
  return guard<ccv_nnc_stream_context_t*>(nullptr, [&] { return stream_new(type); });
}

NNC_API int ccv_nnc_stream_context_type(const ccv_nnc_stream_context_t* const stream_context) {
  return guard<int>(0, [&] { return stream_type(stream_context); });
}

NNC_API void* ccv_nnc_stream_context_get_workspace(ccv_nnc_stream_context_t* const stream_context, const size_t workspace_size,
                                                   const int mem) {
  return guard<void*>(nullptr, [&] { return stream_get_workspace(stream_context, workspace_size, mem); });
}

NNC_API void ccv_nnc_stream_context_drain(ccv_nnc_stream_context_t* const stream) {
  guard_void([&] { stream_drain(stream); });
}

NNC_API void ccv_nnc_stream_context_add_callback(ccv_nnc_stream_context_t* const stream, const ccv_nnc_callback_f callback,
                                                 void* const callback_context) {
  guard_void([&] { stream_add_callback(stream, callback, callback_context); });
}

NNC_API void ccv_nnc_stream_context_wait(const ccv_nnc_stream_context_t* const stream) {
  guard_void([&] {
    if (stream) stream_wait(stream);
  });
}

NNC_API int ccv_nnc_stream_context_error(ccv_nnc_stream_context_t* const stream) {
  return guard<int>(CCV_NNC_EXEC_INVALID, [&] { return stream_error(stream); });
}

NNC_API int ccv_nnc_stream_context_add_destructor_hook(ccv_nnc_stream_context_t* const stream,
                                                       ccv_nnc_stream_context_destructor_f destructor, void* const context) {
  return guard<int>(-1, [&] { return stream_add_destructor_hook(stream, destructor, context); });
}

NNC_API void ccv_nnc_stream_context_remove_destructor_hook(ccv_nnc_stream_context_t* const stream, const int hook_id) {
  guard_void([&] { stream_remove_destructor_hook(stream, hook_id); });
}

NNC_API void ccv_nnc_stream_context_free(ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] { stream_free(stream_context); });
}

NNC_API void ccv_nnc_stream_context_set_seed(ccv_nnc_stream_context_t* const stream_context, uint32_t seed) {
  guard_void([&] { stream_set_seed(stream_context, seed); });
}

NNC_API uint32_t ccv_nnc_stream_context_genrand_uint32(ccv_nnc_stream_context_t* const stream_context) {
  return guard<uint32_t>(0, [&] { return stream_genrand(stream_context); });
}

NNC_API ccv_nnc_stream_signal_t* ccv_nnc_stream_signal_new(const int type) {
  return guard<ccv_nnc_stream_signal_t*>(nullptr, [&] { return signal_new(type); });
}

NNC_API int ccv_nnc_stream_signal_type(const ccv_nnc_stream_signal_t* const signal) {
  return guard<int>(0, [&] { return signal_type(signal); });
}

NNC_API void ccv_nnc_stream_context_emit_signal(ccv_nnc_stream_context_t* const stream, ccv_nnc_stream_signal_t* const signal) {
  guard_void([&] { signal_emit(stream, signal); });
}

NNC_API ccv_nnc_stream_signal_t* ccv_nnc_stream_context_emit_signal_new(ccv_nnc_stream_context_t* const stream) {
  return guard<ccv_nnc_stream_signal_t*>(nullptr, [&] { return signal_emit_new(stream); });
}

NNC_API void ccv_nnc_stream_context_wait_signal(const ccv_nnc_stream_context_t* const stream, const ccv_nnc_stream_signal_t* const signal) {
  guard_void([&] { signal_wait(stream, signal); });
}

NNC_API ccv_nnc_stream_context_t* ccv_nnc_stream_signal_get_emitter(const ccv_nnc_stream_signal_t* const signal) {
  return guard<ccv_nnc_stream_context_t*>(nullptr, [&] { return signal_emitter(signal); });
}

NNC_API void ccv_nnc_stream_signal_free(ccv_nnc_stream_signal_t* const signal) { signal_free(signal); }

NNC_API int ccv_nnc_device_count(const int type) {
  if (CCV_STREAM_GET_CONTEXT(type) == CCV_STREAM_CONTEXT_CPU) return 1;
  (void)registry();  // the CUDA module installs its device memory as the registry is built
  const DeviceMemory* m = device_memory();
  return CCV_STREAM_GET_CONTEXT(type) == CCV_STREAM_CONTEXT_GPU && m ? m->count() : 0;
}

NNC_API int ccv_nnc_gpu_memory_stats(const int device, ccv_nnc_gpu_memory_stats_t* const stats) {
  return guard<int>(-1, [&]() -> int {
    NNC_CHECK(stats, "ccv_nnc_gpu_memory_stats: stats is NULL");
    (void)registry();
    const DeviceMemory* m = device_memory();
    if (!m || !m->stats)
      fail(CCV_NNC_EXEC_NO_KERNEL, "ccv_nnc_gpu_memory_stats: GPU memory needs the CUDA module, which this build lacks");
    const int count = m->count();
    NNC_CHECK(device >= 0 && device < count, "ccv_nnc_gpu_memory_stats: there is no GPU %d (%d present)", device, count);
    ccv_nnc_gpu_memory_stats_t s;
    std::memset(&s, 0, sizeof(s));
    m->stats(device, &s);
    *stats = s;
    return 0;
  });
}

NNC_API size_t ccv_nnc_gpu_memory_release_cached(const int device) {
  return guard<size_t>(0, [&]() -> size_t {
    (void)registry();
    const DeviceMemory* m = device_memory();
    return m && m->release_cached ? m->release_cached(device) : 0;
  });
}

NNC_API int ccv_nnc_device_remap(const int type, const int source, const int destination) {
  return guard<int>(-1, [&]() -> int {
    NNC_CHECK(CCV_STREAM_GET_CONTEXT(type) == CCV_STREAM_CONTEXT_CPU || CCV_STREAM_GET_CONTEXT(type) == CCV_STREAM_CONTEXT_GPU,
              "ccv_nnc_device_remap: type 0x%x is neither CPU nor GPU", type);
    if (CCV_STREAM_GET_CONTEXT(type) == CCV_STREAM_CONTEXT_CPU && source == destination) return 0;
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_device_remap: there is no device %d to remap in this build", source);
  });
}

NNC_API void ccv_nnc_stream_context_set_neighbor_discovery(ccv_nnc_stream_context_t* const stream_context,
                                                           ccv_nnc_stream_context_neighbor_discovery_f discovery, void* const context) {
  guard_void([&] { stream_set_neighbor_discovery(stream_context, discovery, context); });
}

NNC_API ccv_nnc_stream_context_t* ccv_nnc_stream_context_find_neighbor(ccv_nnc_stream_context_t* const stream_context, const int device_id) {
  return guard<ccv_nnc_stream_context_t*>(nullptr, [&] { return stream_find_neighbor(stream_context, device_id); });
}

}  // extern "C"
