// The reduction / normalisation loops compiled for AVX-512 (see loops.hpp).
// GCC 12 reports its own AVX-512 intrinsics' masked-move temporaries as uninitialised.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define NNC_LOOPS_SUFFIX avx512
#include "cmd/common/reduce_loops_impl.hpp"
