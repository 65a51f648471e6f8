#ifndef NNC_OVERHEAD_C_H
#define NNC_OVERHEAD_C_H
/* Nanoseconds per call of a one-element SCALAR_MUL through ccv_nnc_cmd_exec
 * from C (the best of `rounds` timings of `iterations` calls). */
double nnc_overhead_c_ns(int iterations, int rounds);
#endif
