/*
 * SOFTMAX and SOFTMAX_CROSSENTROPY as a libnnc user writes them: CMD_*(),
 * TENSOR_LIST with libnnc's backward slots (|g|0|y| and
 * |g|0|0|labels|0|softmax|, a NULL g reading as ones) and the loss shape from
 * ccv_nnc_hint_tensor_auto. Values against a double reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

enum { N = 3, K = 7 };

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, K), 0);
	ccv_nnc_tensor_t* const label = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, N), 0);
	int i, j;
	double s[N][K];
	for (i = 0; i < N; i++)
	{
		label->data.i32[i] = (i * 3 + 1) % K;
		double m = -1e30, z = 0;
		for (j = 0; j < K; j++)
		{
			x->data.f32[i * K + j] = (float)(2 * sin(1.3 * i + 0.7 * j));
			m = fmax(m, x->data.f32[i * K + j]);
		}
		for (j = 0; j < K; j++)
			z += exp(x->data.f32[i * K + j] - m);
		for (j = 0; j < K; j++)
			s[i][j] = exp(x->data.f32[i * K + j] - m) / z;
	}
	/* SOFTMAX forward, then backward from |g|0|y|. */
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, x->info, 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, x->info, 0);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, x->info, 0);
	int rc = ccv_nnc_cmd_exec(CMD_SOFTMAX_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(y), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "softmax returned %d", rc);
	for (i = 0; i < N * K; i++)
		g->data.f32[i] = (float)cos(0.9 * i);
	rc = ccv_nnc_cmd_exec(CMD_SOFTMAX_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(g, 0, y), TENSOR_LIST(dx), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "softmax backward returned %d", rc);
	for (i = 0; i < N; i++)
	{
		double dot = 0;
		for (j = 0; j < K; j++)
			dot += g->data.f32[i * K + j] * s[i][j];
		for (j = 0; j < K; j++)
		{
			CHECK(fabs(y->data.f32[i * K + j] - s[i][j]) < 1e-6, "y[%d,%d]", i, j);
			const double want = s[i][j] * (g->data.f32[i * K + j] - dot);
			CHECK(fabs(dx->data.f32[i * K + j] - want) < 1e-6, "dx[%d,%d] = %g, want %g", i, j, dx->data.f32[i * K + j], want);
		}
	}
	/* SOFTMAX_CROSSENTROPY: loss shaped like the labels ([N]), then the
	 * backward in libnnc's six slots, once with g and once without. */
	ccv_nnc_tensor_param_t p[2];
	ccv_nnc_hint_tensor_auto(CMD_SOFTMAX_CROSSENTROPY_FORWARD(), TENSOR_PARAM_LIST(x->info, label->info), ccv_nnc_no_hint, p, 2);
	CHECK(p[0].dim[0] == N && p[0].dim[1] == 0 && p[0].datatype == CCV_32F, "loss is %dx%d", p[0].dim[0], p[0].dim[1]);
	CHECK(p[1].dim[0] == N && p[1].dim[1] == K, "softmax is %dx%d", p[1].dim[0], p[1].dim[1]);
	ccv_nnc_tensor_t* const loss = ccv_nnc_tensor_new(0, p[0], 0);
	ccv_nnc_tensor_t* const sm = ccv_nnc_tensor_new(0, p[1], 0);
	rc = ccv_nnc_cmd_exec(CMD_SOFTMAX_CROSSENTROPY_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x, label), TENSOR_LIST(loss, sm), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "softmax crossentropy returned %d", rc);
	ccv_nnc_tensor_t* const gl = ccv_nnc_tensor_new(0, p[0], 0);
	for (i = 0; i < N; i++)
		gl->data.f32[i] = 0.5f + i;
	ccv_nnc_tensor_t* const dz = ccv_nnc_tensor_new(0, x->info, 0);
	ccv_nnc_tensor_t* const dz1 = ccv_nnc_tensor_new(0, x->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_SOFTMAX_CROSSENTROPY_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(gl, 0, 0, label, 0, sm), TENSOR_LIST(dz), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "softmax crossentropy backward returned %d", rc);
	rc = ccv_nnc_cmd_exec(CMD_SOFTMAX_CROSSENTROPY_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(0, 0, 0, label, 0, sm), TENSOR_LIST(dz1), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "softmax crossentropy backward without g returned %d", rc);
	for (i = 0; i < N; i++)
	{
		const int l = label->data.i32[i];
		CHECK(fabs(loss->data.f32[i] + log(s[i][l])) < 1e-5, "loss[%d] = %g, want %g", i, loss->data.f32[i], -log(s[i][l]));
		for (j = 0; j < K; j++)
		{
			const double d = s[i][j] - (j == l);
			CHECK(fabs(dz->data.f32[i * K + j] - (0.5 + i) * d) < 1e-6, "dz[%d,%d]", i, j);
			CHECK(fabs(dz1->data.f32[i * K + j] - d) < 1e-6, "dz without g [%d,%d]", i, j);
		}
	}
	ccv_nnc_tensor_free(x); ccv_nnc_tensor_free(label); ccv_nnc_tensor_free(y); ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(dx); ccv_nnc_tensor_free(loss); ccv_nnc_tensor_free(sm); ccv_nnc_tensor_free(gl);
	ccv_nnc_tensor_free(dz); ccv_nnc_tensor_free(dz1);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
