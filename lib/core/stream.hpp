// Internal side of streams: queueing work and per-stream scratch memory.
#pragma once

#include <cstddef>
#include <functional>

#include "nnc/ccv_nnc.h"

namespace nnc {

// Queue `task` on the stream. The task returns a CCV_NNC_EXEC_* code; a
// failure (or exception) is recorded on the stream and reported by the next
// ccv_nnc_stream_context_wait.
void stream_enqueue(ccv_nnc_stream_context_t* stream, std::function<int()> task);

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
void stream_wait(const ccv_nnc_stream_context_t* stream);
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
