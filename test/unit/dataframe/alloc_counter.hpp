// Allocations made by this process (operator new, and malloc-family calls
// from statically linked code), for the "iterating again allocates nothing"
// tests.
#pragma once
#include <cstdint>

namespace alloc_counter {
uint64_t count();
}
