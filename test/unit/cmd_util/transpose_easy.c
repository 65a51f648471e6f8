/* TRANSPOSE through the CMD_* easy macros, expanded by C (declared in transpose_test.cpp). */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_transpose_forward_0_2(void);
ccv_nnc_cmd_t nnc_test_transpose_backward_1_0(void);
/* A 2x3 fp32 matrix of 1..6 transposed into out[6]; returns the exec code. */
int nnc_test_transpose_example(float out[6]);

ccv_nnc_cmd_t nnc_test_transpose_forward_0_2(void) { return CMD_TRANSPOSE_FORWARD(0, 2); }

ccv_nnc_cmd_t nnc_test_transpose_backward_1_0(void) { return CMD_TRANSPOSE_BACKWARD(1, 0); }

int nnc_test_transpose_example(float out[6])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 2), 0);
	int i;
	for (i = 0; i < 6; i++)
		a->data.f32[i] = (float)(i + 1);
	const int code = ccv_nnc_cmd_exec(CMD_TRANSPOSE_FORWARD(0, 1), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	for (i = 0; i < 6; i++)
		out[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return code;
}
