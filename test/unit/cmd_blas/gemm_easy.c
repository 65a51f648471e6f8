#include "gemm_easy.h"

#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_gemm_fc(void) { return CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)); }

ccv_nnc_cmd_t nnc_test_gemm_plain(void) { return CMD_GEMM_FORWARD(); }

ccv_nnc_cmd_t nnc_test_gemm_backward_ta(void) { return CMD_GEMM_BACKWARD(TRANSPOSE(1, 2)); }

int nnc_test_gemm_example(float out[8])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 4), 0);
	ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
	int i;
	for (i = 0; i < 6; i++)
		a->data.f32[i] = (float)(i + 1);
	for (i = 0; i < 12; i++)
		b->data.f32[i] = (float)(i + 1);
	const int code = ccv_nnc_cmd_exec(CMD_GEMM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0);
	for (i = 0; i < 8; i++)
		out[i] = c->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
	return code;
}
