/* Palettising into the bytes of a CCV_QX tensor's parameters from C, libnnc style. */
#include <stdlib.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

int nnc_test_palettize_example(float back[100], size_t sizes[2]);

/* 100 floats (i % 7 - 3) palettised at 4 bits, 32 per block, into a buffer of
 * the CCV_QX parameters' size, and back into back[100]; sizes[0] the bytes
 * ccv_nnc_palettize wrote, sizes[1] what the CCV_QX parameters say the data
 * holds. Returns 0 on success. */
int nnc_test_palettize_example(float back[100], size_t sizes[2])
{
	const ccv_nnc_tensor_param_t params = CPU_TENSOR_NHWC(32F, 10, 10);
	const ccv_nnc_tensor_param_t qparams = ccv_nnc_tensor_palettize(params, 4, 32);
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, params, 0);
	unsigned char* q = (unsigned char*)malloc(ccv_nnc_tensor_data_size(qparams));
	int i;
	if (!x || !q)
		return -1;
	for (i = 0; i < 100; i++)
		x->data.f32[i] = (float)(i % 7 - 3);
	sizes[0] = ccv_nnc_palettize(x->data.f32, CCV_32F, CCV_TENSOR_CPU_MEMORY, 100, 4, 32, q, ccv_nnc_tensor_data_size(qparams));
	sizes[1] = ccv_nnc_tensor_data_size_without_padding(qparams);
	ccv_nnc_depalettize(q, CCV_32F, CCV_TENSOR_CPU_MEMORY, sizes[0], 4, 32, back, 100);
	ccv_nnc_tensor_free(x);
	free(q);
	return 0;
}
