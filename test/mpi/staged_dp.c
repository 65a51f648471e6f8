/* Data parallelism on a smooth network (dense - tanh - dense, whose output
 * sum is the loss), every process training on its rows of each batch,
 * against one process with all the rows, whose minimiser scale is N times
 * smaller; the network has no max-pool ties, so rounding does not grow and
 * the parameters must agree to 1e-5 relative, and be bit-identical across
 * processes:
 *  - evaluate(requires_grad) + two backward calls per step (the gradients
 *    accumulate) + apply_gradients, which averages them first: 10 steps;
 *  - fit with batch 64 (64 / N rows per process): 50 steps. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libnnc_style.h"
#include "nnc/ccv_nnc_easy.h"

enum { ROWS = 24, IN = 6, STEPS = 10, PARAMS = 4 };

static float x_of(int step, int half, int i) { return sinf(0.37f * (float)(i + 1) + 0.11f * (float)step + 0.7f * (float)half); }

static ccv_cnnp_model_t* compiled(int rows, float scale)
{
	ccv_cnnp_model_t* layers[] = {
		ccv_cnnp_dense(5, 0, 0, 1, "d1"),
		ccv_cnnp_tanh(0),
		ccv_cnnp_dense(3, 0, 0, 1, "d2"),
	};
	ccv_cnnp_model_t* model = ccv_cnnp_sequential_new(layers, 3, 1, "net");
	const ccv_nnc_tensor_param_t input = CPU_TENSOR_NHWC(32F, rows, IN);
	ccv_cnnp_model_compile(model, &input, 1, CMD_SGD_FORWARD(0, 0.05, scale, 0, 0.9, 0), CMD_NOOP());
	return model;
}

/* One step: two backward calls (half 0 and 1 of the step's data), rows
 * [first, first + rows) of each, then the update. Without output gradients,
 * backward differentiates the sum of the outputs. */
static void step_once(ccv_cnnp_model_t* model, int step, int first, int rows)
{
	float* x = malloc(sizeof(float) * ROWS * IN);
	ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, rows, 3), 0);
	for (int half = 0; half < 2; half++)
	{
		for (int i = 0; i < ROWS * IN; i++)
			x[i] = x_of(step, half, i);
		ccv_nnc_tensor_t xb = ccv_nnc_tensor(x + first * IN, CPU_TENSOR_NHWC(32F, rows, IN), 0);
		ccv_cnnp_model_evaluate(model, (ccv_cnnp_evaluate_param_t){ .requires_grad = 1 }, TENSOR_LIST(&xb), TENSOR_LIST(y), 0, 0);
		ccv_cnnp_model_backward(model, 0, 0, 0, 0, 0, 0);
	}
	ccv_cnnp_model_apply_gradients(model, 0);
	CHECK(!ccv_nnc_error_message()[0], "step %d", step);
	ccv_nnc_tensor_free(y);
	free(x);
}

static ccv_nnc_tensor_t* parameter(ccv_cnnp_model_t* model, int i)
{
	ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(model, ALL_PARAMETERS, i);
	ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(0, ccv_cnnp_model_parameter_tensor_params(model, p), 0);
	ccv_cnnp_model_parameter_copy(model, p, t);
	return t;
}

/* One process's model `a` against the processes' `b`: the worst difference
 * relative to each tensor's largest value, and how far `a` moved from
 * `start`; then, on every rank, whether `b` equals rank 0's, bit for bit. */
static void compare(ccv_nnc_comm_t* comm, ccv_cnnp_model_t* a, ccv_cnnp_model_t* b, ccv_cnnp_model_t* start, double* worst, double* moved)
{
	*worst = 0, *moved = 0;
	for (int i = 0; i < PARAMS; i++)
	{
		ccv_nnc_tensor_t* ta = parameter(a, i);
		ccv_nnc_tensor_t* tb = parameter(b, i);
		ccv_nnc_tensor_t* to = parameter(start, i);
		const int n = (int)ccv_nnc_tensor_count(ta->info);
		double diff = 0, mag = 0;
		for (int k = 0; k < n; k++)
		{
			diff = fmax(diff, fabs(ta->data.f32[k] - tb->data.f32[k]));
			mag = fmax(mag, fabs(ta->data.f32[k]));
			*moved = fmax(*moved, fabs(ta->data.f32[k] - to->data.f32[k]));
		}
		*worst = fmax(*worst, diff / fmax(mag, 1e-30));
		ccv_nnc_tensor_t* r0 = ccv_nnc_tensor_new(0, tb->info, 0);
		ccv_nnc_cmd_exec(ccv_nnc_cmd_set_comm(CMD_COMM_BROADCAST_FORWARD(), comm), ccv_nnc_no_hint, 0, TENSOR_LIST(tb), TENSOR_LIST(r0), 0);
		CHECK(memcmp(r0->data.f32, tb->data.f32, sizeof(float) * (size_t)n) == 0, "parameter %d is the same on rank %d as on rank 0", i, ccv_nnc_comm_rank(comm));
		ccv_nnc_tensor_free(r0);
		ccv_nnc_tensor_free(ta);
		ccv_nnc_tensor_free(tb);
		ccv_nnc_tensor_free(to);
	}
}

int main(void)
{
	ccv_nnc_init();
	if (!ccv_nnc_comm_mpi_available())
	{
		printf("staged_dp: built without MPI; nothing to test\n");
		return 0;
	}
	ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0);
	if (!comm)
		return 1;
	const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
	CHECK(ROWS % size == 0, "%d processes do not divide %d rows", size, ROWS);
	const int rows = ROWS / size;
	ccv_cnnp_model_t* single = compiled(ROWS, 1.f / ROWS);
	ccv_cnnp_model_t* dp = compiled(rows, (float)size / ROWS);
	ccv_cnnp_model_set_comm(dp, comm, 0);
	for (int step = 0; step < STEPS; step++)
	{
		step_once(single, step, 0, ROWS);
		step_once(dp, step, rank * rows, rows);
	}
	double worst = 0, moved = 0;
	ccv_cnnp_model_t* fresh = compiled(ROWS, 1.f / ROWS);
	compare(comm, single, dp, fresh, &worst, &moved);
	CHECK(worst < 1e-5, "after %d steps, %d processes against one: worst relative difference %g", STEPS, size, worst);
	/* fit, 50 steps of batch 64. */
	{
		enum { BATCH = 64, FIT_STEPS = 50 };
		const int part = BATCH / size;
		ccv_cnnp_model_t* one = compiled(BATCH, 0.5f / BATCH);
		ccv_cnnp_model_t* many = compiled(part, 0.5f * size / BATCH);
		ccv_cnnp_model_set_comm(many, comm, 256); /* a bucket per parameter or two */
		float* x = malloc(sizeof(float) * BATCH * IN);
		ccv_nnc_tensor_t* y1 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, 3), 0);
		ccv_nnc_tensor_t* yn = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, part, 3), 0);
		for (int step = 0; step < FIT_STEPS; step++)
		{
			for (int i = 0; i < BATCH * IN; i++)
				x[i] = x_of(step, 2, i) + 0.25f * x_of(step, 3, i * 7);
			ccv_nnc_tensor_t xa = ccv_nnc_tensor(x, CPU_TENSOR_NHWC(32F, BATCH, IN), 0);
			ccv_nnc_tensor_t xp = ccv_nnc_tensor(x + rank * part * IN, CPU_TENSOR_NHWC(32F, part, IN), 0);
			ccv_cnnp_model_fit(one, TENSOR_LIST(&xa), 0, 0, TENSOR_LIST(y1), 0, 0);
			ccv_cnnp_model_fit(many, TENSOR_LIST(&xp), 0, 0, TENSOR_LIST(yn), 0, 0);
			CHECK(!ccv_nnc_error_message()[0], "fit step %d", step);
		}
		double fit_worst = 0, fit_moved = 0;
		ccv_cnnp_model_t* start = compiled(BATCH, 0.5f / BATCH);
		compare(comm, one, many, start, &fit_worst, &fit_moved);
		CHECK(fit_worst < 1e-5, "fit: after %d steps, %d processes x batch %d against one x %d: worst relative difference %g", FIT_STEPS, size, part, BATCH, fit_worst);
		CHECK(fit_moved > 1e-2, "fit moved the parameters (by %g)", fit_moved);
		printf("staged_dp: rank %d of %d: fit, %d steps of batch %d: worst relative difference %.3g (moved by up to %.3g)\n", rank, size, FIT_STEPS, BATCH, fit_worst, fit_moved);
		free(x);
		ccv_nnc_tensor_free(y1);
		ccv_nnc_tensor_free(yn);
		ccv_cnnp_model_free(start);
		ccv_cnnp_model_free(one);
		ccv_cnnp_model_free(many);
	}
	CHECK(moved > 1e-2, "training moved the parameters (by %g)", moved);
	printf("staged_dp: rank %d of %d: %d steps, worst relative difference %.3g (parameters moved by up to %.3g); %d failures\n", rank, size, STEPS, worst, moved, failed);
	ccv_cnnp_model_free(fresh);
	ccv_cnnp_model_free(single);
	ccv_cnnp_model_free(dp);
	ccv_nnc_comm_free(comm);
	return failed ? 1 : 0;
}
