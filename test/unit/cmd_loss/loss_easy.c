#include "loss_easy.h"

#include "nnc/ccv_nnc_easy.h"

void nnc_test_loss_cmds(nnc_test_loss_cmds_t* cmds)
{
	cmds->mse_sum = CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_SUM);
	cmds->mse_mean_backward = CMD_MSE_BACKWARD(CCV_NNC_MSE_REDUCE_MEAN);
	cmds->smooth_l1 = CMD_SMOOTH_L1_FORWARD(0.5);
	cmds->bce_default = CMD_BINARY_CROSSENTROPY_FORWARD();
	cmds->bce_weighted = CMD_BINARY_CROSSENTROPY_BACKWARD(2);
	cmds->sigmoid_bce = CMD_SIGMOID_BINARY_CROSSENTROPY_FORWARD();
	cmds->categorical_default = CMD_CATEGORICAL_CROSSENTROPY_FORWARD();
	cmds->categorical_smoothed = CMD_CATEGORICAL_CROSSENTROPY_BACKWARD(0.1, 0.9);
}

int nnc_test_loss_example(float* loss)
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2), 0);
	ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	a->data.f32[0] = 1;
	a->data.f32[1] = 2;
	b->data.f32[0] = 0;
	b->data.f32[1] = 4;
	const int code = ccv_nnc_cmd_exec(CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_MEAN), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0);
	*loss = c->data.f32[0];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
	return code;
}
