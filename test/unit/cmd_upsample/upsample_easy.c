/* UPSAMPLE through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_upsample_forward(void);
int nnc_test_upsample_example(float y[16]);

/* CMD_UPSAMPLE_FORWARD(CCV_NNC_UPSAMPLE_BILINEAR, 2, 1.5, 1) */
ccv_nnc_cmd_t nnc_test_upsample_forward(void) { return CMD_UPSAMPLE_FORWARD(CCV_NNC_UPSAMPLE_BILINEAR, 2, 1.5, 1); }

/* A 2x2 image of rows 0 1 / 2 3, bilinear 2x (half-pixel) into y[16]; returns the exec code. */
int nnc_test_upsample_example(float y[16])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 2), 0);
	ccv_nnc_tensor_param_t p;
	ccv_nnc_hint_tensor_auto(CMD_UPSAMPLE_FORWARD(CCV_NNC_UPSAMPLE_BILINEAR, 2, 2, 0), &a->info, 1, ccv_nnc_no_hint, &p, 1);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, p, 0);
	int i;
	for (i = 0; i < 4; i++)
		a->data.f32[i] = (float)i;
	const int code = ccv_nnc_cmd_exec(CMD_UPSAMPLE_FORWARD(CCV_NNC_UPSAMPLE_BILINEAR, 2, 2, 0), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	for (i = 0; i < 16; i++)
		y[i] = b->data.f32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return code;
}
