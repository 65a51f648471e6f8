/*
 * RANDOM_UNIFORM, RANDOM_NORMAL and DROPOUT the way a libnnc program uses
 * them: the mask made from ccv_nnc_hint_tensor_auto (reserved space in x's
 * type), the backward's inputs in libnnc's slots |g|g_mask|x|y|mask|.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

#define N 4000

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_stream_context_set_seed(0, 5);
	ccv_nnc_tensor_t* const u = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 40, N / 40), 0);
	CHECK(ccv_nnc_cmd_exec(CMD_RANDOM_UNIFORM_FORWARD(-1, 3), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(u), 0) == CCV_NNC_EXEC_SUCCESS, "uniform");
	double sum = 0, sq = 0;
	int i, out_of_range = 0;
	for (i = 0; i < N; i++)
		sum += u->data.f32[i], out_of_range += u->data.f32[i] < -1 || u->data.f32[i] > 3;
	CHECK(out_of_range == 0 && fabs(sum / N - 1) < 4 * sqrt(16.0 / 12 / N), "uniform mean %g", sum / N);
	CHECK(ccv_nnc_cmd_exec(CMD_RANDOM_NORMAL_FORWARD(2, -1), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(u), 0) == CCV_NNC_EXEC_SUCCESS, "normal");
	for (sum = 0, i = 0; i < N; i++)
		sum += u->data.f32[i], sq += (double)u->data.f32[i] * u->data.f32[i];
	const double mean = sum / N, sd = sqrt(sq / N - mean * mean);
	CHECK(fabs(mean + 1) < 4 * 2 / sqrt(N) && fabs(sd - 2) < 0.1, "normal mean %g sd %g", mean, sd);

	/* Dropout with libnnc's mask: its shape from ccv_nnc_hint_tensor_auto. */
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 130, 7), 0);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 130, 7), 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 130, 7), 0);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 130, 7), 0);
	ccv_nnc_tensor_param_t params[2];
	ccv_nnc_hint_tensor_auto(CMD_DROPOUT_FORWARD(0.25), &x->info, 1, ccv_nnc_no_hint, params, 2);
	CHECK(params[1].datatype == CCV_32F && params[1].dim[0] == 32 && params[1].dim[1] == 14 && params[1].dim[2] == 0, "mask %dx%d", params[1].dim[0], params[1].dim[1]);
	ccv_nnc_tensor_t* const mask = ccv_nnc_tensor_new(0, params[1], 0);
	for (i = 0; i < 130 * 7; i++)
		x->data.f32[i] = 1 + (float)(i % 9), g->data.f32[i] = (float)(i % 5) - 2;
	CHECK(ccv_nnc_cmd_exec(CMD_DROPOUT_FORWARD(0.25), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(y, mask), 0) == CCV_NNC_EXEC_SUCCESS, "dropout");
	CHECK(ccv_nnc_cmd_exec(CMD_DROPOUT_BACKWARD(0.25), ccv_nnc_no_hint, 0, TENSOR_LIST(g, 0, 0, 0, mask), TENSOR_LIST(dx), 0) == CCV_NNC_EXEC_SUCCESS, "dropout backward");
	int kept = 0;
	for (i = 0; i < 130 * 7; i++)
	{
		const int k = y->data.f32[i] != 0;
		kept += k;
		CHECK(fabs(y->data.f32[i] - (k ? x->data.f32[i] / 0.75 : 0)) < 1e-5, "y %d", i);
		CHECK(fabs(dx->data.f32[i] - (k ? g->data.f32[i] / 0.75 : 0)) < 1e-5, "dx %d", i);
	}
	CHECK(fabs(kept / 910.0 - 0.75) < 4 * sqrt(0.75 * 0.25 / 910), "kept %d of 910", kept);
	/* libnnc's bitmask: g (input 0) and the mask (input 4). */
	const uint64_t g_mask = 0x11, one = 1;
	CHECK(ccv_nnc_cmd_bitmask(CMD_DROPOUT_BACKWARD(0.25), 5, 1, &g_mask, 1, &one, 1), "bitmask");
	ccv_nnc_tensor_free(u);
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(dx);
	ccv_nnc_tensor_free(mask);
	printf("libnnc_style_a_rand: %d failed\n", failed);
	return failed ? 1 : 0;
}
