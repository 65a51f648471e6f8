/*
 * ccv.h — the part of the ccv core that NNC's API is written in.
 *
 * NNC shares its basic types with ccv, the image-processing library it grew
 * out of: data-type and channel constants, the dense matrix (which is, byte for
 * byte, a 3-dimensional NNC tensor: see nnc/ccv_nnc_tfb.h), the growable array,
 * and a handful of helpers. Only what NNC's users need is here; ccv's image
 * processing functions are not part of NNC.
 *
 *   ccv_dense_matrix_t* image = ccv_dense_matrix_new(480, 640, CCV_32F | CCV_C3, 0, 0);
 *   ccv_nnc_tensor_t* tensor = (ccv_nnc_tensor_t*)image; // a 480x640x3 NHWC tensor
 *   ...
 *   ccv_matrix_free(image);
 *
 * Ownership: every *_new returns an object the caller frees with the matching
 * *_free; every *_free accepts NULL.
 *
 * Beside libccv: when libccv's own ccv.h is further along the include path,
 * this header includes it instead (it declares everything below and the image
 * functions, ccv_read, CCV_IO_*, ...), so a program that uses both libraries
 * compiles whichever include directory comes first. Define
 * NNC_NO_LIBCCV_HEADER to always get this subset. NNC_CCV_H_SUBSET is defined
 * to 1 when this subset is in effect, NNC_CCV_H_DEFERRED when libccv's is.
 */
/* libccv's header uses this guard too: whichever is included first wins. */
#if !defined(GUARD_ccv_h) && !defined(NNC_NO_LIBCCV_HEADER) && !defined(NNC_BUILDING_LIBRARY) && defined(__has_include_next)
/* include_next looks only past the directory this file came from, so it finds
 * a later ccv.h (libccv's, or another copy of this one, which repeats the
 * look-up from its own place) and never this file again. The library itself
 * (NNC_BUILDING_LIBRARY) always builds against the subset. */
#if __has_include_next(<ccv.h>)
#define NNC_CCV_H_DEFERRED 1
#include_next <ccv.h>
#endif
#endif

#if defined(GUARD_ccv_h) && !defined(NNC_CCV_H_SUBSET) && !defined(GUARD_nnc_ccv_h_supplement)
#define GUARD_nnc_ccv_h_supplement
/* libccv's ccv.h is in effect. NNC's public headers use these, which libccv
 * keeps in its internal header. */
#ifndef CCV_SWAP
#define CCV_SWAP(a, b, t) ((t) = (a), (a) = (b), (b) = (t))
#endif
#endif

#ifndef GUARD_ccv_h
#define GUARD_ccv_h
#define NNC_CCV_H_SUBSET 1

#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <float.h>
#include <math.h>
#include <assert.h>
#include <sys/types.h>
#include <alloca.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CCV_PI (3.141592653589793)

/* ccv's allocator entry points. They are the C library's, so memory from one
 * can be released with the other. */
#define ccmalloc malloc
#define cccalloc calloc
#define ccrealloc realloc
#define ccfree free
#define ccmemalign posix_memalign

/* A dense matrix and a 3-d tensor share one layout (toll-free bridging). */
#define CCV_NNC_TENSOR_TFB (1)
#include "nnc/ccv_nnc_tfb.h"

/* Marks a function whose result must not be dropped (it owns memory or
 * reports failure). */
#define CCV_WARN_UNUSED(x) x __attribute__((warn_unused_result))

/* Element types. They occupy bits 12..19 of a matrix type; a type can be
 * or-ed with a channel count (CCV_C1 .. CCV_MAX_CHANNEL). */
enum {
	CCV_8U   = 0x01000, /* unsigned 8-bit integer */
	CCV_32S  = 0x02000, /* signed 32-bit integer */
	CCV_32F  = 0x04000, /* IEEE single precision */
	CCV_64S  = 0x08000, /* signed 64-bit integer */
	CCV_64F  = 0x10000, /* IEEE double precision */
	CCV_16F  = 0x20000, /* IEEE half precision, stored as 16 bits */
	CCV_QX   = 0x40000, /* quantised (palettised) data, 1 byte or less per element */
	CCV_16BF = 0x80000, /* bfloat16: the top half of an IEEE single */
};

enum {
	CCV_C1 = 0x001,
	CCV_C2 = 0x002,
	CCV_C3 = 0x003,
	CCV_C4 = 0x004,
};

/* Size in bytes of one element of a data type, -1 if the type has no fixed size. */
static inline ssize_t ccv_data_type_size(const int type)
{
	switch (type & 0xFF000)
	{
		case CCV_8U: return 1;
		case CCV_32S: return 4;
		case CCV_32F: return 4;
		case CCV_64S: return 8;
		case CCV_64F: return 8;
		case CCV_16F: return 2;
		case CCV_16BF: return 2;
		case CCV_QX: return 1;
	}
	return -1;
}

#define CCV_GET_DATA_TYPE(x) ((x) & 0xFF000)
#define CCV_GET_DATA_TYPE_SIZE(x) ccv_data_type_size(x)
#define CCV_MAX_CHANNEL (0xFFF)
#define CCV_GET_CHANNEL(x) ((x) & 0xFFF)
/* Row length in bytes of a dense matrix: ccv pads rows to 4 bytes. */
#define CCV_GET_STEP(cols, type) (((cols) * CCV_GET_DATA_TYPE_SIZE(type) * CCV_GET_CHANNEL(type) + 3) & -4)
#define CCV_ALL_DATA_TYPE (CCV_8U | CCV_32S | CCV_32F | CCV_64S | CCV_64F | CCV_16F | CCV_QX)

enum {
	CCV_MATRIX_DENSE  = 0x00100000,
	CCV_MATRIX_SPARSE = 0x00200000,
	CCV_MATRIX_CSR    = 0x00400000,
	CCV_MATRIX_CSC    = 0x00800000,
};

/* Allocation flags kept in a matrix's (or tensor's) type word. */
enum {
	CCV_GARBAGE       = (int)0x80000000, /* held in a cache, used by nobody */
	CCV_REUSABLE      = 0x40000000, /* may be recycled */
	CCV_UNMANAGED     = 0x20000000, /* the caller owns it; ccv_matrix_free leaves it alone */
	CCV_NO_DATA_ALLOC = 0x10000000, /* the header does not own the data it points to */
	CCV_TAPE_ALLOC    = 0x08000000, /* allocated on a tape */
	CCV_PINNED_MEM    = 0x04000000, /* data is pinned for device transfers */
	CCV_MAPPED_MEM    = 0x02000000, /* data is memory-mapped from a file */
};

#define CCV_GET_TAPE_ALLOC(type) ((type) & CCV_TAPE_ALLOC)

enum {
	CCV_DENSE_VECTOR  = 0x02000000,
	CCV_SPARSE_VECTOR = 0x01000000,
};

/* Any matrix kind; NNC knows only dense ones. */
typedef void ccv_matrix_t;

/* GNU statement expressions evaluate their arguments once. */
#define ccv_clamp(x, a, b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); __typeof__ (x) _x = (x); (_x < _a) ? _a : ((_x > _b) ? _b : _x); })
#define ccv_min(a, b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); (_a < _b) ? _a : _b; })
#define ccv_max(a, b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); (_a > _b) ? _a : _b; })
#ifndef CCV_SWAP
#define CCV_SWAP(a, b, t) ((t) = (a), (a) = (b), (b) = (t))
#endif

/* Bytes taken by a dense matrix allocated as one block: the header rounded up
 * to 64 bytes, then the rows. */
#define ccv_compute_dense_matrix_size(rows, cols, type) (((sizeof(ccv_dense_matrix_t) + 63) & -64) + (((cols) * CCV_GET_DATA_TYPE_SIZE(type) * CCV_GET_CHANNEL(type) + 3) & -4) * (rows))

/**
 * Create a dense matrix of rows × cols elements of `type` (a data type or-ed
 * with a channel count).
 * @param data NULL to allocate the data with the header (one block, 64-byte
 *   aligned); otherwise the matrix points at this memory, which stays the
 *   caller's and must outlive the matrix.
 * @param sig A signature, 0 if none.
 * @return A matrix to free with ccv_matrix_free, or NULL on bad arguments or
 *   when memory runs out (ccv_nnc_error_message says which).
 */
CCV_WARN_UNUSED(ccv_dense_matrix_t*) ccv_dense_matrix_new(int rows, int cols, int type, void* data, uint64_t sig);
/**
 * Reuse *x if it already has this shape and one of `types`; otherwise free it
 * and return a new matrix of `prefer_type`.
 */
CCV_WARN_UNUSED(ccv_dense_matrix_t*) ccv_dense_matrix_renew(ccv_dense_matrix_t* x, int rows, int cols, int types, int prefer_type, uint64_t sig);
/**
 * A dense matrix header by value over caller memory `data` (not NULL). Nothing
 * is allocated; nothing needs freeing.
 */
ccv_dense_matrix_t ccv_dense_matrix(int rows, int cols, int type, void* data, uint64_t sig);
/** Clear the matrix's signature: its content may change from now on. */
void ccv_make_matrix_mutable(ccv_matrix_t* mat);
/** Give the matrix a signature computed from its content. */
void ccv_make_matrix_immutable(ccv_matrix_t* mat);
/**
 * Free a matrix now. NULL is a no-op; an CCV_UNMANAGED matrix is left alone.
 *
 * A matrix is one block from the C library's allocator (the header, then the
 * rows at the 64-byte-rounded offset of ccv_compute_dense_matrix_size) or,
 * with CCV_NO_DATA_ALLOC, a header alone; freeing it is free() of the header,
 * as in libccv. So a matrix made by libccv can be freed here and one made here
 * (or a CPU tensor from ccv_nnc_tensor_new) by libccv. NNC's ccv_* functions
 * are weak definitions: linked beside libccv, libccv's win, in either link
 * order, and NNC uses them.
 */
void ccv_matrix_free_immediately(ccv_matrix_t* mat);
/** Free a matrix (NNC keeps no matrix cache, so this is ccv_matrix_free_immediately). */
void ccv_matrix_free(ccv_matrix_t* mat);
/**
 * The matrix as a dense matrix: mat itself when it is one (a dense matrix or
 * a plain CPU tensor, which share the layout), otherwise NULL with a message
 * for ccv_nnc_error_message.
 */
ccv_dense_matrix_t* ccv_get_dense_matrix(ccv_matrix_t* mat);
/**
 * Compare two dense matrices: 0 when they have the same data type, channel
 * count, rows and cols and equal elements, -1 otherwise (and for NULL or
 * non-dense input, with a message). Row padding is not compared. Integers
 * must match exactly; floating-point elements x, y match when
 * |x - y| <= tol * max(1, |x|, |y|), tol being 1e-4 for 32F, 1e-2 for 16F and
 * 16BF, and 1e-10 for 64F, or when both are NaN.
 */
int ccv_matrix_eq(ccv_matrix_t* a, ccv_matrix_t* b);
/** Set every byte of the matrix's rows (padding included) to 0. NULL: no-op. */
void ccv_zero(ccv_matrix_t* mat);
#define CCV_DEFAULT_CACHE_SIZE (1024 * 1024 * 64)
/** ccv's matrix cache: NNC has none, these exist so ccv programs link. */
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
#define ccv_get_value(type, ptr, i) \
	(((type) & CCV_32S) ? ((int*)(ptr))[(i)] : \
	(((type) & CCV_32F) ? ((float*)(ptr))[(i)] : \
	(((type) & CCV_64S) ? ((int64_t*)(ptr))[(i)] : \
	(((type) & CCV_64F) ? ((double*)(ptr))[(i)] : \
	((unsigned char*)(ptr))[(i)]))))
#define ccv_set_value(type, ptr, i, value, factor) switch (CCV_GET_DATA_TYPE((type))) { \
	case CCV_32S: ((int*)(ptr))[(i)] = (int)(value) >> factor; break; \
	case CCV_32F: ((float*)(ptr))[(i)] = (float)value; break; \
	case CCV_64S: ((int64_t*)(ptr))[(i)] = (int64_t)(value) >> factor; break; \
	case CCV_64F: ((double*)(ptr))[(i)] = (double)value; break; \
	default: ((unsigned char*)(ptr))[(i)] = ccv_clamp((int)(value) >> factor, 0, 255); }

/* Results of ccv's (and NNC's) readers and writers. */
enum {
	CCV_IO_FINAL = 0x00,
	CCV_IO_CONTINUE,
	CCV_IO_ERROR,
	CCV_IO_ATTEMPTED,
	CCV_IO_UNKNOWN,
};

/* Half-precision conversion of len values (round to nearest even). */
void ccv_float_to_half_precision(const float* f, uint16_t* h, size_t len);
void ccv_half_precision_to_float(const uint16_t* h, float* f, size_t len);
void ccv_double_to_half_precision(const double* f, uint16_t* h, size_t len);
void ccv_half_precision_to_double(const uint16_t* h, double* f, size_t len);

typedef struct {
	int width;
	int height;
} ccv_size_t;

static inline ccv_size_t ccv_size(int width, int height)
{
	ccv_size_t size;
	size.width = width;
	size.height = height;
	return size;
}

static inline int ccv_size_is_zero(ccv_size_t size)
{
	return size.width == 0 && size.height == 0;
}

typedef struct {
	int x;
	int y;
	int width;
	int height;
} ccv_rect_t;

static inline ccv_rect_t ccv_rect(int x, int y, int width, int height)
{
	ccv_rect_t rect;
	rect.x = x;
	rect.y = y;
	rect.width = width;
	rect.height = height;
	return rect;
}

static inline int ccv_rect_is_zero(ccv_rect_t rect)
{
	return rect.x == 0 && rect.y == 0 && rect.width == 0 && rect.height == 0;
}

typedef struct {
	float x;
	float y;
	float width;
	float height;
} ccv_decimal_rect_t;

static inline ccv_decimal_rect_t ccv_decimal_rect(float x, float y, float width, float height)
{
	ccv_decimal_rect_t rect;
	rect.x = x;
	rect.y = y;
	rect.width = width;
	rect.height = height;
	return rect;
}

typedef struct {
	int left;
	int top;
	int right;
	int bottom;
} ccv_margin_t;

static inline ccv_margin_t ccv_margin(int left, int top, int right, int bottom)
{
	ccv_margin_t margin;
	margin.left = left;
	margin.top = top;
	margin.right = right;
	margin.bottom = bottom;
	return margin;
}

typedef struct {
	int x, y;
} ccv_point_t;

static inline ccv_point_t ccv_point(int x, int y)
{
	ccv_point_t point;
	point.x = x;
	point.y = y;
	return point;
}

typedef struct {
	float x, y;
} ccv_decimal_point_t;

static inline ccv_decimal_point_t ccv_decimal_point(float x, float y)
{
	ccv_decimal_point_t point;
	point.x = x;
	point.y = y;
	return point;
}

/**
 * A growable array of fixed-size records. `rnum` records are in use out of
 * `size` allocated, each `rsize` bytes, stored contiguously at `data`.
 */
typedef struct {
	int type;
	uint64_t sig;
	int refcount;
	int rnum;
	int size;
	int rsize;
	void* data;
} ccv_array_t;

/**
 * Create an empty array of records of rsize bytes with room for rnum of them.
 * @return An array to free with ccv_array_free, or NULL on bad sizes or no memory.
 */
CCV_WARN_UNUSED(ccv_array_t*) ccv_array_new(int rsize, int rnum, uint64_t sig);
/** Append a copy of the record at r (rsize bytes), growing the array as needed. */
void ccv_array_push(ccv_array_t* array, const void* r);
typedef int(*ccv_array_group_f)(const void*, const void*, void*);
/**
 * Partition the records into equivalence classes of gfunc (which returns 1 for
 * two records of one group). *index receives a new array of int, one group id
 * per record; the return value is the number of groups.
 */
int ccv_array_group(ccv_array_t* array, ccv_array_t** index, ccv_array_group_f gfunc, void* data);
void ccv_make_array_immutable(ccv_array_t* array);
void ccv_make_array_mutable(ccv_array_t* array);
/** Zero every allocated record; rnum is unchanged. */
void ccv_array_zero(ccv_array_t* array);
/** Set rnum, zeroing the records that become used. */
void ccv_array_resize(ccv_array_t* array, int rnum);
/** Set rnum to 0, keeping the memory. */
void ccv_array_clear(ccv_array_t* array);
void ccv_array_free_immediately(ccv_array_t* array);
/** Free the array. NULL is a no-op. */
void ccv_array_free(ccv_array_t* array);
/** The address of record i. */
#define ccv_array_get(a, i) ((void*)(((char*)((a)->data)) + (size_t)(a)->rsize * (size_t)(i)))

#ifdef __cplusplus
}
#endif

#endif
