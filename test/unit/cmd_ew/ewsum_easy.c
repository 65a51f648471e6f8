#include "ewsum_easy.h"

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int ewsum_easy_sum3(const float* a, const float* b, const float* c, float* y, int n)
{
	ccv_nnc_tensor_t* ta = ccv_nnc_tensor_new(a, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* tb = ccv_nnc_tensor_new(b, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* tc = ccv_nnc_tensor_new(c, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* ty = ccv_nnc_tensor_new(y, CPU_TENSOR_NHWC(32F, n), 0);
	const int code = ccv_nnc_cmd_exec(CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(ta, tb, tc), TENSOR_LIST(ty), 0);
	ccv_nnc_tensor_free(ta);
	ccv_nnc_tensor_free(tb);
	ccv_nnc_tensor_free(tc);
	ccv_nnc_tensor_free(ty);
	return code;
}

int ewsum_easy_backward(const float* g, float* dx1, float* dx2, int n)
{
	ccv_nnc_tensor_t* tg = g ? ccv_nnc_tensor_new(g, CPU_TENSOR_NHWC(32F, n), 0) : 0;
	ccv_nnc_tensor_t* t1 = ccv_nnc_tensor_new(dx1, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* t2 = ccv_nnc_tensor_new(dx2, CPU_TENSOR_NHWC(32F, n), 0);
	const int code = ccv_nnc_cmd_exec(CMD_EWSUM_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(tg), TENSOR_LIST(t1, t2), 0);
	if (tg)
		ccv_nnc_tensor_free(tg);
	ccv_nnc_tensor_free(t1);
	ccv_nnc_tensor_free(t2);
	return code;
}
