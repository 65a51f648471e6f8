#include "util_easy.h"

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

ccv_nnc_cmd_t util_easy_set(float value) { return CMD_SET_FORWARD(value); }
ccv_nnc_cmd_t util_easy_set_backward(float value) { return CMD_SET_BACKWARD(value); }
ccv_nnc_cmd_t util_easy_transfer(void) { return CMD_DATA_TRANSFER_FORWARD(); }
ccv_nnc_cmd_t util_easy_format(void) { return CMD_FORMAT_TRANSFORM_FORWARD(); }
ccv_nnc_cmd_t util_easy_convert(void) { return CMD_DATATYPE_CONVERSION_FORWARD(); }

int util_easy_pipeline(float value, unsigned short* half_out)
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1, 2, 3, 4), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(32F, 1, 4, 2, 3), 0);
	ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NCHW(16F, 1, 4, 2, 3), 0);
	int code = ccv_nnc_cmd_exec(CMD_SET_FORWARD(value), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(a), 0);
	if (code == 0)
		code = ccv_nnc_cmd_exec(CMD_FORMAT_TRANSFORM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(b), 0);
	if (code == 0)
		code = ccv_nnc_cmd_exec(CMD_DATATYPE_CONVERSION_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(b), TENSOR_LIST(c), 0);
	if (code == 0)
		*half_out = (unsigned short)c->data.f16[23].v;
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
	return code;
}
