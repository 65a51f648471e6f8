// The COMM_ commands run across a communicator's processes (a command given
// one with ccv_nnc_cmd_set_comm): input i and output i are a pair, each
// process holding its own copy. Pairs of one datatype travel in one message:
// packed into a staging buffer (any strides), reduced or broadcast there, and
// unpacked. One contiguous pair goes straight from the tensors, with no copy.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cmd/comm/comm.hpp"
#include "cmd/comm/communicator.hpp"
#include "cmd/common/checks.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::comm {

namespace {

const char* dt_name(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// Pairs a command exchanges: the first output_size inputs with the outputs.
int pair_count(int input_size, int output_size) { return std::min(input_size, output_size); }

}  // namespace

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
    NNC_CHECK(CCV_TENSOR_GET_MEMORY(x->info.type) == CCV_TENSOR_CPU_MEMORY &&
                  CCV_TENSOR_GET_MEMORY(y->info.type) == CCV_TENSOR_CPU_MEMORY,
              "%s across processes: pair %d is not in CPU memory (MPI moves CPU tensors; GPU tensors need NCCL)", name, i);
    NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) & kTypes, "%s across processes: input %d is %s; it takes 16F, 16BF, 32F, 64F and 32S",
              name, i, dt_name(x));
    NNC_CHECK(same_shape(x->info.dim, y->info.dim) && CCV_GET_DATA_TYPE(x->info.datatype) == CCV_GET_DATA_TYPE(y->info.datatype),
              "%s across processes: output %d is %s %s but input %d is %s %s", name, i, dt_name(y),
              shape_string(y->info.dim).c_str(), i, dt_name(x), shape_string(x->info.dim).c_str());
  }
}

int run_across(ccv_nnc_comm_t* comm, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
               ccv_nnc_tensor_t* const* outputs, int output_size) {
  const int n = pair_count(input_size, output_size);
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
  if (n == 1 && in[0].packed() && out[0].packed()) {
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
  for (int dt : types) {
    size_t count = 0;
    for (int i = 0; i < n; i++)
      if (in[static_cast<size_t>(i)].datatype == dt) count += in[static_cast<size_t>(i)].count();
    const size_t es = datatype_size(dt);
    std::vector<unsigned char> staging(count * es);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
      const Layout& x = in[static_cast<size_t>(i)];
      if (x.datatype != dt) continue;
      pack(x, staging.data() + at * es);
      at += x.count();
    }
    Job job;
    job.op = op;
    job.what = what;
    job.datatype = dt;
    job.count = count;
    job.recv = staging.data();
    run(comm, &job);
    if (!write_everywhere && !root && !zero_elsewhere) continue;
    at = 0;
    for (int i = 0; i < n; i++) {
      const Layout& y = out[static_cast<size_t>(i)];
      if (y.datatype != dt) continue;
      if (!write_everywhere && !root) {
        for_each_index(y.dim.data(), y.nd, [&](const int* idx) { std::memset(y.at(idx), 0, es); });
      } else {
        unpack(staging.data() + at * es, y);
      }
      at += y.count();
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::comm
