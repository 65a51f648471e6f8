#include "pool_easy.h"

#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_max_pool_forward(void) { return CMD_MAX_POOL_FORWARD(3, 2); }
ccv_nnc_cmd_t nnc_test_max_pool_backward(void) { return CMD_MAX_POOL_BACKWARD(3, 2); }
ccv_nnc_cmd_t nnc_test_avg_pool_forward(void) { return CMD_AVERAGE_POOL_FORWARD(2, 3); }
ccv_nnc_cmd_t nnc_test_avg_pool_backward(void) { return CMD_AVERAGE_POOL_BACKWARD(2, 3); }

int nnc_test_max_pool_example(float y[4])
{
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 4, 4, 1), 0);
	ccv_nnc_tensor_t* out = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 2, 1), 0);
	int i;
	for (i = 0; i < 16; i++)
		x->data.f32[i] = (float)i;
	const int code = ccv_nnc_cmd_exec(CMD_MAX_POOL_FORWARD(2, 2), HINT((2, 2), (0, 0)), 0, TENSOR_LIST(x), TENSOR_LIST(out), 0);
	for (i = 0; i < 4; i++)
		y[i] = out->data.f32[i];
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(out);
	return code;
}
