/* The single-device collectives through their CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_comm_example(float out[4]);

/* a = {1, 2}, b = {10, 20}: allreduced in place (out[0..1] = a after), then
 * a broadcast to c (out[2..3]); returns the first failing exec code. */
int nnc_test_comm_example(float out[4])
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2), 0);
	ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2), 0);
	a->data.f32[0] = 1, a->data.f32[1] = 2;
	b->data.f32[0] = 10, b->data.f32[1] = 20;
	int code = ccv_nnc_cmd_exec(CMD_COMM_ALLREDUCE_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(a, b), 0);
	if (!code)
		code = ccv_nnc_cmd_exec(CMD_COMM_BROADCAST_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(b), TENSOR_LIST(c), 0);
	out[0] = a->data.f32[0], out[1] = a->data.f32[1];
	out[2] = c->data.f32[0], out[3] = c->data.f32[1];
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
	return code;
}
