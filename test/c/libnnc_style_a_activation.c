/*
 * Activations the way a libnnc program calls them: CMD_*() and TENSOR_LIST
 * with libnnc's backward slots (RELU, LEAKY_RELU, SIGMOID, TANH read |g|0|y|;
 * GELU and SWISH |g|x|), checked against closed forms computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

#define N 13

static int close_to(double got, double want)
{
	return fabs(got - want) <= 1e-6 * (fabs(want) + 1);
}

static double sig(double x) { return 1 / (1 + exp(-x)); }

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, N), 0);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, N), 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, N), 0);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, N), 0);
	int i;
	for (i = 0; i < N; i++)
		x->data.f32[i] = (float)(i - 6) / 2.f + 0.125f, g->data.f32[i] = (float)(i % 4) - 1.5f;
	RUN(CMD_RELU_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(y));
	RUN(CMD_RELU_BACKWARD(), TENSOR_LIST(g, 0, y), TENSOR_LIST(dx));
	for (i = 0; i < N; i++)
		CHECK(y->data.f32[i] == fmaxf(x->data.f32[i], 0) && dx->data.f32[i] == (x->data.f32[i] > 0 ? g->data.f32[i] : 0), "relu %d", i);
	RUN(CMD_LEAKY_RELU_FORWARD(0.1), TENSOR_LIST(x), TENSOR_LIST(y));
	RUN(CMD_LEAKY_RELU_BACKWARD(0.1), TENSOR_LIST(g, 0, y), TENSOR_LIST(dx));
	for (i = 0; i < N; i++)
	{
		const double xv = x->data.f32[i], gv = g->data.f32[i];
		CHECK(close_to(y->data.f32[i], xv > 0 ? xv : 0.1 * xv) && close_to(dx->data.f32[i], xv > 0 ? gv : 0.1 * gv), "leaky relu %d", i);
	}
	RUN(CMD_SIGMOID_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(y));
	RUN(CMD_SIGMOID_BACKWARD(), TENSOR_LIST(g, 0, y), TENSOR_LIST(dx));
	for (i = 0; i < N; i++)
	{
		const double s = sig(x->data.f32[i]);
		CHECK(close_to(y->data.f32[i], s) && close_to(dx->data.f32[i], g->data.f32[i] * s * (1 - s)), "sigmoid %d", i);
	}
	/* SIGMOID's backward takes a NULL g as ones (CCV_NNC_CMD_ATTR_NULL_IS_ONES). */
	RUN(CMD_SIGMOID_BACKWARD(), TENSOR_LIST(0, 0, y), TENSOR_LIST(dx));
	CHECK(close_to(dx->data.f32[2], sig(x->data.f32[2]) * (1 - sig(x->data.f32[2]))), "sigmoid, NULL g");
	RUN(CMD_TANH_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(y));
	RUN(CMD_TANH_BACKWARD(), TENSOR_LIST(g, 0, y), TENSOR_LIST(dx));
	for (i = 0; i < N; i++)
	{
		const double t = tanh(x->data.f32[i]);
		CHECK(close_to(y->data.f32[i], t) && close_to(dx->data.f32[i], g->data.f32[i] * (1 - t * t)), "tanh %d", i);
	}
	RUN(CMD_GELU_FORWARD(0), TENSOR_LIST(x), TENSOR_LIST(y));
	RUN(CMD_GELU_BACKWARD(0), TENSOR_LIST(g, x), TENSOR_LIST(dx));
	for (i = 0; i < N; i++)
	{
		const double xv = x->data.f32[i], cdf = 0.5 * erfc(-xv / sqrt(2)), pdf = exp(-0.5 * xv * xv) / sqrt(2 * M_PI);
		CHECK(close_to(y->data.f32[i], xv * cdf) && close_to(dx->data.f32[i], g->data.f32[i] * (cdf + xv * pdf)), "gelu %d", i);
	}
	RUN(CMD_SWISH_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(y));
	RUN(CMD_SWISH_BACKWARD(), TENSOR_LIST(g, x), TENSOR_LIST(dx));
	for (i = 0; i < N; i++)
	{
		const double xv = x->data.f32[i], s = sig(xv);
		CHECK(close_to(y->data.f32[i], xv * s) && close_to(dx->data.f32[i], g->data.f32[i] * s * (1 + xv * (1 - s))), "swish %d", i);
	}
	/* In place, libnnc's rule: y over x, dx over g; nothing else. */
	RUN(CMD_RELU_FORWARD(), TENSOR_LIST(x), TENSOR_LIST(x));
	CHECK(x->data.f32[0] == 0 && x->data.f32[12] > 0, "relu in place");
	CHECK(ccv_nnc_cmd_allow_inplace(CMD_RELU_BACKWARD(), 0, 3, 0, 1) && !ccv_nnc_cmd_allow_inplace(CMD_RELU_BACKWARD(), 2, 3, 0, 1), "pairs");
	const uint64_t g_y = 0x5, g_x = 0x3, one = 1;
	CHECK(ccv_nnc_cmd_bitmask(CMD_RELU_BACKWARD(), 3, 1, &g_y, 1, &one, 1) && ccv_nnc_cmd_bitmask(CMD_GELU_BACKWARD(0), 3, 1, &g_x, 1, &one, 1), "bitmasks");
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(dx);
	printf("libnnc_style_a_activation: %d failed\n", failed);
	return failed ? 1 : 0;
}
