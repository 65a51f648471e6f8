// CPU_REF kernels of the single-device collectives: the inputs summed (or
// copied) into a buffer of doubles first, then written to every output, so
// any output may share memory with any input.
#include <vector>

#include "cmd/comm/comm.hpp"
#include "cmd/comm/communicator.hpp"
#include "core/tensor.hpp"

namespace nnc::comm {

namespace {

// Sum of inputs[0 .. n) in row-major order of the shape.
std::vector<double> sum_of(ccv_nnc_tensor_t* const* inputs, int n) {
  std::vector<double> sum;
  for (int k = 0; k < n; k++) {
    const Layout l = layout_of(inputs[k], "input");
    if (k == 0) sum.assign(l.count(), 0.0);
    size_t i = 0;
    for_each_index(l.dim.data(), l.nd, [&](const int* at) { sum[i++] += load_double(l.at(at), l.datatype); });
  }
  return sum;
}

void write(ccv_nnc_tensor_t* const* outputs, int n, const std::vector<double>& v) {
  for (int k = 0; k < n; k++) {
    const Layout l = layout_of(outputs[k], "output");
    size_t i = 0;
    for_each_index(l.dim.data(), l.nd, [&](const int* at) { store_double(l.at(at), l.datatype, v[i++]); });
  }
}

}  // namespace

// The forward and the backward alike: every output gets the sum of the first
// output_size inputs (the forward has exactly that many).
NNC_KERNEL(allreduce_ref) {
  if (ccv_nnc_comm_t* c = comm_of(cmd)) return run_across(c, cmd.cmd, inputs, input_size, outputs, output_size);
  write(outputs, output_size, sum_of(inputs, output_size));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(broadcast_forward_ref) {
  if (ccv_nnc_comm_t* c = comm_of(cmd)) return run_across(c, cmd.cmd, inputs, input_size, outputs, output_size);
  write(outputs, output_size, sum_of(inputs, 1));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(broadcast_backward_ref) {
  if (ccv_nnc_comm_t* c = comm_of(cmd)) return run_across(c, cmd.cmd, inputs, input_size, outputs, output_size);
  write(outputs, output_size, sum_of(inputs, input_size));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(reduce_forward_ref) {
  if (ccv_nnc_comm_t* c = comm_of(cmd)) return run_across(c, cmd.cmd, inputs, input_size, outputs, output_size);
  write(outputs, 1, sum_of(inputs, input_size));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(reduce_backward_ref) {
  if (ccv_nnc_comm_t* c = comm_of(cmd)) return run_across(c, cmd.cmd, inputs, input_size, outputs, output_size);
  write(outputs, output_size, sum_of(inputs, 1));
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::comm
