/* The loss commands through the easy macros, expanded by C (loss_easy.c). */
#ifndef NNC_TEST_LOSS_EASY_H
#define NNC_TEST_LOSS_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	ccv_nnc_cmd_t mse_sum;              /* CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_SUM) */
	ccv_nnc_cmd_t mse_mean_backward;    /* CMD_MSE_BACKWARD(CCV_NNC_MSE_REDUCE_MEAN) */
	ccv_nnc_cmd_t smooth_l1;            /* CMD_SMOOTH_L1_FORWARD(0.5) */
	ccv_nnc_cmd_t bce_default;          /* CMD_BINARY_CROSSENTROPY_FORWARD() */
	ccv_nnc_cmd_t bce_weighted;         /* CMD_BINARY_CROSSENTROPY_BACKWARD(2) */
	ccv_nnc_cmd_t sigmoid_bce;          /* CMD_SIGMOID_BINARY_CROSSENTROPY_FORWARD() */
	ccv_nnc_cmd_t categorical_default;  /* CMD_CATEGORICAL_CROSSENTROPY_FORWARD() */
	ccv_nnc_cmd_t categorical_smoothed; /* CMD_CATEGORICAL_CROSSENTROPY_BACKWARD(0.1, 0.9) */
} nnc_test_loss_cmds_t;

void nnc_test_loss_cmds(nnc_test_loss_cmds_t* cmds);
/* MSE (mean) of a = [1, 2] against b = [0, 4] into *loss; returns the exec code. */
int nnc_test_loss_example(float* loss);

#ifdef __cplusplus
}
#endif

#endif
