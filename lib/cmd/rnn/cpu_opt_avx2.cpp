// The LSTM step loops compiled for AVX2 (called only after cpu_features().avx2).
#include <cstddef>

#include "cmd/rnn/lstm.hpp"
#include "core/vmath_avx2.hpp"

namespace nnc::lstm::avx2 {

using V = nnc::vmath::Avx2;

#include "cmd/rnn/lstm_body.hpp"

}  // namespace nnc::lstm::avx2
