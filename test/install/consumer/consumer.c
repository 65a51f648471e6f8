/* A program outside the NNC tree, built against an installed NNC. */
#include <stdio.h>
#include <nnc/ccv_nnc.h>
#include <nnc/ccv_nnc_easy.h>

int main(void)
{
	ccv_nnc_init();
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 2), 0);
	if (!a)
		return 1;
	a->data.f32[0] = 1;
	a->data.f32[1] = 2;
	a->data.f32[2] = 3;
	a->data.f32[3] = 4;
	ccv_nnc_tensor_zero(a);
	const int zero = a->data.f32[3] == 0;
	ccv_nnc_tensor_free(a);
	printf("%s nnc %s\n", zero ? "consumer ok" : "consumer FAILED", ccv_nnc_version());
	return zero ? 0 : 1;
}
