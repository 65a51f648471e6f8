/* The fake libccv's matrices: allocated the way libccv's header describes
 * (one malloc block, data after the header rounded up to 64 bytes; a header
 * alone over caller data), freed with free() on the header. Plain malloc, not
 * an aligned allocator, so the data is only 16-byte aligned: NNC must cope. */
#include "ccv.h"


static void fake_fill(ccv_dense_matrix_t* m, int rows, int cols, int type, void* data, uint64_t sig, int flags)
{
	/* Fields set one by one, like a C library that never clears the block:
	 * the dimensions past the matrix's (dim[5] on) keep whatever malloc left. */
	m->type = CCV_MATRIX_DENSE | CCV_GET_DATA_TYPE(type) | CCV_GET_CHANNEL(type) | flags;
	m->refcount = 1;
	m->data.u8 = (unsigned char*)data;
	m->reserved0 = 0;
	m->reserved1 = 0;
	m->reserved2 = 0;
	m->sig = sig;
	m->resides = CCV_TENSOR_CPU_MEMORY;
	m->format = CCV_TENSOR_FORMAT_NHWC;
	m->datatype = CCV_GET_DATA_TYPE(type);
	m->reserved3 = 0;
	m->rows = rows;
	m->cols = cols;
	m->channels = CCV_GET_CHANNEL(type);
	m->reserved4 = 0;
	m->step = CCV_GET_STEP(cols, type);
	m->tb.p = 0;
}

ccv_dense_matrix_t* ccv_dense_matrix_new(int rows, int cols, int type, void* data, uint64_t sig)
{
	ccv_dense_matrix_t* m;
	if (data)
	{
		m = (ccv_dense_matrix_t*)ccmalloc(sizeof(ccv_dense_matrix_t));
		fake_fill(m, rows, cols, type, data, sig, CCV_NO_DATA_ALLOC);
	} else {
		m = (ccv_dense_matrix_t*)ccmalloc(ccv_compute_dense_matrix_size(rows, cols, type));
		fake_fill(m, rows, cols, type, (unsigned char*)m + ((sizeof(ccv_dense_matrix_t) + 63) & -64), sig, 0);
	}
	fake_ccv_matrix_news++;
	return m;
}

ccv_dense_matrix_t* ccv_dense_matrix_renew(ccv_dense_matrix_t* x, int rows, int cols, int types, int prefer_type, uint64_t sig)
{
	if (x && x->rows == rows && x->cols == cols && (CCV_GET_DATA_TYPE(x->type) & types) && CCV_GET_CHANNEL(x->type) == CCV_GET_CHANNEL(types))
	{
		x->sig = sig;
		return x;
	}
	if (x)
		ccv_matrix_free(x);
	return ccv_dense_matrix_new(rows, cols, prefer_type, 0, sig);
}

ccv_dense_matrix_t ccv_dense_matrix(int rows, int cols, int type, void* data, uint64_t sig)
{
	ccv_dense_matrix_t m;
	memset(&m, 0, sizeof(m));
	fake_fill(&m, rows, cols, type, data, sig, CCV_NO_DATA_ALLOC | CCV_UNMANAGED);
	return m;
}

static uint64_t fake_hash(const void* p, size_t n, uint64_t h)
{
	const unsigned char* b = (const unsigned char*)p;
	size_t i;
	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

void ccv_make_matrix_mutable(ccv_matrix_t* mat)
{
	((ccv_dense_matrix_t*)mat)->sig = 0;
}

void ccv_make_matrix_immutable(ccv_matrix_t* mat)
{
	ccv_dense_matrix_t* m = (ccv_dense_matrix_t*)mat;
	m->sig = fake_hash(m->data.u8, (size_t)m->step * m->rows, 14695981039346656037ull) | 1;
}

void ccv_matrix_free_immediately(ccv_matrix_t* mat)
{
	ccv_dense_matrix_t* m = (ccv_dense_matrix_t*)mat;
	if (!m || (m->type & CCV_UNMANAGED))
		return;
	fake_ccv_matrix_frees++;
	ccfree(m);
}

void ccv_matrix_free(ccv_matrix_t* mat)
{
	ccv_matrix_free_immediately(mat);
}

uint64_t ccv_cache_generate_signature(const char* msg, int len, uint64_t sig_start, ...)
{
	uint64_t h = fake_hash(msg, (size_t)len, 14695981039346656037ull);
	va_list args;
	uint64_t sig;
	va_start(args, sig_start);
	for (sig = sig_start; sig; sig = va_arg(args, uint64_t))
		h = fake_hash(&sig, sizeof(sig), h);
	va_end(args);
	return h;
}

void ccv_drain_cache(void) {}
void ccv_disable_cache(void) {}
void ccv_enable_default_cache(void) {}
void ccv_enable_cache(size_t size) { (void)size; }
