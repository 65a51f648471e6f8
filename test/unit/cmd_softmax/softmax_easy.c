#include "softmax_easy.h"

#include <math.h>

#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_softmax_ce_forward_smoothed(void) { return CMD_SOFTMAX_CROSSENTROPY_FORWARD(0.1, 0.9); }

ccv_nnc_cmd_t nnc_test_softmax_ce_backward_default(void) { return CMD_SOFTMAX_CROSSENTROPY_BACKWARD(); }

int nnc_test_softmax_example(float out[6])
{
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 3), 0);
	ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 3), 0);
	ccv_nnc_tensor_t* label = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 1), 0);
	ccv_nnc_tensor_t* loss = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 1), 0);
	ccv_nnc_tensor_t* s = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 3), 0);
	ccv_nnc_tensor_t* dx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 3), 0);
	x->data.f32[0] = 0;
	x->data.f32[1] = logf(2);
	x->data.f32[2] = logf(5);
	label->data.i32[0] = 2;
	int code = ccv_nnc_cmd_exec(CMD_SOFTMAX_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(y), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
		code = ccv_nnc_cmd_exec(CMD_SOFTMAX_CROSSENTROPY_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x, label), TENSOR_LIST(loss, s), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
		code = ccv_nnc_cmd_exec(CMD_SOFTMAX_CROSSENTROPY_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(0, 0, x, label, loss, s), TENSOR_LIST(dx), 0);
	out[0] = y->data.f32[0];
	out[1] = y->data.f32[1];
	out[2] = y->data.f32[2];
	out[3] = loss->data.f32[0];
	out[4] = dx->data.f32[0];
	out[5] = dx->data.f32[2];
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(label);
	ccv_nnc_tensor_free(loss);
	ccv_nnc_tensor_free(s);
	ccv_nnc_tensor_free(dx);
	return code;
}
