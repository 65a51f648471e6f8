/*
 * MAX_POOL and AVERAGE_POOL as a libnnc user writes them: CMD_*_POOL_*(),
 * HINT, TENSOR_LIST, libnnc's backward slots (|g|x|y| for max, |g| for
 * average) and shapes from ccv_nnc_hint_tensor_auto. Values against a double
 * reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

enum { H = 4, W = 6, C = 3 };

/* Distinct values, so every window has one maximum. */
static float xv(int h, int w, int c) { return (float)(((h * 7 + w * 5 + c * 11) % 23) + 0.01 * c); }

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, H, W, C), 0);
	int h, w, c, i, j;
	for (h = 0; h < H; h++) for (w = 0; w < W; w++) for (c = 0; c < C; c++)
		x->data.f32[(h * W + w) * C + c] = xv(h, w, c);
	/* Max pool 2x2, stride 2. */
	const ccv_nnc_hint_t h2 = HINT((2, 2), (0, 0));
	ccv_nnc_tensor_param_t yp;
	ccv_nnc_hint_tensor_auto(CMD_MAX_POOL_FORWARD(2, 2), &x->info, 1, h2, &yp, 1);
	CHECK(yp.dim[1] == 2 && yp.dim[2] == 3 && yp.dim[3] == C, "max pool y is %dx%dx%d", yp.dim[1], yp.dim[2], yp.dim[3]);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, yp, 0);
	int rc = ccv_nnc_cmd_exec(CMD_MAX_POOL_FORWARD(2, 2), h2, 0, TENSOR_LIST(x), TENSOR_LIST(y), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "max pool returned %d", rc);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, yp, 0);
	for (i = 0; i < 2 * 3 * C; i++)
		g->data.f32[i] = 0.5f + i;
	ccv_nnc_tensor_param_t dxp;
	ccv_nnc_hint_tensor_auto(CMD_MAX_POOL_BACKWARD(2, 2), TENSOR_PARAM_LIST(g->info, x->info, y->info), h2, &dxp, 1);
	CHECK(dxp.dim[1] == H && dxp.dim[2] == W && dxp.dim[3] == C, "max pool dx is %dx%dx%d", dxp.dim[1], dxp.dim[2], dxp.dim[3]);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, dxp, 0);
	rc = ccv_nnc_cmd_exec(CMD_MAX_POOL_BACKWARD(2, 2), h2, 0, TENSOR_LIST(g, x, y), TENSOR_LIST(dx), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "max pool backward returned %d", rc);
	double want_dx[H * W * C] = {0};
	for (h = 0; h < 2; h++) for (w = 0; w < 3; w++) for (c = 0; c < C; c++)
	{
		int bh = 2 * h, bw = 2 * w;
		for (i = 0; i < 2; i++) for (j = 0; j < 2; j++)
			if (xv(2 * h + i, 2 * w + j, c) > xv(bh, bw, c))
				bh = 2 * h + i, bw = 2 * w + j;
		CHECK(y->data.f32[(h * 3 + w) * C + c] == xv(bh, bw, c), "y[%d,%d,%d]", h, w, c);
		want_dx[(bh * W + bw) * C + c] += g->data.f32[(h * 3 + w) * C + c];
	}
	for (i = 0; i < H * W * C; i++)
		CHECK(dx->data.f32[i] == want_dx[i], "dx[%d] = %g, want %g", i, dx->data.f32[i], want_dx[i]);
	/* Average pool 3x3, stride 1, padding 1: the divisor counts the window's
	 * elements inside the image; the backward reads only g. */
	const ccv_nnc_hint_t h1 = HINT((1, 1), (1, 1));
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, x->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_AVERAGE_POOL_FORWARD(3, 3), h1, 0, TENSOR_LIST(x), TENSOR_LIST(a), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "average pool returned %d", rc);
	ccv_nnc_tensor_t* const ga = ccv_nnc_tensor_new(0, x->info, 0);
	for (i = 0; i < H * W * C; i++)
		ga->data.f32[i] = (float)cos(0.37 * i);
	ccv_nnc_tensor_param_t dap;
	ccv_nnc_hint_tensor_auto(CMD_AVERAGE_POOL_BACKWARD(3, 3), TENSOR_PARAM_LIST(ga->info), h1, &dap, 1);
	CHECK(dap.dim[1] == H && dap.dim[2] == W, "average pool dx is %dx%d", dap.dim[1], dap.dim[2]);
	ccv_nnc_tensor_t* const da = ccv_nnc_tensor_new(0, dap, 0);
	rc = ccv_nnc_cmd_exec(CMD_AVERAGE_POOL_BACKWARD(3, 3), h1, 0, TENSOR_LIST(ga), TENSOR_LIST(da), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "average pool backward returned %d", rc);
	double want_da[H * W * C] = {0};
	for (h = 0; h < H; h++) for (w = 0; w < W; w++) for (c = 0; c < C; c++)
	{
		double s = 0;
		int n = 0;
		for (i = h - 1; i <= h + 1; i++) for (j = w - 1; j <= w + 1; j++)
			if (i >= 0 && i < H && j >= 0 && j < W)
				s += xv(i, j, c), n++;
		const float got = a->data.f32[(h * W + w) * C + c];
		CHECK(fabs(got - s / n) < 1e-5, "avg[%d,%d,%d] = %g, want %g", h, w, c, got, s / n);
		for (i = h - 1; i <= h + 1; i++) for (j = w - 1; j <= w + 1; j++)
			if (i >= 0 && i < H && j >= 0 && j < W)
				want_da[(i * W + j) * C + c] += ga->data.f32[(h * W + w) * C + c] / (double)n;
	}
	for (i = 0; i < H * W * C; i++)
		CHECK(fabs(da->data.f32[i] - want_da[i]) < 1e-5, "da[%d] = %g, want %g", i, da->data.f32[i], want_da[i]);
	ccv_nnc_tensor_free(x); ccv_nnc_tensor_free(y); ccv_nnc_tensor_free(g); ccv_nnc_tensor_free(dx);
	ccv_nnc_tensor_free(a); ccv_nnc_tensor_free(ga); ccv_nnc_tensor_free(da);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
