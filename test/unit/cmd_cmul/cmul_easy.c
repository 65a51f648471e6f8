/* CMUL through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_cmul_example(float c[4]);

/* (1 + 2i, 3 - i) times (2 - i, i) into c[4]; returns the exec code. */
int nnc_test_cmul_example(float c[4])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	const float av[4] = {1, 2, 3, -1}, bv[4] = {2, -1, 0, 1};
	int i;
	for (i = 0; i < 4; i++)
	{
		a->data.f32[i] = av[i];
		b->data.f32[i] = bv[i];
	}
	const int code = ccv_nnc_cmd_exec(CMD_CMUL_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(y), 0);
	for (i = 0; i < 4; i++)
		c[i] = y->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(y);
	return code;
}
