// The reduction / normalisation loops compiled for AVX2 + FMA (see loops.hpp).
#define NNC_LOOPS_SUFFIX avx2
#include "cmd/common/reduce_loops_impl.hpp"
