/*
 * BATCH_NORM and LAYER_NORM as a libnnc user writes them: CMD_*_NORM_*(),
 * TENSOR_LIST with libnnc's slots (the running statistics updated in place;
 * the backward's 15 and 9 slots with the forward's tensors where they
 * belong) and shapes from ccv_nnc_hint_tensor_auto. Values against a double
 * reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"
#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-4 * (1 + fabs((double)(b))))

enum { N = 6, C = 4 };

/* Normalise n values (stride s) of x: mean, inverse std, and the backward of
 * y = xhat * scale + bias for a gradient g, into dx. */
static void norm_ref(const float* x, const float* g, int n, int s, double scale, double eps, double* mean,
	double* inv, double* dx, double* dscale, double* dbias)
{
	double m = 0, v = 0, mg = 0, mgx = 0;
	int i;
	for (i = 0; i < n; i++) m += x[i * s] / n;
	for (i = 0; i < n; i++) v += (x[i * s] - m) * (x[i * s] - m) / n;
	const double r = 1 / sqrt(v + eps);
	for (i = 0; i < n; i++) mg += g[i * s] / n, mgx += g[i * s] * (x[i * s] - m) * r / n;
	for (i = 0; i < n; i++) dx[i * s] = r * scale * (g[i * s] - mg - (x[i * s] - m) * r * mgx);
	*mean = m, *inv = r, *dscale = n * mgx, *dbias = n * mg;
}

int main(void)
{
	ccv_nnc_init();
	int i, c, rc;
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, C), 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, C), 0);
	for (i = 0; i < N * C; i++)
		x->data.f32[i] = (float)sin(1.7 * i), g->data.f32[i] = (float)cos(0.6 * i);
	/* Batch norm over axis 0: per-channel tensors of 1 x C from tensor_auto. */
	const ccv_nnc_cmd_t bf = CMD_BATCH_NORM_FORWARD(1e-4, 0, 0.9, 0);
	ccv_nnc_tensor_param_t bp[5];
	ccv_nnc_hint_tensor_auto(bf, TENSOR_PARAM_LIST(x->info, x->info, x->info, x->info, x->info), ccv_nnc_no_hint, bp, 5);
	CHECK(bp[0].dim[0] == N && bp[3].dim[0] == 1 && bp[3].dim[1] == C, "batch norm shapes");
	ccv_nnc_tensor_t* const scale = ccv_nnc_tensor_new(0, bp[1], 0);
	ccv_nnc_tensor_t* const bias = ccv_nnc_tensor_new(0, bp[1], 0);
	ccv_nnc_tensor_t* const mean = ccv_nnc_tensor_new(0, bp[1], 0);
	ccv_nnc_tensor_t* const var = ccv_nnc_tensor_new(0, bp[1], 0);
	ccv_nnc_tensor_t* const saved_mean = ccv_nnc_tensor_new(0, bp[3], 0);
	ccv_nnc_tensor_t* const saved_inv = ccv_nnc_tensor_new(0, bp[4], 0);
	for (c = 0; c < C; c++)
		scale->data.f32[c] = 1 + 0.25f * c, bias->data.f32[c] = 0.1f * c, mean->data.f32[c] = 0, var->data.f32[c] = 1;
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, x->info, 0);
	rc = ccv_nnc_cmd_exec(bf, ccv_nnc_no_hint, 0, TENSOR_LIST(x, scale, bias, mean, var), TENSOR_LIST(y, mean, var, saved_mean, saved_inv), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "batch norm returned %d", rc);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, x->info, 0);
	ccv_nnc_tensor_t* const dscale = ccv_nnc_tensor_new(0, bp[1], 0);
	ccv_nnc_tensor_t* const dbias = ccv_nnc_tensor_new(0, bp[1], 0);
	rc = ccv_nnc_cmd_exec(CMD_BATCH_NORM_BACKWARD(1e-4, 0, 0.9, 0), ccv_nnc_no_hint, 0,
		TENSOR_LIST(g, 0, 0, 0, 0, x, scale, bias, mean, var, y, mean, var, saved_mean, saved_inv), TENSOR_LIST(dx, dscale, dbias), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "batch norm backward returned %d", rc);
	for (c = 0; c < C; c++)
	{
		double m, r, want_dx[N * C], ds, dbb;
		norm_ref(x->data.f32 + c, g->data.f32 + c, N, C, scale->data.f32[c], 1e-4, &m, &r, want_dx + c, &ds, &dbb);
		CHECK(NEAR(saved_mean->data.f32[c], m) && NEAR(saved_inv->data.f32[c], r), "saved statistics of %d", c);
		CHECK(NEAR(mean->data.f32[c], (1 - 0.9) * m), "running mean of %d = %g", c, mean->data.f32[c]);
		CHECK(NEAR(dscale->data.f32[c], ds) && NEAR(dbias->data.f32[c], dbb), "dscale / dbias of %d", c);
		for (i = 0; i < N; i++)
		{
			CHECK(NEAR(y->data.f32[i * C + c], (x->data.f32[i * C + c] - m) * r * scale->data.f32[c] + bias->data.f32[c]), "y[%d,%d]", i, c);
			CHECK(NEAR(dx->data.f32[i * C + c], want_dx[i * C + c]), "dx[%d,%d] = %g, want %g", i, c, dx->data.f32[i * C + c], want_dx[i * C + c]);
		}
	}
	/* Layer norm over axis 1 with scale / bias of 1 x C; saved statistics N x 1. */
	const ccv_nnc_cmd_t lf = CMD_LAYER_NORM_FORWARD(1e-4, 1, 1);
	ccv_nnc_tensor_param_t lp[3];
	ccv_nnc_hint_tensor_auto(lf, TENSOR_PARAM_LIST(x->info, scale->info, bias->info), ccv_nnc_no_hint, lp, 3);
	CHECK(lp[1].dim[0] == N && lp[1].dim[1] == 1, "layer norm statistics are %dx%d", lp[1].dim[0], lp[1].dim[1]);
	ccv_nnc_tensor_t* const lm = ccv_nnc_tensor_new(0, lp[1], 0);
	ccv_nnc_tensor_t* const li = ccv_nnc_tensor_new(0, lp[2], 0);
	rc = ccv_nnc_cmd_exec(lf, ccv_nnc_no_hint, 0, TENSOR_LIST(x, scale, bias), TENSOR_LIST(y, lm, li), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "layer norm returned %d", rc);
	rc = ccv_nnc_cmd_exec(CMD_LAYER_NORM_BACKWARD(1e-4, 1, 1), ccv_nnc_no_hint, 0,
		TENSOR_LIST(g, 0, 0, x, scale, bias, y, lm, li), TENSOR_LIST(dx, dscale, dbias), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "layer norm backward returned %d", rc);
	double ds[C] = {0}, dbb[C] = {0};
	for (i = 0; i < N; i++)
	{
		/* With h = g * scale the row's dx is norm_ref's with scale 1 on h. */
		float h[C];
		double m, r, want_dx[C], unused0, unused1;
		for (c = 0; c < C; c++)
			h[c] = g->data.f32[i * C + c] * scale->data.f32[c];
		norm_ref(x->data.f32 + i * C, h, C, 1, 1, 1e-4, &m, &r, want_dx, &unused0, &unused1);
		CHECK(NEAR(lm->data.f32[i], m) && NEAR(li->data.f32[i], r), "layer statistics of %d", i);
		for (c = 0; c < C; c++)
		{
			const double xhat = (x->data.f32[i * C + c] - m) * r;
			CHECK(NEAR(y->data.f32[i * C + c], xhat * scale->data.f32[c] + bias->data.f32[c]), "layer y[%d,%d]", i, c);
			CHECK(NEAR(dx->data.f32[i * C + c], want_dx[c]), "layer dx[%d,%d] = %g, want %g", i, c, dx->data.f32[i * C + c], want_dx[c]);
			ds[c] += g->data.f32[i * C + c] * xhat, dbb[c] += g->data.f32[i * C + c];
		}
	}
	for (c = 0; c < C; c++)
		CHECK(NEAR(dscale->data.f32[c], ds[c]) && NEAR(dbias->data.f32[c], dbb[c]), "layer dscale / dbias of %d", c);
	ccv_nnc_tensor_free(x); ccv_nnc_tensor_free(g); ccv_nnc_tensor_free(scale); ccv_nnc_tensor_free(bias);
	ccv_nnc_tensor_free(mean); ccv_nnc_tensor_free(var); ccv_nnc_tensor_free(saved_mean); ccv_nnc_tensor_free(saved_inv);
	ccv_nnc_tensor_free(y); ccv_nnc_tensor_free(dx); ccv_nnc_tensor_free(dscale); ccv_nnc_tensor_free(dbias);
	ccv_nnc_tensor_free(lm); ccv_nnc_tensor_free(li);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
