/* ccv_nnc_symbolic_graph_data_parallel_comm on a small graph, f =
 * sum(sigmoid(x w^T + b)), each process with its own x: the averaged
 * gradients of w and b against the mean over processes of their gradients
 * computed here in double (every process draws every process's x), over two
 * runs of the compiled graph, with buckets small enough that dw and db travel
 * apart. Then bad input. Run under mpirun with 2 and 4 processes, and alone
 * (one process: the graph stays as it was). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "libnnc_style.h"
#include "nnc/ccv_nnc_easy.h"

enum { B = 3, I = 40, O = 30 };

static float x_of(int rank, int run, int i) { return (float)(((i * 7 + rank * 13 + run * 5) % 17) - 8) / 8.f; }
static float w_of(int i) { return (float)(((i * 3) % 11) - 5) / 20.f; }
static float b_of(int j) { return 0.05f * (float)j - 0.5f; }

/* Rank r's gradients of f, in double. */
static void reference(int r, int run, double* dw, double* db)
{
	memset(dw, 0, sizeof(double) * O * I);
	memset(db, 0, sizeof(double) * O);
	for (int i = 0; i < B; i++)
		for (int j = 0; j < O; j++)
		{
			double v = b_of(j);
			for (int k = 0; k < I; k++)
				v += (double)x_of(r, run, i * I + k) * w_of(j * I + k);
			const double s = 1 / (1 + exp(-v)), g = s * (1 - s);
			db[j] += g;
			for (int k = 0; k < I; k++)
				dw[j * I + k] += g * x_of(r, run, i * I + k);
		}
}

int main(void)
{
	ccv_nnc_init();
	if (!ccv_nnc_comm_mpi_available())
	{
		printf("symbolic_dp: built without MPI; nothing to test\n");
		return 0;
	}
	ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0);
	if (!comm)
		return 1;
	const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, B, I), "x");
	const ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, O, I), "w");
	const ccv_nnc_tensor_symbol_t bias = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, O), "bias");
	const ccv_nnc_tensor_symbol_t h = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "h");
	const ccv_nnc_tensor_symbol_t s = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "s");
	const ccv_nnc_tensor_symbol_t f = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "f");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), TENSOR_SYMBOL_LIST(x, w, bias), TENSOR_SYMBOL_LIST(h), "fc");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_SIGMOID_FORWARD(), TENSOR_SYMBOL_LIST(h), TENSOR_SYMBOL_LIST(s), "sigmoid");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_REDUCE_SUM_FORWARD(0, 1), TENSOR_SYMBOL_LIST(s), TENSOR_SYMBOL_LIST(f), "sum");
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_symbolic_graph_backward(sg, TENSOR_SYMBOL_LIST(f), TENSOR_SYMBOL_LIST(w, bias), SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	const ccv_nnc_tensor_symbol_t grads[2] = { ccv_nnc_tensor_symbol_for_backward(sg, w), ccv_nnc_tensor_symbol_for_backward(sg, bias) };
	/* Bad input first: nothing changes. */
	const int execs = ccv_nnc_graph_exec_symbol_count(sg);
	ccv_nnc_tensor_symbol_t avg[2];
	ccv_nnc_symbolic_graph_data_parallel_comm(sg, 0, grads, 2, avg, 0);
	CHECK(strstr(ccv_nnc_error_message(), "not a live communicator"), "NULL communicator refused");
	const ccv_nnc_tensor_symbol_t unwritten[1] = { x };
	ccv_nnc_symbolic_graph_data_parallel_comm(sg, comm, unwritten, 1, avg, 0);
	CHECK(strstr(ccv_nnc_error_message(), "written by 0 execs"), "a symbol no exec writes is refused");
	const ccv_nnc_tensor_symbol_t slice = ccv_nnc_tensor_symbol_alias_new(sg, grads[0], DIM_ALLOC(), DIM_ALLOC(I, 1), CPU_TENSOR_NHWC(32F, 2, I), "slice");
	const ccv_nnc_tensor_symbol_t aliased[1] = { slice };
	ccv_nnc_symbolic_graph_data_parallel_comm(sg, comm, aliased, 1, avg, 0);
	CHECK(strstr(ccv_nnc_error_message(), "is an alias"), "an alias is refused");
	const ccv_nnc_tensor_symbol_t twice[2] = { grads[0], grads[0] };
	ccv_nnc_symbolic_graph_data_parallel_comm(sg, comm, twice, 2, avg, 0);
	CHECK(strstr(ccv_nnc_error_message(), "gradient 1 is gradient 0 again"), "a gradient given twice is refused");
	CHECK(ccv_nnc_graph_exec_symbol_count(sg) == execs, "refusals leave the graph as it was");
	/* Buckets of 1000 bytes: dw (4800 bytes) fills one, db another. */
	ccv_nnc_symbolic_graph_data_parallel_comm(sg, comm, grads, 2, avg, 1000);
	CHECK(!ccv_nnc_error_message()[0], "data parallel pass");
	if (size == 1)
		CHECK(avg[0].d == grads[0].d && avg[1].d == grads[1].d && ccv_nnc_graph_exec_symbol_count(sg) == execs, "one process: unchanged");
	else
		CHECK(avg[0].d != grads[0].d && ccv_nnc_graph_exec_symbol_count(sg) == execs + 4, "two buckets: a start and a wait each (%d execs, were %d)",
			ccv_nnc_graph_exec_symbol_count(sg), execs);
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, TENSOR_SYMBOL_LIST(avg[0], avg[1]),
		SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph, "compile");
	if (!graph)
		return 1;
	double dw[O * I], db[O], want_w[O * I], want_b[O];
	for (int run = 0; run < 2; run++)
	{
		ccv_nnc_tensor_t* xt = ccv_nnc_tensor_from_symbol(tensor_arena, x);
		ccv_nnc_tensor_t* wt = ccv_nnc_tensor_from_symbol(tensor_arena, w);
		ccv_nnc_tensor_t* bt = ccv_nnc_tensor_from_symbol(tensor_arena, bias);
		for (int i = 0; i < B * I; i++)
			xt->data.f32[i] = x_of(rank, run, i);
		for (int i = 0; i < O * I; i++)
			wt->data.f32[i] = w_of(i);
		for (int j = 0; j < O; j++)
			bt->data.f32[j] = b_of(j);
		CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "run %d", run);
		memset(want_w, 0, sizeof(want_w));
		memset(want_b, 0, sizeof(want_b));
		for (int r = 0; r < size; r++)
		{
			reference(r, run, dw, db);
			for (int i = 0; i < O * I; i++)
				want_w[i] += dw[i] / size;
			for (int j = 0; j < O; j++)
				want_b[j] += db[j] / size;
		}
		const ccv_nnc_tensor_t* aw = ccv_nnc_tensor_from_symbol(tensor_arena, avg[0]);
		const ccv_nnc_tensor_t* ab = ccv_nnc_tensor_from_symbol(tensor_arena, avg[1]);
		double worst = 0;
		for (int i = 0; i < O * I; i++)
			worst = fmax(worst, fabs(aw->data.f32[i] - want_w[i]) / fmax(1, fabs(want_w[i])));
		for (int j = 0; j < O; j++)
			worst = fmax(worst, fabs(ab->data.f32[j] - want_b[j]) / fmax(1, fabs(want_b[j])));
		CHECK(worst < 1e-5, "run %d: averaged gradients off by %g", run, worst);
	}
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	ccv_nnc_comm_free(comm);
	printf("symbolic_dp: rank %d of %d: %d failures\n", rank, size, failed);
	return failed ? 1 : 0;
}
