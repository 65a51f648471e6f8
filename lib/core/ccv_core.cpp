// The ccv core NNC's API uses: dense matrices (the same objects as 3-d
// tensors), growable arrays, and half-precision conversion.
//
// libccv defines these same functions, and programs link both libraries. So
// every definition here is weak (NNC_CCV_API): beside a static libccv, its
// strong definitions replace ours without a duplicate-symbol error in either
// link order, and NNC itself then calls libccv's. That is safe because the
// two agree on memory: a matrix is one malloc-family block (header, data at
// the header size rounded up to 64 bytes) or a header alone, released by
// free() on the header, so either library frees the other's matrices.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <xxhash.h>

#include "core/error.hpp"
#include "core/export.hpp"
#include "core/tensor.hpp"
#include "core/live.hpp"

// Exported, and yields to a strong definition of the same name (libccv's).
#define NNC_CCV_API NNC_API __attribute__((weak))

namespace nnc {
namespace {

constexpr size_t kMatrixHeader = (sizeof(ccv_dense_matrix_t) + 63) & ~size_t{63};

void check_matrix_type(int rows, int cols, int type, const char* what) {
  NNC_CHECK(rows > 0 && cols > 0, "%s: rows (%d) and cols (%d) must be positive", what, rows, cols);
  const int dt = CCV_GET_DATA_TYPE(type);
  NNC_CHECK(dt == CCV_8U || dt == CCV_32S || dt == CCV_32F || dt == CCV_64S || dt == CCV_64F || dt == CCV_16F,
            "%s: data type 0x%x is not one of 8U, 32S, 32F, 64S, 64F, 16F", what, dt);
  NNC_CHECK(CCV_GET_CHANNEL(type) > 0, "%s: the type has no channel count (or-in CCV_C1 .. CCV_C4)", what);
  const size_t step = (static_cast<size_t>(cols) * datatype_size(dt) * CCV_GET_CHANNEL(type) + 3) & ~size_t{3};
  NNC_CHECK(step <= INT32_MAX && static_cast<size_t>(rows) <= (size_t{1} << 46) / step,
            "%s: %dx%d matrix is too large", what, rows, cols);
}

void fill_matrix(ccv_dense_matrix_t* m, int rows, int cols, int type, void* data, uint64_t sig, int flags) {
  std::memset(m, 0, sizeof(*m));
  const int dt = CCV_GET_DATA_TYPE(type);
  const int channels = CCV_GET_CHANNEL(type);
  m->type = CCV_MATRIX_DENSE | dt | channels | flags;
  m->refcount = 1;
  m->sig = sig;
  m->data.u8 = static_cast<unsigned char*>(data);
  m->resides = CCV_TENSOR_CPU_MEMORY;
  m->format = CCV_TENSOR_FORMAT_NHWC;
  m->datatype = dt;
  m->rows = rows;
  m->cols = cols;
  m->channels = channels;
  m->step = CCV_GET_STEP(cols, type);
  m->reserved2 = static_cast<uint64_t>(m->step) * static_cast<uint64_t>(rows);  // the tensor's data_size
}

ccv_dense_matrix_t* dense_or_fail(ccv_matrix_t* mat, const char* what, const char* name) {
  NNC_CHECK(mat, "%s: %s is NULL", what, name);
  auto* m = static_cast<ccv_dense_matrix_t*>(mat);
  NNC_CHECK(m->type & CCV_MATRIX_DENSE, "%s: %s is not a dense matrix (type 0x%x)", what, name, m->type);
  NNC_CHECK(m->rows >= 0 && m->cols >= 0 && m->step >= 0 && (m->rows == 0 || m->data.u8),
            "%s: %s is a malformed dense matrix (%dx%d, step %d)", what, name, m->rows, m->cols, m->step);
  return m;
}

// Relative to the larger magnitude, but never tighter than `tol` in absolute
// terms, so values near 0 that differ only by rounding still match.
template <class T>
bool values_match(T x, T y, double tol) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (x == y) return true;
  if (std::isinf(x) || std::isinf(y)) return false;  // the relative bound would admit any finite value
  const double dx = static_cast<double>(x), dy = static_cast<double>(y);
  return std::fabs(dx - dy) <= tol * std::max({1.0, std::fabs(dx), std::fabs(dy)});
}

template <class T>
bool rows_match(const T* a, const T* b, size_t n, double tol) {
  for (size_t i = 0; i < n; i++)
    if (!values_match(a[i], b[i], tol)) return false;
  return true;
}

}  // namespace
}  // namespace nnc

using namespace nnc;

extern "C" {

NNC_CCV_API ccv_dense_matrix_t* ccv_dense_matrix_new(int rows, int cols, int type, void* data, uint64_t sig) {
  return guard<ccv_dense_matrix_t*>(nullptr, [&]() -> ccv_dense_matrix_t* {
    check_matrix_type(rows, cols, type, "ccv_dense_matrix_new");
    if (data) {
      void* block = nullptr;
      if (posix_memalign(&block, 64, kMatrixHeader) != 0) throw std::bad_alloc();
      auto* m = static_cast<ccv_dense_matrix_t*>(block);
      fill_matrix(m, rows, cols, type, data, sig, CCV_NO_DATA_ALLOC);
      live_add(CCV_NNC_LIVE_TENSOR, 1);  // freed by tensor_free, as a tensor
      return m;
    }
    const size_t bytes = static_cast<size_t>(CCV_GET_STEP(cols, type)) * static_cast<size_t>(rows);
    void* block = nullptr;
    if (posix_memalign(&block, 64, kMatrixHeader + ((bytes + 63) & ~size_t{63})) != 0)
      fail(CCV_NNC_EXEC_OOM, "ccv_dense_matrix_new: cannot allocate %zu bytes", bytes);
    auto* m = static_cast<ccv_dense_matrix_t*>(block);
    fill_matrix(m, rows, cols, type, static_cast<unsigned char*>(block) + kMatrixHeader, sig, 0);
    live_add(CCV_NNC_LIVE_TENSOR, 1);
    return m;
  });
}

NNC_CCV_API ccv_dense_matrix_t* ccv_dense_matrix_renew(ccv_dense_matrix_t* x, int rows, int cols, int types, int prefer_type, uint64_t sig) {
  if (x && x->rows == rows && x->cols == cols && (CCV_GET_DATA_TYPE(x->type) & types) &&
      CCV_GET_CHANNEL(x->type) == CCV_GET_CHANNEL(types)) {
    x->sig = sig;
    return x;
  }
  if (x) ccv_matrix_free(x);
  return ccv_dense_matrix_new(rows, cols, prefer_type, nullptr, sig);
}

NNC_CCV_API ccv_dense_matrix_t ccv_dense_matrix(int rows, int cols, int type, void* data, uint64_t sig) {
  ccv_dense_matrix_t m;
  std::memset(&m, 0, sizeof(m));
  guard_void([&] {
    check_matrix_type(rows, cols, type, "ccv_dense_matrix");
    NNC_CHECK(data, "ccv_dense_matrix: data is NULL");
    fill_matrix(&m, rows, cols, type, data, sig, CCV_NO_DATA_ALLOC | CCV_UNMANAGED);
  });
  return m;
}

NNC_CCV_API void ccv_make_matrix_mutable(ccv_matrix_t* mat) {
  if (!mat) return;
  auto* m = static_cast<ccv_dense_matrix_t*>(mat);
  m->sig = 0;
  m->type &= ~CCV_REUSABLE;
}

NNC_CCV_API void ccv_make_matrix_immutable(ccv_matrix_t* mat) {
  if (!mat) return;
  auto* m = static_cast<ccv_dense_matrix_t*>(mat);
  m->type &= ~CCV_REUSABLE;
  if (!(m->type & CCV_MATRIX_DENSE) || !m->data.u8) return;
  const size_t bytes = static_cast<size_t>(m->step) * static_cast<size_t>(m->rows);
  uint64_t sig = XXH3_64bits(m->data.u8, bytes);
  sig ^= XXH3_64bits(&m->type, sizeof(m->type));
  m->sig = sig ? sig : 1;  // 0 means "no signature"
}

NNC_CCV_API void ccv_matrix_free_immediately(ccv_matrix_t* mat) {
  if (!mat) return;
  auto* m = static_cast<ccv_dense_matrix_t*>(mat);
  if (m->type & CCV_UNMANAGED) return;
  // libccv's sparse matrices own several blocks that only libccv can walk;
  // freeing the header alone would leak them and look like success.
  guard_void([&] {
    NNC_CHECK(!(m->type & (CCV_MATRIX_SPARSE | CCV_MATRIX_CSR | CCV_MATRIX_CSC)),
              "ccv_matrix_free: a sparse matrix (type 0x%x) must be freed by libccv; NNC has only dense ones", m->type);
    tensor_free(reinterpret_cast<ccv_nnc_tensor_t*>(m));
  });
}

NNC_CCV_API void ccv_matrix_free(ccv_matrix_t* mat) { ccv_matrix_free_immediately(mat); }
NNC_CCV_API void ccv_drain_cache(void) {}
NNC_CCV_API void ccv_disable_cache(void) {}
NNC_CCV_API void ccv_enable_default_cache(void) {}
NNC_CCV_API void ccv_enable_cache(size_t) {}

NNC_CCV_API ccv_dense_matrix_t* ccv_get_dense_matrix(ccv_matrix_t* mat) {
  return guard<ccv_dense_matrix_t*>(nullptr, [&] { return dense_or_fail(mat, "ccv_get_dense_matrix", "mat"); });
}

NNC_CCV_API int ccv_matrix_eq(ccv_matrix_t* a, ccv_matrix_t* b) {
  return guard<int>(-1, [&]() -> int {
    const ccv_dense_matrix_t* da = dense_or_fail(a, "ccv_matrix_eq", "a");
    const ccv_dense_matrix_t* db = dense_or_fail(b, "ccv_matrix_eq", "b");
    const int dt = CCV_GET_DATA_TYPE(da->type);
    const int channels = CCV_GET_CHANNEL(da->type);
    // A mismatch is an answer, not an error: no message.
    if (dt != CCV_GET_DATA_TYPE(db->type) || channels != CCV_GET_CHANNEL(db->type) || da->rows != db->rows ||
        da->cols != db->cols)
      return -1;
    const size_t row_elements = static_cast<size_t>(da->cols) * static_cast<size_t>(channels);
    const size_t esize = datatype_size(dt);
    NNC_CHECK(esize > 0, "ccv_matrix_eq: data type 0x%x cannot be compared", dt);
    for (int r = 0; r < da->rows; r++) {
      const unsigned char* ra = da->data.u8 + static_cast<size_t>(r) * static_cast<size_t>(da->step);
      const unsigned char* rb = db->data.u8 + static_cast<size_t>(r) * static_cast<size_t>(db->step);
      switch (dt) {
        case CCV_32F:
          if (!rows_match(reinterpret_cast<const float*>(ra), reinterpret_cast<const float*>(rb), row_elements, 1e-4))
            return -1;
          break;
        case CCV_64F:
          if (!rows_match(reinterpret_cast<const double*>(ra), reinterpret_cast<const double*>(rb), row_elements, 1e-10))
            return -1;
          break;
        case CCV_16F:
        case CCV_16BF: {
          const auto* ha = reinterpret_cast<const uint16_t*>(ra);
          const auto* hb = reinterpret_cast<const uint16_t*>(rb);
          for (size_t i = 0; i < row_elements; i++) {
            const float x = dt == CCV_16F ? half_to_float(ha[i]) : bf16_to_float(ha[i]);
            const float y = dt == CCV_16F ? half_to_float(hb[i]) : bf16_to_float(hb[i]);
            if (!values_match(x, y, 1e-2)) return -1;
          }
          break;
        }
        default:  // integers: bit-exact
          if (std::memcmp(ra, rb, row_elements * esize) != 0) return -1;
      }
    }
    return 0;
  });
}

NNC_CCV_API void ccv_zero(ccv_matrix_t* mat) {
  guard_void([&] {
    if (!mat) return;
    ccv_dense_matrix_t* m = dense_or_fail(mat, "ccv_zero", "mat");
    if (m->data.u8) std::memset(m->data.u8, 0, static_cast<size_t>(m->step) * static_cast<size_t>(m->rows));
  });
}

NNC_CCV_API void ccv_float_to_half_precision(const float* f, uint16_t* h, size_t len) {
  for (size_t i = 0; i < len; i++) h[i] = float_to_half(f[i]);
}

NNC_CCV_API void ccv_half_precision_to_float(const uint16_t* h, float* f, size_t len) {
  for (size_t i = 0; i < len; i++) f[i] = half_to_float(h[i]);
}

NNC_CCV_API void ccv_double_to_half_precision(const double* f, uint16_t* h, size_t len) {
  for (size_t i = 0; i < len; i++) h[i] = float_to_half(static_cast<float>(f[i]));
}

NNC_CCV_API void ccv_half_precision_to_double(const uint16_t* h, double* f, size_t len) {
  for (size_t i = 0; i < len; i++) f[i] = half_to_float(h[i]);
}

NNC_CCV_API ccv_array_t* ccv_array_new(int rsize, int rnum, uint64_t sig) {
  return guard<ccv_array_t*>(nullptr, [&]() -> ccv_array_t* {
    NNC_CHECK(rsize > 0, "ccv_array_new: record size %d must be positive", rsize);
    NNC_CHECK(rnum >= 0, "ccv_array_new: capacity %d must not be negative", rnum);
    auto* a = static_cast<ccv_array_t*>(std::calloc(1, sizeof(ccv_array_t)));
    if (!a) throw std::bad_alloc();
    a->sig = sig;
    a->type = CCV_REUSABLE & ~CCV_GARBAGE;
    a->refcount = 1;
    a->rsize = rsize;
    a->size = std::max(rnum, 1);
    a->data = std::malloc(static_cast<size_t>(a->size) * static_cast<size_t>(rsize));
    if (!a->data) {
      std::free(a);
      throw std::bad_alloc();
    }
    return a;
  });
}

NNC_CCV_API void ccv_array_push(ccv_array_t* array, const void* r) {
  guard_void([&] {
    NNC_CHECK(array && r, "ccv_array_push: array or record is NULL");
    if (array->rnum >= array->size) {
      const int size = std::max(array->size * 2, array->rnum + 1);
      void* data = std::realloc(array->data, static_cast<size_t>(size) * static_cast<size_t>(array->rsize));
      if (!data) throw std::bad_alloc();
      array->data = data;
      array->size = size;
    }
    std::memcpy(ccv_array_get(array, array->rnum), r, static_cast<size_t>(array->rsize));
    array->rnum++;
  });
}

NNC_CCV_API int ccv_array_group(ccv_array_t* array, ccv_array_t** index, ccv_array_group_f gfunc, void* data) {
  return guard<int>(-1, [&]() -> int {
    NNC_CHECK(array && index && gfunc, "ccv_array_group: array, index or gfunc is NULL");
    // Union-find over records: the groups are the connected components of gfunc.
    const int n = array->rnum;
    std::vector<int> parent(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) parent[static_cast<size_t>(i)] = i;
    auto root = [&](int i) {
      while (parent[static_cast<size_t>(i)] != i) i = parent[static_cast<size_t>(i)] = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
      return i;
    };
    for (int i = 0; i < n; i++)
      for (int j = 0; j < i; j++)
        if (gfunc(ccv_array_get(array, i), ccv_array_get(array, j), data)) parent[static_cast<size_t>(root(i))] = root(j);
    ccv_array_t* out = ccv_array_new(sizeof(int), n, 0);
    if (!out) throw std::bad_alloc();
    std::vector<int> label(static_cast<size_t>(n), -1);
    int groups = 0;
    for (int i = 0; i < n; i++) {
      const int r = root(i);
      if (label[static_cast<size_t>(r)] < 0) label[static_cast<size_t>(r)] = groups++;
      ccv_array_push(out, &label[static_cast<size_t>(r)]);
    }
    if (*index) ccv_array_free(*index);
    *index = out;
    return groups;
  });
}

NNC_CCV_API void ccv_make_array_immutable(ccv_array_t* array) {
  if (!array) return;
  array->sig = XXH3_64bits(array->data, static_cast<size_t>(array->rnum) * static_cast<size_t>(array->rsize));
  if (!array->sig) array->sig = 1;
}

NNC_CCV_API void ccv_make_array_mutable(ccv_array_t* array) {
  if (array) array->sig = 0;
}

NNC_CCV_API void ccv_array_zero(ccv_array_t* array) {
  if (array) std::memset(array->data, 0, static_cast<size_t>(array->size) * static_cast<size_t>(array->rsize));
}

NNC_CCV_API void ccv_array_resize(ccv_array_t* array, int rnum) {
  guard_void([&] {
    NNC_CHECK(array, "ccv_array_resize: array is NULL");
    NNC_CHECK(rnum >= 0, "ccv_array_resize: negative size %d", rnum);
    if (rnum > array->size) {
      void* data = std::realloc(array->data, static_cast<size_t>(rnum) * static_cast<size_t>(array->rsize));
      if (!data) throw std::bad_alloc();
      array->data = data;
      array->size = rnum;
    }
    if (rnum > array->rnum)
      std::memset(ccv_array_get(array, array->rnum), 0, static_cast<size_t>(rnum - array->rnum) * static_cast<size_t>(array->rsize));
    array->rnum = rnum;
  });
}

NNC_CCV_API void ccv_array_clear(ccv_array_t* array) {
  if (array) array->rnum = 0;
}

NNC_CCV_API void ccv_array_free_immediately(ccv_array_t* array) {
  if (!array) return;
  std::free(array->data);
  std::free(array);
}

NNC_CCV_API void ccv_array_free(ccv_array_t* array) { ccv_array_free_immediately(array); }

}  // extern "C"
