#include "math_easy.h"

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

void ew_math_easy_commands(float min, float max, ccv_nnc_cmd_t out[16])
{
	out[0] = CMD_EWPROD_FORWARD();
	out[1] = CMD_EWPROD_BACKWARD();
	out[2] = CMD_EWDIV_FORWARD();
	out[3] = CMD_EWDIV_BACKWARD();
	out[4] = CMD_EWEXP_FORWARD();
	out[5] = CMD_EWEXP_BACKWARD();
	out[6] = CMD_EWLOG_FORWARD();
	out[7] = CMD_EWLOG_BACKWARD();
	out[8] = CMD_EWSQRT_FORWARD();
	out[9] = CMD_EWSQRT_BACKWARD();
	out[10] = CMD_CLAMP_FORWARD(min, max);
	out[11] = CMD_CLAMP_BACKWARD(min, max);
	out[12] = CMD_MIN_FORWARD();
	out[13] = CMD_MIN_BACKWARD();
	out[14] = CMD_MAX_FORWARD();
	out[15] = CMD_MAX_BACKWARD();
}

int ew_math_easy_reciprocal(const float* b, float* y, int n)
{
	ccv_nnc_tensor_t* tb = ccv_nnc_tensor_new(b, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* ty = ccv_nnc_tensor_new(y, CPU_TENSOR_NHWC(32F, n), 0);
	const int code = ccv_nnc_cmd_exec(CMD_EWDIV_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(0, tb), TENSOR_LIST(ty), 0);
	ccv_nnc_tensor_free(tb);
	ccv_nnc_tensor_free(ty);
	return code;
}
