/* The element-wise math commands through their CMD_* easy macros, expanded by C (math_easy.c). */
#ifndef NNC_TEST_EW_MATH_EASY_H
#define NNC_TEST_EW_MATH_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_EWPROD_FORWARD() .. CMD_MAX_BACKWARD() in the order
 * EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, CLAMP, MIN, MAX (forward, backward each);
 * CLAMP with the given bounds. Writes 16 commands. */
void ew_math_easy_commands(float min, float max, ccv_nnc_cmd_t out[16]);
/* y = 1 / b through CMD_EWDIV_FORWARD with a NULL first input; returns the exec code. */
int ew_math_easy_reciprocal(const float* b, float* y, int n);

#ifdef __cplusplus
}
#endif

#endif
