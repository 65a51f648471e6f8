/* MASKED_FILL through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_masked_fill_example(float y[4]);

/* 1 2 3 4 where an int32 mask is 0 (positions 1 and 3) filled with -9, into y[4]; returns the exec code. */
int nnc_test_masked_fill_example(float y[4])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* m = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 4), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	int i;
	for (i = 0; i < 4; i++)
	{
		a->data.f32[i] = (float)(i + 1);
		m->data.i32[i] = i % 2 == 0;
	}
	const int code = ccv_nnc_cmd_exec(CMD_MASKED_FILL_FORWARD(0, -9), ccv_nnc_no_hint, 0, TENSOR_LIST(a, m), TENSOR_LIST(b), 0);
	for (i = 0; i < 4; i++)
		y[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(m);
	ccv_nnc_tensor_free(b);
	return code;
}
