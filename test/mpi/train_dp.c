/* Data-parallel training across processes (run under mpirun with 2 and 4
 * processes, and alone): the reference network (tools/demo's) trained with
 * SGD and momentum on N processes, each on its 64/N rows of every batch,
 * beside one process trained on the whole batches of 64.
 *  - After a step the parameters agree to 1e-6 relative (the sums are taken
 *    in another order: 1e-7 measured).
 *  - Over 50 steps fp32 rounding then decides max-pool ties differently now
 *    and then (4 processes: 2.5e-5 after the second step), which two
 *    single-process runs with different batch splits would do too, so the
 *    trajectories are compared through the loss of the whole batch: within
 *    5% at every step, falling by more than half.
 *  - Every process ends with bit-identical parameters.
 * Then: processes that build different models are refused on every process. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libnnc_style.h"
#include "nnc/ccv_nnc_easy.h"

enum { STEPS = 50, EXACT_STEPS = 1, BATCH = 64, IMAGE = 784, CLASSES = 10, PARAMS = 8 };

static uint64_t splitmix64(uint64_t* state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static ccv_cnnp_model_t* reference_net(int classes)
{
	ccv_cnnp_model_t* layers[] = {
		ccv_cnnp_convolution(1, 32, DIM_ALLOC(5, 5), DIM_ALLOC(), 0, HINT((1, 1), (2, 2)), 0, 1, "conv1"),
		ccv_cnnp_relu(0),
		ccv_cnnp_max_pool(DIM_ALLOC(2, 2), HINT((2, 2), (0, 0)), 0),
		ccv_cnnp_convolution(1, 64, DIM_ALLOC(5, 5), DIM_ALLOC(), 0, HINT((1, 1), (2, 2)), 0, 1, "conv2"),
		ccv_cnnp_relu(0),
		ccv_cnnp_max_pool(DIM_ALLOC(2, 2), HINT((2, 2), (0, 0)), 0),
		ccv_cnnp_flatten(0),
		ccv_cnnp_dense(256, 0, 0, 1, "fc1"),
		ccv_cnnp_relu(0),
		ccv_cnnp_dense(classes, 0, 0, 1, "fc2"),
	};
	return ccv_cnnp_sequential_new(layers, sizeof(layers) / sizeof(layers[0]), 1, "reference");
}

/* Batch `step`'s images and labels (the same on every process): noise plus a
 * class-dependent blob, so the loss has something to learn. */
static void batch_of(int step, float* x, float* labels)
{
	uint64_t s = 0x1234 + (uint64_t)step * 7919;
	for (int i = 0; i < BATCH; i++)
	{
		const int c = (int)(splitmix64(&s) % CLASSES);
		labels[i] = (float)c;
		for (int k = 0; k < IMAGE; k++)
		{
			const int y = k / 28, xx = k % 28;
			const float blob = (abs(y - 4 - 2 * c) < 3 && abs(xx - 14) < 6) ? 1.5f : 0.f;
			x[(size_t)i * IMAGE + k] = blob + (float)((splitmix64(&s) >> 40) * (1.0 / 16777216.0)) - 0.5f;
		}
	}
}

/* Softmax cross-entropy of `rows` rows of logits, summed, in double. */
static double loss_sum(const float* z, const float* labels, int rows)
{
	double total = 0;
	for (int i = 0; i < rows; i++)
	{
		const float* r = z + i * CLASSES;
		double m = r[0], s = 0;
		for (int j = 1; j < CLASSES; j++)
			m = r[j] > m ? r[j] : m;
		for (int j = 0; j < CLASSES; j++)
			s += exp(r[j] - m);
		total += log(s) + m - r[(int)labels[i]];
	}
	return total;
}

/* One step of `model` (compiled for `rows` images) on rows [first, first +
 * rows) of batch `step`; returns the summed loss of those rows (before the
 * update). */
static double train_step(ccv_cnnp_model_t* model, int step, int first, int rows, float* x, float* labels, ccv_nnc_tensor_t* logits)
{
	batch_of(step, x, labels);
	ccv_nnc_tensor_t xb = ccv_nnc_tensor(x + (size_t)first * IMAGE, CPU_TENSOR_NHWC(32F, rows, 28, 28, 1), 0);
	ccv_nnc_tensor_t lb = ccv_nnc_tensor(labels + first, CPU_TENSOR_NHWC(32F, rows), 0);
	ccv_cnnp_model_fit(model, TENSOR_LIST(&xb), TENSOR_LIST(&lb), TENSOR_LIST(logits), 0, 0);
	CHECK(!ccv_nnc_error_message()[0], "fit at step %d", step);
	return loss_sum(logits->data.f32, labels + first, rows);
}

static ccv_nnc_tensor_t* parameter(ccv_cnnp_model_t* model, int i)
{
	ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(model, ALL_PARAMETERS, i);
	ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(0, ccv_cnnp_model_parameter_tensor_params(model, p), 0);
	ccv_cnnp_model_parameter_copy(model, p, t);
	return t;
}

/* The global batch's SGD: the loss gradient is a sum over the process's rows;
 * the average over processes and the scale size / BATCH make it the mean
 * over the whole batch, as one process with scale 1 / BATCH. */
static ccv_cnnp_model_t* compiled(int rows, int size, int classes)
{
	ccv_cnnp_model_t* model = reference_net(classes);
	const ccv_nnc_tensor_param_t input = CPU_TENSOR_NHWC(32F, rows, 28, 28, 1);
	ccv_cnnp_model_compile(model, &input, 1, CMD_SGD_FORWARD(0, 0.01, (float)size / BATCH, 0, 0.9, 0), CMD_SOFTMAX_CROSSENTROPY_FORWARD());
	return model;
}

int main(void)
{
	ccv_nnc_init();
	if (!ccv_nnc_comm_mpi_available())
	{
		printf("train_dp: built without MPI; nothing to test\n");
		return 0;
	}
	ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0);
	CHECK(comm, "communicator");
	if (!comm)
		return 1;
	const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
	ccv_nnc_comm_set_timeout(comm, 120);
	CHECK(BATCH % size == 0, "%d processes do not divide the batch", size);
	/* One process with whole batches, and N processes with rows
	 * [rank * B/N, (rank + 1) * B/N) of each, step by step. Rank 0's initial
	 * values reach every process at set_comm; make the others differ first,
	 * so the test sees that they do. */
	const int rows = BATCH / size;
	ccv_cnnp_model_t* single = compiled(BATCH, 1, CLASSES);
	ccv_cnnp_model_t* dp = compiled(rows, size, CLASSES);
	if (rank != 0)
	{
		ccv_nnc_tensor_t* w = parameter(dp, 0);
		for (int i = 0; i < 10; i++)
			w->data.f32[i] += 1;
		ccv_cnnp_model_set_parameter(dp, ccv_cnnp_model_parameters(dp, ALL_PARAMETERS, 0), w);
		ccv_nnc_tensor_free(w);
	}
	ccv_cnnp_model_set_comm(dp, comm, 64 << 10); /* small buckets: several per step */
	CHECK(!ccv_nnc_error_message()[0], "set_comm");
	float* x = malloc(sizeof(float) * BATCH * IMAGE);
	float* labels = malloc(sizeof(float) * BATCH);
	ccv_nnc_tensor_t* z64 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, CLASSES), 0);
	ccv_nnc_tensor_t* zn = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, rows, CLASSES), 0);
	ccv_nnc_tensor_t* loss = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 1), 0);
	ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
	double worst_at_exact = 0, worst_loss = 0, first_loss = 0, last_loss = 0;
	for (int step = 0; step < STEPS; step++)
	{
		const double l1 = train_step(single, step, 0, BATCH, x, labels, z64) / BATCH;
		loss->data.f64[0] = train_step(dp, step, rank * rows, rows, x, labels, zn);
		ccv_nnc_cmd_exec(allreduce, ccv_nnc_no_hint, 0, TENSOR_LIST(loss), TENSOR_LIST(loss), 0);
		const double ln = loss->data.f64[0] / BATCH;
		worst_loss = fmax(worst_loss, fabs(ln - l1) / l1);
		if (step == 0)
			first_loss = l1;
		last_loss = l1;
		if (step + 1 == EXACT_STEPS)
			for (int i = 0; i < PARAMS; i++)
			{
				ccv_nnc_tensor_t* a = parameter(single, i);
				ccv_nnc_tensor_t* b = parameter(dp, i);
				double diff = 0, mag = 0;
				for (int k = 0; k < (int)ccv_nnc_tensor_count(a->info); k++)
				{
					diff = fmax(diff, fabs(a->data.f32[k] - b->data.f32[k]));
					mag = fmax(mag, fabs(a->data.f32[k]));
				}
				worst_at_exact = fmax(worst_at_exact, diff / (mag > 0 ? mag : 1));
				ccv_nnc_tensor_free(a);
				ccv_nnc_tensor_free(b);
			}
	}
	CHECK(worst_at_exact <= 1e-6, "after %d steps, %d processes x batch %d against one process x batch %d: worst relative difference %g",
		EXACT_STEPS, size, rows, BATCH, worst_at_exact);
	CHECK(last_loss < 0.5 * first_loss, "the loss fell from %g to %g", first_loss, last_loss);
	CHECK(worst_loss < 0.05, "the global batch's loss of %d processes follows one process's (worst relative difference %g)", size, worst_loss);
	/* Every process ends with rank 0's values, bit for bit. */
	for (int i = 0; i < PARAMS; i++)
	{
		ccv_nnc_tensor_t* b = parameter(dp, i);
		ccv_nnc_tensor_t* r0 = ccv_nnc_tensor_new(0, b->info, 0);
		ccv_nnc_cmd_exec(ccv_nnc_cmd_set_comm(CMD_COMM_BROADCAST_FORWARD(), comm), ccv_nnc_no_hint, 0, TENSOR_LIST(b), TENSOR_LIST(r0), 0);
		CHECK(memcmp(r0->data.f32, b->data.f32, sizeof(float) * ccv_nnc_tensor_count(b->info)) == 0, "parameter %d is the same on rank %d as on rank 0", i, rank);
		ccv_nnc_tensor_free(r0);
		ccv_nnc_tensor_free(b);
	}
	printf("train_dp: rank %d of %d, batch %d each: parameters after %d steps against one process x %d: worst relative difference %.3g; "
		"loss %.4f -> %.4f over %d steps, the processes' global loss within %.3g of one process's\n",
		rank, size, rows, EXACT_STEPS, BATCH, worst_at_exact, first_loss, last_loss, STEPS, worst_loss);
	free(x);
	free(labels);
	ccv_nnc_tensor_free(z64);
	ccv_nnc_tensor_free(zn);
	ccv_nnc_tensor_free(loss);
	/* The training must have moved the parameters (else equality proves nothing). */
	{
		ccv_cnnp_model_t* fresh = compiled(BATCH, 1, CLASSES);
		ccv_nnc_tensor_t* a = parameter(fresh, 6);
		ccv_nnc_tensor_t* b = parameter(single, 6);
		double moved = 0;
		for (int k = 0; k < (int)ccv_nnc_tensor_count(a->info); k++)
			moved = fmax(moved, fabs(a->data.f32[k] - b->data.f32[k]));
		CHECK(moved > 1e-3, "training moved fc2's weights (by %g)", moved);
		ccv_nnc_tensor_free(a);
		ccv_nnc_tensor_free(b);
		ccv_cnnp_model_free(fresh);
	}
	ccv_cnnp_model_free(single);
	ccv_cnnp_model_free(dp);
	/* Processes that build different models: refused on every process. */
	if (size > 1)
	{
		ccv_cnnp_model_t* odd = compiled(rows, size, rank == size - 1 ? CLASSES + 1 : CLASSES);
		ccv_cnnp_model_set_comm(odd, comm, 0);
		CHECK(strstr(ccv_nnc_error_message(), "the processes built different models"), "a mismatch is refused on rank %d", rank);
		ccv_cnnp_model_free(odd);
	}
	CHECK(ccv_nnc_comm_barrier(comm) == CCV_NNC_EXEC_SUCCESS, "barrier");
	ccv_nnc_comm_free(comm);
	printf("train_dp: rank %d of %d: %d failures\n", rank, size, failed);
	return failed ? 1 : 0;
}
