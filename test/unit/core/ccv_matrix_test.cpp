// The ccv core's dense matrices, cell macros, arrays and conversions: values
// against what libccv's header defines, memory shared with tensors and with a
// block laid out as libccv lays it out, and bad input with its message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "test_util.hpp"

namespace {

bool message_has(const char* text) { return std::strstr(ccv_nnc_error_message(), text) != nullptr; }

// libccv's values, which programs compiled against its header carry.
static_assert(CCV_8U == 0x01000 && CCV_32S == 0x02000 && CCV_32F == 0x04000 && CCV_64S == 0x08000 &&
              CCV_64F == 0x10000 && CCV_16F == 0x20000 && CCV_QX == 0x40000 && CCV_16BF == 0x80000);
static_assert(CCV_MATRIX_DENSE == 0x00100000 && CCV_REUSABLE == 0x40000000 && CCV_UNMANAGED == 0x20000000 &&
              CCV_NO_DATA_ALLOC == 0x10000000 && CCV_TAPE_ALLOC == 0x08000000 && CCV_PINNED_MEM == 0x04000000 &&
              CCV_MAPPED_MEM == 0x02000000 && static_cast<unsigned>(CCV_GARBAGE) == 0x80000000u);
static_assert(CCV_IO_FINAL == 0 && CCV_IO_CONTINUE == 1 && CCV_IO_ERROR == 2 && CCV_IO_ATTEMPTED == 3 &&
              CCV_IO_UNKNOWN == 4);
static_assert(CCV_DEFAULT_CACHE_SIZE == 64 * 1024 * 1024);

constexpr size_t kHeader = (sizeof(ccv_dense_matrix_t) + 63) & ~size_t{63};

TEST(CcvMatrixNew, OwnedBlockLayout) {
  // 8U C3 rows of 5 pixels are 15 bytes, padded to 16.
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(3, 5, CCV_8U | CCV_C3, nullptr, 42);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->type, CCV_MATRIX_DENSE | CCV_8U | CCV_C3);
  EXPECT_EQ(m->rows, 3);
  EXPECT_EQ(m->cols, 5);
  EXPECT_EQ(m->step, 16);
  EXPECT_EQ(m->step, CCV_GET_STEP(5, CCV_8U | CCV_C3));
  EXPECT_EQ(m->sig, 42u);
  EXPECT_EQ(m->refcount, 1);
  // One block: the rows start at the rounded header, as libccv's size macro says.
  EXPECT_EQ(m->data.u8, reinterpret_cast<unsigned char*>(m) + kHeader);
  EXPECT_EQ(ccv_compute_dense_matrix_size(3, 5, CCV_8U | CCV_C3), kHeader + 48);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data.u8) % 64, 0u);
  // The tensor view of the same bytes.
  auto* t = reinterpret_cast<ccv_nnc_tensor_t*>(m);
  EXPECT_EQ(t->info.type & 0x3, CCV_TENSOR_CPU_MEMORY);
  EXPECT_EQ(t->info.format, CCV_TENSOR_FORMAT_NHWC);
  EXPECT_EQ(t->info.datatype, CCV_8U);
  EXPECT_EQ(ccv_nnc_tensor_nd(t->info.dim), 3);
  EXPECT_EQ(t->info.dim[2], 3);
  ccv_matrix_free(m);
}

TEST(CcvMatrixNew, CallerDataIsNotOwned) {
  alignas(16) double data[2 * 3 * 2] = {};
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(2, 3, CCV_64F | CCV_C2, data, 0);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->data.f64, data);
  EXPECT_TRUE(m->type & CCV_NO_DATA_ALLOC);
  EXPECT_FALSE(m->type & CCV_UNMANAGED);
  EXPECT_EQ(m->step, 48);
  *static_cast<double*>(ccv_get_dense_matrix_cell(m, 1, 2, 1)) = 7.5;
  EXPECT_EQ(data[11], 7.5);
  ccv_matrix_free(m);  // the header only: data is still ours
  EXPECT_EQ(data[11], 7.5);
}

TEST(CcvMatrixNew, BadArgumentsGiveNullAndMessage) {
  EXPECT_EQ(ccv_dense_matrix_new(0, 4, CCV_32F | CCV_C1, nullptr, 0), nullptr);
  EXPECT_TRUE(message_has("ccv_dense_matrix_new")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("rows (0)")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_dense_matrix_new(4, -1, CCV_32F | CCV_C1, nullptr, 0), nullptr);
  EXPECT_TRUE(message_has("cols (-1)")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_dense_matrix_new(4, 4, CCV_32F, nullptr, 0), nullptr);
  EXPECT_TRUE(message_has("channel")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_dense_matrix_new(4, 4, CCV_C1, nullptr, 0), nullptr);
  EXPECT_TRUE(message_has("data type")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_dense_matrix_new(1 << 30, 1 << 30, CCV_64F | CCV_C4, nullptr, 0), nullptr);
  EXPECT_TRUE(message_has("too large")) << ccv_nnc_error_message();
}

TEST(CcvDenseMatrix, HeaderByValue) {
  float data[4 * 2] = {};
  ccv_dense_matrix_t m = ccv_dense_matrix(4, 2, CCV_32F | CCV_C1, data, 9);
  EXPECT_EQ(m.type, CCV_MATRIX_DENSE | CCV_32F | CCV_C1 | CCV_NO_DATA_ALLOC | CCV_UNMANAGED);
  EXPECT_EQ(m.data.f32, data);
  EXPECT_EQ(m.step, 8);
  EXPECT_EQ(m.sig, 9u);
  ccv_matrix_free(&m);  // unmanaged: left alone (it lives on the stack)
  ccv_matrix_free_immediately(&m);
  EXPECT_EQ(m.rows, 4);

  ccv_dense_matrix_t bad = ccv_dense_matrix(4, 2, CCV_32F | CCV_C1, nullptr, 0);
  EXPECT_TRUE(message_has("data is NULL")) << ccv_nnc_error_message();
  EXPECT_EQ(bad.data.u8, nullptr);
  EXPECT_EQ(bad.type, 0);
}

TEST(CcvDenseMatrixRenew, ReusesOrReplaces) {
  ccv_dense_matrix_t* a = ccv_dense_matrix_renew(nullptr, 2, 3, CCV_ALL_DATA_TYPE | CCV_C1, CCV_32S | CCV_C1, 5);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(CCV_GET_DATA_TYPE(a->type), CCV_32S);
  EXPECT_EQ(a->sig, 5u);
  // Any listed data type with the same channels and shape is kept.
  EXPECT_EQ(ccv_dense_matrix_renew(a, 2, 3, CCV_32F | CCV_32S | CCV_C1, CCV_32F | CCV_C1, 6), a);
  EXPECT_EQ(a->sig, 6u);
  ccv_dense_matrix_t* b = ccv_dense_matrix_renew(a, 2, 3, CCV_32F | CCV_C1, CCV_32F | CCV_C1, 0);  // type differs
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(CCV_GET_DATA_TYPE(b->type), CCV_32F);
  ccv_dense_matrix_t* c = ccv_dense_matrix_renew(b, 2, 3, CCV_32F | CCV_C2, CCV_32F | CCV_C2, 0);  // channels differ
  EXPECT_EQ(CCV_GET_CHANNEL(c->type), 2);
  EXPECT_EQ(ccv_dense_matrix_renew(c, 0, 3, CCV_32F | CCV_C1, CCV_32F | CCV_C1, 0), nullptr);
  EXPECT_TRUE(message_has("ccv_dense_matrix_new")) << ccv_nnc_error_message();
}

TEST(CcvMatrixFree, SharedWithTensorsAndLibccvBlocks) {
  ccv_matrix_free(nullptr);
  ccv_matrix_free_immediately(nullptr);
  // A tensor freed as a matrix, a matrix freed as a tensor.
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, nnc_test::cpu_param(CCV_32F, {4, 5, 3}), 0);
  ASSERT_NE(t, nullptr);
  auto* tm = reinterpret_cast<ccv_dense_matrix_t*>(t);
  EXPECT_TRUE(tm->type & CCV_MATRIX_DENSE);
  EXPECT_EQ(tm->rows, 4);
  EXPECT_EQ(tm->step, 60);
  ccv_matrix_free(t);
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(4, 5, CCV_32F | CCV_C3, nullptr, 0);
  ccv_nnc_tensor_free(reinterpret_cast<ccv_nnc_tensor_t*>(m));
  // A block made the way libccv makes one (plain malloc, the rows after the
  // rounded header) is freed here; ASan would report a mismatch.
  const size_t bytes = ccv_compute_dense_matrix_size(3, 3, CCV_32F | CCV_C1);
  auto* block = static_cast<ccv_dense_matrix_t*>(std::malloc(bytes));
  ASSERT_NE(block, nullptr);
  std::memset(block, 0, sizeof(*block));
  block->type = CCV_MATRIX_DENSE | CCV_32F | CCV_C1;
  block->data.u8 = reinterpret_cast<unsigned char*>(block) + kHeader;
  block->rows = block->cols = 3;
  block->channels = 1;
  block->step = 12;
  ccv_matrix_free(block);
  // A sparse matrix header is refused, not half-freed.
  ccv_dense_matrix_t sparse;
  std::memset(&sparse, 0, sizeof(sparse));
  sparse.type = CCV_MATRIX_SPARSE | CCV_32F | CCV_C1;
  ccv_matrix_free(&sparse);
  EXPECT_TRUE(message_has("sparse matrix")) << ccv_nnc_error_message();
}

ccv_dense_matrix_t* filled(int rows, int cols, int type, double scale) {
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(rows, cols, type, nullptr, 0);
  const int n = cols * CCV_GET_CHANNEL(type);
  for (int r = 0; r < rows; r++)
    for (int i = 0; i < n; i++) {
      const double v = ((r * 13 + i * 7) % 23) * scale;
      void* row = m->data.u8 + static_cast<size_t>(r) * m->step;
      ccv_set_value(type, row, i, v, 0);
    }
  return m;
}

TEST(CcvMatrixEq, IntegersExact) {
  for (int type : {CCV_8U | CCV_C3, CCV_32S | CCV_C2, CCV_64S | CCV_C1}) {
    ccv_dense_matrix_t* a = filled(5, 7, type, 1);
    ccv_dense_matrix_t* b = filled(5, 7, type, 1);
    EXPECT_EQ(ccv_matrix_eq(a, b), 0) << type;
    if (CCV_GET_DATA_TYPE(type) == CCV_8U) {
      // 7 pixels of 3 bytes: 21 bytes a row, 3 of padding, which do not count.
      ASSERT_EQ(a->step, 24);
      a->data.u8[22] = 1;
      b->data.u8[22] = 2;
      EXPECT_EQ(ccv_matrix_eq(a, b), 0);
      a->data.u8[a->step * 4 + 20] ^= 1;  // last element of the last row
    } else if (CCV_GET_DATA_TYPE(type) == CCV_32S) {
      a->data.i32[5 * 7 * 2 - 1] += 1;
    } else {
      a->data.i64[0] += 1;
    }
    EXPECT_EQ(ccv_matrix_eq(a, b), -1) << type;
    ccv_matrix_free(a);
    ccv_matrix_free(b);
  }
}

TEST(CcvMatrixEq, FloatsWithinRelativeTolerance) {
  ccv_dense_matrix_t* a = filled(3, 4, CCV_32F | CCV_C1, 1000.0);
  ccv_dense_matrix_t* b = filled(3, 4, CCV_32F | CCV_C1, 1000.0);
  b->data.f32[7] = a->data.f32[7] * (1 + 5e-5f);  // within 1e-4 of the larger magnitude
  EXPECT_EQ(ccv_matrix_eq(a, b), 0);
  b->data.f32[7] = a->data.f32[7] * (1 + 3e-4f);
  EXPECT_EQ(ccv_matrix_eq(a, b), -1);
  // Near 0 the bound is absolute: 1e-4.
  a->data.f32[7] = 0;
  b->data.f32[7] = 5e-5f;
  EXPECT_EQ(ccv_matrix_eq(a, b), 0);
  b->data.f32[7] = 2e-4f;
  EXPECT_EQ(ccv_matrix_eq(a, b), -1);
  // NaN matches only NaN; an infinity only itself.
  a->data.f32[7] = b->data.f32[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ccv_matrix_eq(a, b), 0);
  b->data.f32[7] = 1;
  EXPECT_EQ(ccv_matrix_eq(a, b), -1);
  a->data.f32[7] = b->data.f32[7] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ccv_matrix_eq(a, b), 0);
  b->data.f32[7] = std::numeric_limits<float>::max();
  EXPECT_EQ(ccv_matrix_eq(a, b), -1);
  b->data.f32[7] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(ccv_matrix_eq(a, b), -1);
  ccv_matrix_free(a);
  ccv_matrix_free(b);

  ccv_dense_matrix_t* c = filled(2, 3, CCV_64F | CCV_C2, 0.5);
  ccv_dense_matrix_t* d = filled(2, 3, CCV_64F | CCV_C2, 0.5);
  d->data.f64[3] += 1e-11 * std::max(1.0, std::fabs(d->data.f64[3]));
  EXPECT_EQ(ccv_matrix_eq(c, d), 0);
  d->data.f64[3] += 1e-9;
  EXPECT_EQ(ccv_matrix_eq(c, d), -1);
  ccv_matrix_free(c);
  ccv_matrix_free(d);

  // Half precision: 1.0 and its next value (1 + 2^-10) are within 1e-2.
  ccv_dense_matrix_t* h = ccv_dense_matrix_new(1, 3, CCV_16F | CCV_C1, nullptr, 0);
  ccv_dense_matrix_t* g = ccv_dense_matrix_new(1, 3, CCV_16F | CCV_C1, nullptr, 0);
  const float hv[3] = {1.0f, -2.0f, 0.5f};
  const float gv[3] = {1.0009765625f, -2.0f, 0.5f};
  ccv_float_to_half_precision(hv, reinterpret_cast<uint16_t*>(h->data.u8), 3);
  ccv_float_to_half_precision(gv, reinterpret_cast<uint16_t*>(g->data.u8), 3);
  EXPECT_EQ(ccv_matrix_eq(h, g), 0);
  const float far[3] = {1.0f, -2.5f, 0.5f};
  ccv_float_to_half_precision(far, reinterpret_cast<uint16_t*>(g->data.u8), 3);
  EXPECT_EQ(ccv_matrix_eq(h, g), -1);
  ccv_matrix_free(h);
  ccv_matrix_free(g);
}

TEST(CcvMatrixEq, ShapeAndTypeMustMatch) {
  ccv_dense_matrix_t* a = filled(3, 4, CCV_32F | CCV_C1, 1);
  ccv_dense_matrix_t* b = filled(4, 3, CCV_32F | CCV_C1, 1);  // same element count
  ccv_dense_matrix_t* c = filled(3, 4, CCV_64F | CCV_C1, 1);  // same values
  ccv_dense_matrix_t* d = filled(3, 2, CCV_32F | CCV_C2, 1);  // same bytes
  EXPECT_EQ(ccv_matrix_eq(a, b), -1);
  EXPECT_EQ(ccv_matrix_eq(a, c), -1);
  EXPECT_EQ(ccv_matrix_eq(a, d), -1);
  EXPECT_EQ(ccv_matrix_eq(a, a), 0);
  // A plain 3-d tensor is a dense matrix: same values, same answer.
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, nnc_test::cpu_param(CCV_32F, {3, 4, 1}), 0);
  std::memcpy(t->data.f32, a->data.f32, 12 * sizeof(float));
  EXPECT_EQ(ccv_matrix_eq(a, t), 0);
  EXPECT_EQ(ccv_matrix_eq(t, a), 0);
  ccv_nnc_tensor_free(t);
  ccv_matrix_free(a);
  ccv_matrix_free(b);
  ccv_matrix_free(c);
  ccv_matrix_free(d);
}

TEST(CcvMatrixEq, BadInputGivesMinusOneAndMessage) {
  ccv_dense_matrix_t* a = filled(2, 2, CCV_32F | CCV_C1, 1);
  EXPECT_EQ(ccv_matrix_eq(nullptr, a), -1);
  EXPECT_TRUE(message_has("ccv_matrix_eq: a is NULL")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_matrix_eq(a, nullptr), -1);
  EXPECT_TRUE(message_has("ccv_matrix_eq: b is NULL")) << ccv_nnc_error_message();
  // A 4-d tensor is no dense matrix.
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, nnc_test::cpu_param(CCV_32F, {1, 2, 2, 1}), 0);
  EXPECT_EQ(ccv_matrix_eq(a, t), -1);
  EXPECT_TRUE(message_has("b is not a dense matrix")) << ccv_nnc_error_message();
  ccv_nnc_tensor_free(t);
  ccv_matrix_free(a);
}

TEST(CcvZero, ClearsRowsAndPadding) {
  ccv_dense_matrix_t* m = filled(3, 5, CCV_8U | CCV_C1, 1);
  std::memset(m->data.u8, 0xAB, static_cast<size_t>(m->step) * 3);
  ccv_zero(m);
  for (int i = 0; i < m->step * 3; i++) ASSERT_EQ(m->data.u8[i], 0) << i;
  ccv_matrix_free(m);
  ccv_zero(nullptr);  // no-op
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, nnc_test::cpu_param(CCV_32F, {2, 2, 2, 2}), 0);
  t->data.f32[0] = 3;
  ccv_zero(t);
  EXPECT_TRUE(message_has("ccv_zero: mat is not a dense matrix")) << ccv_nnc_error_message();
  EXPECT_EQ(t->data.f32[0], 3);  // left untouched
  ccv_nnc_tensor_free(t);
}

TEST(CcvGetDenseMatrix, DenseOrNullWithMessage) {
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(2, 2, CCV_32S | CCV_C1, nullptr, 0);
  EXPECT_EQ(ccv_get_dense_matrix(m), m);
  ccv_matrix_free(m);
  EXPECT_EQ(ccv_get_dense_matrix(nullptr), nullptr);
  EXPECT_TRUE(message_has("ccv_get_dense_matrix: mat is NULL")) << ccv_nnc_error_message();
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, nnc_test::cpu_param(CCV_32F, {6}), 0);
  EXPECT_EQ(ccv_get_dense_matrix(t), nullptr);
  EXPECT_TRUE(message_has("not a dense matrix")) << ccv_nnc_error_message();
  ccv_nnc_tensor_free(t);
}

TEST(CcvCellMacros, AddressEveryType) {
  ccv_dense_matrix_t* u = ccv_dense_matrix_new(3, 3, CCV_8U | CCV_C3, nullptr, 0);  // step 12 (9 used)
  ASSERT_EQ(u->step, 12);
  *static_cast<unsigned char*>(ccv_get_dense_matrix_cell(u, 2, 1, 2)) = 200;
  EXPECT_EQ(u->data.u8[2 * 12 + 1 * 3 + 2], 200);
  EXPECT_EQ(ccv_get_dense_matrix_cell_value(u, 2, 1, 2), 200);
  // ccv_set_value shifts right by `factor` and clamps to 0..255 for 8U.
  ccv_set_value(u->type, u->data.u8, 0, 1000, 0);
  EXPECT_EQ(u->data.u8[0], 255);
  ccv_set_value(u->type, u->data.u8, 1, 1000, 2);
  EXPECT_EQ(u->data.u8[1], 250);
  ccv_set_value(u->type, u->data.u8, 2, -5, 0);
  EXPECT_EQ(u->data.u8[2], 0);
  EXPECT_EQ(ccv_get_value(u->type, u->data.u8, 1), 250);
  ccv_matrix_free(u);

  ccv_dense_matrix_t* f = ccv_dense_matrix_new(2, 3, CCV_32F | CCV_C2, nullptr, 0);
  ccv_zero(f);
  *static_cast<float*>(ccv_get_dense_matrix_cell(f, 1, 2, 1)) = 1.25f;
  EXPECT_EQ(f->data.f32[(1 * 3 + 2) * 2 + 1], 1.25f);
  EXPECT_EQ(ccv_get_dense_matrix_cell_value(f, 1, 2, 1), 1.25f);
  ccv_set_value(f->type, f->data.f32, 0, 2.75, 3);  // factor is ignored for floats
  EXPECT_EQ(f->data.f32[0], 2.75f);
  ccv_matrix_free(f);

  ccv_dense_matrix_t* i = ccv_dense_matrix_new(2, 2, CCV_32S | CCV_C1, nullptr, 0);
  ccv_set_value(i->type, i->data.i32, 3, 40, 2);
  EXPECT_EQ(ccv_get_dense_matrix_cell_value(i, 1, 1, 0), 10);
  ccv_matrix_free(i);
}

TEST(CcvArray, EveryCallAndItsBadInput) {
  ccv_array_t* a = ccv_array_new(3, 0, 7);  // odd record size, no initial room
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rsize, 3);
  EXPECT_EQ(a->rnum, 0);
  EXPECT_EQ(a->sig, 7u);
  EXPECT_GE(a->size, 1);
  for (int i = 0; i < 100; i++) {
    const unsigned char rec[3] = {static_cast<unsigned char>(i), static_cast<unsigned char>(i * 2), 9};
    ccv_array_push(a, rec);
  }
  ASSERT_EQ(a->rnum, 100);
  for (int i = 0; i < 100; i++) {
    const auto* rec = static_cast<const unsigned char*>(ccv_array_get(a, i));
    ASSERT_EQ(rec[0], static_cast<unsigned char>(i));
    ASSERT_EQ(rec[1], static_cast<unsigned char>(i * 2));
    ASSERT_EQ(rec[2], 9);
  }
  ccv_array_resize(a, 40);  // shrinking keeps the first 40
  EXPECT_EQ(a->rnum, 40);
  EXPECT_EQ(static_cast<const unsigned char*>(ccv_array_get(a, 39))[0], 39);
  ccv_array_resize(a, 41);  // growing zeroes the new record
  EXPECT_EQ(static_cast<const unsigned char*>(ccv_array_get(a, 40))[0], 0);
  ccv_array_zero(a);
  EXPECT_EQ(a->rnum, 41);
  EXPECT_EQ(static_cast<const unsigned char*>(ccv_array_get(a, 5))[0], 0);
  ccv_make_array_immutable(a);
  EXPECT_NE(a->sig, 0u);
  ccv_make_array_mutable(a);
  EXPECT_EQ(a->sig, 0u);
  ccv_array_clear(a);
  EXPECT_EQ(a->rnum, 0);
  EXPECT_GE(a->size, 41);

  ccv_array_push(a, nullptr);
  EXPECT_TRUE(message_has("ccv_array_push")) << ccv_nnc_error_message();
  EXPECT_EQ(a->rnum, 0);
  ccv_array_push(nullptr, "abc");
  EXPECT_TRUE(message_has("ccv_array_push")) << ccv_nnc_error_message();
  ccv_array_resize(a, -1);
  EXPECT_TRUE(message_has("ccv_array_resize: negative size -1")) << ccv_nnc_error_message();
  EXPECT_EQ(a->rnum, 0);
  ccv_array_resize(nullptr, 3);
  EXPECT_TRUE(message_has("ccv_array_resize: array is NULL")) << ccv_nnc_error_message();
  ccv_array_free(a);

  EXPECT_EQ(ccv_array_new(0, 4, 0), nullptr);
  EXPECT_TRUE(message_has("ccv_array_new: record size 0")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_array_new(4, -2, 0), nullptr);
  EXPECT_TRUE(message_has("capacity -2")) << ccv_nnc_error_message();
  ccv_array_clear(nullptr);
  ccv_array_zero(nullptr);
  ccv_array_free(nullptr);
  ccv_array_free_immediately(nullptr);
  ccv_array_t* index = nullptr;
  EXPECT_EQ(ccv_array_group(nullptr, &index, nullptr, nullptr), -1);
  EXPECT_TRUE(message_has("ccv_array_group")) << ccv_nnc_error_message();
  EXPECT_EQ(index, nullptr);
}

TEST(CcvHalfPrecision, KnownBitPatternsAndRoundTrip) {
  const float f[8] = {1.0f, -2.0f, 65504.0f, 0.5f, 5.9604644775390625e-8f, 0.0f, 1e6f, 1.0f + 1.0f / 4096};
  uint16_t h[8];
  ccv_float_to_half_precision(f, h, 8);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0xC000);
  EXPECT_EQ(h[2], 0x7BFF);  // largest finite
  EXPECT_EQ(h[3], 0x3800);
  EXPECT_EQ(h[4], 0x0001);  // smallest subnormal
  EXPECT_EQ(h[5], 0x0000);
  EXPECT_EQ(h[6], 0x7C00);  // overflow to infinity
  EXPECT_EQ(h[7], 0x3C00);  // halfway between 1 and its successor: to even
  float back[8];
  ccv_half_precision_to_float(h, back, 8);
  EXPECT_EQ(back[2], 65504.0f);
  EXPECT_EQ(back[4], 5.9604644775390625e-8f);
  EXPECT_TRUE(std::isinf(back[6]));
  const double d[3] = {0.25, -1.5, 3.140625};
  uint16_t hd[3];
  double dback[3];
  ccv_double_to_half_precision(d, hd, 3);
  ccv_half_precision_to_double(hd, dback, 3);
  for (int i = 0; i < 3; i++) EXPECT_EQ(dback[i], d[i]);  // all exactly representable
  ccv_float_to_half_precision(f, h, 0);                   // zero length: nothing read or written
}

TEST(CcvSmallTypes, Constructors) {
  const ccv_point_t p = ccv_point(3, -4);
  EXPECT_EQ(p.x, 3);
  EXPECT_EQ(p.y, -4);
  const ccv_margin_t m = ccv_margin(1, 2, 3, 4);
  EXPECT_EQ(m.left + 10 * m.top + 100 * m.right + 1000 * m.bottom, 4321);
  const ccv_decimal_rect_t r = ccv_decimal_rect(0.5f, 1.5f, 2.5f, 3.5f);
  EXPECT_EQ(r.height, 3.5f);
  const ccv_decimal_point_t q = ccv_decimal_point(0.25f, -0.75f);
  EXPECT_EQ(q.y, -0.75f);
  EXPECT_TRUE(ccv_rect_is_zero(ccv_rect(0, 0, 0, 0)));
  EXPECT_FALSE(ccv_size_is_zero(ccv_size(0, 1)));
}

}  // namespace
