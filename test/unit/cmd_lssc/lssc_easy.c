/* COMPRESSION_LSSC through its CMD_* easy macros, expanded by C. */
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_lssc_example(unsigned short packed[4], unsigned short back[16]);

/* One 4 x 4 block of one channel holding 0, 1, 2, 3 (as 16F) in turn,
 * compressed into packed[4] and decompressed into back[16]; returns the
 * first failing exec code. */
int nnc_test_lssc_example(unsigned short packed[4], unsigned short back[16])
{
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(16F, 4, 4, 1), 0);
	ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(16F, 1, 4, 1), 0);
	ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(16F, 4, 4, 1), 0);
	/* 16F bits of 0, 1, 2, 3. */
	const unsigned short v[4] = {0x0000, 0x3c00, 0x4000, 0x4200};
	int i;
	for (i = 0; i < 16; i++)
		x->data.f16[i].v = v[i % 4];
	int code = ccv_nnc_cmd_exec(CMD_COMPRESSION_LSSC_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x), TENSOR_LIST(c), 0);
	if (!code)
		code = ccv_nnc_cmd_exec(CMD_COMPRESSION_LSSC_BACKWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(c), TENSOR_LIST(y), 0);
	for (i = 0; i < 4; i++)
		packed[i] = c->data.f16[i].v;
	for (i = 0; i < 16; i++)
		back[i] = y->data.f16[i].v;
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(c);
	ccv_nnc_tensor_free(y);
	return code;
}
