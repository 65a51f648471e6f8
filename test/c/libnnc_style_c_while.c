/*
 * Loops and branches the way a libnnc program writes them: a while graph
 * attached with ccv_nnc_symbolic_graph_while, its exec symbols naming the
 * enclosing graph's symbols directly, carry-overs with TENSOR_SYMBOL_MAP /
 * KV, the loop counter as the expression's input; a case..of with a
 * fall-back; the gradient of a loop. Values against closed forms computed
 * here in double.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

static int while_below_5(ccv_nnc_tensor_t* const* const inputs, const int input_size, const void* const data)
{
	(void)input_size, (void)data;
	return inputs[0]->data.i64[0] < 5;
}

static int while_below_4(ccv_nnc_tensor_t* const* const inputs, const int input_size, const void* const data)
{
	(void)input_size, (void)data;
	return inputs[0]->data.i64[0] < 4;
}

static int positive_first(ccv_nnc_tensor_t* const* const inputs, const int input_size, const void* const data)
{
	(void)input_size, (void)data;
	return inputs[0]->data.f32[0] > 0 ? 0 : -1;
}

static int loop(void)
{
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	ccv_nnc_symbolic_graph_t* const wg = ccv_nnc_symbolic_graph_new();
	ccv_nnc_symbolic_graph_while(sg, CCV_NNC_GRAPH_FORWARD, wg, "while 0..5");
	const ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 2), "x");
	const ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(wg, CPU_TENSOR_NHWC(32F, 2), "y");
	const ccv_nnc_tensor_symbol_t z = ccv_nnc_tensor_symbol_new(wg, CPU_TENSOR_NHWC(32F, 2), "z");
	const ccv_nnc_tensor_symbol_t u = ccv_nnc_tensor_symbol_new(wg, CPU_TENSOR_NHWC(32F, 2), "u");
	const ccv_nnc_graph_exec_symbol_t prod = ccv_nnc_graph_exec_symbol_new(wg, CMD_EWPROD_FORWARD(), TENSOR_SYMBOL_LIST(x, y), TENSOR_SYMBOL_LIST(z), "prod");
	/* After the breakpoint: u = z + x, carried back as y. */
	ccv_nnc_graph_exec_symbol_new(wg, CMD_EWSUM_FORWARD(), TENSOR_SYMBOL_LIST(z, x), TENSOR_SYMBOL_LIST(u), "sum");
	ccv_nnc_graph_exec_symbol_autogen(wg, 0, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_symbolic_graph_set_carry_overs(wg, TENSOR_SYMBOL_MAP(KV(u, y)));
	ccv_nnc_symbolic_graph_set_while_expr(wg, while_below_5, 0, TENSOR_SYMBOL_LIST(ccv_nnc_tensor_symbol_for_while_count(wg)), GRAPH_EXEC_SYMBOL_LIST(prod));
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, 0, 0, SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph && tensor_arena && graph_exec_arena, "compile");
	if (!graph)
		return 1;
	ccv_nnc_tensor_t* const xt = ccv_nnc_tensor_from_symbol(tensor_arena, x);
	ccv_nnc_tensor_t* const yt = ccv_nnc_tensor_from_symbol(tensor_arena, y);
	xt->data.f32[0] = 0.5, xt->data.f32[1] = -1.5;
	yt->data.f32[0] = 2, yt->data.f32[1] = 0.25;
	CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "run");
	int i, k;
	for (i = 0; i < 2; i++)
	{
		/* Rounds 0..5 compute z = x y; rounds 0..4 go on to y = z + x. */
		double xv = xt->data.f32[i], yv = i == 0 ? 2 : 0.25, zv = 0;
		for (k = 0; k <= 5; k++)
		{
			zv = xv * yv;
			yv = zv + xv;
		}
		const ccv_nnc_tensor_t* const zt = ccv_nnc_tensor_from_symbol(tensor_arena, z);
		CHECK(fabs(zt->data.f32[i] - zv) < 1e-5 * (1 + fabs(zv)), "z[%d] = %g, expected %g", i, zt->data.f32[i], zv);
	}
	CHECK(ccv_nnc_tensor_from_symbol(tensor_arena, ccv_nnc_tensor_symbol_for_while_count(wg))->data.i64[0] == 5, "the loop stopped in round 5");
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	return 0;
}

static int branch(void)
{
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t a = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 3), "a");
	const ccv_nnc_tensor_symbol_t b = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 3), "b");
	const ccv_nnc_graph_exec_symbol_t case_of = ccv_nnc_symbolic_graph_case_of_new(sg, CCV_NNC_GRAPH_FORWARD, TENSOR_SYMBOL_LIST(a), TENSOR_SYMBOL_MAP(KV(a, b)), "case..of");
	ccv_nnc_symbolic_graph_set_case_of_expr(sg, case_of, positive_first, 0);
	ccv_nnc_symbolic_graph_t* const g0 = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t b0 = ccv_nnc_tensor_symbol_new(g0, CPU_TENSOR_NHWC(32F, 3), "b0");
	ccv_nnc_symbolic_graph_set_case_of(sg, case_of, g0, 0, TENSOR_SYMBOL_MAP(KV(b0, b)));
	ccv_nnc_graph_exec_symbol_new(g0, CMD_EWPROD_FORWARD(), TENSOR_SYMBOL_LIST(a, a), TENSOR_SYMBOL_LIST(b0), "square");
	ccv_nnc_graph_exec_symbol_autogen(g0, 0, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, TENSOR_SYMBOL_LIST(b), SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph && tensor_arena && graph_exec_arena, "compile");
	if (!graph)
		return 1;
	int trial, i;
	for (trial = 0; trial < 2; trial++)
	{
		ccv_nnc_tensor_t* const at = ccv_nnc_tensor_from_symbol(tensor_arena, a);
		const float sign = trial == 0 ? 1 : -1;
		for (i = 0; i < 3; i++)
			at->data.f32[i] = sign * (0.5f + i);
		CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "run");
		const ccv_nnc_tensor_t* const bt = ccv_nnc_tensor_from_symbol(tensor_arena, b);
		for (i = 0; i < 3; i++)
		{
			const double av = sign * (0.5 + i), expected = trial == 0 ? av * av : av;
			CHECK(fabs(bt->data.f32[i] - expected) < 1e-6 * (1 + fabs(expected)), "trial %d: b[%d] = %g, expected %g", trial, i, bt->data.f32[i], expected);
		}
	}
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	return 0;
}

/* The gradient of a loop: x <- x * w + b, 4 rounds, f = sum(x_4); d f / d w,
 * d f / d b and d f / d x0 through ccv_nnc_symbolic_graph_backward, against
 * the closed form (every value here is positive, the products exact in
 * double). */
static int gradient(void)
{
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	ccv_nnc_symbolic_graph_t* const wg = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t x0 = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(64F, 2), "x0");
	const ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(64F, 2), "w");
	const ccv_nnc_tensor_symbol_t b = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(64F, 2), "b");
	const ccv_nnc_tensor_symbol_t xn = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(64F, 2), "x_n");
	const ccv_nnc_tensor_symbol_t f = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(64F, 1), "f");
	ccv_nnc_symbolic_graph_while(sg, CCV_NNC_GRAPH_FORWARD, wg, "x * w + b");
	const ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(wg, CPU_TENSOR_NHWC(64F, 2), "x");
	const ccv_nnc_tensor_symbol_t p = ccv_nnc_tensor_symbol_new(wg, CPU_TENSOR_NHWC(64F, 2), "p");
	const ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(wg, CPU_TENSOR_NHWC(64F, 2), "y");
	ccv_nnc_tensor_symbol_hookup(sg, wg, x0, x);
	ccv_nnc_tensor_symbol_hookup(sg, wg, xn, y);
	const ccv_nnc_graph_exec_symbol_t noop = ccv_nnc_graph_exec_symbol_new(wg, ccv_nnc_cmd(CCV_NNC_NOOP, 0, ccv_nnc_cmd_auto, 0), 0, 0, 0, 0, "noop");
	const ccv_nnc_graph_exec_symbol_t prod = ccv_nnc_graph_exec_symbol_new(wg, CMD_EWPROD_FORWARD(), TENSOR_SYMBOL_LIST(x, w), TENSOR_SYMBOL_LIST(p), "prod");
	ccv_nnc_graph_exec_symbol_new(wg, CMD_EWSUM_FORWARD(), TENSOR_SYMBOL_LIST(p, b), TENSOR_SYMBOL_LIST(y), "sum");
	ccv_nnc_graph_exec_symbol_concat(wg, noop, prod);
	ccv_nnc_graph_exec_symbol_autogen(wg, 0, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_symbolic_graph_set_carry_overs(wg, TENSOR_SYMBOL_MAP(KV(y, x)));
	ccv_nnc_symbolic_graph_set_while_expr(wg, while_below_4, 0, TENSOR_SYMBOL_LIST(ccv_nnc_tensor_symbol_for_while_count(wg)), GRAPH_EXEC_SYMBOL_LIST(noop));
	ccv_nnc_graph_exec_symbol_new(sg, CMD_REDUCE_SUM_FORWARD(0), TENSOR_SYMBOL_LIST(xn), TENSOR_SYMBOL_LIST(f), "sum");
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_symbolic_graph_backward(sg, TENSOR_SYMBOL_LIST(f), TENSOR_SYMBOL_LIST(w, b, x0), SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg));
	const ccv_nnc_tensor_symbol_t dw = ccv_nnc_tensor_symbol_for_backward(sg, w);
	const ccv_nnc_tensor_symbol_t db = ccv_nnc_tensor_symbol_for_backward(sg, b);
	const ccv_nnc_tensor_symbol_t dx0 = ccv_nnc_tensor_symbol_for_backward(sg, x0);
	CHECK(dw.d >= 0 && db.d >= 0 && dx0.d >= 0, "backward: %s", ccv_nnc_error_message());
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, TENSOR_SYMBOL_LIST(f, xn, dw, db, dx0), SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph && tensor_arena && graph_exec_arena, "compile: %s", ccv_nnc_error_message());
	if (!graph)
		return 1;
	const double x0v[2] = {0.5, 2}, wv[2] = {1.5, 0.75}, bv[2] = {0.25, 1};
	int i, k;
	for (i = 0; i < 2; i++)
	{
		ccv_nnc_tensor_from_symbol(tensor_arena, x0)->data.f64[i] = x0v[i];
		ccv_nnc_tensor_from_symbol(tensor_arena, w)->data.f64[i] = wv[i];
		ccv_nnc_tensor_from_symbol(tensor_arena, b)->data.f64[i] = bv[i];
	}
	CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "run: %s", ccv_nnc_error_message());
	for (i = 0; i < 2; i++)
	{
		/* x_4 = w^4 x0 + b (1 + w + w^2 + w^3) */
		double xs[5], dwv = 0, dbv = 0;
		xs[0] = x0v[i];
		for (k = 0; k < 4; k++)
			xs[k + 1] = xs[k] * wv[i] + bv[i];
		for (k = 0; k < 4; k++)
		{
			dwv += xs[k] * pow(wv[i], 3 - k);
			dbv += pow(wv[i], 3 - k);
		}
		CHECK(fabs(ccv_nnc_tensor_from_symbol(tensor_arena, xn)->data.f64[i] - xs[4]) < 1e-12, "x_4[%d]", i);
		CHECK(fabs(ccv_nnc_tensor_from_symbol(tensor_arena, dw)->data.f64[i] - dwv) < 1e-12, "dw[%d] = %g, expected %g", i, ccv_nnc_tensor_from_symbol(tensor_arena, dw)->data.f64[i], dwv);
		CHECK(fabs(ccv_nnc_tensor_from_symbol(tensor_arena, db)->data.f64[i] - dbv) < 1e-12, "db[%d] = %g, expected %g", i, ccv_nnc_tensor_from_symbol(tensor_arena, db)->data.f64[i], dbv);
		CHECK(fabs(ccv_nnc_tensor_from_symbol(tensor_arena, dx0)->data.f64[i] - pow(wv[i], 4)) < 1e-12, "dx0[%d]", i);
	}
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	return 0;
}

int main(void)
{
	ccv_nnc_init();
	loop();
	branch();
	gradient();
	if (failed)
		printf("%d check(s) failed\n", failed);
	return failed ? 1 : 0;
}
