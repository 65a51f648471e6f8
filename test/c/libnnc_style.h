/* Shared by the libnnc-style C programs (libnnc_style_*.c): a check that
 * counts failures and prints the condition, the caller's message and NNC's
 * last error, and RUN, one command executed without a hint or stream. */
#ifndef NNC_TEST_LIBNNC_STYLE_H
#define NNC_TEST_LIBNNC_STYLE_H

#include <stdio.h>

#include "nnc/ccv_nnc.h"

static int failed = 0;
#define CHECK(cond, ...)                                        \
	do {                                                        \
		if (!(cond)) {                                          \
			failed++;                                           \
			printf("%s:%d: %s: ", __FILE__, __LINE__, #cond);   \
			printf(__VA_ARGS__);                                \
			printf(" (%s)\n", ccv_nnc_error_message());         \
		}                                                       \
	} while (0)
#define RUN(cmd, in, out) CHECK(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, out, 0) == CCV_NNC_EXEC_SUCCESS, "%s", #cmd)

#endif
