// Weight palettes (ccv_nnc_palettize / ccv_nnc_depalettize): the block format
// is documented at their declarations in include/nnc/ccv_nnc.h.
#pragma once

#include <cstddef>

namespace nnc {

// Bytes the blocks of `count` elements take. Throws on bad parameters.
size_t palettized_size(int datatype, size_t count, int qbits, int number_in_blocks);

// The two calls' bodies; they throw nnc::Error on bad input before writing.
size_t palettize(const void* input, int datatype, int memory_type, size_t input_length, int qbits,
                 int number_in_blocks, void* output, size_t output_length);
void depalettize(const void* input, int datatype, int memory_type, size_t input_length, int qbits,
                 int number_in_blocks, void* output, size_t output_length);

}  // namespace nnc
