/* PAD through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_pad_forward(void);
int nnc_test_pad_example(float y[7]);

/* CMD_PAD_FORWARD(CCV_NNC_PAD_REPLICATE, (1, 2), (3, 4)) */
ccv_nnc_cmd_t nnc_test_pad_forward(void) { return CMD_PAD_FORWARD(CCV_NNC_PAD_REPLICATE, (1, 2), (3, 4)); }

/* 1, 2, 3 padded by 2 in front and 2 behind, reflected, into y[7]; returns the exec code. */
int nnc_test_pad_example(float y[7])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 7), 0);
	int i;
	for (i = 0; i < 3; i++)
		a->data.f32[i] = (float)(i + 1);
	const int code = ccv_nnc_cmd_exec(CMD_PAD_FORWARD(CCV_NNC_PAD_REFLECT, (2), (2)), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	for (i = 0; i < 7; i++)
		y[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return code;
}
