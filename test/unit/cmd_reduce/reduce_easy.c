#include "reduce_easy.h"

#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_reduce_sum_0_2(void) { return CMD_REDUCE_SUM_FORWARD(0, 2); }

ccv_nnc_cmd_t nnc_test_reduce_max_backward_1(void) { return CMD_REDUCE_MAX_BACKWARD(1); }

ccv_nnc_cmd_t nnc_test_argmax_1(void) { return CMD_ARGMAX_FORWARD(1); }

int nnc_test_reduce_mean_example(float out[2])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 1), 0);
	int i;
	for (i = 0; i < 6; i++)
		a->data.f32[i] = (float)(i + 1);
	const int code = ccv_nnc_cmd_exec(CMD_REDUCE_MEAN_FORWARD(1), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	out[0] = b->data.f32[0];
	out[1] = b->data.f32[1];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return code;
}
