/* GEMM through the CMD_GEMM_* easy macros, expanded by C (gemm_easy.c). */
#ifndef NNC_TEST_GEMM_EASY_H
#define NNC_TEST_GEMM_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)): the fully connected layer. */
ccv_nnc_cmd_t nnc_test_gemm_fc(void);
/* CMD_GEMM_FORWARD() and CMD_GEMM_BACKWARD(TRANSPOSE(1, 2)). */
ccv_nnc_cmd_t nnc_test_gemm_plain(void);
ccv_nnc_cmd_t nnc_test_gemm_backward_ta(void);
/* The ccv_nnc.h usage example in C: [1 2 3; 4 5 6] x [3x4 of 1..12] into out[8];
 * returns ccv_nnc_cmd_exec's code. */
int nnc_test_gemm_example(float out[8]);

#ifdef __cplusplus
}
#endif

#endif
