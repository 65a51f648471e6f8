// GPU_NCCL under CPU emulation (design: CMakeLists.txt here): the part of
// NCCL that cuda/nccl.cpp calls, over the emulated runtime's devices
// (EMU_DEVICES), so that nccl.cpp runs unchanged: communicators for the
// devices of one process (ncclCommInitAll) and ALLREDUCE / BROADCAST /
// REDUCE, sums in double rounded once to the data's type. As with NCCL in
// one thread, the calls of the ranks of one communicator are grouped
// (ncclGroupStart / End) and match in the order each rank made them; a
// collective of more than one rank outside a group would wait forever on a
// GPU, and fails here. Not emulated: communicators across processes
// (nccl_across.cpp), other collectives, other reduction operators.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "emu_hooks.hpp"

namespace {

struct Clique;
struct Comm {
  std::shared_ptr<Clique> clique;
  int rank;
  int device;
};
enum class Op { kAllReduce, kBroadcast, kReduce };
struct Call {
  Op op;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  int root;
  cudaStream_t stream;
};
// The ranks of one ncclCommInitAll, and each rank's calls queued in the open group.
struct Clique {
  int ranks;
  std::vector<std::vector<Call>> queued;
};

std::mutex g_mutex;
int g_group_depth = 0;
std::vector<std::shared_ptr<Clique>> g_touched;  // cliques with calls queued in the open group

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}
double load(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8: return static_cast<const int8_t*>(p)[i];
    case ncclUint8: return static_cast<const uint8_t*>(p)[i];
    case ncclInt32: return static_cast<const int32_t*>(p)[i];
    case ncclUint32: return static_cast<const uint32_t*>(p)[i];
    case ncclInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case ncclUint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case ncclFloat16: return __half2float(static_cast<const __half*>(p)[i]);
    case ncclBfloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case ncclFloat64: return static_cast<const double*>(p)[i];
    default: return static_cast<const float*>(p)[i];
  }
}
void store(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case ncclUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case ncclInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case ncclUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case ncclInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case ncclUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case ncclFloat16: static_cast<__half*>(p)[i] = __float2half(static_cast<float>(v)); break;
    case ncclBfloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v)); break;
    case ncclFloat64: static_cast<double*>(p)[i] = v; break;
    default: static_cast<float*>(p)[i] = static_cast<float>(v); break;
  }
}

// One collective: the j-th call of every rank (they must agree).
ncclResult_t run(const std::vector<const Call*>& calls) {
  const Call& c0 = *calls[0];
  for (const Call* c : calls)
    if (c->op != c0.op || c->count != c0.count || c->type != c0.type || c->root != c0.root) {
      std::fprintf(stderr, "gpu-emu: NCCL: the ranks' calls of one collective disagree (operation, count, type or root)\n");
      return ncclInvalidUsage;
    }
  // One operation on every rank's stream (a kernel a rank, each waiting for
  // the others: one operation after all their streams' work).
  std::vector<const void*> streams;
  std::vector<Call> copies;
  for (const Call* c : calls) streams.push_back(c->stream), copies.push_back(*c);
  emu::library_work(streams.data(), streams.size(), [copies] {
    const Call& c0 = copies[0];
    const size_t n = c0.count, es = type_size(c0.type);
    switch (c0.op) {
      case Op::kAllReduce:
      case Op::kReduce: {
        std::vector<double> sum(n, 0.0);
        for (const Call& c : copies)
          for (size_t i = 0; i < n; i++) sum[i] += load(c0.type, c.send, i);
        for (size_t r = 0; r < copies.size(); r++)
          if (c0.op == Op::kAllReduce || static_cast<int>(r) == c0.root)
            for (size_t i = 0; i < n; i++) store(c0.type, copies[r].recv, i, sum[i]);
        break;
      }
      case Op::kBroadcast: {
        std::vector<unsigned char> data(n * es);
        std::memcpy(data.data(), copies[static_cast<size_t>(c0.root)].send, n * es);
        for (const Call& c : copies) std::memcpy(c.recv, data.data(), n * es);
        break;
      }
    }
  });
  return ncclSuccess;
}

// Runs every complete collective of a clique (all ranks have queued one).
ncclResult_t flush(Clique& q) {
  size_t complete = q.queued[0].size();
  for (const auto& v : q.queued) complete = std::min(complete, v.size());
  for (const auto& v : q.queued)
    if (v.size() != complete) {
      std::fprintf(stderr, "gpu-emu: NCCL: a group ended with %zu and %zu calls from two ranks of one communicator "
                   "(on a GPU it would wait forever)\n", complete, v.size());
      for (auto& w : q.queued) w.clear();
      return ncclInvalidUsage;
    }
  ncclResult_t r = ncclSuccess;
  for (size_t j = 0; j < complete && r == ncclSuccess; j++) {
    std::vector<const Call*> calls;
    for (const auto& v : q.queued) calls.push_back(&v[j]);
    r = run(calls);
  }
  for (auto& v : q.queued) v.clear();
  return r;
}

ncclResult_t enqueue(ncclComm_t comm, const Call& c) {
  Comm* m = reinterpret_cast<Comm*>(comm);
  if (!m || type_size(c.type) == 0 || (c.root < 0 || c.root >= m->clique->ranks)) return ncclInvalidArgument;
  const std::lock_guard<std::mutex> lock(g_mutex);
  m->clique->queued[static_cast<size_t>(m->rank)].push_back(c);
  if (g_group_depth > 0) {
    bool seen = false;
    for (const auto& q : g_touched) seen = seen || q == m->clique;
    if (!seen) g_touched.push_back(m->clique);
    return ncclSuccess;
  }
  if (m->clique->ranks > 1) {
    m->clique->queued[static_cast<size_t>(m->rank)].clear();
    std::fprintf(stderr, "gpu-emu: NCCL: a collective of %d ranks called outside ncclGroupStart / End from one thread "
                 "(on a GPU it would wait forever)\n", m->clique->ranks);
    return ncclInvalidUsage;
  }
  return flush(*m->clique);
}

}  // namespace

extern "C" {

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (gpu-emu)";
    case ncclInvalidUsage: return "invalid usage (gpu-emu)";
    default: return "NCCL error (gpu-emu)";
  }
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  EMU_API_CALL();
  int devices = 0;
  if (!comms || ndev < 1 || cudaGetDeviceCount(&devices) != cudaSuccess) return ncclInvalidArgument;
  for (int i = 0; i < ndev; i++) {
    const int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= devices) return ncclInvalidArgument;
    for (int j = 0; j < i; j++)
      if ((devlist ? devlist[j] : j) == d) return ncclInvalidUsage;  // NCCL: one rank a device in a process
  }
  auto clique = std::make_shared<Clique>();
  clique->ranks = ndev;
  clique->queued.resize(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; i++) comms[i] = reinterpret_cast<ncclComm_t>(new Comm{clique, i, devlist ? devlist[i] : i});
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  EMU_API_CALL();
  delete reinterpret_cast<Comm*>(comm);
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  EMU_API_CALL();
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_group_depth++;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  EMU_API_CALL();
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_group_depth == 0) return ncclInvalidUsage;
  if (--g_group_depth > 0) return ncclSuccess;
  ncclResult_t r = ncclSuccess;
  for (const auto& q : g_touched) {
    const ncclResult_t f = flush(*q);
    if (r == ncclSuccess) r = f;
  }
  g_touched.clear();
  return r;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  EMU_API_CALL();
  if (op != ncclSum) return ncclInvalidArgument;
  return enqueue(comm, Call{Op::kAllReduce, send, recv, count, type, 0, stream});
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  EMU_API_CALL();
  return enqueue(comm, Call{Op::kBroadcast, send, recv, count, type, root, stream});
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  EMU_API_CALL();
  if (op != ncclSum) return ncclInvalidArgument;
  return enqueue(comm, Call{Op::kReduce, send, recv, count, type, root, stream});
}

}  // extern "C"
