/* The optimisers through the C easy macros (optim_easy.c is GNU C, as C users write it). */
#ifndef NNC_TEST_OPTIM_EASY_H
#define NNC_TEST_OPTIM_EASY_H

#ifdef __cplusplus
extern "C" {
#endif

/* `steps` in-place steps (step 1, 2, ...) over n floats of
 * which = 0: CMD_SGD_FORWARD(1, 0.1, 1, 0.01, 0.9, 0.9) (state s0),
 *         1: CMD_ADAM_FORWARD(t, 0.01, 0.9, 0.999, 0.01, 1e-8, 0) (s0, s1),
 *         2: CMD_ADAMW_FORWARD with the same numbers,
 *         3: CMD_RMSPROP_FORWARD(0.01, 0.01, 0.9, 0.5, 1e-8) (s0, s1),
 *         4: CMD_LAMB_FORWARD(t, 0.01, 0.9, 0.999, 0.01, 1e-6) (s0, s1).
 * Returns the first failing ccv_nnc_cmd_exec code, or CCV_NNC_EXEC_SUCCESS. */
int optim_easy_step(int which, int steps, const float* g, float* a, float* s0, float* s1, int n);

#ifdef __cplusplus
}
#endif

#endif
