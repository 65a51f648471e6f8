// The explicit list of command families (DESIGN §4): each family folder
// defines its register_<family> function; ccv_nnc_init reaches them all
// through here, so nothing depends on static initialisers.
#include "core/registry.hpp"

namespace nnc {

void register_blas(Registry& r);  // lib/cmd/blas: GEMM (and later ADD, MUL, SCALAR_MUL)
void register_ew(Registry& r);    // lib/cmd/ew: EWSUM (and later the other element-wise commands)
void register_util(Registry& r);  // lib/cmd/util: SET, DATA_TRANSFER, FORMAT_TRANSFORM, DATATYPE_CONVERSION

void register_all_families(Registry& r) {
  register_blas(r);
  register_ew(r);
  register_util(r);
}

}  // namespace nnc
