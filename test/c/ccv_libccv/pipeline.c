/*
 * A ccv pipeline beside NNC, the way a program using both libraries is
 * written: "libccv" (the stand-in in fake/) writes and reads an image and
 * converts it to float; NNC convolves it and adds it to itself with the
 * matrices as tensors; each library frees matrices the other made.
 *
 * CMakeLists.txt builds it for both include orders (fake/ before NNC's
 * include/ and after it) and both link orders (NNC first, libccv first),
 * against libnnc.so and libnnc.a. EXPECT_FAKE_MEMORY says whose
 * ccv_dense_matrix_new / ccv_matrix_free the link is expected to keep.
 */
#include <ccv.h>
#include <nnc/ccv_nnc.h>
#include <nnc/ccv_nnc_easy.h>

#ifndef CCV_FAKE_LIBCCV
#error "libccv's ccv.h (the stand-in) should be in effect"
#endif
#ifdef NNC_CCV_H_SUBSET
#error "NNC's ccv.h subset should have deferred to libccv's"
#endif

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                                                    \
	do {                                                                    \
		if (cond)                                                           \
			passed++;                                                       \
		else {                                                              \
			failed++;                                                       \
			printf("%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                            \
			printf(" (%s)\n", ccv_nnc_error_message());                     \
		}                                                                   \
	} while (0)

enum { ROWS = 7, COLS = 9, OUT = 2 };

int main(int argc, char** argv)
{
	const char* const path = argc > 1 ? argv[1] : "ccv_libccv_pipeline.ppm";
	int r, c, k, i;
	ccv_nnc_init();

	/* 1. libccv: an 8-bit RGB image (its rows are padded: 27 bytes -> 28),
	 * written to a file and read back, then converted to float. */
	ccv_dense_matrix_t* const src = ccv_dense_matrix_new(ROWS, COLS, CCV_8U | CCV_C3, 0, 0);
	CHECK(src && src->step == 28, "8U C3 step");
	for (r = 0; r < ROWS; r++)
		for (c = 0; c < COLS * 3; c++)
			src->data.u8[r * src->step + c] = (unsigned char)((r * 31 + c * 17) % 256);
	CHECK(ccv_write(src, (char*)path, 0, CCV_IO_PNG_FILE, 0) == CCV_IO_FINAL, "write %s", path);
	ccv_dense_matrix_t* image = 0;
	CHECK(ccv_read(path, &image, CCV_IO_ANY_FILE) == CCV_IO_FINAL && image, "read %s", path);
	remove(path);
	if (!image)
		return 1;
	CHECK(ccv_matrix_eq(src, image) == 0, "the image read back equals the one written");
	ccv_dense_matrix_t* x = 0;
	ccv_shift(image, (ccv_matrix_t**)&x, CCV_32F, 0, 0);
	CHECK(x && x->rows == ROWS && x->cols == COLS && CCV_GET_CHANNEL(x->type) == 3, "float image");
#if EXPECT_FAKE_MEMORY
	/* A libccv signature: only libccv's memory object defines it, so this
	 * brings that object, with its ccv_dense_matrix_new and ccv_matrix_free,
	 * into the link even when NNC's definitions came first. */
	const uint64_t sig = ccv_cache_generate_signature("pipeline", 8, (uint64_t)1, (uint64_t)0);
	CHECK(sig != 0, "signature");
#endif

	/* 2. NNC: the libccv matrix is a 7x9x3 NHWC tensor. */
	ccv_nnc_tensor_t* const tx = (ccv_nnc_tensor_t*)x;
	CHECK(ccv_nnc_tensor_nd(tx->info.dim) == 3 && tx->info.dim[0] == ROWS && tx->info.dim[1] == COLS && tx->info.dim[2] == 3, "matrix as tensor: %dx%dx%d", tx->info.dim[0], tx->info.dim[1], tx->info.dim[2]);
	ccv_nnc_tensor_t* const w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, OUT, 3, 3, 3), 0);
	ccv_nnc_tensor_t* const bias = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, OUT), 0);
	for (i = 0; i < OUT * 27; i++)
		w->data.f32[i] = (float)((i * 7) % 11 - 5) * 0.125f;
	bias->data.f32[0] = 0.5f;
	bias->data.f32[1] = -1.0f;
	ccv_nnc_tensor_t* const y = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, ROWS, COLS, OUT), 0);
	const ccv_nnc_cmd_t conv = CMD_CONVOLUTION_FORWARD(1, OUT, 3, 3, 3);
	const ccv_nnc_hint_t hint = ccv_nnc_hint_auto(conv.info, tx->info, y->info);
	CHECK(ccv_nnc_cmd_exec(conv, hint, 0, TENSOR_LIST(tx, w, bias), TENSOR_LIST(y), 0) == CCV_NNC_EXEC_SUCCESS, "convolution");
	double worst = 0;
	for (r = 0; r < ROWS; r++)
		for (c = 0; c < COLS; c++)
			for (k = 0; k < OUT; k++)
			{
				double sum = bias->data.f32[k];
				int dr, dc, ch;
				for (dr = -1; dr <= 1; dr++)
					for (dc = -1; dc <= 1; dc++)
						for (ch = 0; ch < 3; ch++)
							if (r + dr >= 0 && r + dr < ROWS && c + dc >= 0 && c + dc < COLS)
								sum += (double)w->data.f32[((k * 3 + dr + 1) * 3 + dc + 1) * 3 + ch] * (double)src->data.u8[(r + dr) * src->step + (c + dc) * 3 + ch];
				/* y is a dense matrix too: read it with libccv's cell macro. */
				const double got = ccv_get_dense_matrix_cell_value((ccv_dense_matrix_t*)y, r, c, k);
				const double err = fabs(got - sum) / (1 + fabs(sum));
				worst = err > worst ? err : worst;
			}
	CHECK(worst < 1e-5, "convolution against a double reference: worst relative error %g", worst);

	/* 3. NNC writes into a matrix libccv made: s = x + x. */
	ccv_dense_matrix_t* const s = ccv_dense_matrix_new(ROWS, COLS, CCV_32F | CCV_C3, 0, 0);
	CHECK(ccv_nnc_cmd_exec(CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(tx, tx), TENSOR_LIST((ccv_nnc_tensor_t*)s), 0) == CCV_NNC_EXEC_SUCCESS, "ewsum");
	ccv_dense_matrix_t* twice = 0;
	ccv_shift(image, (ccv_matrix_t**)&twice, CCV_32F, 1, 0);
	CHECK(ccv_matrix_eq(s, twice) == 0, "x + x equals libccv's x << 1");
	s->data.f32[5] += 1;
	CHECK(ccv_matrix_eq(s, twice) != 0, "a changed element is seen");

	/* 4. Each frees the other's: NNC's tensor through ccv_matrix_free, the
	 * libccv matrices through ccv_nnc_tensor_free. */
	const int news = fake_ccv_matrix_news, frees = fake_ccv_matrix_frees;
	ccv_matrix_free(y);
	ccv_matrix_free(twice);
	ccv_nnc_tensor_free(tx);
	ccv_nnc_tensor_free((ccv_nnc_tensor_t*)s);
	ccv_matrix_free(image);
	ccv_matrix_free(src);
	ccv_nnc_tensor_free(w);
	ccv_nnc_tensor_free(bias);
#if EXPECT_FAKE_MEMORY
	/* The link kept libccv's memory functions: they made the five matrices
	 * and freed four of them (y among them, which NNC made). */
	CHECK(news == 5 && fake_ccv_matrix_frees - frees == 4, "libccv's ccv_dense_matrix_new / ccv_matrix_free ran: %d made, %d freed", news, fake_ccv_matrix_frees - frees);
#else
	/* The link kept NNC's: libccv's reader and ccv_shift allocated through them. */
	CHECK(news == 0 && fake_ccv_matrix_frees == frees, "NNC's ccv_dense_matrix_new / ccv_matrix_free ran: libccv made %d, freed %d", news, fake_ccv_matrix_frees - frees);
#endif
	printf("%s: %d checks passed, %d failed (matrix functions from %s)\n", argv[0], passed, failed, news ? "libccv" : "NNC");
	return failed ? 1 : 0;
}
