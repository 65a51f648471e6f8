// COMM_ALLREDUCE / COMM_BROADCAST / COMM_REDUCE on one device: the
// collectives data parallelism places between device copies of a tensor,
// here with every copy a CPU tensor in this process (the multi-device case
// comes with NCCL). Each tensor of one call has one shape and type (16F, 16BF,
// 32F, 64F or 32S); sums are taken in double and rounded once (32S sums
// saturate at its range). The only reduction is the sum
// (CCV_NNC_PARALLEL_REDUCE_OP_SUM).
//   ALLREDUCE forward |x_0..x_{n-1}| -> |y_0..y_{n-1}|: every y_i = sum of x.
//   ALLREDUCE backward |g_0..g_{n-1}, ...| -> |dx_0..dx_{n-1}|: every dx_j =
//     the sum of the first n inputs (the gradients; forward tensors after
//     them are ignored).
//   BROADCAST forward |x| -> |y_0..y_{k-1}|: every y_i = x.
//   BROADCAST backward |g_0..g_{k-1}| -> |dx_0..|: every output = sum of g.
//   REDUCE forward |x_0..x_{n-1}| -> |y_0..y_{n-1}|: y_0 = sum of x; the other
//     outputs are the other devices' receive buffers and are not written
//     (as NCCL's reduce leaves them).
//   REDUCE backward |g_0, ...| -> |dx_0..dx_{n-1}|: every dx_j = g_0.
// Given a communicator (ccv_nnc_cmd_set_comm) the commands run across its
// processes instead: input i and output i are a pair (across.cpp).
// Shapes, bitmasks and in-place rules are libnnc's: the tensors present form
// one run from slot 0 (no gaps) and every slot is filled, except that the
// ALLREDUCE backward may have more inputs than outputs; forward outputs take
// their own input's parameters (BROADCAST's all take x's), backward outputs
// the first gradient's; ALLREDUCE may run with y_i on x_i, REDUCE's forward
// with y_0 on x_0, BROADCAST and REDUCE's backward with any output on any input.
#include "cmd/comm/comm.hpp"

#include "cmd/comm/communicator.hpp"
#include "cmd/comm/gpu_across.hpp"

#include <iterator>

#include "cmd/common/checks.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace comm {

namespace {

constexpr int kTypes = types::kFloat | CCV_32S;

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// Every tensor of the call present and like the first.
void check_all(const char* name, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
               int output_size, int used_inputs) {
  NNC_CHECK(used_inputs >= 1 && output_size >= 1, "%s: takes at least one input and one output (got %d, %d)", name,
            input_size, output_size);
  const ccv_nnc_tensor_t* first = inputs[0];
  NNC_CHECK(first, "%s: input 0 is NULL", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(first->info.datatype) & kTypes, "%s: input 0 is %s; it takes 16F, 16BF, 32F, 64F and 32S",
            name, dt(first));
  auto same = [&](const ccv_nnc_tensor_t* t, const char* role, int i) {
    NNC_CHECK(t, "%s: %s %d is NULL; every slot is needed", name, role, i);
    NNC_CHECK(same_shape(t->info.dim, first->info.dim) &&
                  CCV_GET_DATA_TYPE(t->info.datatype) == CCV_GET_DATA_TYPE(first->info.datatype),
              "%s: %s %d is %s %s but input 0 is %s %s", name, role, i, dt(t), shape_string(t->info.dim).c_str(),
              dt(first), shape_string(first->info.dim).c_str());
  };
  for (int i = 1; i < used_inputs; i++) same(inputs[i], "input", i);
  for (int i = 0; i < output_size; i++) same(outputs[i], "output", i);
}

void validate_allreduce_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                                int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (comm_of(cmd)) return validate_across("COMM_ALLREDUCE_FORWARD", inputs, input_size, outputs, output_size);
  const char* name = "COMM_ALLREDUCE_FORWARD";
  NNC_CHECK(input_size == output_size, "%s: one output per input (got %d inputs, %d outputs)", name, input_size,
            output_size);
  check_all(name, inputs, input_size, outputs, output_size, input_size);
}

void validate_allreduce_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                                 int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (comm_of(cmd)) return validate_across("COMM_ALLREDUCE_BACKWARD", inputs, input_size, outputs, output_size);
  const char* name = "COMM_ALLREDUCE_BACKWARD";
  NNC_CHECK(input_size >= output_size, "%s: one gradient per output first (got %d inputs, %d outputs)", name,
            input_size, output_size);
  check_all(name, inputs, input_size, outputs, output_size, output_size);
}

void validate_broadcast_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                                int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (comm_of(cmd)) return validate_across("COMM_BROADCAST_FORWARD", inputs, input_size, outputs, output_size);
  const char* name = "COMM_BROADCAST_FORWARD";
  NNC_CHECK(input_size == 1, "%s: takes one input (got %d)", name, input_size);
  check_all(name, inputs, input_size, outputs, output_size, 1);
}

void validate_all_inputs(const char* name, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size) {
  check_all(name, inputs, input_size, outputs, output_size, input_size);
}

void validate_broadcast_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                                 int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (comm_of(cmd)) return validate_across("COMM_BROADCAST_BACKWARD", inputs, input_size, outputs, output_size);
  validate_all_inputs("COMM_BROADCAST_BACKWARD", inputs, input_size, outputs, output_size);
}

void validate_reduce_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                             int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (comm_of(cmd)) return validate_across("COMM_REDUCE_FORWARD", inputs, input_size, outputs, output_size);
  const char* name = "COMM_REDUCE_FORWARD";
  NNC_CHECK(input_size == output_size, "%s: one output per input (got %d inputs, %d outputs)", name, input_size,
            output_size);
  validate_all_inputs(name, inputs, input_size, outputs, output_size);
}

void validate_reduce_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                              int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (comm_of(cmd)) return validate_across("COMM_REDUCE_BACKWARD", inputs, input_size, outputs, output_size);
  validate_all_inputs("COMM_REDUCE_BACKWARD", inputs, input_size, outputs, output_size);
}

// The present tensors of each side form one run from slot 0; returns their counts.
bool runs(const uint64_t* inputs, int isz, const uint64_t* outputs, int osz, int* in, int* out) {
  return ones_prefix(inputs, isz, in) && ones_prefix(outputs, osz, out);
}

bool allreduce_forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs,
                               int isz, const uint64_t* outputs, int osz) {
  int in = 0, out = 0;
  return runs(inputs, isz, outputs, osz, &in, &out) && out == in && input_size == output_size && input_size == in;
}

bool allreduce_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int output_size, const uint64_t* inputs, int isz,
                                const uint64_t* outputs, int osz) {
  int in = 0, out = 0;
  return runs(inputs, isz, outputs, osz, &in, &out) && out <= in && out == output_size;
}

bool broadcast_forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs,
                               int isz, const uint64_t* outputs, int osz) {
  int in = 0, out = 0;
  return runs(inputs, isz, outputs, osz, &in, &out) && out >= 1 && out == output_size && input_size == 1 &&
         in == 1;
}

// BROADCAST's backward and REDUCE's: every input and every output, at least one each.
bool all_present_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs,
                         int isz, const uint64_t* outputs, int osz) {
  int in = 0, out = 0;
  return runs(inputs, isz, outputs, osz, &in, &out) && in >= 1 && in == input_size && out == output_size &&
         output_size >= 1;
}

bool reduce_forward_bitmask(const ccv_nnc_cmd_param_t& p, int input_size, int output_size, const uint64_t* inputs,
                            int isz, const uint64_t* outputs, int osz) {
  return output_size == input_size && all_present_bitmask(p, input_size, output_size, inputs, isz, outputs, osz);
}

bool first_pair(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == 0 && output_idx == 0;
}

// Across processes with GPU tensors: a kernel in GPU_NCCL's place (it ranks
// before GPU_REF and the CPU backends, so it is chosen wherever a GPU tensor
// meets a communicator). The CUDA module's own GPU_NCCL kernel for the GPUs
// of one process, registered before this family, is kept and run for calls
// without a communicator. CPU tensors with a communicator stay with CPU_REF.
constexpr uint32_t kCommCmds[] = {CCV_NNC_COMM_ALLREDUCE_FORWARD, CCV_NNC_COMM_ALLREDUCE_BACKWARD, CCV_NNC_COMM_BROADCAST_FORWARD,
                                  CCV_NNC_COMM_BROADCAST_BACKWARD, CCV_NNC_COMM_REDUCE_FORWARD,    CCV_NNC_COMM_REDUCE_BACKWARD};
struct Kept {
  bool present = false;
  Kernel kernel;
};
Kept g_kept[std::size(kCommCmds)];

const Kept* kept_for(uint32_t cmd) {
  for (size_t i = 0; i < std::size(kCommCmds); i++)
    if (kCommCmds[i] == cmd) return g_kept[i].present ? &g_kept[i] : nullptr;
  return nullptr;
}

bool kept_accepts(const Kernel& k, const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  auto ok = [&](const ccv_nnc_tensor_t* t) {
    return !t || ((k.tensor_memory & CCV_TENSOR_GET_MEMORY(t->info.type)) && (k.tensor_formats & t->info.format) &&
                  (k.tensor_datatypes & CCV_GET_DATA_TYPE(t->info.datatype)));
  };
  for (int i = 0; i < input_size; i++)
    if (!ok(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!ok(outputs[i])) return false;
  return !k.accept || k.accept(cmd, inputs, input_size, outputs, output_size);
}

bool accept_across_gpu(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                       int output_size) {
  if (comm_of(cmd)) {
    for (int i = 0; i < input_size; i++)
      if (is_gpu_tensor(inputs[i])) return true;
    for (int i = 0; i < output_size; i++)
      if (is_gpu_tensor(outputs[i])) return true;
    return false;
  }
  const Kept* k = kept_for(cmd.cmd);
  return k && kept_accepts(k->kernel, cmd, inputs, input_size, outputs, output_size);
}

NNC_KERNEL(across_gpu) {
  if (ccv_nnc_comm_t* c = comm_of(cmd)) return run_across(c, cmd.cmd, inputs, input_size, outputs, output_size, stream_context);
  const Kept* k = kept_for(cmd.cmd);
  NNC_CHECK(k && k->kernel.exec, "%s: no kernel for these tensors without a communicator", ccv_nnc_cmd_name(cmd.cmd));
  return k->kernel.exec(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
}

}  // namespace

}  // namespace comm

void register_comm(Registry& r) {
  using namespace comm;
  r.add_command({.cmd = CCV_NNC_COMM_ALLREDUCE_FORWARD, .tensor_auto = shape::same_as_input_i, .bitmask = allreduce_forward_bitmask, .allow_inplace = inplace::same_index, .validate = validate_allreduce_forward});
  r.add_command({.cmd = CCV_NNC_COMM_ALLREDUCE_BACKWARD, .tensor_auto = shape::same_as_first_input, .bitmask = allreduce_backward_bitmask, .allow_inplace = inplace::same_index, .validate = validate_allreduce_backward});
  r.add_command({.cmd = CCV_NNC_COMM_BROADCAST_FORWARD, .tensor_auto = shape::same_as_first_input, .bitmask = broadcast_forward_bitmask, .allow_inplace = inplace::always, .validate = validate_broadcast_forward});
  r.add_command({.cmd = CCV_NNC_COMM_BROADCAST_BACKWARD, .tensor_auto = shape::same_as_input_i, .bitmask = all_present_bitmask, .allow_inplace = inplace::always, .validate = validate_broadcast_backward});
  r.add_command({.cmd = CCV_NNC_COMM_REDUCE_FORWARD, .tensor_auto = shape::same_as_input_i, .bitmask = reduce_forward_bitmask, .allow_inplace = first_pair, .validate = validate_reduce_forward});
  r.add_command({.cmd = CCV_NNC_COMM_REDUCE_BACKWARD, .tensor_auto = shape::same_as_first_input, .bitmask = all_present_bitmask, .allow_inplace = inplace::always, .validate = validate_reduce_backward});
  r.add_kernels(cpu_ref(kTypes), {{CCV_NNC_COMM_ALLREDUCE_FORWARD, allreduce_ref},
                                  {CCV_NNC_COMM_ALLREDUCE_BACKWARD, allreduce_ref},
                                  {CCV_NNC_COMM_BROADCAST_FORWARD, broadcast_forward_ref},
                                  {CCV_NNC_COMM_BROADCAST_BACKWARD, broadcast_backward_ref},
                                  {CCV_NNC_COMM_REDUCE_FORWARD, reduce_forward_ref},
                                  {CCV_NNC_COMM_REDUCE_BACKWARD, reduce_backward_ref}});
  for (size_t i = 0; i < std::size(kCommCmds); i++) {
    const Kernel* k = r.kernel(kCommCmds[i], CCV_NNC_BACKEND_GPU_NCCL);
    g_kept[i] = {};
    if (k) g_kept[i] = {true, *k};
    Kernel w;
    w.cmd = kCommCmds[i];
    w.backend = CCV_NNC_BACKEND_GPU_NCCL;
    w.tensor_formats = formats::kAll;
    w.tensor_datatypes = kTypes | (k ? k->tensor_datatypes : 0);
    w.tensor_memory = CCV_TENSOR_CPU_MEMORY | CCV_TENSOR_GPU_MEMORY;
    w.algorithms = k ? k->algorithms : 1;
    w.exclusive = k ? k->exclusive : false;
    w.exec = across_gpu;
    w.accept = accept_across_gpu;
    r.add_kernel(w);
  }
}

}  // namespace nnc
