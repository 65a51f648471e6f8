// CPU_REF kernels of EWSUM: one element at a time through each tensor's own
// strides. Floating-point sums are formed in double and rounded once into the
// output type; integer sums wrap around like two's-complement hardware.
#include <cstdint>
#include <cstring>
#include <vector>

#include "cmd/common/copy.hpp"
#include "cmd/ew/ew.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

namespace {

int64_t load_int(const unsigned char* p, int datatype) {
  if (datatype == CCV_32S) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void store_int(unsigned char* p, int datatype, uint64_t v) {
  if (datatype == CCV_32S) {
    const uint32_t w = static_cast<uint32_t>(v);
    std::memcpy(p, &w, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

}  // namespace

NNC_KERNEL(ewsum_forward_ref) {
  const Layout y = layout_of(outputs[0], "EWSUM output");
  std::vector<Layout> x;
  x.reserve(static_cast<size_t>(input_size));
  for (int i = 0; i < input_size; i++) x.push_back(layout_of(inputs[i], "EWSUM input"));
  const bool integer = y.datatype == CCV_32S || y.datatype == CCV_64S;
  // Each output element is written only after every input element at the
  // same index has been read, so an input may be the output.
  for_each_index(y.dim.data(), y.nd, [&](const int* index) {
    if (integer) {
      uint64_t s = 0;
      for (const Layout& l : x) s += static_cast<uint64_t>(load_int(l.at(index), l.datatype));
      store_int(y.at(index), y.datatype, s);
    } else {
      double s = 0;
      for (const Layout& l : x) s += load_double(l.at(index), l.datatype);
      store_double(y.at(index), y.datatype, s);
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(ewsum_backward_ref) {
  const ccv_nnc_tensor_t* g = input_size > 0 ? inputs[0] : nullptr;
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    // dx may be g itself (any pair is allowed in place): nothing to copy.
    if (g && outputs[i]->data.u8 == g->data.u8 && !CCV_IS_TENSOR_VIEW(g) && !CCV_IS_TENSOR_VIEW(outputs[i])) continue;
    if (g)
      util::ref_copy(g, outputs[i]);
    else
      util::ref_fill(outputs[i], 1.0);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::ew
