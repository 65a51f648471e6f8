// Toll-free bridging: the byte layout of tensors and dense matrices is an ABI
// promise. Every offset is pinned to a number (x86-64, LP64), and a matrix
// and a tensor are used as each other.
#include <gtest/gtest.h>

#include <cstddef>

#include "test_util.hpp"

using namespace nnc_test;

namespace {

TEST(Tfb, TensorLayoutIsPinned) {
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, type), 0u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, refcount), 4u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, data), 8u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, dataof), 16u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, alias_ref), 24u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, data_size), 32u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, sig), 40u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_t, info), 48u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_param_t, type), 0u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_param_t, format), 4u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_param_t, datatype), 8u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_param_t, reserved), 12u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_param_t, dim), 16u);
  EXPECT_EQ(sizeof(ccv_nnc_tensor_param_t), 64u);
  EXPECT_EQ(sizeof(ccv_nnc_tensor_t), 112u);
}

TEST(Tfb, TensorViewExtendsTheTensor) {
  EXPECT_EQ(offsetof(ccv_nnc_tensor_view_t, type), offsetof(ccv_nnc_tensor_t, type));
  EXPECT_EQ(offsetof(ccv_nnc_tensor_view_t, data), offsetof(ccv_nnc_tensor_t, data));
  EXPECT_EQ(offsetof(ccv_nnc_tensor_view_t, info), offsetof(ccv_nnc_tensor_t, info));
  EXPECT_EQ(offsetof(ccv_nnc_tensor_view_t, contiguous), 112u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_view_t, off), 120u);
  EXPECT_EQ(offsetof(ccv_nnc_tensor_view_t, stride), 128u);
  EXPECT_EQ(sizeof(ccv_nnc_tensor_view_t), 176u);
}

TEST(Tfb, DenseMatrixOverlaysTheTensor) {
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, type), 0u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, refcount), 4u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, data), 8u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, reserved0), 16u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, reserved1), 24u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, reserved2), 32u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, sig), 40u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, resides), 48u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, format), 52u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, datatype), 56u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, reserved3), 60u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, rows), 64u);   // info.dim[0]
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, cols), 68u);   // info.dim[1]
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, channels), 72u);  // info.dim[2]
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, reserved4), 76u); // info.dim[3], 0
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, step), 80u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, tb), 88u);
  EXPECT_EQ(offsetof(ccv_dense_matrix_t, info), 48u);
  EXPECT_EQ(sizeof(ccv_dense_matrix_t), 112u);
}

TEST(Tfb, MatrixIsAThreeDimensionalTensor) {
  ccv_nnc_init();
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(5, 7, CCV_32F | CCV_C3, nullptr, 0);
  ASSERT_NE(m, nullptr);
  for (int r = 0; r < 5; r++)
    for (int c = 0; c < 7; c++)
      for (int ch = 0; ch < 3; ch++)
        *static_cast<float*>(ccv_get_dense_matrix_cell(m, r, c, ch)) = static_cast<float>(r * 100 + c * 10 + ch);
  auto* t = reinterpret_cast<ccv_nnc_tensor_t*>(m);
  EXPECT_EQ(ccv_nnc_tensor_nd(t->info.dim), 3);
  EXPECT_EQ(t->info.dim[0], 5);
  EXPECT_EQ(t->info.dim[1], 7);
  EXPECT_EQ(t->info.dim[2], 3);
  EXPECT_EQ(t->info.datatype, CCV_32F);
  EXPECT_EQ(t->info.format, CCV_TENSOR_FORMAT_NHWC);
  EXPECT_EQ(CCV_TENSOR_GET_MEMORY(t->info.type), CCV_TENSOR_CPU_MEMORY);
  EXPECT_FALSE(CCV_IS_TENSOR_VIEW(t));
  EXPECT_EQ(t->data_size, 5u * 7 * 3 * 4);
  EXPECT_EQ(t->data.f32[(2 * 7 + 4) * 3 + 1], 241.f);
  // A tensor operation on the matrix sees its elements.
  ccv_nnc_tensor_param_t p = t->info;  // copying info (step lives past the 0) still gives a 3-d tensor
  Tensor copy(p);
  ASSERT_NE(copy.t, nullptr) << ccv_nnc_error_message();
  std::memcpy(copy->data.ptr, t->data.ptr, 5 * 7 * 3 * 4);
  EXPECT_EQ(ccv_nnc_tensor_eq(copy, t), 0);
  ccv_matrix_free(m);
}

TEST(Tfb, TensorIsADenseMatrix) {
  ccv_nnc_init();
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_64F, {4, 6, 2}), 0);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 48; i++) t->data.f64[i] = i;
  auto* m = reinterpret_cast<ccv_dense_matrix_t*>(t);
  EXPECT_EQ(m->rows, 4);
  EXPECT_EQ(m->cols, 6);
  EXPECT_EQ(m->channels, 2);
  EXPECT_EQ(CCV_GET_DATA_TYPE(m->type), CCV_64F);
  EXPECT_EQ(CCV_GET_CHANNEL(m->type), 2);
  EXPECT_TRUE(m->type & CCV_MATRIX_DENSE);
  EXPECT_EQ(m->step, 6 * 2 * 8);
  EXPECT_EQ(ccv_get_dense_matrix_cell_value(m, 3, 5, 1), 47.0);
  EXPECT_EQ(ccv_get_dense_matrix_cell_value(m, 1, 2, 0), 16.0);
  ccv_matrix_free(m);  // one block: either free function releases it
}

TEST(Tfb, MatrixOverCallerMemory) {
  float data[2 * 3] = {1, 2, 3, 4, 5, 6};
  ccv_dense_matrix_t m = ccv_dense_matrix(2, 3, CCV_32F | CCV_C1, data, 0);
  EXPECT_EQ(m.data.f32, data);
  EXPECT_EQ(reinterpret_cast<ccv_nnc_tensor_t*>(&m)->info.dim[1], 3);
  ccv_dense_matrix_t* h = ccv_dense_matrix_new(2, 3, CCV_32F | CCV_C1, data, 0);
  EXPECT_EQ(h->data.f32, data);
  ccv_matrix_free(h);
  EXPECT_EQ(data[5], 6);
  EXPECT_EQ(ccv_dense_matrix_new(0, 3, CCV_32F | CCV_C1, nullptr, 0), nullptr);
  EXPECT_EQ(ccv_dense_matrix_new(2, 3, CCV_32F, nullptr, 0), nullptr);  // no channels
}

}  // namespace
