// Family registration (filled in by the family's implementation).
#include "core/registry.hpp"
namespace nnc {
void register_pool(Registry& r) { (void)r; }
}  // namespace nnc
