#include "broadcast_easy.h"

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

void blas_broadcast_easy_commands(float p, float q, ccv_nnc_cmd_t out[6])
{
	out[0] = CMD_ADD_FORWARD(p, q);
	out[1] = CMD_ADD_BACKWARD(p, q);
	out[2] = CMD_MUL_FORWARD(p);
	out[3] = CMD_MUL_BACKWARD(p);
	out[4] = CMD_SCALAR_MUL_FORWARD(p);
	out[5] = CMD_SCALAR_MUL_BACKWARD(p);
}

int blas_broadcast_easy_bias(const float* x, const float* bias, float* y, int rows, int cols)
{
	ccv_nnc_tensor_t* tx = ccv_nnc_tensor_new(x, CPU_TENSOR_NHWC(32F, rows, cols), 0);
	ccv_nnc_tensor_t* tb = ccv_nnc_tensor_new(bias, CPU_TENSOR_NHWC(32F, cols), 0);
	ccv_nnc_tensor_t* ty = ccv_nnc_tensor_new(y, CPU_TENSOR_NHWC(32F, rows, cols), 0);
	const int code = ccv_nnc_cmd_exec(CMD_ADD_FORWARD(1, 1), ccv_nnc_no_hint, 0, TENSOR_LIST(tx, tb), TENSOR_LIST(ty), 0);
	ccv_nnc_tensor_free(tx);
	ccv_nnc_tensor_free(tb);
	ccv_nnc_tensor_free(ty);
	return code;
}
