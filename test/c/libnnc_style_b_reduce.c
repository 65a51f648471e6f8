/*
 * The reductions as a libnnc user writes them: CMD_REDUCE_*(), CMD_ARGMAX_*,
 * TENSOR_LIST with libnnc's backward slots (|g| for SUM / MEAN, |g|x|y| for
 * MAX) and forward shapes from ccv_nnc_hint_tensor_auto. Values against a
 * double reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

enum { A = 3, B = 4, D = 5 };

int main(void)
{
	ccv_nnc_init();
	int i, j, k, rc;
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, A, B, D), 0);
	for (i = 0; i < A * B * D; i++)
		x->data.f32[i] = (float)((i * 37) % 61) / 8 - 3;  /* distinct values */
	/* REDUCE_SUM over axes 0 and 2: 1 x B x 1. */
	ccv_nnc_tensor_param_t sp;
	ccv_nnc_hint_tensor_auto(CMD_REDUCE_SUM_FORWARD(0, 2), &x->info, 1, ccv_nnc_no_hint, &sp, 1);
	CHECK(sp.dim[0] == 1 && sp.dim[1] == B && sp.dim[2] == 1 && sp.dim[3] == 0, "sum is %dx%dx%d", sp.dim[0], sp.dim[1], sp.dim[2]);
	ccv_nnc_tensor_t* const s = ccv_nnc_tensor_new(0, sp, 0);
	rc = ccv_nnc_cmd_exec(CMD_REDUCE_SUM_FORWARD(0, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(s), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "sum returned %d", rc);
	for (j = 0; j < B; j++)
	{
		double want = 0;
		for (i = 0; i < A; i++) for (k = 0; k < D; k++)
			want += x->data.f32[(i * B + j) * D + k];
		CHECK(fabs(s->data.f32[j] - want) < 1e-4, "sum[%d] = %g, want %g", j, s->data.f32[j], want);
	}
	/* REDUCE_MEAN backward from |g| alone: g / (A * D) everywhere. */
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, x->info, 0);
	for (j = 0; j < B; j++)
		s->data.f32[j] = 1.5f * (j + 1);
	rc = ccv_nnc_cmd_exec(CMD_REDUCE_MEAN_BACKWARD(0, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(s), TENSOR_LIST(dx), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "mean backward returned %d", rc);
	for (i = 0; i < A; i++) for (j = 0; j < B; j++) for (k = 0; k < D; k++)
		CHECK(fabs(dx->data.f32[(i * B + j) * D + k] - 1.5 * (j + 1) / (A * D)) < 1e-6, "mean dx[%d,%d,%d]", i, j, k);
	/* REDUCE_MAX over axis 1 and its backward from |g|x|y|: g to the maximum. */
	ccv_nnc_tensor_t* const m = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, A, 1, D), 0);
	ccv_nnc_tensor_t* const gm = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, A, 1, D), 0);
	rc = ccv_nnc_cmd_exec(CMD_REDUCE_MAX_FORWARD(1), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(m), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "max returned %d", rc);
	for (i = 0; i < A * D; i++)
		gm->data.f32[i] = 0.5f + i;
	rc = ccv_nnc_cmd_exec(CMD_REDUCE_MAX_BACKWARD(1), ccv_nnc_no_hint, 0, TENSOR_LIST(gm, x, m), TENSOR_LIST(dx), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "max backward returned %d", rc);
	/* ARGMAX over axis 1: 32S indices, shape from tensor_auto. */
	ccv_nnc_tensor_param_t ap;
	ccv_nnc_hint_tensor_auto(CMD_ARGMAX_FORWARD(1), &x->info, 1, ccv_nnc_no_hint, &ap, 1);
	CHECK(ap.datatype == CCV_32S && ap.dim[1] == 1, "argmax is %d-typed with %d rows", ap.datatype, ap.dim[1]);
	ccv_nnc_tensor_t* const am = ccv_nnc_tensor_new(0, ap, 0);
	rc = ccv_nnc_cmd_exec(CMD_ARGMAX_FORWARD(1), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(am), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "argmax returned %d", rc);
	for (i = 0; i < A; i++) for (k = 0; k < D; k++)
	{
		int best = 0;
		for (j = 1; j < B; j++)
			if (x->data.f32[(i * B + j) * D + k] > x->data.f32[(i * B + best) * D + k])
				best = j;
		CHECK(m->data.f32[i * D + k] == x->data.f32[(i * B + best) * D + k], "max[%d,%d]", i, k);
		CHECK(am->data.i32[i * D + k] == best, "argmax[%d,%d] = %d, want %d", i, k, am->data.i32[i * D + k], best);
		for (j = 0; j < B; j++)
			CHECK(dx->data.f32[(i * B + j) * D + k] == (j == best ? gm->data.f32[i * D + k] : 0), "max dx[%d,%d,%d]", i, j, k);
	}
	ccv_nnc_tensor_free(x); ccv_nnc_tensor_free(s); ccv_nnc_tensor_free(dx); ccv_nnc_tensor_free(m);
	ccv_nnc_tensor_free(gm); ccv_nnc_tensor_free(am);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
