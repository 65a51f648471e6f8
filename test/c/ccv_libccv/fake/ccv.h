/*
 * A stand-in for libccv's public header, written for NNC's tests.
 *
 * It plays the part of the real libccv's ccv.h: the same include guard, the
 * same dense-matrix, array and cell-access declarations with the same values,
 * plus what NNC's subset lacks (ccv_read and the CCV_IO_* read/write flags,
 * ccv_write, ccv_shift, ccv_cache_generate_signature). Like libccv's header it
 * includes NNC's toll-free layout header, and it does not define CCV_SWAP
 * (libccv keeps that in an internal header).
 *
 * CCV_FAKE_LIBCCV tells a test that this header, not NNC's, is in effect.
 */
#ifndef GUARD_ccv_h
#define GUARD_ccv_h

#define CCV_FAKE_LIBCCV 1

#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <float.h>
#include <math.h>
#include <assert.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CCV_PI (3.141592653589793)
#define ccmalloc malloc
#define cccalloc calloc
#define ccrealloc realloc
#define ccfree free
#define ccmemalign posix_memalign

#define CCV_NNC_TENSOR_TFB (1)
#include "nnc/ccv_nnc_tfb.h"

#define CCV_WARN_UNUSED(x) x __attribute__((warn_unused_result))

enum {
	CCV_8U   = 0x01000,
	CCV_32S  = 0x02000,
	CCV_32F  = 0x04000,
	CCV_64S  = 0x08000,
	CCV_64F  = 0x10000,
	CCV_16F  = 0x20000,
	CCV_QX   = 0x40000,
	CCV_16BF = 0x80000,
};

enum {
	CCV_C1 = 0x001,
	CCV_C2 = 0x002,
	CCV_C3 = 0x003,
	CCV_C4 = 0x004,
};

static inline ssize_t fake_ccv_type_size(int type)
{
	const int dt = type & 0xFF000;
	return dt == CCV_8U || dt == CCV_QX ? 1 : dt == CCV_16F || dt == CCV_16BF ? 2 : dt == CCV_32S || dt == CCV_32F ? 4 : dt == CCV_64S || dt == CCV_64F ? 8 : -1;
}

#define CCV_GET_DATA_TYPE(x) ((x) & 0xFF000)
#define CCV_GET_DATA_TYPE_SIZE(x) fake_ccv_type_size(x)
#define CCV_MAX_CHANNEL (0xFFF)
#define CCV_GET_CHANNEL(x) ((x) & 0xFFF)
#define CCV_GET_STEP(cols, type) (((cols) * CCV_GET_DATA_TYPE_SIZE(type) * CCV_GET_CHANNEL(type) + 3) & -4)
#define CCV_ALL_DATA_TYPE (CCV_8U | CCV_32S | CCV_32F | CCV_64S | CCV_64F | CCV_16F | CCV_QX)

enum {
	CCV_MATRIX_DENSE  = 0x00100000,
	CCV_MATRIX_SPARSE = 0x00200000,
	CCV_MATRIX_CSR    = 0x00400000,
	CCV_MATRIX_CSC    = 0x00800000,
};

enum {
	CCV_GARBAGE       = (int)0x80000000,
	CCV_REUSABLE      = 0x40000000,
	CCV_UNMANAGED     = 0x20000000,
	CCV_NO_DATA_ALLOC = 0x10000000,
	CCV_TAPE_ALLOC    = 0x08000000,
	CCV_PINNED_MEM    = 0x04000000,
	CCV_MAPPED_MEM    = 0x02000000,
};

typedef void ccv_matrix_t;

#define ccv_clamp(x, a, b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); __typeof__ (x) _x = (x); (_x < _a) ? _a : ((_x > _b) ? _b : _x); })
#define ccv_min(a, b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); (_a < _b) ? _a : _b; })
#define ccv_max(a, b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); (_a > _b) ? _a : _b; })

#define ccv_compute_dense_matrix_size(rows, cols, type) (((sizeof(ccv_dense_matrix_t) + 63) & -64) + (((cols) * CCV_GET_DATA_TYPE_SIZE(type) * CCV_GET_CHANNEL(type) + 3) & -4) * (rows))
CCV_WARN_UNUSED(ccv_dense_matrix_t*) ccv_dense_matrix_renew(ccv_dense_matrix_t* x, int rows, int cols, int types, int prefer_type, uint64_t sig);
CCV_WARN_UNUSED(ccv_dense_matrix_t*) ccv_dense_matrix_new(int rows, int cols, int type, void* data, uint64_t sig);
ccv_dense_matrix_t ccv_dense_matrix(int rows, int cols, int type, void* data, uint64_t sig);
void ccv_make_matrix_mutable(ccv_matrix_t* mat);
void ccv_make_matrix_immutable(ccv_matrix_t* mat);
void ccv_matrix_free_immediately(ccv_matrix_t* mat);
void ccv_matrix_free(ccv_matrix_t* mat);
uint64_t ccv_cache_generate_signature(const char* msg, int len, uint64_t sig_start, ...);
#define CCV_DEFAULT_CACHE_SIZE (1024 * 1024 * 64)
void ccv_drain_cache(void);
void ccv_disable_cache(void);
void ccv_enable_default_cache(void);
void ccv_enable_cache(size_t size);

#define ccv_get_dense_matrix_cell_by(type, x, row, col, ch) \
	(((type) & CCV_32S) ? (void*)((x)->data.i32 + ((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)) : \
	(((type) & CCV_32F) ? (void*)((x)->data.f32 + ((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)) : \
	(((type) & CCV_64S) ? (void*)((x)->data.i64 + ((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)) : \
	(((type) & CCV_64F) ? (void*)((x)->data.f64 + ((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)) : \
	(void*)((x)->data.u8 + (row) * (x)->step + (col) * CCV_GET_CHANNEL(type) + (ch))))))
#define ccv_get_dense_matrix_cell(x, row, col, ch) ccv_get_dense_matrix_cell_by((x)->type, x, row, col, ch)
#define ccv_get_dense_matrix_cell_value_by(type, x, row, col, ch) \
	(((type) & CCV_32S) ? (x)->data.i32[((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)] : \
	(((type) & CCV_32F) ? (x)->data.f32[((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)] : \
	(((type) & CCV_64S) ? (x)->data.i64[((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)] : \
	(((type) & CCV_64F) ? (x)->data.f64[((row) * (x)->cols + (col)) * CCV_GET_CHANNEL(type) + (ch)] : \
	(x)->data.u8[(row) * (x)->step + (col) * CCV_GET_CHANNEL(type) + (ch)]))))
#define ccv_get_dense_matrix_cell_value(x, row, col, ch) ccv_get_dense_matrix_cell_value_by((x)->type, x, row, col, ch)

/* Image input and output: the part of libccv NNC does not have. */
enum {
	CCV_IO_GRAY      = 0x100,
	CCV_IO_RGB_COLOR = 0x300,
};

enum {
	CCV_IO_NO_COPY = 0x10000,
};

enum {
	CCV_IO_ANY_STREAM     = 0x010,
	CCV_IO_BMP_STREAM     = 0x011,
	CCV_IO_JPEG_STREAM    = 0x012,
	CCV_IO_PNG_STREAM     = 0x013,
	CCV_IO_PLAIN_STREAM   = 0x014,
	CCV_IO_DEFLATE_STREAM = 0x015,
	CCV_IO_ANY_FILE       = 0x020,
	CCV_IO_BMP_FILE       = 0x021,
	CCV_IO_JPEG_FILE      = 0x022,
	CCV_IO_PNG_FILE       = 0x023,
	CCV_IO_BINARY_FILE    = 0x024,
	CCV_IO_ANY_RAW        = 0x040,
	CCV_IO_RGB_RAW        = 0x041,
	CCV_IO_RGBA_RAW       = 0x042,
	CCV_IO_ARGB_RAW       = 0x043,
	CCV_IO_BGR_RAW        = 0x044,
	CCV_IO_BGRA_RAW       = 0x045,
	CCV_IO_ABGR_RAW       = 0x046,
	CCV_IO_GRAY_RAW       = 0x047,
};

enum {
	CCV_IO_FINAL = 0x00,
	CCV_IO_CONTINUE,
	CCV_IO_ERROR,
	CCV_IO_ATTEMPTED,
	CCV_IO_UNKNOWN,
};

/* The fake reads and writes binary PPM (P6) and PGM (P5) files, whatever the
 * CCV_IO_*_FILE flag says, and CCV_IO_RGB_RAW / CCV_IO_GRAY_RAW memory. */
int ccv_read_impl(const void* in, ccv_dense_matrix_t** x, int type, int rows, int cols, int scanline);
#define ccv_read_n(in, x, type, rows, cols, scanline, ...) \
	ccv_read_impl(in, x, type, rows, cols, scanline)
#define ccv_read(in, x, type, ...) \
	ccv_read_n(in, x, type, ##__VA_ARGS__, 0, 0, 0)
int ccv_write(ccv_dense_matrix_t* mat, char* out, size_t* len, int type, void* conf);

ccv_dense_matrix_t* ccv_get_dense_matrix(ccv_matrix_t* mat);
int ccv_matrix_eq(ccv_matrix_t* a, ccv_matrix_t* b);
void ccv_zero(ccv_matrix_t* mat);
/* b = (a << lr) >> rr, converted to type (0: a's type). */
void ccv_shift(ccv_matrix_t* a, ccv_matrix_t** b, int type, int lr, int rr);

void ccv_float_to_half_precision(const float* f, uint16_t* h, size_t len);
void ccv_half_precision_to_float(const uint16_t* h, float* f, size_t len);
void ccv_double_to_half_precision(const double* f, uint16_t* h, size_t len);
void ccv_half_precision_to_double(const uint16_t* h, double* f, size_t len);

typedef struct {
	int width;
	int height;
} ccv_size_t;

typedef struct {
	int x;
	int y;
	int width;
	int height;
} ccv_rect_t;

typedef struct {
	int type;
	uint64_t sig;
	int refcount;
	int rnum;
	int size;
	int rsize;
	void* data;
} ccv_array_t;

CCV_WARN_UNUSED(ccv_array_t*) ccv_array_new(int rsize, int rnum, uint64_t sig);
void ccv_array_push(ccv_array_t* array, const void* r);
void ccv_array_zero(ccv_array_t* array);
void ccv_array_resize(ccv_array_t* array, int rnum);
void ccv_array_clear(ccv_array_t* array);
void ccv_array_free_immediately(ccv_array_t* array);
void ccv_array_free(ccv_array_t* array);
#define ccv_array_get(a, i) ((void*)(((char*)((a)->data)) + (size_t)(a)->rsize * (size_t)(i)))

/* Test hooks, not libccv's: how many matrices and arrays this fake created
 * and freed, so a test can tell whose definitions the linker kept. */
extern int fake_ccv_matrix_news;
extern int fake_ccv_matrix_frees;
extern int fake_ccv_array_news;

#ifdef __cplusplus
}
#endif

#endif
