/* The C side of nnc-overhead: the same one-element commands the Swift loop
 * runs, called the way a C program would (easy macros, TENSOR_LIST). */
#include <time.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "nnc_overhead_c.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double nnc_overhead_c_ns(int which, int iterations, int rounds)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	a->data.f32[0] = 1.5f;
	double best = 1e300;
	int r, i;
	for (r = 0; r < rounds; r++)
	{
		const double t0 = now_ns();
		if (which == 0)
			for (i = 0; i < iterations; i++)
				ccv_nnc_cmd_exec(CMD_SCALAR_MUL_FORWARD(2), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
		else
			for (i = 0; i < iterations; i++)
				ccv_nnc_cmd_exec(CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, a), TENSOR_LIST(b), 0);
		const double per = (now_ns() - t0) / iterations;
		if (per < best)
			best = per;
	}
	const int ok = b->data.f32[0] == 3.0f;
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	return ok ? best : -1;
}
