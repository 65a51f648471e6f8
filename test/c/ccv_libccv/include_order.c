/*
 * Include-order test: NNC's headers beside libccv's ccv.h (the stand-in in
 * fake/), compiled as gnu11 and as C++17 with -Wall -Wextra -Werror in every
 * order CMakeLists.txt sets up. It only compiles: what it checks is which
 * ccv.h is in effect and that both libraries' declarations are usable.
 *
 *   EXPECT_LIBCCV    1: libccv's ccv.h must win (it is on the path and not
 *                    disabled); 0: NNC's subset must.
 *   EXPECT_DEFERRED  1: NNC's ccv.h was read first and included libccv's.
 *   NNC_FIRST        include <nnc/ccv_nnc.h> before <ccv.h>.
 */
#if NNC_FIRST
#include <nnc/ccv_nnc.h>
#include <ccv.h>
#else
#include <ccv.h>
#include <nnc/ccv_nnc.h>
#endif
#include <nnc/ccv_nnc_easy.h>

#define NNC_STATIC_CHECK(name, cond) typedef char name[(cond) ? 1 : -1]

#if EXPECT_LIBCCV
#if !defined(CCV_FAKE_LIBCCV) || defined(NNC_CCV_H_SUBSET)
#error "libccv's ccv.h should be in effect"
#endif
#if EXPECT_DEFERRED != defined(NNC_CCV_H_DEFERRED)
#error "NNC_CCV_H_DEFERRED does not say how libccv's header came in"
#endif
/* libccv's own API, which NNC's subset lacks. */
NNC_STATIC_CHECK(png_file, CCV_IO_PNG_FILE == 0x023);
int nnc_include_order_read(const char* path, ccv_dense_matrix_t** image);
int nnc_include_order_read(const char* path, ccv_dense_matrix_t** image)
{
	return ccv_read(path, image, CCV_IO_ANY_FILE | CCV_IO_GRAY);
}
#else
#if defined(CCV_FAKE_LIBCCV) || !defined(NNC_CCV_H_SUBSET) || defined(NNC_CCV_H_DEFERRED)
#error "NNC's ccv.h subset should be in effect"
#endif
#endif

/* What both headers provide, with one meaning. */
NNC_STATIC_CHECK(io_final, CCV_IO_FINAL == 0);
NNC_STATIC_CHECK(f32, CCV_32F == 0x04000 && CCV_C3 == 3 && CCV_NO_DATA_ALLOC == 0x10000000);

int nnc_include_order_use(void);
int nnc_include_order_use(void)
{
	ccv_dense_matrix_t* const m = ccv_dense_matrix_new(4, 5, CCV_32F | CCV_C2, 0, 0);
	if (!m)
		return -1;
	ccv_nnc_tensor_t* const t = (ccv_nnc_tensor_t*)m;
	const int nd = ccv_nnc_tensor_nd(t->info.dim);
	*(float*)ccv_get_dense_matrix_cell(m, 3, 4, 1) = 2.5f;
	const int ok = nd == 3 && CCV_GET_STEP(9, CCV_8U | CCV_C3) == 28 && ccv_get_dense_matrix_cell_value(m, 3, 4, 1) == 2.5f && t->data.f32[39] == 2.5f;
	ccv_array_t* const a = ccv_array_new(sizeof(int), 2, 0);
	ccv_array_push(a, &nd);
	const int first = *(int*)ccv_array_get(a, 0);
	ccv_array_free(a);
	ccv_matrix_free(m);
	return ok && first == 3 ? 0 : 1;
}
