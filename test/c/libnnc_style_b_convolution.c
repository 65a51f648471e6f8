/*
 * CONVOLUTION as a libnnc user writes it: CMD_CONVOLUTION_*(), TENSOR_LIST,
 * libnnc's slots (|g|x|w|bias|y| -> |dx|dw|dbias|), and the backward's window
 * taken from the weights even when the command lists it in another order.
 * Values against a double reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

enum { H = 7, W = 6, C = 2, K = 4, KH = 5, KW = 3, OH = H - KH + 1, OW = W - KW + 1 };

static double xv(int h, int w, int c) { return sin(0.3 * h + 0.7 * w + 1.1 * c); }
static double wv(int k, int i, int j, int c) { return cos(0.5 * k + 0.2 * i - 0.3 * j + 0.9 * c); }
static double gv(int h, int w, int k) { return 0.1 * (h + 2 * w - k) + 0.05; }

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, H, W, C), 0);
	ccv_nnc_tensor_t* const w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, K, KH, KW, C), 0);
	ccv_nnc_tensor_t* const bias = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, K), 0);
	int h, v, c, k, i, j;
	for (h = 0; h < H; h++) for (v = 0; v < W; v++) for (c = 0; c < C; c++)
		x->data.f32[(h * W + v) * C + c] = (float)xv(h, v, c);
	for (k = 0; k < K; k++) for (i = 0; i < KH; i++) for (j = 0; j < KW; j++) for (c = 0; c < C; c++)
		w->data.f32[((k * KH + i) * KW + j) * C + c] = (float)wv(k, i, j, c);
	for (k = 0; k < K; k++)
		bias->data.f32[k] = 0.25f * k;
	/* Forward: shape from ccv_nnc_hint_tensor_auto, then the values. */
	const ccv_nnc_cmd_t forw = CMD_CONVOLUTION_FORWARD(1, K, KH, KW, C);
	ccv_nnc_tensor_param_t yp;
	ccv_nnc_hint_tensor_auto(forw, TENSOR_PARAM_LIST(x->info, w->info, bias->info), ccv_nnc_no_hint, &yp, 1);
	CHECK(yp.dim[0] == 1 && yp.dim[1] == OH && yp.dim[2] == OW && yp.dim[3] == K && yp.dim[4] == 0, "y is %dx%dx%dx%d", yp.dim[0], yp.dim[1], yp.dim[2], yp.dim[3]);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, yp, 0);
	int rc = ccv_nnc_cmd_exec(forw, ccv_nnc_no_hint, 0, TENSOR_LIST(x, w, bias), TENSOR_LIST(y), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "forward returned %d", rc);
	for (h = 0; h < OH; h++) for (v = 0; v < OW; v++) for (k = 0; k < K; k++)
	{
		double s = 0.25 * k;
		for (i = 0; i < KH; i++) for (j = 0; j < KW; j++) for (c = 0; c < C; c++)
			s += xv(h + i, v + j, c) * (float)wv(k, i, j, c);
		const float got = y->data.f32[(h * OW + v) * K + k];
		CHECK(fabs(got - s) < 1e-4 * (1 + fabs(s)), "y[%d,%d,%d] = %g, want %g", h, v, k, got, s);
	}
	/* Backward with the window listed in another order, as libnnc programs
	 * do: the weights (4x5x3x2) decide. All five input slots filled. */
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, yp, 0);
	for (h = 0; h < OH; h++) for (v = 0; v < OW; v++) for (k = 0; k < K; k++)
		g->data.f32[(h * OW + v) * K + k] = (float)gv(h, v, k);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, x->info, 0);
	ccv_nnc_tensor_t* const dw = ccv_nnc_tensor_new(0, w->info, 0);
	ccv_nnc_tensor_t* const db = ccv_nnc_tensor_new(0, bias->info, 0);
	const ccv_nnc_cmd_t back = CMD_CONVOLUTION_BACKWARD(1, 4, 2, 3, 5);
	ccv_nnc_tensor_param_t bp[3];
	ccv_nnc_hint_tensor_auto(back, TENSOR_PARAM_LIST(g->info, x->info, w->info, bias->info, y->info), ccv_nnc_no_hint, bp, 3);
	CHECK(bp[0].dim[1] == H && bp[1].dim[1] == KH && bp[2].dim[0] == K, "backward shapes");
	rc = ccv_nnc_cmd_exec(back, ccv_nnc_no_hint, 0, TENSOR_LIST(g, x, w, bias, y), TENSOR_LIST(dx, dw, db), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "backward returned %d", rc);
	for (h = 0; h < H; h++) for (v = 0; v < W; v++) for (c = 0; c < C; c++)
	{
		double s = 0;
		for (i = 0; i < KH; i++) for (j = 0; j < KW; j++)
			if (h - i >= 0 && h - i < OH && v - j >= 0 && v - j < OW)
				for (k = 0; k < K; k++)
					s += (float)gv(h - i, v - j, k) * (float)wv(k, i, j, c);
		const float got = dx->data.f32[(h * W + v) * C + c];
		CHECK(fabs(got - s) < 1e-4 * (1 + fabs(s)), "dx[%d,%d,%d] = %g, want %g", h, v, c, got, s);
	}
	for (k = 0; k < K; k++)
	{
		double sb = 0;
		for (h = 0; h < OH; h++) for (v = 0; v < OW; v++)
			sb += (float)gv(h, v, k);
		CHECK(fabs(db->data.f32[k] - sb) < 1e-4 * (1 + fabs(sb)), "dbias[%d] = %g, want %g", k, db->data.f32[k], sb);
		for (i = 0; i < KH; i++) for (j = 0; j < KW; j++) for (c = 0; c < C; c++)
		{
			double s = 0;
			for (h = 0; h < OH; h++) for (v = 0; v < OW; v++)
				s += (float)gv(h, v, k) * (float)xv(h + i, v + j, c);
			const float got = dw->data.f32[((k * KH + i) * KW + j) * C + c];
			CHECK(fabs(got - s) < 1e-4 * (1 + fabs(s)), "dw[%d,%d,%d,%d] = %g, want %g", k, i, j, c, got, s);
		}
	}
	/* dx alone from |g|0|w| (libnnc's "ignore weight's gradient" pattern). */
	uint64_t in_mask = 5, out_mask = 1;
	CHECK(ccv_nnc_cmd_bitmask(back, 5, 3, &in_mask, 1, &out_mask, 1), "g, w -> dx");
	ccv_nnc_tensor_t* const dx2 = ccv_nnc_tensor_new(0, x->info, 0);
	rc = ccv_nnc_cmd_exec(back, ccv_nnc_no_hint, 0, TENSOR_LIST(g, 0, w), TENSOR_LIST(dx2), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "dx-only backward returned %d", rc);
	for (i = 0; i < H * W * C; i++)
		CHECK(dx2->data.f32[i] == dx->data.f32[i], "dx2[%d]", i);
	ccv_nnc_tensor_free(x); ccv_nnc_tensor_free(w); ccv_nnc_tensor_free(bias); ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(g); ccv_nnc_tensor_free(dx); ccv_nnc_tensor_free(dw); ccv_nnc_tensor_free(db); ccv_nnc_tensor_free(dx2);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
