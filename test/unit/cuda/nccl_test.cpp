// GPU_NCCL: the collectives across the GPUs of one process, with every GPU
// the machine has (one is enough for the shapes of the calls: NCCL then
// copies), against sums computed on the host.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "unit/cuda/gpu.hpp"

namespace {

using nnc_gpu_test::Owned;

ccv_nnc_cmd_t nccl(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_GPU_NCCL;
  return c;
}

ccv_nnc_tensor_param_t on(int device, int n) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_GPU_MEMORY;
  CCV_TENSOR_SET_DEVICE_ID(p.type, device);
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = n;
  return p;
}

// One rank a device: a random input of n floats on device d (and its host
// copy), an output on d, and the inputs' sum in fp64.
struct Ranks {
  std::vector<Owned> host, in, out;
  std::vector<ccv_nnc_tensor_t*> ins, outs;
  std::vector<double> sum;
};
void make_ranks(int devices, int n, uint32_t seed, Ranks* r) {
  std::mt19937 rng(seed);
  r->sum.assign(static_cast<size_t>(n), 0);
  for (int d = 0; d < devices; d++) {
    r->host.emplace_back(nnc_gpu_test::on_cpu(on(0, n)));
    nnc_gpu_test::fill(r->host.back(), rng);
    for (int i = 0; i < n; i++) r->sum[static_cast<size_t>(i)] += r->host.back()->data.f32[i];
    r->in.emplace_back(on(d, n));
    r->out.emplace_back(on(d, n));
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {r->host.back()}, {r->in.back()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    r->ins.push_back(r->in.back()), r->outs.push_back(r->out.back());
  }
}

TEST(Nccl, CollectivesOverEveryGpu) {
  NNC_REQUIRE_GPU();
  const int devices = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), n = 1031;
  Ranks r;
  ASSERT_NO_FATAL_FAILURE(make_ranks(devices, n, 4, &r));
  ASSERT_EQ(CCV_TENSOR_GET_DEVICE_ID(nnc_gpu_test::to_gpu(r.host[0])->info.type), 0);  // to_gpu's tensors are on GPU 0
  // ALLREDUCE: every output holds the sum.
  ASSERT_EQ(nnc_gpu_test::exec(nccl(CCV_NNC_COMM_ALLREDUCE_FORWARD), ccv_nnc_no_hint, r.ins, r.outs), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (int d = 0; d < devices; d++) {
    Owned back = nnc_gpu_test::to_cpu(r.out[d]);
    for (int i = 0; i < n; i++) ASSERT_NEAR(back->data.f32[i], r.sum[i], 1e-5 * devices) << "device " << d << " element " << i;
  }
  // BROADCAST from device 0: every output holds device 0's input.
  ASSERT_EQ(nnc_gpu_test::exec(nccl(CCV_NNC_COMM_BROADCAST_FORWARD), ccv_nnc_no_hint, {r.ins[0]}, r.outs), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (int d = 0; d < devices; d++) {
    Owned back = nnc_gpu_test::to_cpu(r.out[d]);
    for (int i = 0; i < n; i++) ASSERT_EQ(back->data.f32[i], r.host[0]->data.f32[i]) << "device " << d << " element " << i;
  }
  // REDUCE onto device 0's output.
  ASSERT_EQ(nnc_gpu_test::exec(nccl(CCV_NNC_COMM_REDUCE_FORWARD), ccv_nnc_no_hint, r.ins, r.outs), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  Owned back = nnc_gpu_test::to_cpu(r.out[0]);
  for (int i = 0; i < n; i++) ASSERT_NEAR(back->data.f32[i], r.sum[i], 1e-5 * devices) << "element " << i;
  // Two tensors on one device: not for NCCL (no kernel accepts them).
  Owned twin(on(0, n));
  if (devices == 1) {
    EXPECT_NE(nnc_gpu_test::exec(nccl(CCV_NNC_COMM_ALLREDUCE_FORWARD), ccv_nnc_no_hint, {r.ins[0], twin}, {r.outs[0], twin}),
              CCV_NNC_EXEC_SUCCESS);
  }
}

// Queued on a GPU stream context of device 0: the collectives return once
// queued (the host waits for nothing), each other device's rank runs behind
// the context's stream and the context's stream behind it. Work queued after
// them on the context (a scale of device 0's sum, its copy to the host) sees
// their results, and once the host has waited for the context the other
// devices' outputs are there too (copied without a stream after the wait).
TEST(Nccl, QueuedOnAGpuStreamContext) {
  NNC_REQUIRE_GPU();
  const int devices = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), n = 777;
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  Ranks r;
  ASSERT_NO_FATAL_FAILURE(make_ranks(devices, n, 9, &r));
  ASSERT_EQ(nnc_gpu_test::exec(nccl(CCV_NNC_COMM_ALLREDUCE_FORWARD), ccv_nnc_no_hint, r.ins, r.outs, s), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = 2;
  Owned doubled(on(0, n));
  ASSERT_EQ(nnc_gpu_test::exec(ccv_nnc_cmd(CCV_NNC_SCALAR_MUL_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, {r.outs[0]}, {doubled}, s),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  std::vector<Owned> back;
  for (int d = 0; d < devices; d++) back.emplace_back(nnc_gpu_test::on_cpu(on(0, n)));
  // Device 0's on the context (a copy on another device's stream is refused).
  ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {r.out[0]}, {back[0]}, s), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  Owned back_doubled(nnc_gpu_test::on_cpu(on(0, n)));
  ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {doubled}, {back_doubled}, s), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_wait(s);
  ASSERT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int d = 1; d < devices; d++)
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {r.out[d]}, {back[d]}), CCV_NNC_EXEC_SUCCESS);
  for (int d = 0; d < devices; d++)
    for (int i = 0; i < n; i++) ASSERT_NEAR(back[d]->data.f32[i], r.sum[i], 1e-5 * devices) << "device " << d << " element " << i;
  for (int i = 0; i < n; i++) ASSERT_NEAR(back_doubled->data.f32[i], 2 * r.sum[i], 2e-5 * devices) << "element " << i;
  // BROADCAST from device 0's input, queued: every output is host[0].
  ASSERT_EQ(nnc_gpu_test::exec(nccl(CCV_NNC_COMM_BROADCAST_FORWARD), ccv_nnc_no_hint, {r.ins[0]}, r.outs, s), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  for (int d = 0; d < devices; d++)
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {r.out[d]}, {back[d]}), CCV_NNC_EXEC_SUCCESS);
  for (int d = 0; d < devices; d++)
    for (int i = 0; i < n; i++) ASSERT_EQ(back[d]->data.f32[i], r.host[0]->data.f32[i]) << "device " << d << " element " << i;
  ccv_nnc_stream_context_free(s);
}

}  // namespace
