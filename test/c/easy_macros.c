/*
 * A C program in the style of libnnc's users: tensors from the easy macros,
 * commands from CMD_*(), argument lists from TENSOR_LIST, a dense matrix used
 * as a tensor. Every result is checked against values computed here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                                       \
	do {                                                       \
		if (cond)                                              \
			passed++;                                          \
		else {                                                 \
			failed++;                                          \
			printf("%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                               \
			printf(" (%s)\n", ccv_nnc_error_message());        \
		}                                                      \
	} while (0)

static void test_list_count(void)
{
	CHECK(LIST_COUNT() == 0, "empty list");
	CHECK(LIST_COUNT(a) == 1, "one");
	CHECK(LIST_COUNT(a, b, c) == 3, "three");
	CHECK(LIST_COUNT(a, b, c,) == 3, "trailing comma");
}

static void test_ewsum(void)
{
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	ccv_nnc_tensor_t* const b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	ccv_nnc_tensor_t* const c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	int i;
	for (i = 0; i < 15; i++)
	{
		a->data.f32[i] = i * 0.5f;
		b->data.f32[i] = 10 - i;
	}
	const int rc = ccv_nnc_cmd_exec(CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "EWSUM returned %d", rc);
	for (i = 0; i < 15; i++)
		CHECK(fabsf(c->data.f32[i] - (i * 0.5f + 10 - i)) < 1e-6f, "c[%d] = %g", i, c->data.f32[i]);
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
}

static void test_gemm_fully_connected(void)
{
	/* y = x * w^T + bias: the fully connected layer. */
	enum { M = 4, K = 6, N = 3 };
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, M, K), 0);
	ccv_nnc_tensor_t* const w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N, K), 0);
	ccv_nnc_tensor_t* const bias = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N), 0);
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, M, N), 0);
	int i, j, k;
	for (i = 0; i < M * K; i++)
		x->data.f32[i] = (float)((i * 7) % 11) / 11.f - 0.5f;
	for (i = 0; i < N * K; i++)
		w->data.f32[i] = (float)((i * 5) % 13) / 13.f - 0.5f;
	for (i = 0; i < N; i++)
		bias->data.f32[i] = (float)i;
	const int rc = ccv_nnc_cmd_exec(CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), ccv_nnc_no_hint, 0, TENSOR_LIST(x, w, bias), TENSOR_LIST(y), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "GEMM returned %d", rc);
	for (i = 0; i < M; i++)
		for (j = 0; j < N; j++)
		{
			double ref = bias->data.f32[j];
			for (k = 0; k < K; k++)
				ref += (double)x->data.f32[i * K + k] * w->data.f32[j * K + k];
			CHECK(fabs(y->data.f32[i * N + j] - ref) < 1e-5, "y[%d,%d] = %g, expected %g", i, j, y->data.f32[i * N + j], ref);
		}
	/* Output shape inference agrees. */
	ccv_nnc_tensor_param_t out = ccv_nnc_tensor_auto;
	ccv_nnc_hint_tensor_auto(CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), TENSOR_PARAM_LIST(x->info, w->info, bias->info), ccv_nnc_no_hint, &out, 1);
	CHECK(out.dim[0] == M && out.dim[1] == N && out.dim[2] == 0, "inferred %dx%dx%d", out.dim[0], out.dim[1], out.dim[2]);
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(bias);
	ccv_nnc_tensor_free(y);
}

static void test_matrix_as_tensor(void)
{
	/* An image from the ccv side, converted to half precision and back by NNC. */
	ccv_dense_matrix_t* const image = ccv_dense_matrix_new(4, 5, CCV_32F | CCV_C3, 0, 0);
	int i;
	for (i = 0; i < 4 * 5 * 3; i++)
		image->data.f32[i] = (float)i / 8.f; /* exact in fp16 */
	ccv_nnc_tensor_t* const half = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(16F, 4, 5, 3), 0);
	ccv_nnc_tensor_t* const back = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4, 5, 3), 0);
	int rc = ccv_nnc_cmd_exec(CMD_DATATYPE_CONVERSION_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST((ccv_nnc_tensor_t*)image), TENSOR_LIST(half), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "to fp16 returned %d", rc);
	rc = ccv_nnc_cmd_exec(CMD_DATATYPE_CONVERSION_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(half), TENSOR_LIST(back), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "to fp32 returned %d", rc);
	CHECK(ccv_nnc_tensor_eq(back, (ccv_nnc_tensor_t*)image) == 0, "round trip differs");
	ccv_nnc_tensor_free(half);
	ccv_nnc_tensor_free(back);
	ccv_matrix_free(image);
}

static void test_view_and_set(void)
{
	ccv_nnc_tensor_t* const t = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4, 4), 0);
	int i, j;
	for (i = 0; i < 16; i++)
		t->data.f32[i] = 0;
	ccv_nnc_tensor_view_t* const v = ccv_nnc_tensor_view_new(t, CPU_TENSOR_NHWC(32F, 2, 2), DIM_ALLOC(1, 1), DIM_ALLOC(4, 1));
	CHECK(v != 0, "view");
	const int rc = ccv_nnc_cmd_exec(CMD_SET_FORWARD(3), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST((ccv_nnc_tensor_t*)v), 0);
	CHECK(rc == CCV_NNC_EXEC_SUCCESS, "SET returned %d", rc);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
		{
			const float expect = (i >= 1 && i < 3 && j >= 1 && j < 3) ? 3 : 0;
			CHECK(t->data.f32[i * 4 + j] == expect, "t[%d,%d] = %g", i, j, t->data.f32[i * 4 + j]);
		}
	ccv_nnc_tensor_view_free(v);
	ccv_nnc_tensor_free(t);
}

static void test_bad_input(void)
{
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
	ccv_nnc_tensor_t* const b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4, 5), 0);
	ccv_nnc_tensor_t* const c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 5), 0);
	ccv_nnc_error_clear();
	const int rc = ccv_nnc_cmd_exec(CMD_GEMM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0);
	CHECK(rc == CCV_NNC_EXEC_INVALID, "mismatched GEMM returned %d", rc);
	CHECK(ccv_nnc_error_message()[0] != 0, "no message");
	CHECK(ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, -2), 0) == 0, "negative dimension accepted");
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
}

int main(void)
{
	ccv_nnc_init();
	test_list_count();
	test_ewsum();
	test_gemm_fully_connected();
	test_matrix_as_tensor();
	test_view_and_set();
	test_bad_input();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
