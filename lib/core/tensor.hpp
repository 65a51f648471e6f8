// Internal tensor helpers: parameter validation, the strided layout every
// kernel reads tensors and views through, and scalar conversions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "nnc/ccv_nnc.h"

namespace nnc {

constexpr int kMaxDim = CCV_NNC_MAX_DIM_ALLOC;

// Element size in bytes of a supported data type, 0 otherwise.
size_t datatype_size(int datatype);
// The data types tensors may hold (CCV_QX is not supported).
bool datatype_supported(int datatype);
const char* datatype_name(int datatype);
const char* format_name(int format);
// "2x3x4" for error messages.
std::string shape_string(const int* dim);

// Number of dimensions of a parameter block, looking only up to the first 0.
inline int nd_of(const int* dim) {
  for (int i = 0; i < kMaxDim; i++)
    if (dim[i] == 0) return i;
  return kMaxDim;
}

// Whether two shapes are equal: the same number of dimensions and the same
// sizes up to it. Entries after the first 0 are ignored, so a plain tensor
// (which keeps the dense-matrix step in a spare entry) equals a view of the
// same shape. The one shape comparison for the whole library: never compare
// dim arrays with memcmp.
inline bool same_shape(const int* a, const int* b) {
  for (int i = 0; i < kMaxDim; i++) {
    if (a[i] != b[i]) return false;
    if (a[i] == 0) return true;
  }
  return true;
}
inline bool same_shape(const ccv_nnc_tensor_param_t& a, const ccv_nnc_tensor_param_t& b) {
  return same_shape(a.dim, b.dim);
}

// Check tensor parameters from a caller; throws nnc::Error naming `what`.
// Returns the number of bytes of data (unpadded).
size_t validate_params(const ccv_nnc_tensor_param_t& params, const char* what);
// The same parameters with every dimension after the first 0 cleared.
ccv_nnc_tensor_param_t normalized_params(const ccv_nnc_tensor_param_t& params);

// A tensor or view as kernels see it: data pointer, shape, and element strides.
struct Layout {
  unsigned char* data = nullptr;
  int datatype = 0;
  int format = 0;
  int memory = 0;
  int nd = 0;
  std::array<int, kMaxDim> dim{};
  std::array<int64_t, kMaxDim> stride{};  // in elements
  size_t element_size = 0;

  size_t count() const {
    size_t c = nd ? 1 : 0;
    for (int i = 0; i < nd; i++) c *= static_cast<size_t>(dim[i]);
    return c;
  }
  // True if the elements are packed row-major with no gaps.
  bool packed() const;
  unsigned char* at(const int* index) const {
    int64_t off = 0;
    for (int i = 0; i < nd; i++) off += static_cast<int64_t>(index[i]) * stride[i];
    return data + off * static_cast<int64_t>(element_size);
  }
};

// Layout of a tensor or tensor view. Throws on a multi-view or a NULL tensor.
Layout layout_of(const ccv_nnc_tensor_t* tensor, const char* what = "tensor");

// Copy a tensor or view of any strides into packed row-major bytes at `to`
// (l.count() x l.element_size of them), and back: one memcpy when the tensor
// is packed, else a run of the innermost dimension at a time.
void pack(const Layout& l, void* to);
void unpack(const void* from, const Layout& l);

// Packed (row-major) strides of a shape.
void packed_strides(const int* dim, int nd, int64_t* stride);

// Visit every index of a shape in row-major order: f(const int* index).
template <class F>
void for_each_index(const int* dim, int nd, F&& f) {
  if (nd == 0) return;
  for (int i = 0; i < nd; i++)
    if (dim[i] <= 0) return;
  std::array<int, kMaxDim> index{};
  for (;;) {
    f(index.data());
    int d = nd - 1;
    while (d >= 0) {
      if (++index[d] < dim[d]) break;
      index[d] = 0;
      d--;
    }
    if (d < 0) return;
  }
}

// Scalar conversions between storage types and double, for reference kernels.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
double load_double(const void* p, int datatype);
void store_double(void* p, int datatype, double v);

// Tensor objects (the bodies of the Level-1 tensor API).
ccv_nnc_tensor_t* tensor_new(const void* ptr, const ccv_nnc_tensor_param_t& params, int flags);
ccv_nnc_tensor_t tensor_value(const void* ptr, const ccv_nnc_tensor_param_t& params, int flags);
ccv_nnc_tensor_t* tensor_new_from_file(const ccv_nnc_tensor_param_t& params, const char* filename, off_t offset, int flags);
ccv_nnc_tensor_t* tensor_resize(ccv_nnc_tensor_t* tensor, const ccv_nnc_tensor_param_t& params);
void tensor_free(ccv_nnc_tensor_t* tensor);
// ccv_nnc_tensor_pin_memory: page-locks a CPU tensor's data until it is
// freed (CCV_TENSOR_PINNED_MEM in its type); pinning twice is one pin.
void tensor_pin(ccv_nnc_tensor_t* tensor);
void view_fill(ccv_nnc_tensor_view_t* view, const ccv_nnc_tensor_t* tensor, const ccv_nnc_tensor_param_t& params,
               const int* ofs, const int* stride);
void tensor_zero(void* tensor);
int tensor_eq(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b);
std::string tensor_format(const ccv_nnc_tensor_t* a);

}  // namespace nnc
