/*
 * Automatic differentiation the way a libnnc program uses it: a forward graph
 * built with CMD_*() and TENSOR_SYMBOL_LIST, ccv_nnc_symbolic_graph_backward
 * over SYMBOLIC_GRAPH_SOURCES / _DESTINATIONS, the gradients found with
 * ccv_nnc_tensor_symbol_for_backward, autogen again, compile and run; the
 * gradients of f = sum(sigmoid(x w^T + b)) against a double-precision
 * computation here. Then ccv_nnc_symbolic_graph_minimize with SGD and
 * momentum, the parameter and its state bound in place, two steps against
 * their closed form.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

#define B 3
#define I 4
#define O 2

static void gradients(void)
{
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
	ccv_nnc_symbolic_graph_backward(sg, TENSOR_SYMBOL_LIST(f), TENSOR_SYMBOL_LIST(x, w, bias), SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	const ccv_nnc_tensor_symbol_t dx = ccv_nnc_tensor_symbol_for_backward(sg, x);
	const ccv_nnc_tensor_symbol_t dw = ccv_nnc_tensor_symbol_for_backward(sg, w);
	const ccv_nnc_tensor_symbol_t db = ccv_nnc_tensor_symbol_for_backward(sg, bias);
	CHECK(dx.d >= 0 && dw.d >= 0 && db.d >= 0, "gradient symbols");
	CHECK(ccv_nnc_graph_exec_symbol_for_backward(sg, dw).d >= 0, "the exec writing dw");
	/* libnnc's device data parallelism: one device on the CPU leaves the graph
	 * as it is and hands the allreduced symbols back; more is refused. */
	{
		const int execs = ccv_nnc_graph_exec_symbol_count(sg);
		ccv_nnc_tensor_symbol_t outs[2] = { { 0 } };
		ccv_nnc_symbolic_graph_data_parallel(sg, 1, 0, 0, TENSOR_SYMBOL_LIST(dw, db), outs, 0, 0, 0, CCV_NNC_PARALLEL_REDUCE_OP_SUM, SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
		CHECK(!ccv_nnc_error_message()[0] && outs[0].d == dw.d && outs[1].d == db.d && ccv_nnc_graph_exec_symbol_count(sg) == execs, "data parallel over one device");
		ccv_nnc_symbolic_graph_data_parallel(sg, 2, 0, 0, TENSOR_SYMBOL_LIST(dw, db), outs, 0, 0, 0, CCV_NNC_PARALLEL_REDUCE_OP_SUM, SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
		CHECK(strstr(ccv_nnc_error_message(), "2 devices asked for") != 0 && ccv_nnc_graph_exec_symbol_count(sg) == execs, "data parallel over two devices is refused");
	}
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, TENSOR_SYMBOL_LIST(dx, dw, db),
		SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph && tensor_arena && graph_exec_arena, "compile");
	if (!graph)
		return;
	ccv_nnc_tensor_t* const xt = ccv_nnc_tensor_from_symbol(tensor_arena, x);
	ccv_nnc_tensor_t* const wt = ccv_nnc_tensor_from_symbol(tensor_arena, w);
	ccv_nnc_tensor_t* const bt = ccv_nnc_tensor_from_symbol(tensor_arena, bias);
	int i, j, k;
	for (i = 0; i < B * I; i++)
		xt->data.f32[i] = (float)(i % 5) * 0.5f - 1.f;
	for (i = 0; i < O * I; i++)
		wt->data.f32[i] = (float)((i * 3) % 7) * 0.25f - 0.75f;
	for (i = 0; i < O; i++)
		bt->data.f32[i] = 0.1f * (float)i - 0.2f;
	CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "run");
	double dh[B][O];
	for (i = 0; i < B; i++)
		for (j = 0; j < O; j++)
		{
			double v = bt->data.f32[j];
			for (k = 0; k < I; k++)
				v += (double)xt->data.f32[i * I + k] * wt->data.f32[j * I + k];
			const double sv = 1 / (1 + exp(-v));
			dh[i][j] = sv * (1 - sv);
		}
	const ccv_nnc_tensor_t* const dxt = ccv_nnc_tensor_from_symbol(tensor_arena, dx);
	const ccv_nnc_tensor_t* const dwt = ccv_nnc_tensor_from_symbol(tensor_arena, dw);
	const ccv_nnc_tensor_t* const dbt = ccv_nnc_tensor_from_symbol(tensor_arena, db);
	for (j = 0; j < O; j++)
	{
		double want = 0;
		for (i = 0; i < B; i++)
			want += dh[i][j];
		CHECK(fabs(dbt->data.f32[j] - want) < 1e-5, "db[%d] = %g, want %g", j, dbt->data.f32[j], want);
		for (k = 0; k < I; k++)
		{
			want = 0;
			for (i = 0; i < B; i++)
				want += dh[i][j] * xt->data.f32[i * I + k];
			CHECK(fabs(dwt->data.f32[j * I + k] - want) < 1e-5, "dw[%d][%d] = %g, want %g", j, k, dwt->data.f32[j * I + k], want);
		}
	}
	for (i = 0; i < B; i++)
		for (k = 0; k < I; k++)
		{
			double want = 0;
			for (j = 0; j < O; j++)
				want += dh[i][j] * wt->data.f32[j * I + k];
			CHECK(fabs(dxt->data.f32[i * I + k] - want) < 1e-5, "dx[%d][%d] = %g, want %g", i, k, dxt->data.f32[i * I + k], want);
		}
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
}

static void minimize(void)
{
	/* loss = sum(w * t) for a fixed t: the gradient is t at every step. */
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 4), "w");
	const ccv_nnc_tensor_symbol_t t = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 4), "t");
	const ccv_nnc_tensor_symbol_t p = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "p");
	const ccv_nnc_tensor_symbol_t loss = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "loss");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_EWPROD_FORWARD(), TENSOR_SYMBOL_LIST(w, t), TENSOR_SYMBOL_LIST(p), "prod");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_REDUCE_SUM_FORWARD(0), TENSOR_SYMBOL_LIST(p), TENSOR_SYMBOL_LIST(loss), "sum");
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	const ccv_nnc_cmd_t sgd = CMD_SGD_FORWARD(0, 0.5, 1, 0, 0.75, 0);
	CHECK(ccv_nnc_minimizer_saved_aux_size(sgd) == 1, "SGD with momentum keeps one state tensor");
	ccv_nnc_tensor_symbol_t updated;
	ccv_nnc_tensor_symbol_map_t saved;
	ccv_nnc_graph_exec_symbol_t update;
	ccv_nnc_symbolic_graph_minimize(sg, sgd, TENSOR_SYMBOL_LIST(loss), TENSOR_SYMBOL_LIST(w), 0, 0, SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), 0, &updated, &saved, &update);
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_tensor_t* const wt = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* const tt = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* const mt = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	int i;
	for (i = 0; i < 4; i++)
	{
		wt->data.f32[i] = (float)i;
		tt->data.f32[i] = 1.f - 0.5f * (float)i;
		mt->data.f32[i] = 0;
	}
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params,
		TENSOR_BIND_MAP(KV(w, wt), KV(updated, wt), KV(t, tt), KV(saved.source, mt), KV(saved.destination, mt)), 0, 0,
		SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph && tensor_arena && graph_exec_arena, "compile");
	if (graph)
	{
		CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "step 1");
		CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "step 2");
		/* m1 = t, w1 = w0 - 0.5 t; m2 = 0.75 t + t, w2 = w1 - 0.5 * 1.75 t. */
		for (i = 0; i < 4; i++)
		{
			const double g = 1 - 0.5 * i;
			CHECK(fabs(mt->data.f32[i] - 1.75 * g) < 1e-6, "m[%d] = %g", i, mt->data.f32[i]);
			CHECK(fabs(wt->data.f32[i] - (i - 0.5 * g - 0.875 * g)) < 1e-6, "w[%d] = %g", i, wt->data.f32[i]);
		}
	}
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	ccv_nnc_tensor_free(wt);
	ccv_nnc_tensor_free(tt);
	ccv_nnc_tensor_free(mt);
}

int main(void)
{
	ccv_nnc_init();
	gradients();
	minimize();
	if (failed)
		printf("%d checks failed\n", failed);
	return failed ? 1 : 0;
}
