/* CONVOLUTION through the CMD_* easy macros, expanded by C. */
#ifndef NNC_TEST_CONVOLUTION_EASY_H
#define NNC_TEST_CONVOLUTION_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_CONVOLUTION_FORWARD(2, 6, 3, 5, 4) */
ccv_nnc_cmd_t nnc_test_conv_forward(void);
/* CMD_CONVOLUTION_BACKWARD(1, 3, 2, 2, 1) */
ccv_nnc_cmd_t nnc_test_conv_backward(void);
/* A 1x3x3x1 NHWC input 1..9, one 2x2 filter of ones, bias 0.5, HINT((1, 1), (0, 0)) into y[4];
   returns the exec code. */
int nnc_test_conv_example(float y[4]);

#ifdef __cplusplus
}
#endif

#endif
