// GPU_NCCL: COMM_ALLREDUCE / COMM_BROADCAST / COMM_REDUCE forward across the
// GPUs of one process on NCCL, the collectives ccv_nnc_symbolic_graph_data_parallel
// inserts. Tensor i lives on its own GPU (one tensor per device, packed, one
// element count and type); the devices, in the order the tensors give them,
// form one NCCL communicator, made by ncclCommInitAll on first use and kept
// for the process.
//   ALLREDUCE |x_1 .. x_n| -> |y_1 .. y_n|   y_i = sum x (in place allowed)
//   BROADCAST |x| -> |y_1 .. y_n|            y_i = x, from x's device (which
//                                            may hold no y; it still takes part)
//   REDUCE    |x_1 .. x_n| -> |y_1 .. y_n|   y_1 = sum x on y_1's device
// and their backwards (lib/cmd/comm/comm.cpp's slots):
//   ALLREDUCE |g_1 .. g_n, ...| -> |dx_1 .. dx_n|  dx_i = sum g (the first n
//                                            inputs; an allreduce)
//   BROADCAST |g_1 .. g_n| -> |dx|           dx = sum g on dx's device (a
//                                            reduce; dx on one of g's devices)
//             |g_1 .. g_n| -> |dx_1 .. dx_n| every dx_i = sum g (dx_i beside
//                                            g_i: an allreduce, as CPU_REF)
//   REDUCE    |g_1, ...| -> |dx_1 .. dx_n|   dx_i = g_1 (a broadcast from g_1's
//                                            device; the other inputs unused)
// Without a stream context (or on a CPU one, which is waited for first) the
// call is synchronous: each device's part runs on its default stream and is
// waited for. On a GPU stream context it is queued and the host waits for
// nothing: the context's stream records an event that every rank's stream
// waits for — the inputs are written by then, since the context's stream is
// where this call's predecessors were ordered —, and the context's stream
// waits for each rank's end through an event, so work ordered after this call
// on it (or behind its signals) sees every output. The ranks run on the
// module's NCCL stream of their device (one per device), the context's own
// device's rank too: the collectives on a communicator are then issued to its
// ranks in one order, whichever streams of a schedule queue them (two
// collectives of one communicator running on different streams of a device
// could each wait inside NCCL for a rank the other one holds up).
// Collectives across processes are the MPI communicator's (lib/cmd/comm).
#include <nccl.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/nccl_util.hpp"
#include "core/gpu_stream.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

namespace {

int device_of(const ccv_nnc_tensor_t* t) { return CCV_TENSOR_GET_DEVICE_ID(t->info.type); }

// Communicators by device list, for the process's life (destroyed at exit).
struct Comms {
  std::mutex mutex;
  std::map<std::vector<int>, std::vector<ncclComm_t>> by_devices;
  ~Comms() {
    for (auto& [devices, comms] : by_devices)
      for (ncclComm_t c : comms) ncclCommDestroy(c);
  }
};
Comms g_comms;

std::vector<ncclComm_t> comms_for(const std::vector<int>& devices, const char* what) {
  const std::lock_guard<std::mutex> lock(g_comms.mutex);
  auto it = g_comms.by_devices.find(devices);
  if (it != g_comms.by_devices.end()) return it->second;
  std::vector<ncclComm_t> comms(devices.size());
  NNC_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()), what);
  g_comms.by_devices[devices] = comms;
  return comms;
}

// Packed GPU tensors of one count and type, each on a device of its own.
bool same_packed(ccv_nnc_tensor_t* const* ts, int n, size_t count, int datatype, std::vector<int>* devices) {
  for (int i = 0; i < n; i++) {
    const ccv_nnc_tensor_t* t = ts[i];
    if (!t || CCV_IS_TENSOR_VIEW(t) || CCV_IS_TENSOR_MULTIVIEW(t)) return false;
    if (CCV_TENSOR_GET_MEMORY(t->info.type) != CCV_TENSOR_GPU_MEMORY) return false;
    if (t->info.datatype != datatype || ccv_nnc_tensor_count(t->info) != count) return false;
    if (devices) {
      if (std::find(devices->begin(), devices->end(), device_of(t)) != devices->end()) return false;
      devices->push_back(device_of(t));
    }
  }
  return true;
}

bool accept_collective(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                       int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0]) return false;
  ncclDataType_t t;
  if (!nccl_type(inputs[0]->info.datatype, &t)) return false;
  const size_t count = ccv_nnc_tensor_count(inputs[0]->info);
  const int dt = inputs[0]->info.datatype;
  std::vector<int> in_devices, out_devices;
  switch (cmd.cmd) {
    case CCV_NNC_COMM_BROADCAST_FORWARD:
      return input_size == 1 && same_packed(inputs, 1, count, dt, nullptr) && same_packed(outputs, output_size, count, dt, &out_devices);
    case CCV_NNC_COMM_REDUCE_BACKWARD:  // a broadcast of g_1 (the other inputs unused)
      return same_packed(inputs, 1, count, dt, nullptr) && same_packed(outputs, output_size, count, dt, &out_devices);
    case CCV_NNC_COMM_ALLREDUCE_BACKWARD:  // the first output_size inputs are the gradients
      if (input_size < output_size) return false;
      return same_packed(inputs, output_size, count, dt, &in_devices) && same_packed(outputs, output_size, count, dt, &out_devices) &&
             in_devices == out_devices;
    case CCV_NNC_COMM_BROADCAST_BACKWARD:
      if (!same_packed(inputs, input_size, count, dt, &in_devices) || !same_packed(outputs, output_size, count, dt, &out_devices)) return false;
      if (output_size == 1) return std::find(in_devices.begin(), in_devices.end(), out_devices[0]) != in_devices.end();
      return in_devices == out_devices;
    default:
      break;
  }
  if (input_size != output_size) return false;
  if (!same_packed(inputs, input_size, count, dt, &in_devices) || !same_packed(outputs, output_size, count, dt, &out_devices)) return false;
  // Output i beside input i (REDUCE: the others are untouched, but on the same devices).
  return in_devices == out_devices;
}

// A CPU stream context's work (which may write the inputs) is done first.
void wait_for(ccv_nnc_stream_context_t* stream_context) {
  if (stream_context && !is_gpu_stream(stream_context)) ccv_nnc_stream_context_wait(stream_context);
}

// The module's NCCL stream of each device (non-blocking, made on first use,
// kept for the process): the ranks of queued collectives run there.
cudaStream_t nccl_stream(int device, const char* what) {
  static std::mutex mutex;
  static std::map<int, cudaStream_t> streams;
  const std::lock_guard<std::mutex> lock(mutex);
  cudaStream_t& s = streams[device];
  if (!s) {
    NNC_CUDA_CHECK(cudaSetDevice(device), what);
    NNC_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), what);
  }
  return s;
}

// An event recorded on s (of `device`) that `waiter` then waits for; released
// at once (CUDA keeps it until the wait is done).
void order_after(int device, cudaStream_t s, cudaStream_t waiter, const char* what) {
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  cudaEvent_t e = nullptr;
  NNC_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
  struct Release {
    cudaEvent_t e;
    ~Release() { cudaEventDestroy(e); }
  } release{e};
  NNC_CUDA_CHECK(cudaEventRecord(e, s), what);
  NNC_CUDA_CHECK(cudaStreamWaitEvent(waiter, e, 0), what);
}

// One NCCL group over `devices` (rank i on devices[i]): `call(i, comm,
// stream)` queues rank i's part. Synchronous (every device's part waited
// for), or queued behind and before a GPU stream context (file comment).
template <class F>
void group(ccv_nnc_stream_context_t* stream_context, const std::vector<int>& devices, const ccv_nnc_tensor_t* like,
           const char* what, F&& call) {
  const std::vector<ncclComm_t> comms = comms_for(devices, what);
  ncclDataType_t type = ncclFloat32;
  NNC_CHECK(nccl_type(like->info.datatype, &type), "%s: NCCL has no type for these tensors", what);
  const size_t count = ccv_nnc_tensor_count(like->info);
  const bool queued = is_gpu_stream(stream_context);
  const int home = queued ? gpu_stream_device(stream_context) : -1;
  const cudaStream_t s0 = queued ? stream_of(stream_context, home, what) : nullptr;
  std::vector<cudaStream_t> streams;
  for (int d : devices) {
    if (!queued) {
      streams.push_back(stream_of(nullptr, d, what));
    } else {
      streams.push_back(nccl_stream(d, what));
      order_after(home, s0, streams.back(), what);  // the inputs are written
    }
  }
  NNC_NCCL_CHECK(ncclGroupStart(), what);
  for (size_t i = 0; i < devices.size(); i++) NNC_NCCL_CHECK(call(i, count, type, comms[i], streams[i]), what);
  NNC_NCCL_CHECK(ncclGroupEnd(), what);
  for (size_t i = 0; i < devices.size(); i++) {
    if (!queued) {
      NNC_CUDA_CHECK(cudaSetDevice(devices[i]), what);
      finish(nullptr, streams[i], what);
    } else {
      order_after(devices[i], streams[i], s0, what);  // the outputs are there for what follows on s0
    }
  }
  if (queued) NNC_CUDA_CHECK(cudaSetDevice(home), what);
}

std::vector<int> devices_of(ccv_nnc_tensor_t* const* ts, int n) {
  std::vector<int> devices;
  for (int i = 0; i < n; i++) devices.push_back(device_of(ts[i]));
  return devices;
}

// y_i = sum of x_i over the first n tensors of each list (device i's pair).
void allreduce_n(ccv_nnc_stream_context_t* stream_context, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs,
                 int n, const char* what) {
  group(stream_context, devices_of(inputs, n), inputs[0], what, [&](size_t i, size_t count, ncclDataType_t type, ncclComm_t comm, cudaStream_t s) {
    return ncclAllReduce(inputs[i]->data.u8, outputs[i]->data.u8, count, type, ncclSum, comm, s);
  });
}

// Every output = x, from x's device.
void broadcast_from(ccv_nnc_stream_context_t* stream_context, const ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* const* outputs,
                    int output_size, const char* what) {
  const int root_device = device_of(x);
  // The ranks: the root's device first, then each output's (the root's own output, if any, is its rank).
  std::vector<int> devices{root_device};
  std::vector<void*> recv{nullptr};
  for (int i = 0; i < output_size; i++) {
    if (device_of(outputs[i]) == root_device) {
      recv[0] = outputs[i]->data.u8;
      continue;
    }
    devices.push_back(device_of(outputs[i]));
    recv.push_back(outputs[i]->data.u8);
  }
  if (!recv[0]) recv[0] = x->data.u8;  // in place on the root
  group(stream_context, devices, x, what, [&](size_t i, size_t count, ncclDataType_t type, ncclComm_t comm, cudaStream_t s) {
    return ncclBroadcast(i == 0 ? x->data.u8 : nullptr, recv[i], count, type, 0, comm, s);
  });
}

NNC_KERNEL(allreduce) {
  static const char* what = "COMM_ALLREDUCE_FORWARD (GPU_NCCL)";
  wait_for(stream_context);
  allreduce_n(stream_context, inputs, outputs, input_size, what);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(broadcast) {
  static const char* what = "COMM_BROADCAST_FORWARD (GPU_NCCL)";
  wait_for(stream_context);
  broadcast_from(stream_context, inputs[0], outputs, output_size, what);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(reduce) {
  static const char* what = "COMM_REDUCE_FORWARD (GPU_NCCL)";
  wait_for(stream_context);
  group(stream_context, devices_of(inputs, input_size), inputs[0], what, [&](size_t i, size_t count, ncclDataType_t type, ncclComm_t comm, cudaStream_t s) {
    return ncclReduce(inputs[i]->data.u8, i == 0 ? outputs[0]->data.u8 : nullptr, count, type, ncclSum, 0, comm, s);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

// The gradient of an allreduce is the allreduce of the gradients.
NNC_KERNEL(allreduce_backward) {
  static const char* what = "COMM_ALLREDUCE_BACKWARD (GPU_NCCL)";
  wait_for(stream_context);
  allreduce_n(stream_context, inputs, outputs, output_size, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// The gradient of a broadcast: the sum of the gradients, reduced onto dx's
// device, or allreduced when every g has its dx.
NNC_KERNEL(broadcast_backward) {
  static const char* what = "COMM_BROADCAST_BACKWARD (GPU_NCCL)";
  wait_for(stream_context);
  if (output_size == input_size && output_size > 1) {
    allreduce_n(stream_context, inputs, outputs, output_size, what);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const std::vector<int> devices = devices_of(inputs, input_size);
  const int root = static_cast<int>(std::find(devices.begin(), devices.end(), device_of(outputs[0])) - devices.begin());
  group(stream_context, devices, inputs[0], what, [&](size_t i, size_t count, ncclDataType_t type, ncclComm_t comm, cudaStream_t s) {
    return ncclReduce(inputs[i]->data.u8, static_cast<int>(i) == root ? outputs[0]->data.u8 : nullptr, count, type, ncclSum,
                      root, comm, s);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

// The gradient of a reduce: the root's gradient to every device.
NNC_KERNEL(reduce_backward) {
  static const char* what = "COMM_REDUCE_BACKWARD (GPU_NCCL)";
  wait_for(stream_context);
  broadcast_from(stream_context, inputs[0], outputs, output_size, what);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_nccl(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_NCCL;
  t.datatypes = CCV_32F | CCV_64F | CCV_16F | CCV_16BF | CCV_32S | CCV_64S | CCV_8U;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.formats = formats::kAll;
  r.add_kernels(t.accepting(accept_collective), {{CCV_NNC_COMM_ALLREDUCE_FORWARD, allreduce},
                                                 {CCV_NNC_COMM_BROADCAST_FORWARD, broadcast},
                                                 {CCV_NNC_COMM_REDUCE_FORWARD, reduce},
                                                 {CCV_NNC_COMM_ALLREDUCE_BACKWARD, allreduce_backward},
                                                 {CCV_NNC_COMM_BROADCAST_BACKWARD, broadcast_backward},
                                                 {CCV_NNC_COMM_REDUCE_BACKWARD, reduce_backward}});
}

}  // namespace nnc::cuda
