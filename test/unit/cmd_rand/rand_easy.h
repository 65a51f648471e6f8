/* The random commands through the C easy macros (rand_easy.c is GNU C, as C users write it). */
#ifndef NNC_TEST_RAND_EASY_H
#define NNC_TEST_RAND_EASY_H

#ifdef __cplusplus
extern "C" {
#endif

/* u: CMD_RANDOM_UNIFORM_FORWARD(-1, 1); z: CMD_RANDOM_NORMAL_FORWARD(1, 3);
 * y, mask: CMD_DROPOUT_FORWARD(0.5) of x; dx: CMD_DROPOUT_BACKWARD(0.5) with
 * g = x. All n floats (mask n bytes). Returns the first failing code. */
int rand_easy_all(float* u, float* z, const float* x, float* y, unsigned char* mask, float* dx, int n);

#ifdef __cplusplus
}
#endif

#endif
