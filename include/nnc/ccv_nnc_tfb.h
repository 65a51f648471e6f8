/*
 * ccv_nnc_tfb.h — the byte layout shared by NNC tensors and ccv dense matrices.
 *
 * "Toll-free bridging": a ccv_dense_matrix_t is a 3-dimensional NHWC tensor
 * (rows × cols × channels) and can be cast to ccv_nnc_tensor_t* and back with
 * no conversion. The layouts below are an ABI promise (test/unit/core pins
 * every offset):
 *
 *   ccv_dense_matrix_t* m = ccv_dense_matrix_new(28, 28, CCV_32F | CCV_C1, 0, 0);
 *   ccv_nnc_tensor_t* t = (ccv_nnc_tensor_t*)m; // t->info.dim = {28, 28, 1}
 *
 * This header is included by ccv.h; include ccv.h rather than this file.
 */
#ifndef GUARD_ccv_nnc_tfb_h
#define GUARD_ccv_nnc_tfb_h

#include <unistd.h>
#include <stdint.h>
#include <sys/types.h>

/* Memory layouts of a tensor's dimensions. */
enum {
	CCV_TENSOR_FORMAT_NCHW = 0x01,
	CCV_TENSOR_FORMAT_NHWC = 0x02,
	CCV_TENSOR_FORMAT_CHWN = 0x04,
};

/* Where a tensor's data lives (bits 0..1 of ccv_nnc_tensor_param_t.type). */
enum {
	CCV_TENSOR_CPU_MEMORY = 0x1,
	CCV_TENSOR_GPU_MEMORY = 0x2,
};

/* Which device (bits 8..19 of the type). */
enum {
	CCV_COMPUTE_DEVICE_000 = 0x00000,
	CCV_COMPUTE_DEVICE_001 = 0x00100,
	CCV_COMPUTE_DEVICE_002 = 0x00200,
	CCV_COMPUTE_DEVICE_003 = 0x00300,
	CCV_COMPUTE_DEVICE_004 = 0x00400,
	CCV_COMPUTE_DEVICE_005 = 0x00500,
	CCV_COMPUTE_DEVICE_006 = 0x00600,
	CCV_COMPUTE_DEVICE_007 = 0x00700,
	CCV_COMPUTE_DEVICE_ANY = 0xfff00, /* let NNC choose */
};

#define CCV_TENSOR_GET_MEMORY(type) ((type) & 0x3)
#define CCV_TENSOR_GET_DEVICE(type) ((type) & 0xfff00)
#define CCV_TENSOR_GET_DEVICE_ID(type) (CCV_TENSOR_GET_DEVICE(type) >> 8)
#define CCV_TENSOR_SET_DEVICE_ID(type, device_id) (type) = (((type) & ~0xfff00) | (((device_id) & 0xfff) << 8))

/* Kinds of tensor object, in the first word (ccv_nnc_tensor_t.type). */
enum {
	CCV_TENSOR_VIEW       = 0x01000000,
	CCV_TENSOR_MULTIVIEW  = 0x02000000,
	CCV_TENSOR_PINNED_MEM = 0x04000000, /* same bit as CCV_PINNED_MEM */
};

/* Half-precision storage; convert before doing arithmetic. */
typedef struct {
	short v;
} ccv_float16_t;

/* A tensor's data pointer, typed every way NNC reads it. */
typedef union ccv_numeric_data_u {
	char* i8;
	unsigned char* u8;
	int* i32;
	ccv_float16_t* f16;
	float* f32;
	int64_t* i64;
	uint64_t* u64;
	double* f64;
	void* ptr;
} ccv_numeric_data_t;

/* A tensor has at most this many dimensions; unused ones are 0. */
#define CCV_NNC_MAX_DIM_ALLOC (12)
/* Spatial dimensions of the image-shaped commands (H and W). */
#define CCV_NNC_MAX_DIM (2)

/* What a tensor is: where it lives, its layout, element type and shape. */
typedef struct {
	int type;     /* memory kind | device (CCV_TENSOR_CPU_MEMORY, CCV_COMPUTE_DEVICE_…) */
	int format;   /* CCV_TENSOR_FORMAT_… */
	int datatype; /* CCV_32F, CCV_16F, … */
	int reserved; /* for quantised types: elements per palette block */
	int dim[CCV_NNC_MAX_DIM_ALLOC]; /* sizes, outermost first; ends at the first 0 */
} ccv_nnc_tensor_param_t;

typedef struct {
	int type;       /* CCV_TENSOR_VIEW, CCV_NO_DATA_ALLOC, … (and for a bridged matrix its matrix type) */
	int refcount;
	ccv_numeric_data_t data;
	off_t dataof;   /* byte offset of data within the buffer it was carved from */
	uintptr_t alias_ref;
	uint64_t data_size; /* bytes reachable from data */
	uint64_t sig;
	ccv_nnc_tensor_param_t info;
} ccv_nnc_tensor_t;

/* A strided window into a tensor. It begins exactly as ccv_nnc_tensor_t does,
 * so either can be passed where the other is expected; CCV_IS_TENSOR_VIEW tells. */
typedef struct {
	int type;
	int refcount;
	ccv_numeric_data_t data;
	off_t dataof;
	uintptr_t alias_ref;
	uint64_t data_size;
	uint64_t sig;
	ccv_nnc_tensor_param_t info;
	int contiguous; /* 1 if the view's elements are packed with no gaps */
	off_t off;      /* byte offset from the viewed tensor's data */
	int stride[CCV_NNC_MAX_DIM_ALLOC]; /* elements between neighbours along each dimension */
} ccv_nnc_tensor_view_t;

#define CCV_IS_TENSOR_VIEW(x) ((*(int*)(x)) & CCV_TENSOR_VIEW)
#define CCV_IS_TENSOR_MULTIVIEW(x) ((*(int*)(x)) & CCV_TENSOR_MULTIVIEW)
#define CCV_IS_TENSOR_CONTIGUOUS(x) (!CCV_IS_TENSOR_VIEW(x) || (((ccv_nnc_tensor_view_t*)x)->contiguous == 1))

#if CCV_NNC_TENSOR_TFB
#define CCV_TENSOR_IS_DENSE_MATRIX(x) (((x) & 0xFFF) > 0) /* a type word with channels */
/*
 * The dense matrix. Its fields overlay ccv_nnc_tensor_t: resides, format and
 * datatype are info.type/format/datatype; rows, cols and channels are
 * info.dim[0..2]; reserved4 (dim[3]) stays 0 so the tensor is 3-d; step and
 * tb sit in dimensions a 3-d tensor never reads.
 */
typedef struct {
	int type; /* CCV_MATRIX_DENSE | data type | channels, plus allocation flags */
	int refcount;
	ccv_numeric_data_t data;
	off_t reserved0;
	uintptr_t reserved1;
	uint64_t reserved2;
	uint64_t sig;
	union {
		struct {
			int resides;
			int format;
			int datatype;
			int reserved3;
			int rows;
			int cols;
			int channels;
			int reserved4; /* must be 0 */
			int step;      /* bytes per row */
			union {
				unsigned char u8;
				int i32;
				ccv_float16_t f16;
				float f32;
				int64_t i64;
				double f64;
				void* p;
			} tb;
		};
		ccv_nnc_tensor_param_t info;
	};
} ccv_dense_matrix_t;
#else
#define CCV_TENSOR_IS_DENSE_MATRIX(x) (0)
typedef struct {
	int type;
	int refcount;
	uint64_t sig;
	int cols;
	int rows;
	int step;
	union {
		unsigned char u8;
		int i32;
		ccv_float16_t f16;
		float f32;
		int64_t i64;
		double f64;
		void* p;
	} tb;
	ccv_numeric_data_t data;
} ccv_dense_matrix_t;
#endif

#endif
