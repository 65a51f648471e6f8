/* CONVOLUTION_TRANSPOSE through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_convt_forward(void);
int nnc_test_convt_example(float y[25], int dims[4]);

/* CMD_CONVOLUTION_TRANSPOSE_FORWARD(1, 3, 1, 2, 2, 4): groups 1, 3 outputs, output_padding 1, window 2x2 over 4 channels. */
ccv_nnc_cmd_t nnc_test_convt_forward(void) { return CMD_CONVOLUTION_TRANSPOSE_FORWARD(1, 3, 1, 2, 2, 4); }

/* A 2x2 one-channel image 1 2 / 3 4 up-convolved by a 3x3 window of ones,
 * stride 2, padding 1 and output_padding 1, plus a bias of 0.5: the output
 * shape from ccv_nnc_hint_tensor_auto into dims, the values into y. */
int nnc_test_convt_example(float y[25], int dims[4])
{
	const ccv_nnc_cmd_t cmd = CMD_CONVOLUTION_TRANSPOSE_FORWARD(1, 1, 1, 3, 3, 1);
	const ccv_nnc_hint_t hint = HINT((2, 2), (1, 1));
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 2, 1), 0);
	ccv_nnc_tensor_t* w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 3, 3, 1), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	ccv_nnc_tensor_param_t in[3] = { x->info, w->info, b->info };
	ccv_nnc_tensor_param_t p;
	ccv_nnc_hint_tensor_auto(cmd, in, 3, hint, &p, 1);
	int i;
	for (i = 0; i < 4; i++)
		dims[i] = p.dim[i];
	if (p.dim[1] * p.dim[2] > 25)
		return -1;
	ccv_nnc_tensor_t* out = ccv_nnc_tensor_new(0, p, 0);
	for (i = 0; i < 4; i++)
		x->data.f32[i] = (float)(i + 1);
	for (i = 0; i < 9; i++)
		w->data.f32[i] = 1;
	b->data.f32[0] = 0.5;
	const int code = ccv_nnc_cmd_exec(cmd, hint, 0, TENSOR_LIST(x, w, b), TENSOR_LIST(out), 0);
	for (i = 0; i < p.dim[1] * p.dim[2]; i++)
		y[i] = out->data.f32[i];
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(out);
	return code;
}
