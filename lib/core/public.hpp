// Included first in every library source (see nnc_module in lib/CMakeLists.txt):
// the public declarations get default visibility, so their definitions are
// exported even though everything else is built hidden.
#pragma once
#pragma GCC visibility push(default)
#include "ccv.h"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#pragma GCC visibility pop
