// The ew loops compiled for AVX2 + FMA (see loops.hpp).
#define NNC_EW_LOOPS_SUFFIX avx2
#include "cmd/ew/loops_impl.hpp"
