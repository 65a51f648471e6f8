/* EWSUM through the C easy macros (ewsum_easy.c is GNU C, as C users write it). */
#ifndef NNC_TEST_EWSUM_EASY_H
#define NNC_TEST_EWSUM_EASY_H

#ifdef __cplusplus
extern "C" {
#endif

/* y = a + b + c over n floats with CMD_EWSUM_FORWARD() and TENSOR_LIST; returns
 * ccv_nnc_cmd_exec's code. */
int ewsum_easy_sum3(const float* a, const float* b, const float* c, float* y, int n);
/* dx1, dx2 from g with CMD_EWSUM_BACKWARD(); g may be NULL (then ones). */
int ewsum_easy_backward(const float* g, float* dx1, float* dx2, int n);

#ifdef __cplusplus
}
#endif

#endif
