// Static schedules over several GPU streams on a real GPU: a wide graph (six
// chains of element-wise kernels joined by a tree of ADDs, then a GEMM) run
// through schedules of 1, 2 and 4 streams, synchronously and behind a caller
// stream, against the same graph run serially. The tensors are large enough
// (512 x 512) that a missing wait between streams shows as wrong numbers.
// The pretend-GPU tests (test/unit/fakegpu/gpu_schedule_test.cpp) check the
// same schedules under random stream orders on machines without a GPU.
#include "unit/cuda/gpu.hpp"
#include "unit/common/wide_graph.hpp"

#include <memory>

namespace {

using nnc_gpu_test::Owned;

constexpr int kRows = 512, kCols = 512, kOut = 256;

ccv_nnc_tensor_param_t gpu_param(std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = static_cast<int>(CCV_TENSOR_GPU_MEMORY) | static_cast<int>(CCV_COMPUTE_DEVICE_000);
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

// The wide graph of unit/common/wide_graph.hpp on GPU 0.
struct Wide {
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  Owned x{gpu_param({kRows, kCols})}, W{gpu_param({kCols, kOut})}, y{gpu_param({kRows, kOut})};
  std::vector<Owned> t;
  Wide() {
    nnc_test_wide::build(g, x, W, y, 0, [this](std::vector<int> dims, int) {
      t.emplace_back(gpu_param(dims));
      return t.back().t;
    });
  }
  ~Wide() { ccv_nnc_graph_free(g); }
  void inputs(std::mt19937& rng) {
    Owned hx(nnc_gpu_test::on_cpu(x->info)), hW(nnc_gpu_test::on_cpu(W->info));
    nnc_gpu_test::fill(hx, rng);
    nnc_gpu_test::fill(hW, rng, -0.1f, 0.1f);
    ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {hx, hW}, {x, W}), CCV_NNC_EXEC_SUCCESS);
  }
};

TEST(CudaSchedule, SeveralStreamsGiveTheSerialResults) {
  NNC_REQUIRE_GPU();
  Wide w;
  std::mt19937 rng(17);
  for (int streams : {1, 2, 4}) {
    ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(w.g, CCV_STREAM_CONTEXT_GPU, streams, nullptr, 0, nullptr, 0);
    ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
    ccv_nnc_stream_context_t* caller = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
    for (int round = 0; round < 6; round++) {
      // New inputs: every intermediate still holds the previous round's
      // numbers, which a node run before its inputs were written would read.
      w.inputs(rng);
      const bool on_caller = round % 2 == 1;
      Owned got(nnc_gpu_test::on_cpu(w.y->info));
      ASSERT_EQ(ccv_nnc_graph_run_with_schedule(w.g, 0, s, nullptr, on_caller ? caller : nullptr), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      // Behind a caller stream the copy out is queued on it too.
      ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {w.y}, {got}, on_caller ? caller : nullptr),
                CCV_NNC_EXEC_SUCCESS);
      if (on_caller) ccv_nnc_stream_context_wait(caller);
      // The same graph serially on the same inputs.
      ASSERT_EQ(ccv_nnc_graph_run(w.g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      Owned expected = nnc_gpu_test::to_cpu(w.y);
      // The same kernels on other streams: equal up to cuBLAS's choice of algorithm per handle.
      nnc_gpu_test::expect_close(got, expected, 1e-5f, 1e-5f, on_caller ? "schedule behind a caller stream" : "schedule");
    }
    ccv_nnc_stream_context_free(caller);
    ccv_nnc_graph_static_schedule_free(s);
  }
}

// ccv_nnc_tensor_pin_memory: cudaHostRegister'd host memory; a round trip
// host -> GPU -> host on a stream through it gives the values back, and the
// tensor frees (and unregisters) cleanly.
TEST(CudaPinned, TransfersOnAStreamThroughPinnedMemory) {
  NNC_REQUIRE_GPU();
  ccv_nnc_tensor_param_t p = gpu_param({1 << 20});
  Owned h(nnc_gpu_test::on_cpu(p)), back(nnc_gpu_test::on_cpu(p)), g(p);
  ASSERT_EQ(ccv_nnc_tensor_pin_memory(h), 0) << ccv_nnc_error_message();
  ASSERT_EQ(ccv_nnc_tensor_pin_memory(back), 0) << ccv_nnc_error_message();
  EXPECT_NE(h->type & CCV_TENSOR_PINNED_MEM, 0);
  std::mt19937 rng(4);
  nnc_gpu_test::fill(h, rng);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {h}, {g}, s), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(nnc_gpu_test::exec(nnc_gpu_test::transfer(), ccv_nnc_no_hint, {g}, {back}, s), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_wait(s);
  ASSERT_EQ(std::memcmp(h->data.f32, back->data.f32, sizeof(float) << 20), 0);
  EXPECT_EQ(ccv_nnc_tensor_pin_memory(g), -1);  // GPU memory is refused
  ccv_nnc_stream_context_free(s);
}

}  // namespace
