// The ccv core: arrays and matrix signatures.
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace {

TEST(CcvArray, PushGrowsAndKeepsRecords) {
  ccv_array_t* a = ccv_array_new(sizeof(int), 2, 0);
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < 1000; i++) ccv_array_push(a, &i);
  ASSERT_EQ(a->rnum, 1000);
  EXPECT_GE(a->size, 1000);
  for (int i = 0; i < 1000; i++) EXPECT_EQ(*static_cast<int*>(ccv_array_get(a, i)), i);
  ccv_array_resize(a, 1200);
  EXPECT_EQ(a->rnum, 1200);
  EXPECT_EQ(*static_cast<int*>(ccv_array_get(a, 1100)), 0);
  EXPECT_EQ(*static_cast<int*>(ccv_array_get(a, 999)), 999);
  ccv_array_clear(a);
  EXPECT_EQ(a->rnum, 0);
  ccv_array_free(a);
  ccv_array_free(nullptr);
  EXPECT_EQ(ccv_array_new(0, 4, 0), nullptr);
  EXPECT_EQ(ccv_array_new(4, -1, 0), nullptr);
}

int same_tens(const void* a, const void* b, void*) {
  return *static_cast<const int*>(a) / 10 == *static_cast<const int*>(b) / 10;
}

TEST(CcvArray, GroupFindsEquivalenceClasses) {
  ccv_array_t* a = ccv_array_new(sizeof(int), 8, 0);
  for (int v : {3, 15, 7, 12, 31, 0, 19, 35}) ccv_array_push(a, &v);
  ccv_array_t* index = nullptr;
  const int groups = ccv_array_group(a, &index, same_tens, nullptr);
  EXPECT_EQ(groups, 3);  // {3,7,0}, {15,12,19}, {31,35}
  ASSERT_NE(index, nullptr);
  auto g = [&](int i) { return *static_cast<int*>(ccv_array_get(index, i)); };
  EXPECT_EQ(g(0), g(2));
  EXPECT_EQ(g(0), g(5));
  EXPECT_EQ(g(1), g(3));
  EXPECT_EQ(g(1), g(6));
  EXPECT_EQ(g(4), g(7));
  EXPECT_NE(g(0), g(1));
  EXPECT_NE(g(1), g(4));
  ccv_array_free(index);
  ccv_array_free(a);
}

TEST(CcvMatrix, ImmutableSignatureFollowsContent) {
  ccv_dense_matrix_t* a = ccv_dense_matrix_new(3, 3, CCV_8U | CCV_C1, nullptr, 0);
  ccv_dense_matrix_t* b = ccv_dense_matrix_new(3, 3, CCV_8U | CCV_C1, nullptr, 0);
  std::memset(a->data.u8, 7, static_cast<size_t>(a->step) * 3);
  std::memset(b->data.u8, 7, static_cast<size_t>(b->step) * 3);
  ccv_make_matrix_immutable(a);
  ccv_make_matrix_immutable(b);
  EXPECT_NE(a->sig, 0u);
  EXPECT_EQ(a->sig, b->sig);
  b->data.u8[4] = 8;
  ccv_make_matrix_immutable(b);
  EXPECT_NE(a->sig, b->sig);
  ccv_make_matrix_mutable(a);
  EXPECT_EQ(a->sig, 0u);
  ccv_dense_matrix_t* r = ccv_dense_matrix_renew(a, 3, 3, CCV_8U | CCV_C1, CCV_8U | CCV_C1, 0);
  EXPECT_EQ(r, a);  // reused
  r = ccv_dense_matrix_renew(r, 4, 3, CCV_8U | CCV_C1, CCV_32F | CCV_C1, 0);
  EXPECT_EQ(CCV_GET_DATA_TYPE(r->type), CCV_32F);
  EXPECT_EQ(r->rows, 4);
  ccv_matrix_free(r);
  ccv_matrix_free(b);
  ccv_matrix_free(nullptr);
}

}  // namespace
