/*
 * SET, DATA_TRANSFER, FORMAT_TRANSFORM, DATATYPE_CONVERSION and TRANSPOSE the
 * way a libnnc program calls them (CMD_*(), TENSOR_LIST, several pairs in one
 * call), checked against index arithmetic done here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3, 4), 0);
	ccv_nnc_tensor_t* const x2 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 5, 1, 2), 0);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4, 3, 2), 0);
	ccv_nnc_tensor_t* const y2 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 1, 5), 0);
	ccv_nnc_tensor_t* const nchw = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(32F, 4, 2, 3), 0);
	ccv_nnc_tensor_t* const half = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(16F, 2, 3, 4), 0);
	ccv_nnc_tensor_t* const back = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3, 4), 0);
	int i, j, k;
	for (i = 0; i < 24; i++)
		x->data.f32[i] = (float)i / 4.f - 2.f; /* exact in fp16 */
	for (i = 0; i < 10; i++)
		x2->data.f32[i] = (float)(i * i);
	/* TRANSPOSE of axes 0 and 2, two pairs in one call (libnnc allows n pairs). */
	RUN(CMD_TRANSPOSE_FORWARD(0, 2), TENSOR_LIST(x, x2), TENSOR_LIST(y, y2));
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < 4; k++)
				CHECK(y->data.f32[(k * 3 + j) * 2 + i] == x->data.f32[(i * 3 + j) * 4 + k], "y[%d,%d,%d]", k, j, i);
	for (i = 0; i < 5; i++)
		for (k = 0; k < 2; k++)
			CHECK(y2->data.f32[k * 5 + i] == x2->data.f32[i * 2 + k], "y2[%d,0,%d]", k, i);
	/* Backward: dx is g transposed back. */
	RUN(CMD_TRANSPOSE_BACKWARD(0, 2), TENSOR_LIST(y), TENSOR_LIST(back));
	for (i = 0; i < 24; i++)
		CHECK(back->data.f32[i] == x->data.f32[i], "transpose back %d", i);
	/* FORMAT_TRANSFORM of a 3-d tensor: NHWC [H, W, C] = [2, 3, 4] to NCHW [C, H, W]. */
	RUN(CMD_FORMAT_TRANSFORM_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(nchw));
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < 4; k++)
				CHECK(nchw->data.f32[(k * 2 + i) * 3 + j] == x->data.f32[(i * 3 + j) * 4 + k], "chw %d %d %d", k, i, j);
	/* DATATYPE_CONVERSION round trip through fp16 (values exact in fp16). */
	RUN(CMD_DATATYPE_CONVERSION_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(half));
	RUN(CMD_DATATYPE_CONVERSION_FORWARD(), TENSOR_LIST(half), TENSOR_LIST(back));
	CHECK(ccv_nnc_tensor_eq(back, x) == 0, "fp16 round trip");
	/* SET then DATA_TRANSFER. */
	CHECK(ccv_nnc_cmd_exec(CMD_SET_FORWARD(0.75), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(back), 0) == CCV_NNC_EXEC_SUCCESS, "set");
	for (i = 0; i < 24; i++)
		CHECK(back->data.f32[i] == 0.75f, "set %d", i);
	RUN(CMD_DATA_TRANSFER_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(back));
	CHECK(ccv_nnc_tensor_eq(back, x) == 0, "transfer");
	/* libnnc's registration: pairs as runs, no in-place pairs. */
	const uint64_t two = 0x3, first = 0x1;
	CHECK(ccv_nnc_cmd_bitmask(CMD_TRANSPOSE_FORWARD(0, 2), 2, 2, &two, 1, &two, 1), "two pairs");
	CHECK(!ccv_nnc_cmd_bitmask(CMD_DATA_TRANSFER_FORWARD(), 2, 2, &first, 1, &first, 1), "a pair left out");
	CHECK(!ccv_nnc_cmd_allow_inplace(CMD_DATA_TRANSFER_FORWARD(), 0, 1, 0, 1), "no in place");
	ccv_nnc_tensor_param_t out[2];
	ccv_nnc_hint_tensor_auto(CMD_TRANSPOSE_FORWARD(0, 2), TENSOR_PARAM_LIST(x->info, x2->info), ccv_nnc_no_hint, out, 2);
	CHECK(out[0].dim[0] == 4 && out[0].dim[2] == 2 && out[1].dim[0] == 2 && out[1].dim[2] == 5, "transpose shapes");
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(x2);
	ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(y2);
	ccv_nnc_tensor_free(nchw);
	ccv_nnc_tensor_free(half);
	ccv_nnc_tensor_free(back);
	printf("libnnc_style_a_util: %d failed\n", failed);
	return failed ? 1 : 0;
}
