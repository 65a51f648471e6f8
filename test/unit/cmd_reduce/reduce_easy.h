/* The reduction commands through the CMD_* easy macros, expanded by C. */
#ifndef NNC_TEST_REDUCE_EASY_H
#define NNC_TEST_REDUCE_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_REDUCE_SUM_FORWARD(0, 2) */
ccv_nnc_cmd_t nnc_test_reduce_sum_0_2(void);
/* CMD_REDUCE_MAX_BACKWARD(1) */
ccv_nnc_cmd_t nnc_test_reduce_max_backward_1(void);
/* CMD_ARGMAX_FORWARD(1) */
ccv_nnc_cmd_t nnc_test_argmax_1(void);
/* REDUCE_MEAN over axis 1 of a 2x3 fp32 tensor of 1..6 into out[2]; returns the exec code. */
int nnc_test_reduce_mean_example(float out[2]);

#ifdef __cplusplus
}
#endif

#endif
