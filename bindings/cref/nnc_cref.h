/*
 * nnc_cref.h — commands run through the C API directly, with libnnc's easy
 * macros (CMD_*, TENSOR_LIST, HINT): the reference the Go and C# bindings'
 * tests compare with, and the C side of their overhead programs. Header-only:
 * the Go test package includes it (functions static); the C# tests build it
 * into a small shared library with NNC_CREF_API defined as an export.
 */
#ifndef NNC_CREF_H
#define NNC_CREF_H
#ifndef NNC_CREF_API
#define NNC_CREF_API static
#endif
#include <stdlib.h>
#include <string.h>
#include <nnc/ccv_nnc.h>
#include <nnc/ccv_nnc_easy.h>

enum {
	K_DENSE = 0,        // GEMM(NO_TRANSPOSE, TRANSPOSE(0, 1)): x·wᵀ + b
	K_GEMM = 1,         // GEMM(): a·b
	K_CONV = 2,         // CONVOLUTION(p0 groups, p1 count, p2 kh, p3 kw, p4 c)
	K_MAX_POOL = 3,     // MAX_POOL(p0, p1)
	K_AVG_POOL = 4,     // AVERAGE_POOL(p0, p1)
	K_RELU = 5,
	K_SIGMOID = 6,
	K_TANH = 7,
	K_SOFTMAX = 8,
	K_SCE = 9,          // SOFTMAX_CROSSENTROPY()
	K_EWSUM = 10,
	K_EWPROD = 11,
	K_BNORM = 12,       // BATCH_NORM(p0 epsilon, 0, p1 momentum, 0, 1, 2)
	K_SGD = 13,         // SGD(0, p0 rate, p1 scale, p2 decay, p3 momentum, p4 dampening)
	K_MSE = 14,         // MSE(mean)
	K_ADD = 15,         // ADD(p0, p1)
	K_ADAM = 16,        // ADAM(p0 step, p1 rate, p2 beta1, p3 beta2, p4 decay, p5 epsilon, 0)
	K_LEAKY_RELU = 17,  // LEAKY_RELU(p0)
	K_EWEXP = 18,
	K_SCALAR_MUL = 19,  // SCALAR_MUL(p0)
	K_GELU = 20,        // GELU(p0)
	K_LAYER_NORM = 21,  // LAYER_NORM(p0 epsilon, 1 affine, axis 1)
	K_SWISH = 22,
	K_REDUCE_SUM = 23,  // REDUCE_SUM(axis 1)
};

static ccv_nnc_cmd_t cref_cmd(int kind, const float* p)
{
	switch (kind) {
	case K_DENSE: return CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1));
	case K_GEMM: return CMD_GEMM_FORWARD();
	case K_CONV: return CMD_CONVOLUTION_FORWARD((int)p[0], (int)p[1], (int)p[2], (int)p[3], (int)p[4]);
	case K_MAX_POOL: return CMD_MAX_POOL_FORWARD((int)p[0], (int)p[1]);
	case K_AVG_POOL: return CMD_AVERAGE_POOL_FORWARD((int)p[0], (int)p[1]);
	case K_RELU: return CMD_RELU_FORWARD();
	case K_SIGMOID: return CMD_SIGMOID_FORWARD();
	case K_TANH: return CMD_TANH_FORWARD();
	case K_SOFTMAX: return CMD_SOFTMAX_FORWARD();
	case K_SCE: return CMD_SOFTMAX_CROSSENTROPY_FORWARD();
	case K_EWSUM: return CMD_EWSUM_FORWARD();
	case K_EWPROD: return CMD_EWPROD_FORWARD();
	case K_BNORM: return CMD_BATCH_NORM_FORWARD(p[0], 0, p[1], 0, 1, 2);
	case K_SGD: return CMD_SGD_FORWARD(0, p[0], p[1], p[2], p[3], p[4]);
	case K_MSE: return CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_MEAN);
	case K_ADD: return CMD_ADD_FORWARD(p[0], p[1]);
	case K_ADAM: return CMD_ADAM_FORWARD((int)p[0], p[1], p[2], p[3], p[4], p[5], 0);
	case K_LEAKY_RELU: return CMD_LEAKY_RELU_FORWARD(p[0]);
	case K_EWEXP: return CMD_EWEXP_FORWARD();
	case K_SCALAR_MUL: return CMD_SCALAR_MUL_FORWARD(p[0]);
	case K_GELU: return CMD_GELU_FORWARD((int)p[0]);
	case K_LAYER_NORM: return CMD_LAYER_NORM_FORWARD(p[0], 1, 1);
	case K_SWISH: return CMD_SWISH_FORWARD();
	case K_REDUCE_SUM: return CMD_REDUCE_SUM_FORWARD(1);
	}
	return CMD_NOOP();
}

// Run kind on n tensors described by dims (12 ints each, packed NHWC fp32 in
// data[i]); the first ni are inputs. A NULL data[i] is an empty slot. hint:
// stride and symmetric padding (0, 0: no hint). On failure msg receives the C
// message.
NNC_CREF_API int cref_exec(int kind, const float* p, int ni, int no, float** data, const int* dims, int stride, int pad, char* msg, int msg_size)
{
	ccv_nnc_tensor_t* t[16] = {0};
	ccv_nnc_tensor_t* ts[16] = {0};
	for (int i = 0; i < ni + no; i++) {
		if (!data[i])
			continue;
		ccv_nnc_tensor_param_t params = CPU_TENSOR_NHWC(32F, 1);
		memcpy(params.dim, dims + i * CCV_NNC_MAX_DIM_ALLOC, sizeof(params.dim));
		t[i] = ccv_nnc_tensor_new(data[i], params, 0);
		if (!t[i])
			goto fail;
		ts[i] = t[i];
	}
	ccv_nnc_hint_t hint = ccv_nnc_no_hint;
	if (stride > 0)
		hint = HINT((stride, stride), (pad, pad));
	int code = ccv_nnc_cmd_exec(cref_cmd(kind, p), hint, 0, ts, ni, ts + ni, no, 0);
	if (code != CCV_NNC_EXEC_SUCCESS)
		snprintf(msg, msg_size, "%s", ccv_nnc_error_message());
	for (int i = 0; i < ni + no; i++)
		ccv_nnc_tensor_free(t[i]);
	return code;
fail:
	snprintf(msg, msg_size, "%s", ccv_nnc_error_message());
	for (int i = 0; i < ni + no; i++)
		ccv_nnc_tensor_free(t[i]);
	return -1;
}

// Nanoseconds per call of EWSUM on two 1-element tensors, n calls, from C.
NNC_CREF_API double cref_ewsum_ns(int n)
{
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0);
	a->data.f32[0] = 1;
	b->data.f32[0] = 2;
	const ccv_nnc_cmd_t cmd = CMD_EWSUM_FORWARD();
	const uint64_t start = ccv_nnc_cmd_mono_time();
	for (int i = 0; i < n; i++)
		ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0);
	const uint64_t end = ccv_nnc_cmd_mono_time();
	const int ok = c->data.f32[0] == 3;
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(b);
	ccv_nnc_tensor_free(c);
	return ok ? (double)(end - start) / n : -1;
}
#endif
