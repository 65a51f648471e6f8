// GPU stream contexts on CUDA streams (stream.hpp), the hooks the core calls
// for them (core/gpu_stream.hpp), and the per-stream cuBLAS handles.
#include "cuda/stream.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cmd/common/gpu_flags.hpp"
#include "core/gpu_stream.hpp"
#include "core/stream_errors.hpp"
#include "cuda/cuda.hpp"

namespace nnc::cuda {

namespace {

// cuBLAS's workspace per handle: NVIDIA's recommendation for Hopper (sm_90)
// is 32 MiB; smaller makes some GEMMs pick slower algorithms.
constexpr size_t kCublasWorkspace = size_t{32} << 20;

// Slots of a stream's device error log: bad-input flags of kernel calls
// (DeviceFlag) between two host waits. More calls than this between waits
// cost one extra wait per kSlots calls (error_slot), nothing else.
constexpr int kLogSlots = 256;

struct GpuStream {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void* blas_workspace = nullptr;
  // Scratch memory of ccv_nnc_stream_context_get_workspace(GPU memory).
  void* workspace = nullptr;
  size_t workspace_size = 0;
  std::mutex attachments_mutex;
  struct Attachment {
    const void* key;
    void* object;
    void (*destroy)(void*);
  };
  std::vector<Attachment> attachments;
  // The device error log (error_slot): kLogSlots ints, made on first use and
  // kept at 0 except for what the calls lent a slot since the last read-back
  // wrote. `found` keeps what the read-backs found until the core takes it.
  std::mutex log_mutex;
  DeviceErrorLog log{kLogSlots};
  int* log_device = nullptr;
  StreamErrors found;
};

// Reads back the log slots in `span` (lent before the stream's last sync, so
// their calls' work is done), clears them on the device and keeps what they
// found. The caller holds log_mutex and has made the device current.
void read_log(GpuStream* g, DeviceErrorLog::Span span, const char* what) {
  if (span.count == 0 || !g->log_device) return;
  std::vector<int> values(static_cast<size_t>(span.count));
  // At most two pieces: the span may wrap round the end of the ring.
  const int first_piece = std::min(span.count, kLogSlots - span.first);
  const struct {
    int slot, count, offset;
  } pieces[2] = {{span.first, first_piece, 0}, {0, span.count - first_piece, first_piece}};
  for (const auto& p : pieces) {
    if (p.count == 0) continue;
    NNC_CUDA_CHECK(cudaMemcpyAsync(values.data() + p.offset, g->log_device + p.slot, sizeof(int) * p.count,
                                   cudaMemcpyDeviceToHost, g->stream),
                   what);
  }
  NNC_CUDA_CHECK(cudaStreamSynchronize(g->stream), what);
  // Cleared on the stream, so before any later call's kernels use the slots.
  for (const auto& p : pieces)
    if (p.count) NNC_CUDA_CHECK(cudaMemsetAsync(g->log_device + p.slot, 0, sizeof(int) * p.count, g->stream), what);
  g->log.drain(span, values.data(), g->found, describe_gpu_flag);
}

void* stream_new(int device) {
  static const char* what = "ccv_nnc_stream_context_new";
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) cudaGetLastError();  // no driver or no device: not sticky for later calls
  NNC_CUDA_CHECK(e, what);
  NNC_CHECK(device >= 0 && device < count, "%s: there is no GPU %d (%d present)", what, device, count);
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  auto g = std::make_unique<GpuStream>();
  g->device = device;
  // Non-blocking: no implicit ordering with the legacy default stream, which
  // synchronous calls use; the two meet only where the core waits.
  NNC_CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), what);
  // The device error log (error_slot), cleared now, before any work is
  // queued here. A graph's streams behind this one wait only for the work
  // queued here before the run: a log made and cleared on first use, during
  // a run, could be cleared after a node on another stream wrote its slot.
  try {
    g->log_device = static_cast<int*>(device_alloc_on(device, sizeof(int) * kLogSlots, g->stream, what));
    NNC_CUDA_CHECK(cudaMemsetAsync(g->log_device, 0, sizeof(int) * kLogSlots, g->stream), what);
  } catch (...) {
    if (g->log_device) device_free_on(device, g->log_device);
    cudaStreamDestroy(g->stream);
    throw;
  }
  return g.release();
}

void stream_free(void* p) {
  auto* g = static_cast<GpuStream*>(p);
  if (cudaSetDevice(g->device) == cudaSuccess) {
    cudaStreamSynchronize(g->stream);  // errors ignored: freeing must not fail
    for (auto it = g->attachments.rbegin(); it != g->attachments.rend(); ++it) it->destroy(it->object);
    if (g->blas) cublasDestroy(g->blas);
    if (g->blas_workspace) device_free_on(g->device, g->blas_workspace);
    if (g->workspace) device_free_on(g->device, g->workspace);
    if (g->log_device) device_free_on(g->device, g->log_device);
    cudaStreamDestroy(g->stream);
  }
  cudaGetLastError();
  delete g;
}

void stream_wait(void* p) {
  static const char* what = "ccv_nnc_stream_context_wait";
  auto* g = static_cast<GpuStream*>(p);
  const std::lock_guard<std::mutex> lock(g->log_mutex);
  // Only the slots lent before the sync: a call on another thread may lend
  // one meanwhile, whose kernels need not have run yet.
  const DeviceErrorLog::Span span = g->log.in_use();
  NNC_CUDA_CHECK(cudaStreamSynchronize(g->stream), what);
  if (span.count) {
    NNC_CUDA_CHECK(cudaSetDevice(g->device), what);
    read_log(g, span, what);
  }
}

void take_errors(void* p, StreamErrors& out) {
  auto* g = static_cast<GpuStream*>(p);
  const std::lock_guard<std::mutex> lock(g->log_mutex);
  out.merge(g->found);
}

void* workspace(void* p, size_t bytes) {
  auto* g = static_cast<GpuStream*>(p);
  if (g->workspace && bytes <= g->workspace_size) return g->workspace;
  // Work queued before still uses the old block: the allocator reuses it for
  // later work on this stream only (stream-ordered), so it is freed at once.
  const size_t rounded = (bytes + 255) & ~size_t{255};
  void* fresh = device_alloc_on(g->device, rounded ? rounded : 256, g->stream, "ccv_nnc_stream_context_get_workspace");
  if (g->workspace) device_free_on(g->device, g->workspace);
  g->workspace = fresh;
  g->workspace_size = rounded;
  return fresh;
}

void drain(void* p) {
  auto* g = static_cast<GpuStream*>(p);
  if (!g->workspace) return;
  device_free_on(g->device, g->workspace);
  g->workspace = nullptr;
  g->workspace_size = 0;
}

void* event_new(int device) {
  static const char* what = "ccv_nnc_stream_context_emit_signal";
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  cudaEvent_t e = nullptr;
  NNC_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
  return e;
}

void event_free(void* e) {
  cudaEventDestroy(static_cast<cudaEvent_t>(e));  // released once its last record completes
  cudaGetLastError();
}

void event_record(void* e, void* p) {
  auto* g = static_cast<GpuStream*>(p);
  NNC_CUDA_CHECK(cudaSetDevice(g->device), "ccv_nnc_stream_context_emit_signal");
  NNC_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), g->stream), "ccv_nnc_stream_context_emit_signal");
}

void stream_wait_event(void* p, void* e) {
  auto* g = static_cast<GpuStream*>(p);
  // Events of another device are allowed: the wait is on the waiter's stream.
  NNC_CUDA_CHECK(cudaSetDevice(g->device), "ccv_nnc_stream_context_wait_signal");
  NNC_CUDA_CHECK(cudaStreamWaitEvent(g->stream, static_cast<cudaEvent_t>(e), 0), "ccv_nnc_stream_context_wait_signal");
}

void event_sync(void* e) {
  NNC_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "ccv_nnc_stream_context_wait_signal");
}

const GpuStreamHooks kHooks = {stream_new, stream_free,  stream_wait,  workspace,         drain,     event_new,
                               event_free, event_record, stream_wait_event, event_sync, take_errors};

// cuBLAS handles of synchronous calls: one per thread and device (a handle
// may not be rebound to another stream while another thread uses it).
struct ThreadHandles {
  std::vector<cublasHandle_t> v;
  ~ThreadHandles() {
    for (cublasHandle_t h : v)
      if (h) cublasDestroy(h);
  }
};
thread_local ThreadHandles t_handles;

GpuStream* gpu(ccv_nnc_stream_context_t* stream) { return static_cast<GpuStream*>(gpu_stream_of(stream)); }

}  // namespace

void install_stream_hooks() { set_gpu_stream_hooks(&kHooks); }

cudaStream_t stream_of(ccv_nnc_stream_context_t* stream, int device, const char* what) {
  GpuStream* g = gpu(stream);
  if (g)
    NNC_CHECK(g->device == device, "%s: the tensors are on GPU %d but the stream context is on GPU %d", what, device, g->device);
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  return g ? g->stream : cudaStreamLegacy;
}

void finish(ccv_nnc_stream_context_t* stream, cudaStream_t s, const char* what) {
  NNC_CUDA_CHECK(cudaGetLastError(), what);
  if (!gpu(stream)) NNC_CUDA_CHECK(cudaStreamSynchronize(s), what);
}

cublasHandle_t cublas_handle(ccv_nnc_stream_context_t* stream, int device, cudaStream_t s, const char* what) {
  GpuStream* g = gpu(stream);
  if (g) {
    if (!g->blas) {
      NNC_CUDA_CHECK(cudaSetDevice(g->device), what);
      cublasHandle_t h = nullptr;
      NNC_CUDA_CHECK(cublasCreate(&h), what);
      struct Guard {
        cublasHandle_t h;
        ~Guard() {
          if (h) cublasDestroy(h);
        }
      } guard{h};
      NNC_CUDA_CHECK(cublasSetStream(h, g->stream), what);
      // Its own workspace, not the stream's scratch memory: a later, larger
      // ccv_nnc_stream_context_get_workspace would move that under the handle.
      void* ws = device_alloc_on(g->device, kCublasWorkspace, g->stream, what);
      const cublasStatus_t st = cublasSetWorkspace(h, ws, kCublasWorkspace);
      if (st != CUBLAS_STATUS_SUCCESS) {
        device_free_on(g->device, ws);
        check(st, what, "cublasSetWorkspace");
      }
      g->blas_workspace = ws;
      g->blas = h;
      guard.h = nullptr;
    }
    NNC_CUDA_CHECK(cudaSetDevice(g->device), what);
    return g->blas;
  }
  auto& v = t_handles.v;
  if (static_cast<size_t>(device) >= v.size()) v.resize(static_cast<size_t>(device) + 1, nullptr);
  cublasHandle_t& h = v[static_cast<size_t>(device)];
  if (!h) {
    NNC_CUDA_CHECK(cudaSetDevice(device), what);
    NNC_CUDA_CHECK(cublasCreate(&h), what);
  }
  // Stream 0 is the legacy default stream (this module is not built with
  // per-thread default streams): the handle's own default, as cuBLAS knows it.
  NNC_CUDA_CHECK(cublasSetStream(h, s == cudaStreamLegacy ? nullptr : s), what);
  return h;
}

int* error_slot(ccv_nnc_stream_context_t* stream, const char* what) {
  GpuStream* g = gpu(stream);
  if (!g) return nullptr;
  // A node of a graph queued behind a caller's stream: a slot of the caller's
  // log (core/gpu_stream.hpp: ErrorLogOwner) when it is on the same device and
  // has one free. (The caller's log is cleared on the caller's stream, which
  // the graph's streams wait for at the next run's entry; a full one is not
  // read back here, since this run's other streams may still write it.)
  if (GpuStream* owner = gpu(error_log_owner()); owner && owner != g && owner->device == g->device) {
    const std::lock_guard<std::mutex> lock(owner->log_mutex);
    const int slot = owner->log.reserve(what);
    NNC_CUDA_CHECK(cudaSetDevice(g->device), what);
    if (slot >= 0) return owner->log_device + slot;
  }
  const std::lock_guard<std::mutex> lock(g->log_mutex);
  NNC_CUDA_CHECK(cudaSetDevice(g->device), what);
  int slot = g->log.reserve(what);
  if (slot < 0) {  // every slot lent since the last wait: wait now and read them back
    const DeviceErrorLog::Span span = g->log.in_use();
    NNC_CUDA_CHECK(cudaStreamSynchronize(g->stream), what);
    read_log(g, span, what);
    slot = g->log.reserve(what);
    NNC_CHECK(slot >= 0, "%s: no slot in the stream's error log after reading it back", what);
  }
  return g->log_device + slot;
}

void* stream_attachment(ccv_nnc_stream_context_t* stream, const void* key, void* (*make)(int device, cudaStream_t s),
                        void (*destroy)(void* object)) {
  GpuStream* g = gpu(stream);
  if (!g) return nullptr;
  const std::lock_guard<std::mutex> lock(g->attachments_mutex);
  for (const auto& a : g->attachments)
    if (a.key == key) return a.object;
  void* object = make(g->device, g->stream);
  g->attachments.push_back({key, object, destroy});
  return object;
}

}  // namespace nnc::cuda
