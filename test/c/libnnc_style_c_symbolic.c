/*
 * The symbolic graph the way a libnnc program builds one: tensor symbols with
 * CPU_TENSOR_NHWC (and ccv_nnc_tensor_auto for shapes to infer), exec
 * symbols with CMD_*() and TENSOR_SYMBOL_LIST, autogen, compile with
 * SYMBOLIC_GRAPH_SOURCES / _DESTINATIONS, run with TRAVERSE_FULL. A dense
 * layer with bias and ReLU, then a sum of its output with a bound tensor,
 * checked against a double-precision computation here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

#define B 3
#define I 4
#define O 5

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, B, I), "x");
	const ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, O, I), "w");
	const ccv_nnc_tensor_symbol_t bias = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, O), "bias");
	const ccv_nnc_tensor_symbol_t h = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "h");
	const ccv_nnc_tensor_symbol_t r = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "r");
	const ccv_nnc_tensor_symbol_t k = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, B, O), "k");
	const ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), TENSOR_SYMBOL_LIST(x, w, bias), TENSOR_SYMBOL_LIST(h), "fc");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_RELU_FORWARD(), TENSOR_SYMBOL_LIST(h), TENSOR_SYMBOL_LIST(r), "relu");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_EWSUM_FORWARD(), TENSOR_SYMBOL_LIST(r, k), TENSOR_SYMBOL_LIST(y), "sum");
	CHECK(ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS) == 0, "autogen");
	const ccv_nnc_tensor_param_t yp = ccv_nnc_tensor_symbol_params(sg, y);
	CHECK(yp.dim[0] == B && yp.dim[1] == O && yp.dim[2] == 0, "y inferred as %dx%d", yp.dim[0], yp.dim[1]);
	ccv_nnc_tensor_t* const kt = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, O), 0);
	int i, j, n;
	for (i = 0; i < B * O; i++)
		kt->data.f32[i] = (float)(i % 7) * 0.125f;
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* tensor_arena = 0;
	ccv_nnc_graph_exec_arena_t* graph_exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, TENSOR_BIND_MAP(KV(k, kt)), TENSOR_SYMBOL_LIST(y),
		SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &tensor_arena, &graph_exec_arena);
	CHECK(graph && tensor_arena && graph_exec_arena, "compile");
	if (!graph)
		return 1;
	ccv_nnc_tensor_t* const xt = ccv_nnc_tensor_from_symbol(tensor_arena, x);
	ccv_nnc_tensor_t* const wt = ccv_nnc_tensor_from_symbol(tensor_arena, w);
	ccv_nnc_tensor_t* const bt = ccv_nnc_tensor_from_symbol(tensor_arena, bias);
	for (i = 0; i < B * I; i++)
		xt->data.f32[i] = (float)(i % 5) * 0.5f - 1.f;
	for (i = 0; i < O * I; i++)
		wt->data.f32[i] = (float)((i * 3) % 7) * 0.25f - 0.75f;
	for (i = 0; i < O; i++)
		bt->data.f32[i] = 0.1f * (float)i - 0.2f;
	CHECK(ccv_nnc_graph_run(graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS, "run");
	const ccv_nnc_tensor_t* const yt = ccv_nnc_tensor_from_symbol(tensor_arena, y);
	CHECK(ccv_nnc_tensor_from_symbol(tensor_arena, k)->data.f32 == kt->data.f32, "k is the bound tensor");
	for (i = 0; i < B; i++)
		for (j = 0; j < O; j++)
		{
			double s = bt->data.f32[j];
			for (n = 0; n < I; n++)
				s += (double)xt->data.f32[i * I + n] * wt->data.f32[j * I + n];
			const double want = (s > 0 ? s : 0) + kt->data.f32[i * O + j];
			CHECK(fabs(yt->data.f32[i * O + j] - want) < 1e-5, "y[%d][%d] = %g, want %g", i, j, yt->data.f32[i * O + j], want);
		}
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(tensor_arena);
	ccv_nnc_graph_exec_arena_free(graph_exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	ccv_nnc_tensor_free(kt);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
