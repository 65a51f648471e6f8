/* The util commands through the C easy macros (util_easy.c is GNU C). */
#ifndef NNC_TEST_UTIL_EASY_H
#define NNC_TEST_UTIL_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The commands as the macros make them. */
ccv_nnc_cmd_t util_easy_set(float value);
ccv_nnc_cmd_t util_easy_set_backward(float value);
ccv_nnc_cmd_t util_easy_transfer(void);
ccv_nnc_cmd_t util_easy_format(void);
ccv_nnc_cmd_t util_easy_convert(void);

/* Fill a 2x3 NHWC float tensor with `value` by CMD_SET_FORWARD, transpose it
 * to NCHW 1x... by CMD_FORMAT_TRANSFORM_FORWARD and convert to 16F with
 * CMD_DATATYPE_CONVERSION_FORWARD; returns the first failing code or 0 and
 * the 16F bits of element 0. */
int util_easy_pipeline(float value, unsigned short* half_out);

#ifdef __cplusplus
}
#endif

#endif
