// MAX_POOL and AVERAGE_POOL on CPU_OPT (fp32).
#include "cmd/pool/pool.hpp"

namespace nnc::pool {

void register_cpu_opt(Registry& r) { (void)r; }

}  // namespace nnc::pool
