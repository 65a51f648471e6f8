/* NMS through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_nms_example(float b[15], int c[3]);

/* Three scored boxes at IoU threshold 0.5 into b[15] (ranked, kept first)
 * and c[3] (their rows in a, -1 after); returns the exec code. */
int nnc_test_nms_example(float b[15], int c[3])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	ccv_nnc_tensor_t* sorted = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	ccv_nnc_tensor_t* index = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 3), 0);
	/* score, x, y, width, height */
	const float av[15] = {
		0.5, 0, 0, 2, 1, /* IoU 0.5 with the next row */
		0.9, 0, 0, 2, 2,
		0.7, 0, 0, 2, 1.5, /* IoU 0.75 with the row above */
	};
	int i;
	for (i = 0; i < 15; i++)
		a->data.f32[i] = av[i];
	const int code = ccv_nnc_cmd_exec(CMD_NMS_FORWARD(0.5), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(sorted, index), 0);
	for (i = 0; i < 15; i++)
		b[i] = sorted->data.f32[i];
	for (i = 0; i < 3; i++)
		c[i] = index->data.i32[i];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(sorted);
	ccv_nnc_tensor_free(index);
	return code;
}
