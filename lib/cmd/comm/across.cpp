// The COMM_ commands run across a communicator's processes (a command given
// one with ccv_nnc_cmd_set_comm): input i and output i are a pair, each
// process holding its own copy. Pairs of one datatype travel in one message:
// packed into a staging buffer (any strides), reduced or broadcast there, and
// unpacked. One contiguous pair of CPU tensors goes straight from the
// tensors, with no copy.
//
// GPU tensors (any pair, or all): unless the CUDA module's hook runs the call
// on NCCL (gpu_across.hpp: every pair on the GPU, NNC_COMM_GPU_STAGING unset),
// each GPU tensor is copied by DATA_TRANSFER into the communicator's pinned
// host staging buffer (a strided view through a packed device copy), the
// collective runs there over MPI, and the results go back the same way. A GPU
// stream context given to the call is waited for first (the inputs its work
// writes are there), and the results are on the device when the call returns,
// so the stream's later work sees them. Mixed pairs (a CPU input with a GPU
// output, or GPU pairs beside CPU pairs) are staged alike.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cmd/comm/comm.hpp"
#include "cmd/comm/communicator.hpp"
#include "cmd/comm/gpu_across.hpp"
#include "cmd/common/checks.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/gpu_stream.hpp"
#include "core/tensor.hpp"

namespace nnc::comm {

namespace {

const char* dt_name(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// Pairs a command exchanges: the first output_size inputs with the outputs.
int pair_count(int input_size, int output_size) { return std::min(input_size, output_size); }

std::atomic<const GpuAcrossHooks*> g_hooks{nullptr};

// A host tensor header over `host` with t's shape, packed.
ccv_nnc_tensor_t host_header(const ccv_nnc_tensor_t* t, void* host) {
  ccv_nnc_tensor_param_t p = t->info;
  p.type = CCV_TENSOR_CPU_MEMORY;
  return ccv_nnc_tensor(host, p, 0);
}

void transfer(ccv_nnc_tensor_t* from, ccv_nnc_tensor_t* to, const char* what) {
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  const int r = ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, &from, 1, &to, 1, nullptr);
  if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: staging a GPU tensor through the host: %s", what, error_message().c_str());
}

// A packed device tensor like `t` (a view's shape), on t's device.
struct DeviceCopy {
  ccv_nnc_tensor_t* t = nullptr;
  explicit DeviceCopy(const ccv_nnc_tensor_t* like, const char* what) {
    ccv_nnc_tensor_param_t p = like->info;
    t = ccv_nnc_tensor_new(nullptr, p, 0);
    if (!t) fail(CCV_NNC_EXEC_OOM, "%s: a packed device copy of a strided view: %s", what, error_message().c_str());
  }
  ~DeviceCopy() { ccv_nnc_tensor_free(t); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
};

// The communicator's pinned staging buffer, at least `bytes` (under gpu_mutex).
unsigned char* staging_of(ccv_nnc_comm_t* comm, size_t bytes) {
  if (comm->staging && comm->staging->data_size >= bytes) return comm->staging->data.u8;
  if (comm->staging) ccv_nnc_tensor_free(comm->staging);
  comm->staging = nullptr;
  size_t want = 4096;
  while (want < bytes) want *= 2;
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_8U;
  p.dim[0] = static_cast<int>(std::min<size_t>(want, INT32_MAX));
  NNC_CHECK(want <= INT32_MAX, "staging %zu bytes for GPU tensors across processes: too large for one buffer", bytes);
  comm->staging = ccv_nnc_tensor_new(nullptr, p, 0);
  NNC_CHECK(comm->staging, "staging %zu bytes for GPU tensors across processes: %s", bytes, error_message().c_str());
  // Pinned where the CUDA module can pin it (faster transfers); plain
  // host memory otherwise, which works the same.
  if (const DeviceMemory* dm = device_memory(); dm && dm->pin && dm->unpin) {
    try {
      dm->pin(comm->staging->data.ptr, comm->staging->data_size);
      comm->staging->type |= CCV_TENSOR_PINNED_MEM;  // unpinned at its free
    } catch (const Error&) {
    }
  }
  return comm->staging->data.u8;
}

}  // namespace

bool is_gpu_tensor(const ccv_nnc_tensor_t* t) { return t && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY; }

void set_gpu_across_hooks(const GpuAcrossHooks* hooks) { g_hooks.store(hooks); }
const GpuAcrossHooks* gpu_across_hooks() { return g_hooks.load(); }

bool staging_forced() {
  const char* env = std::getenv("NNC_COMM_GPU_STAGING");
  return env && env[0] && std::strcmp(env, "0") != 0;
}

void* device_state(ccv_nnc_comm_t* comm, int device, void* (*made)(ccv_nnc_comm_t*, int, void*), void* arg) {
  std::lock_guard<std::mutex> lock(comm->gpu_mutex);
  auto it = comm->device_states.find(device);
  if (it != comm->device_states.end()) return it->second;
  void* state = made(comm, device, arg);  // throws on failure: nothing cached
  comm->device_states[device] = state;
  return state;
}

void to_host(const ccv_nnc_tensor_t* t, void* host, const char* what) {
  if (!is_gpu_tensor(t)) {
    pack(layout_of(t, "input"), static_cast<unsigned char*>(host));
    return;
  }
  ccv_nnc_tensor_t h = host_header(t, host);
  if (CCV_IS_TENSOR_VIEW(t)) {
    DeviceCopy d(t, what);
    transfer(const_cast<ccv_nnc_tensor_t*>(t), d.t, what);
    transfer(d.t, &h, what);
  } else {
    transfer(const_cast<ccv_nnc_tensor_t*>(t), &h, what);
  }
}

void from_host(const void* host, ccv_nnc_tensor_t* t, const char* what) {
  if (!is_gpu_tensor(t)) {
    unpack(static_cast<const unsigned char*>(host), layout_of(t, "output"));
    return;
  }
  ccv_nnc_tensor_t h = host_header(t, const_cast<void*>(host));
  if (CCV_IS_TENSOR_VIEW(t)) {
    DeviceCopy d(t, what);
    transfer(&h, d.t, what);
    transfer(d.t, t, what);
  } else {
    transfer(&h, t, what);
  }
}

void validate_across(const char* name, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                     int output_size) {
  NNC_CHECK(input_size >= 1 && output_size >= 1 && input_size >= output_size,
            "%s across processes: input i pairs with output i, so it takes at least one of each and no fewer inputs "
            "than outputs (got %d inputs, %d outputs)",
            name, input_size, output_size);
  constexpr int kTypes = CCV_32F | CCV_64F | CCV_16F | CCV_16BF | CCV_32S;
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t* x = inputs[i];
    const ccv_nnc_tensor_t* y = outputs[i];
    NNC_CHECK(x && y, "%s across processes: pair %d has a NULL %s", name, i, x ? "output" : "input");
    NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(x) && !CCV_IS_TENSOR_MULTIVIEW(y), "%s across processes: pair %d is a multi-view",
              name, i);
    NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) & kTypes, "%s across processes: input %d is %s; it takes 16F, 16BF, 32F, 64F and 32S",
              name, i, dt_name(x));
    NNC_CHECK(same_shape(x->info.dim, y->info.dim) && CCV_GET_DATA_TYPE(x->info.datatype) == CCV_GET_DATA_TYPE(y->info.datatype),
              "%s across processes: output %d is %s %s but input %d is %s %s", name, i, dt_name(y),
              shape_string(y->info.dim).c_str(), i, dt_name(x), shape_string(x->info.dim).c_str());
  }
}

int run_across(ccv_nnc_comm_t* comm, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
               ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream) {
  const int n = pair_count(input_size, output_size);
  bool any_gpu = false, all_gpu = true;
  for (int i = 0; i < n; i++) {
    const bool g = is_gpu_tensor(inputs[i]) && is_gpu_tensor(outputs[i]);
    any_gpu = any_gpu || is_gpu_tensor(inputs[i]) || is_gpu_tensor(outputs[i]);
    all_gpu = all_gpu && g;
  }
  if (any_gpu) {
    const GpuAcrossHooks* hooks = gpu_across_hooks();
    if (all_gpu && hooks && hooks->run && !staging_forced() && hooks->run(comm, cmd, inputs, outputs, n, stream))
      return CCV_NNC_EXEC_SUCCESS;
    // Staged: the host reads what the stream's queued work writes.
    if (stream) host_sync(stream);
  }
  const char* what = ccv_nnc_cmd_name(cmd);
  Collective op = Collective::Allreduce;
  bool write_everywhere = true;  // false: only the root's outputs are written
  bool zero_elsewhere = false;   // BROADCAST's backward: non-root outputs are zeros
  switch (cmd) {
    case CCV_NNC_COMM_ALLREDUCE_FORWARD:
    case CCV_NNC_COMM_ALLREDUCE_BACKWARD: op = Collective::Allreduce; break;
    case CCV_NNC_COMM_BROADCAST_FORWARD:
    case CCV_NNC_COMM_REDUCE_BACKWARD: op = Collective::Broadcast; break;
    case CCV_NNC_COMM_REDUCE_FORWARD:
      op = Collective::Reduce;
      write_everywhere = false;
      break;
    case CCV_NNC_COMM_BROADCAST_BACKWARD:
      op = Collective::Reduce;
      write_everywhere = false;
      zero_elsewhere = true;
      break;
    default: fail(CCV_NNC_EXEC_INVALID, "%s: not a COMM_ command", what);
  }
  const bool root = comm->rank == 0;
  std::vector<Layout> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) {
    in[static_cast<size_t>(i)] = layout_of(inputs[i], "input");
    out[static_cast<size_t>(i)] = layout_of(outputs[i], "output");
  }
  // One pair, both packed: straight from the tensors.
  if (!any_gpu && n == 1 && in[0].packed() && out[0].packed()) {
    Job job;
    job.op = op;
    job.what = what;
    job.datatype = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
    job.count = in[0].count();
    job.root = 0;
    const bool in_place = in[0].data == out[0].data;
    if (op == Collective::Reduce && !root) {
      job.send = in[0].data;  // nothing is received here
      job.recv = in[0].data;
    } else {
      job.send = in_place ? nullptr : in[0].data;
      job.recv = out[0].data;
    }
    run(comm, &job);
    if (zero_elsewhere && !root) std::memset(out[0].data, 0, out[0].count() * out[0].element_size);
    return CCV_NNC_EXEC_SUCCESS;
  }
  // Otherwise one staging buffer per datatype, in the order of first appearance.
  std::vector<int> types;
  for (int i = 0; i < n; i++) {
    const int dt = in[static_cast<size_t>(i)].datatype;
    if (std::find(types.begin(), types.end(), dt) == types.end()) types.push_back(dt);
  }
  // GPU pairs: through the communicator's pinned buffer, one call at a time.
  std::unique_lock<std::mutex> staging_lock(comm->gpu_mutex, std::defer_lock);
  if (any_gpu) staging_lock.lock();
  std::vector<unsigned char> own;
  for (int dt : types) {
    size_t count = 0;
    for (int i = 0; i < n; i++)
      if (in[static_cast<size_t>(i)].datatype == dt) count += in[static_cast<size_t>(i)].count();
    const size_t es = datatype_size(dt);
    unsigned char* staging = nullptr;
    if (any_gpu) {
      staging = staging_of(comm, count * es);
    } else {
      own.resize(count * es);
      staging = own.data();
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
      const Layout& x = in[static_cast<size_t>(i)];
      if (x.datatype != dt) continue;
      if (is_gpu_tensor(inputs[i])) to_host(inputs[i], staging + at * es, what);
      else pack(x, staging + at * es);
      at += x.count();
    }
    Job job;
    job.op = op;
    job.what = what;
    job.datatype = dt;
    job.count = count;
    job.recv = staging;
    run(comm, &job);
    if (!write_everywhere && !root && !zero_elsewhere) continue;
    at = 0;
    for (int i = 0; i < n; i++) {
      const Layout& y = out[static_cast<size_t>(i)];
      if (y.datatype != dt) continue;
      if (is_gpu_tensor(outputs[i])) {
        if (!write_everywhere && !root) std::memset(staging + at * es, 0, y.count() * es);
        from_host(staging + at * es, outputs[i], what);
      } else if (!write_everywhere && !root) {
        for_each_index(y.dim.data(), y.nd, [&](const int* idx) { std::memset(y.at(idx), 0, es); });
      } else {
        unpack(staging + at * es, y);
      }
      at += y.count();
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::comm
