#include "nnc_overhead_c.h"
double nnc_overhead_c_ns(int iterations) { return iterations; }
