// GPU stream contexts, as the CUDA module provides them (cuda/stream.cpp):
// the core keeps the bookkeeping of a CCV_STREAM_CONTEXT_GPU stream (its
// type, destructor hooks, error, signals, which call waits for what) and
// reaches the device only through this table, so it never links CUDA
// (the same arrangement as DeviceMemory in core/device.hpp). Without the
// module the table is absent and GPU stream contexts and signals are refused
// with a message.
//
// How a GPU stream context runs work (core/stream.cpp):
// - GPU kernels run on the calling thread and only queue their work on the
//   stream's CUDA stream (cuda/stream.hpp: stream_of / finish); the call
//   returns once the work is queued.
// - Anything that touches host memory or runs host code on a GPU stream (a
//   CPU kernel, a custom command, a callback, a graph's while / case..of
//   expression) first waits for the stream's queued device work
//   (`wait`), then runs on the calling thread: it sees the results of
//   everything queued before it.
// - Bad input that a kernel finds on the device while the call has returned
//   (cuda: DeviceFlag) is logged on the device and read back whenever the
//   host waits for the stream (`stream_wait`, then `take_errors`); it is
//   reported as any failure on a stream is (core/stream_errors.hpp).
// - Signals emitted on a GPU stream are device events. The matrix of waits:
//     emitter GPU, waiter GPU: the waiter's stream waits for the event on the
//       device (the host does not block);
//     emitter GPU, waiter CPU stream: a task on the CPU stream's worker blocks
//       on the event (`event_sync`);
//     emitter GPU, waiter NULL: the caller blocks on the event;
//     emitter CPU stream, waiter GPU: the caller blocks until the CPU stream
//       has reached the signal (a GPU stream's later work is queued by this
//       same caller, so holding it back orders that work after the signal);
//     emitter CPU / NULL, waiter CPU / NULL: as before (generation counters).
//   An emit on a GPU stream records a fresh event when a CPU stream's task
//   still holds the previous one, so every waiter waits for exactly the emit
//   it saw, never a later one.
#pragma once

#include <cstddef>

namespace nnc {

class StreamErrors;  // core/stream_errors.hpp

struct GpuStreamHooks {
  // A stream on `device` (CUDA: a non-blocking stream and what belongs to
  // it). Throws nnc::Error with a message on failure.
  void* (*stream_new)(int device);
  // Waits for the stream's work (errors ignored) and releases it.
  void (*stream_free)(void* stream);
  // The host waits for the stream's queued work. Throws nnc::Error when that
  // work failed (an asynchronous kernel fault).
  void (*stream_wait)(void* stream);
  // Device scratch memory of the stream, valid for work queued on it until
  // the next request or drain. Throws on failure.
  void* (*workspace)(void* stream, size_t bytes);
  // Releases the stream's device scratch memory (stream-ordered).
  void (*drain)(void* stream);
  // Events: made on a device, recorded on a stream, waited for by another
  // stream (on the device) or by the host. Each throws nnc::Error on failure,
  // except event_free.
  void* (*event_new)(int device);
  void (*event_free)(void* event);
  void (*event_record)(void* event, void* stream);
  void (*stream_wait_event)(void* stream, void* event);
  void (*event_sync)(void* event);
  // Bad input the stream's kernels found on the device (cuda: DeviceFlag's
  // slots of the stream's error log), read back by stream_wait and not taken
  // yet: moved into `out`, oldest first. The core calls it after every
  // stream_wait. NULL: the module keeps no such log.
  void (*take_errors)(void* stream, StreamErrors& out);
};

// Installed once by the CUDA module when the library initialises (and by
// tests, with a host-only imitation). NULL removes them.
void set_gpu_stream_hooks(const GpuStreamHooks* hooks);
const GpuStreamHooks* gpu_stream_hooks();

}  // namespace nnc

struct ccv_nnc_stream_context_s;

namespace nnc {

// The module's object for a GPU stream context (what stream_new returned);
// NULL for NULL, for a CPU stream context, and for anything else.
void* gpu_stream_of(const ccv_nnc_stream_context_s* stream);
// The device of a GPU stream context (-1 for a CPU one or NULL).
int gpu_stream_device(const ccv_nnc_stream_context_s* stream);
// True for a GPU stream context.
bool is_gpu_stream(const ccv_nnc_stream_context_s* stream);
// Before host code runs on behalf of `stream`: on a GPU stream context waits
// for its queued device work; nothing otherwise.
void host_sync(ccv_nnc_stream_context_s* stream);

// While a graph's static schedule queues its nodes behind a caller's GPU
// stream (graph/schedule.cpp), bad input that kernels on the graph's own
// streams find goes to the caller's device error log instead of theirs: the
// caller waits for the caller's stream, never for the graph's, and that wait
// (which comes after the graph's streams' exit waits) reads the log. Set on
// the queueing thread for the span of the queueing; the CUDA module's
// error_slot reads it (for streams on the owner's device).
class ErrorLogOwner {
 public:
  explicit ErrorLogOwner(ccv_nnc_stream_context_s* owner);
  ~ErrorLogOwner();
  ErrorLogOwner(const ErrorLogOwner&) = delete;
  ErrorLogOwner& operator=(const ErrorLogOwner&) = delete;

 private:
  ccv_nnc_stream_context_s* previous_;
};
// The stream whose error log this thread's device errors go to now (NULL: each stream's own).
ccv_nnc_stream_context_s* error_log_owner();

}  // namespace nnc
