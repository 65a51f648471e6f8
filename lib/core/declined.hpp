// A kernel's refusal at run time, after it accepted the call.
#pragma once

#include <string>
#include <utility>

#include "core/error.hpp"

namespace nnc {

// Thrown by a kernel that its backend's library refuses at run time although
// the kernel accepted the call (cuDNN answering NOT_SUPPORTED for every
// algorithm, say). The kernel throws it before writing any output, so the
// call can still run elsewhere: where the backend was chosen automatically
// (cmd.backend 0), ccv_nnc_cmd_exec and graph runs go on to the next backend
// in preference order that accepts the tensors, and a graph node keeps that
// backend until its tensors change. Where the caller named the backend, or no
// other backend accepts the call, it is an ordinary failure
// (CCV_NNC_EXEC_NO_KERNEL, with this message). A task queued on a CPU stream
// context does not fall back either (GPU kernels do not run there).
class Declined : public Error {
 public:
  explicit Declined(std::string message) : Error(CCV_NNC_EXEC_NO_KERNEL, std::move(message)) {}
};

}  // namespace nnc
