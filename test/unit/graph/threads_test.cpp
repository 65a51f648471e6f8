// Several threads at once: each calls ccv_nnc_cmd_exec and runs its own
// graphs (default and explicit ends, on the calling thread and on a stream of
// its own), sharing only the library (registry, thread pool, compute lock).
// Every result must equal the same work done serially first. Run it under the
// tsan preset to check the sharing itself.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "cmd_test_util.hpp"

using namespace cmdtest;

namespace {

// What one thread computes: y = (a + b) . w (GEMM, large enough to use the
// pool), z = y + y through a graph chain, and a sum through ccv_nnc_cmd_exec.
struct Work {
  explicit Work(unsigned seed)
      : a(CCV_32F, {64, 96}), b(CCV_32F, {64, 96}), w(CCV_32F, {96, 80}), s(CCV_32F, {64, 96}), y(CCV_32F, {64, 80}),
        z(CCV_32F, {64, 80}), e(CCV_32F, {64, 96}) {
    std::mt19937 rng(seed);
    fill_random(a, rng), fill_random(b, rng), fill_random(w, rng);
    g = ccv_nnc_graph_new();
    n0 = add(command(CCV_NNC_EWSUM_FORWARD), {a, b}, {s});
    n1 = add(command(CCV_NNC_GEMM_FORWARD), {s, w}, {y});
    n2 = add(command(CCV_NNC_EWSUM_FORWARD), {y, y}, {z});
    ccv_nnc_graph_exec_concat(g, n0, n1);
    ccv_nnc_graph_exec_concat(g, n1, n2);
  }
  ~Work() { ccv_nnc_graph_free(g); }
  ccv_nnc_graph_exec_t add(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
    return ccv_nnc_graph_exec_new(g, cmd, ccv_nnc_no_hint, in.data(), static_cast<int>(in.size()), out.data(),
                                  static_cast<int>(out.size()));
  }
  // One round; false on any failure.
  bool round(int k, ccv_nnc_stream_context_t* stream) {
    ccv_nnc_tensor_t* in[] = {a, b};
    ccv_nnc_tensor_t* out[] = {e};
    if (ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, 0, in, 2, out,
                         1, nullptr) != CCV_NNC_EXEC_SUCCESS)
      return false;
    int code;
    if (k % 3 == 0)
      code = ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr);
    else if (k % 3 == 1)
      code = ccv_nnc_graph_run(g, 0, &n0, 1, &n2, 1, nullptr, nullptr);
    else {
      code = ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, stream);
      ccv_nnc_stream_context_wait(stream);
    }
    return code == CCV_NNC_EXEC_SUCCESS;
  }
  T a, b, w, s, y, z, e;
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_graph_exec_t n0{}, n1{}, n2{};
};

void fill(const T& t, double v) {
  for (size_t i = 0; i < t.count(); i++) t.set(i, v);
}

std::vector<float> values(const T& t) {
  std::vector<float> v(t.count());
  for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<float>(t.get(i));
  return v;
}

TEST(GraphThreads, ConcurrentExecAndGraphRunsMatchSerialOnes) {
  ccv_nnc_init();
  constexpr int kThreads = 4, kRounds = 12;
  std::vector<std::unique_ptr<Work>> work;
  std::vector<std::vector<float>> expect_z, expect_e;
  for (int t = 0; t < kThreads; t++) {
    work.push_back(std::make_unique<Work>(100 + t));
    ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
    ASSERT_TRUE(work[t]->round(0, s)) << ccv_nnc_error_message();
    ccv_nnc_stream_context_free(s);
    expect_z.push_back(values(work[t]->z));
    expect_e.push_back(values(work[t]->e));
    // The GEMM against a double-precision reference, so the serial result itself is right.
    const Work& w = *work[t];
    for (int i = 0; i < 64; i += 7)
      for (int j = 0; j < 80; j += 9) {
        double ref = 0;
        for (int k = 0; k < 96; k++)
          ref += (w.a.get(static_cast<size_t>(i * 96 + k)) + w.b.get(static_cast<size_t>(i * 96 + k))) *
                 w.w.get(static_cast<size_t>(k * 80 + j));
        ASSERT_NEAR(expect_z[t][static_cast<size_t>(i * 80 + j)], 2 * ref, 1e-3 * (1 + std::fabs(ref)));
      }
    fill(work[t]->z, 0), fill(work[t]->e, 0);
  }
  std::vector<int> failures(kThreads, 0), mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
      Work& w = *work[static_cast<size_t>(t)];
      for (int k = 0; k < kRounds; k++) {
        fill(w.z, 0), fill(w.e, 0);
        if (!w.round(k + t, s)) {
          failures[static_cast<size_t>(t)]++;
          continue;
        }
        if (values(w.z) != expect_z[static_cast<size_t>(t)] || values(w.e) != expect_e[static_cast<size_t>(t)])
          mismatches[static_cast<size_t>(t)]++;
      }
      ccv_nnc_stream_context_free(s);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; t++) {
    EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << "thread " << t;
    EXPECT_EQ(mismatches[static_cast<size_t>(t)], 0) << "thread " << t;
  }
}

}  // namespace
