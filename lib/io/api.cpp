// The exported persistence functions: thin shims over nnc::io (io.hpp).
// The tensor calls return CCV_IO_FINAL on success and CCV_IO_ERROR on any
// failure; the graph calls (void in libnnc) report failure through the
// message alone. The reason is in ccv_nnc_error_message(); out-parameters are
// untouched on failure.
#include <sqlite3.h>

#include "core/error.hpp"
#include "core/export.hpp"
#include "io/io.hpp"

using namespace nnc;

extern "C" {

NNC_API int ccv_nnc_tensor_write(const ccv_nnc_tensor_t* const tensor, void* const handle, const char* const name,
                                 const ccv_nnc_tensor_io_option_t* const options) {
  return guard<int>(CCV_IO_ERROR, [&] {
    io::write_tensor(static_cast<sqlite3*>(handle), name, tensor, options);
    return static_cast<int>(CCV_IO_FINAL);
  });
}

NNC_API int ccv_nnc_tensor_read(void* const handle, const char* const name,
                                const ccv_nnc_tensor_io_option_t* const options, const int flags,
                                const ccv_nnc_tensor_param_t* const tensor_params,
                                ccv_nnc_tensor_t** const tensor_out) {
  return guard<int>(CCV_IO_ERROR, [&] {
    NNC_CHECK(tensor_out, "ccv_nnc_tensor_read: tensor_out is NULL");
    if (*tensor_out) {
      NNC_CHECK(!(flags & CCV_NNC_TENSOR_READ_METADATA_ONLY),
                "ccv_nnc_tensor_read: CCV_NNC_TENSOR_READ_METADATA_ONLY makes a new header; *tensor_out must be NULL");
      io::read_tensor_into(static_cast<sqlite3*>(handle), name, *tensor_out, options);
    } else {
      *tensor_out = io::read_tensor(static_cast<sqlite3*>(handle), name, options, flags, tensor_params);
    }
    return static_cast<int>(CCV_IO_FINAL);
  });
}

NNC_API void ccv_nnc_symbolic_graph_write(const ccv_nnc_symbolic_graph_t* const graph,
                                          const ccv_nnc_tensor_bind_t* const tensor_binds, const int tensor_bind_size,
                                          const char* const fn) {
  guard_void([&] { io::write_graph(graph, tensor_binds, tensor_bind_size, fn); });
}

NNC_API void ccv_nnc_symbolic_graph_read(const char* const fn, ccv_nnc_symbolic_graph_t** const graph_ref,
                                         ccv_nnc_tensor_bind_t** const tensor_binds_ref,
                                         int* const tensor_bind_size_ref) {
  guard_void([&] { io::read_graph(fn, graph_ref, tensor_binds_ref, tensor_bind_size_ref); });
}

}  // extern "C"
