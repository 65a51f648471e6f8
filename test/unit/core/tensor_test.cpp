// Tensors and views: creation, validation, views, zero, equality, printing,
// resize, memory-mapped tensors and scalar conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "core/tensor.hpp"
#include "test_util.hpp"

using namespace nnc_test;

namespace {

class TensorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
  }
};

std::string last_error() { return ccv_nnc_error_message(); }

TEST_F(TensorTest, NewAllocatesAlignedDataOfTheRightSize) {
  for (int dt : {CCV_8U, CCV_32S, CCV_32F, CCV_64S, CCV_64F, CCV_16F, CCV_16BF}) {
    Tensor t(cpu_param(dt, {3, 5, 7}));
    ASSERT_NE(t.t, nullptr) << last_error();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data.ptr) % 64, 0u);
    const size_t bytes = 3 * 5 * 7 * static_cast<size_t>(CCV_GET_DATA_TYPE_SIZE(dt));
    EXPECT_GE(t->data_size, bytes);
    EXPECT_EQ(t->data_size % 64, 0u);
    EXPECT_EQ(ccv_nnc_tensor_nd(t->info.dim), 3);
    EXPECT_EQ(t->info.datatype, dt);
    // The memory is writable end to end.
    std::memset(t->data.ptr, 0xab, bytes);
  }
}

TEST_F(TensorTest, TensorOverCallerMemoryDoesNotOwnIt) {
  std::vector<float> buffer(24, 1.5f);
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(buffer.data(), cpu_param(CCV_32F, {2, 3, 4}), 0);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->data.f32, buffer.data());
  EXPECT_TRUE(t->type & CCV_NO_DATA_ALLOC);
  t->data.f32[5] = 7;
  EXPECT_EQ(buffer[5], 7);
  ccv_nnc_tensor_free(t);
  EXPECT_EQ(buffer[5], 7);  // still ours
  ccv_nnc_tensor_t s = ccv_nnc_tensor(buffer.data(), cpu_param(CCV_32F, {24}), 0);
  EXPECT_EQ(s.data.f32, buffer.data());
  EXPECT_EQ(s.info.dim[0], 24);
  EXPECT_EQ(s.data_size, 96u);
}

TEST_F(TensorTest, TrailingGarbageAfterTheFirstZeroDimensionIsIgnored) {
  ccv_nnc_tensor_param_t p = cpu_param(CCV_32F, {4, 4});
  p.dim[3] = 99;  // after the terminating 0 at dim[2]
  Tensor t(p);
  ASSERT_NE(t.t, nullptr) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_nd(t->info.dim), 2);
  EXPECT_EQ(t->info.dim[3], 0);
}

TEST_F(TensorTest, BadParametersAreRejectedWithAMessage) {
  struct Case {
    ccv_nnc_tensor_param_t p;
    const char* expect;
  };
  std::vector<Case> cases;
  auto p = cpu_param(CCV_32F, {2, 3});
  p.dim[0] = 0;
  cases.push_back({p, "at least one dimension"});
  p = cpu_param(CCV_32F, {2, -3});
  cases.push_back({p, "positive"});
  p = cpu_param(CCV_32F, {1 << 30, 1 << 30, 1 << 30});
  cases.push_back({p, "overflow"});
  p = cpu_param(0x7000, {2});
  cases.push_back({p, "data type"});
  p = cpu_param(CCV_QX, {2});
  cases.push_back({p, "data type"});
  p = cpu_param(CCV_32F, {2});
  p.format = 0x10;
  cases.push_back({p, "format"});
  p = cpu_param(CCV_32F, {2});
  p.type = 0;
  cases.push_back({p, "memory type"});
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0) {  // a CUDA build with a GPU allocates it
    p = cpu_param(CCV_32F, {2});
    p.type = CCV_TENSOR_GPU_MEMORY;
    cases.push_back({p, "CUDA"});
  }
  for (const Case& c : cases) {
    ccv_nnc_error_clear();
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, c.p, 0);
    EXPECT_EQ(t, nullptr);
    EXPECT_NE(last_error().find(c.expect), std::string::npos) << "message: " << last_error();
    ccv_nnc_tensor_free(t);
  }
  // The value form reports the same way and leaves a zero header.
  p = cpu_param(CCV_32F, {2, -3});
  ccv_nnc_tensor_t v = ccv_nnc_tensor(nullptr, p, 0);
  EXPECT_EQ(v.info.dim[0], 0);
  EXPECT_EQ(v.data.ptr, nullptr);
}

TEST_F(TensorTest, FreeAcceptsNull) {
  ccv_nnc_tensor_free(nullptr);
  ccv_nnc_tensor_view_free(nullptr);
  SUCCEED();
}

TEST_F(TensorTest, ViewAddressesTheRightElements) {
  Tensor t(cpu_param(CCV_32F, {6, 8}));
  for (int i = 0; i < 48; i++) t.f32()[i] = static_cast<float>(i);
  const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {2, 3};
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {8, 1};
  ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ofs, stride);
  ASSERT_NE(v, nullptr) << last_error();
  EXPECT_TRUE(CCV_IS_TENSOR_VIEW(v));
  EXPECT_FALSE(CCV_IS_TENSOR_CONTIGUOUS(v));
  EXPECT_EQ(v->off, static_cast<off_t>((2 * 8 + 3) * sizeof(float)));
  const nnc::Layout l = nnc::layout_of(reinterpret_cast<ccv_nnc_tensor_t*>(v));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      const int idx[2] = {i, j};
      EXPECT_EQ(*reinterpret_cast<float*>(l.at(idx)), static_cast<float>((i + 2) * 8 + j + 3));
    }
  ccv_nnc_tensor_view_free(v);
}

TEST_F(TensorTest, RowViewIsContiguous) {
  Tensor t(cpu_param(CCV_32F, {6, 8}));
  const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {4, 0};
  ccv_nnc_tensor_view_t v = ccv_nnc_tensor_view(t, cpu_param(CCV_32F, {2, 8}), ofs, nullptr);
  ASSERT_NE(v.info.dim[0], 0) << last_error();
  EXPECT_EQ(v.contiguous, 1);
  EXPECT_EQ(v.data.f32, t.f32() + 32);
}

TEST_F(TensorTest, ViewsReachingOutsideTheirTensorAreRejected) {
  Tensor t(cpu_param(CCV_32F, {6, 8}));
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {8, 1};
  const int ofs_bad[CCV_NNC_MAX_DIM_ALLOC] = {4, 6};  // rows 4..6, the last one past the end
  EXPECT_EQ(ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ofs_bad, stride), nullptr);
  EXPECT_NE(last_error().find("outside"), std::string::npos) << last_error();
  const int ofs_neg[CCV_NNC_MAX_DIM_ALLOC] = {-1, 0};
  EXPECT_EQ(ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ofs_neg, stride), nullptr);
  const int zero_stride[CCV_NNC_MAX_DIM_ALLOC] = {0, 1};
  EXPECT_EQ(ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ccv_nnc_no_ofs, zero_stride), nullptr);
  EXPECT_EQ(ccv_nnc_tensor_view_new(t, cpu_param(CCV_64F, {3, 4}), ccv_nnc_no_ofs, stride), nullptr);
  EXPECT_NE(last_error().find("data type"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_view_new(nullptr, cpu_param(CCV_32F, {3, 4}), ccv_nnc_no_ofs, stride), nullptr);
  // Past the last column but inside the bytes (the next row, or the
  // allocation's padding after the last row): refused all the same.
  const int ofs_cols[CCV_NNC_MAX_DIM_ALLOC] = {0, 6};
  EXPECT_EQ(ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ofs_cols, stride), nullptr);
  EXPECT_NE(last_error().find("dimension 1"), std::string::npos) << last_error();
  Tensor small(cpu_param(CCV_32F, {4, 5}));  // 80 bytes, allocated as 128
  const int ofs_pad[CCV_NNC_MAX_DIM_ALLOC] = {3, 3};
  EXPECT_EQ(ccv_nnc_tensor_view_new(small, cpu_param(CCV_32F, {2, 3}), ofs_pad, nullptr), nullptr);
  EXPECT_NE(last_error().find("dimension 0"), std::string::npos) << last_error();
  const int ofs_fit[CCV_NNC_MAX_DIM_ALLOC] = {2, 2};
  ccv_nnc_tensor_view_t* fit = ccv_nnc_tensor_view_new(small, cpu_param(CCV_32F, {2, 3}), ofs_fit, nullptr);
  EXPECT_NE(fit, nullptr) << last_error();
  ccv_nnc_tensor_view_free(fit);
  // The largest window that fits is accepted.
  const int ofs_ok[CCV_NNC_MAX_DIM_ALLOC] = {3, 4};
  ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ofs_ok, stride);
  EXPECT_NE(v, nullptr) << last_error();
  ccv_nnc_tensor_view_free(v);
  // A view is not a tensor: freeing it as one is refused, not a crash.
  ccv_nnc_tensor_view_t* v2 = ccv_nnc_tensor_view_new(t, cpu_param(CCV_32F, {3, 4}), ccv_nnc_no_ofs, stride);
  ccv_nnc_tensor_free(reinterpret_cast<ccv_nnc_tensor_t*>(v2));
  EXPECT_NE(last_error().find("view"), std::string::npos);
  ccv_nnc_tensor_view_free(v2);
}

TEST_F(TensorTest, ZeroClearsOnlyTheView) {
  Tensor t(cpu_param(CCV_32F, {5, 7}));
  for (int i = 0; i < 35; i++) t.f32()[i] = 1.f;
  const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 2};
  ccv_nnc_tensor_view_t v = ccv_nnc_tensor_view(t, cpu_param(CCV_32F, {3, 4}), ofs, nullptr);
  ccv_nnc_tensor_zero(&v);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++) {
      const bool inside = i >= 1 && i < 4 && j >= 2 && j < 6;
      EXPECT_EQ(t.f32()[i * 7 + j], inside ? 0.f : 1.f) << i << "," << j;
    }
  ccv_nnc_tensor_zero(t);
  for (int i = 0; i < 35; i++) EXPECT_EQ(t.f32()[i], 0.f);
  // A column: a {5, 1} window at column 3, rows 7 elements apart.
  for (int i = 0; i < 35; i++) t.f32()[i] = 2.f;
  const int col_ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 3};
  const int col_stride[CCV_NNC_MAX_DIM_ALLOC] = {7, 1};
  ccv_nnc_tensor_view_t col = ccv_nnc_tensor_view(t, cpu_param(CCV_32F, {5, 1}), col_ofs, col_stride);
  ccv_nnc_tensor_zero(&col);
  for (int i = 0; i < 35; i++) EXPECT_EQ(t.f32()[i], i % 7 == 3 ? 0.f : 2.f) << i;
  // A strided 1-d view: every third element from element 1.
  Tensor line(cpu_param(CCV_32F, {20}));
  for (int i = 0; i < 20; i++) line.f32()[i] = 3.f;
  const int every_ofs[CCV_NNC_MAX_DIM_ALLOC] = {1};
  const int every_stride[CCV_NNC_MAX_DIM_ALLOC] = {3};
  ccv_nnc_tensor_view_t every = ccv_nnc_tensor_view(line, cpu_param(CCV_32F, {6}), every_ofs, every_stride);
  ASSERT_NE(every.info.dim[0], 0) << last_error();
  ccv_nnc_tensor_zero(&every);
  for (int i = 0; i < 20; i++) EXPECT_EQ(line.f32()[i], (i >= 3 && i % 3 == 0 && i <= 18) ? 0.f : 3.f) << i;
}

TEST_F(TensorTest, EqToleratesRoundingButNotRealDifferences) {
  Tensor a(cpu_param(CCV_32F, {4, 3}));
  Tensor b(cpu_param(CCV_32F, {4, 3}));
  for (int i = 0; i < 12; i++) a.f32()[i] = b.f32()[i] = 0.1f * static_cast<float>(i) + 3.f;
  EXPECT_EQ(ccv_nnc_tensor_eq(a, b), 0);
  b.f32()[5] = std::nextafter(b.f32()[5], 100.f);  // one ulp
  EXPECT_EQ(ccv_nnc_tensor_eq(a, b), 0);
  b.f32()[5] *= 1.001f;
  EXPECT_EQ(ccv_nnc_tensor_eq(a, b), -1);
  EXPECT_NE(last_error().find("[1,2]"), std::string::npos) << last_error();
  b.f32()[5] = a.f32()[5];
  Tensor c(cpu_param(CCV_32F, {3, 4}));
  EXPECT_EQ(ccv_nnc_tensor_eq(a, c), -1);
  EXPECT_NE(last_error().find("shape"), std::string::npos);
  Tensor d(cpu_param(CCV_64F, {4, 3}));
  EXPECT_EQ(ccv_nnc_tensor_eq(a, d), -1);
  // NaN equals NaN (both missing the same way), but not a number.
  a.f32()[0] = b.f32()[0] = NAN;
  EXPECT_EQ(ccv_nnc_tensor_eq(a, b), 0);
  b.f32()[0] = 1;
  EXPECT_EQ(ccv_nnc_tensor_eq(a, b), -1);
  // Integers compare exactly.
  Tensor i1(cpu_param(CCV_32S, {3})), i2(cpu_param(CCV_32S, {3}));
  for (int i = 0; i < 3; i++) i1->data.i32[i] = i2->data.i32[i] = i * 1000;
  EXPECT_EQ(ccv_nnc_tensor_eq(i1, i2), 0);
  i2->data.i32[2]++;
  EXPECT_EQ(ccv_nnc_tensor_eq(i1, i2), -1);
  EXPECT_EQ(ccv_nnc_tensor_eq(nullptr, i2), -1);
}

TEST_F(TensorTest, EqComparesViewsWithPlainTensors) {
  Tensor big(cpu_param(CCV_32F, {4, 6}));
  Tensor small(cpu_param(CCV_32F, {2, 3}));
  for (int i = 0; i < 24; i++) big.f32()[i] = static_cast<float>(i);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) small.f32()[i * 3 + j] = static_cast<float>((i + 1) * 6 + j + 2);
  const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 2};
  ccv_nnc_tensor_view_t v = ccv_nnc_tensor_view(big, cpu_param(CCV_32F, {2, 3}), ofs, nullptr);
  EXPECT_EQ(ccv_nnc_tensor_eq(reinterpret_cast<ccv_nnc_tensor_t*>(&v), small), 0) << last_error();
}

TEST_F(TensorTest, FormatPrintsLikeNumpyAndElidesLongRows) {
  Tensor t(cpu_param(CCV_32F, {2, 3}));
  for (int i = 0; i < 6; i++) t.f32()[i] = static_cast<float>(i) * 0.5f;
  char* s = ccv_nnc_tensor_format_new(t);
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(s, "[[0, 0.5, 1],\n [1.5, 2, 2.5]]");
  free(s);
  Tensor l(cpu_param(CCV_32S, {10}));
  for (int i = 0; i < 10; i++) l->data.i32[i] = i;
  s = ccv_nnc_tensor_format_new(l);
  EXPECT_STREQ(s, "[0, 1, 2, ..., 7, 8, 9]");
  free(s);
}

TEST_F(TensorTest, ResizeKeepsMemoryWhenItFitsAndGrowsWhenNot) {
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {4, 4}), 0);
  for (int i = 0; i < 16; i++) t->data.f32[i] = static_cast<float>(i);
  ccv_nnc_tensor_t* same = ccv_nnc_tensor_resize(t, cpu_param(CCV_32F, {2, 8}));
  ASSERT_EQ(same, t);
  EXPECT_EQ(same->info.dim[1], 8);
  ccv_nnc_tensor_t* grown = ccv_nnc_tensor_resize(same, cpu_param(CCV_32F, {64, 64}));
  ASSERT_NE(grown, nullptr) << last_error();
  EXPECT_EQ(grown->info.dim[0], 64);
  for (int i = 0; i < 16; i++) EXPECT_EQ(grown->data.f32[i], static_cast<float>(i));
  EXPECT_EQ(ccv_nnc_tensor_resize(grown, cpu_param(CCV_32F, {-1})), nullptr);
  ccv_nnc_tensor_free(grown);
  // Caller memory cannot grow.
  float buf[4];
  ccv_nnc_tensor_t* u = ccv_nnc_tensor_new(buf, cpu_param(CCV_32F, {4}), 0);
  EXPECT_EQ(ccv_nnc_tensor_resize(u, cpu_param(CCV_32F, {8})), nullptr);
  EXPECT_NE(last_error().find("caller memory"), std::string::npos);
  ccv_nnc_tensor_free(u);
}

TEST_F(TensorTest, NewFromFileMapsTheBytesAtTheOffset) {
  char path[] = "/tmp/nnc-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<float> data(5000);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<float>(i) * 0.25f;
  const size_t header = 4100;  // not page aligned on purpose
  std::vector<char> pad(header, 'x');
  ASSERT_EQ(write(fd, pad.data(), pad.size()), static_cast<ssize_t>(pad.size()));
  ASSERT_EQ(write(fd, data.data(), data.size() * 4), static_cast<ssize_t>(data.size() * 4));
  close(fd);
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new_from_file(cpu_param(CCV_32F, {50, 100}), path, header, 0);
  ASSERT_NE(t, nullptr) << last_error();
  for (int i = 0; i < 5000; i += 97) EXPECT_EQ(t->data.f32[i], data[static_cast<size_t>(i)]);
  t->data.f32[0] = -1;  // private mapping: writable, file unchanged
  ccv_nnc_tensor_free(t);
  // Too short a file, a missing file.
  EXPECT_EQ(ccv_nnc_tensor_new_from_file(cpu_param(CCV_32F, {50, 101}), path, header, 0), nullptr);
  EXPECT_NE(last_error().find("fewer"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_new_from_file(cpu_param(CCV_32F, {5}), "/nonexistent/nnc", 0, 0), nullptr);
  EXPECT_NE(last_error().find("cannot open"), std::string::npos);
  unlink(path);
}

TEST_F(TensorTest, HalfAndBfloatConversionsRoundToNearestEven) {
  // Exactly representable values survive a round trip.
  for (float v : {0.f, -0.f, 1.f, -2.5f, 65504.f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    EXPECT_EQ(nnc::half_to_float(nnc::float_to_half(v)), v) << v;
  }
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even one (1).
  EXPECT_EQ(nnc::half_to_float(nnc::float_to_half(1.f + std::ldexp(1.f, -11))), 1.f);
  EXPECT_EQ(nnc::half_to_float(nnc::float_to_half(1.f + 3 * std::ldexp(1.f, -11))), 1.f + std::ldexp(1.f, -9));
  EXPECT_TRUE(std::isinf(nnc::half_to_float(nnc::float_to_half(70000.f))));
  EXPECT_TRUE(std::isnan(nnc::half_to_float(nnc::float_to_half(NAN))));
  // bf16 keeps 8 bits of mantissa.
  EXPECT_EQ(nnc::bf16_to_float(nnc::float_to_bf16(1.f + std::ldexp(1.f, -8))), 1.f);  // tie to even
  EXPECT_EQ(nnc::bf16_to_float(nnc::float_to_bf16(1.f + 3 * std::ldexp(1.f, -8))), 1.f + std::ldexp(1.f, -6));
  EXPECT_TRUE(std::isnan(nnc::bf16_to_float(nnc::float_to_bf16(NAN))));
  // The ccv entry points agree with the scalar ones.
  float in[3] = {0.1f, -3.75f, 1000.f};
  uint16_t h[3];
  float out[3];
  ccv_float_to_half_precision(in, h, 3);
  ccv_half_precision_to_float(h, out, 3);
  for (int i = 0; i < 3; i++) EXPECT_EQ(out[i], nnc::half_to_float(nnc::float_to_half(in[i])));
  EXPECT_NEAR(out[0], 0.1, 1e-4);
}

}  // namespace
