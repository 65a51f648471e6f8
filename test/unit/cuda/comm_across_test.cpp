// The COMM_ commands across processes on GPU tensors (lib/cmd/comm/across.cpp
// and, with NCCL, cuda/nccl_across.cpp), in a build with MPI: a communicator
// over the processes this test runs in (alone: one process; under mpirun:
// each on GPU 0 of its own machine). Rank r's value i is (r + 1) f(i), f a
// multiple of 1/4 of magnitude at most 1.25, so every sum is exact in fp16 and
// fp32 and the results are compared exactly with the closed forms: the sum
// over the ranks is N (N + 1) / 2 f, rank 0's value f. Each check runs twice:
// on NCCL where the build has it and every pair is packed on the GPU, and
// with NNC_COMM_GPU_STAGING=1 through the host. Skips without a GPU or MPI
// (CI's CUDA build has no MPI; the CPU emulation, tools/gpu-emu, has MPI and
// no NCCL: there it checks the staging through the module's own transfers).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu.hpp"
#include "nnc/ccv_nnc.h"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_tensor_param_t params(int datatype, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

double f(size_t i) { return static_cast<double>(static_cast<int>((i * 5) % 11) - 5) * 0.25; }

void store(ccv_nnc_tensor_t* t, size_t i, double v) {
  if (t->info.datatype == CCV_32F) {
    t->data.f32[i] = static_cast<float>(v);
  } else {
    float x = static_cast<float>(v);
    ccv_float_to_half_precision(&x, reinterpret_cast<uint16_t*>(t->data.f16) + i, 1);
  }
}
double load(const ccv_nnc_tensor_t* t, size_t i) {
  if (t->info.datatype == CCV_32F) return t->data.f32[i];
  float x;
  ccv_half_precision_to_float(reinterpret_cast<uint16_t*>(t->data.f16) + i, &x, 1);
  return x;
}

ccv_nnc_cmd_t cmd(uint32_t id, float a = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = a;
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

// A GPU tensor holding (rank + 1) f(i) * scale (or `mark` everywhere).
Owned values(int datatype, std::vector<int> dims, int rank, double scale, bool marks = false) {
  Owned h(params(datatype, dims));
  for (size_t i = 0; i < ccv_nnc_tensor_count(h->info); i++) store(h, i, marks ? -3.0 - static_cast<double>(i % 4) : (rank + 1) * f(i) * scale);
  return to_gpu(h);
}

// Every element of GPU tensor g equals want(i).
template <class W>
void expect_values(ccv_nnc_tensor_t* g, W&& want, const char* what) {
  Owned h = to_cpu(g);
  int bad = 0;
  for (size_t i = 0; i < ccv_nnc_tensor_count(h->info); i++)
    if (load(h, i) != want(i) && bad++ < 3) ADD_FAILURE() << what << ": element " << i << " is " << load(h, i) << ", want " << want(i);
}

TEST(CommAcrossProcesses, GpuPairsOnNcclOrStagedMatchTheClosedForms) {
  NNC_REQUIRE_GPU();
  if (!ccv_nnc_comm_mpi_available()) GTEST_SKIP() << "built without MPI: no communicator across processes";
  ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(nullptr);
  ASSERT_TRUE(comm) << ccv_nnc_error_message();
  const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
  const double S = size * (size + 1) / 2.0;
  const bool root = rank == 0;
  for (const char* staging : {"0", "1"}) {
    SCOPED_TRACE(std::string("NNC_COMM_GPU_STAGING=") + staging);
    setenv("NNC_COMM_GPU_STAGING", staging, 1);
    {  // ALLREDUCE of two packed pairs of two types (one NCCL group), out of place and in place.
      Owned x32 = values(CCV_32F, {37}, rank, 1), x16 = values(CCV_16F, {5, 7}, rank, 1), y32 = values(CCV_32F, {37}, rank, 1, true);
      ASSERT_EQ(exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_ALLREDUCE_FORWARD), comm), ccv_nnc_no_hint, {x32, x16}, {y32, x16}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      expect_values(y32, [&](size_t i) { return S * f(i); }, "ALLREDUCE 32F");
      expect_values(x16, [&](size_t i) { return S * f(i); }, "ALLREDUCE 16F in place");
      expect_values(x32, [&](size_t i) { return (rank + 1) * f(i); }, "ALLREDUCE's input untouched");
    }
    {  // BROADCAST backward: rank 0 the sum, the others zeros; REDUCE backward: rank 0's value.
      Owned g = values(CCV_32F, {4, 9}, rank, 1), dx = values(CCV_32F, {4, 9}, rank, 1, true), dy = values(CCV_32F, {4, 9}, rank, 1, true);
      ASSERT_EQ(exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_BROADCAST_BACKWARD), comm), ccv_nnc_no_hint, {g}, {dx}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      expect_values(dx, [&](size_t i) { return root ? S * f(i) : 0.0; }, "BROADCAST backward");
      ASSERT_EQ(exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_REDUCE_BACKWARD), comm), ccv_nnc_no_hint, {g}, {dy}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      expect_values(dy, [&](size_t i) { return f(i); }, "REDUCE backward");
    }
    {  // A strided view (always staged): written only inside the view.
      Owned base = values(CCV_32F, {4, 7}, rank, 1, true), src = values(CCV_32F, {3, 4}, rank, 1);
      int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 2}, stride[CCV_NNC_MAX_DIM_ALLOC] = {7, 1};
      ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(base, on_gpu(params(CCV_32F, {3, 4})), ofs, stride);
      ccv_nnc_tensor_t* vt = reinterpret_cast<ccv_nnc_tensor_t*>(v);
      ASSERT_EQ(exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_BROADCAST_FORWARD), comm), ccv_nnc_no_hint, {src}, {vt}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      expect_values(
          base,
          [&](size_t k) {
            const size_t r = k / 7, c = k % 7;
            if (r >= 1 && c >= 2 && c < 6) return f((r - 1) * 4 + (c - 2));
            return -3.0 - static_cast<double>(k % 4);
          },
          "BROADCAST into a view");
      ccv_nnc_tensor_view_free(v);
    }
    {  // On a GPU stream: the input doubled on the stream before, the sum halved after.
      ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
      ASSERT_TRUE(stream) << ccv_nnc_error_message();
      Owned x = values(CCV_32F, {1000}, rank, 0.5), y = values(CCV_32F, {1000}, rank, 1, true);
      ASSERT_EQ(exec(cmd(CCV_NNC_SCALAR_MUL_FORWARD, 2), ccv_nnc_no_hint, {x}, {x}, stream), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_ALLREDUCE_FORWARD), comm), ccv_nnc_no_hint, {x}, {y}, stream), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      ASSERT_EQ(exec(cmd(CCV_NNC_SCALAR_MUL_FORWARD, 0.5), ccv_nnc_no_hint, {y}, {y}, stream), CCV_NNC_EXEC_SUCCESS);
      ccv_nnc_stream_context_wait(stream);
      expect_values(y, [&](size_t i) { return S * f(i) * 0.5; }, "ALLREDUCE on a GPU stream");
      ccv_nnc_stream_context_free(stream);
    }
  }
  unsetenv("NNC_COMM_GPU_STAGING");
  {  // Refused with a message, before any collective.
    Owned a(on_gpu(params(CCV_32F, {4, 3}))), b(on_gpu(params(CCV_32F, {3, 4})));
    EXPECT_NE(exec(ccv_nnc_cmd_set_comm(cmd(CCV_NNC_COMM_ALLREDUCE_FORWARD), comm), ccv_nnc_no_hint, {a}, {b}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_NE(std::strstr(ccv_nnc_error_message(), "across processes: output 0 is 32F"), nullptr) << ccv_nnc_error_message();
  }
  EXPECT_EQ(ccv_nnc_comm_barrier(comm), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_comm_free(comm);
}

}  // namespace
