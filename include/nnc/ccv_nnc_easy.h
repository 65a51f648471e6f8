/*
 * ccv_nnc_easy.h — shorthand for NNC programs written in C.
 *
 * Macros that turn lists into (array, count) argument pairs, tensor parameter
 * literals, hints, and the CMD_*() command constructors:
 *
 *   ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 64, 784), 0);
 *   ccv_nnc_cmd_exec(CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0);
 *   ccv_nnc_cmd_exec(CMD_CONVOLUTION_FORWARD(1, 32, 5, 5, 1), HINT((1, 1), (2, 2)), 0, ...);
 *
 * The macros expand to C99 compound literals with designated initialisers,
 * which C++ does not accept in full: use them from C (gnu11). The inline
 * helpers below compile as C and C++ alike.
 */
#ifndef GUARD_ccv_nnc_easy_h
#define GUARD_ccv_nnc_easy_h

#include "ccv.h"
#include "nnc/ccv_nnc.h"

/* libccv keeps CCV_SWAP in an internal header, so when libccv's ccv.h is the
 * one in effect nothing has defined it yet. */
#ifndef CCV_SWAP
#define CCV_SWAP(a, b, t) ((t) = (a), (a) = (b), (b) = (t))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NOOP_GRAPH_WHILE_EXPR (ccv_nnc_graph_while_f)(1)
#define NOOP_GRAPH_CASE_OF_EXPR (ccv_nnc_graph_case_of_f)(1)

/*
 * LIST_COUNT(...) counts its arguments (up to 64), so that LIST_COUNT() is 0
 * and a trailing comma adds nothing. Each argument position contributes
 * LIST_COUNT_E(arg): 1 when the argument is present, 0 when it is empty.
 */
#define LIST_COUNT_01(_0,_1,_2,...) _2
#define LIST_COUNT_E(...) LIST_COUNT_01(_0,##__VA_ARGS__,1,0)
#define LIST_COUNT_N(_0,_1,_2,_3,_4,_5,_6,_7,_8,_9,_10,_11,_12,_13,_14,_15,_16,_17,_18,_19,_20,_21,_22,_23,_24,_25,_26,_27,_28,_29,_30,_31,_32,_33,_34,_35,_36,_37,_38,_39,_40,_41,_42,_43,_44,_45,_46,_47,_48,_49,_50,_51,_52,_53,_54,_55,_56,_57,_58,_59,_60,_61,_62,_63,...) \
	(LIST_COUNT_E(_0)+LIST_COUNT_E(_1)+LIST_COUNT_E(_2)+LIST_COUNT_E(_3)+LIST_COUNT_E(_4)+LIST_COUNT_E(_5)+LIST_COUNT_E(_6)+LIST_COUNT_E(_7) \
	+LIST_COUNT_E(_8)+LIST_COUNT_E(_9)+LIST_COUNT_E(_10)+LIST_COUNT_E(_11)+LIST_COUNT_E(_12)+LIST_COUNT_E(_13)+LIST_COUNT_E(_14)+LIST_COUNT_E(_15) \
	+LIST_COUNT_E(_16)+LIST_COUNT_E(_17)+LIST_COUNT_E(_18)+LIST_COUNT_E(_19)+LIST_COUNT_E(_20)+LIST_COUNT_E(_21)+LIST_COUNT_E(_22)+LIST_COUNT_E(_23) \
	+LIST_COUNT_E(_24)+LIST_COUNT_E(_25)+LIST_COUNT_E(_26)+LIST_COUNT_E(_27)+LIST_COUNT_E(_28)+LIST_COUNT_E(_29)+LIST_COUNT_E(_30)+LIST_COUNT_E(_31) \
	+LIST_COUNT_E(_32)+LIST_COUNT_E(_33)+LIST_COUNT_E(_34)+LIST_COUNT_E(_35)+LIST_COUNT_E(_36)+LIST_COUNT_E(_37)+LIST_COUNT_E(_38)+LIST_COUNT_E(_39) \
	+LIST_COUNT_E(_40)+LIST_COUNT_E(_41)+LIST_COUNT_E(_42)+LIST_COUNT_E(_43)+LIST_COUNT_E(_44)+LIST_COUNT_E(_45)+LIST_COUNT_E(_46)+LIST_COUNT_E(_47) \
	+LIST_COUNT_E(_48)+LIST_COUNT_E(_49)+LIST_COUNT_E(_50)+LIST_COUNT_E(_51)+LIST_COUNT_E(_52)+LIST_COUNT_E(_53)+LIST_COUNT_E(_54)+LIST_COUNT_E(_55) \
	+LIST_COUNT_E(_56)+LIST_COUNT_E(_57)+LIST_COUNT_E(_58)+LIST_COUNT_E(_59)+LIST_COUNT_E(_60)+LIST_COUNT_E(_61)+LIST_COUNT_E(_62)+LIST_COUNT_E(_63)-1)
#define LIST_COUNT(...) LIST_COUNT_N(_0,##__VA_ARGS__,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,)

#define LIST_X(_type, ...) (_type []){__VA_ARGS__}

#define KV_X_2(_x, _y, ...) {(_x), (_y)}
#define KV_X_1(_x, ...) {(_x)}
#define KV_X_SEL(_1, _2, _FX, ...) _FX
/* A key-value pair inside TENSOR_BIND_MAP / TENSOR_SYMBOL_MAP. */
#define KV(...) KV_X_SEL(__VA_ARGS__, KV_X_2, KV_X_1)(__VA_ARGS__)

#define LIST_SIZEOF_COUNT(_type, ...) (sizeof(LIST_X(_type, __VA_ARGS__)) / sizeof(_type))

/* (array, count) pairs for the functions that take them. */
#define TENSOR_LIST(...) LIST_X(ccv_nnc_tensor_t*, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define TENSOR_PARAM_LIST(...) LIST_X(const ccv_nnc_tensor_param_t, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define NO_TENSOR_SYMBOL (const ccv_nnc_tensor_symbol_t){.d = CCV_NNC_NO_TENSOR_SYMBOL}
#define NO_GRAPH_EXEC_SYMBOL (const ccv_nnc_graph_exec_symbol_t){.d = CCV_NNC_NO_GRAPH_EXEC_SYMBOL}
#define TENSOR_SYMBOL_LIST(...) LIST_X(const ccv_nnc_tensor_symbol_t, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define TENSOR_VARIABLE_LIST(...) LIST_X(ccv_nnc_tensor_variable_t, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define TENSOR_BIND_MAP(...) LIST_X(const ccv_nnc_tensor_bind_t, __VA_ARGS__), LIST_SIZEOF_COUNT(ccv_nnc_tensor_bind_t, __VA_ARGS__)
#define TENSOR_SYMBOL_MAP(...) LIST_X(const ccv_nnc_tensor_symbol_map_t, __VA_ARGS__), LIST_SIZEOF_COUNT(ccv_nnc_tensor_symbol_map_t, __VA_ARGS__)
#define GRAPH_EXEC_LIST(...) LIST_X(const ccv_nnc_graph_exec_t, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define GRAPH_EXEC_SYMBOL_LIST(...) LIST_X(const ccv_nnc_graph_exec_symbol_t, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define SYMBOLIC_GRAPH_SOURCES(x) ccv_nnc_symbolic_graph_sources(x), ccv_nnc_symbolic_graph_source_size(x)
#define SYMBOLIC_GRAPH_DESTINATIONS(x) ccv_nnc_symbolic_graph_destinations(x), ccv_nnc_symbolic_graph_destination_size(x)
#define SYMBOLIC_GRAPH_PASSES(...) LIST_X(const int, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define MODEL_LIST(...) LIST_X(ccv_cnnp_model_t*, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define MODEL_IO_LIST(...) LIST_X(const ccv_cnnp_model_io_t, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define MODEL_CMD_EXEC_IO_MAP(...) LIST_X(const ccv_cnnp_cmd_exec_io_t, __VA_ARGS__), LIST_SIZEOF_COUNT(ccv_cnnp_cmd_exec_io_t, __VA_ARGS__)
#define MODEL_CMD_EXEC_IO_LIST(...) LIST_X(const int, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)
#define COLUMN_ID_LIST(...) LIST_X(const int, __VA_ARGS__), LIST_COUNT(__VA_ARGS__)

#define TRAVERSE_FULL 0,0,0,0

#define ALL_PARAMETERS -1

/* Tensor parameter literals: CPU_TENSOR_NHWC(32F, 64, 28, 28, 1) is a 4-d
 * fp32 CPU tensor. The NUMA forms name a device (reserved for NUMA nodes). */
#define CPU_NUMA_TENSOR_NHWC(device_id, dt, ...) ((ccv_nnc_tensor_param_t){.type=(CCV_COMPUTE_DEVICE_##device_id) | CCV_TENSOR_CPU_MEMORY,.format=CCV_TENSOR_FORMAT_NHWC,.datatype=CCV_##dt,.dim={__VA_ARGS__}})
#define CPU_NUMA_TENSOR_NCHW(device_id, dt, ...) ((ccv_nnc_tensor_param_t){.type=(CCV_COMPUTE_DEVICE_##device_id) | CCV_TENSOR_CPU_MEMORY,.format=CCV_TENSOR_FORMAT_NCHW,.datatype=CCV_##dt,.dim={__VA_ARGS__}})
#define CPU_NUMA_TENSOR_CHWN(device_id, dt, ...) ((ccv_nnc_tensor_param_t){.type=(CCV_COMPUTE_DEVICE_##device_id) | CCV_TENSOR_CPU_MEMORY,.format=CCV_TENSOR_FORMAT_CHWN,.datatype=CCV_##dt,.dim={__VA_ARGS__}})
#define CPU_TENSOR_NHWC(dt, ...) CPU_NUMA_TENSOR_NHWC(ANY, dt, __VA_ARGS__)
#define CPU_TENSOR_NCHW(dt, ...) CPU_NUMA_TENSOR_NCHW(ANY, dt, __VA_ARGS__)
#define CPU_TENSOR_CHWN(dt, ...) CPU_NUMA_TENSOR_CHWN(ANY, dt, __VA_ARGS__)
/* GPU_TENSOR_NHWC(000, 32F, ...): the device id is spelled as in CCV_COMPUTE_DEVICE_000. */
#define GPU_TENSOR_NHWC(device_id, dt, ...) ((ccv_nnc_tensor_param_t){.type=(CCV_COMPUTE_DEVICE_##device_id) | CCV_TENSOR_GPU_MEMORY,.format=CCV_TENSOR_FORMAT_NHWC,.datatype=CCV_##dt,.dim={__VA_ARGS__}})
#define GPU_TENSOR_NCHW(device_id, dt, ...) ((ccv_nnc_tensor_param_t){.type=(CCV_COMPUTE_DEVICE_##device_id) | CCV_TENSOR_GPU_MEMORY,.format=CCV_TENSOR_FORMAT_NCHW,.datatype=CCV_##dt,.dim={__VA_ARGS__}})
#define GPU_TENSOR_CHWN(device_id, dt, ...) ((ccv_nnc_tensor_param_t){.type=(CCV_COMPUTE_DEVICE_##device_id) | CCV_TENSOR_GPU_MEMORY,.format=CCV_TENSOR_FORMAT_CHWN,.datatype=CCV_##dt,.dim={__VA_ARGS__}})

#define DIM_ALLOC(...) (int [CCV_NNC_MAX_DIM_ALLOC]){__VA_ARGS__}

/* HINT((stride...)), HINT((stride...), (border...)) or
 * HINT((stride...), (begin...), (end...)). */
#define ESCAPE_X(...) __VA_ARGS__
#define HINT_X_1(_stride_) ((ccv_nnc_hint_t){.stride={.dim={ESCAPE_X _stride_}}, .border={.begin={0},.end={0}}})
#define HINT_X_2(_stride_, _border_) ((ccv_nnc_hint_t){.stride={.dim={ESCAPE_X _stride_}}, .border={.begin={ESCAPE_X _border_},.end={ESCAPE_X _border_}}})
#define HINT_X_3(_stride_, _begin_, _end_) ((ccv_nnc_hint_t){.stride={.dim={ESCAPE_X _stride_}}, .border={.begin={ESCAPE_X _begin_},.end={ESCAPE_X _end_}}})
#define HINT_X_SEL(_1, _2, _3, _FX, ...) _FX
#define HINT(...) HINT_X_SEL(__VA_ARGS__, HINT_X_3, HINT_X_2, HINT_X_1)(__VA_ARGS__)

/** Number of elements of a shape (0 for an empty shape). */
static inline size_t ccv_nnc_dimension_count(const int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	if (dim[0] == 0)
		return 0;
	size_t count = (size_t)dim[0];
	int i;
	for (i = 1; i < CCV_NNC_MAX_DIM_ALLOC && dim[i] > 0; i++)
		count *= (size_t)dim[i];
	return count;
}

/** One past the largest element offset a strided shape reaches. */
static inline size_t ccv_nnc_dimension_upper_bound(const int dim[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC])
{
	if (dim[0] == 0 || stride[0] == 0)
		return 0;
	size_t count = 1 + (size_t)(dim[0] - 1) * (size_t)stride[0];
	int i;
	for (i = 1; i < CCV_NNC_MAX_DIM_ALLOC && dim[i] > 0 && stride[i] > 0; i++)
		count += (size_t)(dim[i] - 1) * (size_t)stride[i];
	return count;
}

static inline size_t ccv_nnc_tensor_count(const ccv_nnc_tensor_param_t params)
{
	return ccv_nnc_dimension_count(params.dim);
}

/** Parameters of a palettised (CCV_QX) copy of a 16F, 32F or 64F tensor. */
static inline ccv_nnc_tensor_param_t ccv_nnc_tensor_palettize(const ccv_nnc_tensor_param_t params, const int qbits, const int number_in_blocks)
{
	assert(params.datatype == CCV_16F || params.datatype == CCV_32F || params.datatype == CCV_64F);
	assert(qbits >= 4 && qbits <= 8);
	ccv_nnc_tensor_param_t new_params = params;
	new_params.datatype = ((params.datatype >> 12) & 0xff) | CCV_QX | ((qbits << 8) & 0xf00);
	new_params.reserved = number_in_blocks;
	return new_params;
}

/** Bytes of data a tensor of these parameters holds. */
static inline size_t ccv_nnc_tensor_data_size_without_padding(const ccv_nnc_tensor_param_t params)
{
	const ssize_t count = (ssize_t)ccv_nnc_tensor_count(params);
	if (CCV_GET_DATA_TYPE(params.datatype) == CCV_QX)
	{
		/* A palette of 2^qbits entries per block of number_in_blocks elements,
		 * then qbits per element. */
		const int palette_datatype = (params.datatype & 0xff) << 12;
		const int number_in_blocks = params.reserved > 0 ? params.reserved : 1;
		const ssize_t num_blocks = (count + number_in_blocks - 1) / number_in_blocks;
		const int qbits = (params.datatype & 0xf00) >> 8;
		return (size_t)((ssize_t)(1 << qbits) * CCV_GET_DATA_TYPE_SIZE(palette_datatype) * num_blocks + (count * qbits + 7) / 8);
	}
	return (size_t)(CCV_GET_DATA_TYPE_SIZE(params.datatype) * count);
}

/** Bytes NNC allocates for a tensor: the data rounded up to 64 (128 on GPUs). */
static inline size_t ccv_nnc_tensor_data_size(const ccv_nnc_tensor_param_t params)
{
	const size_t data_size = ccv_nnc_tensor_data_size_without_padding(params);
	if (CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_GPU_MEMORY)
		return (data_size + 127) & ~(size_t)127;
	return (data_size + 63) & ~(size_t)63;
}

/** The view's shape right-aligned into CCV_NNC_MAX_DIM + 2 (4) dimensions, padded with 1s in front. */
static inline void ccv_nnc_tensor_view_get_dim(const ccv_nnc_tensor_view_t* const tv, int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	int x;
	const int nd = ccv_nnc_tensor_nd(tv->info.dim);
	const int offset = CCV_NNC_MAX_DIM + 2 - nd;
	for (x = 0; x < offset; x++)
		dim[x] = 1;
	for (x = offset; x < CCV_NNC_MAX_DIM + 2; x++)
		dim[x] = tv->info.dim[x - offset];
	dim[CCV_NNC_MAX_DIM + 2] = 0;
}

/** 1 if the strides are those of a packed (row-major, gap-free) tensor of shape dim. */
static inline CCV_WARN_UNUSED(int) ccv_nnc_is_tensor_stride_packed(const int stride[CCV_NNC_MAX_DIM_ALLOC], const int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	const int nd = ccv_nnc_tensor_nd(stride);
	int i;
	int cstride = 1;
	for (i = nd - 1; i >= 0; i--)
	{
		if (stride[i] != cstride)
			return 0;
		cstride *= dim[i];
	}
	return 1;
}

/** 1 if dim (4 dimensions, as from ccv_nnc_tensor_view_get_dim) is the view's shape. */
static inline CCV_WARN_UNUSED(int) ccv_nnc_tensor_view_check_dim(const ccv_nnc_tensor_view_t* const tv, const int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	int x;
	const int nd = ccv_nnc_tensor_nd(tv->info.dim);
	const int offset = CCV_NNC_MAX_DIM + 2 - nd;
	for (x = 0; x < offset; x++)
		if (dim[x] != 1)
			return 0;
	for (x = offset; x < CCV_NNC_MAX_DIM + 2; x++)
		if (dim[x] != tv->info.dim[x - offset])
			return 0;
	return 1;
}

/** Grow dim (4 dimensions) to the broadcast of itself and the view's shape. */
static inline void ccv_nnc_tensor_view_get_broadcast_dim(const ccv_nnc_tensor_view_t* const tv, int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	int x;
	const int nd = ccv_nnc_tensor_nd(tv->info.dim);
	const int offset = CCV_NNC_MAX_DIM + 2 - nd;
	for (x = 0; x < offset; x++)
		dim[x] = dim[x] > 1 ? dim[x] : 1;
	for (x = offset; x < CCV_NNC_MAX_DIM + 2; x++)
		dim[x] = dim[x] > tv->info.dim[x - offset] ? dim[x] : tv->info.dim[x - offset];
}

/** 1 if the view broadcasts to dim (each of its dimensions equal or 1). */
static inline CCV_WARN_UNUSED(int) ccv_nnc_tensor_view_check_broadcast_dim(const ccv_nnc_tensor_view_t* const tv, int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	int x;
	const int nd = ccv_nnc_tensor_nd(tv->info.dim);
	const int offset = CCV_NNC_MAX_DIM + 2 - nd;
	for (x = offset; x < CCV_NNC_MAX_DIM + 2; x++)
		if (dim[x] != tv->info.dim[x - offset] && tv->info.dim[x - offset] != 1)
			return 0;
	return 1;
}

/** The view's strides right-aligned into 4 dimensions (packed strides for a plain tensor). */
static inline void ccv_nnc_tensor_view_get_stride(const ccv_nnc_tensor_view_t* const tv, int stride[CCV_NNC_MAX_DIM_ALLOC])
{
	int x;
	const int nd = ccv_nnc_tensor_nd(tv->info.dim);
	const int offset = CCV_NNC_MAX_DIM + 2 - nd > 0 ? CCV_NNC_MAX_DIM + 2 - nd : 0;
	stride[CCV_NNC_MAX_DIM + 2] = 0;
	if (CCV_IS_TENSOR_VIEW(tv))
	{
		for (x = offset; x < CCV_NNC_MAX_DIM + 2; x++)
			stride[x] = tv->stride[x - offset];
		for (x = 0; x < offset; x++)
			stride[x] = stride[offset];
	} else {
		int cstride = 1;
		for (x = CCV_NNC_MAX_DIM + 1; x >= offset; x--)
		{
			stride[x] = cstride;
			cstride *= tv->info.dim[x - offset];
		}
		for (x = 0; x < offset; x++)
			stride[x] = cstride;
	}
}

/** Batch size of an image-shaped tensor (1 for a 3-d NHWC/NCHW one). */
static inline int ccv_nnc_tensor_get_n(const ccv_nnc_tensor_param_t params)
{
	switch (params.format)
	{
		case CCV_TENSOR_FORMAT_NHWC:
		case CCV_TENSOR_FORMAT_NCHW:
			if (ccv_nnc_tensor_nd(params.dim) == CCV_NNC_MAX_DIM + 1)
				return 1;
			return params.dim[0];
		case CCV_TENSOR_FORMAT_CHWN:
			return params.dim[CCV_NNC_MAX_DIM + 1];
	}
	return 0;
}

/** Channel count of an image-shaped tensor. */
static inline int ccv_nnc_tensor_get_c(const ccv_nnc_tensor_param_t params)
{
	const int nd = ccv_nnc_tensor_nd(params.dim);
	switch (params.format)
	{
		case CCV_TENSOR_FORMAT_NHWC:
			return nd > 0 ? params.dim[nd - 1] : 0;
		case CCV_TENSOR_FORMAT_NCHW:
			if (nd == CCV_NNC_MAX_DIM + 1)
				return params.dim[0];
			return params.dim[nd <= 1 ? 0 : 1];
		case CCV_TENSOR_FORMAT_CHWN:
			return params.dim[0];
	}
	return 0;
}

static inline void ccv_nnc_tensor_set_n(ccv_nnc_tensor_param_t* const params, const int n)
{
	switch (params->format)
	{
		case CCV_TENSOR_FORMAT_NHWC:
		case CCV_TENSOR_FORMAT_NCHW:
			params->dim[0] = n;
			break;
		case CCV_TENSOR_FORMAT_CHWN:
			params->dim[CCV_NNC_MAX_DIM + 1] = n;
			break;
	}
}

static inline void ccv_nnc_tensor_set_c(ccv_nnc_tensor_param_t* const params, const int nd, const int c)
{
	switch (params->format)
	{
		case CCV_TENSOR_FORMAT_NHWC:
			params->dim[nd - 1] = c;
			break;
		case CCV_TENSOR_FORMAT_NCHW:
			if (nd == CCV_NNC_MAX_DIM + 1)
				params->dim[0] = c;
			else
				params->dim[nd <= 1 ? 0 : 1] = c;
			break;
		case CCV_TENSOR_FORMAT_CHWN:
			params->dim[0] = c;
			break;
	}
}

/** 1 if transpose[] names the last two axes of the (batched) matrix, i.e. it is transposed. */
static inline int ccv_nnc_is_matrix_transpose(const ccv_nnc_tensor_param_t params, const int transpose[2])
{
	const int nd = ccv_nnc_tensor_nd(params.dim);
	(void)nd;
	assert(nd >= 1);
	if (transpose[0] != transpose[1])
	{
		assert(nd > 1);
		return 1;
	}
	return 0;
}

/**
 * Read a tensor as a batch of matrices: batch count, rows, columns and the
 * element steps between batches, rows and columns, after the transpose.
 * `stride` may be NULL for a packed tensor of shape `dim`.
 */
static inline void ccv_nnc_tensor_get_matrix_params(const ccv_nnc_tensor_param_t params, const int* const stride, const int* const dim, const int transpose[2], int* const batch_size_ref, int* const rows_ref, int* const cols_ref, int* const batch_inc_ref, int* const rows_inc_ref, int* const cols_inc_ref)
{
	const int nd = ccv_nnc_tensor_nd(params.dim);
	assert(nd >= 1);
	*batch_size_ref = nd < 3 ? 1 : params.dim[nd - 3];
	*batch_inc_ref = nd < 3 ? 0 : stride ? stride[nd - 3] : dim[nd - 2] * dim[nd - 1];
	int rows = nd == 1 ? 1 : (nd == 2 ? params.dim[0] : params.dim[nd - 2]);
	int rows_inc = stride ? (nd >= 2 ? stride[nd - 2] : stride[0] * dim[0]) : dim[nd - 1];
	int cols = params.dim[nd - 1];
	int cols_inc = 1;
	if (transpose[0] != transpose[1])
	{
		int t;
		CCV_SWAP(rows, cols, t);
		CCV_SWAP(rows_inc, cols_inc, t);
	}
	*rows_ref = rows;
	*cols_ref = cols;
	*rows_inc_ref = rows_inc;
	*cols_inc_ref = cols_inc;
}

/** A tensor as a view by value: a copy for a view, a packed view for a tensor. */
static inline CCV_WARN_UNUSED(ccv_nnc_tensor_view_t) ccv_nnc_get_tensor_view(const ccv_nnc_tensor_t* const tensor)
{
	ccv_nnc_tensor_view_t tv;
	if (CCV_IS_TENSOR_VIEW(tensor))
		memcpy(&tv, tensor, sizeof(ccv_nnc_tensor_view_t));
	else {
		memset(&tv, 0, sizeof(tv));
		memcpy(&tv, tensor, sizeof(ccv_nnc_tensor_t));
	}
	return tv;
}

/** Right-align the shapes (and strides) of several views to the largest rank, padding with 1s. */
static inline void ccv_nnc_tensor_view_alignment(ccv_nnc_tensor_view_t** const tvs, const int tv_size)
{
	int i, j;
	int max_nd = 0;
	for (i = 0; i < tv_size; i++)
	{
		const int nd = ccv_nnc_tensor_nd(tvs[i]->info.dim);
		max_nd = nd > max_nd ? nd : max_nd;
	}
	for (i = 0; i < tv_size; i++)
	{
		const int nd = ccv_nnc_tensor_nd(tvs[i]->info.dim);
		for (j = max_nd - 1; j >= max_nd - nd; j--)
			tvs[i]->info.dim[j] = tvs[i]->info.dim[j - max_nd + nd];
		for (j = 0; j < max_nd - nd; j++)
			tvs[i]->info.dim[j] = 1;
		if (!CCV_IS_TENSOR_VIEW(tvs[i]))
			continue;
		for (j = max_nd - 1; j >= max_nd - nd; j--)
			tvs[i]->stride[j] = tvs[i]->stride[j - max_nd + nd];
		for (j = 0; j < max_nd - nd; j++)
			tvs[i]->stride[j] = tvs[i]->stride[max_nd - nd];
	}
}

/* GEMM parameters: CMD_GEMM(), CMD_GEMM(transpose_a), CMD_GEMM(transpose_a, transpose_b). */
#define TRANSPOSE(_X, _Y) ((int[]){(_X),(_Y)})
#define NO_TRANSPOSE TRANSPOSE(0, 0)
#define CMD_GEMM_X(_0, _TA, _TB, ...) ((ccv_nnc_cmd_param_t){.size={.dim={1,1,1}},.blas={.a={1,1},.transpose_a={_TA[0],_TA[1]},.transpose_b={_TB[0],_TB[1]},}})
#define CMD_GEMM(...) CMD_GEMM_X(_0, ##__VA_ARGS__, NO_TRANSPOSE, NO_TRANSPOSE)
/* Generic parameters: CMD_GENERIC() or CMD_GENERIC(window dims...) with exactly 3 dims. */
#define CMD_GENERIC_X_0() ((ccv_nnc_cmd_param_t){.size={.dim={1,1,1}}})
#define CMD_GENERIC_X_F(...) ("CMD_GENERIC takes no arguments or exactly three window sizes")
#define CMD_GENERIC_X_3(...) ((ccv_nnc_cmd_param_t){.size={.dim={__VA_ARGS__}}})
#define CMD_GENERIC_X_SEL(_0, _1, _2, _3, _FX, ...) _FX
#define CMD_GENERIC(...) CMD_GENERIC_X_SEL(CMD_GENERIC_X_F, ##__VA_ARGS__, CMD_GENERIC_X_3, CMD_GENERIC_X_F, CMD_GENERIC_X_F, CMD_GENERIC_X_0)(__VA_ARGS__)
/* Reduction parameters over the listed axes. */
#define CMD_REDUCE(...) ((ccv_nnc_cmd_param_t){.size={.dim={1,1,1}},.reduce={.count=LIST_COUNT(__VA_ARGS__),.axis={__VA_ARGS__}}})
#define CMD_NOOP() ccv_nnc_cmd(CCV_NNC_NOOP, 0, ccv_nnc_cmd_auto, 0)
#define CMD_CUSTOM_FORWARD(f) ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, f, ccv_nnc_cmd_auto, 0)

/** 1 if the hint is all zeros (derive it from shapes). */
int ccv_nnc_is_no_hint(const ccv_nnc_hint_t hint);
/** 1 if the parameters are all zeros (let the command choose). */
int ccv_nnc_is_cmd_auto(const ccv_nnc_cmd_param_t params);
/** 1 if the tensor parameters are all zeros (infer them). */
int ccv_nnc_is_tensor_auto(const ccv_nnc_tensor_param_t params);

/** Offsets all zero, for ccv_nnc_tensor_view_new. */
extern const int ccv_nnc_no_ofs[CCV_NNC_MAX_DIM_ALLOC];
/** The all-zero hint. */
extern const ccv_nnc_hint_t ccv_nnc_no_hint;
/** All-zero command parameters. */
extern const ccv_nnc_cmd_param_t ccv_nnc_cmd_auto;
/** All-zero tensor parameters. */
extern const ccv_nnc_tensor_param_t ccv_nnc_tensor_auto;
/** Compile parameters with every field zero: the defaults of ccv_nnc_symbolic_graph_compile. */
extern const ccv_nnc_symbolic_graph_compile_param_t ccv_nnc_default_compile_params;

#ifdef __cplusplus
}
#endif

#include "cmd/ccv_nnc_cmd_easy.h"

#endif
