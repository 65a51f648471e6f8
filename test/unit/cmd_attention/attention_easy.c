/* SCALED_DOT_PRODUCT_ATTENTION through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t nnc_test_sdpa_forward(void);
int nnc_test_sdpa_example(float o[4]);

/* CMD_SCALED_DOT_PRODUCT_ATTENTION_FORWARD(0.5, 1) */
ccv_nnc_cmd_t nnc_test_sdpa_forward(void) { return CMD_SCALED_DOT_PRODUCT_ATTENTION_FORWARD(0.5, 1); }

/* One head, two queries and two keys of size 1, causal: query 0 sees key 0
 * only, query 1 both (q = 1, 1; k = 0, 2 (log 2 after scale 0.5 ... see the
 * test); v rows (1, 2) and (3, 4)); o [1, 2, 1, 2] into o. */
int nnc_test_sdpa_example(float o[4])
{
	ccv_nnc_tensor_t* q = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 1, 1), 0);
	ccv_nnc_tensor_t* k = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 1, 1), 0);
	ccv_nnc_tensor_t* v = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 1, 2), 0);
	ccv_nnc_tensor_param_t in[3] = { q->info, k->info, v->info };
	ccv_nnc_tensor_param_t out[2];
	ccv_nnc_hint_tensor_auto(CMD_SCALED_DOT_PRODUCT_ATTENTION_FORWARD(0.5, 1), in, 3, ccv_nnc_no_hint, out, 2);
	ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(0, out[0], 0);
	ccv_nnc_tensor_t* lse = ccv_nnc_tensor_new(0, out[1], 0);
	q->data.f32[0] = 1, q->data.f32[1] = 1;
	k->data.f32[0] = 0, k->data.f32[1] = 2;
	v->data.f32[0] = 1, v->data.f32[1] = 2, v->data.f32[2] = 3, v->data.f32[3] = 4;
	const int code = ccv_nnc_cmd_exec(CMD_SCALED_DOT_PRODUCT_ATTENTION_FORWARD(0.5, 1), ccv_nnc_no_hint, 0, TENSOR_LIST(q, k, v), TENSOR_LIST(y, lse), 0);
	int i;
	for (i = 0; i < 4; i++)
		o[i] = y->data.f32[i];
	ccv_nnc_tensor_free(q);
	ccv_nnc_tensor_free(k);
	ccv_nnc_tensor_free(v);
	ccv_nnc_tensor_free(y);
	ccv_nnc_tensor_free(lse);
	return code;
}
