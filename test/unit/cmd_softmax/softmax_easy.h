/* SOFTMAX / SOFTMAX_CROSSENTROPY through the easy macros, expanded by C (softmax_easy.c). */
#ifndef NNC_TEST_SOFTMAX_EASY_H
#define NNC_TEST_SOFTMAX_EASY_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CMD_SOFTMAX_CROSSENTROPY_FORWARD(0.1, 0.9) and CMD_SOFTMAX_CROSSENTROPY_BACKWARD(). */
ccv_nnc_cmd_t nnc_test_softmax_ce_forward_smoothed(void);
ccv_nnc_cmd_t nnc_test_softmax_ce_backward_default(void);
/* One row of logits [0, ln 2, ln 5] with class-index label 2: SOFTMAX_FORWARD
 * into out[0..2], the cross-entropy loss into out[3], and its backward (no g)
 * d logits[0] and [2] into out[4], out[5]. Returns the first failing code. */
int nnc_test_softmax_example(float out[6]);

#ifdef __cplusplus
}
#endif

#endif
