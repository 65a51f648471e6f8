double nnc_overhead_c_ns(int iterations);
