/* The C reference of the C# tests, built into libnnc_cref.so by test.sh. */
#define NNC_CREF_API __attribute__((visibility("default")))
#include "../../cref/nnc_cref.h"
