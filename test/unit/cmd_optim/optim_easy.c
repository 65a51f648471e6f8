#include "optim_easy.h"

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int optim_easy_step(int which, int steps, const float* g, float* a, float* s0, float* s1, int n)
{
	ccv_nnc_tensor_t* tg = ccv_nnc_tensor_new(g, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* ta = ccv_nnc_tensor_new(a, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* t0 = ccv_nnc_tensor_new(s0, CPU_TENSOR_NHWC(32F, n), 0);
	ccv_nnc_tensor_t* t1 = ccv_nnc_tensor_new(s1, CPU_TENSOR_NHWC(32F, n), 0);
	int code = CCV_NNC_EXEC_SUCCESS;
	int t;
	for (t = 1; t <= steps && code == CCV_NNC_EXEC_SUCCESS; t++)
	{
		switch (which)
		{
			case 0:
				code = ccv_nnc_cmd_exec(CMD_SGD_FORWARD(1, 0.1, 1, 0.01, 0.9, 0.9), ccv_nnc_no_hint, 0, TENSOR_LIST(tg, ta, t0), TENSOR_LIST(ta, t0), 0);
				break;
			case 1:
				code = ccv_nnc_cmd_exec(CMD_ADAM_FORWARD(t, 0.01, 0.9, 0.999, 0.01, 1e-8, 0), ccv_nnc_no_hint, 0, TENSOR_LIST(tg, ta, t0, t1), TENSOR_LIST(ta, t0, t1), 0);
				break;
			case 2:
				code = ccv_nnc_cmd_exec(CMD_ADAMW_FORWARD(t, 0.01, 0.9, 0.999, 0.01, 1e-8, 0), ccv_nnc_no_hint, 0, TENSOR_LIST(tg, ta, t0, t1), TENSOR_LIST(ta, t0, t1), 0);
				break;
			case 3:
				code = ccv_nnc_cmd_exec(CMD_RMSPROP_FORWARD(0.01, 0.01, 0.9, 0.5, 1e-8), ccv_nnc_no_hint, 0, TENSOR_LIST(tg, ta, t0, t1), TENSOR_LIST(ta, t0, t1), 0);
				break;
			default:
				code = ccv_nnc_cmd_exec(CMD_LAMB_FORWARD(t, 0.01, 0.9, 0.999, 0.01, 1e-6), ccv_nnc_no_hint, 0, TENSOR_LIST(tg, ta, t0, t1), TENSOR_LIST(ta, t0, t1), 0);
				break;
		}
	}
	ccv_nnc_tensor_free(tg);
	ccv_nnc_tensor_free(ta);
	ccv_nnc_tensor_free(t0);
	ccv_nnc_tensor_free(t1);
	return code;
}
