// The COMM_ commands across the processes of a communicator (lib/cmd/comm)
// on NCCL, when every pair of a call is a packed tensor on one GPU of this
// process: the hook lib/cmd/comm/gpu_across.hpp describes, installed by
// register_cuda. Anything else (views, pairs on several devices, types NCCL
// lacks, NNC_COMM_GPU_STAGING=1) is declined and staged through the host by
// the core.
//
// One NCCL communicator per (communicator, device), made on first use: rank
// 0's ncclGetUniqueId broadcast over the communicator's MPI engine, then
// ncclCommInitRank on the device (every process makes its own on its first
// GPU call, so the first GPU call of every process must come at the same
// point of their collectives, as every collective must). It is kept on the
// communicator and destroyed with it (aborted if the communicator failed).
//   ALLREDUCE forward / backward: ncclAllReduce per pair (sum)
//   BROADCAST forward, REDUCE backward: ncclBroadcast from rank 0
//   REDUCE forward: ncclReduce to rank 0 (the other ranks' outputs untouched)
//   BROADCAST backward: ncclReduce to rank 0, the other ranks' outputs zeroed
// The pairs go in one NCCL group on the call's stream (stream_of: a GPU
// stream context's own CUDA stream, so the collective follows its queued
// work and its later work follows the collective; without one the call waits
// for its end). Every NCCL status other than success is an error with
// NCCL's message.
#include <nccl.h>

#include <cstring>
#include <string>

#include "cmd/comm/communicator.hpp"
#include "cmd/comm/gpu_across.hpp"
#include "core/error.hpp"
#include "core/gpu_stream.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/nccl_util.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

namespace {

// NCCL's statuses as errors that say the call went across processes.
#define NNC_NCCL_ACROSS_CHECK(call, what) check_nccl((call), (std::string(what) + " across processes").c_str(), #call)

struct Across {
  ncclComm_t comm = nullptr;
  int device = 0;
};

void* make_across(ccv_nnc_comm_t* comm, int device, void* arg) {
  const char* what = static_cast<const char*>(arg);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (comm->rank == 0) NNC_NCCL_ACROSS_CHECK(ncclGetUniqueId(&id), what);
  comm::Job job;
  job.op = comm::Collective::Broadcast;
  job.root = 0;
  job.recv = &id;
  job.count = sizeof(id);
  job.datatype = CCV_8U;
  job.what = what;
  comm::run(comm, &job);  // throws with the engine's message
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  ncclComm_t c = nullptr;
  NNC_NCCL_ACROSS_CHECK(ncclCommInitRank(&c, comm->size, id, comm->rank), what);
  auto* a = new Across;
  a->comm = c;
  a->device = device;
  return a;
}

void destroy_across(void* state, bool broken) {
  auto* a = static_cast<Across*>(state);
  if (!a) return;
  if (a->comm) {
    if (broken) ncclCommAbort(a->comm);
    else ncclCommDestroy(a->comm);
  }
  delete a;
}

bool packed_gpu(const ccv_nnc_tensor_t* t) {
  return t && !CCV_IS_TENSOR_VIEW(t) && !CCV_IS_TENSOR_MULTIVIEW(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY;
}

bool run_across_nccl(ccv_nnc_comm_t* comm, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs, int n,
                     ccv_nnc_stream_context_t* stream) {
  if (n < 1) return false;
  const int device = CCV_TENSOR_GET_DEVICE_ID(inputs[0]->info.type);
  for (int i = 0; i < n; i++) {
    ncclDataType_t t;
    if (!packed_gpu(inputs[i]) || !packed_gpu(outputs[i]) || CCV_TENSOR_GET_DEVICE_ID(inputs[i]->info.type) != device ||
        CCV_TENSOR_GET_DEVICE_ID(outputs[i]->info.type) != device || !nccl_type(inputs[i]->info.datatype, &t))
      return false;
  }
  if (stream && gpu_stream_device(stream) >= 0 && gpu_stream_device(stream) != device) return false;
  const char* what = ccv_nnc_cmd_name(cmd);
  auto* a = static_cast<Across*>(comm::device_state(comm, device, make_across, const_cast<char*>(what)));
  const cudaStream_t s = stream_of(stream, device, what);
  const bool root = comm->rank == 0;
  NNC_NCCL_ACROSS_CHECK(ncclGroupStart(), what);
  for (int i = 0; i < n; i++) {
    ncclDataType_t type = ncclFloat32;
    nccl_type(inputs[i]->info.datatype, &type);
    const size_t count = ccv_nnc_tensor_count(inputs[i]->info);
    void* x = inputs[i]->data.u8;
    void* y = outputs[i]->data.u8;
    ncclResult_t r = ncclSuccess;
    switch (cmd) {
      case CCV_NNC_COMM_ALLREDUCE_FORWARD:
      case CCV_NNC_COMM_ALLREDUCE_BACKWARD: r = ncclAllReduce(x, y, count, type, ncclSum, a->comm, s); break;
      case CCV_NNC_COMM_BROADCAST_FORWARD:
      case CCV_NNC_COMM_REDUCE_BACKWARD: r = ncclBroadcast(x, y, count, type, 0, a->comm, s); break;
      case CCV_NNC_COMM_REDUCE_FORWARD:
      case CCV_NNC_COMM_BROADCAST_BACKWARD: r = ncclReduce(x, root ? y : x, count, type, ncclSum, 0, a->comm, s); break;
      default: r = ncclInvalidArgument; break;
    }
    if (r != ncclSuccess) {
      ncclGroupEnd();
      check_nccl(r, (std::string(what) + " across processes").c_str(), "the collective");
    }
  }
  NNC_NCCL_ACROSS_CHECK(ncclGroupEnd(), what);
  if (cmd == CCV_NNC_COMM_BROADCAST_BACKWARD && !root)
    for (int i = 0; i < n; i++)
      NNC_CUDA_CHECK(cudaMemsetAsync(outputs[i]->data.u8, 0, ccv_nnc_tensor_count(outputs[i]->info) *
                                                                 datatype_size(CCV_GET_DATA_TYPE(outputs[i]->info.datatype)), s),
                     what);
  finish(stream, s, what);
  return true;
}

const comm::GpuAcrossHooks kHooks = {run_across_nccl, destroy_across};

}  // namespace

void install_nccl_across() { comm::set_gpu_across_hooks(&kHooks); }

}  // namespace nnc::cuda
