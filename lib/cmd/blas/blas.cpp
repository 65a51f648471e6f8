// The BLAS family: GEMM forward and backward, described here (backends one
// per file), and the broadcasting ADD, MUL and SCALAR_MUL (elementwise*.cpp).
#include "cmd/blas/elementwise.hpp"
#include "cmd/blas/gemm.hpp"
#include "core/registry.hpp"

namespace nnc {

void register_blas(Registry& r) {
  CommandInfo forward;
  forward.cmd = CCV_NNC_GEMM_FORWARD;
  forward.tensor_auto = gemm::tensor_auto_forward;
  forward.bitmask = gemm::bitmask_forward;
  forward.validate = gemm::validate_forward;
  r.add_command(forward);

  CommandInfo backward;
  backward.cmd = CCV_NNC_GEMM_BACKWARD;
  backward.tensor_auto = gemm::tensor_auto_backward;
  backward.bitmask = gemm::bitmask_backward;
  backward.validate = gemm::validate_backward;
  r.add_command(backward);

  gemm::register_cpu_ref(r);
  gemm::register_cpu_opt(r);

  blas_ew::register_elementwise(r);
}

}  // namespace nnc
