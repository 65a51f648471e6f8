// The BLAS family: GEMM forward and backward, described here (backends one
// per file), and the broadcasting ADD, MUL and SCALAR_MUL (elementwise*.cpp).
#include "cmd/blas/elementwise.hpp"
#include "cmd/blas/gemm.hpp"
#include "core/registry.hpp"

namespace nnc {

void register_blas(Registry& r) {
  r.add_command({.cmd = CCV_NNC_GEMM_FORWARD, .tensor_auto = gemm::tensor_auto_forward, .bitmask = gemm::bitmask_forward, .validate = gemm::validate_forward});

  r.add_command({.cmd = CCV_NNC_GEMM_BACKWARD, .tensor_auto = gemm::tensor_auto_backward, .bitmask = gemm::bitmask_backward, .validate = gemm::validate_backward});

  gemm::register_cpu_ref(r);
  gemm::register_cpu_opt(r);

  blas_ew::register_elementwise(r);
}

}  // namespace nnc
