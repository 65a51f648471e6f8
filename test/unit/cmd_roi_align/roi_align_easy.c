/* ROI_ALIGN through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_roi_align_example(float b[4]);

/* A 4 x 4 one-channel map holding 0 .. 15, the whole map as the box, pooled
 * to 2 x 2 into b[4]; returns the exec code. */
int nnc_test_roi_align_example(float b[4])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4, 4, 1), 0);
	ccv_nnc_tensor_t* box = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 2, 1), 0);
	int i;
	for (i = 0; i < 16; i++)
		a->data.f32[i] = i;
	box->data.f32[0] = 0;
	box->data.f32[1] = 0;
	box->data.f32[2] = 1;
	box->data.f32[3] = 1;
	const int code = ccv_nnc_cmd_exec(CMD_ROI_ALIGN_FORWARD(2, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(a, box), TENSOR_LIST(y), 0);
	for (i = 0; i < 4; i++)
		b[i] = y->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(box);
	ccv_nnc_tensor_free(y);
	return code;
}
