#include "activation_easy.h"

#include "nnc/ccv_nnc_easy.h"

void nnc_test_activation_cmds(ccv_nnc_cmd_t out[7])
{
	out[0] = CMD_RELU_FORWARD();
	out[1] = CMD_LEAKY_RELU_BACKWARD(0.25);
	out[2] = CMD_GELU_FORWARD(1);
	out[3] = CMD_GELU_BACKWARD(0);
	out[4] = CMD_SIGMOID_BACKWARD();
	out[5] = CMD_TANH_FORWARD();
	out[6] = CMD_SWISH_BACKWARD();
}

int nnc_test_activation_relu_example(float out[8])
{
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* dx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	const float v[4] = {-2, -0.5, 0, 1.5};
	int i;
	for (i = 0; i < 4; i++)
		x->data.f32[i] = v[i], g->data.f32[i] = 1;
	int code = ccv_nnc_cmd_exec(CMD_RELU_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(x), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
		code = ccv_nnc_cmd_exec(CMD_RELU_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(g, 0, x), TENSOR_LIST(dx), 0);
	for (i = 0; i < 4; i++)
		out[i] = x->data.f32[i], out[4 + i] = dx->data.f32[i];
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(dx);
	return code;
}
