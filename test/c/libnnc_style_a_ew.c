/*
 * The element-wise family the way a libnnc program calls it: CMD_*() and
 * TENSOR_LIST with libnnc's slots (|g|forward inputs|forward outputs|, 0 for
 * what a backward does not read, a NULL gradient read as ones), checked
 * against closed forms computed here in double.
 */
#include <math.h>
#include <stdio.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#include "libnnc_style.h"

#define N 11

static int close_to(double got, double want)
{
	return fabs(got - want) <= 2e-6 * (fabs(want) + 1e-3);
}

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* t[10];
	int i;
	for (i = 0; i < 10; i++)
		t[i] = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, N), 0);
	ccv_nnc_tensor_t *const a = t[0], *const b = t[1], *const c = t[2], *const y = t[3], *const g = t[4];
	ccv_nnc_tensor_t *const da = t[5], *const db = t[6], *const dc = t[7], *const y2 = t[8], *const d = t[9];
	for (i = 0; i < N; i++)
	{
		a->data.f32[i] = 0.25f + (float)i / 4.f;
		b->data.f32[i] = 2.f - (float)i / 8.f;
		c->data.f32[i] = (float)((i % 3) + 1);
		g->data.f32[i] = (float)(i % 5) - 2.f;
	}
	/* EWSUM of three; its backward passes g through, or ones for a NULL g. */
	RUN(CMD_EWSUM_FORWARD(), TENSOR_LIST(a, b, c), TENSOR_LIST(y));
	for (i = 0; i < N; i++)
		CHECK(close_to(y->data.f32[i], (double)a->data.f32[i] + b->data.f32[i] + c->data.f32[i]), "ewsum %d", i);
	RUN(CMD_EWSUM_BACKWARD(), TENSOR_LIST(0, a, b, c, y), TENSOR_LIST(da, db));
	CHECK(da->data.f32[3] == 1 && db->data.f32[9] == 1, "NULL g is ones");
	/* EWPROD, backward |g|a|b|c|y| -> |da|db|dc|. */
	RUN(CMD_EWPROD_FORWARD(), TENSOR_LIST(a, b, c), TENSOR_LIST(y));
	RUN(CMD_EWPROD_BACKWARD(), TENSOR_LIST(g, a, b, c, y), TENSOR_LIST(da, db, dc));
	for (i = 0; i < N; i++)
	{
		const double x0 = a->data.f32[i], x1 = b->data.f32[i], x2 = c->data.f32[i], gv = g->data.f32[i];
		CHECK(close_to(y->data.f32[i], x0 * x1 * x2), "ewprod %d", i);
		CHECK(close_to(da->data.f32[i], gv * x1 * x2) && close_to(db->data.f32[i], gv * x0 * x2) && close_to(dc->data.f32[i], gv * x0 * x1), "ewprod backward %d", i);
	}
	/* EWDIV with a NULL numerator (1 / b), backward |g|a|b|y|: da = g / b, db = -g y / b. */
	RUN(CMD_EWDIV_FORWARD(), TENSOR_LIST(0, b), TENSOR_LIST(y2));
	RUN(CMD_EWDIV_FORWARD(), TENSOR_LIST(a, b), TENSOR_LIST(y));
	RUN(CMD_EWDIV_BACKWARD(), TENSOR_LIST(g, 0, b, y), TENSOR_LIST(da, db));
	for (i = 0; i < N; i++)
	{
		const double bv = b->data.f32[i], gv = g->data.f32[i], yv = y->data.f32[i];
		CHECK(close_to(y2->data.f32[i], 1 / bv), "1 / b %d", i);
		CHECK(close_to(da->data.f32[i], gv / bv) && close_to(db->data.f32[i], -gv * yv / bv), "ewdiv backward %d", i);
	}
	/* EWEXP backward reads y (|g|0|y|), EWLOG x (|g|x|), EWSQRT y. */
	RUN(CMD_EWEXP_FORWARD(), TENSOR_LIST(a), TENSOR_LIST(y));
	RUN(CMD_EWEXP_BACKWARD(), TENSOR_LIST(g, 0, y), TENSOR_LIST(d));
	for (i = 0; i < N; i++)
		CHECK(close_to(y->data.f32[i], exp(a->data.f32[i])) && close_to(d->data.f32[i], g->data.f32[i] * exp(a->data.f32[i])), "exp %d", i);
	RUN(CMD_EWLOG_FORWARD(), TENSOR_LIST(a), TENSOR_LIST(y));
	RUN(CMD_EWLOG_BACKWARD(), TENSOR_LIST(g, a), TENSOR_LIST(d));
	for (i = 0; i < N; i++)
		CHECK(close_to(y->data.f32[i], log(a->data.f32[i])) && close_to(d->data.f32[i], g->data.f32[i] / a->data.f32[i]), "log %d", i);
	RUN(CMD_EWSQRT_FORWARD(), TENSOR_LIST(a), TENSOR_LIST(y));
	RUN(CMD_EWSQRT_BACKWARD(), TENSOR_LIST(g, 0, y), TENSOR_LIST(d));
	for (i = 0; i < N; i++)
		CHECK(close_to(d->data.f32[i], g->data.f32[i] / (2 * sqrt(a->data.f32[i]))), "sqrt %d", i);
	/* CLAMP to [0.5, 2], backward |g|0|y|: g strictly inside, 0 on a bound. */
	RUN(CMD_CLAMP_FORWARD(0.5, 2), TENSOR_LIST(a), TENSOR_LIST(y));
	RUN(CMD_CLAMP_BACKWARD(0.5, 2), TENSOR_LIST(g, 0, y), TENSOR_LIST(d));
	for (i = 0; i < N; i++)
	{
		const double x = a->data.f32[i];
		CHECK(y->data.f32[i] == (float)fmin(fmax(x, 0.5), 2), "clamp %d", i);
		CHECK(d->data.f32[i] == (x > 0.5 && x < 2 ? g->data.f32[i] : 0), "clamp backward %d", i);
	}
	/* MAX, backward |g|a|b|y| -> |da|db| (both, as libnnc asks). */
	RUN(CMD_MAX_FORWARD(), TENSOR_LIST(a, b), TENSOR_LIST(y));
	RUN(CMD_MAX_BACKWARD(), TENSOR_LIST(g, a, b, y), TENSOR_LIST(da, db));
	for (i = 0; i < N; i++)
	{
		const float x0 = a->data.f32[i], x1 = b->data.f32[i], gv = g->data.f32[i];
		CHECK(y->data.f32[i] == fmaxf(x0, x1), "max %d", i);
		const double wa = x0 > x1 ? 1 : x0 < x1 ? 0 : 0.5;
		CHECK(close_to(da->data.f32[i], gv * wa) && close_to(db->data.f32[i], gv * (1 - wa)), "max backward %d", i);
	}
	/* libnnc's bitmasks: EWEXP's backward reads g and y, not x. */
	const uint64_t g_y = 0x5, g_x = 0x3, one = 1;
	CHECK(ccv_nnc_cmd_bitmask(CMD_EWEXP_BACKWARD(), 3, 1, &g_y, 1, &one, 1) && !ccv_nnc_cmd_bitmask(CMD_EWEXP_BACKWARD(), 3, 1, &g_x, 1, &one, 1), "exp bitmask");
	CHECK(ccv_nnc_cmd_bitmask(CMD_EWLOG_BACKWARD(), 3, 1, &g_x, 1, &one, 1), "log bitmask");
	for (i = 0; i < 10; i++)
		ccv_nnc_tensor_free(t[i]);
	printf("libnnc_style_a_ew: %d failed\n", failed);
	return failed ? 1 : 0;
}
