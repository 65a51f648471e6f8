/*
 * GEMM, ADD, MUL and SCALAR_MUL the way a libnnc program calls them: tensors
 * from CPU_TENSOR_NHWC, commands from CMD_*(), libnnc's slots (a backward's
 * inputs are |gradients|forward inputs|forward outputs|), checked against
 * double-precision sums computed here.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

#define B 2
#define M 3
#define K 5
#define N 4

static void fill(ccv_nnc_tensor_t* t, int n, int seed)
{
	int i;
	for (i = 0; i < n; i++)
		t->data.f32[i] = (float)(((i * 7 + seed * 13) % 17) - 8) / 8.f;
}

/* |got - want| within a few fp32 roundings of the terms' magnitude. */
static int near(double got, double want, double magnitude)
{
	return fabs(got - want) <= 1e-6 * (magnitude + 1);
}

/* b = a . w^T + bias over a batch, w 3-d and transposed with TRANSPOSE(1, 2),
 * bias one row per batch [B, 1, N] (and the output's full shape); then the
 * backward with libnnc's five inputs |g|a|w|bias|b| and dbias per batch. */
static void test_batched_gemm(void)
{
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, M, K), 0);
	ccv_nnc_tensor_t* const w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, N, K), 0);
	ccv_nnc_tensor_t* const bias = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, 1, N), 0);
	ccv_nnc_tensor_t* const full = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, M, N), 0);
	ccv_nnc_tensor_t* const b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, M, N), 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, M, N), 0);
	ccv_nnc_tensor_t* const da = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, M, K), 0);
	ccv_nnc_tensor_t* const dw = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, N, K), 0);
	ccv_nnc_tensor_t* const dbias = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, B, 1, N), 0);
	fill(a, B * M * K, 1), fill(w, B * N * K, 2), fill(bias, B * N, 3), fill(full, B * M * N, 4), fill(g, B * M * N, 5);
	int backend, p, i, j, k, full_bias;
	for (backend = 0; backend < 2; backend++)
		for (full_bias = 0; full_bias < 2; full_bias++)
		{
			ccv_nnc_cmd_t cmd = CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(1, 2));
			cmd.backend = backend ? CCV_NNC_BACKEND_CPU_REF : 0;
			ccv_nnc_tensor_t* const bt = full_bias ? full : bias;
			CHECK(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, TENSOR_LIST(a, w, bt), TENSOR_LIST(b), 0) == CCV_NNC_EXEC_SUCCESS, "forward");
			for (p = 0; p < B; p++)
				for (i = 0; i < M; i++)
					for (j = 0; j < N; j++)
					{
						double s = bt->data.f32[full_bias ? (p * M + i) * N + j : p * N + j], m = fabs(s);
						for (k = 0; k < K; k++)
						{
							const double t = (double)a->data.f32[(p * M + i) * K + k] * w->data.f32[(p * N + j) * K + k];
							s += t, m += fabs(t);
						}
						CHECK(near(b->data.f32[(p * M + i) * N + j], s, m), "b[%d,%d,%d] = %g, expected %g", p, i, j, b->data.f32[(p * M + i) * N + j], s);
					}
		}
	for (backend = 0; backend < 2; backend++)
	{
		ccv_nnc_cmd_t cmd = CMD_GEMM_BACKWARD(NO_TRANSPOSE, TRANSPOSE(1, 2));
		cmd.backend = backend ? CCV_NNC_BACKEND_CPU_REF : 0;
		CHECK(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, TENSOR_LIST(g, a, w, bias, b), TENSOR_LIST(da, dw, dbias), 0) == CCV_NNC_EXEC_SUCCESS, "backward");
		for (p = 0; p < B; p++)
		{
			for (j = 0; j < N; j++)
			{
				double s = 0, m = 0;
				for (i = 0; i < M; i++)
					s += g->data.f32[(p * M + i) * N + j], m += fabs(g->data.f32[(p * M + i) * N + j]);
				CHECK(near(dbias->data.f32[p * N + j], s, m), "dbias[%d,%d] = %g, expected %g", p, j, dbias->data.f32[p * N + j], s);
			}
			for (i = 0; i < M; i++)
				for (k = 0; k < K; k++)
				{ /* da = g . w */
					double s = 0, m = 0;
					for (j = 0; j < N; j++)
					{
						const double t = (double)g->data.f32[(p * M + i) * N + j] * w->data.f32[(p * N + j) * K + k];
						s += t, m += fabs(t);
					}
					CHECK(near(da->data.f32[(p * M + i) * K + k], s, m), "da[%d,%d,%d]", p, i, k);
				}
			for (j = 0; j < N; j++)
				for (k = 0; k < K; k++)
				{ /* dw = g^T . a (w is stored transposed) */
					double s = 0, m = 0;
					for (i = 0; i < M; i++)
					{
						const double t = (double)g->data.f32[(p * M + i) * N + j] * a->data.f32[(p * M + i) * K + k];
						s += t, m += fabs(t);
					}
					CHECK(near(dw->data.f32[(p * N + j) * K + k], s, m), "dw[%d,%d,%d]", p, j, k);
				}
		}
	}
	/* Shapes: b from a and w; dbias from the forward's bias (input 3). */
	ccv_nnc_tensor_param_t out[3];
	ccv_nnc_hint_tensor_auto(CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(1, 2)), TENSOR_PARAM_LIST(a->info, w->info, bias->info), ccv_nnc_no_hint, out, 1);
	CHECK(out[0].dim[0] == B && out[0].dim[1] == M && out[0].dim[2] == N && out[0].dim[3] == 0, "b is %dx%dx%d", out[0].dim[0], out[0].dim[1], out[0].dim[2]);
	ccv_nnc_hint_tensor_auto(CMD_GEMM_BACKWARD(NO_TRANSPOSE, TRANSPOSE(1, 2)), TENSOR_PARAM_LIST(g->info, a->info, w->info, bias->info, b->info), ccv_nnc_no_hint, out, 3);
	CHECK(out[0].dim[2] == K && out[1].dim[1] == N && out[2].dim[0] == B && out[2].dim[1] == 1 && out[2].dim[2] == N, "gradient shapes");
	/* libnnc's bitmask: g, a, w read; bias and b never. */
	const uint64_t all = 0x1f, g_a_w = 0x7, g_a = 0x3, three = 0x7, dw_only = 0x2;
	CHECK(ccv_nnc_cmd_bitmask(CMD_GEMM_BACKWARD(), 5, 3, &all, 1, &three, 1), "all");
	CHECK(ccv_nnc_cmd_bitmask(CMD_GEMM_BACKWARD(), 5, 3, &g_a_w, 1, &three, 1), "g a w");
	CHECK(ccv_nnc_cmd_bitmask(CMD_GEMM_BACKWARD(), 5, 3, &g_a, 1, &dw_only, 1), "dw from g and a");
	CHECK(!ccv_nnc_cmd_bitmask(CMD_GEMM_BACKWARD(), 5, 3, &g_a, 1, &three, 1), "da needs w");
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(bias);
	ccv_nnc_tensor_free(full);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(da);
	ccv_nnc_tensor_free(dw);
	ccv_nnc_tensor_free(dbias);
}

/* y = 0.5 a + 2 bias (a row broadcast), then MUL's backward |g|a|b| -> |da|db|
 * with db summed over the broadcast rows, and SCALAR_MUL. */
static void test_broadcast(void)
{
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, M, N), 0);
	ccv_nnc_tensor_t* const r = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N), 0);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, M, N), 0);
	ccv_nnc_tensor_t* const g = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, M, N), 0);
	ccv_nnc_tensor_t* const da = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, M, N), 0);
	ccv_nnc_tensor_t* const dr = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N), 0);
	fill(a, M * N, 6), fill(r, N, 7), fill(g, M * N, 8);
	int i, j;
	CHECK(ccv_nnc_cmd_exec(CMD_ADD_FORWARD(0.5, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(a, r), TENSOR_LIST(y), 0) == CCV_NNC_EXEC_SUCCESS, "add");
	for (i = 0; i < M * N; i++)
		CHECK(near(y->data.f32[i], 0.5 * a->data.f32[i] + 2.0 * r->data.f32[i % N], 4), "add %d", i);
	CHECK(ccv_nnc_cmd_exec(CMD_MUL_FORWARD(3), ccv_nnc_no_hint, 0, TENSOR_LIST(a, r), TENSOR_LIST(y), 0) == CCV_NNC_EXEC_SUCCESS, "mul");
	CHECK(ccv_nnc_cmd_exec(CMD_MUL_BACKWARD(3), ccv_nnc_no_hint, 0, TENSOR_LIST(g, a, r, y), TENSOR_LIST(da, dr), 0) == CCV_NNC_EXEC_SUCCESS, "mul backward");
	for (j = 0; j < N; j++)
	{
		double s = 0;
		for (i = 0; i < M; i++)
		{
			CHECK(near(da->data.f32[i * N + j], 3.0 * g->data.f32[i * N + j] * r->data.f32[j], 4), "da %d %d", i, j);
			s += 3.0 * g->data.f32[i * N + j] * a->data.f32[i * N + j];
		}
		CHECK(near(dr->data.f32[j], s, 16), "db %d = %g, expected %g", j, dr->data.f32[j], s);
	}
	/* A NULL gradient reads as ones (libnnc's CCV_NNC_CMD_ATTR_NULL_IS_ONES). */
	CHECK(ccv_nnc_cmd_attr(CMD_ADD_BACKWARD(1, 1), CCV_NNC_CMD_ATTR_NULL_IS_ONES), "attr");
	CHECK(ccv_nnc_cmd_exec(CMD_ADD_BACKWARD(0.5, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(0, a, r), TENSOR_LIST(da, dr), 0) == CCV_NNC_EXEC_SUCCESS, "add backward, NULL g");
	CHECK(da->data.f32[5] == 0.5f && dr->data.f32[1] == 2.f * M, "da %g db %g", da->data.f32[5], dr->data.f32[1]);
	CHECK(ccv_nnc_cmd_exec(CMD_SCALAR_MUL_FORWARD(-1.5), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(y), 0) == CCV_NNC_EXEC_SUCCESS, "scalar mul");
	CHECK(y->data.f32[7] == -1.5f * a->data.f32[7], "scalar mul value");
	/* libnnc's in-place rule: y over a only. */
	CHECK(ccv_nnc_cmd_allow_inplace(CMD_ADD_FORWARD(1, 1), 0, 2, 0, 1) && !ccv_nnc_cmd_allow_inplace(CMD_ADD_FORWARD(1, 1), 1, 2, 0, 1), "in place");
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(r);
	ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(g);
	ccv_nnc_tensor_free(da);
	ccv_nnc_tensor_free(dr);
}

int main(void)
{
	ccv_nnc_init();
	test_batched_gemm();
	test_broadcast();
	printf("libnnc_style_a_blas: %d failed\n", failed);
	return failed ? 1 : 0;
}
