// CONVOLUTION on CPU_OPT (fp32): see below.
#include "cmd/convolution/convolution.hpp"

namespace nnc::conv {

void register_cpu_opt(Registry& r) { (void)r; }

}  // namespace nnc::conv
