/* Pooling through the CMD_* easy macros, expanded by C. */
#ifndef NNC_TEST_POOL_EASY_H
#define NNC_TEST_POOL_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_MAX_POOL_FORWARD(3, 2), CMD_MAX_POOL_BACKWARD(3, 2), CMD_AVERAGE_POOL_FORWARD(2, 3), CMD_AVERAGE_POOL_BACKWARD(2, 3) */
ccv_nnc_cmd_t nnc_test_max_pool_forward(void);
ccv_nnc_cmd_t nnc_test_max_pool_backward(void);
ccv_nnc_cmd_t nnc_test_avg_pool_forward(void);
ccv_nnc_cmd_t nnc_test_avg_pool_backward(void);
/* 2x2 max pool with HINT((2, 2), (0, 0)) of a 1x4x4x1 NHWC input 0..15 into y[4]; returns the exec code. */
int nnc_test_max_pool_example(float y[4]);

#ifdef __cplusplus
}
#endif

#endif
