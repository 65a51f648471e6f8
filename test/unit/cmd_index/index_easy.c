/* INDEX_SELECT through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_index_example(float y[6]);

/* Rows 2, 0, 2 of a 3x2 matrix 0 1 / 2 3 / 4 5 into y[6]; returns the exec code. */
int nnc_test_index_example(float y[6])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 2), 0);
	ccv_nnc_tensor_t* i = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 3), 0);
	ccv_nnc_tensor_param_t p;
	ccv_nnc_tensor_param_t in[2];
	in[0] = a->info;
	in[1] = i->info;
	ccv_nnc_hint_tensor_auto(CMD_INDEX_SELECT_FORWARD(), in, 2, ccv_nnc_no_hint, &p, 1);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, p, 0);
	int k;
	for (k = 0; k < 6; k++)
		a->data.f32[k] = (float)k;
	i->data.i32[0] = 2;
	i->data.i32[1] = 0;
	i->data.i32[2] = 2;
	const int code = ccv_nnc_cmd_exec(CMD_INDEX_SELECT_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, i), TENSOR_LIST(b), 0);
	for (k = 0; k < 6; k++)
		y[k] = b->data.f32[k];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(i);
	ccv_nnc_tensor_free(b);
	return code;
}
