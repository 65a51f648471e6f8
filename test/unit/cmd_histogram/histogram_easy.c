/* HISTOGRAM through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_histogram_example(int even[7], int logs[6], int bins[5], float stats[4]);

/* x = {-1, 0, 0.5, 1, 2.5, 4, 7, 9}: an even histogram of 4 bins over [0, 4)
 * into even[7], a logarithmic one (min 1, max 4, rate 2) into logs[6], one
 * over the edges {0, 1, 4} into bins[5] with the statistics into stats[4];
 * returns the first failing exec code (0 if none). */
int nnc_test_histogram_example(int even[7], int logs[6], int bins[5], float stats[4])
{
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
	ccv_nnc_tensor_t* edges = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3), 0);
	ccv_nnc_tensor_t* h7 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 7), 0);
	ccv_nnc_tensor_t* h6 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 6), 0);
	ccv_nnc_tensor_t* h5 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 5), 0);
	ccv_nnc_tensor_t* s = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	const float xv[8] = {-1, 0, 0.5, 1, 2.5, 4, 7, 9};
	int i, code;
	for (i = 0; i < 8; i++)
		x->data.f32[i] = xv[i];
	edges->data.f32[0] = 0;
	edges->data.f32[1] = 1;
	edges->data.f32[2] = 4;
	code = ccv_nnc_cmd_exec(CMD_HISTOGRAM_EVEN(4, 0, 4), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(h7), 0);
	if (!code)
		code = ccv_nnc_cmd_exec(CMD_HISTOGRAM_LOG(1, 4, 2), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(h6), 0);
	if (!code)
		code = ccv_nnc_cmd_exec(CMD_HISTOGRAM_BINS(), ccv_nnc_no_hint, 0, TENSOR_LIST(x, edges), TENSOR_LIST(h5, s), 0);
	for (i = 0; i < 7; i++)
		even[i] = h7->data.i32[i];
	for (i = 0; i < 6; i++)
		logs[i] = h6->data.i32[i];
	for (i = 0; i < 5; i++)
		bins[i] = h5->data.i32[i];
	for (i = 0; i < 4; i++)
		stats[i] = s->data.f32[i];
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(edges);
	ccv_nnc_tensor_free(h7);
	ccv_nnc_tensor_free(h6);
	ccv_nnc_tensor_free(h5);
	ccv_nnc_tensor_free(s);
	return code;
}
