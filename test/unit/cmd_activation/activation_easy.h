/* The activation commands through the easy macros, expanded by C (activation_easy.c). */
#ifndef NNC_TEST_ACTIVATION_EASY_H
#define NNC_TEST_ACTIVATION_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_RELU_FORWARD(), CMD_LEAKY_RELU_BACKWARD(0.25), CMD_GELU_FORWARD(1),
 * CMD_GELU_BACKWARD(0), CMD_SIGMOID_BACKWARD(), CMD_TANH_FORWARD(),
 * CMD_SWISH_BACKWARD() in that order. */
void nnc_test_activation_cmds(ccv_nnc_cmd_t out[7]);
/* x = [-2, -0.5, 0, 1.5]: RELU forward in place into x, then RELU backward
 * with g = 1 from the output only (|g|NULL|y|) into dx; out[0..3] = y,
 * out[4..7] = dx. Returns the first failing code. */
int nnc_test_activation_relu_example(float out[8]);

#ifdef __cplusplus
}
#endif

#endif
