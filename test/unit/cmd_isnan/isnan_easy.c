/* REDUCE_ISNAN through its CMD_* easy macros, expanded by C. */
#include <math.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_isnan_example(int y[2]);

/* Rows of a 2x3 fp32 matrix, the second holding a NaN, reduced over axis 1 into int32 y[2]. */
int nnc_test_isnan_example(int y[2])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 2, 1), 0);
	int i;
	for (i = 0; i < 6; i++)
		a->data.f32[i] = (float)i;
	a->data.f32[4] = NAN;
	const int code = ccv_nnc_cmd_exec(CMD_REDUCE_ISNAN_FORWARD(1), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	y[0] = b->data.i32[0];
	y[1] = b->data.i32[1];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return code;
}
