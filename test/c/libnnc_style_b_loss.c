/*
 * The loss commands as a libnnc user writes them: CMD_*(), TENSOR_LIST with
 * libnnc's backward slots (|g|x|y|, |g|0|0|y|0|sigmoid|, a NULL g reading as
 * ones) and loss shapes from ccv_nnc_hint_tensor_auto. Values against a
 * double reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"
#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol) * (1 + fabs((double)(b))))

enum { N = 3, K = 5 };

int main(void)
{
	ccv_nnc_init();
	int i, j, rc;
	ccv_nnc_tensor_t* const p = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, K), 0);
	ccv_nnc_tensor_t* const z = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, K), 0);
	ccv_nnc_tensor_t* const t = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, K), 0);
	ccv_nnc_tensor_t* const label = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, N), 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, 1), 0);
	for (i = 0; i < N; i++)
	{
		label->data.i32[i] = (2 * i + 1) % K;
		g->data.f32[i] = 1.5f - i;
		for (j = 0; j < K; j++)
		{
			p->data.f32[i * K + j] = (float)(0.1 + 0.8 * (0.5 + 0.5 * sin(i * 2.1 + j)));
			z->data.f32[i * K + j] = (float)(3 * cos(i + 1.7 * j));
			t->data.f32[i * K + j] = (float)(0.5 + 0.5 * sin(0.3 * i - j));
		}
	}
	/* CATEGORICAL_CROSSENTROPY: class indices [N] give a loss of [N]; the
	 * backward reads |g|p|labels|. */
	ccv_nnc_tensor_param_t lp;
	ccv_nnc_hint_tensor_auto(CMD_CATEGORICAL_CROSSENTROPY_FORWARD(), TENSOR_PARAM_LIST(p->info, label->info), ccv_nnc_no_hint, &lp, 1);
	CHECK(lp.dim[0] == N && lp.dim[1] == 0, "categorical loss is %dx%d", lp.dim[0], lp.dim[1]);
	ccv_nnc_tensor_t* const cl = ccv_nnc_tensor_new(0, lp, 0);
	rc = ccv_nnc_cmd_exec(CMD_CATEGORICAL_CROSSENTROPY_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(p, label), TENSOR_LIST(cl), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "categorical returned %d", rc);
	ccv_nnc_tensor_t* const dp = ccv_nnc_tensor_new(0, p->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_CATEGORICAL_CROSSENTROPY_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(g, p, label), TENSOR_LIST(dp), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "categorical backward returned %d", rc);
	for (i = 0; i < N; i++)
	{
		const int l = label->data.i32[i];
		CHECK(NEAR(cl->data.f32[i], -log(p->data.f32[i * K + l]), 1e-5), "categorical loss[%d]", i);
		for (j = 0; j < K; j++)
			CHECK(NEAR(dp->data.f32[i * K + j], j == l ? -g->data.f32[i] / p->data.f32[i * K + j] : 0, 1e-5), "dp[%d,%d]", i, j);
	}
	/* SIGMOID_BINARY_CROSSENTROPY: |z|y| -> |loss|sigmoid|; the backward
	 * reads y and the saved sigmoid from slots 3 and 5. */
	ccv_nnc_tensor_param_t sp[2];
	ccv_nnc_hint_tensor_auto(CMD_SIGMOID_BINARY_CROSSENTROPY_FORWARD(2), TENSOR_PARAM_LIST(z->info, t->info), ccv_nnc_no_hint, sp, 2);
	CHECK(sp[0].dim[0] == N && sp[0].dim[1] == 1 && sp[1].dim[1] == K, "sigmoid loss shapes");
	ccv_nnc_tensor_t* const sl = ccv_nnc_tensor_new(0, sp[0], 0);
	ccv_nnc_tensor_t* const sg = ccv_nnc_tensor_new(0, sp[1], 0);
	rc = ccv_nnc_cmd_exec(CMD_SIGMOID_BINARY_CROSSENTROPY_FORWARD(2), ccv_nnc_no_hint, 0, TENSOR_LIST(z, t), TENSOR_LIST(sl, sg), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "sigmoid bce returned %d", rc);
	ccv_nnc_tensor_t* const dz = ccv_nnc_tensor_new(0, z->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_SIGMOID_BINARY_CROSSENTROPY_BACKWARD(2), ccv_nnc_no_hint, 0, TENSOR_LIST(g, 0, 0, t, 0, sg), TENSOR_LIST(dz), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "sigmoid bce backward returned %d", rc);
	for (i = 0; i < N; i++)
	{
		double l = 0;
		for (j = 0; j < K; j++)
		{
			const double zz = z->data.f32[i * K + j], y = t->data.f32[i * K + j], s = 1 / (1 + exp(-zz));
			l += -(2 * y * log(s) + (1 - y) * log(1 - s));
			CHECK(NEAR(sg->data.f32[i * K + j], s, 1e-6), "sigmoid[%d,%d]", i, j);
			CHECK(NEAR(dz->data.f32[i * K + j], g->data.f32[i] * (s * (2 * y + 1 - y) - 2 * y), 1e-5), "dz[%d,%d]", i, j);
		}
		CHECK(NEAR(sl->data.f32[i], l, 1e-5), "sigmoid bce loss[%d] = %g, want %g", i, sl->data.f32[i], l);
	}
	/* MSE (mean) with |g|a|b| -> |da|db|; BINARY_CROSSENTROPY with g NULL
	 * (ones); SMOOTH_L1 with the loss in slot 3. */
	ccv_nnc_tensor_t* const ml = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, 1), 0);
	ccv_nnc_tensor_t* const da = ccv_nnc_tensor_new(0, p->info, 0);
	ccv_nnc_tensor_t* const db = ccv_nnc_tensor_new(0, p->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_MEAN), ccv_nnc_no_hint, 0, TENSOR_LIST(p, t), TENSOR_LIST(ml), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "mse returned %d", rc);
	rc = ccv_nnc_cmd_exec(CMD_MSE_BACKWARD(CCV_NNC_MSE_REDUCE_MEAN), ccv_nnc_no_hint, 0, TENSOR_LIST(g, p, t), TENSOR_LIST(da, db), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "mse backward returned %d", rc);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, p->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_BINARY_CROSSENTROPY_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(0, p, t), TENSOR_LIST(dx), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "bce backward returned %d", rc);
	ccv_nnc_tensor_t* const hl = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, 1), 0);
	ccv_nnc_tensor_t* const dh = ccv_nnc_tensor_new(0, p->info, 0);
	rc = ccv_nnc_cmd_exec(CMD_SMOOTH_L1_FORWARD(0.2), ccv_nnc_no_hint, 0, TENSOR_LIST(p, t), TENSOR_LIST(hl), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "smooth l1 returned %d", rc);
	rc = ccv_nnc_cmd_exec(CMD_SMOOTH_L1_BACKWARD(0.2), ccv_nnc_no_hint, 0, TENSOR_LIST(g, p, t, hl), TENSOR_LIST(dh), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "smooth l1 backward returned %d", rc);
	for (i = 0; i < N; i++)
	{
		double m = 0, h = 0;
		for (j = 0; j < K; j++)
		{
			const double a = p->data.f32[i * K + j], b = t->data.f32[i * K + j], d = a - b;
			m += d * d / K;
			h += fabs(d) < 0.2 ? d * d / 0.4 : fabs(d) - 0.1;
			CHECK(NEAR(da->data.f32[i * K + j], 2 * g->data.f32[i] * d / K, 1e-5), "da[%d,%d]", i, j);
			CHECK(NEAR(db->data.f32[i * K + j], -2 * g->data.f32[i] * d / K, 1e-5), "db[%d,%d]", i, j);
			CHECK(NEAR(dx->data.f32[i * K + j], -b / a + (1 - b) / (1 - a), 1e-5), "bce dx[%d,%d]", i, j);
			CHECK(NEAR(dh->data.f32[i * K + j], g->data.f32[i] * (fabs(d) < 0.2 ? d / 0.2 : (d > 0 ? 1 : -1)), 1e-5), "smooth l1 d[%d,%d]", i, j);
		}
		CHECK(NEAR(ml->data.f32[i], m, 1e-5), "mse[%d]", i);
		CHECK(NEAR(hl->data.f32[i], h, 1e-5), "smooth l1[%d]", i);
	}
	ccv_nnc_tensor_free(p); ccv_nnc_tensor_free(z); ccv_nnc_tensor_free(t); ccv_nnc_tensor_free(label);
	ccv_nnc_tensor_free(g); ccv_nnc_tensor_free(cl); ccv_nnc_tensor_free(dp); ccv_nnc_tensor_free(sl);
	ccv_nnc_tensor_free(sg); ccv_nnc_tensor_free(dz); ccv_nnc_tensor_free(ml); ccv_nnc_tensor_free(da);
	ccv_nnc_tensor_free(db); ccv_nnc_tensor_free(dx); ccv_nnc_tensor_free(hl); ccv_nnc_tensor_free(dh);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
