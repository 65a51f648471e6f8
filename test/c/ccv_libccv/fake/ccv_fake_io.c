/* The fake libccv's image reader and writer: binary PPM / PGM files and raw
 * RGB / gray memory, into 8-bit matrices. */
#include "ccv.h"

static int fake_read_file(const char* path, ccv_dense_matrix_t** x)
{
	FILE* f = fopen(path, "rb");
	char magic[3] = {0};
	int cols = 0, rows = 0, maxval = 0, channels, r;
	ccv_dense_matrix_t* m;
	if (!f)
		return CCV_IO_ERROR;
	if (fscanf(f, "%2s %d %d %d", magic, &cols, &rows, &maxval) != 4 || fgetc(f) == EOF || maxval != 255 || rows <= 0 || cols <= 0 || (strcmp(magic, "P6") && strcmp(magic, "P5")))
	{
		fclose(f);
		return CCV_IO_ERROR;
	}
	channels = magic[1] == '6' ? 3 : 1;
	m = ccv_dense_matrix_new(rows, cols, CCV_8U | channels, 0, 0);
	for (r = 0; r < rows; r++)
		if (fread(m->data.u8 + (size_t)r * m->step, 1, (size_t)cols * channels, f) != (size_t)cols * channels)
		{
			fclose(f);
			ccv_matrix_free(m);
			return CCV_IO_ERROR;
		}
	fclose(f);
	*x = m;
	return CCV_IO_FINAL;
}

int ccv_read_impl(const void* in, ccv_dense_matrix_t** x, int type, int rows, int cols, int scanline)
{
	if ((type & 0xF0) == 0x20)
		return fake_read_file((const char*)in, x);
	if ((type & 0xFF) == CCV_IO_RGB_RAW || (type & 0xFF) == CCV_IO_GRAY_RAW)
	{
		const int channels = (type & 0xFF) == CCV_IO_RGB_RAW ? 3 : 1;
		ccv_dense_matrix_t* m = ccv_dense_matrix_new(rows, cols, CCV_8U | channels, 0, 0);
		int r;
		for (r = 0; r < rows; r++)
			memcpy(m->data.u8 + (size_t)r * m->step, (const unsigned char*)in + (size_t)r * scanline, (size_t)cols * channels);
		*x = m;
		return CCV_IO_FINAL;
	}
	return CCV_IO_UNKNOWN;
}

int ccv_write(ccv_dense_matrix_t* mat, char* out, size_t* len, int type, void* conf)
{
	const int channels = CCV_GET_CHANNEL(mat->type);
	FILE* f;
	int r;
	(void)len;
	(void)type;
	(void)conf;
	if (CCV_GET_DATA_TYPE(mat->type) != CCV_8U || (channels != 1 && channels != 3))
		return CCV_IO_ERROR;
	f = fopen(out, "wb");
	if (!f)
		return CCV_IO_ERROR;
	fprintf(f, "P%c\n%d %d\n255\n", channels == 3 ? '6' : '5', mat->cols, mat->rows);
	for (r = 0; r < mat->rows; r++)
		fwrite(mat->data.u8 + (size_t)r * mat->step, 1, (size_t)mat->cols * channels, f);
	fclose(f);
	return CCV_IO_FINAL;
}
