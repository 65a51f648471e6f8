/* The test hooks' counters, in an object of their own: a program that reads
 * them must not drag the memory or util object into its link. */
#include "ccv.h"

int fake_ccv_matrix_news = 0;
int fake_ccv_matrix_frees = 0;
int fake_ccv_array_news = 0;
