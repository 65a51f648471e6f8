/*
 * The optimisers as a libnnc user writes them: CMD_SGD_FORWARD /
 * CMD_ADAM_FORWARD / CMD_RMSPROP_FORWARD with libnnc's slots (|g|a|state...|
 * -> |a|state...|, updated in place, output i over input i + 1). Values
 * against a double reference computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

enum { N = 9, STEPS = 3 };

static ccv_nnc_tensor_t* filled(double v)
{
	ccv_nnc_tensor_t* const t = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N), 0);
	int i;
	for (i = 0; i < N; i++)
		t->data.f32[i] = (float)v;
	return t;
}

int main(void)
{
	ccv_nnc_init();
	int i, step, rc;
	ccv_nnc_tensor_t* const g = filled(0);
	ccv_nnc_tensor_t *const a1 = filled(0), *const m1 = filled(0);
	ccv_nnc_tensor_t *const a2 = filled(0), *const m2 = filled(0), *const v2 = filled(0);
	ccv_nnc_tensor_t *const a3 = filled(0), *const m3 = filled(0), *const v3 = filled(0);
	double ra1[N], rm1[N], ra2[N], rm2[N], rv2[N], ra3[N], rm3[N], rv3[N];
	for (i = 0; i < N; i++)
	{
		a1->data.f32[i] = a2->data.f32[i] = a3->data.f32[i] = (float)(0.5 * cos(i));
		ra1[i] = ra2[i] = ra3[i] = a1->data.f32[i];
		rm1[i] = rm2[i] = rv2[i] = rm3[i] = rv3[i] = 0;
	}
	for (step = 1; step <= STEPS; step++)
	{
		for (i = 0; i < N; i++)
			g->data.f32[i] = (float)sin(0.7 * i + step);
		/* SGD, momentum 0.9, dampening 0, decay 0.01, scale 0.5. */
		rc = ccv_nnc_cmd_exec(CMD_SGD_FORWARD(0, 0.1, 0.5, 0.01, 0.9, 0), ccv_nnc_no_hint, 0, TENSOR_LIST(g, a1, m1), TENSOR_LIST(a1, m1), 0);
		CHECK(rc == CCV_NNC_EXEC_SUCCESS, "sgd returned %d", rc);
		/* ADAM, no amsgrad. */
		rc = ccv_nnc_cmd_exec(CMD_ADAM_FORWARD(step, 0.05, 0.9, 0.999, 0, 1e-8, 0), ccv_nnc_no_hint, 0, TENSOR_LIST(g, a2, m2, v2), TENSOR_LIST(a2, m2, v2), 0);
		CHECK(rc == CCV_NNC_EXEC_SUCCESS, "adam returned %d", rc);
		/* RMSPROP, momentum 0.5. */
		rc = ccv_nnc_cmd_exec(CMD_RMSPROP_FORWARD(0.01, 0, 0.9, 0.5, 1e-8), ccv_nnc_no_hint, 0, TENSOR_LIST(g, a3, m3, v3), TENSOR_LIST(a3, m3, v3), 0);
		CHECK(rc == CCV_NNC_EXEC_SUCCESS, "rmsprop returned %d", rc);
		for (i = 0; i < N; i++)
		{
			const double gv = g->data.f32[i];
			const double grad = 0.5 * gv + 0.01 * ra1[i];
			rm1[i] = 0.9 * rm1[i] + grad;
			ra1[i] -= 0.1 * rm1[i];
			rm2[i] = 0.9 * rm2[i] + 0.1 * gv;
			rv2[i] = 0.999 * rv2[i] + 0.001 * gv * gv;
			ra2[i] -= 0.05 / (1 - pow(0.9, step)) * rm2[i] / (sqrt(rv2[i]) / sqrt(1 - pow(0.999, step)) + 1e-8);
			rv3[i] = 0.9 * rv3[i] + 0.1 * gv * gv;
			rm3[i] = 0.5 * rm3[i] + gv / (sqrt(rv3[i]) + 1e-8);
			ra3[i] -= 0.01 * rm3[i];
		}
	}
	for (i = 0; i < N; i++)
	{
		CHECK(fabs(a1->data.f32[i] - ra1[i]) < 1e-5 && fabs(m1->data.f32[i] - rm1[i]) < 1e-5, "sgd[%d] = %g, want %g", i, a1->data.f32[i], ra1[i]);
		CHECK(fabs(a2->data.f32[i] - ra2[i]) < 1e-5 && fabs(v2->data.f32[i] - rv2[i]) < 1e-6, "adam[%d] = %g, want %g", i, a2->data.f32[i], ra2[i]);
		CHECK(fabs(a3->data.f32[i] - ra3[i]) < 1e-5 && fabs(m3->data.f32[i] - rm3[i]) < 1e-4, "rmsprop[%d] = %g, want %g", i, a3->data.f32[i], ra3[i]);
	}
	/* Output i may be input i + 1, and nothing else (libnnc's rule). */
	const ccv_nnc_cmd_t sgd = CMD_SGD_FORWARD(0, 0.1, 1, 0, 0.9, 0);
	CHECK(ccv_nnc_cmd_allow_inplace(sgd, 1, 3, 0, 2) && ccv_nnc_cmd_allow_inplace(sgd, 2, 3, 1, 2), "in place pairs");
	CHECK(!ccv_nnc_cmd_allow_inplace(sgd, 0, 3, 0, 2), "g is not written over");
	ccv_nnc_tensor_free(g); ccv_nnc_tensor_free(a1); ccv_nnc_tensor_free(m1); ccv_nnc_tensor_free(a2);
	ccv_nnc_tensor_free(m2); ccv_nnc_tensor_free(v2); ccv_nnc_tensor_free(a3); ccv_nnc_tensor_free(m3); ccv_nnc_tensor_free(v3);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
