// The LSTM step loops compiled for AVX512 (called only after cpu_features().avx512).
#include <cstddef>

#include "cmd/rnn/lstm.hpp"
#include "core/vmath_avx512.hpp"

namespace nnc::lstm::avx512 {

using V = nnc::vmath::Avx512;

#include "cmd/rnn/lstm_body.hpp"

}  // namespace nnc::lstm::avx512
