// The element-wise math commands inside (see math.cpp for their semantics):
// which command is which operation, and the kernels of both CPU backends.
#pragma once

#include <cstdint>

#include "cmd/common/checks.hpp"
#include "cmd/ew/ew.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {
class Registry;
}

namespace nnc::ew {

enum class Op { kProd, kDiv, kExp, kLog, kSqrt, kClamp, kMin, kMax };

// The operation of a forward or backward command id (kProd for ids that are
// none of them; callers only ask for ours).
Op op_of(uint32_t cmd);
const char* op_name(Op op);
// Forward inputs of a command: EWPROD's depend on the call (-1 here).
int forward_inputs(Op op);

NNC_KERNEL(math_forward_ref);
NNC_KERNEL(math_backward_ref);
NNC_KERNEL(math_forward_opt);
NNC_KERNEL(math_backward_opt);

void register_math(Registry& r);

}  // namespace nnc::ew
