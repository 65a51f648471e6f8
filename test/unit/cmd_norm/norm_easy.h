/* The normalisation commands through the CMD_* easy macros, expanded by C. */
#ifndef NNC_TEST_NORM_EASY_H
#define NNC_TEST_NORM_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_BATCH_NORM_FORWARD(1e-4, 0, 0.9, 0, 1, 2) */
ccv_nnc_cmd_t nnc_test_bnorm_forward(void);
/* CMD_BATCH_NORM_BACKWARD(1e-4, 1, 0.9, 0, 2, 3) */
ccv_nnc_cmd_t nnc_test_bnorm_backward(void);
/* CMD_LAYER_NORM_FORWARD(1e-5, 1, 1, 2) */
ccv_nnc_cmd_t nnc_test_lnorm_forward(void);
/* LAYER_NORM over axis 1 of a 2x4 fp32 tensor (no affine) into y[8]; returns the exec code. */
int nnc_test_lnorm_example(float y[8]);
/* CMD_GROUP_NORM_FORWARD(1, 2, 1e-5, 1, 2, 3) */
ccv_nnc_cmd_t nnc_test_gnorm_forward(void);
/* CMD_RMSNORM_FORWARD(1e-6, 1) */
ccv_nnc_cmd_t nnc_test_rmsnorm_forward(void);
/* GROUP_NORM of a 1x4x2 NCHW fp32 tensor in 2 groups over axis 2 (no affine) into y[8]; returns the exec code. */
int nnc_test_gnorm_example(float y[8]);
/* RMSNORM over axis 1 of a 2x4 fp32 tensor with scale 1 into y[8]; returns the exec code. */
int nnc_test_rmsnorm_example(float y[8]);

#ifdef __cplusplus
}
#endif

#endif
