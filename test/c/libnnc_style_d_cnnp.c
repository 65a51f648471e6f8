/*
 * Models the way a libnnc program writes them: layers in MODEL_LIST with
 * DIM_ALLOC and HINT, a functional model from ccv_cnnp_input and
 * ccv_cnnp_model_apply with MODEL_IO_LIST, compile with CMD_SGD_FORWARD and
 * CMD_SOFTMAX_CROSSENTROPY_FORWARD(), fit with TENSOR_LIST, evaluate with a
 * designated-initialiser ccv_cnnp_evaluate_param_t, parameters through
 * ccv_cnnp_model_parameters. Checked: the functional model's output against
 * its parameters in double precision, and training on two Gaussian blobs
 * (fixed seed) reaching an accuracy a wrong gradient could not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

static unsigned rng = 12345;
static float uniform(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / 16777216.f;
}

static float gaussian(void)
{
	const float u1 = uniform() + 1e-7f, u2 = uniform();
	return sqrtf(-2 * logf(u1)) * cosf(6.2831853f * u2);
}

/* y = dense2(relu(dense1(x))) + x, checked against its parameters. */
static void functional(void)
{
	ccv_cnnp_model_io_t x = ccv_cnnp_input();
	ccv_cnnp_model_io_t h = ccv_cnnp_model_apply(ccv_cnnp_dense(6, 0, 0, 1, "d1"), MODEL_IO_LIST(x));
	ccv_cnnp_model_io_t r = ccv_cnnp_model_apply(ccv_cnnp_relu(0), MODEL_IO_LIST(h));
	ccv_cnnp_model_io_t o = ccv_cnnp_model_apply(ccv_cnnp_dense(3, 1, 0, 1, "d2"), MODEL_IO_LIST(r));
	ccv_cnnp_model_io_t y = ccv_cnnp_model_apply(ccv_cnnp_add(1, 1, 0), MODEL_IO_LIST(o, x));
	ccv_cnnp_model_t* model = ccv_cnnp_model_new(MODEL_IO_LIST(x), MODEL_IO_LIST(y), 1, "residual");
	const ccv_nnc_tensor_param_t input = CPU_TENSOR_NHWC(32F, 2, 3);
	ccv_cnnp_model_compile(model, &input, 1, CMD_SGD_FORWARD(0, 0.1, 1, 0, 0, 0), CMD_NOOP());
	CHECK(ccv_cnnp_model_parameter_count(model) == 3, "d1 weight and bias, d2 weight");
	ccv_nnc_tensor_t* xt = ccv_nnc_tensor_new(0, input, 0);
	ccv_nnc_tensor_t* yt = ccv_nnc_tensor_new(0, input, 0);
	int i, j, k;
	for (i = 0; i < 6; i++)
		xt->data.f32[i] = uniform() * 2 - 1;
	ccv_cnnp_model_evaluate(model, (ccv_cnnp_evaluate_param_t){ .is_test = 1 }, TENSOR_LIST(xt), TENSOR_LIST(yt), 0, 0);
	CHECK(ccv_nnc_error_message()[0] == 0, "evaluate");
	ccv_nnc_tensor_t* w1 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 6, 3), 0);
	ccv_nnc_tensor_t* b1 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 6), 0);
	ccv_nnc_tensor_t* w2 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 6), 0);
	ccv_cnnp_model_parameter_copy(model, ccv_cnnp_model_parameters(model, CCV_CNNP_PARAMETER_SELECT_WEIGHT, 0), w1);
	ccv_cnnp_model_parameter_copy(model, ccv_cnnp_model_parameters(model, CCV_CNNP_PARAMETER_SELECT_BIAS, 0), b1);
	ccv_cnnp_model_parameter_copy(model, ccv_cnnp_model_parameters(model, CCV_CNNP_PARAMETER_SELECT_WEIGHT, 1), w2);
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
		{
			double s = xt->data.f32[i * 3 + j];
			for (k = 0; k < 6; k++)
			{
				double hk = b1->data.f32[k];
				int c;
				for (c = 0; c < 3; c++)
					hk += xt->data.f32[i * 3 + c] * w1->data.f32[k * 3 + c];
				s += (hk > 0 ? hk : 0) * w2->data.f32[j * 6 + k];
			}
			CHECK(fabs(yt->data.f32[i * 3 + j] - s) < 1e-5, "y[%d, %d] = %g, want %g", i, j, yt->data.f32[i * 3 + j], s);
		}
	ccv_nnc_tensor_free(w1);
	ccv_nnc_tensor_free(b1);
	ccv_nnc_tensor_free(w2);
	ccv_nnc_tensor_free(xt);
	ccv_nnc_tensor_free(yt);
	ccv_cnnp_model_free(model);
}

/* Two blobs in the plane, as 1x4x4 images (the point repeated), through a
 * small convolutional network: the classes must come apart. */
static void train(void)
{
	enum { N = 32, STEPS = 60 };
	ccv_cnnp_model_t* model = ccv_cnnp_sequential_new(MODEL_LIST(
		ccv_cnnp_convolution(1, 4, DIM_ALLOC(3, 3), DIM_ALLOC(), 0, HINT((1, 1), (1, 1)), 0, 1, "conv"),
		ccv_cnnp_relu(0),
		ccv_cnnp_max_pool(DIM_ALLOC(2, 2), HINT((2, 2), (0, 0)), 0),
		ccv_cnnp_flatten(0),
		ccv_cnnp_dense(2, 0, 0, 1, "fc")), 1, "blobs");
	const ccv_nnc_tensor_param_t input = CPU_TENSOR_NHWC(32F, N, 4, 4, 1);
	ccv_cnnp_model_compile(model, &input, 1, CMD_SGD_FORWARD(0, 0.1, 1. / N, 0, 0.9, 0), CMD_SOFTMAX_CROSSENTROPY_FORWARD());
	CHECK(ccv_nnc_error_message()[0] == 0, "compile");
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, input, 0);
	ccv_nnc_tensor_t* label = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N), 0);
	ccv_nnc_tensor_t* z = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, 2), 0);
	int step, i, k;
	double first = 0, last = 0;
	for (step = 0; step < STEPS + 1; step++)
	{
		for (i = 0; i < N; i++)
		{
			const int c = (int)(uniform() * 2);
			const float px = (c ? 1.5f : -1.5f) + 0.5f * gaussian(), py = (c ? -1.f : 1.f) + 0.5f * gaussian();
			for (k = 0; k < 16; k++)
				x->data.f32[i * 16 + k] = (k & 1) ? px : py;
			label->data.f32[i] = (float)c;
		}
		if (step == STEPS)
			break;
		ccv_cnnp_model_fit(model, TENSOR_LIST(x), TENSOR_LIST(label), TENSOR_LIST(z), 0, 0);
		double loss = 0;
		for (i = 0; i < N; i++)
		{
			const float* r = z->data.f32 + i * 2;
			const double m = r[0] > r[1] ? r[0] : r[1];
			loss += log(exp(r[0] - m) + exp(r[1] - m)) + m - r[(int)label->data.f32[i]];
		}
		if (step == 0)
			first = loss / N;
		last = loss / N;
	}
	CHECK(ccv_nnc_error_message()[0] == 0, "fit");
	ccv_cnnp_model_evaluate(model, (ccv_cnnp_evaluate_param_t){ .is_test = 1 }, TENSOR_LIST(x), TENSOR_LIST(z), 0, 0);
	int correct = 0;
	for (i = 0; i < N; i++)
		correct += (z->data.f32[i * 2 + 1] > z->data.f32[i * 2]) == (label->data.f32[i] > 0.5f);
	CHECK(correct >= N - 2, "%d of %d held-out points right", correct, N);
	CHECK(last < first * 0.3, "loss %g at the start, %g at the end", first, last);
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(label);
	ccv_nnc_tensor_free(z);
	ccv_cnnp_model_free(model);
}

int main(void)
{
	ccv_nnc_init();
	functional();
	train();
	if (failed)
		printf("%d checks failed\n", failed);
	return failed ? 1 : 0;
}
