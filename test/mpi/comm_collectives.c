/* The COMM_ commands across processes (run under mpirun with 2 and 4
 * processes, and alone as a single process): every rank draws its tensors from
 * a seed of its own, so each rank can draw every other rank's tensors too and
 * sum them in double for the reference. Built without MPI, it checks the
 * refusal instead. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libnnc_style.h"
#include "nnc/ccv_nnc_easy.h"

static uint64_t rng_state;
static double uniform(void) /* [-1, 1) */
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

/* Rank r's value i of draw `which` (the same on every rank). */
static double value_of(int r, int which, int i)
{
	rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(r + 1) + 7919ull * (uint64_t)which + (uint64_t)i * 104729ull;
	uniform();
	return uniform() * 4;
}

static double load(const ccv_nnc_tensor_t* t, int i)
{
	switch (t->info.datatype) {
	case CCV_32F: return t->data.f32[i];
	case CCV_64F: return t->data.f64[i];
	case CCV_32S: return t->data.i32[i];
	case CCV_16BF: {
		const uint32_t bits = (uint32_t)((uint16_t*)t->data.u8)[i] << 16;
		float f;
		memcpy(&f, &bits, 4);
		return f;
	}
	default: {
		float f;
		ccv_half_precision_to_float((uint16_t*)t->data.f16 + i, &f, 1);
		return f;
	}
	}
}

static void store(ccv_nnc_tensor_t* t, int i, double v)
{
	switch (t->info.datatype) {
	case CCV_32F: t->data.f32[i] = (float)v; break;
	case CCV_64F: t->data.f64[i] = v; break;
	case CCV_32S: t->data.i32[i] = (int)lrint(v * 1000); break;
	case CCV_16BF: {
		const float f = (float)v;
		uint32_t bits;
		memcpy(&bits, &f, 4);
		((uint16_t*)t->data.u8)[i] = (uint16_t)(bits >> 16); /* truncated: exact in the reference too */
		break;
	}
	default: {
		float f = (float)v;
		ccv_float_to_half_precision(&f, (uint16_t*)t->data.f16 + i, 1);
	}
	}
}

/* The value rank r stores (as the tensor's type rounds it). */
static double stored(int datatype, int r, int which, int i)
{
	const double v = value_of(r, which, i);
	switch (datatype) {
	case CCV_32F: return (float)v;
	case CCV_32S: return (double)lrint(v * 1000);
	case CCV_16BF: {
		const float f = (float)v;
		uint32_t bits;
		memcpy(&bits, &f, 4);
		bits &= 0xffff0000u;
		float g;
		memcpy(&g, &bits, 4);
		return g;
	}
	case CCV_16F: {
		float f = (float)v, g;
		uint16_t h;
		ccv_float_to_half_precision(&f, &h, 1);
		ccv_half_precision_to_float(&h, &g, 1);
		return g;
	}
	default: return v;
	}
}

static ccv_nnc_tensor_t* filled(int datatype, int rows, int cols, int rank, int which)
{
	ccv_nnc_tensor_param_t p = CPU_TENSOR_NHWC(32F, rows, cols);
	p.datatype = datatype;
	ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(0, p, 0);
	for (int i = 0; i < rows * cols; i++)
		store(t, i, value_of(rank, which, i));
	return t;
}

/* Relative tolerance of a sum of `size` values of this type. */
static double tolerance(int datatype, int size)
{
	switch (datatype) {
	case CCV_64F: return 1e-12;
	case CCV_32F: return 2e-6 * size;
	case CCV_32S: return 0;
	case CCV_16BF: return 8e-3 * size; /* each addition rounds to 8 bits */
	default: return 1e-3 * size; /* each addition rounds to 11 bits */
	}
}

static void check_sum(const ccv_nnc_tensor_t* y, int datatype, int count, int size, int which, const char* what)
{
	double worst = 0;
	for (int i = 0; i < count; i++) {
		double sum = 0, mag = 0;
		for (int r = 0; r < size; r++) {
			sum += stored(datatype, r, which, i);
			mag += fabs(stored(datatype, r, which, i));
		}
		const double err = fabs(load(y, i) - sum) / (mag > 1 ? mag : 1);
		if (err > worst)
			worst = err;
	}
	CHECK(worst <= tolerance(datatype, size), "%s: worst relative error %g (tolerance %g)", what, worst, tolerance(datatype, size));
}

int main(void)
{
	ccv_nnc_init();
	if (!ccv_nnc_comm_mpi_available()) {
		ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0);
		CHECK(comm == 0 && strstr(ccv_nnc_error_message(), "without MPI"), "a build without MPI refuses with a message");
		printf("comm_collectives: built without MPI, refusal checked (%d failures)\n", failed);
		return failed ? 1 : 0;
	}
	ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0);
	CHECK(comm, "communicator");
	if (!comm)
		return 1;
	const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
	CHECK(rank >= 0 && rank < size && size >= 1, "rank %d of %d", rank, size);
	ccv_nnc_comm_set_timeout(comm, 30);
	const int types[] = { CCV_32F, CCV_64F, CCV_16F, CCV_16BF, CCV_32S };
	const char* names[] = { "32F", "64F", "16F", "16BF", "32S" };
	/* ALLREDUCE, out of place and in place, one odd-shaped pair. */
	for (int k = 0; k < 5; k++) {
		ccv_nnc_tensor_t* x = filled(types[k], 37, 5, rank, k);
		ccv_nnc_tensor_t* y = filled(types[k], 37, 5, rank, 100);
		ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
		RUN(allreduce, TENSOR_LIST(x), TENSOR_LIST(y));
		char what[64];
		snprintf(what, sizeof(what), "allreduce %s", names[k]);
		check_sum(y, types[k], 37 * 5, size, k, what);
		/* The input is left as it was. */
		CHECK(load(x, 7) == stored(types[k], rank, k, 7), "allreduce %s keeps its input", names[k]);
		RUN(allreduce, TENSOR_LIST(x), TENSOR_LIST(x));
		snprintf(what, sizeof(what), "allreduce %s in place", names[k]);
		check_sum(x, types[k], 37 * 5, size, k, what);
		ccv_nnc_tensor_free(x);
		ccv_nnc_tensor_free(y);
	}
	/* Several pairs of mixed types and a strided view: one message per type. */
	{
		ccv_nnc_tensor_t* a = filled(CCV_32F, 9, 8, rank, 20);
		ccv_nnc_tensor_t* b = filled(CCV_64F, 3, 3, rank, 21);
		ccv_nnc_tensor_t* c = filled(CCV_32F, 1, 1000, rank, 22);
		ccv_nnc_tensor_t* whole = filled(CCV_32F, 6, 7, rank, 23);
		/* rows 1..4, columns 2..5 of `whole` */
		ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(whole, CPU_TENSOR_NHWC(32F, 4, 4), DIM_ALLOC(1, 2), DIM_ALLOC(7, 1));
		ccv_nnc_tensor_t* vy = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4, 4), 0);
		ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
		RUN(allreduce, TENSOR_LIST(a, b, c, (ccv_nnc_tensor_t*)v), TENSOR_LIST(a, b, c, vy));
		check_sum(a, CCV_32F, 72, size, 20, "bucket: first 32F pair");
		check_sum(b, CCV_64F, 9, size, 21, "bucket: 64F pair");
		check_sum(c, CCV_32F, 1000, size, 22, "bucket: second 32F pair");
		double worst = 0;
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) {
				double sum = 0;
				for (int r = 0; r < size; r++)
					sum += (float)value_of(r, 23, (i + 1) * 7 + j + 2);
				worst = fmax(worst, fabs(vy->data.f32[i * 4 + j] - sum));
			}
		CHECK(worst < 1e-5 * size * 4, "bucket: the strided view's pair (error %g)", worst);
		/* The view's own storage outside the window is untouched. */
		CHECK(whole->data.f32[0] == (float)value_of(rank, 23, 0), "the window's outside is untouched");
		ccv_nnc_tensor_view_free(v);
		ccv_nnc_tensor_free(vy);
		ccv_nnc_tensor_free(a);
		ccv_nnc_tensor_free(b);
		ccv_nnc_tensor_free(c);
		ccv_nnc_tensor_free(whole);
	}
	/* BROADCAST from rank 0; REDUCE to rank 0 (others' outputs untouched). */
	{
		ccv_nnc_tensor_t* x = filled(CCV_32F, 11, 3, rank, 30);
		ccv_nnc_tensor_t* y = filled(CCV_32F, 11, 3, rank, 31);
		RUN(ccv_nnc_cmd_set_comm(CMD_COMM_BROADCAST_FORWARD(), comm), TENSOR_LIST(x), TENSOR_LIST(y));
		int same = 1;
		for (int i = 0; i < 33; i++)
			same = same && y->data.f32[i] == (float)value_of(0, 30, i);
		CHECK(same, "broadcast: every rank has rank 0's tensor");
		ccv_nnc_tensor_t* z = filled(CCV_32F, 11, 3, rank, 32);
		RUN(ccv_nnc_cmd_set_comm(CMD_COMM_REDUCE_FORWARD(), comm), TENSOR_LIST(x), TENSOR_LIST(z));
		if (rank == 0)
			check_sum(z, CCV_32F, 33, size, 30, "reduce: rank 0");
		else
			CHECK(z->data.f32[5] == (float)value_of(rank, 32, 5), "reduce: rank %d's output untouched", rank);
		/* Backwards: BROADCAST's is a reduce with zeros off the root; REDUCE's a broadcast. */
		ccv_nnc_tensor_t* g = filled(CCV_32F, 11, 3, rank, 33);
		ccv_nnc_tensor_t* dx = filled(CCV_32F, 11, 3, rank, 34);
		RUN(ccv_nnc_cmd_set_comm(CMD_COMM_BROADCAST_BACKWARD(), comm), TENSOR_LIST(g), TENSOR_LIST(dx));
		if (rank == 0)
			check_sum(dx, CCV_32F, 33, size, 33, "broadcast backward: rank 0");
		else {
			int zeros = 1;
			for (int i = 0; i < 33; i++)
				zeros = zeros && dx->data.f32[i] == 0;
			CHECK(zeros, "broadcast backward: zeros on rank %d", rank);
		}
		RUN(ccv_nnc_cmd_set_comm(CMD_COMM_REDUCE_BACKWARD(), comm), TENSOR_LIST(g), TENSOR_LIST(dx));
		same = 1;
		for (int i = 0; i < 33; i++)
			same = same && dx->data.f32[i] == (float)value_of(0, 33, i);
		CHECK(same, "reduce backward: rank 0's gradient everywhere");
		RUN(ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_BACKWARD(), comm), TENSOR_LIST(g, x), TENSOR_LIST(dx));
		check_sum(dx, CCV_32F, 33, size, 33, "allreduce backward");
		ccv_nnc_tensor_free(x);
		ccv_nnc_tensor_free(y);
		ccv_nnc_tensor_free(z);
		ccv_nnc_tensor_free(g);
		ccv_nnc_tensor_free(dx);
	}
	/* Without a communicator the commands keep their one-process meaning. */
	{
		ccv_nnc_tensor_t* a = filled(CCV_32F, 2, 3, rank, 40);
		ccv_nnc_tensor_t* b = filled(CCV_32F, 2, 3, rank, 41);
		ccv_nnc_tensor_t* y0 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
		ccv_nnc_tensor_t* y1 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
		RUN(CMD_COMM_ALLREDUCE_FORWARD(), TENSOR_LIST(a, b), TENSOR_LIST(y0, y1));
		CHECK(fabs(y1->data.f32[4] - (a->data.f32[4] + b->data.f32[4])) < 1e-6, "one-process allreduce sums its tensors");
		ccv_nnc_tensor_free(a);
		ccv_nnc_tensor_free(b);
		ccv_nnc_tensor_free(y0);
		ccv_nnc_tensor_free(y1);
	}
	/* Bad input: refused on every rank alike (so no rank waits for another). */
	{
		ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
		ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 2), 0);
		ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
		CHECK(ccv_nnc_cmd_exec(allreduce, ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0) == CCV_NNC_EXEC_INVALID &&
				strstr(ccv_nnc_error_message(), "output 0 is 32F 3x2 but input 0 is 32F 2x3"),
			"a pair of different shapes is refused");
		ccv_nnc_cmd_t relu = ccv_nnc_cmd_set_comm(CMD_RELU_FORWARD(), comm);
		CHECK(relu.data == 0 && strstr(ccv_nnc_error_message(), "is not a COMM_ command"), "set_comm on RELU is refused");
		CHECK(ccv_nnc_comm_rank(0) == -1 && ccv_nnc_comm_size(0) == -1, "NULL communicator");
		ccv_nnc_comm_set_timeout(comm, -1);
		CHECK(strstr(ccv_nnc_error_message(), "positive"), "a negative timeout is refused");
		ccv_nnc_tensor_free(a);
		ccv_nnc_tensor_free(b);
	}
	CHECK(ccv_nnc_comm_barrier(comm) == CCV_NNC_EXEC_SUCCESS, "barrier");
	CHECK(!ccv_nnc_comm_is_broken(comm), "the communicator is usable");
	ccv_nnc_comm_free(comm);
	printf("comm_collectives: rank %d of %d: %d failures\n", rank, size, failed);
	return failed ? 1 : 0;
}
