/* The fake libccv's matrix and array utilities. */
#include "ccv.h"


ccv_dense_matrix_t* ccv_get_dense_matrix(ccv_matrix_t* mat)
{
	return (*(int*)mat & CCV_MATRIX_DENSE) ? (ccv_dense_matrix_t*)mat : 0;
}

static double fake_value(const ccv_dense_matrix_t* m, int r, int i)
{
	const unsigned char* row = m->data.u8 + (size_t)r * m->step;
	switch (CCV_GET_DATA_TYPE(m->type))
	{
		case CCV_32S: return ((const int*)row)[i];
		case CCV_32F: return ((const float*)row)[i];
		case CCV_64S: return (double)((const int64_t*)row)[i];
		case CCV_64F: return ((const double*)row)[i];
		default: return row[i];
	}
}

int ccv_matrix_eq(ccv_matrix_t* a, ccv_matrix_t* b)
{
	const ccv_dense_matrix_t* da = ccv_get_dense_matrix(a);
	const ccv_dense_matrix_t* db = ccv_get_dense_matrix(b);
	int r, i;
	if (!da || !db || CCV_GET_DATA_TYPE(da->type) != CCV_GET_DATA_TYPE(db->type) || CCV_GET_CHANNEL(da->type) != CCV_GET_CHANNEL(db->type) || da->rows != db->rows || da->cols != db->cols)
		return -1;
	for (r = 0; r < da->rows; r++)
		for (i = 0; i < da->cols * CCV_GET_CHANNEL(da->type); i++)
		{
			const double x = fake_value(da, r, i), y = fake_value(db, r, i);
			if (fabs(x - y) > 1e-4 * fmax(1, fmax(fabs(x), fabs(y))))
				return -1;
		}
	return 0;
}

void ccv_zero(ccv_matrix_t* mat)
{
	ccv_dense_matrix_t* m = (ccv_dense_matrix_t*)mat;
	memset(m->data.u8, 0, (size_t)m->step * m->rows);
}

void ccv_shift(ccv_matrix_t* a, ccv_matrix_t** b, int type, int lr, int rr)
{
	ccv_dense_matrix_t* da = ccv_get_dense_matrix(a);
	const int channels = CCV_GET_CHANNEL(da->type);
	ccv_dense_matrix_t* db;
	int r, i;
	if (!type)
		type = CCV_GET_DATA_TYPE(da->type);
	db = ccv_dense_matrix_renew((ccv_dense_matrix_t*)*b, da->rows, da->cols, CCV_ALL_DATA_TYPE | channels, CCV_GET_DATA_TYPE(type) | channels, 0);
	*b = db;
	for (r = 0; r < da->rows; r++)
	{
		unsigned char* row = db->data.u8 + (size_t)r * db->step;
		for (i = 0; i < da->cols * channels; i++)
		{
			const double v = fake_value(da, r, i) * (double)(1 << lr) / (double)(1 << rr);
			switch (CCV_GET_DATA_TYPE(db->type))
			{
				case CCV_32S: ((int*)row)[i] = (int)v; break;
				case CCV_32F: ((float*)row)[i] = (float)v; break;
				case CCV_64S: ((int64_t*)row)[i] = (int64_t)v; break;
				case CCV_64F: ((double*)row)[i] = v; break;
				default: row[i] = (unsigned char)ccv_clamp((int)v, 0, 255);
			}
		}
	}
}

ccv_array_t* ccv_array_new(int rsize, int rnum, uint64_t sig)
{
	ccv_array_t* a = (ccv_array_t*)ccmalloc(sizeof(ccv_array_t));
	a->type = CCV_REUSABLE;
	a->sig = sig;
	a->refcount = 1;
	a->rnum = 0;
	a->size = rnum > 0 ? rnum : 1;
	a->rsize = rsize;
	a->data = ccmalloc((size_t)a->size * rsize);
	fake_ccv_array_news++;
	return a;
}

void ccv_array_push(ccv_array_t* array, const void* r)
{
	if (array->rnum >= array->size)
	{
		array->size = array->size * 2;
		array->data = ccrealloc(array->data, (size_t)array->size * array->rsize);
	}
	memcpy(ccv_array_get(array, array->rnum), r, array->rsize);
	array->rnum++;
}

void ccv_array_zero(ccv_array_t* array)
{
	memset(array->data, 0, (size_t)array->size * array->rsize);
}

void ccv_array_resize(ccv_array_t* array, int rnum)
{
	if (rnum > array->size)
	{
		array->data = ccrealloc(array->data, (size_t)rnum * array->rsize);
		array->size = rnum;
	}
	if (rnum > array->rnum)
		memset(ccv_array_get(array, array->rnum), 0, (size_t)(rnum - array->rnum) * array->rsize);
	array->rnum = rnum;
}

void ccv_array_clear(ccv_array_t* array)
{
	array->rnum = 0;
}

void ccv_array_free_immediately(ccv_array_t* array)
{
	ccfree(array->data);
	ccfree(array);
}

void ccv_array_free(ccv_array_t* array)
{
	ccv_array_free_immediately(array);
}
