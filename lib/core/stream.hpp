// Internal side of streams: queueing work and per-stream scratch memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

#include "nnc/ccv_nnc.h"

namespace nnc {

// Queue `task` on the stream. The task returns a CCV_NNC_EXEC_* code; a
// failure (or exception) is recorded on the stream and reported by the next
// ccv_nnc_stream_context_wait.
void stream_enqueue(ccv_nnc_stream_context_t* stream, std::function<int()> task);

// Queue one command on the stream: exec(cmd, hint, flags, inputs, outputs,
// stream) on its worker. The arguments are copied into a record of the
// stream's own queue, whose storage is reused: no heap allocation per command
// once the queue has grown to the depth the program uses. `backend` names the
// kernel in a failure message (0: a custom command).
void stream_enqueue_command(ccv_nnc_stream_context_t* stream, ccv_nnc_cmd_exec_f exec, uint32_t backend,
                            const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
                            ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                            int output_size);

// Runs one command for a GPU stream context on the calling thread (core/gpu_stream.hpp):
// a device kernel queues its work on the stream; any other (CPU kernel, custom
// command) first waits for the stream's queued device work. Returns the exec's code.
int gpu_stream_exec(ccv_nnc_stream_context_t* stream, ccv_nnc_cmd_exec_f exec, bool device_kernel,
                    const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* inputs,
                    int input_size, ccv_nnc_tensor_t* const* outputs, int output_size);

// ccv_nnc_set_memory_efficient: while on, the scratch memory of a thread (or a
// stream) is released when the outermost call that used it returns (or the
// stream's task ends) instead of being kept for the next command.
namespace detail {
inline std::atomic<bool> g_memory_efficient{false};
}
inline void set_memory_efficient(bool on) { detail::g_memory_efficient.store(on, std::memory_order_relaxed); }
// Inline: asked after every ccv_nnc_cmd_exec.
inline bool memory_efficient() { return detail::g_memory_efficient.load(std::memory_order_relaxed); }
// Frees the calling thread's scratch buffer (outside any kernel only).
void release_thread_workspace();
// Bytes held by the calling thread's scratch buffer (tests).
size_t thread_workspace_size();

// Scratch memory for a kernel: the stream's workspace when running on one,
// otherwise a per-thread buffer. Valid until the next request on the same
// stream / thread. Never NULL (throws on failure).
void* workspace(ccv_nnc_stream_context_t* stream, size_t size);

// Bodies of the stream API (called through api.cpp).
ccv_nnc_stream_context_t* stream_new(int type);
void stream_free(ccv_nnc_stream_context_t* stream);
int stream_type(const ccv_nnc_stream_context_t* stream);
void* stream_get_workspace(ccv_nnc_stream_context_t* stream, size_t size, int mem);
void stream_drain(ccv_nnc_stream_context_t* stream);
void stream_add_callback(ccv_nnc_stream_context_t* stream, ccv_nnc_callback_f callback, void* context);
// Waits for the stream. Failures of its work since the last wait (a CPU
// stream's failed commands, bad input a GPU stream's kernels found: see
// core/stream_errors.hpp) are thrown (the API call sets the thread's message)
// and held for the next call that queues on the stream (stream_take_held).
void stream_wait(const ccv_nnc_stream_context_t* stream);
// At the start of a call that queues work on `stream` (ccv_nnc_cmd_exec,
// ccv_nnc_graph_run, ...): if a wait reported a failure that no call has
// returned yet, throws it (once) so that this call returns its code without
// running. Nothing for NULL or a stream holding nothing (one atomic load).
void stream_take_held(ccv_nnc_stream_context_t* stream);
// For a stream whose failures nobody else will report (a graph's own streams,
// waited for by a synchronous run): throws what failed on it since the last
// wait and forgets it (nothing is held). Does not wait: call after host_sync
// (GPU) or once the stream is idle.
void stream_raise_failures(ccv_nnc_stream_context_t* stream);
// ccv_nnc_stream_context_error: takes the held failure (returns its code and
// sets the thread's message), CCV_NNC_EXEC_SUCCESS when none. Does not wait.
int stream_error(ccv_nnc_stream_context_t* stream);
int stream_add_destructor_hook(ccv_nnc_stream_context_t* stream, ccv_nnc_stream_context_destructor_f f, void* context);
void stream_remove_destructor_hook(ccv_nnc_stream_context_t* stream, int id);
void stream_set_seed(ccv_nnc_stream_context_t* stream, uint32_t seed);
uint32_t stream_genrand(ccv_nnc_stream_context_t* stream);
void stream_set_neighbor_discovery(ccv_nnc_stream_context_t* stream, ccv_nnc_stream_context_neighbor_discovery_f f,
                                   void* context);
ccv_nnc_stream_context_t* stream_find_neighbor(ccv_nnc_stream_context_t* stream, int device_id);

ccv_nnc_stream_signal_t* signal_new(int type);
void signal_free(ccv_nnc_stream_signal_t* signal);
int signal_type(const ccv_nnc_stream_signal_t* signal);
void signal_emit(ccv_nnc_stream_context_t* stream, ccv_nnc_stream_signal_t* signal);
ccv_nnc_stream_signal_t* signal_emit_new(ccv_nnc_stream_context_t* stream);
void signal_wait(const ccv_nnc_stream_context_t* stream, const ccv_nnc_stream_signal_t* signal);
ccv_nnc_stream_context_t* signal_emitter(const ccv_nnc_stream_signal_t* signal);

}  // namespace nnc
