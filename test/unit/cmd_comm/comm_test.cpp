// The single-device collectives: sums and copies against fp64 sums, in place
// and through views, each backward checked as the adjoint of its forward
// (<g, F(x)> = <F'(g), x> for these linear maps), libnnc's contract, bad input.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_comm_example(float out[4]);

using namespace cmdtest;

namespace {

class Comm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

using Ts = std::vector<std::unique_ptr<T>>;

Ts make(int n, int dt, const std::vector<int>& shape, bool views, std::mt19937* rng) {
  Ts v;
  for (int i = 0; i < n; i++) {
    v.push_back(std::make_unique<T>(views && i % 2 ? T::view(dt, shape) : T(dt, shape)));
    if (rng) fill_random(*v.back(), *rng);
  }
  return v;
}

std::vector<ccv_nnc_tensor_t*> ptrs(const Ts& v) {
  std::vector<ccv_nnc_tensor_t*> p;
  for (const auto& t : v) p.push_back(t->get());
  return p;
}

double dot(const T& a, const T& b) {
  double s = 0;
  for (size_t i = 0; i < a.count(); i++) s += a.get(i) * b.get(i);
  return s;
}

TEST_F(Comm, AllreduceSumsIntoEveryOutput) {
  std::mt19937 rng(1);
  for (int dt : {CCV_64F, CCV_32F, CCV_16F, CCV_32S})
    for (bool in_place : {false, true}) {
      const std::vector<int> shape{3, 5, 2};
      Ts x = make(3, dt, shape, true, &rng);
      std::vector<double> want(x[0]->count(), 0);
      for (const auto& t : x)
        for (size_t i = 0; i < want.size(); i++) want[i] += t->get(i);
      Ts y = in_place ? Ts{} : make(3, dt, shape, true, nullptr);
      const auto out = in_place ? ptrs(x) : ptrs(y);
      ASSERT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), ptrs(x), out), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      for (const auto& t : in_place ? x : y) {
        for (size_t i = 0; i < want.size(); i++) ASSERT_EQ(t->get(i), want[i]) << i;  // sums of 3 values in [-8, 8] on a 1/64 grid are exact
        EXPECT_TRUE(t->guard_intact());
      }
    }
}

TEST_F(Comm, BroadcastCopiesAndReduceSumsIntoTheFirst) {
  std::mt19937 rng(2);
  for (int dt : {CCV_64F, CCV_32F, CCV_16BF, CCV_32S}) {
    const std::vector<int> shape{4, 7};
    Ts x = make(1, dt, shape, false, &rng);
    Ts y = make(3, dt, shape, true, nullptr);
    ASSERT_EQ(run(command(CCV_NNC_COMM_BROADCAST_FORWARD), ptrs(x), ptrs(y)), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (const auto& t : y)
      for (size_t i = 0; i < t->count(); i++) ASSERT_EQ(t->bits(i), x[0]->bits(i)) << i;
    Ts r = make(3, dt, shape, true, &rng);
    Ts out = make(3, dt, shape, false, &rng);
    std::vector<double> want(r[0]->count(), 0), before1(out[1]->count());
    for (const auto& t : r)
      for (size_t i = 0; i < want.size(); i++) want[i] += t->get(i);
    for (size_t i = 0; i < before1.size(); i++) before1[i] = out[1]->get(i);
    ASSERT_EQ(run(command(CCV_NNC_COMM_REDUCE_FORWARD), ptrs(r), ptrs(out)), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (size_t i = 0; i < want.size(); i++) {
      ASSERT_EQ(out[0]->get(i), want[i]) << i;
      ASSERT_EQ(out[1]->get(i), before1[i]) << "the other receive buffers are not written";
    }
    // In place on the first.
    ASSERT_EQ(run(command(CCV_NNC_COMM_REDUCE_FORWARD), ptrs(r), {r[0]->get(), out[1]->get(), out[2]->get()}),
              CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < want.size(); i++) ASSERT_EQ(r[0]->get(i), want[i]) << i;
  }
}

// Each backward is the adjoint of its forward: for random x and g,
// sum_i <g_i, y_i> = sum_j <dx_j, x_j>, exactly on the 1/64 grid in fp64.
TEST_F(Comm, BackwardsAreAdjoints) {
  std::mt19937 rng(3);
  const std::vector<int> shape{5, 3};
  auto check = [&](uint32_t fwd, uint32_t bwd, int n_in, int n_out, int grads_used) {
    Ts x = make(n_in, CCV_64F, shape, false, &rng), y = make(n_out, CCV_64F, shape, false, nullptr);
    Ts g = make(n_out, CCV_64F, shape, true, &rng), dx = make(n_in, CCV_64F, shape, true, nullptr);
    ASSERT_EQ(run(command(fwd), ptrs(x), ptrs(y)), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    std::vector<ccv_nnc_tensor_t*> bin = ptrs(g);
    bin.resize(grads_used);
    if (fwd == CCV_NNC_COMM_ALLREDUCE_FORWARD)  // the forward tensors after the gradients are ignored
      for (const auto* v : {&x, &y})
        for (const auto& t : *v) bin.push_back(t->get());
    ASSERT_EQ(run(command(bwd), bin, ptrs(dx)), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    double lhs = 0, rhs = 0;
    for (int i = 0; i < grads_used; i++) lhs += dot(*g[i], *y[i]);
    for (int j = 0; j < n_in; j++) rhs += dot(*dx[j], *x[j]);
    EXPECT_EQ(lhs, rhs) << ccv_nnc_cmd_name(fwd);
    EXPECT_NE(lhs, 0);
  };
  check(CCV_NNC_COMM_ALLREDUCE_FORWARD, CCV_NNC_COMM_ALLREDUCE_BACKWARD, 3, 3, 3);
  check(CCV_NNC_COMM_BROADCAST_FORWARD, CCV_NNC_COMM_BROADCAST_BACKWARD, 1, 4, 4);
  check(CCV_NNC_COMM_REDUCE_FORWARD, CCV_NNC_COMM_REDUCE_BACKWARD, 3, 3, 1);  // only y_0 is computed
}

// libnnc's description file: runs from slot 0, counts as each command needs,
// shapes from the inputs (ALLREDUCE / REDUCE forward, BROADCAST backward) or
// from the first gradient, and the in-place rules.
TEST_F(Comm, LibnncContract) {
  auto bm = [](uint32_t id, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(command(id), ni, no, &inputs, 1, &outputs, 1);
  };
  const uint32_t ar = CCV_NNC_COMM_ALLREDUCE_FORWARD, arb = CCV_NNC_COMM_ALLREDUCE_BACKWARD;
  const uint32_t bc = CCV_NNC_COMM_BROADCAST_FORWARD, bcb = CCV_NNC_COMM_BROADCAST_BACKWARD;
  const uint32_t rd = CCV_NNC_COMM_REDUCE_FORWARD, rdb = CCV_NNC_COMM_REDUCE_BACKWARD;
  EXPECT_TRUE(bm(ar, 3, 7, 3, 7));
  EXPECT_FALSE(bm(ar, 3, 7, 3, 3));
  EXPECT_FALSE(bm(ar, 3, 5, 3, 5));  // a gap
  EXPECT_FALSE(bm(ar, 3, 7, 2, 3));
  EXPECT_TRUE(bm(arb, 9, 7, 3, 7));
  EXPECT_TRUE(bm(arb, 3, 7, 2, 3));
  EXPECT_FALSE(bm(arb, 3, 3, 3, 7));
  EXPECT_FALSE(bm(arb, 3, 7, 3, 5));
  EXPECT_TRUE(bm(bc, 1, 1, 4, 15));
  EXPECT_FALSE(bm(bc, 2, 3, 4, 15));
  EXPECT_FALSE(bm(bc, 1, 1, 4, 7));
  EXPECT_TRUE(bm(bcb, 4, 15, 1, 1));
  EXPECT_FALSE(bm(bcb, 4, 7, 1, 1));
  EXPECT_TRUE(bm(rd, 2, 3, 2, 3));
  EXPECT_FALSE(bm(rd, 2, 3, 1, 1));
  EXPECT_TRUE(bm(rdb, 1, 1, 3, 7));
  EXPECT_FALSE(bm(rdb, 1, 1, 3, 3));
  EXPECT_FALSE(bm(rdb, 2, 2, 3, 7));
  for (int i = 0; i < 3; i++)
    for (int o = 0; o < 3; o++) {
      EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(ar), i, 3, o, 3), i == o);
      EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(arb), i, 3, o, 3), i == o);
      EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(bc), i, 3, o, 3));
      EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(bcb), i, 3, o, 3));
      EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(rd), i, 3, o, 3), i == 0 && o == 0);
      EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(rdb), i, 3, o, 3));
    }
  ccv_nnc_tensor_param_t in[2] = {param(CCV_32F, {2, 3}), param(CCV_64F, {4})}, out[2];
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 3); };
  for (uint32_t id : {ar, rd, bcb}) {
    ccv_nnc_hint_tensor_auto(command(id), in, 2, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 0}));
    EXPECT_EQ(dims(out[1]), (std::vector<int>{4, 0, 0}));
  }
  for (uint32_t id : {arb, bc, rdb}) {
    ccv_nnc_hint_tensor_auto(command(id), in, 2, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 0}));
    EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 3, 0}));
  }
  float v[4];
  ASSERT_EQ(nnc_test_comm_example(v), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const float want[4] = {11, 22, 11, 22};
  for (int i = 0; i < 4; i++) EXPECT_EQ(v[i], want[i]) << i;
}

TEST_F(Comm, BadInputFailsWithAMessage) {
  T a(CCV_32F, {4}), b(CCV_32F, {4}), c(CCV_32F, {5}), d(CCV_64F, {4}), e(CCV_8U, {4}), y(CCV_32F, {4});
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {a, b}, {a, b}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {a, c}, {a, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("input 1 is 32F 5 but input 0 is 32F 4")) << ccv_nnc_error_message();
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {a, d}, {a, b}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {a, b}, {a}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("one output per input")) << ccv_nnc_error_message();
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {a, nullptr}, {a, b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("NULL")) << ccv_nnc_error_message();
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {e}, {e}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_FORWARD), {}, {}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_ALLREDUCE_BACKWARD), {a}, {a, b}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_BROADCAST_FORWARD), {a, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_BROADCAST_FORWARD), {a}, {y, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_BROADCAST_FORWARD), {a}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_BROADCAST_BACKWARD), {a, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_REDUCE_FORWARD), {a, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(command(CCV_NNC_COMM_REDUCE_BACKWARD), {a}, {y, d}), CCV_NNC_EXEC_INVALID);
}

}  // namespace

// For CPU memory the COMM_ commands' backend is CPU_REF, as in libnnc: the
// kernel in GPU_NCCL's place that also takes CPU tensors (pairs across
// processes with one side on a GPU) is not the answer for CPU memory alone.
TEST_F(Comm, CpuMemoryFindsCpuRef) {
  for (uint32_t id : {CCV_NNC_COMM_ALLREDUCE_FORWARD, CCV_NNC_COMM_ALLREDUCE_BACKWARD, CCV_NNC_COMM_BROADCAST_FORWARD,
                      CCV_NNC_COMM_BROADCAST_BACKWARD, CCV_NNC_COMM_REDUCE_FORWARD, CCV_NNC_COMM_REDUCE_BACKWARD}) {
    const ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, ccv_nnc_cmd_auto, 0);
    EXPECT_EQ(ccv_nnc_cmd_find_backend(c, CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F), CCV_NNC_BACKEND_CPU_REF)
        << ccv_nnc_cmd_name(id);
  }
}
