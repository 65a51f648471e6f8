#include "convolution_easy.h"

#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_conv_forward(void) { return CMD_CONVOLUTION_FORWARD(2, 6, 3, 5, 4); }

ccv_nnc_cmd_t nnc_test_conv_backward(void) { return CMD_CONVOLUTION_BACKWARD(1, 3, 2, 2, 1); }

int nnc_test_conv_example(float y[4])
{
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 3, 3, 1), 0);
	ccv_nnc_tensor_t* w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 2, 1), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	ccv_nnc_tensor_t* out = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 2, 1), 0);
	int i;
	for (i = 0; i < 9; i++)
		x->data.f32[i] = (float)(i + 1);
	for (i = 0; i < 4; i++)
		w->data.f32[i] = 1;
	b->data.f32[0] = 0.5;
	const int code = ccv_nnc_cmd_exec(CMD_CONVOLUTION_FORWARD(1, 1, 2, 2, 1), HINT((1, 1), (0, 0)), 0, TENSOR_LIST(x, w, b), TENSOR_LIST(out), 0);
	for (i = 0; i < 4; i++)
		y[i] = out->data.f32[i];
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(out);
	return code;
}
