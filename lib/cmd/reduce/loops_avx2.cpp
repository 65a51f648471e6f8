// The reduction / normalisation loops compiled for AVX2 + FMA (see loops.hpp).
#define NNC_LOOPS_SUFFIX avx2
#include "cmd/reduce/loops_impl.hpp"
