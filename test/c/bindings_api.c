/*
 * The C additions for language bindings (ccv_nnc.h, "Bindings support"):
 * each typed command constructor against the CMD_*() macro it stands for,
 * byte for byte; tensor params and hints against their macros; struct sizes
 * against sizeof; the live-object counts going up and back down for every
 * kind; the strided copy in and out of views against direct element reads;
 * the pointer-taking variants against the by-value calls; bad input giving a
 * code and a message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                                       \
	do {                                                       \
		if (cond)                                              \
			passed++;                                          \
		else {                                                 \
			failed++;                                          \
			printf("%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                               \
			printf(" (%s)\n", ccv_nnc_error_message());        \
		}                                                      \
	} while (0)

#define SAME_BYTES(a, b, what) do { \
		const __typeof__(a) _x = (a); \
		const __typeof__(b) _y = (b); \
		CHECK(sizeof(_x) == sizeof(_y) && memcmp(&_x, &_y, sizeof(_x)) == 0, "%s differs from its macro", what); \
	} while (0)

static int has_message(void)
{
	return ccv_nnc_error_message()[0] != 0;
}

static void test_abi(void)
{
	CHECK(ccv_nnc_abi_version() == CCV_NNC_ABI_VERSION, "abi %d", ccv_nnc_abi_version());
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR_PARAM) == sizeof(ccv_nnc_tensor_param_t), "tensor param");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_CMD_PARAM) == sizeof(ccv_nnc_cmd_param_t), "cmd param");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_CMD) == sizeof(ccv_nnc_cmd_t), "cmd");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_HINT) == sizeof(ccv_nnc_hint_t), "hint");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR) == sizeof(ccv_nnc_tensor_t), "tensor");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR_VIEW) == sizeof(ccv_nnc_tensor_view_t), "tensor view");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR_SYMBOL) == sizeof(ccv_nnc_tensor_symbol_t), "tensor symbol");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_GRAPH_EXEC_SYMBOL) == sizeof(ccv_nnc_graph_exec_symbol_t), "exec symbol");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_GRAPH_EXEC) == sizeof(ccv_nnc_graph_exec_t), "exec");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR_SYMBOL_MAP) == sizeof(ccv_nnc_tensor_symbol_map_t), "symbol map");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR_BIND) == sizeof(ccv_nnc_tensor_bind_t), "bind");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_EVALUATE_PARAM) == sizeof(ccv_cnnp_evaluate_param_t), "evaluate param");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_TENSOR_IO_OPTION) == sizeof(ccv_nnc_tensor_io_option_t), "io option");
	CHECK(ccv_nnc_type_size(CCV_NNC_TYPE_COLUMN_DATA) == sizeof(ccv_cnnp_column_data_t), "column data");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_type_size(0) == 0 && has_message(), "id 0");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_type_size(999) == 0 && strstr(ccv_nnc_error_message(), "999"), "id 999");
}

static void test_constructors(void)
{
	SAME_BYTES(ccv_nnc_cmd_gemm_forward(0, 0), CMD_GEMM_FORWARD(), "gemm");
	SAME_BYTES(ccv_nnc_cmd_gemm_forward((int[]){0, 0}, (int[]){0, 1}), CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), "gemm w^T");
	SAME_BYTES(ccv_nnc_cmd_gemm_forward((int[]){1, 2}, 0), CMD_GEMM_FORWARD(TRANSPOSE(1, 2)), "gemm a^T");
	SAME_BYTES(ccv_nnc_cmd_convolution_forward(1, 32, 3, (int[]){5, 5, 3}), CMD_CONVOLUTION_FORWARD(1, 32, 5, 5, 3), "conv");
	SAME_BYTES(ccv_nnc_cmd_convolution_forward(2, 8, 3, (int[]){3, 1, 4}), CMD_CONVOLUTION_FORWARD(2, 8, 3, 1, 4), "conv groups");
	SAME_BYTES(ccv_nnc_cmd_max_pool_forward(2, 3), CMD_MAX_POOL_FORWARD(2, 3), "max pool");
	SAME_BYTES(ccv_nnc_cmd_average_pool_forward(3, 2), CMD_AVERAGE_POOL_FORWARD(3, 2), "average pool");
	SAME_BYTES(ccv_nnc_cmd_relu_forward(), CMD_RELU_FORWARD(), "relu");
	SAME_BYTES(ccv_nnc_cmd_sigmoid_forward(), CMD_SIGMOID_FORWARD(), "sigmoid");
	SAME_BYTES(ccv_nnc_cmd_tanh_forward(), CMD_TANH_FORWARD(), "tanh");
	SAME_BYTES(ccv_nnc_cmd_gelu_forward(1), CMD_GELU_FORWARD(1), "gelu tanh");
	SAME_BYTES(ccv_nnc_cmd_gelu_forward(0), CMD_GELU_FORWARD(0), "gelu");
	SAME_BYTES(ccv_nnc_cmd_swish_forward(), CMD_SWISH_FORWARD(), "swish");
	SAME_BYTES(ccv_nnc_cmd_leaky_relu_forward(0.125f), CMD_LEAKY_RELU_FORWARD(0.125), "leaky relu");
	SAME_BYTES(ccv_nnc_cmd_softmax_forward(), CMD_SOFTMAX_FORWARD(), "softmax");
	SAME_BYTES(ccv_nnc_cmd_softmax_crossentropy_forward(0, 1), CMD_SOFTMAX_CROSSENTROPY_FORWARD(), "softmax xent");
	SAME_BYTES(ccv_nnc_cmd_softmax_crossentropy_forward(0.05f, 0.95f), CMD_SOFTMAX_CROSSENTROPY_FORWARD(0.05, 0.95), "softmax xent smoothed");
	SAME_BYTES(ccv_nnc_cmd_mse_forward(CCV_NNC_MSE_REDUCE_SUM), CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_SUM), "mse sum");
	SAME_BYTES(ccv_nnc_cmd_mse_forward(CCV_NNC_MSE_REDUCE_MEAN), CMD_MSE_FORWARD(CCV_NNC_MSE_REDUCE_MEAN), "mse mean");
	SAME_BYTES(ccv_nnc_cmd_ewsum_forward(), CMD_EWSUM_FORWARD(), "ewsum");
	SAME_BYTES(ccv_nnc_cmd_ewprod_forward(), CMD_EWPROD_FORWARD(), "ewprod");
	SAME_BYTES(ccv_nnc_cmd_ewdiv_forward(), CMD_EWDIV_FORWARD(), "ewdiv");
	SAME_BYTES(ccv_nnc_cmd_ewexp_forward(), CMD_EWEXP_FORWARD(), "ewexp");
	SAME_BYTES(ccv_nnc_cmd_ewlog_forward(), CMD_EWLOG_FORWARD(), "ewlog");
	SAME_BYTES(ccv_nnc_cmd_ewsqrt_forward(), CMD_EWSQRT_FORWARD(), "ewsqrt");
	SAME_BYTES(ccv_nnc_cmd_add_forward(0.5f, -2), CMD_ADD_FORWARD(0.5, -2), "add");
	SAME_BYTES(ccv_nnc_cmd_mul_forward(3), CMD_MUL_FORWARD(3), "mul");
	SAME_BYTES(ccv_nnc_cmd_scalar_mul_forward(-0.25f), CMD_SCALAR_MUL_FORWARD(-0.25), "scalar mul");
	SAME_BYTES(ccv_nnc_cmd_batch_norm_forward(1e-5f, 0, 0.9f, 3, (int[]){0, 1, 2}), CMD_BATCH_NORM_FORWARD(1e-5, 0, 0.9, 0, 1, 2), "batch norm");
	SAME_BYTES(ccv_nnc_cmd_batch_norm_forward(1e-3f, 1, 0.5f, 1, (int[]){1}), CMD_BATCH_NORM_FORWARD(1e-3, 1, 0.5, 1), "batch norm test");
	SAME_BYTES(ccv_nnc_cmd_layer_norm_forward(1e-6f, 1, 2, (int[]){1, 2}), CMD_LAYER_NORM_FORWARD(1e-6, 1, 1, 2), "layer norm");
	SAME_BYTES(ccv_nnc_cmd_sgd_forward(1, 0.01f, 0.5f, 1e-4f, 0.9f, 0.1f), CMD_SGD_FORWARD(1, 0.01, 0.5, 1e-4, 0.9, 0.1), "sgd");
	SAME_BYTES(ccv_nnc_cmd_adam_forward(3, 1e-3f, 0.9f, 0.999f, 0.01f, 1e-8f, 1), CMD_ADAM_FORWARD(3, 1e-3, 0.9, 0.999, 0.01, 1e-8, 1), "adam");
	SAME_BYTES(ccv_nnc_cmd_adamw_forward(7, 2e-3f, 0.8f, 0.99f, 0.1f, 1e-6f, 0), CMD_ADAMW_FORWARD(7, 2e-3, 0.8, 0.99, 0.1, 1e-6, 0), "adamw");
	SAME_BYTES(ccv_nnc_cmd_set_forward(1.5f), CMD_SET_FORWARD(1.5), "set");
	SAME_BYTES(ccv_nnc_cmd_data_transfer_forward(), CMD_DATA_TRANSFER_FORWARD(), "data transfer");
	SAME_BYTES(ccv_nnc_cmd_transpose_forward(1, 3), CMD_TRANSPOSE_FORWARD(1, 3), "transpose");
	SAME_BYTES(ccv_nnc_cmd_reduce_sum_forward(2, (int[]){0, 2}), CMD_REDUCE_SUM_FORWARD(0, 2), "reduce sum");
	SAME_BYTES(ccv_nnc_cmd_reduce_mean_forward(1, (int[]){1}), CMD_REDUCE_MEAN_FORWARD(1), "reduce mean");
	SAME_BYTES(ccv_nnc_cmd_make(CCV_NNC_RELU_BACKWARD, 0), CMD_RELU_BACKWARD(), "make relu backward");
	const ccv_nnc_cmd_param_t clamp = CMD_CLAMP_FORWARD(-1, 2).info;
	SAME_BYTES(ccv_nnc_cmd_make(CCV_NNC_CLAMP_FORWARD, &clamp), CMD_CLAMP_FORWARD(-1, 2), "make clamp");
	/* Bad arguments: the zero command and a message. */
	ccv_nnc_cmd_t zero;
	memset(&zero, 0, sizeof(zero));
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_cmd_reduce_sum_forward(CCV_NNC_MAX_DIM_ALLOC + 1, (int[]){0}), zero, "reduce with too many axes");
	CHECK(strstr(ccv_nnc_error_message(), "axis_count"), "message: %s", ccv_nnc_error_message());
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_cmd_batch_norm_forward(1e-5f, 0, 0.9f, 2, 0), zero, "batch norm with NULL axes");
	CHECK(has_message(), "message");
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_cmd_convolution_forward(1, 4, 0, (int[]){3}), zero, "conv without kernel");
	CHECK(has_message(), "message");
}

static void test_params_and_hints(void)
{
	SAME_BYTES(ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY, CCV_TENSOR_FORMAT_NHWC, CCV_32F, 2, (int[]){2, 3}), CPU_TENSOR_NHWC(32F, 2, 3), "nhwc");
	SAME_BYTES(ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY, CCV_TENSOR_FORMAT_NCHW, CCV_64F, 4, (int[]){1, 3, 5, 7}), CPU_TENSOR_NCHW(64F, 1, 3, 5, 7), "nchw");
	SAME_BYTES(ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY, CCV_TENSOR_FORMAT_CHWN, CCV_16F, 1, (int[]){9}), CPU_TENSOR_CHWN(16F, 9), "chwn");
	SAME_BYTES(ccv_nnc_tensor_param_make(CCV_TENSOR_GPU_MEMORY | CCV_COMPUTE_DEVICE_001, CCV_TENSOR_FORMAT_NHWC, CCV_32F, 2, (int[]){4, 4}), GPU_TENSOR_NHWC(001, 32F, 4, 4), "gpu");
	ccv_nnc_tensor_param_t zero;
	memset(&zero, 0, sizeof(zero));
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F, 2, (int[]){2, 0}), zero, "a zero dimension");
	CHECK(strstr(ccv_nnc_error_message(), "dimension 1"), "message: %s", ccv_nnc_error_message());
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F, CCV_NNC_MAX_DIM_ALLOC + 1, (int[CCV_NNC_MAX_DIM_ALLOC + 1]){1}), zero, "rank too big");
	CHECK(has_message(), "message");
	const ccv_nnc_tensor_param_t p = CPU_TENSOR_NHWC(32F, 2, 3, 4);
	CHECK(ccv_nnc_tensor_param_rank(&p) == 3, "rank");
	CHECK(ccv_nnc_tensor_param_count(&p) == 24, "count");
	CHECK(ccv_nnc_tensor_param_data_size(&p) == ccv_nnc_tensor_data_size(p), "data size");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_tensor_param_rank(0) == -1 && has_message(), "NULL rank");

	SAME_BYTES(ccv_nnc_hint_make(2, (int[]){2, 2}, (int[]){1, 1}, (int[]){1, 1}), HINT((2, 2), (1, 1)), "hint");
	SAME_BYTES(ccv_nnc_hint_make(2, (int[]){1, 3}, (int[]){0, 1}, (int[]){2, 0}), HINT((1, 3), (0, 1), (2, 0)), "hint begin/end");
	SAME_BYTES(ccv_nnc_hint_make(2, (int[]){2, 2}, 0, 0), HINT((2, 2)), "hint stride only");
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_hint_make(-1, 0, 0, 0), ccv_nnc_no_hint, "bad rank");
	CHECK(has_message(), "message");
	const ccv_nnc_cmd_t conv = CMD_CONVOLUTION_FORWARD(1, 4, 3, 3, 2);
	const ccv_nnc_tensor_param_t a = CPU_TENSOR_NHWC(32F, 1, 8, 8, 2), b = CPU_TENSOR_NHWC(32F, 1, 4, 4, 4);
	SAME_BYTES(ccv_nnc_hint_auto_p(&conv, &a, &b), ccv_nnc_hint_auto(conv.info, a, b), "hint auto");
	ccv_nnc_error_clear();
	SAME_BYTES(ccv_nnc_hint_auto_p(0, &a, &b), ccv_nnc_no_hint, "hint auto NULL");
	CHECK(has_message(), "message");
}

static void test_tensor_access(void)
{
	/* A 4x5 tensor of doubles, and a 2x3 view from (1, 1) of it. */
	ccv_nnc_tensor_t* const t = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 4, 5), 0);
	int i, j;
	for (i = 0; i < 20; i++)
		t->data.f64[i] = i * 1.25 - 3;
	ccv_nnc_tensor_view_t* const v = ccv_nnc_tensor_view_new(t, CPU_TENSOR_NHWC(64F, 2, 3), DIM_ALLOC(1, 1), DIM_ALLOC(5, 1));
	CHECK(ccv_nnc_tensor_is_view((ccv_nnc_tensor_t*)v) == 1 && ccv_nnc_tensor_is_view(t) == 0, "is_view");
	ccv_nnc_tensor_param_t p;
	CHECK(ccv_nnc_tensor_get_params((ccv_nnc_tensor_t*)v, &p) == 0 && p.dim[0] == 2 && p.dim[1] == 3 && p.dim[2] == 0 && p.datatype == CCV_64F, "view params");
	int stride[CCV_NNC_MAX_DIM_ALLOC];
	CHECK(ccv_nnc_tensor_get_strides((ccv_nnc_tensor_t*)v, stride) == 0 && stride[0] == 5 && stride[1] == 1 && stride[2] == 0, "view strides");
	CHECK(ccv_nnc_tensor_get_strides(t, stride) == 0 && stride[0] == 5 && stride[1] == 1, "tensor strides");
	CHECK(ccv_nnc_tensor_data_ptr((ccv_nnc_tensor_t*)v) == (void*)(t->data.f64 + 6), "view data");
	float out[6];
	CHECK(ccv_nnc_tensor_copy_to((ccv_nnc_tensor_t*)v, out, CCV_32F, 6) == 0, "copy_to");
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			CHECK(out[i * 3 + j] == (float)t->data.f64[(i + 1) * 5 + j + 1], "out[%d][%d] = %g", i, j, out[i * 3 + j]);
	const float in[6] = { 0.5f, -1, 2, 4.25f, 8, -16 };
	CHECK(ccv_nnc_tensor_copy_from((ccv_nnc_tensor_t*)v, in, CCV_32F, 6) == 0, "copy_from");
	for (i = 0; i < 4; i++)
		for (j = 0; j < 5; j++)
		{
			const int inside = i >= 1 && i < 3 && j >= 1 && j < 4;
			const double want = inside ? in[(i - 1) * 3 + j - 1] : (i * 5 + j) * 1.25 - 3;
			CHECK(t->data.f64[i * 5 + j] == want, "t[%d][%d] = %g, want %g", i, j, t->data.f64[i * 5 + j], want);
		}
	/* A plain tensor, same type: the packed path. */
	double all[20];
	CHECK(ccv_nnc_tensor_copy_to(t, all, CCV_64F, 20) == 0 && all[19] == t->data.f64[19] && all[6] == 0.5, "packed copy_to");
	int ints[20];
	CHECK(ccv_nnc_tensor_copy_to(t, ints, CCV_32S, 20) == 0 && ints[19] == 21 && ints[0] == -3 && ints[1] == -2, "to int, rounded to nearest: %d %d %d", ints[19], ints[0], ints[1]);
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_tensor_copy_to(t, all, CCV_64F, 19) == -1 && strstr(ccv_nnc_error_message(), "count 19"), "short count");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_tensor_copy_from(t, 0, CCV_64F, 20) == -1 && has_message(), "NULL values");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_tensor_copy_from(t, all, 12345, 20) == -1 && has_message(), "bad datatype");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_tensor_get_params(0, &p) == -1 && has_message(), "NULL tensor");
	ccv_nnc_tensor_view_free(v);
	ccv_nnc_tensor_free(t);
}

static void test_exec_p(void)
{
	ccv_nnc_tensor_t* const a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 4), 0);
	ccv_nnc_tensor_t* const w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 5, 4), 0);
	ccv_nnc_tensor_t* const c1 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	ccv_nnc_tensor_t* const c2 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 5), 0);
	int i;
	for (i = 0; i < 12; i++)
		a->data.f32[i] = sinf(i * 0.7f);
	for (i = 0; i < 20; i++)
		w->data.f32[i] = cosf(i * 0.3f);
	const ccv_nnc_cmd_t gemm = ccv_nnc_cmd_gemm_forward(0, (int[]){0, 1});
	CHECK(ccv_nnc_cmd_exec(CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), ccv_nnc_no_hint, 0, TENSOR_LIST(a, w), TENSOR_LIST(c1), 0) == CCV_NNC_EXEC_SUCCESS, "exec");
	CHECK(ccv_nnc_cmd_exec_p(&gemm, 0, 0, TENSOR_LIST(a, w), TENSOR_LIST(c2), 0) == CCV_NNC_EXEC_SUCCESS, "exec_p");
	CHECK(memcmp(c1->data.f32, c2->data.f32, 15 * sizeof(float)) == 0, "same result");
	double s = 0;
	for (i = 0; i < 4; i++)
		s += (double)a->data.f32[4 + i] * w->data.f32[2 * 4 + i];
	CHECK(fabs(c2->data.f32[1 * 5 + 2] - s) < 1e-5, "c[1][2] = %g, want %g", c2->data.f32[7], s);
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_cmd_exec_p(0, 0, 0, TENSOR_LIST(a, w), TENSOR_LIST(c2), 0) == CCV_NNC_EXEC_INVALID && has_message(), "NULL cmd");
	/* A bad shape: the code and the message come through the pointer variant too. */
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_cmd_exec_p(&gemm, 0, 0, TENSOR_LIST(w, w), TENSOR_LIST(c2), 0) != CCV_NNC_EXEC_SUCCESS && has_message(), "bad shape");
	ccv_nnc_tensor_free(a);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(c1);
	ccv_nnc_tensor_free(c2);
}

static void test_dynamic_and_model_p(void)
{
	/* minimize x^2 . 1 by one SGD step: x <- x - rate * 2x. */
	ccv_nnc_dynamic_graph_t* const g = ccv_nnc_dynamic_graph_new();
	ccv_nnc_tensor_variable_t x = ccv_nnc_tensor_variable_new(g, CPU_TENSOR_NHWC(32F, 3));
	ccv_nnc_tensor_t* const xt = ccv_nnc_tensor_from_variable(g, x);
	const float x0[3] = { 1, -2, 0.5f };
	CHECK(ccv_nnc_tensor_copy_from(xt, x0, CCV_32F, 3) == 0, "x");
	ccv_nnc_tensor_variable_t y = ccv_nnc_tensor_variable_new(g);
	const ccv_nnc_cmd_t prod = ccv_nnc_cmd_ewprod_forward();
	CHECK(ccv_nnc_dynamic_graph_exec_p(g, &prod, 0, 0, (ccv_nnc_tensor_variable_t[]){ x, x }, 2, &y, 1, 0, 0) == CCV_NNC_EXEC_SUCCESS, "exec_p");
	ccv_nnc_tensor_variable_t l = ccv_nnc_tensor_variable_new(g);
	const ccv_nnc_cmd_t sum = ccv_nnc_cmd_reduce_sum_forward(1, (int[]){0});
	CHECK(ccv_nnc_dynamic_graph_exec_p(g, &sum, 0, 0, &y, 1, &l, 1, 0, 0) == CCV_NNC_EXEC_SUCCESS, "sum");
	float lv;
	CHECK(ccv_nnc_tensor_copy_to(ccv_nnc_tensor_from_variable(g, l), &lv, CCV_32F, 1) == 0 && fabsf(lv - 5.25f) < 1e-6f, "loss %g", lv);
	const ccv_nnc_cmd_t sgd = ccv_nnc_cmd_sgd_forward(0, 0.1f, 1, 0, 0, 0);
	ccv_nnc_tensor_variable_t aux = ccv_nnc_tensor_variable_new(g);
	CHECK(ccv_nnc_dynamic_graph_minimize_p(g, &sgd, &l, 1, 0, &x, 1, &aux, 0, 0) == 0, "minimize_p");
	float x1[3];
	CHECK(ccv_nnc_tensor_copy_to(ccv_nnc_tensor_from_variable(g, x), x1, CCV_32F, 3) == 0, "read x");
	for (int i = 0; i < 3; i++)
		CHECK(fabsf(x1[i] - x0[i] * 0.8f) < 1e-6f, "x[%d] = %g, want %g", i, x1[i], x0[i] * 0.8f);
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_dynamic_graph_minimize_p(g, 0, &l, 1, 0, &x, 1, &aux, 0, 0) == -1 && has_message(), "NULL minimizer");
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_dynamic_graph_exec_p(g, 0, 0, 0, &x, 1, &y, 1, 0, 0) == CCV_NNC_EXEC_INVALID && has_message(), "NULL cmd");
	ccv_nnc_dynamic_graph_free(g);

	ccv_cnnp_model_t* const m = ccv_cnnp_dense(4, 0, 0, 1, "fc");
	const ccv_nnc_tensor_param_t in = CPU_TENSOR_NHWC(32F, 2, 3);
	const ccv_nnc_cmd_t mse = ccv_nnc_cmd_mse_forward(CCV_NNC_MSE_REDUCE_MEAN);
	CHECK(ccv_cnnp_model_compile_p(m, &in, 1, &sgd, &mse) == 0, "compile_p");
	CHECK(ccv_cnnp_model_parameter_count(m) == 2, "compiled: weight and bias");
	ccv_nnc_error_clear();
	CHECK(ccv_cnnp_model_compile_p(m, &in, 1, 0, &mse) == -1 && has_message(), "NULL minimizer");
	ccv_cnnp_model_free(m);
	ccv_cnnp_model_t* const bad = ccv_cnnp_dense(4, 0, 0, 1, "fc");
	ccv_nnc_error_clear();
	CHECK(ccv_cnnp_model_compile_p(bad, &in, -1, &sgd, &mse) == -1 && has_message(), "bad input count");
	ccv_cnnp_model_free(bad);
}

/* Every kind goes up while its objects live and back to where it was. */
static void test_live_counts(void)
{
	int64_t before[CCV_NNC_LIVE_KIND_COUNT];
	int k, i;
	for (k = 0; k < CCV_NNC_LIVE_KIND_COUNT; k++)
		before[k] = ccv_nnc_live_object_count(k);
	const int64_t total = ccv_nnc_live_object_count(-1);
	int64_t sum = 0;
	for (k = 0; k < CCV_NNC_LIVE_KIND_COUNT; k++)
		sum += before[k];
	CHECK(total == sum, "total %lld, sum %lld", (long long)total, (long long)sum);
	ccv_nnc_error_clear();
	CHECK(ccv_nnc_live_object_count(CCV_NNC_LIVE_KIND_COUNT) == -1 && has_message(), "bad kind");
#define DELTA(kind) (ccv_nnc_live_object_count(kind) - before[kind])

	/* Tensors, views, dense matrices. */
	ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_t* t2 = ccv_nnc_tensor_new(t->data.f32, CPU_TENSOR_NHWC(32F, 4), 0);
	ccv_nnc_tensor_view_t* v = ccv_nnc_tensor_view_new(t, CPU_TENSOR_NHWC(32F, 2), DIM_ALLOC(1), DIM_ALLOC(1));
	ccv_dense_matrix_t* dm = ccv_dense_matrix_new(3, 3, CCV_32F | CCV_C1, 0, 0);
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR) == 4, "tensors up: %lld", (long long)DELTA(CCV_NNC_LIVE_TENSOR));
	t = ccv_nnc_tensor_resize(t, CPU_TENSOR_NHWC(32F, 4096));
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR) == 4, "resize keeps one");
	ccv_nnc_tensor_view_free(v);
	ccv_nnc_tensor_free(t2);
	ccv_matrix_free(dm);
	ccv_nnc_tensor_free(t);
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR) == 0, "tensors down: %lld", (long long)DELTA(CCV_NNC_LIVE_TENSOR));
	/* 10,000 create/free pairs. */
	for (i = 0; i < 10000; i++)
		ccv_nnc_tensor_free(ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1), 0));
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR) == 0, "after 10000");
	/* Bad input leaves nothing behind. */
	CHECK(!ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 0), 0) && DELTA(CCV_NNC_LIVE_TENSOR) == 0, "failed new");

	/* Streams and signals. */
	ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
	ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(CCV_STREAM_CONTEXT_CPU);
	CHECK(DELTA(CCV_NNC_LIVE_STREAM_CONTEXT) == 1 && DELTA(CCV_NNC_LIVE_STREAM_SIGNAL) >= 1, "stream up");
	ccv_nnc_stream_signal_free(sig);
	ccv_nnc_stream_context_free(s);
	CHECK(DELTA(CCV_NNC_LIVE_STREAM_CONTEXT) == 0 && DELTA(CCV_NNC_LIVE_STREAM_SIGNAL) == 0, "stream down");

	/* Symbolic graph, compiled: concrete graph, arenas. */
	ccv_nnc_symbolic_graph_t* const sg = ccv_nnc_symbolic_graph_new();
	const ccv_nnc_tensor_symbol_t a = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 2), "a");
	const ccv_nnc_tensor_symbol_t b = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 2), "b");
	ccv_nnc_graph_exec_symbol_new(sg, CMD_RELU_FORWARD(), TENSOR_SYMBOL_LIST(a), TENSOR_SYMBOL_LIST(b), "relu");
	ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
	ccv_nnc_graph_t* graph = 0;
	ccv_nnc_tensor_arena_t* arena = 0;
	ccv_nnc_graph_exec_arena_t* exec_arena = 0;
	ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, TENSOR_SYMBOL_LIST(b), SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &graph, &arena, &exec_arena);
	CHECK(graph && arena && exec_arena, "compiled");
	CHECK(DELTA(CCV_NNC_LIVE_SYMBOLIC_GRAPH) == 1 && DELTA(CCV_NNC_LIVE_GRAPH) == 1 && DELTA(CCV_NNC_LIVE_TENSOR_ARENA) == 1 && DELTA(CCV_NNC_LIVE_GRAPH_EXEC_ARENA) == 1, "graphs up");
	ccv_nnc_graph_free(graph);
	ccv_nnc_tensor_arena_free(arena);
	ccv_nnc_graph_exec_arena_free(exec_arena);
	ccv_nnc_symbolic_graph_free(sg);
	CHECK(DELTA(CCV_NNC_LIVE_SYMBOLIC_GRAPH) == 0 && DELTA(CCV_NNC_LIVE_GRAPH) == 0 && DELTA(CCV_NNC_LIVE_TENSOR_ARENA) == 0 && DELTA(CCV_NNC_LIVE_GRAPH_EXEC_ARENA) == 0, "graphs down");
	ccv_nnc_tensor_tape_t* const tape = ccv_nnc_tensor_tape_new();
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR_TAPE) == 1, "tape up");
	ccv_nnc_tensor_tape_free(tape);
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR_TAPE) == 0, "tape down");

	/* Dynamic graph and variables (one freed by hand, the rest with the graph). */
	ccv_nnc_dynamic_graph_t* const g = ccv_nnc_dynamic_graph_new();
	ccv_nnc_tensor_variable_t x = ccv_nnc_tensor_variable_new(g, CPU_TENSOR_NHWC(32F, 2));
	ccv_nnc_tensor_variable_t y = ccv_nnc_tensor_variable_new(g);
	ccv_nnc_tensor_variable_t z = ccv_nnc_tensor_constant_new(g, CPU_TENSOR_NHWC(32F, 2));
	CHECK(DELTA(CCV_NNC_LIVE_DYNAMIC_GRAPH) == 1 && DELTA(CCV_NNC_LIVE_TENSOR_VARIABLE) == 3, "variables up");
	ccv_nnc_cmd_exec(CMD_SET_FORWARD(1), ccv_nnc_no_hint, 0, 0, 0, TENSOR_LIST(ccv_nnc_tensor_from_variable(g, x)), 0);
	CHECK(ccv_nnc_dynamic_graph_exec(g, CMD_RELU_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_VARIABLE_LIST(x), TENSOR_VARIABLE_LIST(y), 0, 0) == 0, "relu");
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR) >= 2, "variable tensors");
	ccv_nnc_tensor_variable_free(g, z);
	CHECK(DELTA(CCV_NNC_LIVE_TENSOR_VARIABLE) == 2, "variable freed");
	ccv_nnc_dynamic_graph_free(g);
	CHECK(DELTA(CCV_NNC_LIVE_DYNAMIC_GRAPH) == 0 && DELTA(CCV_NNC_LIVE_TENSOR_VARIABLE) == 0 && DELTA(CCV_NNC_LIVE_SYMBOLIC_GRAPH) == 0 && DELTA(CCV_NNC_LIVE_TENSOR) == 0, "dynamic down");

	/* Models: layers, a sequential model of them, compiled and run once. */
	ccv_cnnp_model_t* const seq = ccv_cnnp_sequential_new(MODEL_LIST(ccv_cnnp_dense(3, 0, 0, 1, 0), ccv_cnnp_relu(0), ccv_cnnp_dense(2, 0, 0, 1, 0)), 1, "mlp");
	CHECK(DELTA(CCV_NNC_LIVE_MODEL) == 4, "models up: %lld", (long long)DELTA(CCV_NNC_LIVE_MODEL));
	const ccv_nnc_tensor_param_t in = CPU_TENSOR_NHWC(32F, 2, 4);
	ccv_cnnp_model_compile(seq, &in, 1, CMD_SGD_FORWARD(0, 0.1, 1, 0, 0, 0), CMD_SOFTMAX_CROSSENTROPY_FORWARD());
	ccv_nnc_tensor_t* const xin = ccv_nnc_tensor_new(0, in, 0);
	ccv_nnc_tensor_t* const yout = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 2), 0);
	for (i = 0; i < 8; i++)
		xin->data.f32[i] = i * 0.1f;
	ccv_nnc_error_clear();
	ccv_cnnp_model_evaluate(seq, (ccv_cnnp_evaluate_param_t){ .is_test = 1 }, TENSOR_LIST(xin), TENSOR_LIST(yout), 0, 0);
	CHECK(!has_message(), "evaluate");
	ccv_nnc_tensor_free(xin);
	ccv_nnc_tensor_free(yout);
	ccv_cnnp_model_t* const copy = ccv_cnnp_model_copy(seq, 1);
	CHECK(DELTA(CCV_NNC_LIVE_MODEL) >= 5, "copy up");
	ccv_cnnp_model_free(copy);
	ccv_cnnp_model_free(seq);
	for (k = 0; k < CCV_NNC_LIVE_KIND_COUNT; k++)
		CHECK(DELTA(k) == 0, "kind %d left %lld after the model", k, (long long)DELTA(k));

	/* A dataframe and an iterator over it. */
	ccv_array_t* const arr = ccv_array_new(sizeof(int), 4, 0);
	for (i = 0; i < 4; i++)
		ccv_array_push(arr, &i);
	ccv_cnnp_dataframe_t* const df = ccv_cnnp_dataframe_from_array_new(arr);
	ccv_cnnp_dataframe_iter_t* const it = ccv_cnnp_dataframe_iter_new(df, COLUMN_ID_LIST(0));
	CHECK(DELTA(CCV_NNC_LIVE_DATAFRAME) == 1 && DELTA(CCV_NNC_LIVE_DATAFRAME_ITER) == 1, "dataframe up");
	void* row = 0;
	CHECK(ccv_cnnp_dataframe_iter_next(it, &row, 1, 0) == 0 && *(int*)row == 0, "row 0");
	ccv_cnnp_dataframe_iter_free(it);
	ccv_cnnp_dataframe_free(df);
	ccv_array_free(arr);
	CHECK(DELTA(CCV_NNC_LIVE_DATAFRAME) == 0 && DELTA(CCV_NNC_LIVE_DATAFRAME_ITER) == 0, "dataframe down");
	CHECK(ccv_nnc_live_object_count(-1) == total, "all back: %lld, was %lld", (long long)ccv_nnc_live_object_count(-1), (long long)total);
#undef DELTA
}

int main(void)
{
	ccv_nnc_init();
	test_abi();
	test_constructors();
	test_params_and_hints();
	test_tensor_access();
	test_exec_p();
	test_dynamic_and_model_p();
	test_live_counts();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
