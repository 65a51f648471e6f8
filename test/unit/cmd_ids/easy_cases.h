/* The CMD_*() easy macros expanded by C code (easy_cases.c), for the C++
 * checks in easy_test.cpp. The macros are GNU C; C++ only reads the results. */
#ifndef NNC_TEST_EASY_CASES_H
#define NNC_TEST_EASY_CASES_H

#include "nnc/ccv_nnc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char* call;  /* the macro call as written in easy_cases.c */
    ccv_nnc_cmd_t cmd; /* the command it made */
} nnc_test_easy_case_t;

/* Expands every easy macro (some several ways) and returns how many cases
 * there are; *cases points at them. The cases live until the program ends. */
int nnc_test_easy_cases(const nnc_test_easy_case_t** cases);

#ifdef __cplusplus
}
#endif

#endif
