#include "rand_easy.h"

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int rand_easy_all(float* u, float* z, const float* x, float* y, unsigned char* mask, float* dx, int n)
{
	ccv_nnc_tensor_t* tu = ccv_nnc_tensor_new(u, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* tz = ccv_nnc_tensor_new(z, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* tx = ccv_nnc_tensor_new(x, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* ty = ccv_nnc_tensor_new(y, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* tm = ccv_nnc_tensor_new(mask, CPU_TENSOR_NHWC(8U, n), 0);
	ccv_nnc_tensor_t* td = ccv_nnc_tensor_new(dx, CPU_TENSOR_NHWC(32F, n), 0);
	int code = ccv_nnc_cmd_exec(CMD_RANDOM_UNIFORM_FORWARD(-1, 1), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(tu), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
		code = ccv_nnc_cmd_exec(CMD_RANDOM_NORMAL_FORWARD(1, 3), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(tz), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
		code = ccv_nnc_cmd_exec(CMD_DROPOUT_FORWARD(0.5), ccv_nnc_no_hint, 0, TENSOR_LIST(tx), TENSOR_LIST(ty, tm), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
		code = ccv_nnc_cmd_exec(CMD_DROPOUT_BACKWARD(0.5), ccv_nnc_no_hint, 0, TENSOR_LIST(tx, 0, 0, 0, tm), TENSOR_LIST(td), 0);
	ccv_nnc_tensor_free(tu);
	ccv_nnc_tensor_free(tz);
	ccv_nnc_tensor_free(tx);
	ccv_nnc_tensor_free(ty);
	ccv_nnc_tensor_free(tm);
	ccv_nnc_tensor_free(td);
	return code;
}
