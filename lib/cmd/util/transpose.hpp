// TRANSPOSE inside: transpose.cpp describes the command and registers it
// (called from register_util); transpose_cpu_ref.cpp holds the plain loop,
// transpose_cpu_opt.cpp the cache-blocked one.
#pragma once

#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::util {

void register_transpose(Registry& r);

NNC_KERNEL(transpose_ref);
NNC_KERNEL(transpose_opt);

}  // namespace nnc::util
