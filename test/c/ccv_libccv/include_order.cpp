// The include-order test once more, as C++17 (see include_order.c).
#include "include_order.c"
