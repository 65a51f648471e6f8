/* LSTM through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_lstm_forward(void);
int nnc_test_lstm_example(double y[12], double hy[2], double cy[2]);

/* CMD_LSTM_FORWARD(hidden 2, no projection, 1 layer, bias, time-major, bidirectional, no dropout, training) */
ccv_nnc_cmd_t nnc_test_lstm_forward(void) { return CMD_LSTM_FORWARD(2, 0, 1, 1, 0, 1, 0, 0); }

/* A 3-step sequence x = 0.1, 0.2, 0.3 (batch 1, one feature) through an LSTM of
 * hidden size 1 whose 16 packed weights are all 0.5; y, hy and cy out,
 * shapes from tensor_auto. Returns the exec code. */
int nnc_test_lstm_example(double y[12], double hy[2], double cy[2])
{
	const ccv_nnc_cmd_t lstm = CMD_LSTM_FORWARD(1, 0, 1, 1, 0, 0, 0, 0);
	ccv_nnc_tensor_t* const x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 3, 1, 1), 0);
	ccv_nnc_tensor_t* const xs = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32S, 1), 0);
	ccv_nnc_tensor_t* const w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 16), 0);
	ccv_nnc_tensor_t* const hx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 1, 1, 1), 0);
	ccv_nnc_tensor_t* const cx = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 1, 1, 1), 0);
	int i;
	for (i = 0; i < 3; i++)
		x->data.f64[i] = 0.1 * (i + 1);
	xs->data.i32[0] = 3;
	for (i = 0; i < 16; i++)
		w->data.f64[i] = 0.5;
	hx->data.f64[0] = cx->data.f64[0] = 0;
	ccv_nnc_tensor_param_t out[4];
	const ccv_nnc_tensor_param_t in[5] = { x->info, xs->info, hx->info, cx->info, w->info };
	ccv_nnc_hint_tensor_auto(lstm, in, 5, ccv_nnc_no_hint, out, 4);
	ccv_nnc_tensor_t* const yt = ccv_nnc_tensor_new(0, out[0], 0);
	ccv_nnc_tensor_t* const hyt = ccv_nnc_tensor_new(0, out[1], 0);
	ccv_nnc_tensor_t* const cyt = ccv_nnc_tensor_new(0, out[2], 0);
	ccv_nnc_tensor_t* const r = ccv_nnc_tensor_new(0, out[3], 0);
	const int code = ccv_nnc_cmd_exec(lstm, ccv_nnc_no_hint, 0, TENSOR_LIST(x, xs, hx, cx, w), TENSOR_LIST(yt, hyt, cyt, r), 0);
	if (code == CCV_NNC_EXEC_SUCCESS)
	{
		for (i = 0; i < 3; i++)
			y[i] = yt->data.f64[i];
		hy[0] = hyt->data.f64[0];
		cy[0] = cyt->data.f64[0];
	}
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(xs);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(hx);
	ccv_nnc_tensor_free(cx);
	ccv_nnc_tensor_free(yt);
	ccv_nnc_tensor_free(hyt);
	ccv_nnc_tensor_free(cyt);
	ccv_nnc_tensor_free(r);
	return code;
}
