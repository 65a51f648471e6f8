#ifndef NNC_OVERHEAD_C_H
#define NNC_OVERHEAD_C_H
/* Nanoseconds per call of a one-element command through ccv_nnc_cmd_exec
 * from C (the best of `rounds` timings of `iterations` calls): which = 0 is
 * SCALAR_MUL(2) a -> b, which = 1 is EWSUM a + a -> b. Negative on a wrong result. */
double nnc_overhead_c_ns(int which, int iterations, int rounds);
#endif
