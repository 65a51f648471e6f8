/*
 * Micro ops as a libnnc user writes them, from the header's own examples:
 * broadcast x[w, h] to y[w, h, h] (shape { "dA0", "dA1", "dA1" }, reindex
 * { "i0", "i1", "0" }), transpose (shape { "dA1", "dA0" }, reindex
 * { "i1", "i0" }), a $parameter, exp and a sum, then the backward pass through
 * ccv_nnc_micro_grad, run with ccv_nnc_micro_combine_interpret and
 * CCV_NNC_CUSTOM_FORWARD / _BACKWARD. Values against double loops here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

enum { W = 3, H = 4 };

int main(void)
{
	ccv_nnc_init();
	int i, j, k;
	ccv_nnc_micro_io_t x = ccv_nnc_micro_input(2);
	/* Broadcast, then transpose the last two axes with a shift of $s (zeros where it reads outside). */
	ccv_nnc_micro_io_t bx = ccv_nnc_micro_reindex((const char*[]){ "dA0", "dA1", "dA1" }, 3, &x, 1, (const char*[]){ "i0", "i1", "0" }, 2, x);
	ccv_nnc_micro_io_t tx = ccv_nnc_micro_reindex((const char*[]){ "dA1", "dA0" }, 2, &x, 1, (const char*[]){ "i1 - $s", "i0" }, 2, x);
	/* z = sum over axis 1 of exp(transposed x): H x 1. */
	ccv_nnc_micro_io_t ex = ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_EXP, tx);
	ccv_nnc_micro_io_t z = ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_SUM, (int[]){ 1 }, 1, ex);
	CHECK(bx && tx && ex && z, "building the graph");
	ccv_nnc_micro_io_t outputs[] = { bx, z };
	ccv_nnc_micro_io_t ingrads[] = { ccv_nnc_micro_grad(bx), ccv_nnc_micro_grad(z), x };
	ccv_nnc_micro_io_t outgrads[] = { ccv_nnc_micro_grad(x) };
	ccv_nnc_micro_combine_t* const combine = ccv_nnc_micro_combine_new(&x, 1, (const char*[]){ "$s" }, 1, outputs, 2, ingrads, 3, outgrads, 1);
	CHECK(combine != 0, "ccv_nnc_micro_combine_new");
	if (!combine)
		return 1;
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, W, H), 0);
	ccv_nnc_tensor_t* const b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, W, H, H), 0);
	ccv_nnc_tensor_t* const c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, H, 1), 0);
	for (i = 0; i < W * H; i++)
		a->data.f32[i] = (float)((i * 5) % 7) / 4 - 0.75f;
	ccv_nnc_micro_scalar_t s = { .type = CCV_32S, .i32 = 1 };
	ccv_nnc_micro_combine_interpret(combine, CCV_NNC_CUSTOM_FORWARD, TENSOR_LIST(a), &s, 1, TENSOR_LIST(b, c));
	CHECK(ccv_nnc_error_message()[0] == 0, "forward");
	for (i = 0; i < W; i++)
		for (j = 0; j < H; j++)
			for (k = 0; k < H; k++)
				CHECK(b->data.f32[(i * H + j) * H + k] == a->data.f32[i * H + j], "broadcast[%d,%d,%d]", i, j, k);
	for (j = 0; j < H; j++)
	{
		double want = 0;
		for (i = 0; i < W; i++)
			want += exp(i >= 1 ? a->data.f32[(i - 1) * H + j] : 0); /* row 0 reads outside x: exp(0) */
		CHECK(fabs(c->data.f32[j] - want) < 1e-5, "z[%d] = %g, want %g", j, c->data.f32[j], want);
	}
	/* Backward: dx from gradients of both outputs. */
	ccv_nnc_tensor_t* const gb = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, W, H, H), 0);
	ccv_nnc_tensor_t* const gc = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, H, 1), 0);
	ccv_nnc_tensor_t* const dx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, W, H), 0);
	for (i = 0; i < W * H * H; i++)
		gb->data.f32[i] = (float)(i % 5) - 2;
	for (j = 0; j < H; j++)
		gc->data.f32[j] = (float)j + 0.5f;
	ccv_nnc_micro_combine_interpret(combine, CCV_NNC_CUSTOM_BACKWARD, TENSOR_LIST(gb, gc, a), &s, 1, TENSOR_LIST(dx));
	CHECK(ccv_nnc_error_message()[0] == 0, "backward");
	for (i = 0; i < W; i++)
		for (j = 0; j < H; j++)
		{
			/* The broadcast adds up its H copies; the shifted transpose sends x[i, j] to z[j] when i + 1 < W. */
			double want = 0;
			for (k = 0; k < H; k++)
				want += gb->data.f32[(i * H + j) * H + k];
			if (i + 1 < W)
				want += gc->data.f32[j] * exp(a->data.f32[i * H + j]);
			CHECK(fabs(dx->data.f32[i * H + j] - want) < 1e-4, "dx[%d,%d] = %g, want %g", i, j, dx->data.f32[i * H + j], want);
		}
	/* C for the forward pass: a string the caller frees (its results are checked in test/unit/micro). */
	char* const code = ccv_nnc_micro_combine_c(combine);
	CHECK(code != 0 && strstr(code, "ccv_nnc_micro_forward") != 0, "ccv_nnc_micro_combine_c");
	free(code);
	ccv_nnc_micro_combine_free(combine);
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
	ccv_nnc_tensor_free(gb);
	ccv_nnc_tensor_free(gc);
	ccv_nnc_tensor_free(dx);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
