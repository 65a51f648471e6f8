#include "norm_easy.h"

#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_bnorm_forward(void) { return CMD_BATCH_NORM_FORWARD(1e-4, 0, 0.9, 0, 1, 2); }

ccv_nnc_cmd_t nnc_test_bnorm_backward(void) { return CMD_BATCH_NORM_BACKWARD(1e-4, 1, 0.9, 0, 2, 3); }

ccv_nnc_cmd_t nnc_test_lnorm_forward(void) { return CMD_LAYER_NORM_FORWARD(1e-5, 1, 1, 2); }

int nnc_test_lnorm_example(float y[8])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
	int i;
	for (i = 0; i < 8; i++)
		a->data.f32[i] = (float)(i * i);
	const int code = ccv_nnc_cmd_exec(CMD_LAYER_NORM_FORWARD(0, 0, 1), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	for (i = 0; i < 8; i++)
		y[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return code;
}

ccv_nnc_cmd_t nnc_test_gnorm_forward(void) { return CMD_GROUP_NORM_FORWARD(1, 2, 1e-5, 1, 2, 3); }

ccv_nnc_cmd_t nnc_test_rmsnorm_forward(void) { return CMD_RMSNORM_FORWARD(1e-6, 1); }

int nnc_test_gnorm_example(float y[8])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(32F, 1, 4, 2), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(32F, 1, 4, 2), 0);
	ccv_nnc_tensor_t* m = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(32F, 1, 2, 1), 0);
	ccv_nnc_tensor_t* s = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(32F, 1, 2, 1), 0);
	int i;
	for (i = 0; i < 8; i++)
		a->data.f32[i] = (float)(i * i);
	const int code = ccv_nnc_cmd_exec(CMD_GROUP_NORM_FORWARD(1, 2, 0, 0, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b, m, s), 0);
	for (i = 0; i < 8; i++)
		y[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(m);
	ccv_nnc_tensor_free(s);
	return code;
}

int nnc_test_rmsnorm_example(float y[8])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
	ccv_nnc_tensor_t* g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
	ccv_nnc_tensor_t* r = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 1), 0);
	int i;
	for (i = 0; i < 8; i++)
		a->data.f32[i] = (float)(i * i);
	for (i = 0; i < 4; i++)
		g->data.f32[i] = 1;
	const int code = ccv_nnc_cmd_exec(CMD_RMSNORM_FORWARD(0, 1), ccv_nnc_no_hint, 0, TENSOR_LIST(a, g), TENSOR_LIST(b, r), 0);
	for (i = 0; i < 8; i++)
		y[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(r);
	return code;
}
