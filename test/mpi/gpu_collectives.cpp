// The COMM_ commands across processes on GPU tensors (run under mpirun with
// 2 and 4 processes, and alone), on the pretend GPU (test/unit/fakegpu):
// device memory the host cannot touch, so a staging path that read device
// memory from the host would crash here as on a real GPU. Each process puts
// its tensors on pretend device rank % 2.
//
// Rank r's value i of pair p is (r + 1) * f(p, i), f a multiple of 1/4
// (an integer for 32S) of magnitude at most 1.5, so every sum over up to 4
// processes (at most 10 x 1.5) is exact in fp16, bf16, fp32, fp64 and 32S and
// the closed forms are compared exactly: the sum over the ranks is
// N (N + 1) / 2 x f, rank 0's value is f. Every call mixes datatypes (one
// message per type), strided views (written only inside the view: the
// elements around it keep their marks) and, in some calls, CPU tensors
// beside the GPU ones or pairs on both pretend devices of the process. On a GPU stream, the inputs are written by a kernel
// queued on the stream just before the call and the outputs read by one
// queued just after: a call that did not wait for the stream, or left its
// results out of the stream's order, gives wrong sums (the pretend stream
// runs queued work late). Then refusals with their messages, and the NCCL
// hook's consultation (a stand-in hook that declines: consulted only when
// every pair is on the GPU and NNC_COMM_GPU_STAGING is not set).
#include <cstdlib>
#include <string>

#include "cmd/comm/gpu_across.hpp"
#include "gpu_common.hpp"

using namespace gpu_mpi;

namespace {


struct Pair {
  int datatype;
  std::vector<int> dims;
  bool view = false;      // a strided view into a wider base (both sides)
  bool in_place = false;  // the output is the input
  bool cpu_in = false, cpu_out = false;
  int other_device = 0;  // 1: on this process's other pretend device
};

double f(const Pair& p, int which, size_t i) {
  const double base = static_cast<double>(static_cast<int>((i * 7 + static_cast<size_t>(which) * 3) % 13) - 6);
  return p.datatype == CCV_32S ? base : base * 0.25;
}

// One side of a pair: the tensor the command gets, its base, and the marks
// around a view.
struct Side {
  ccv_nnc_tensor_t* base = nullptr;
  ccv_nnc_tensor_view_t* view = nullptr;
  ccv_nnc_tensor_t* t() const { return view ? reinterpret_cast<ccv_nnc_tensor_t*>(view) : base; }
  std::vector<int> base_dims;
};

// Views: the pair's dims [a, b] inside a base [a + 1, b + 3] at (1, 2).
Side make_side(const Pair& p, bool cpu, double mark) {
  Side s;
  const int device = cpu ? -1 : (g_device + p.other_device) % 2;
  s.base_dims = p.dims;
  if (p.view) s.base_dims = {p.dims[0] + 1, p.dims[1] + 3};
  s.base = ccv_nnc_tensor_new(nullptr, params(device, p.datatype, s.base_dims), 0);
  if (p.view) {
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 2}, stride[CCV_NNC_MAX_DIM_ALLOC] = {s.base_dims[1], 1};
    s.view = ccv_nnc_tensor_view_new(s.base, params(device, p.datatype, p.dims), ofs, stride);
  }
  ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(nullptr, params(-1, p.datatype, s.base_dims), 0);
  for (size_t k = 0; k < ccv_nnc_tensor_count(h->info); k++) store(h, k, mark - static_cast<double>(k % 5));
  if (cpu) {
    std::memcpy(s.base->data.u8, h->data.u8, h->data_size);
  } else {
    from_cpu(h, s.base);
  }
  ccv_nnc_tensor_free(h);
  return s;
}

// Element i (row-major over the pair's dims) of the side's base index.
size_t base_index(const Pair& p, const Side& s, size_t i) {
  if (!p.view) return i;
  const size_t cols = static_cast<size_t>(p.dims[1]);
  return (i / cols + 1) * static_cast<size_t>(s.base_dims[1]) + 2 + i % cols;
}

void set_values(const Pair& p, Side& s, int which, double scale) {
  ccv_nnc_tensor_t* h = CCV_TENSOR_GET_MEMORY(s.base->info.type) == CCV_TENSOR_GPU_MEMORY ? to_cpu(s.base) : s.base;
  const size_t n = ccv_nnc_tensor_count(params(-1, p.datatype, p.dims));
  for (size_t i = 0; i < n; i++) store(h, base_index(p, s, i), (g_rank + 1) * f(p, which, i) * scale);
  if (h != s.base) {
    from_cpu(h, s.base);
    ccv_nnc_tensor_free(h);
  }
}

void free_side(Side& s) {
  if (s.view) ccv_nnc_tensor_view_free(s.view);
  ccv_nnc_tensor_free(s.base);
}

// Runs `id` across the processes on `pairs` and checks every element of the
// outputs' bases against the closed form. With a stream: inputs halved, then
// doubled on the stream before the call, outputs halved on it after and
// doubled back by the check.
void check_call(ccv_nnc_comm_t* comm, uint32_t id, const std::vector<Pair>& pairs, ccv_nnc_stream_context_t* stream, const char* label) {
  const int n = static_cast<int>(pairs.size());
  std::vector<Side> in(pairs.size()), out(pairs.size());
  for (int i = 0; i < n; i++) {
    const Pair& p = pairs[static_cast<size_t>(i)];
    in[static_cast<size_t>(i)] = make_side(p, p.cpu_in, -20);
    set_values(p, in[static_cast<size_t>(i)], i, stream ? 0.5 : 1);
    if (!p.in_place) out[static_cast<size_t>(i)] = make_side(p, p.cpu_out, -40);
  }
  std::vector<ccv_nnc_tensor_t*> ins, outs;
  for (int i = 0; i < n; i++) {
    ins.push_back(in[static_cast<size_t>(i)].t());
    outs.push_back(pairs[static_cast<size_t>(i)].in_place ? in[static_cast<size_t>(i)].t() : out[static_cast<size_t>(i)].t());
  }
  ccv_nnc_cmd_param_t two{}, half{};
  two.blas.a[0] = 2, half.blas.a[0] = 0.5;
  if (stream)
    for (int i = 0; i < n; i++)
      CHECK(exec(ccv_nnc_cmd(CCV_NNC_SCALAR_MUL_FORWARD, nullptr, two, 0), {ins[static_cast<size_t>(i)]}, {ins[static_cast<size_t>(i)]}, stream) ==
                CCV_NNC_EXEC_SUCCESS,
            "%s: doubling input %d on the stream", label, i);
  const ccv_nnc_cmd_t c = ccv_nnc_cmd_set_comm(cmd(id), comm);
  const int r = exec(c, ins, outs, stream);
  CHECK(r == CCV_NNC_EXEC_SUCCESS, "%s: %s across %d processes", label, ccv_nnc_cmd_name(id), g_size);
  if (stream) {
    for (int i = 0; i < n; i++)
      exec(ccv_nnc_cmd(CCV_NNC_SCALAR_MUL_FORWARD, nullptr, half, 0), {outs[static_cast<size_t>(i)]}, {outs[static_cast<size_t>(i)]}, stream);
    ccv_nnc_stream_context_wait(stream);
  }
  const double sum_of_ranks = g_size * (g_size + 1) / 2.0;
  const bool root = g_rank == 0;
  for (int i = 0; i < n; i++) {
    const Pair& p = pairs[static_cast<size_t>(i)];
    const Side& s = p.in_place ? in[static_cast<size_t>(i)] : out[static_cast<size_t>(i)];
    const bool on_gpu = CCV_TENSOR_GET_MEMORY(s.base->info.type) == CCV_TENSOR_GPU_MEMORY;
    ccv_nnc_tensor_t* h = on_gpu ? to_cpu(s.base) : s.base;
    const double mark = p.in_place ? -20 : -40;
    const double after = stream ? 0.5 : 1;  // the outputs were halved after the call
    // Around a view: the marks, untouched. Inside: the result, or what the
    // output held before the call where the command leaves it (halved too).
    std::vector<double> want(ccv_nnc_tensor_count(h->info));
    for (size_t k = 0; k < want.size(); k++) want[k] = mark - static_cast<double>(k % 5);
    const size_t count = ccv_nnc_tensor_count(params(-1, p.datatype, p.dims));
    for (size_t e = 0; e < count; e++) {
      const double fe = f(p, i, e);
      const size_t k = base_index(p, s, e);
      double v = want[k];
      switch (id) {
        case CCV_NNC_COMM_ALLREDUCE_FORWARD:
        case CCV_NNC_COMM_ALLREDUCE_BACKWARD: v = sum_of_ranks * fe; break;
        case CCV_NNC_COMM_BROADCAST_FORWARD:
        case CCV_NNC_COMM_REDUCE_BACKWARD: v = fe; break;
        case CCV_NNC_COMM_REDUCE_FORWARD:
          if (root) v = sum_of_ranks * fe;
          else if (p.in_place) v = (g_rank + 1) * fe;  // the input, as it was
          break;
        case CCV_NNC_COMM_BROADCAST_BACKWARD: v = root ? sum_of_ranks * fe : 0; break;
      }
      want[k] = v * after;
    }
    int bad = 0;
    for (size_t k = 0; k < want.size(); k++) {
      const double got = load(h, k);
      if (got != want[k] && bad++ < 3)
        std::printf("%s: rank %d pair %d element %zu: %g, want %g\n", label, g_rank, i, k, got, want[k]);
    }
    CHECK(bad == 0, "%s: %s pair %d (%d elements wrong) on rank %d of %d", label, ccv_nnc_cmd_name(id), i, bad, g_rank, g_size);
    if (h != s.base) ccv_nnc_tensor_free(h);
  }
  for (auto& s : in) free_side(s);
  for (int i = 0; i < n; i++)
    if (!pairs[static_cast<size_t>(i)].in_place) free_side(out[static_cast<size_t>(i)]);
}

// A stand-in for the CUDA module's NCCL hook: counts its calls and declines,
// so the staging path still runs.
int g_hook_calls = 0;
bool declining_run(ccv_nnc_comm_t*, uint32_t, ccv_nnc_tensor_t* const*, ccv_nnc_tensor_t* const*, int, ccv_nnc_stream_context_t*) {
  g_hook_calls++;
  return false;
}
const nnc::comm::GpuAcrossHooks kDeclining = {declining_run, nullptr};

}  // namespace

int main() {
  ccv_nnc_comm_t* comm = start("gpu_collectives");
  if (!comm) return failed ? 1 : 0;
  const size_t before = nnc_fakegpu::kernels_run();

  // Several pairs of mixed datatypes, views and packed tensors.
  const std::vector<Pair> mixed = {
      {CCV_32F, {5, 7}},
      {CCV_16F, {3, 11}, true},
      {CCV_32S, {13}},
      {CCV_64F, {4, 3}, true},
      {CCV_32F, {2, 9}, false, true},  // in place
      {CCV_16BF, {6, 5}, false, false},
  };
  const uint32_t ids[] = {CCV_NNC_COMM_ALLREDUCE_FORWARD, CCV_NNC_COMM_BROADCAST_FORWARD, CCV_NNC_COMM_REDUCE_FORWARD,
                          CCV_NNC_COMM_ALLREDUCE_BACKWARD, CCV_NNC_COMM_BROADCAST_BACKWARD, CCV_NNC_COMM_REDUCE_BACKWARD};
  for (uint32_t id : ids) check_call(comm, id, mixed, nullptr, "mixed pairs");
  // One packed GPU pair (the single-pair path), in place and not.
  check_call(comm, CCV_NNC_COMM_ALLREDUCE_FORWARD, {{CCV_32F, {37}}}, nullptr, "one pair");
  check_call(comm, CCV_NNC_COMM_REDUCE_FORWARD, {{CCV_32F, {3, 4}, false, true}}, nullptr, "one pair in place");
  check_call(comm, CCV_NNC_COMM_BROADCAST_FORWARD, {{CCV_16F, {3, 4}, true, true}}, nullptr, "one view in place");
  // CPU tensors beside GPU ones, and pairs with one side on each.
  const std::vector<Pair> cpu_and_gpu = {
      {CCV_32F, {4, 6}, false, false, true, true},
      {CCV_32F, {3, 5}, true},
      {CCV_32F, {7}, false, false, true, false},   // CPU in, GPU out
      {CCV_64F, {2, 3}, true, false, false, true},  // GPU view in, CPU view out
  };
  for (uint32_t id : ids) check_call(comm, id, cpu_and_gpu, nullptr, "CPU and GPU pairs");
  // Pairs on both pretend devices of the process in one call.
  const std::vector<Pair> two_devices = {
      {CCV_32F, {5, 3}},
      {CCV_32F, {4, 6}, false, false, false, false, 1},
      {CCV_16F, {3, 5}, true, false, false, false, 1},
  };
  for (uint32_t id : ids) check_call(comm, id, two_devices, nullptr, "two devices");
  // On a GPU stream of this process's device.
  {
    ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(static_cast<int>(CCV_STREAM_CONTEXT_GPU) | (g_device << 8));
    CHECK(stream, "a GPU stream");
    const std::vector<Pair> on_stream = {{CCV_32F, {5, 7}}, {CCV_32F, {3, 4}, true}, {CCV_64F, {9}, false, true}};
    for (int round = 0; round < 3; round++) {
      nnc_fakegpu::set_stream_order_seed(static_cast<uint32_t>(round * 31 + g_rank));
      for (uint32_t id : ids) check_call(comm, id, on_stream, stream, "on a GPU stream");
    }
    ccv_nnc_stream_context_free(stream);
  }
  CHECK(nnc_fakegpu::kernels_run() > before, "the transfers ran as pretend GPU kernels");

  // The NCCL hook: consulted only when every pair is on the GPU, and not
  // under NNC_COMM_GPU_STAGING=1.
  {
    nnc::comm::set_gpu_across_hooks(&kDeclining);
    g_hook_calls = 0;
    check_call(comm, CCV_NNC_COMM_ALLREDUCE_FORWARD, {{CCV_32F, {5}}, {CCV_16F, {2, 3}, true}}, nullptr, "hook declines");
    CHECK(g_hook_calls == 1, "the hook was asked once for an all-GPU call (%d)", g_hook_calls);
    check_call(comm, CCV_NNC_COMM_ALLREDUCE_FORWARD, cpu_and_gpu, nullptr, "hook, CPU pairs");
    CHECK(g_hook_calls == 1, "the hook is not asked when a pair is on the CPU (%d)", g_hook_calls);
    setenv("NNC_COMM_GPU_STAGING", "1", 1);
    check_call(comm, CCV_NNC_COMM_ALLREDUCE_FORWARD, {{CCV_32F, {5}}}, nullptr, "staging forced");
    CHECK(g_hook_calls == 1, "NNC_COMM_GPU_STAGING=1 keeps the hook out (%d)", g_hook_calls);
    unsetenv("NNC_COMM_GPU_STAGING");
    nnc::comm::set_gpu_across_hooks(nullptr);
  }

  // Refusals, with their messages, on every process alike (no collective runs).
  {
    ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, params(g_device, CCV_32F, {4, 3}), 0);
    ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, params(g_device, CCV_32F, {3, 4}), 0);
    ccv_nnc_tensor_t* h16 = ccv_nnc_tensor_new(nullptr, params(g_device, CCV_16F, {4, 3}), 0);
    ccv_nnc_tensor_t* u8 = ccv_nnc_tensor_new(nullptr, params(g_device, CCV_8U, {4, 3}), 0);
    const ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_ALLREDUCE_FORWARD), comm);
    CHECK(exec(allreduce, {a}, {b}) != CCV_NNC_EXEC_SUCCESS &&
              std::strstr(ccv_nnc_error_message(), "across processes: output 0 is 32F 3x4 but input 0 is 32F 4x3"),
          "a shape mismatch on the GPU is refused");
    CHECK(exec(allreduce, {a}, {h16}) != CCV_NNC_EXEC_SUCCESS && std::strstr(ccv_nnc_error_message(), "output 0 is 16F"),
          "a datatype mismatch on the GPU is refused");
    CHECK(exec(allreduce, {u8}, {u8}) != CCV_NNC_EXEC_SUCCESS && std::strstr(ccv_nnc_error_message(), "input 0 is 8U"),
          "8U on the GPU is refused");
    CHECK(exec(allreduce, {a, a}, {a, nullptr}) != CCV_NNC_EXEC_SUCCESS && std::strstr(ccv_nnc_error_message(), "pair 1 has a NULL output"),
          "a missing output is refused");
    for (ccv_nnc_tensor_t* t : {a, b, h16, u8}) ccv_nnc_tensor_free(t);
  }
  // Still usable after the refusals: they made no collective.
  check_call(comm, CCV_NNC_COMM_ALLREDUCE_FORWARD, {{CCV_32F, {3}}}, nullptr, "after the refusals");
  CHECK(ccv_nnc_comm_barrier(comm) == CCV_NNC_EXEC_SUCCESS, "barrier");
  ccv_nnc_comm_free(comm);
  std::printf("gpu_collectives: rank %d of %d on pretend GPU %d: %d failures\n", g_rank, g_size, g_device, failed);
  return failed ? 1 : 0;
}
