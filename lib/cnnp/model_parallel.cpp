// Data parallelism of a model across processes (ccv_cnnp_model_set_comm).
//
// Every process builds and compiles the same model and fits it on its own
// shard of the data. At set_comm (or at compile, whichever comes last) the
// processes check that they hold the same parameters (count, shapes, types)
// and take rank 0's values, so they start equal. fit's graphs then average
// each gradient over the processes before the minimiser
// (ccv_nnc_symbolic_graph_data_parallel_comm: buckets overlapped with the
// backward); apply_gradients averages the accumulated gradients first. With
// equal starts and equal averaged gradients, every process applies the same
// updates and the parameters stay equal.
#include <cstring>
#include <vector>

#include "cmd/comm/communicator.hpp"
#include "cmd/comm/gpu_across.hpp"
#include "cnnp/model.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::cnnp {

namespace {

// FNV-1a over the parameters' descriptions.
uint64_t signature(const Compiled& c) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](int64_t v) {
    for (int i = 0; i < 8; i++) {
      h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  for (const Param& p : c.params) {
    const ccv_nnc_tensor_param_t& info = p.tensor->info;
    mix(CCV_GET_DATA_TYPE(info.datatype));
    for (int d = 0; d < CCV_NNC_MAX_DIM && info.dim[d]; d++) mix(info.dim[d]);
    mix(-1);
    mix(p.trainable);
  }
  return h;
}

// Rank 0's bytes of `t` to every process. A GPU tensor (a model compiled on
// a GPU) travels through host memory by DATA_TRANSFER (gpu_across.hpp): the
// host never reads or writes device memory itself.
void broadcast_tensor(ccv_nnc_comm_t* comm, ccv_nnc_tensor_t* t, const char* what) {
  comm::Job job;
  job.op = comm::Collective::Broadcast;
  job.root = 0;
  job.count = ccv_nnc_tensor_count(t->info) * datatype_size(CCV_GET_DATA_TYPE(t->info.datatype));
  job.datatype = CCV_8U;
  job.what = what;
  if (!comm::is_gpu_tensor(t)) {
    job.recv = t->data.u8;
    comm::run(comm, &job);
    return;
  }
  std::vector<unsigned char> host(job.count);
  if (comm->rank == 0) comm::to_host(t, host.data(), what);
  job.recv = host.data();
  comm::run(comm, &job);
  if (comm->rank != 0) comm::from_host(host.data(), t, what);
}

}  // namespace

bool averages(const Model* m) { return m->comm && m->comm->size > 1; }

void set_comm(Model* m, ccv_nnc_comm_t* comm, size_t bucket_bytes) {
  const char* what = "ccv_cnnp_model_set_comm";
  NNC_CHECK(!comm || comm::is_live(comm), "%s: not a live communicator (freed?)", what);
  NNC_CHECK(!comm || m->parallel <= 1,
            "%s: model %s runs on %d devices of this process (ccv_cnnp_model_set_data_parallel); across processes too is not supported",
            what, model_label(*m).c_str(), m->parallel);
  m->comm = comm;
  m->comm_bucket_bytes = bucket_bytes;
  if (m->compiled) {
    drop_jits(m);  // fit's graphs change: averaging in or out
    if (comm) sync_parameters(m, what);
  }
}

void sync_parameters(Model* m, const char* what) {
  if (!averages(m) || !m->compiled) return;
  Compiled& c = *m->compiled;
  // Each process's (parameter count, signature), gathered everywhere, so every
  // process sees a mismatch and fails alike.
  const int64_t mine[2] = {static_cast<int64_t>(c.params.size()), static_cast<int64_t>(signature(c))};
  std::vector<int64_t> all(static_cast<size_t>(m->comm->size) * 2);
  comm::Job job;
  job.op = comm::Collective::Allgather;
  job.send = mine;
  job.recv = all.data();
  job.count = sizeof(mine);
  job.datatype = CCV_8U;
  job.what = what;
  comm::run(m->comm, &job);
  for (int r = 1; r < m->comm->size; r++) {
    const int64_t count = all[static_cast<size_t>(r) * 2], sig = all[static_cast<size_t>(r) * 2 + 1];
    NNC_CHECK(count == all[0] && sig == all[1],
              "%s: the processes built different models: rank %d has %lld parameters (signature %016llx), rank 0 has %lld "
              "(signature %016llx); every process must build and compile the same model",
              what, r, static_cast<long long>(count), static_cast<unsigned long long>(sig), static_cast<long long>(all[0]),
              static_cast<unsigned long long>(all[1]));
  }
  for (Param& p : c.params) {
    broadcast_tensor(m->comm, p.tensor.get(), what);
    p.initialized = true;
    for (auto& a : p.aux)
      if (a) broadcast_tensor(m->comm, a.get(), what);
  }
}

void average_gradients(Model* m, const char* what) {
  if (!averages(m)) return;
  Compiled& c = *m->compiled;
  // Every process averages the same list (the same model), in one message
  // per datatype; a parameter without a gradient here contributes zeros.
  std::vector<Param*> params;
  for (Param& p : c.params)
    if (p.trainable) {
      if (!p.gradient) {
        p.gradient = new_tensor(p.tensor->info);
        ccv_nnc_tensor_zero(p.gradient.get());
      }
      params.push_back(&p);
    }
  for (int dt : {CCV_32F, CCV_64F, CCV_16F, CCV_16BF}) {
    std::vector<ccv_nnc_tensor_t*> ts;
    for (Param* p : params)
      if (CCV_GET_DATA_TYPE(p->gradient->info.datatype) == dt) ts.push_back(p->gradient.get());
    if (ts.empty()) continue;
    const ccv_nnc_cmd_t allreduce =
        ccv_nnc_cmd_set_comm(ccv_nnc_cmd(CCV_NNC_COMM_ALLREDUCE_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), m->comm);
    int r = ccv_nnc_cmd_exec(allreduce, ccv_nnc_no_hint, 0, ts.data(), static_cast<int>(ts.size()), ts.data(),
                             static_cast<int>(ts.size()), nullptr);
    if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: averaging the gradients: %s", what, error_message().c_str());
    // The sums to averages, in place, by the command's own kernels.
    ccv_nnc_cmd_param_t p{};
    p.blas.a[0] = 1.f / static_cast<float>(m->comm->size);
    const ccv_nnc_cmd_t scale = ccv_nnc_cmd(CCV_NNC_SCALAR_MUL_FORWARD, nullptr, p, 0);
    for (ccv_nnc_tensor_t* t : ts) {
      r = ccv_nnc_cmd_exec(scale, ccv_nnc_no_hint, 0, &t, 1, &t, 1, nullptr);
      if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: averaging the gradients: %s", what, error_message().c_str());
    }
  }
  for (Param* p : params) p->has_gradient = true;
}

}  // namespace nnc::cnnp
