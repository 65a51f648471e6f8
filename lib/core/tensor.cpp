// Tensors and views: creation, validation, zeroing, comparison and printing.
//
// Memory: a tensor that owns its data is one 64-byte-aligned block, the header
// (rounded up to 64 bytes) followed by the data, exactly as ccv lays out a
// dense matrix, so ccv_matrix_free and ccv_nnc_tensor_free are
// interchangeable. A tensor over someone else's memory is a header alone,
// marked CCV_NO_DATA_ALLOC. Memory-mapped tensors are headers too; the
// mapping is remembered in a side table and unmapped when the header is freed.
#include "core/tensor.hpp"

#include "core/device.hpp"
#include "core/registry.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include <fp16.h>

#include "core/error.hpp"
#include "core/live.hpp"

namespace nnc {

namespace {

constexpr size_t kHeaderSize = (sizeof(ccv_nnc_tensor_t) + 63) & ~size_t{63};
// No tensor may exceed this many bytes; it keeps every size computation far
// from overflow.
constexpr size_t kMaxTensorBytes = size_t{1} << 48;

struct Mapping {
  void* base;
  size_t length;
};

std::mutex g_mapping_mutex;
std::unordered_map<const void*, Mapping>& mappings() {
  static std::unordered_map<const void*, Mapping> table;
  return table;
}

// Make a CPU tensor that looks like a dense matrix also usable as one: the
// type word carries the matrix type and dim[4] (the matrix's `step`) the row
// length. Both sit where a 3-d tensor never looks.
void bridge_to_matrix(ccv_nnc_tensor_t* t) {
  const ccv_nnc_tensor_param_t& p = t->info;
  if (CCV_TENSOR_GET_MEMORY(p.type) != CCV_TENSOR_CPU_MEMORY || p.format != CCV_TENSOR_FORMAT_NHWC) return;
  if (nd_of(p.dim) != 3 || p.dim[2] > CCV_MAX_CHANNEL) return;
  const int dt = CCV_GET_DATA_TYPE(p.datatype);
  if (dt != CCV_8U && dt != CCV_32S && dt != CCV_32F && dt != CCV_64S && dt != CCV_64F && dt != CCV_16F) return;
  const size_t step = static_cast<size_t>(p.dim[1]) * static_cast<size_t>(p.dim[2]) * datatype_size(dt);
  if (step > INT_MAX) return;
  t->type |= CCV_MATRIX_DENSE | dt | p.dim[2];
  t->info.dim[4] = static_cast<int>(step);
}

void fill_header(ccv_nnc_tensor_t* t, void* data, const ccv_nnc_tensor_param_t& params, size_t data_size, int type) {
  std::memset(t, 0, sizeof(*t));
  t->type = type;
  t->refcount = 1;
  t->data.ptr = data;
  t->data_size = data_size;
  t->info = normalized_params(params);
  bridge_to_matrix(t);
}

void require_cpu(const ccv_nnc_tensor_param_t& params, const char* what) {
  if (CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_GPU_MEMORY)
    fail(CCV_NNC_EXEC_NO_KERNEL, "%s: GPU memory requested, but this build of NNC has no CUDA support", what);
}

// GPU memory is allowed when the CUDA module installed its allocator.
void require_memory(const ccv_nnc_tensor_param_t& params, const char* what) {
  if (CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_GPU_MEMORY) {
    (void)registry();  // the CUDA module installs its device memory as the registry is built
    if (device_memory()) return;
  }
  require_cpu(params, what);
}

const DeviceMemory* g_device_memory = nullptr;

}  // namespace

size_t datatype_size(int datatype) {
  switch (CCV_GET_DATA_TYPE(datatype)) {
    case CCV_8U: return 1;
    case CCV_32S: return 4;
    case CCV_32F: return 4;
    case CCV_64S: return 8;
    case CCV_64F: return 8;
    case CCV_16F: return 2;
    case CCV_16BF: return 2;
  }
  return 0;
}

bool datatype_supported(int datatype) {
  return datatype == CCV_8U || datatype == CCV_32S || datatype == CCV_32F || datatype == CCV_64S ||
         datatype == CCV_64F || datatype == CCV_16F || datatype == CCV_16BF;
}

const char* datatype_name(int datatype) {
  switch (datatype) {
    case CCV_8U: return "8U";
    case CCV_32S: return "32S";
    case CCV_32F: return "32F";
    case CCV_64S: return "64S";
    case CCV_64F: return "64F";
    case CCV_16F: return "16F";
    case CCV_16BF: return "16BF";
  }
  if (CCV_GET_DATA_TYPE(datatype) == CCV_QX) return "QX";
  return "unknown";
}

const char* format_name(int format) {
  switch (format) {
    case CCV_TENSOR_FORMAT_NCHW: return "NCHW";
    case CCV_TENSOR_FORMAT_NHWC: return "NHWC";
    case CCV_TENSOR_FORMAT_CHWN: return "CHWN";
  }
  return "unknown";
}

std::string shape_string(const int* dim) {
  const int nd = nd_of(dim);
  if (nd == 0) return "(empty)";
  std::string s;
  for (int i = 0; i < nd; i++) {
    if (i) s += 'x';
    s += std::to_string(dim[i]);
  }
  return s;
}

ccv_nnc_tensor_param_t normalized_params(const ccv_nnc_tensor_param_t& params) {
  ccv_nnc_tensor_param_t p = params;
  const int nd = nd_of(p.dim);
  for (int i = nd; i < kMaxDim; i++) p.dim[i] = 0;
  return p;
}

size_t validate_params(const ccv_nnc_tensor_param_t& params, const char* what) {
  const int memory = CCV_TENSOR_GET_MEMORY(params.type);
  NNC_CHECK(memory == CCV_TENSOR_CPU_MEMORY || memory == CCV_TENSOR_GPU_MEMORY,
            "%s: memory type 0x%x is neither CCV_TENSOR_CPU_MEMORY nor CCV_TENSOR_GPU_MEMORY", what, params.type);
  NNC_CHECK(params.format == CCV_TENSOR_FORMAT_NHWC || params.format == CCV_TENSOR_FORMAT_NCHW ||
                params.format == CCV_TENSOR_FORMAT_CHWN,
            "%s: format 0x%x is not NHWC, NCHW or CHWN", what, params.format);
  NNC_CHECK(datatype_supported(params.datatype), "%s: data type 0x%x (%s) is not supported", what, params.datatype,
            datatype_name(params.datatype));
  const int nd = nd_of(params.dim);
  NNC_CHECK(nd > 0, "%s: a tensor needs at least one dimension (dim[0] is 0)", what);
  size_t count = 1;
  for (int i = 0; i < nd; i++) {
    NNC_CHECK(params.dim[i] > 0, "%s: dimension %d is %d; sizes must be positive", what, i, params.dim[i]);
    NNC_CHECK(count <= kMaxTensorBytes / static_cast<size_t>(params.dim[i]),
              "%s: %s elements overflow the largest tensor NNC allows", what, shape_string(params.dim).c_str());
    count *= static_cast<size_t>(params.dim[i]);
  }
  const size_t bytes = count * datatype_size(params.datatype);
  NNC_CHECK(bytes <= kMaxTensorBytes, "%s: %s of %s is %zu bytes, more than NNC allows", what,
            shape_string(params.dim).c_str(), datatype_name(params.datatype), bytes);
  return bytes;
}

void set_device_memory(const DeviceMemory* memory) { g_device_memory = memory; }
const DeviceMemory* device_memory() { return g_device_memory; }

ccv_nnc_tensor_t* tensor_new(const void* ptr, const ccv_nnc_tensor_param_t& params, int flags) {
  const size_t bytes = validate_params(params, "ccv_nnc_tensor_new");
  require_memory(params, "ccv_nnc_tensor_new");
  if (CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_GPU_MEMORY && !ptr && !(flags & CCV_NO_DATA_ALLOC)) {
    // The header on the host, the data on the device (freed by tensor_free).
    void* block = nullptr;
    if (posix_memalign(&block, 64, kHeaderSize) != 0) throw std::bad_alloc();
    auto* t = static_cast<ccv_nnc_tensor_t*>(block);
    void* data = nullptr;
    try {
      data = g_device_memory->alloc(CCV_TENSOR_GET_DEVICE_ID(params.type), (bytes + 63) & ~size_t{63});
    } catch (...) {
      std::free(block);
      throw;
    }
    fill_header(t, data, params, (bytes + 63) & ~size_t{63}, 0);
    live_add(CCV_NNC_LIVE_TENSOR, 1);
    return t;
  }
  if (ptr || (flags & CCV_NO_DATA_ALLOC)) {
    void* block = nullptr;
    if (posix_memalign(&block, 64, kHeaderSize) != 0) throw std::bad_alloc();
    auto* t = static_cast<ccv_nnc_tensor_t*>(block);
    fill_header(t, const_cast<void*>(ptr), params, ptr ? bytes : 0, CCV_NO_DATA_ALLOC);
    live_add(CCV_NNC_LIVE_TENSOR, 1);
    return t;
  }
  const size_t data_size = (bytes + 63) & ~size_t{63};
  void* block = nullptr;
  if (posix_memalign(&block, 64, kHeaderSize + data_size) != 0)
    fail(CCV_NNC_EXEC_OOM, "ccv_nnc_tensor_new: cannot allocate %zu bytes for a %s tensor of %s", data_size,
         shape_string(params.dim).c_str(), datatype_name(params.datatype));
  auto* t = static_cast<ccv_nnc_tensor_t*>(block);
  fill_header(t, static_cast<unsigned char*>(block) + kHeaderSize, params, data_size, 0);
  live_add(CCV_NNC_LIVE_TENSOR, 1);
  return t;
}

ccv_nnc_tensor_t tensor_value(const void* ptr, const ccv_nnc_tensor_param_t& params, int flags) {
  (void)flags;
  const size_t bytes = validate_params(params, "ccv_nnc_tensor");
  ccv_nnc_tensor_t t;
  fill_header(&t, const_cast<void*>(ptr), params, ptr ? bytes : 0, CCV_NO_DATA_ALLOC);
  t.refcount = 0;
  return t;
}

ccv_nnc_tensor_t* tensor_new_from_file(const ccv_nnc_tensor_param_t& params, const char* filename, off_t offset,
                                       int flags) {
  (void)flags;
  const size_t bytes = validate_params(params, "ccv_nnc_tensor_new_from_file");
  require_cpu(params, "ccv_nnc_tensor_new_from_file");
  NNC_CHECK(filename, "ccv_nnc_tensor_new_from_file: filename is NULL");
  NNC_CHECK(offset >= 0, "ccv_nnc_tensor_new_from_file: negative offset %lld", static_cast<long long>(offset));
  const int fd = ::open(filename, O_RDONLY | O_CLOEXEC);
  NNC_CHECK(fd >= 0, "ccv_nnc_tensor_new_from_file: cannot open '%s': %s", filename, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < 0 || static_cast<uint64_t>(st.st_size) < static_cast<uint64_t>(offset) + bytes) {
    ::close(fd);
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_tensor_new_from_file: '%s' holds %lld bytes, fewer than offset %lld + %zu bytes of data",
         filename, static_cast<long long>(st.st_size), static_cast<long long>(offset), bytes);
  }
  // mmap wants a page-aligned offset: map from the page boundary below it.
  const long page = ::sysconf(_SC_PAGESIZE);
  const off_t aligned = offset - offset % page;
  const size_t length = bytes + static_cast<size_t>(offset - aligned);
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, aligned);
  ::close(fd);
  NNC_CHECK(base != MAP_FAILED, "ccv_nnc_tensor_new_from_file: cannot map '%s': %s", filename, std::strerror(errno));
  ccv_nnc_tensor_t* t = nullptr;
  try {
    void* data = static_cast<unsigned char*>(base) + (offset - aligned);
    t = tensor_new(data, params, 0);
    std::lock_guard<std::mutex> lock(g_mapping_mutex);
    mappings().emplace(t, Mapping{base, length});
  } catch (...) {
    if (t) {
      std::free(t);
      live_add(CCV_NNC_LIVE_TENSOR, -1);
    }
    ::munmap(base, length);
    throw;
  }
  return t;
}

void tensor_pin(ccv_nnc_tensor_t* tensor) {
  const char* what = "ccv_nnc_tensor_pin_memory";
  NNC_CHECK(tensor, "%s: tensor is NULL", what);
  NNC_CHECK(!CCV_IS_TENSOR_VIEW(tensor) && !CCV_IS_TENSOR_MULTIVIEW(tensor), "%s: pin the tensor a view or multi-view is of, not the view",
            what);
  NNC_CHECK(CCV_TENSOR_GET_MEMORY(tensor->info.type) == CCV_TENSOR_CPU_MEMORY, "%s: the tensor is in GPU memory; only host memory is pinned",
            what);
  NNC_CHECK(tensor->data.ptr && tensor->data_size > 0, "%s: the tensor has no data", what);
  if (tensor->type & CCV_TENSOR_PINNED_MEM) return;
  NNC_CHECK(g_device_memory && g_device_memory->pin, "%s: pinning needs the CUDA module, which this build lacks (built without CUDA)",
            what);
  g_device_memory->pin(tensor->data.ptr, tensor->data_size);
  tensor->type |= CCV_TENSOR_PINNED_MEM;
}

void tensor_free(ccv_nnc_tensor_t* tensor) {
  if (!tensor) return;
  if ((tensor->type & CCV_TENSOR_PINNED_MEM) && g_device_memory && g_device_memory->unpin && tensor->data.ptr)
    g_device_memory->unpin(tensor->data.ptr);
  if (CCV_TENSOR_GET_MEMORY(tensor->info.type) == CCV_TENSOR_GPU_MEMORY && !(tensor->type & CCV_NO_DATA_ALLOC) &&
      !CCV_IS_TENSOR_VIEW(tensor) && g_device_memory && tensor->data.ptr)
    g_device_memory->free(CCV_TENSOR_GET_DEVICE_ID(tensor->info.type), tensor->data.ptr);
  if (tensor->type & CCV_NO_DATA_ALLOC) {
    std::lock_guard<std::mutex> lock(g_mapping_mutex);
    auto it = mappings().find(tensor);
    if (it != mappings().end()) {
      ::munmap(it->second.base, it->second.length);
      mappings().erase(it);
    }
  }
  std::free(tensor);
  live_add(CCV_NNC_LIVE_TENSOR, -1);
}

ccv_nnc_tensor_t* tensor_resize(ccv_nnc_tensor_t* tensor, const ccv_nnc_tensor_param_t& params) {
  NNC_CHECK(tensor, "ccv_nnc_tensor_resize: tensor is NULL");
  NNC_CHECK(!CCV_IS_TENSOR_VIEW(tensor) && !CCV_IS_TENSOR_MULTIVIEW(tensor),
            "ccv_nnc_tensor_resize: cannot resize a tensor view or multi-view");
  const size_t bytes = validate_params(params, "ccv_nnc_tensor_resize");
  NNC_CHECK(CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_GET_MEMORY(tensor->info.type),
            "ccv_nnc_tensor_resize: cannot move a tensor between CPU and GPU memory");
  if (bytes <= tensor->data_size) {
    // Fits: keep the memory (data_size stays the capacity) and change the shape.
    const int keep = tensor->type & ~(static_cast<int>(CCV_MATRIX_DENSE) | 0xFF000 | 0xFFF);
    const uint64_t capacity = tensor->data_size;
    fill_header(tensor, tensor->data.ptr, params, capacity, keep);
    return tensor;
  }
  NNC_CHECK(!(tensor->type & CCV_NO_DATA_ALLOC),
            "ccv_nnc_tensor_resize: the tensor uses caller memory of %" PRIu64 " bytes, %zu are needed",
            tensor->data_size, bytes);
  ccv_nnc_tensor_t* bigger = tensor_new(nullptr, params, 0);
  std::memcpy(bigger->data.ptr, tensor->data.ptr, tensor->data_size);
  bigger->sig = tensor->sig;
  if (tensor->type & CCV_TENSOR_PINNED_MEM) {  // the new memory is pinned as the old was
    try {
      tensor_pin(bigger);
    } catch (...) {
      tensor_free(bigger);
      throw;
    }
  }
  tensor_free(tensor);
  return bigger;
}

void packed_strides(const int* dim, int nd, int64_t* stride) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    stride[i] = s;
    s *= dim[i];
  }
}

bool Layout::packed() const {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    if (dim[i] != 1 && stride[i] != s) return false;
    s *= dim[i];
  }
  return true;
}

Layout layout_of(const ccv_nnc_tensor_t* tensor, const char* what) {
  NNC_CHECK(tensor, "%s is NULL", what);
  NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(tensor), "%s is a multi-view tensor; bind it to a concrete tensor first", what);
  Layout l;
  l.data = static_cast<unsigned char*>(tensor->data.ptr);
  l.datatype = CCV_GET_DATA_TYPE(tensor->info.datatype);
  l.format = tensor->info.format;
  l.memory = CCV_TENSOR_GET_MEMORY(tensor->info.type);
  l.nd = nd_of(tensor->info.dim);
  l.element_size = datatype_size(l.datatype);
  for (int i = 0; i < l.nd; i++) l.dim[i] = tensor->info.dim[i];
  if (CCV_IS_TENSOR_VIEW(tensor)) {
    const auto* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(tensor);
    for (int i = 0; i < l.nd; i++) l.stride[i] = v->stride[i];
  } else {
    packed_strides(l.dim.data(), l.nd, l.stride.data());
  }
  return l;
}

void view_fill(ccv_nnc_tensor_view_t* view, const ccv_nnc_tensor_t* tensor, const ccv_nnc_tensor_param_t& params,
               const int* ofs, const int* stride) {
  NNC_CHECK(tensor, "ccv_nnc_tensor_view: tensor is NULL");
  NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(tensor), "ccv_nnc_tensor_view: cannot view into a multi-view tensor");
  validate_params(params, "ccv_nnc_tensor_view");
  NNC_CHECK(CCV_GET_DATA_TYPE(params.datatype) == CCV_GET_DATA_TYPE(tensor->info.datatype),
            "ccv_nnc_tensor_view: the view's data type %s differs from the tensor's %s", datatype_name(params.datatype),
            datatype_name(tensor->info.datatype));
  NNC_CHECK(CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_GET_MEMORY(tensor->info.type),
            "ccv_nnc_tensor_view: the view and the tensor are in different memory");
  const int nd = nd_of(params.dim);
  const Layout parent = layout_of(tensor, "ccv_nnc_tensor_view: tensor");
  int64_t strides[kMaxDim] = {};
  if (stride) {
    for (int i = 0; i < nd; i++) {
      NNC_CHECK(stride[i] > 0, "ccv_nnc_tensor_view: stride[%d] is %d; strides must be positive", i, stride[i]);
      strides[i] = stride[i];
    }
  } else if (nd == parent.nd) {
    for (int i = 0; i < nd; i++) strides[i] = parent.stride[i];
  } else {
    packed_strides(params.dim, nd, strides);
  }
  // A window with the tensor's own strides must lie inside its shape, box by
  // box: the byte bound below alone would let it run into the allocation's
  // padding (a plain tensor's is rounded up to 64 bytes).
  bool own_strides = nd == parent.nd;
  for (int i = 0; i < nd && own_strides; i++) own_strides = strides[i] == parent.stride[i];
  if (own_strides)
    for (int i = 0; i < nd; i++) {
      const int o = ofs ? ofs[i] : 0;
      NNC_CHECK(static_cast<int64_t>(o) + params.dim[i] <= parent.dim[i],
                "ccv_nnc_tensor_view: a %s view at offset %d of dimension %d falls outside the tensor's %s", shape_string(params.dim).c_str(),
                o, i, shape_string(tensor->info.dim).c_str());
    }
  int64_t offset = 0;
  int64_t reach = 0;  // largest element offset the view touches, relative to its start
  for (int i = 0; i < nd; i++) {
    const int o = ofs ? ofs[i] : 0;
    NNC_CHECK(o >= 0, "ccv_nnc_tensor_view: ofs[%d] is %d; offsets must not be negative", i, o);
    offset += static_cast<int64_t>(o) * strides[i];
    reach += static_cast<int64_t>(params.dim[i] - 1) * strides[i];
  }
  const int64_t esize = static_cast<int64_t>(datatype_size(params.datatype));
  const int64_t parent_bytes = tensor->data_size ? static_cast<int64_t>(tensor->data_size)
                                                 : static_cast<int64_t>(parent.count()) * esize;
  NNC_CHECK((offset + reach + 1) * esize <= parent_bytes,
            "ccv_nnc_tensor_view: a %s view at element offset %lld reaches element %lld, outside the tensor's %lld bytes",
            shape_string(params.dim).c_str(), static_cast<long long>(offset), static_cast<long long>(offset + reach),
            static_cast<long long>(parent_bytes));
  std::memset(view, 0, sizeof(*view));
  view->type = static_cast<int>(CCV_TENSOR_VIEW) | static_cast<int>(CCV_NO_DATA_ALLOC);
  view->refcount = 1;
  view->data.u8 = tensor->data.u8 ? tensor->data.u8 + offset * esize : nullptr;
  view->dataof = tensor->dataof + offset * esize;
  view->alias_ref = reinterpret_cast<uintptr_t>(tensor);
  view->data_size = static_cast<uint64_t>((reach + 1) * esize);
  view->info = normalized_params(params);
  view->off = offset * esize;
  int64_t expect = 1;
  bool contiguous = true;
  for (int i = nd - 1; i >= 0; i--) {
    view->stride[i] = static_cast<int>(strides[i]);
    if (params.dim[i] != 1 && strides[i] != expect) contiguous = false;
    expect *= params.dim[i];
  }
  view->contiguous = contiguous ? 1 : 0;
}

// Copy between a packed buffer and a tensor of any strides, a run of the
// innermost dimension at a time when it is contiguous.
namespace {
template <bool kToPacked>
void copy_packed(const Layout& l, unsigned char* packed) {
  const size_t esize = l.element_size;
  const int nd = l.nd;
  // A packed tensor (the common case) is one copy: row by row, a 3x3
  // convolution's weights would be a memcpy of 12 bytes per row.
  if (l.packed()) {
    if (kToPacked)
      std::memcpy(packed, l.data, l.count() * esize);
    else
      std::memcpy(l.data, packed, l.count() * esize);
    return;
  }
  const int inner = l.dim[nd - 1];
  const int64_t inner_stride = l.stride[nd - 1];
  const size_t row_bytes = static_cast<size_t>(inner) * esize;
  size_t at = 0;
  auto row = [&](const int* index) {
    unsigned char* p = l.at(index);
    if (inner_stride == 1) {
      if (kToPacked)
        std::memcpy(packed + at, p, row_bytes);
      else
        std::memcpy(p, packed + at, row_bytes);
    } else {
      for (int i = 0; i < inner; i++) {
        unsigned char* q = p + static_cast<int64_t>(i) * inner_stride * static_cast<int64_t>(esize);
        if (kToPacked)
          std::memcpy(packed + at + i * esize, q, esize);
        else
          std::memcpy(q, packed + at + i * esize, esize);
      }
    }
    at += row_bytes;
  };
  if (nd == 1) {
    const int zero[1] = {0};
    row(zero);
    return;
  }
  for_each_index(l.dim.data(), nd - 1, [&](const int* index) {
    int full[kMaxDim] = {};
    for (int i = 0; i < nd - 1; i++) full[i] = index[i];
    row(full);
  });
}
}  // namespace

void pack(const Layout& l, void* to) { copy_packed<true>(l, static_cast<unsigned char*>(to)); }

void unpack(const void* from, const Layout& l) {
  copy_packed<false>(l, static_cast<unsigned char*>(const_cast<void*>(from)));
}

void tensor_zero(void* tensor_ptr) {
  NNC_CHECK(tensor_ptr, "ccv_nnc_tensor_zero: tensor is NULL");
  const auto* tensor = static_cast<const ccv_nnc_tensor_t*>(tensor_ptr);
  const Layout l = layout_of(tensor, "ccv_nnc_tensor_zero: tensor");
  if (l.memory == CCV_TENSOR_GPU_MEMORY) {
    // Not reachable from the host: SET_FORWARD(0) on the device.
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    ccv_nnc_tensor_t* t = const_cast<ccv_nnc_tensor_t*>(tensor);
    const int r = ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, 0, nullptr, 0, &t, 1, nullptr);
    if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "ccv_nnc_tensor_zero: %s", error_message().c_str());
    return;
  }
  if (!l.data || l.nd == 0) return;
  if (l.packed()) {
    std::memset(l.data, 0, l.count() * l.element_size);
    return;
  }
  // Zero row by row along the innermost dimension.
  const int inner = l.dim[l.nd - 1];
  const int64_t inner_stride = l.stride[l.nd - 1];
  for_each_index(l.dim.data(), l.nd - 1, [&](const int* index) {
    int full[kMaxDim] = {};
    for (int i = 0; i < l.nd - 1; i++) full[i] = index[i];
    unsigned char* row = l.at(full);
    if (inner_stride == 1)
      std::memset(row, 0, static_cast<size_t>(inner) * l.element_size);
    else
      for (int j = 0; j < inner; j++) std::memset(row + j * inner_stride * static_cast<int64_t>(l.element_size), 0, l.element_size);
  });
  if (l.nd == 1) {
    for (int j = 0; j < inner; j++) std::memset(l.data + j * inner_stride * static_cast<int64_t>(l.element_size), 0, l.element_size);
  }
}

namespace {

// Distance in units of the last place between two floats of the same sign.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<long long>(ia) - ib);
}

bool close_enough(double a, double b, int datatype) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  const double scale = std::max({std::fabs(a), std::fabs(b), 1.0});
  switch (datatype) {
    case CCV_32F:
      return ulp_distance(static_cast<float>(a), static_cast<float>(b)) <= 4 || std::fabs(a - b) <= 1e-5 * scale;
    case CCV_64F:
      return std::fabs(a - b) <= 1e-12 * scale;
    case CCV_16F:
      return std::fabs(a - b) <= 2e-3 * scale;
    case CCV_16BF:
      return std::fabs(a - b) <= 1.6e-2 * scale;
  }
  return false;
}

}  // namespace

int tensor_eq(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) {
  NNC_CHECK(a && b, "ccv_nnc_tensor_eq: a tensor is NULL");
  const Layout la = layout_of(a, "ccv_nnc_tensor_eq: a");
  const Layout lb = layout_of(b, "ccv_nnc_tensor_eq: b");
  if (la.datatype != lb.datatype) {
    set_error_message(format("ccv_nnc_tensor_eq: data types differ (%s vs %s)", datatype_name(la.datatype), datatype_name(lb.datatype)));
    return -1;
  }
  if (la.nd != lb.nd || !std::equal(la.dim.begin(), la.dim.begin() + la.nd, lb.dim.begin())) {
    set_error_message(format("ccv_nnc_tensor_eq: shapes differ (%s vs %s)", shape_string(a->info.dim).c_str(),
                             shape_string(b->info.dim).c_str()));
    return -1;
  }
  NNC_CHECK(la.memory == CCV_TENSOR_CPU_MEMORY && lb.memory == CCV_TENSOR_CPU_MEMORY,
            "ccv_nnc_tensor_eq: only CPU tensors can be compared");
  const bool is_float = la.datatype == CCV_32F || la.datatype == CCV_64F || la.datatype == CCV_16F || la.datatype == CCV_16BF;
  bool equal = true;
  std::string where;
  for_each_index(la.dim.data(), la.nd, [&](const int* index) {
    if (!equal) return;
    const unsigned char* pa = la.at(index);
    const unsigned char* pb = lb.at(index);
    bool same;
    double va = 0, vb = 0;
    if (is_float) {
      va = load_double(pa, la.datatype);
      vb = load_double(pb, lb.datatype);
      same = close_enough(va, vb, la.datatype);
    } else {
      same = std::memcmp(pa, pb, la.element_size) == 0;
      if (!same) {
        va = load_double(pa, la.datatype);
        vb = load_double(pb, lb.datatype);
      }
    }
    if (!same) {
      equal = false;
      std::string idx;
      for (int i = 0; i < la.nd; i++) {
        if (i) idx.push_back(',');
        idx.append(std::to_string(index[i]));
      }
      where = format("ccv_nnc_tensor_eq: element [%s] differs: %.9g vs %.9g", idx.c_str(), va, vb);
    }
  });
  if (!equal) {
    set_error_message(where);
    return -1;
  }
  return 0;
}

std::string tensor_format(const ccv_nnc_tensor_t* a) {
  const Layout l = layout_of(a, "ccv_nnc_tensor_format_new: tensor");
  NNC_CHECK(l.memory == CCV_TENSOR_CPU_MEMORY, "ccv_nnc_tensor_format_new: only CPU tensors can be printed");
  NNC_CHECK(l.data, "ccv_nnc_tensor_format_new: the tensor has no data");
  const bool is_float = l.datatype == CCV_32F || l.datatype == CCV_64F || l.datatype == CCV_16F || l.datatype == CCV_16BF;
  // Like numpy: long dimensions show their first and last three entries.
  constexpr int kEdge = 3;
  std::string out;
  int index[kMaxDim] = {};
  auto element = [&](const int* idx) {
    const double v = load_double(l.at(idx), l.datatype);
    if (is_float) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.6g", v);
      out += buf;
    } else {
      out += std::to_string(static_cast<long long>(v));
    }
  };
  // Recursive print of dimension d.
  auto print = [&](auto&& self, int d, int indent) -> void {
    out += '[';
    const int n = l.dim[d];
    const bool elide = n > 2 * kEdge;
    for (int i = 0; i < n; i++) {
      if (elide && i == kEdge) {
        out += (d == l.nd - 1) ? "..., " : "...,\n" + std::string(static_cast<size_t>(indent + 1), ' ');
        i = n - kEdge - 1;
        continue;
      }
      index[d] = i;
      if (d == l.nd - 1)
        element(index);
      else
        self(self, d + 1, indent + 1);
      if (i != n - 1) {
        out += ',';
        if (d == l.nd - 1)
          out += ' ';
        else
          out += std::string(static_cast<size_t>(l.nd - 1 - d), '\n') + std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
    out += ']';
  };
  print(print, 0, 0);
  return out;
}

float half_to_float(uint16_t h) { return fp16_ieee_to_fp32_value(h); }
uint16_t float_to_half(float f) { return fp16_ieee_from_fp32_value(f); }

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // keep NaN a NaN
  // Round to nearest, ties to even.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

double load_double(const void* p, int datatype) {
  switch (datatype) {
    case CCV_8U: return *static_cast<const uint8_t*>(p);
    case CCV_32S: return *static_cast<const int32_t*>(p);
    case CCV_32F: return *static_cast<const float*>(p);
    case CCV_64S: return static_cast<double>(*static_cast<const int64_t*>(p));
    case CCV_64F: return *static_cast<const double*>(p);
    case CCV_16F: return half_to_float(*static_cast<const uint16_t*>(p));
    case CCV_16BF: return bf16_to_float(*static_cast<const uint16_t*>(p));
  }
  return 0;
}

void store_double(void* p, int datatype, double v) {
  switch (datatype) {
    case CCV_8U: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0)); break;
    case CCV_32S: *static_cast<int32_t*>(p) = static_cast<int32_t>(std::clamp(std::nearbyint(v), -2147483648.0, 2147483647.0)); break;
    case CCV_32F: *static_cast<float*>(p) = static_cast<float>(v); break;
    case CCV_64S: *static_cast<int64_t*>(p) = static_cast<int64_t>(std::clamp(std::nearbyint(v), -9.2233720368547758e18, 9.2233720368547748e18)); break;
    case CCV_64F: *static_cast<double*>(p) = v; break;
    case CCV_16F: *static_cast<uint16_t*>(p) = float_to_half(static_cast<float>(v)); break;
    case CCV_16BF: *static_cast<uint16_t*>(p) = float_to_bf16(static_cast<float>(v)); break;
  }
}

}  // namespace nnc
