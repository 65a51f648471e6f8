/* ADD, MUL and SCALAR_MUL through their CMD_* easy macros, expanded by C (broadcast_easy.c). */
#ifndef NNC_TEST_BLAS_BROADCAST_EASY_H
#define NNC_TEST_BLAS_BROADCAST_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_ADD_FORWARD(p, q), CMD_ADD_BACKWARD(p, q), CMD_MUL_FORWARD(p),
 * CMD_MUL_BACKWARD(p), CMD_SCALAR_MUL_FORWARD(p), CMD_SCALAR_MUL_BACKWARD(p). */
void blas_broadcast_easy_commands(float p, float q, ccv_nnc_cmd_t out[6]);
/* y[rows x cols] = x + bias[cols] through CMD_ADD_FORWARD(1, 1); returns the exec code. */
int blas_broadcast_easy_bias(const float* x, const float* bias, float* y, int rows, int cols);

#ifdef __cplusplus
}
#endif

#endif
